//! How a row of a merchant's file ends, decided once for whoever applies it: where a row goes
//! (created, updated by its `location_id` or its `merchant_location_id`, or not sent at all),
//! what an update item says, and the row's outcome from the service's answer to it and what was
//! stored under its names before. Pure: `push` applies it over HTTP, a chunk at a time.

use std::collections::HashMap;

use serde::Serialize;

use super::table::RowError;
use super::table::rows::Row;

/// What became of a row.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    Created,
    Unchanged,
    Updated,
    Quarantined,
    Failed,
    Unknown,
}

impl Outcome {
    pub const ALL: [Outcome; 6] = [
        Outcome::Created,
        Outcome::Unchanged,
        Outcome::Updated,
        Outcome::Quarantined,
        Outcome::Failed,
        Outcome::Unknown,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Created => "created",
            Outcome::Unchanged => "unchanged",
            Outcome::Updated => "updated",
            Outcome::Quarantined => "quarantined",
            Outcome::Failed => "failed",
            Outcome::Unknown => "unknown",
        }
    }
}

/// One record of the report.
#[derive(Clone, Debug, Serialize)]
pub struct RowReport {
    pub row: u64,
    pub merchant_location_id: Option<String>,
    pub location_id: Option<String>,
    pub outcome: Outcome,
    pub errors: Vec<RowError>,
}

/// A location stored under a row's name before the row was applied.
#[derive(Clone, Debug)]
pub struct Stored {
    pub location_id: String,
    pub version: u64,
    pub archived: bool,
}

/// What was stored under the rows' names: by `merchant_location_id`, and (when updating) by
/// `location_id`.
#[derive(Clone, Debug, Default)]
pub struct Known {
    pub by_mlid: HashMap<String, Stored>,
    pub by_id: HashMap<String, Stored>,
}

impl Known {
    /// What was stored under the name the row is applied by: its `location_id` when `by_id`, else
    /// its `merchant_location_id`.
    pub fn prior(&self, row: &Row, by_id: bool) -> Option<&Stored> {
        if by_id {
            row.location_id_str().and_then(|id| self.by_id.get(id))
        } else {
            row.merchant_location_id.as_ref().and_then(|m| self.by_mlid.get(m))
        }
    }
}

/// Where a row goes.
#[derive(Clone, Debug)]
pub enum Route {
    /// Not sent: it ends so.
    Done(Outcome, Vec<RowError>),
    Create,
    /// Update, naming the location by `location_id` (else by `merchant_location_id`).
    Update {
        by_id: bool,
    },
}

/// Where `row` goes, given what is stored under its names and whether rows update (`--update`).
/// Whether `route` may send `row` to be created, whatever is stored: what is worth validating
/// before the stored locations are known.
pub fn may_create(row: &Row, update: bool) -> bool {
    !row.archived && !(row.location_id.is_some() && (update || row.merchant_location_id.is_none()))
}

pub fn route(row: &Row, update: bool, known: &Known) -> Route {
    if row.archived {
        Route::Done(Outcome::Unchanged, Vec::new())
    } else if row.location_id.is_some() && update {
        Route::Update { by_id: true }
    } else if row.location_id.is_some() && row.merchant_location_id.is_none() {
        let message = "the row has a location_id and no merchant_location_id: pass --update to update the \
                       location it names";
        Route::Done(Outcome::Failed, vec![RowError::new("location_id", "NOT_SENT", message)])
    } else if update && known.prior(row, false).is_some_and(|s| !s.archived) {
        Route::Update { by_id: false }
    } else {
        Route::Create
    }
}

/// One error of the service's answer to an item.
#[derive(Clone, Debug, serde::Deserialize)]
pub struct ServiceError {
    pub field: String,
    pub code: String,
    pub message: String,
}

/// The service's answer to one item of a create or an update: the keys a row's outcome reads.
#[derive(Clone, Debug, serde::Deserialize)]
pub struct ItemAnswer {
    #[serde(default)]
    pub location_id: String,
    pub status: String,
    #[serde(default)]
    pub version: Option<u64>,
    #[serde(default)]
    pub errors: Vec<ServiceError>,
}

/// How a sent row ended: its outcome, its location's id when known, its errors.
pub type Ended = (Outcome, Option<String>, Vec<RowError>);

/// What a create's answer to `row` means: how it ended, or (with `update`, when the answer says
/// only that its `merchant_location_id` holds other content) that it is to be updated instead.
pub fn after_create(row: &Row, update: bool, known: &Known, answer: ItemAnswer) -> Option<Ended> {
    if answer.status != "FAILED" {
        let outcome = if known.prior(row, false).is_some() {
            Outcome::Unchanged
        } else if answer.status == "QUARANTINE" {
            Outcome::Quarantined
        } else {
            Outcome::Created
        };
        // A dry run's new location has the id "", and so has its report.
        Some((outcome, Some(answer.location_id), row_errors(row, &answer.errors)))
    } else if update && is_taken(&answer.errors) {
        None
    } else {
        Some((Outcome::Failed, None, row_errors(row, &answer.errors)))
    }
}

/// What an update's answer to `row` (applied by its `location_id` when `by_id`) means.
pub fn after_update(row: &Row, by_id: bool, known: &Known, answer: ItemAnswer) -> Ended {
    if answer.status == "FAILED" {
        return (Outcome::Failed, None, row_errors(row, &answer.errors));
    }
    let version = answer.version.unwrap_or(0);
    let outcome = if known.prior(row, by_id).is_some_and(|s| s.version >= version) {
        Outcome::Unchanged
    } else if answer.status == "QUARANTINE" {
        Outcome::Quarantined
    } else {
        Outcome::Updated
    };
    (
        outcome,
        Some(answer.location_id).filter(|id| !id.is_empty()),
        row_errors(row, &answer.errors),
    )
}

/// The row's record in the report: its location's id is the one it ended with, else the one
/// stored under its name, else its own.
pub fn report(row: &Row, known: &Known, (outcome, location_id, errors): Ended) -> RowReport {
    let location_id = location_id
        .or_else(|| {
            known
                .prior(row, row.location_id.is_some())
                .map(|s| s.location_id.clone())
        })
        .or_else(|| row.location_id_str().map(str::to_owned));
    RowReport {
        row: row.row,
        merchant_location_id: row.merchant_location_id.clone(),
        location_id,
        outcome,
        errors,
    }
}

/// The create answered that the `merchant_location_id` is taken by other content, and nothing else.
fn is_taken(errors: &[ServiceError]) -> bool {
    matches!(errors, [e] if e.code == "CONFLICT" && e.field.ends_with("].merchant_location_id"))
}

/// An update item: the row's content, naming its location, with the row's version as the one it
/// expects. The keys are written in front of the row's own (which has neither).
pub fn update_item(row: &Row, by_id: bool) -> String {
    let mut keys = String::new();
    if by_id && let Some(id) = &row.location_id {
        keys.push_str(&format!("\"location_id\":{id},"));
    }
    if let Some(version) = &row.version {
        keys.push_str(&format!("\"expected_version\":{version},"));
    }
    match row.item.strip_prefix('{') {
        Some(_) if keys.is_empty() => row.item.clone(),
        Some("}") => format!("{{{}}}", keys.trim_end_matches(',')),
        Some(rest) => format!("{{{keys}{rest}"),
        None => row.item.clone(),
    }
}

/// The service's errors of an item, named after the row's fields.
fn row_errors(row: &Row, errors: &[ServiceError]) -> Vec<RowError> {
    errors
        .iter()
        .map(|e| {
            // `locations[i].limits.weight` → `limits.weight`.
            let path = match e.field.strip_prefix("locations[").and_then(|p| p.split_once(']')) {
                Some((_, rest)) => rest.trim_start_matches('.'),
                None => &e.field,
            };
            row.error_at(path, &e.code, &e.message)
        })
        .collect()
}

//! One chunk of a push (CONTRACT §11), start to end: read back what is stored under its rows'
//! names (so that the outcome of a create that is answered by the retry rule is `unchanged`, and
//! of an update that changed nothing too), then create what is new, then, with `--update`, update
//! what differs. The service decides everything else: this converts its answers into the rows'
//! outcomes and maps errors back to the rows' fields.

use std::borrow::Cow;
use std::collections::HashMap;

use serde_json::{Value, json};

use super::report::{Outcome, RowReport};
use crate::client::service::api::Failed;
use crate::client::service::send::{AnswerError, Context, Sent, send};
use crate::client::service::walk;
use crate::client::table::RowError;
use crate::client::table::rows::Row;

/// A stored location, as the chunk found it before sending.
#[derive(Clone, Debug)]
struct Stored {
    location_id: String,
    version: u64,
    archived: bool,
}

/// How a sent row ended: its outcome, its location's id when known, its errors.
type Ended = (Outcome, Option<String>, Vec<RowError>);

/// Where a row goes.
enum Route {
    Done(Outcome, Vec<RowError>),
    Create,
    /// Update, naming the location by `location_id` (else by `merchant_location_id`).
    Update {
        by_id: bool,
    },
}

/// One chunk, start to end: its rows' outcomes in row order.
pub(super) async fn push_chunk(context: &Context, rows: Vec<Row>) -> Vec<RowReport> {
    let (by_mlid, by_id) = match stored(context, &rows).await {
        Ok(found) => found,
        Err(e) => {
            let error = RowError::new("", "NOT_SENT", format!("reading the stored locations failed: {e}"));
            return rows
                .iter()
                .map(|row| report(row, Outcome::Failed, None, vec![error.clone()]))
                .collect();
        }
    };
    let prior = |row: &Row, by_id_route: bool| -> Option<&Stored> {
        if by_id_route {
            row.location_id_str().and_then(|id| by_id.get(id))
        } else {
            row.merchant_location_id.as_ref().and_then(|m| by_mlid.get(m))
        }
    };
    let mut routes: Vec<Route> = rows
        .iter()
        .map(|row| {
            if row.archived {
                Route::Done(Outcome::Unchanged, Vec::new())
            } else if row.location_id.is_some() && context.update {
                Route::Update { by_id: true }
            } else if row.location_id.is_some() && row.merchant_location_id.is_none() {
                let message = "the row has a location_id and no merchant_location_id: pass --update to update the \
                               location it names";
                Route::Done(Outcome::Failed, vec![RowError::new("location_id", "NOT_SENT", message)])
            } else if context.update && prior(row, false).is_some_and(|s| !s.archived) {
                Route::Update { by_id: false }
            } else {
                Route::Create
            }
        })
        .collect();
    let mut results: Vec<Option<Ended>> = (0..rows.len()).map(|_| None).collect();

    let creates: Vec<(usize, Cow<'_, str>)> = routes
        .iter()
        .enumerate()
        .filter(|(_, r)| matches!(r, Route::Create))
        .map(|(i, _)| (i, Cow::Borrowed(rows[i].item.as_str())))
        .collect();
    for (i, sent) in send(context, "/v1/location/create", creates, |i| {
        context.dry_run || rows[i].merchant_location_id.is_some()
    })
    .await
    {
        let row = &rows[i];
        results[i] = Some(match sent {
            Sent::Result(result) if result.status != "FAILED" => {
                let outcome = if prior(row, false).is_some() {
                    Outcome::Unchanged
                } else if result.status == "QUARANTINE" {
                    Outcome::Quarantined
                } else {
                    Outcome::Created
                };
                // A dry run's new location has the id "" (CONTRACT §14), and so has its report.
                (outcome, Some(result.location_id), row_errors(row, &result.errors))
            }
            Sent::Result(result) if context.update && is_taken(&result.errors) => {
                routes[i] = Route::Update { by_id: false };
                continue;
            }
            Sent::Result(result) => (Outcome::Failed, None, row_errors(row, &result.errors)),
            Sent::Unknown(why) => (Outcome::Unknown, None, vec![RowError::new("", "UNKNOWN", why)]),
            Sent::Failed(error) => (Outcome::Failed, None, vec![error]),
        });
    }

    let updates: Vec<(usize, Cow<'_, str>)> = routes
        .iter()
        .enumerate()
        .filter_map(|(i, r)| match r {
            Route::Update { by_id } => Some((i, Cow::Owned(update_item(&rows[i], *by_id)))),
            _ => None,
        })
        .collect();
    for (i, sent) in send(context, "/v1/location/update", updates, |_| true).await {
        let row = &rows[i];
        let by_id_route = matches!(routes[i], Route::Update { by_id: true });
        results[i] = Some(match sent {
            Sent::Result(result) if result.status != "FAILED" => {
                let version = result.version.unwrap_or(0);
                let outcome = if prior(row, by_id_route).is_some_and(|s| s.version >= version) {
                    Outcome::Unchanged
                } else if result.status == "QUARANTINE" {
                    Outcome::Quarantined
                } else {
                    Outcome::Updated
                };
                (
                    outcome,
                    Some(result.location_id).filter(|id| !id.is_empty()),
                    row_errors(row, &result.errors),
                )
            }
            Sent::Result(result) => (Outcome::Failed, None, row_errors(row, &result.errors)),
            Sent::Unknown(why) => (Outcome::Unknown, None, vec![RowError::new("", "UNKNOWN", why)]),
            Sent::Failed(error) => (Outcome::Failed, None, vec![error]),
        });
    }

    rows.iter()
        .zip(routes)
        .zip(results)
        .map(|((row, route), result)| {
            let (outcome, id, errors) = match (route, result) {
                (_, Some(result)) => result,
                (Route::Done(outcome, errors), None) => (outcome, None, errors),
                // Every sent row has a result; a row without one is reported as not sent.
                (_, None) => (Outcome::Failed, None, vec![RowError::new("", "NOT_SENT", "not sent")]),
            };
            let id = id.or_else(|| prior(row, row.location_id.is_some()).map(|s| s.location_id.clone()));
            report(row, outcome, id, errors)
        })
        .collect()
}

fn report(row: &Row, outcome: Outcome, location_id: Option<String>, errors: Vec<RowError>) -> RowReport {
    RowReport {
        row: row.row,
        merchant_location_id: row.merchant_location_id.clone(),
        location_id: location_id.or_else(|| row.location_id_str().map(str::to_owned)),
        outcome,
        errors,
    }
}

/// The create answered that the `merchant_location_id` is taken by other content, and nothing else.
fn is_taken(errors: &[AnswerError]) -> bool {
    matches!(errors, [e] if e.code == "CONFLICT" && e.field.ends_with("].merchant_location_id"))
}

/// An update item: the row's content, naming its location, with the row's version as the one it
/// expects (CONTRACT §10.1). The keys are written in front of the row's own (which has neither).
fn update_item(row: &Row, by_id: bool) -> String {
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
fn row_errors(row: &Row, errors: &[AnswerError]) -> Vec<RowError> {
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

/// What is stored under the chunk's names: by `merchant_location_id`, and (with `--update`) by
/// `location_id`.
async fn stored(context: &Context, rows: &[Row]) -> Result<(HashMap<String, Stored>, HashMap<String, Stored>), Failed> {
    let mlids: Vec<&str> = rows.iter().filter_map(|r| r.merchant_location_id.as_deref()).collect();
    let ids: Vec<&str> = if context.update {
        rows.iter().filter_map(Row::location_id_str).collect()
    } else {
        Vec::new()
    };
    let mut by_mlid = HashMap::new();
    let mut by_id = HashMap::new();
    for (key, names) in [("merchant_location_ids", mlids), ("location_ids", ids)] {
        if names.is_empty() {
            continue;
        }
        let filter = json!({ key: names });
        walk(&context.api, &filter, context.retries, |raw| {
            let record: Value = serde_json::from_str(raw.get()).unwrap_or_default();
            let stored = Stored {
                location_id: record["location_id"].as_str().unwrap_or_default().to_owned(),
                version: record["version"].as_u64().unwrap_or(0),
                archived: record["status"] == "ARCHIVED",
            };
            if key == "location_ids" {
                by_id.insert(stored.location_id.clone(), stored);
            } else if let Some(mlid) = record["merchant_location_id"].as_str() {
                by_mlid.insert(mlid.to_owned(), stored);
            }
            Ok(())
        })
        .await?;
    }
    Ok((by_mlid, by_id))
}

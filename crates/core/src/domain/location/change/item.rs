//! What a change request is made of and decides: the operations, the stored location as a
//! change reads it, the rows it writes, the results it answers, and an item after planning.

use serde::Serialize;

use crate::domain::event::{Change, EventType};
use crate::domain::field_error::FieldError;
use crate::domain::location::batch::NewLocation;
use crate::domain::location::{Status, TypeSet};
use crate::wire_enum;

wire_enum! {
    /// The three changes, as `location_changes_total{operation}` names them.
    pub enum Operation {
        Update => "update",
        Archive => "archive",
        Restore => "restore",
    }
}

/// The keys that name a location, and the version check, known to every operation.
pub(super) const NAMING_KEYS: [&str; 3] = ["location_id", "merchant_location_id", "expected_version"];
/// The keys an update item has besides a location's fields.
pub(super) const UPDATE_KEYS: [&str; 2] = ["location_id", "expected_version"];

/// One item of a change answer: a create result plus `version`.
#[derive(Clone, Debug, PartialEq, Serialize, utoipa::ToSchema)]
pub struct ChangeResult {
    /// The addressed location's id, also when the item failed; empty when it named none.
    pub location_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub merchant_location_id: Option<String>,
    pub name: String,
    /// The location's status after the request; `FAILED` when the item failed.
    pub status: Status,
    /// The location's version after the request; null when the item failed.
    pub version: Option<i64>,
    pub errors: Vec<FieldError>,
}

/// A stored location as a change reads it.
#[derive(Clone, Debug, PartialEq)]
pub struct Current {
    pub seq: i64,
    pub location_id: String,
    pub merchant_location_id: Option<String>,
    pub status: Status,
    pub types: TypeSet,
    pub latitude: f64,
    pub longitude: f64,
    pub version: i64,
    pub quarantined_by: Option<String>,
    /// Approved by an operator: `ACTIVE` until its coordinates change.
    pub approved: bool,
    /// The stored canonical content.
    pub body: String,
}

/// One row a change writes (the store sets `updated_at` to now), and what its event says.
#[derive(Clone, Debug, PartialEq)]
pub struct Write {
    pub seq: i64,
    pub location_id: String,
    pub merchant_location_id: Option<String>,
    /// Why it changed: the request's own operation, `location.redecided` or `location.approved`.
    pub kind: EventType,
    pub previous_status: Status,
    pub status: Status,
    pub quarantined_by: Option<String>,
    pub version: i64,
    pub approved: bool,
    /// An update's new content.
    pub content: Option<Content>,
}

impl Write {
    /// Its event, the row written at `at_ms`.
    pub fn change(&self, at_ms: i64) -> Change {
        Change {
            kind: self.kind,
            location_id: self.location_id.clone(),
            merchant_location_id: self.merchant_location_id.clone(),
            version: self.version,
            status: self.status,
            previous_status: Some(self.previous_status),
            at_ms,
        }
    }
}

/// New content of a location.
#[derive(Clone, Debug, PartialEq)]
pub struct Content {
    pub body: String,
    pub latitude: f64,
    pub longitude: f64,
    /// Its columns in the search index.
    pub search: crate::domain::location::search::key::SearchKey,
    /// What the text filter finds it by (`text::indexed`).
    pub text: String,
}

/// Everything a change request decided.
#[derive(Debug)]
pub struct Decision {
    /// One per request item, in request order.
    pub results: Vec<ChangeResult>,
    pub writes: Vec<Write>,
    /// Changes to the merchant's (status, types) counts.
    pub counts: Vec<(Status, TypeSet, i64)>,
    /// The status after each item that changed a location (for `location_changes_total`).
    pub changed: Vec<Status>,
}

impl Decision {
    /// One event per location written, the rows written at `at_ms`.
    pub fn changes(&self, at_ms: i64) -> Vec<Change> {
        self.writes.iter().map(|w| w.change(at_ms)).collect()
    }
}

impl Operation {
    /// The type of the events of locations this operation changed.
    pub fn event_type(self) -> EventType {
        match self {
            Operation::Update => EventType::Updated,
            Operation::Archive => EventType::Archived,
            Operation::Restore => EventType::Restored,
        }
    }
}

#[derive(Clone, Debug)]
pub(super) enum Naming {
    LocationId(String),
    MerchantId(String),
}

impl Naming {
    pub(super) fn key(&self) -> &'static str {
        match self {
            Naming::LocationId(_) => "location_id",
            Naming::MerchantId(_) => "merchant_location_id",
        }
    }
}

/// An item that names a location, after the checks that need no storage.
#[derive(Debug)]
pub(super) struct Item {
    pub(super) index: usize,
    pub(super) naming: Naming,
    /// The item's `merchant_location_id` when it named its location by `location_id`.
    pub(super) also_merchant_id: Option<String>,
    pub(super) expected_version: Option<i64>,
    /// The item's name (update), echoed in its result.
    pub(super) name: Option<String>,
    /// update: the new content; archive, restore: nothing. `Err`: the item's errors.
    pub(super) content: Result<Option<NewLocation>, Vec<FieldError>>,
    /// update: its `location_types`, when valid (checked against the stored ones even when other
    /// fields have errors).
    pub(super) types: Option<TypeSet>,
}

/// An operator approves a `QUARANTINE` location: it becomes `ACTIVE` (its issue
/// null, version + 1) and stays so until its coordinates change. `None` for any other status.
pub fn approval(location: &Current) -> Option<Write> {
    (location.status == Status::Quarantine).then(|| Write {
        seq: location.seq,
        location_id: location.location_id.clone(),
        merchant_location_id: location.merchant_location_id.clone(),
        kind: EventType::Approved,
        previous_status: location.status,
        status: Status::Active,
        quarantined_by: None,
        version: location.version + 1,
        approved: true,
        content: None,
    })
}

/// The name in a stored canonical text.
pub fn stored_name(body: &str) -> String {
    #[derive(serde::Deserialize)]
    struct Named {
        name: String,
    }
    serde_json::from_str::<Named>(body).map(|n| n.name).unwrap_or_default()
}

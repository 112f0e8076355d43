//! A batch request's top level (create, update, archive, restore): the keys it may have, its
//! `locations` array and how many items it may carry, checked before any item is.

use super::Persist;
use super::schema::limits::ITEMS_PER_REQUEST;
use crate::domain::json::Value;

/// A batch request's top level, checked.
pub struct Batch<'a> {
    pub items: Vec<Value<'a>>,
    /// `"validate_only": true`.
    pub persist: Persist,
}

/// Which top-level keys a batch request may have besides `locations`.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Options {
    LocationsOnly,
    /// Create and update: `validate_only` too.
    ValidateOnly,
}

/// Why a batch request is refused whole, before any of its items is read.
#[derive(Debug, PartialEq, Eq)]
pub enum Refusal {
    /// The request is not of the batch's shape: `message`, at `field` (`""`: the body itself).
    Invalid { message: &'static str, field: String },
    /// More items than a request may carry.
    TooManyItems { actual: usize },
}

/// The request-level checks, `validate_only` included. With several unknown keys the one first in
/// byte order is named; with a key repeated, the last one counts.
pub fn batch_request(body: Value<'_>, options: Options) -> Result<Batch<'_>, Refusal> {
    let invalid = |message: &'static str, field: &str| Refusal::Invalid {
        message,
        field: field.to_owned(),
    };
    let Value::Object(body) = body else {
        return Err(invalid("the request body must be a JSON object", ""));
    };
    let known = |key: &str| key == "locations" || (options == Options::ValidateOnly && key == "validate_only");
    if let Some(unknown) = body.keys().filter(|k| !known(k)).min() {
        return Err(invalid(
            match options {
                Options::LocationsOnly => "unknown top-level field; the request has only locations",
                Options::ValidateOnly => "unknown top-level field; the request has only locations and validate_only",
            },
            unknown,
        ));
    }
    let mut items = None;
    let mut validate_only = None;
    for (key, value) in body.into_vec() {
        if key == "locations" {
            items = Some(value);
        } else {
            validate_only = Some(value);
        }
    }
    let persist = match validate_only {
        None | Some(Value::Null | Value::Bool(false)) => Persist::Commit,
        Some(Value::Bool(true)) => Persist::ValidateOnly,
        Some(_) => return Err(invalid("validate_only must be true or false", "validate_only")),
    };
    let Some(Value::Array(items)) = items else {
        return Err(invalid("locations is required and must be an array", "locations"));
    };
    if items.len() > ITEMS_PER_REQUEST {
        return Err(Refusal::TooManyItems { actual: items.len() });
    }
    Ok(Batch { items, persist })
}

/// The request's `locations`, after the request-level checks, for a request without
/// `validate_only` (archive, restore; the fuzz targets drive create and update through it).
pub fn request_items(body: Value<'_>) -> Result<Vec<Value<'_>>, Refusal> {
    batch_request(body, Options::LocationsOnly).map(|batch| batch.items)
}

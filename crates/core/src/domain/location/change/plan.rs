//! Reading one change item without storage: how it names its location, its `expected_version`,
//! and (update) its content, through create's validator.

use super::item::{ChangeResult, Item, NAMING_KEYS, Naming, Operation, UPDATE_KEYS};
use crate::domain::field_error::{FieldCode, FieldError, FieldErrors, Path};
use crate::domain::json::{Value, member};
use crate::domain::location::Status;
use crate::domain::location::batch::NewLocation;
use crate::domain::location::validate::{self, KEYS};

/// A string key of an item: `Ok(None)` when absent (missing, `null` or `""`), `Err` when not a
/// string.
fn naming_key<'v>(item: &'v Value<'v>, key: &str) -> Result<Option<&'v str>, ()> {
    match member(item, key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => match v.as_str() {
            Some("") => Ok(None),
            Some(s) => Ok(Some(s)),
            None => Err(()),
        },
    }
}

/// One item: how it names its location, its version check and (update) its content; or its
/// answer when it names none.
pub(super) fn plan_item(
    operation: Operation,
    index: usize,
    value: &Value,
    path: &Path<'_>,
) -> Result<Item, ChangeResult> {
    let item_name = || member(value, "name").and_then(Value::as_str).map(str::to_owned);
    let answer = |key: Option<&str>, code: FieldCode, message: String, mlid: Option<String>| ChangeResult {
        location_id: String::new(),
        merchant_location_id: mlid,
        name: if operation == Operation::Update {
            item_name().unwrap_or_default()
        } else {
            String::new()
        },
        status: Status::Failed,
        version: None,
        errors: vec![FieldError {
            field: match key {
                Some(key) => path.key(key).to_string(),
                None => path.to_string(),
            },
            code,
            message: message.into(),
        }],
    };
    if !matches!(value, Value::Object(_)) {
        return Err(answer(
            None,
            FieldCode::InvalidType,
            format!("must be an object, not {}", crate::domain::json::kind(value)),
            None,
        ));
    }
    let location_id = naming_key(value, "location_id").map_err(|()| {
        answer(
            Some("location_id"),
            FieldCode::InvalidType,
            "location_id must be a string".into(),
            None,
        )
    })?;
    let merchant_id = naming_key(value, "merchant_location_id").map_err(|()| {
        answer(
            Some("merchant_location_id"),
            FieldCode::InvalidType,
            "merchant_location_id must be a string".into(),
            None,
        )
    })?;
    let naming = match (location_id, merchant_id) {
        (Some(id), _) => Naming::LocationId(id.to_owned()),
        (None, Some(mlid)) => Naming::MerchantId(mlid.to_owned()),
        (None, None) => {
            return Err(answer(
                Some("location_id"),
                FieldCode::RequiredOneOf,
                "location_id or merchant_location_id is required to name the location".into(),
                None,
            ));
        }
    };
    let also_merchant_id = location_id.and(merchant_id).map(str::to_owned);

    let mut errors = FieldErrors::default();
    let version_path = path.key("expected_version");
    let expected_version = match member(value, "expected_version") {
        None | Some(Value::Null) => None,
        Some(v) => match v.as_f64() {
            Some(n) if n.fract() == 0.0 && n >= 1.0 && n <= i64::MAX as f64 => Some(n as i64),
            Some(n) if n.fract() == 0.0 => {
                errors.push(
                    &version_path,
                    FieldCode::MinValue,
                    "expected_version must be at least 1",
                );
                None
            }
            _ => {
                errors.push(
                    &version_path,
                    FieldCode::InvalidType,
                    "expected_version must be an integer",
                );
                None
            }
        },
    };
    let (content, types, name) = match operation {
        Operation::Update => {
            let checked = validate::check(value, path, &UPDATE_KEYS, errors);
            let content = match checked.location {
                Some(location) => Ok(Some(NewLocation::new(location))),
                None => Err(checked.errors.into_vec()),
            };
            (content, checked.types, Some(item_name().unwrap_or_default()))
        }
        Operation::Archive | Operation::Restore => {
            if let Value::Object(object) = value {
                let mut unknown: Vec<&str> = object.keys().filter(|k| !NAMING_KEYS.contains(k)).collect();
                unknown.sort_unstable();
                unknown.dedup();
                for key in unknown {
                    let known_field = KEYS.contains(&key);
                    errors.push(
                        &path.key(key),
                        FieldCode::SchemaMismatch,
                        if known_field {
                            format!("{key} is not part of {operation}: the item names a location only")
                        } else {
                            format!("unknown field {key}")
                        },
                    );
                }
            }
            let content = if errors.is_empty() {
                Ok(None)
            } else {
                Err(errors.into_vec())
            };
            (content, None, None)
        }
    };
    Ok(Item {
        index,
        naming,
        also_merchant_id,
        expected_version,
        name,
        content,
        types,
    })
}

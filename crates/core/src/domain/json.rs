//! Reading untrusted JSON field by field, pushing a field error for every problem.
//!
//! The contract's presence rules live here once: *absent* is a missing key or `null`; for optional
//! strings and arrays an empty string or empty array is absent too; a required string that is
//! empty or white space only, or a required array that is empty, is `REQUIRED`.
//!
//! The JSON is a tree borrowed from the request body ([`Value`]): strings without escapes are
//! not copied, and an object is a list of its members. Where a key repeats, the last one counts,
//! as with any JSON object map.

use serde_json_borrow::ObjectAsVec;
pub use serde_json_borrow::Value;

use super::field_error::{FieldCode, FieldErrors, Path};

/// The keys of one JSON object being validated.
pub struct Fields<'v> {
    object: &'v ObjectAsVec<'v>,
}

impl<'v> Fields<'v> {
    /// The object at `path`, or `INVALID_TYPE` there when the value is not an object.
    pub fn new(value: &'v Value<'v>, path: &Path<'_>, errors: &mut FieldErrors) -> Option<Self> {
        match value {
            Value::Object(object) => Some(Fields { object }),
            other => {
                errors.push(
                    path,
                    FieldCode::InvalidType,
                    format!("must be an object, not {}", kind(other)),
                );
                None
            }
        }
    }

    /// The value of `key`; `None` when the key is missing or `null`.
    pub fn get(&self, key: &str) -> Option<&'v Value<'v>> {
        last(self.object, key).filter(|v| !v.is_null())
    }

    /// The value of an optional `key`; `None` when absent, an empty string or an empty array.
    pub fn present(&self, key: &str) -> Option<&'v Value<'v>> {
        self.get(key).filter(|v| !is_empty(v))
    }

    /// The value of a required `key`, or `REQUIRED` at `path`.
    pub fn required(&self, key: &str, path: &Path<'_>, errors: &mut FieldErrors) -> Option<&'v Value<'v>> {
        let value = self.get(key);
        if value.is_none() {
            errors.push(path, FieldCode::Required, format!("{key} is required"));
        }
        value
    }

    /// A required string: `REQUIRED` when absent, empty or white space only; `INVALID_TYPE` when
    /// not a string.
    pub fn required_str(&self, key: &str, path: &Path<'_>, errors: &mut FieldErrors) -> Option<&'v str> {
        let s = expect_str(self.required(key, path, errors)?, path, errors)?;
        if s.trim().is_empty() {
            errors.push(path, FieldCode::Required, format!("{key} must not be empty"));
            return None;
        }
        Some(s)
    }

    /// An optional string: `None` when absent or empty; `INVALID_TYPE` when not a string.
    pub fn optional_str(&self, key: &str, path: &Path<'_>, errors: &mut FieldErrors) -> Option<&'v str> {
        expect_str(self.present(key)?, path, errors)
    }

    /// `SCHEMA_MISMATCH` at every key that is not in `known`, after the known fields, once per
    /// key, in byte order of the keys.
    pub fn reject_unknown(&self, known: &[&str], path: &Path<'_>, errors: &mut FieldErrors) {
        self.reject_unknown_beside(known, &[], path, errors);
    }

    /// `reject_unknown` where the keys of `also` are known too.
    pub fn reject_unknown_beside(&self, known: &[&str], also: &[&str], path: &Path<'_>, errors: &mut FieldErrors) {
        let mut unknown: Vec<&str> = self
            .object
            .keys()
            .filter(|k| !known.contains(k) && !also.contains(k))
            .collect();
        unknown.sort_unstable();
        unknown.dedup();
        for key in unknown {
            errors.push(
                &path.key(key),
                FieldCode::SchemaMismatch,
                format!("unknown field {key}"),
            );
        }
    }
}

/// The value of `key` in `value` when that is an object (the last one, when the key repeats).
pub fn member<'v>(value: &'v Value<'v>, key: &str) -> Option<&'v Value<'v>> {
    last(value.as_object()?, key)
}

/// Moves the value of `key` out of `object` (the last one, when the key repeats).
pub fn take_member<'a>(object: ObjectAsVec<'a>, key: &str) -> Option<Value<'a>> {
    object
        .into_vec()
        .into_iter()
        .rev()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v)
}

fn last<'v>(object: &'v ObjectAsVec<'v>, key: &str) -> Option<&'v Value<'v>> {
    object.iter().filter(|(k, _)| *k == key).last().map(|(_, v)| v)
}

fn is_empty(value: &Value) -> bool {
    match value {
        Value::Str(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        _ => false,
    }
}

/// The JSON type of a value, for messages.
pub fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::Str(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn wrong_type(value: &Value, expected: &str, path: &Path<'_>, errors: &mut FieldErrors) {
    errors.push(
        path,
        FieldCode::InvalidType,
        format!("must be {expected}, not {}", kind(value)),
    );
}

pub fn expect_str<'v>(value: &'v Value<'v>, path: &Path<'_>, errors: &mut FieldErrors) -> Option<&'v str> {
    let s = value.as_str();
    if s.is_none() {
        wrong_type(value, "a string", path, errors);
    }
    s
}

pub fn expect_number(value: &Value, path: &Path<'_>, errors: &mut FieldErrors) -> Option<f64> {
    let n = value.as_f64();
    if n.is_none() {
        wrong_type(value, "a number", path, errors);
    }
    n
}

pub fn expect_bool(value: &Value, path: &Path<'_>, errors: &mut FieldErrors) -> Option<bool> {
    let b = value.as_bool();
    if b.is_none() {
        wrong_type(value, "a boolean", path, errors);
    }
    b
}

pub fn expect_array<'v>(value: &'v Value<'v>, path: &Path<'_>, errors: &mut FieldErrors) -> Option<&'v [Value<'v>]> {
    let a = value.as_array();
    if a.is_none() {
        wrong_type(value, "an array", path, errors);
    }
    a
}

/// An integer, where a number with no fractional part (`7.0`) counts as one.
pub fn expect_integer(value: &Value, path: &Path<'_>, errors: &mut FieldErrors) -> Option<f64> {
    match value.as_f64() {
        Some(n) if n.fract() == 0.0 => Some(n),
        _ => {
            wrong_type(value, "an integer", path, errors);
            None
        }
    }
}

/// Whether `s` is a single line of text: without control characters (names, ids, labels).
pub fn is_single_line(s: &str) -> bool {
    !s.chars().any(char::is_control)
}

/// Which control characters a text field tolerates.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Text {
    SingleLine,
    /// Line feeds and tabs allowed (`comment`, `instruction`).
    MultiLine,
}

/// Length (in Unicode characters) and control-character rules of a string field;
/// `INVALID_FORMAT` on failure.
pub fn check_text(s: &str, max_chars: usize, text: Text, path: &Path<'_>, errors: &mut FieldErrors) -> bool {
    let chars = s.chars().count();
    if chars > max_chars {
        errors.push(
            path,
            FieldCode::InvalidFormat,
            format!("must be at most {max_chars} characters, got {chars}"),
        );
        return false;
    }
    let allowed = |c: char| text == Text::MultiLine && (c == '\n' || c == '\t');
    if s.chars().any(|c| c.is_control() && !allowed(c)) {
        errors.push(path, FieldCode::InvalidFormat, "must not contain control characters");
        return false;
    }
    true
}

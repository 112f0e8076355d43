//! Field-level validation errors: the code catalogue, the path of a field inside a
//! request, and the collector every check pushes into.
//!
//! Checks know their code; callers know the path. A `Path` is a chain of borrowed segments on the
//! stack, rendered to a string only when an error is actually pushed, so validating a correct item
//! allocates nothing for paths.

use std::borrow::Cow;
use std::collections::HashSet;
use std::fmt;

use serde::Serialize;

pub use crate::codes::FieldCode;

/// One error of one field, as sent in a create result.
#[derive(Clone, Debug, PartialEq, Serialize, utoipa::ToSchema)]
pub struct FieldError {
    /// The full path of the field: `locations[3].working_schedule[1].schedule.time_end`.
    pub field: String,
    pub code: FieldCode,
    #[schema(value_type = String)]
    pub message: Cow<'static, str>,
}

/// The location of a field inside a request: `locations[3].working_schedule[1].schedule.time_end`.
#[derive(Clone, Copy)]
pub struct Path<'a> {
    parent: Option<&'a Path<'a>>,
    segment: Segment<'a>,
}

#[derive(Clone, Copy)]
enum Segment<'a> {
    Key(&'a str),
    Index(usize),
}

impl<'a> Path<'a> {
    /// A top-level key of the request body.
    pub const fn root(key: &'a str) -> Self {
        Path {
            parent: None,
            segment: Segment::Key(key),
        }
    }

    /// The object key `key` below this path.
    pub fn key<'b>(&'b self, key: &'b str) -> Path<'b> {
        Path {
            parent: Some(self),
            segment: Segment::Key(key),
        }
    }

    /// The array element `index` below this path.
    pub fn index(&self, index: usize) -> Path<'_> {
        Path {
            parent: Some(self),
            segment: Segment::Index(index),
        }
    }
}

impl fmt::Display for Path<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(parent) = self.parent {
            parent.fmt(f)?;
        }
        match self.segment {
            Segment::Key(key) if self.parent.is_some() => write!(f, ".{key}"),
            Segment::Key(key) => f.write_str(key),
            Segment::Index(index) => write!(f, "[{index}]"),
        }
    }
}

/// Collects every error of one item: at most one per path, the first pushed wins, in the order
/// the checks ran (which is the order of a location's fields).
#[derive(Debug, Default)]
pub struct FieldErrors {
    errors: Vec<FieldError>,
    paths: HashSet<String>,
    /// Errors found after the first `MAX_ERRORS_PER_ITEM`: counted, not kept.
    dropped: usize,
}

/// Most errors an item reports : the first ones in field order; an item
/// with more fails all the same. An answer stays small whatever the request holds.
pub const MAX_ERRORS_PER_ITEM: usize = 50;

impl FieldErrors {
    pub fn push(&mut self, path: &Path<'_>, code: FieldCode, message: impl Into<Cow<'static, str>>) {
        if self.errors.len() >= MAX_ERRORS_PER_ITEM {
            // Neither the path nor the message is rendered: a hostile item costs no more.
            self.dropped += 1;
            return;
        }
        let field = path.to_string();
        if self.paths.insert(field.clone()) {
            self.errors.push(FieldError {
                field,
                code,
                message: message.into(),
            });
        }
    }

    /// Whether an error is already recorded at exactly this path.
    pub fn has(&self, path: &Path<'_>) -> bool {
        !self.errors.is_empty() && self.paths.contains(&path.to_string())
    }

    /// How many errors were found (kept or not): grows with every error pushed at a new path
    /// while under the cap, and with every one pushed past it.
    pub fn len(&self) -> usize {
        self.errors.len() + self.dropped
    }

    pub fn is_empty(&self) -> bool {
        self.errors.is_empty() && self.dropped == 0
    }

    pub fn into_vec(self) -> Vec<FieldError> {
        self.errors
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_item_keeps_its_first_fifty_errors_and_fails_with_more() {
        let root = Path::root("locations");
        let mut errors = FieldErrors::default();
        let keys: Vec<String> = (0..80).map(|i| format!("k{i:02}")).collect();
        for key in &keys {
            errors.push(&root.key(key), FieldCode::SchemaMismatch, "unknown");
        }
        assert!(!errors.is_empty());
        assert_eq!(errors.len(), 80);
        let kept = errors.into_vec();
        assert_eq!(kept.len(), MAX_ERRORS_PER_ITEM);
        assert_eq!(kept[49].field, "locations.k49");
    }

    #[test]
    fn paths_render_with_dots_and_indices() {
        let root = Path::root("locations");
        let item = root.index(3);
        let days = item.key("working_schedule");
        let day = days.index(1);
        let schedule = day.key("schedule");
        let end = schedule.key("time_end");
        assert_eq!(end.to_string(), "locations[3].working_schedule[1].schedule.time_end");
        assert_eq!(root.to_string(), "locations");
    }

    #[test]
    fn at_most_one_error_per_path_first_wins() {
        let root = Path::root("locations");
        let mut errors = FieldErrors::default();
        errors.push(&root, FieldCode::InvalidType, "first");
        errors.push(&root, FieldCode::Required, "second");
        let errors = errors.into_vec();
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0].code, FieldCode::InvalidType);
    }

    #[test]
    fn wire_words_round_trip() {
        for code in FieldCode::ALL {
            assert_eq!(FieldCode::from_wire(code.as_str()), Some(*code));
        }
        assert_eq!(FieldCode::ALL.len(), 19);
    }
}

//! What parsing a file of categories yields, whatever its format: the records that parsed, each
//! with where it came from, and the problems of those that did not; and the rules of a record's
//! id and slug that both formats apply.

use std::fmt;

use crate::domain::category::Category;

const MAX_ID_CHARS: usize = 64;

/// Where a record came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// 0-based index in a JSON array.
    Index(usize),
    /// 1-based line of a Google taxonomy file.
    Line(usize),
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::Index(i) => write!(f, "record {i}"),
            Origin::Line(n) => write!(f, "line {n}"),
        }
    }
}

/// A parsed record and where it came from.
#[derive(Clone, Debug)]
pub struct Record {
    pub origin: Origin,
    pub category: Category,
}

/// One reason an import is refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    /// `None` for a problem of the file as a whole, or of a stored category.
    pub origin: Option<Origin>,
    pub message: String,
}

impl Problem {
    pub(super) fn at(origin: Origin, message: impl Into<String>) -> Self {
        Problem {
            origin: Some(origin),
            message: message.into(),
        }
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.origin {
            Some(origin) => write!(f, "{origin}: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

/// A parsed file: the records that parsed, and the problems of those that did not. The set
/// checks of `merge` run on the records either way, so one import reports every problem.
#[derive(Clone, Debug, Default)]
pub struct Parsed {
    pub records: Vec<Record>,
    pub problems: Vec<Problem>,
}

/// `^[a-z0-9]+(-[a-z0-9]+)*$`
pub fn is_valid_slug(slug: &str) -> bool {
    !slug.is_empty()
        && slug
            .split('-')
            .all(|part| !part.is_empty() && part.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit()))
}

/// A slug from a name: transliterated to ASCII, lower-cased, runs of other characters as one
/// `-`, then `-<id>` so slugs are unique; `<id>` alone when the name leaves nothing.
pub fn slugify(name: &str, id: &str) -> String {
    let words = |s: &str| -> Vec<String> {
        deunicode::deunicode(s)
            .replace(['\'', '`'], "")
            .to_ascii_lowercase()
            .split(|c: char| !c.is_ascii_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(str::to_owned)
            .collect()
    };
    let mut parts = words(name);
    parts.extend(words(id));
    parts.join("-")
}

pub(super) fn check_id(id: &str) -> Result<(), String> {
    if id.is_empty() {
        Err("id must not be empty".into())
    } else if id.chars().count() > MAX_ID_CHARS {
        Err(format!("id must be at most {MAX_ID_CHARS} characters"))
    } else {
        Ok(())
    }
}

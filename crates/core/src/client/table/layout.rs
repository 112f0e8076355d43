//! The CSV layout of `locations push` and `pull`: which columns there are, a file's
//! header checked against them, and how an error's path names the column it came from.
//!
//! The layout is for people editing a spreadsheet. One column per field of a location, nested fields
//! by dotted names (`limits.length`), list fields with `;` between elements, the weekly schedule as
//! one column per day and the dated schedule in one column:
//!
//! - a day: `09:00-21:00`, optionally followed by ` break 13:00-14:00` and ` cutoff 18:00`; an
//!   empty day cell means the location is closed that day;
//! - `individual_schedule`: `2026-12-31 10:00-16:00; 2027-01-01 closed 00:00-23:59`, each date
//!   followed by `closed` when the location does not work that date, then a day as above.
//!
//! A row's cells become an item in `read_cells`, a record becomes cells in `write_cells`.

use crate::domain::location::Weekday;

/// How a column's cells convert.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Text as it is.
    Text,
    Number,
    Boolean,
    /// Elements between `;`.
    List,
    /// One day of `working_schedule`.
    Day(Weekday),
    /// `individual_schedule`.
    Dated,
    /// An element of `limits`.
    Limit(&'static str),
    /// `location_id`: names the stored location for `--update`.
    LocationId,
    /// `version`: the `expected_version` of an update.
    Version,
    /// `status`: a row that is `ARCHIVED` is not sent.
    Status,
    /// `issue.message`: written by `pull`, ignored by `push`.
    Issue,
    /// Other keys of the record: ignored by `push`.
    ReadOnly,
}

/// One column of the layout.
#[derive(Clone, Copy, Debug)]
pub struct Column {
    pub name: &'static str,
    pub(crate) kind: Kind,
}

const fn column(name: &'static str, kind: Kind) -> Column {
    Column { name, kind }
}

/// Every column `push` reads, in the order `pull` writes them (the record's order).
pub const COLUMNS: &[Column] = &[
    column("location_id", Kind::LocationId),
    column("merchant_location_id", Kind::Text),
    column("status", Kind::Status),
    column("version", Kind::Version),
    column("issue.message", Kind::Issue),
    column("location_types", Kind::List),
    column("name", Kind::Text),
    column("address_tail", Kind::Text),
    column("comment", Kind::Text),
    column("latitude", Kind::Number),
    column("longitude", Kind::Number),
    column("provider_id", Kind::Text),
    column("provider_location_id", Kind::Text),
    column("pickup_point_type", Kind::Text),
    column("payment_methods", Kind::List),
    column("storage_period_days", Kind::Number),
    column("limits.length", Kind::Limit("length")),
    column("limits.width", Kind::Limit("width")),
    column("limits.height", Kind::Limit("height")),
    column("limits.weight", Kind::Limit("weight")),
    column("instruction", Kind::Text),
    column("pickup_services", Kind::List),
    column("working_schedule.monday", Kind::Day(Weekday::Monday)),
    column("working_schedule.tuesday", Kind::Day(Weekday::Tuesday)),
    column("working_schedule.wednesday", Kind::Day(Weekday::Wednesday)),
    column("working_schedule.thursday", Kind::Day(Weekday::Thursday)),
    column("working_schedule.friday", Kind::Day(Weekday::Friday)),
    column("working_schedule.saturday", Kind::Day(Weekday::Saturday)),
    column("working_schedule.sunday", Kind::Day(Weekday::Sunday)),
    column("individual_schedule", Kind::Dated),
    column("is_accepts_returns", Kind::Boolean),
    // Record keys a file converted from JSON may carry; `pull` does not write them.
    column("created_at", Kind::ReadOnly),
    column("updated_at", Kind::ReadOnly),
];

/// The columns `pull` writes: all but the last two.
pub fn pulled_columns() -> &'static [Column] {
    &COLUMNS[..COLUMNS.len() - 2]
}

/// The syntax of a schedule cell, for messages.
pub(crate) const DAY_SYNTAX: &str = "HH:MM-HH:MM [break HH:MM-HH:MM] [cutoff HH:MM]";
pub(crate) const DATED_SYNTAX: &str =
    "YYYY-MM-DD [closed] HH:MM-HH:MM [break HH:MM-HH:MM] [cutoff HH:MM], `;` between dates";

/// A file's header, checked: each cell's column.
#[derive(Debug)]
pub struct Layout {
    pub(crate) columns: Vec<Column>,
}

impl Layout {
    /// Checks a header row: every cell names a column of the layout, once. (A UTF-8 byte order mark
    /// before the first name, as spreadsheets write it, is not part of it.)
    pub fn new<'a>(header: impl IntoIterator<Item = &'a str>) -> Result<Layout, String> {
        let mut columns: Vec<Column> = Vec::new();
        for (i, name) in header.into_iter().enumerate() {
            let name = name.trim_start_matches('\u{feff}').trim();
            let Some(column) = COLUMNS.iter().find(|c| c.name == name) else {
                return Err(format!(
                    "unknown column {name:?} (column {}); the columns are: {}",
                    i + 1,
                    COLUMNS.iter().map(|c| c.name).collect::<Vec<_>>().join(", ")
                ));
            };
            if columns.iter().any(|c| c.name == name) {
                return Err(format!("column {name:?} appears twice (column {})", i + 1));
            }
            columns.push(*column);
        }
        Ok(Layout { columns })
    }

    pub fn width(&self) -> usize {
        self.columns.len()
    }
}

/// The column an error's path (relative to the item) came from, and what is left of the path
/// inside that column (`""`, `[1]`, `schedule.time_end`, …).
pub fn column_of(path: &str, days: &[Weekday]) -> (String, String) {
    let split = path.find(['.', '[']).unwrap_or(path.len());
    let (head, rest) = path.split_at(split);
    match head {
        "limits" => match rest.strip_prefix('.') {
            Some(inner) => {
                let end = inner.find(['.', '[']).unwrap_or(inner.len());
                (format!("limits.{}", &inner[..end]), inner[end..].to_owned())
            }
            None => ("limits".to_owned(), rest.to_owned()),
        },
        "working_schedule" => match index(rest).and_then(|(k, inner)| Some((days.get(k)?, inner))) {
            Some((day, inner)) => (
                format!("working_schedule.{}", day.as_str().to_lowercase()),
                inner.trim_start_matches('.').to_owned(),
            ),
            None => (head.to_owned(), rest.to_owned()),
        },
        "expected_version" => ("version".to_owned(), rest.to_owned()),
        _ => (head.to_owned(), rest.to_owned()),
    }
}

/// The cell syntax, for an error that says a schedule cell did not convert (the service got its
/// text where an object belongs).
pub fn syntax_of(column: &str, inner: &str, code: &str) -> Option<&'static str> {
    if code != "INVALID_TYPE" {
        None
    } else if column.starts_with("working_schedule.") && (inner.is_empty() || inner == "schedule") {
        Some(DAY_SYNTAX)
    } else if column == "individual_schedule" && index(inner).is_some_and(|(_, rest)| rest.is_empty()) {
        Some(DATED_SYNTAX)
    } else {
        None
    }
}

/// `[k]rest` → `(k, rest)`.
fn index(path: &str) -> Option<(usize, &str)> {
    let inner = path.strip_prefix('[')?;
    let (k, rest) = inner.split_once(']')?;
    Some((k.parse().ok()?, rest))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_header_names_known_columns_once() {
        assert!(Layout::new(["\u{feff}name", "latitude"]).is_ok());
        let unknown = Layout::new(["name", "lat"]).unwrap_err();
        assert!(unknown.starts_with("unknown column \"lat\" (column 2)"), "{unknown}");
        let twice = Layout::new(["name", "name"]).unwrap_err();
        assert_eq!(twice, "column \"name\" appears twice (column 2)");
    }

    #[test]
    fn an_error_path_names_its_column() {
        let days = [Weekday::Tuesday, Weekday::Saturday];
        let cases = [
            ("latitude", "INVALID_LATITUDE", "latitude", ""),
            ("limits.weight", "MAX_VALUE", "limits.weight", ""),
            ("limits", "REQUIRED", "limits", ""),
            ("location_types[1]", "INVALID_ENUM", "location_types", "[1]"),
            (
                "working_schedule[1].schedule.time_end",
                "INVALID_TIME",
                "working_schedule.saturday",
                "schedule.time_end",
            ),
            ("working_schedule", "REQUIRED", "working_schedule", ""),
            (
                "individual_schedule[3].date",
                "INVALID_FORMAT",
                "individual_schedule",
                "[3].date",
            ),
            ("expected_version", "CONFLICT", "version", ""),
            ("foo", "SCHEMA_MISMATCH", "foo", ""),
        ];
        for (path, code, column, inner) in cases {
            assert_eq!(column_of(path, &days), (column.to_owned(), inner.to_owned()), "{path}");
            assert_eq!(syntax_of(column, inner, code), None);
        }
        let (column, inner) = column_of("working_schedule[0].schedule", &days);
        assert_eq!(
            (column.as_str(), inner.as_str()),
            ("working_schedule.tuesday", "schedule")
        );
        assert_eq!(syntax_of(&column, &inner, "INVALID_TYPE"), Some(DAY_SYNTAX));
        assert_eq!(
            syntax_of("individual_schedule", "[2]", "INVALID_TYPE"),
            Some(DATED_SYNTAX)
        );
    }
}

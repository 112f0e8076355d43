//! A row's cells into the JSON text of a create or update item, column by column;
//! each cell converted by `cells` for its field, whatever file it came from.
//!
//! An empty cell is an absent field. Nothing here validates: a cell that does not convert to its
//! field's type (a number that is not one, a schedule that does not follow the syntax) is sent as
//! the text it is, and the service answers with its code (`INVALID_TYPE`, …) at the field's path,
//! which `layout::column_of` turns back into the column.

use std::borrow::Cow;

use serde_json::Value;

use super::layout::{Kind, Layout};
use crate::client::file::cells::{Cell, Dialect, Scalar};
use crate::domain::location::Weekday;

/// What one row holds, converted.
#[derive(Debug, Default)]
pub struct Cells {
    /// The location's fields as the JSON text of an item of create or update.
    pub json: String,
    /// The row's `merchant_location_id` cell, when it is not empty.
    pub merchant_location_id: Option<String>,
    pub location_id: Option<Value>,
    pub version: Option<Value>,
    pub archived: bool,
    /// The days in the order the item's `working_schedule` lists them (an error's index → column).
    pub days: Vec<Weekday>,
}

impl Layout {
    /// Converts one row's cells (fewer than the header's are empty) into an item's JSON text,
    /// written directly: a push converts every row, and this is most of its own work. `size` is
    /// the cells' length, for the text's first allocation.
    pub fn convert(&self, cells: &[Cell<'_>], dialect: Dialect, size: usize) -> Cells {
        let mut out = Cells::default();
        let mut json = Json {
            buf: Vec::with_capacity(2 * size + 512),
            first: false,
        };
        let mut limits: Vec<(&str, &Cell<'_>)> = Vec::new();
        let mut days: Vec<(Weekday, Cow<'_, str>)> = Vec::new();
        json.open('{');
        for (column, cell) in self.columns.iter().zip(cells) {
            if cell.is_empty() {
                continue;
            }
            match column.kind {
                Kind::Text => {
                    let text = cell.text(dialect);
                    json.key(column.name);
                    json.string(&text);
                    if column.name == "merchant_location_id" {
                        out.merchant_location_id = Some(text.into_owned());
                    }
                }
                Kind::Number => {
                    json.key(column.name);
                    json.scalar(&cell.number(dialect));
                }
                Kind::Boolean => {
                    json.key(column.name);
                    json.scalar(&cell.boolean(dialect));
                }
                Kind::List => {
                    json.key(column.name);
                    json.array(elements(&cell.text(dialect)), Json::string);
                }
                Kind::Limit(key) => limits.push((key, cell)),
                Kind::Day(day) => days.push((day, cell.text(dialect))),
                Kind::Dated => {
                    json.key(column.name);
                    json.array(elements(&cell.text(dialect)), Json::dated_day);
                }
                Kind::LocationId => out.location_id = Some(Value::String(cell.text(dialect).into_owned())),
                Kind::Version => {
                    out.version = Some(match cell.number(dialect) {
                        Scalar::Number(n) => serde_json::from_str(&n).unwrap_or(Value::String(n)),
                        Scalar::Bool(b) => Value::Bool(b),
                        Scalar::Text(text) => Value::String(text.into_owned()),
                    });
                }
                Kind::Status => out.archived = cell.text(dialect).trim() == "ARCHIVED",
                Kind::Issue | Kind::ReadOnly => {}
            }
        }
        if !limits.is_empty() {
            json.key("limits");
            json.open('{');
            for (key, cell) in limits {
                json.key(key);
                json.scalar(&cell.number(dialect));
            }
            json.close('}');
        }
        if !days.is_empty() {
            days.sort_by_key(|(day, _)| *day);
            json.key("working_schedule");
            json.open('[');
            for (day, cell) in &days {
                json.next();
                json.open('{');
                json.key("day");
                json.string(day.as_str());
                json.key("schedule");
                json.day_schedule(cell);
                json.close('}');
            }
            json.close(']');
            out.days = days.iter().map(|(day, _)| *day).collect();
        }
        json.close('}');
        out.json = json.finish();
        out
    }
}

/// A JSON text written piece by piece; `first` says whether the open object or array has no
/// member yet (a comma goes before every other one).
#[derive(Default)]
struct Json {
    buf: Vec<u8>,
    first: bool,
}

impl Json {
    fn open(&mut self, bracket: char) {
        self.buf.push(bracket as u8);
        self.first = true;
    }

    fn close(&mut self, bracket: char) {
        self.buf.push(bracket as u8);
        self.first = false;
    }

    /// An array of `elements`, each written by `write`.
    fn array<'a>(&mut self, elements: impl Iterator<Item = &'a str>, write: impl Fn(&mut Json, &'a str)) {
        self.open('[');
        for element in elements {
            self.next();
            write(self, element);
        }
        self.close(']');
    }

    /// Before an array element.
    fn next(&mut self) {
        if !std::mem::take(&mut self.first) {
            self.buf.push(b',');
        }
    }

    fn key(&mut self, key: &str) {
        self.next();
        self.string(key);
        self.buf.push(b':');
    }

    fn string(&mut self, s: &str) {
        // Writing a string to a Vec cannot fail.
        let _ = serde_json::to_writer(&mut self.buf, s);
    }

    /// A number or boolean cell as converted: the JSON value, or the text for the service to
    /// refuse.
    fn scalar(&mut self, scalar: &Scalar<'_>) {
        match scalar {
            Scalar::Number(n) => self.buf.extend_from_slice(n.as_bytes()),
            Scalar::Bool(b) => self.buf.extend_from_slice(if *b { b"true" } else { b"false" }),
            Scalar::Text(text) => self.string(text),
        }
    }

    /// `HH:MM-HH:MM [break B] [cutoff C]` → a day schedule object, or the text.
    fn day_schedule(&mut self, cell: &str) {
        match DayCell::read(cell.split_whitespace()) {
            Some(schedule) => self.schedule(&schedule),
            None => self.string(cell),
        }
    }

    fn schedule(&mut self, schedule: &DayCell<'_>) {
        self.open('{');
        for (key, value) in schedule.entries() {
            self.key(key);
            self.string(value);
        }
        self.close('}');
    }

    /// `YYYY-MM-DD [closed] <day>` → an `individual_schedule` element, or the text.
    fn dated_day(&mut self, element: &str) {
        let mut words = element.split_whitespace().peekable();
        let Some(date) = words.next() else {
            return self.string(element);
        };
        let closed = words.next_if(|w| w.eq_ignore_ascii_case("closed")).is_some();
        let is_works = !closed;
        let Some(schedule) = DayCell::read(words) else {
            return self.string(element);
        };
        self.open('{');
        self.key("date");
        self.string(date);
        self.key("schedule");
        self.schedule(&schedule);
        self.key("is_works");
        self.buf.extend_from_slice(if is_works { b"true" } else { b"false" });
        self.close('}');
    }

    fn finish(self) -> String {
        // Only whole UTF-8 strings and ASCII were written.
        String::from_utf8(self.buf).unwrap_or_default()
    }
}

/// The non-empty elements of a list cell, trimmed.
fn elements(cell: &str) -> impl Iterator<Item = &str> {
    cell.split(';').map(str::trim).filter(|e| !e.is_empty())
}

/// The keys and values of a day schedule cell's words, or `None` when they do not follow the
/// syntax.
struct DayCell<'a> {
    start: &'a str,
    end: &'a str,
    pause: Option<&'a str>,
    cutoff: Option<&'a str>,
}

impl<'a> DayCell<'a> {
    /// `HH:MM-HH:MM [break B] [cutoff C]`, as words; `None` when they do not follow the syntax.
    fn read(mut words: impl Iterator<Item = &'a str>) -> Option<DayCell<'a>> {
        let (start, end) = words.next()?.split_once('-')?;
        let mut cell = DayCell {
            start,
            end,
            pause: None,
            cutoff: None,
        };
        while let Some(word) = words.next() {
            let slot = if word.eq_ignore_ascii_case("break") {
                &mut cell.pause
            } else if word.eq_ignore_ascii_case("cutoff") {
                &mut cell.cutoff
            } else {
                return None;
            };
            if slot.replace(words.next()?).is_some() {
                return None;
            }
        }
        Some(cell)
    }

    /// The day schedule's keys and values.
    fn entries(&self) -> impl Iterator<Item = (&'static str, &'a str)> {
        [
            ("time_start", Some(self.start)),
            ("time_end", Some(self.end)),
            ("break", self.pause),
            ("shipping_cutoff", self.cutoff),
        ]
        .into_iter()
        .filter_map(|(key, value)| Some((key, value?)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A CSV row's cells.
    pub(crate) fn texts<'a>(cells: &[&'a str]) -> Vec<Cell<'a>> {
        cells.iter().map(|c| Cell::Text(Cow::Borrowed(*c))).collect()
    }

    const CSV: Dialect = Dialect::csv(b',');

    #[test]
    fn cells_that_do_not_convert_are_sent_as_their_text() {
        let layout = Layout::new([
            "latitude",
            "is_accepts_returns",
            "working_schedule.friday",
            "individual_schedule",
        ])
        .unwrap();
        let item = |cells: Cells| serde_json::from_str::<Value>(&cells.json).unwrap();
        let cells = item(layout.convert(
            &texts(&[
                "55,75",
                "yes",
                "9-18 lunch",
                "2026-12-31; 2027-01-01 closed 10:00-12:00",
            ]),
            CSV,
            0,
        ));
        assert_eq!(cells["latitude"], "55,75");
        assert_eq!(cells["is_accepts_returns"], "yes");
        assert_eq!(cells["working_schedule"][0]["day"], "FRIDAY");
        assert_eq!(cells["working_schedule"][0]["schedule"], "9-18 lunch");
        assert_eq!(cells["individual_schedule"][0], "2026-12-31");
        assert_eq!(cells["individual_schedule"][1]["is_works"], false);
        let layout = Layout::new(["is_accepts_returns", "storage_period_days", "latitude", "name"]).unwrap();
        let cells = item(layout.convert(&texts(&["TRUE", " 7 ", "1e400", "\"quoted\"\n"]), CSV, 0));
        assert_eq!(cells["is_accepts_returns"], true);
        assert_eq!(cells["storage_period_days"], 7);
        assert_eq!(cells["latitude"], "1e400", "out of range: the text");
        assert_eq!(cells["name"], "\"quoted\"\n");
        assert_eq!(
            item(Layout::new(["name"]).unwrap().convert(&texts(&[""]), CSV, 0)),
            serde_json::json!({})
        );
    }
}

//! The CSV layout of `locations push` and `pull` (CONTRACT §11): which columns there are, how a
//! row's cells become a location item and a record becomes cells, and how an error's path names
//! the column it came from.
//!
//! The layout is for people editing a spreadsheet. One column per field of SPEC §2.1, nested fields
//! by dotted names (`limits.length`), list fields with `;` between elements, the weekly schedule as
//! one column per day and the dated schedule in one column:
//!
//! - a day: `09:00-21:00`, optionally followed by ` break 13:00-14:00` and ` cutoff 18:00`; an
//!   empty day cell means the location is closed that day;
//! - `individual_schedule`: `2026-12-31 10:00-16:00; 2027-01-01 closed 00:00-23:59`, each date
//!   followed by `closed` when the location does not work that date, then a day as above.
//!
//! An empty cell is an absent field. Nothing here validates: a cell that does not convert to its
//! field's type (a number that is not one, a schedule that does not follow the syntax) is sent as
//! the text it is, and the service answers with its code (`INVALID_TYPE`, …) at the field's path,
//! which `column_of` turns back into the column.

use serde_json::{Number, Value};

use crate::domain::location::Weekday;

/// How a column's cells convert.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
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
    kind: Kind,
}

const fn column(name: &'static str, kind: Kind) -> Column {
    Column { name, kind }
}

/// Every column `push` reads, in the order `pull` writes them (the record's order, CONTRACT §9.1).
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
const DAY_SYNTAX: &str = "HH:MM-HH:MM [break HH:MM-HH:MM] [cutoff HH:MM]";
const DATED_SYNTAX: &str = "YYYY-MM-DD [closed] HH:MM-HH:MM [break HH:MM-HH:MM] [cutoff HH:MM], `;` between dates";

/// A file's header, checked: each cell's column.
#[derive(Debug)]
pub struct Layout {
    columns: Vec<Column>,
}

/// What one CSV row holds, converted.
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

    /// Converts one row's cells (fewer than the header's are empty) into an item's JSON text,
    /// written directly: a push converts every row, and this is most of its own work. `size` is
    /// the cells' length, for the text's first allocation.
    pub fn convert<'a>(&self, cells: impl IntoIterator<Item = &'a str>, size: usize) -> Cells {
        let mut out = Cells::default();
        let mut json = Json {
            buf: Vec::with_capacity(2 * size + 512),
            first: false,
        };
        let mut limits: Vec<(&str, &str)> = Vec::new();
        let mut days: Vec<(Weekday, &str)> = Vec::new();
        json.open('{');
        for (column, cell) in self.columns.iter().zip(cells) {
            if cell.is_empty() {
                continue;
            }
            match column.kind {
                Kind::Text => {
                    json.key(column.name);
                    json.string(cell);
                    if column.name == "merchant_location_id" {
                        out.merchant_location_id = Some(cell.to_owned());
                    }
                }
                Kind::Number => {
                    json.key(column.name);
                    json.number(cell);
                }
                Kind::Boolean => {
                    json.key(column.name);
                    json.boolean(cell);
                }
                Kind::List => {
                    json.key(column.name);
                    json.array(elements(cell), Json::string);
                }
                Kind::Limit(key) => limits.push((key, cell)),
                Kind::Day(day) => days.push((day, cell)),
                Kind::Dated => {
                    json.key(column.name);
                    json.array(elements(cell), Json::dated_day);
                }
                Kind::LocationId => out.location_id = Some(Value::String(cell.to_owned())),
                Kind::Version => {
                    out.version = Some(
                        serde_json::from_str::<Number>(cell.trim()).map_or_else(|_| Value::from(cell), Value::Number),
                    );
                }
                Kind::Status => out.archived = cell.trim() == "ARCHIVED",
                Kind::Issue | Kind::ReadOnly => {}
            }
        }
        if !limits.is_empty() {
            json.key("limits");
            json.open('{');
            for (key, cell) in limits {
                json.key(key);
                json.number(cell);
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

    /// A number cell: the number it spells, or the text for the service to refuse.
    fn number(&mut self, cell: &str) {
        let trimmed = cell.trim();
        if serde_json::from_str::<Number>(trimmed).is_ok() {
            self.buf.extend_from_slice(trimmed.as_bytes());
        } else {
            self.string(cell);
        }
    }

    /// `true` / `false` in any case (spreadsheets write `TRUE`), or the text.
    fn boolean(&mut self, cell: &str) {
        let word = cell.trim();
        if word.eq_ignore_ascii_case("true") {
            self.buf.extend_from_slice(b"true");
        } else if word.eq_ignore_ascii_case("false") {
            self.buf.extend_from_slice(b"false");
        } else {
            self.string(cell);
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

/// The cells of a record (CONTRACT §9.1) under `pulled_columns()`.
pub fn record_cells(record: &Value) -> Vec<String> {
    pulled_columns()
        .iter()
        .map(|column| match column.kind {
            Kind::Text
            | Kind::LocationId
            | Kind::Status
            | Kind::Number
            | Kind::Boolean
            | Kind::Version
            | Kind::ReadOnly => scalar(&record[column.name]),
            Kind::Issue => scalar(&record["issue"]["message"]),
            Kind::List => record[column.name]
                .as_array()
                .map(|list| list.iter().map(scalar).collect::<Vec<_>>().join("; "))
                .unwrap_or_default(),
            Kind::Limit(key) => scalar(&record["limits"][key]),
            Kind::Day(day) => record["working_schedule"]
                .as_array()
                .and_then(|days| days.iter().find(|d| d["day"] == day.as_str()))
                .map(|d| day_text(&d["schedule"]))
                .unwrap_or_default(),
            Kind::Dated => record["individual_schedule"]
                .as_array()
                .map(|days| {
                    days.iter()
                        .map(|d| {
                            let closed = if d["is_works"] == false { " closed" } else { "" };
                            format!("{}{closed} {}", scalar(&d["date"]), day_text(&d["schedule"]))
                        })
                        .collect::<Vec<_>>()
                        .join("; ")
                })
                .unwrap_or_default(),
        })
        .collect()
}

/// A day schedule as its cell text.
fn day_text(schedule: &Value) -> String {
    let mut text = format!("{}-{}", scalar(&schedule["time_start"]), scalar(&schedule["time_end"]));
    for (key, word) in [("break", "break"), ("shipping_cutoff", "cutoff")] {
        if let Some(value) = schedule[key].as_str().filter(|v| !v.is_empty()) {
            text.push_str(&format!(" {word} {value}"));
        }
    }
    text
}

/// A scalar as cell text: strings as they are, numbers as JSON writes them (a whole number without
/// `.0`, as a spreadsheet shows it), `null` empty.
fn scalar(value: &Value) -> String {
    match value {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        Value::Number(n) if n.is_f64() => match n.as_f64() {
            Some(f) if f.fract() == 0.0 && f.abs() < 1e15 => format!("{}", f as i64),
            _ => n.to_string(),
        },
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn layout() -> Layout {
        Layout::new(pulled_columns().iter().map(|c| c.name)).unwrap()
    }

    #[test]
    fn a_record_written_as_cells_reads_back_as_its_content() {
        let record = json!({
            "location_id": "L1", "merchant_location_id": "pp-1", "status": "QUARANTINE",
            "issue": {"field": "latitude", "code": "STOREFRONT_RULE_VIOLATION", "message": "near L0"},
            "version": 3, "created_at": "2026-11-22T09:30:00.123Z", "updated_at": "2026-11-22T09:30:00.123Z",
            "location_types": ["PICKUP_POINT", "CLICK_AND_COLLECT"], "name": "Point; \"one\"",
            "address_tail": "101000, Russia, Moscow, Tverskaya, 1", "comment": "line\nbreak",
            "latitude": 55.7558, "longitude": 37.6173, "provider_id": "PROVIDER_3",
            "provider_location_id": "X-1", "pickup_point_type": "POSTAMAT",
            "payment_methods": ["CARD", "CASH"], "storage_period_days": 7,
            "limits": {"length": 60, "width": 40.5, "height": 40, "weight": 15},
            "instruction": null, "pickup_services": ["FITTING"],
            "working_schedule": [
                {"day": "MONDAY", "schedule": {"time_start": "09:00", "time_end": "21:00", "break": "13:00-14:00", "shipping_cutoff": "18:00"}},
                {"day": "SUNDAY", "schedule": {"time_start": "10:00", "time_end": "24:00", "break": null, "shipping_cutoff": null}}
            ],
            "individual_schedule": [
                {"date": "2026-12-31", "schedule": {"time_start": "10:00", "time_end": "16:00", "break": null, "shipping_cutoff": "15:00"}, "is_works": true},
                {"date": "2027-01-01", "schedule": {"time_start": "00:00", "time_end": "23:59", "break": null, "shipping_cutoff": null}, "is_works": false}
            ],
            "is_accepts_returns": false
        });
        let cells = record_cells(&record);
        assert_eq!(cells[2], "QUARANTINE");
        assert_eq!(cells[4], "near L0");
        let by_name = |name: &str| {
            let i = pulled_columns().iter().position(|c| c.name == name).unwrap();
            cells[i].clone()
        };
        assert_eq!(
            by_name("working_schedule.monday"),
            "09:00-21:00 break 13:00-14:00 cutoff 18:00"
        );
        assert_eq!(by_name("working_schedule.tuesday"), "");
        assert_eq!(
            by_name("individual_schedule"),
            "2026-12-31 10:00-16:00 cutoff 15:00; 2027-01-01 closed 00:00-23:59"
        );
        assert_eq!(by_name("payment_methods"), "CARD; CASH");

        let back = layout().convert(cells.iter().map(String::as_str), 0);
        assert_eq!(back.location_id, Some(json!("L1")));
        assert_eq!(back.version, Some(json!(3)));
        assert!(!back.archived);
        assert_eq!(back.days, [Weekday::Monday, Weekday::Sunday]);
        let mut expected = record.as_object().unwrap().clone();
        for key in [
            "location_id",
            "status",
            "issue",
            "version",
            "created_at",
            "updated_at",
            "instruction",
        ] {
            expected.remove(key);
        }
        // A day schedule without a break reads back without the key: absent and null are equal.
        for day in [1, 0] {
            let schedule = expected["working_schedule"][day]["schedule"].as_object_mut();
            schedule.unwrap().retain(|_, v| !v.is_null());
            let schedule = expected["individual_schedule"][day]["schedule"].as_object_mut();
            schedule.unwrap().retain(|_, v| !v.is_null());
        }
        assert_eq!(
            serde_json::from_str::<Value>(&back.json).unwrap(),
            Value::Object(expected)
        );
        assert_eq!(back.merchant_location_id.as_deref(), Some("pp-1"));
    }

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
            [
                "55,75",
                "yes",
                "9-18 lunch",
                "2026-12-31; 2027-01-01 closed 10:00-12:00",
            ],
            0,
        ));
        assert_eq!(cells["latitude"], "55,75");
        assert_eq!(cells["is_accepts_returns"], "yes");
        assert_eq!(cells["working_schedule"][0]["day"], "FRIDAY");
        assert_eq!(cells["working_schedule"][0]["schedule"], "9-18 lunch");
        assert_eq!(cells["individual_schedule"][0], "2026-12-31");
        assert_eq!(cells["individual_schedule"][1]["is_works"], false);
        let layout = Layout::new(["is_accepts_returns", "storage_period_days", "latitude", "name"]).unwrap();
        let cells = item(layout.convert(["TRUE", " 7 ", "1e400", "\"quoted\"\n"], 0));
        assert_eq!(cells["is_accepts_returns"], true);
        assert_eq!(cells["storage_period_days"], 7);
        assert_eq!(cells["latitude"], "1e400", "out of range: the text");
        assert_eq!(cells["name"], "\"quoted\"\n");
        assert_eq!(
            item(Layout::new(["name"]).unwrap().convert([""], 0)),
            serde_json::json!({})
        );
    }

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

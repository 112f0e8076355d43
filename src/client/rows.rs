//! Reading a file of locations, row by row, without holding it (CONTRACT §11): JSON Lines, a JSON
//! array (or `{"locations": [...]}`), or CSV in the layout of `layout`.
//!
//! `scan` is the one reader. `push` runs it twice: first to check the whole file (a broken line, a
//! CSV row with too many cells, a bad header: exit 2 before anything is sent), then to send it. A
//! row's item is what the service would be sent; the record's read-only keys are taken out, and
//! `location_id` / `version` are kept beside it for `--update`.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::fmt;
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::rc::Rc;

use serde::Deserializer as _;
use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use super::layout::{self, Layout};
use super::report::RowError;
use crate::domain::location::Weekday;

/// A file format of push and pull.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Jsonl,
    Json,
    Csv,
}

impl Format {
    /// The format a file name's extension says, if it says one.
    pub fn of_path(path: &Path) -> Option<Format> {
        let extension = path.extension()?.to_str()?.to_ascii_lowercase();
        match extension.as_str() {
            "jsonl" | "ndjson" => Some(Format::Jsonl),
            "json" => Some(Format::Json),
            "csv" => Some(Format::Csv),
            _ => None,
        }
    }
}

/// Keys of a record (CONTRACT §9.1) that a pushed row may carry and that are not sent.
const READ_ONLY: [&str; 6] = ["location_id", "version", "status", "issue", "created_at", "updated_at"];

/// One row of the file.
#[derive(Debug)]
pub struct Row {
    /// The report's `row`: the line a JSON Lines or CSV row starts on (1-based), the index of a JSON
    /// array's element (0-based).
    pub row: u64,
    /// What create or update is sent, as JSON text: the row's fields without the record's
    /// read-only keys (a row that is not an object, as it is). Written once, here, and copied into
    /// the request body as it is.
    pub item: String,
    /// The row's non-empty `location_id`, `null` and `""` being absent.
    pub location_id: Option<Value>,
    pub version: Option<Value>,
    /// The row's `status` is `ARCHIVED`: not sent (CONTRACT §11).
    pub archived: bool,
    /// The item's `merchant_location_id` when it is a non-empty string.
    pub merchant_location_id: Option<String>,
    /// A CSV row's days, in the order of its `working_schedule` (`None` for JSON).
    pub days: Option<Vec<Weekday>>,
}

impl Row {
    fn new(row: u64, item: Value, location_id: Option<Value>, version: Option<Value>, archived: bool) -> Row {
        let merchant_location_id = item
            .get("merchant_location_id")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_owned);
        let item = item.to_string();
        Row {
            row,
            item,
            location_id: location_id.filter(|v| !v.is_null() && v.as_str() != Some("")),
            version: version.filter(|v| !v.is_null()),
            archived,
            merchant_location_id,
            days: None,
        }
    }

    /// The item's size as JSON, for chunks that stay within the service's body limit.
    pub fn size(&self) -> usize {
        self.item.len()
    }

    /// A JSON value of the file as a row: an object loses the record's read-only keys.
    fn from_json(row: u64, value: Value) -> Row {
        match value {
            Value::Object(mut object) => {
                let location_id = object.remove("location_id");
                let version = object.remove("version");
                let archived = object.get("status").and_then(Value::as_str) == Some("ARCHIVED");
                for key in READ_ONLY {
                    object.remove(key);
                }
                Row::new(row, Value::Object(object), location_id, version, archived)
            }
            other => Row::new(row, other, None, None, false),
        }
    }

    /// The row's `location_id` as text, when it is a string.
    pub fn location_id_str(&self) -> Option<&str> {
        self.location_id.as_ref().and_then(Value::as_str)
    }

    /// An error of the service at `path` (relative to the item), named after the row's field: the
    /// CSV column, the message prefixed with the path inside it and the cell syntax when a schedule
    /// cell did not convert; or the JSON key path.
    pub fn error_at(&self, path: &str, code: &str, message: &str) -> RowError {
        let Some(days) = &self.days else {
            let field = if path == "expected_version" { "version" } else { path };
            return RowError::new(field, code, message);
        };
        let (column, inner) = layout::column_of(path, days);
        let mut text = if inner.is_empty() {
            message.to_owned()
        } else {
            format!("{inner}: {message}")
        };
        if let Some(syntax) = layout::syntax_of(&column, &inner, code) {
            text.push_str(&format!(" (cell syntax: {syntax})"));
        }
        RowError::new(column, code, text)
    }
}

/// Why a file cannot be read as a whole (exit 2).
#[derive(Debug)]
pub struct Unreadable(pub String);

impl fmt::Display for Unreadable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Reads `path` as `format`, handing each row to `each` in file order. Stops at the first problem
/// of the file (its message names the line), or when `each` answers `false`.
pub fn scan(path: &Path, format: Format, mut each: impl FnMut(Row) -> bool) -> Result<(), Unreadable> {
    scan_file(path, format, &mut |row| each(row.into_row()))
}

/// Checks that `path` reads as `format` to its end, the way `scan` reads it, without converting
/// its rows; the number of rows.
pub fn check(path: &Path, format: Format) -> Result<u64, Unreadable> {
    let mut rows = 0;
    scan_file(path, format, &mut |_| {
        rows += 1;
        true
    })?;
    Ok(rows)
}

/// `scan` from any reader (the fuzz target reads bytes).
pub fn scan_reader(reader: impl Read, format: Format, mut each: impl FnMut(Row) -> bool) -> Result<(), Unreadable> {
    let reader = BufReader::with_capacity(256 * 1024, reader);
    scan_any(reader, format, &mut |row| each(row.into_row()))
}

fn scan_file(path: &Path, format: Format, each: &mut dyn FnMut(Lazy) -> bool) -> Result<(), Unreadable> {
    let file = File::open(path).map_err(|e| Unreadable(format!("cannot read {}: {e}", path.display())))?;
    scan_any(BufReader::with_capacity(256 * 1024, file), format, each)
}

fn scan_any(reader: impl BufRead, format: Format, each: &mut dyn FnMut(Lazy) -> bool) -> Result<(), Unreadable> {
    match format {
        Format::Jsonl => scan_lines(reader, each),
        Format::Json => scan_array(reader, each),
        Format::Csv => scan_csv(reader, each),
    }
}

/// A row that is converted only when it is used: the check pass counts rows and converts none.
enum Lazy<'a> {
    Json(u64, Value),
    Csv(u64, &'a Layout, &'a csv::StringRecord),
}

impl Lazy<'_> {
    fn into_row(self) -> Row {
        match self {
            Lazy::Json(row, value) => Row::from_json(row, value),
            Lazy::Csv(line, layout, record) => {
                let cells = layout.convert(record.iter(), record.as_slice().len());
                Row {
                    row: line,
                    item: cells.json,
                    location_id: cells.location_id,
                    version: cells.version,
                    archived: cells.archived,
                    merchant_location_id: cells.merchant_location_id,
                    days: Some(cells.days),
                }
            }
        }
    }
}

fn scan_lines(reader: impl BufRead, each: &mut dyn FnMut(Lazy) -> bool) -> Result<(), Unreadable> {
    for (n, line) in reader.lines().enumerate() {
        let number = n as u64 + 1;
        let line = line.map_err(|e| Unreadable(format!("line {number}: {e}")))?;
        if line.trim().is_empty() {
            continue;
        }
        let value: Value =
            serde_json::from_str(&line).map_err(|e| Unreadable(format!("line {number}: not a JSON value: {e}")))?;
        if !each(Lazy::Json(number, value)) {
            break;
        }
    }
    Ok(())
}

fn scan_array(reader: impl Read, each: &mut dyn FnMut(Lazy) -> bool) -> Result<(), Unreadable> {
    let mut deserializer = serde_json::Deserializer::from_reader(reader);
    let mut top = Top { each, next: 0 };
    let read = deserializer.deserialize_any(&mut top).and_then(|()| deserializer.end());
    read.map_err(|e| {
        Unreadable(format!(
            "not a JSON array of locations (or {{\"locations\": [...]}}): {e}"
        ))
    })
}

/// The top of a JSON file: an array of locations, or an object whose one key `locations` is.
struct Top<'a> {
    each: &'a mut dyn FnMut(Lazy) -> bool,
    next: u64,
}

impl<'de> Visitor<'de> for &mut Top<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an array of locations or {\"locations\": [...]}")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(value) = seq.next_element::<Value>()? {
            let row = Lazy::Json(self.next, value);
            self.next += 1;
            if !(self.each)(row) {
                while seq.next_element::<de::IgnoredAny>()?.is_some() {}
                break;
            }
        }
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut seen = false;
        while let Some(key) = map.next_key::<String>()? {
            if key != "locations" || seen {
                return Err(de::Error::custom(format!("unexpected key {key:?}")));
            }
            seen = true;
            map.next_value_seed(&mut *self)?;
        }
        if !seen {
            return Err(de::Error::custom("no key \"locations\""));
        }
        Ok(())
    }
}

impl<'de> DeserializeSeed<'de> for &mut Top<'_> {
    type Value = ();

    fn deserialize<D: serde::Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        struct Elements<'b, 'c>(&'b mut Top<'c>);
        impl<'de> Visitor<'de> for Elements<'_, '_> {
            type Value = ();
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an array of locations")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<(), A::Error> {
                self.0.visit_seq(seq)
            }
        }
        deserializer.deserialize_seq(Elements(self))
    }
}

/// A reader that remembers where its line breaks are (`\n`, and `\r` not followed by `\n`), for
/// the line a CSV record starts on. The csv crate counts `\n` only, and after a `\r\n` it places
/// the next record at the `\n`, on the line before the record's own.
struct LineBreaks<R> {
    inner: R,
    offset: u64,
    /// A `\r` at the end of what was read so far: a break unless a `\n` follows.
    pending_cr: Option<u64>,
    breaks: Rc<RefCell<Breaks>>,
}

#[derive(Default)]
struct Breaks {
    /// Offsets of breaks not yet passed by a record.
    ahead: VecDeque<u64>,
    /// Breaks already passed.
    passed: u64,
}

impl<R: Read> Read for LineBreaks<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        let mut breaks = self.breaks.borrow_mut();
        for (i, byte) in buf[..n].iter().enumerate() {
            let at = self.offset + i as u64;
            match (*byte, self.pending_cr.take()) {
                (b'\n', _) => breaks.ahead.push_back(at),
                (other, cr) => {
                    if let Some(cr) = cr {
                        breaks.ahead.push_back(cr);
                    }
                    if other == b'\r' {
                        self.pending_cr = Some(at);
                    }
                }
            }
        }
        if n == 0
            && let Some(cr) = self.pending_cr.take()
        {
            breaks.ahead.push_back(cr);
        }
        self.offset += n as u64;
        Ok(n)
    }
}

/// The line a record that starts at `position` is on (1-based): one more than the breaks before it
/// (a break at its very first byte is the one the csv crate left in front of it).
fn start_line(position: Option<&csv::Position>, breaks: &RefCell<Breaks>) -> u64 {
    let Some(position) = position else { return 0 };
    let mut breaks = breaks.borrow_mut();
    while breaks.ahead.front().is_some_and(|b| *b <= position.byte()) {
        breaks.ahead.pop_front();
        breaks.passed += 1;
    }
    breaks.passed + 1
}

fn scan_csv(reader: impl Read, each: &mut dyn FnMut(Lazy) -> bool) -> Result<(), Unreadable> {
    let breaks = Rc::new(RefCell::new(Breaks::default()));
    let reader = LineBreaks {
        inner: reader,
        offset: 0,
        pending_cr: None,
        breaks: Rc::clone(&breaks),
    };
    let mut csv = csv::ReaderBuilder::new().flexible(true).from_reader(reader);
    let csv_error = |e: csv::Error| {
        let line = e.position().map_or(String::new(), |p| format!("line {}: ", p.line()));
        Unreadable(format!("{line}{e}"))
    };
    let header = csv.headers().map_err(csv_error)?;
    let layout = Layout::new(header.iter()).map_err(|e| Unreadable(format!("line 1: {e}")))?;
    let mut record = csv::StringRecord::new();
    while csv.read_record(&mut record).map_err(csv_error)? {
        let line = start_line(record.position(), &breaks);
        if record.len() > layout.width() {
            return Err(Unreadable(format!(
                "line {line}: {} cells, but the header names {} columns",
                record.len(),
                layout.width()
            )));
        }
        if record.iter().all(str::is_empty) {
            continue;
        }
        if !each(Lazy::Csv(line, &layout, &record)) {
            break;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    fn rows_of(text: &str, format: Format) -> Result<Vec<Row>, Unreadable> {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        file.write_all(text.as_bytes()).unwrap();
        let mut rows = Vec::new();
        scan(file.path(), format, |row| {
            rows.push(row);
            true
        })?;
        Ok(rows)
    }

    #[test]
    fn json_lines_count_lines_and_skip_blank_ones() {
        let rows = rows_of(
            "{\"name\":\"a\",\"location_id\":\"L\",\"version\":2,\"status\":\"ARCHIVED\"}\n\n[1]\n",
            Format::Jsonl,
        )
        .unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!((rows[0].row, rows[1].row), (1, 3));
        assert_eq!(rows[0].item, r#"{"name":"a"}"#);
        assert_eq!(rows[0].location_id_str(), Some("L"));
        assert!(rows[0].archived);
        assert_eq!(rows[1].item, "[1]");
        let broken = rows_of("{}\n{\"name\":\n", Format::Jsonl).unwrap_err();
        assert!(broken.0.starts_with("line 2: not a JSON value"), "{broken}");
    }

    #[test]
    fn a_json_file_is_an_array_or_an_object_of_locations() {
        let rows = rows_of("[{\"merchant_location_id\":\"m\"}, 5]", Format::Json).unwrap();
        assert_eq!((rows[0].row, rows[1].row), (0, 1));
        assert_eq!(rows[0].merchant_location_id.as_deref(), Some("m"));
        assert_eq!(rows_of("{\"locations\": [{}, {}, {}]}", Format::Json).unwrap().len(), 3);
        assert!(rows_of("{\"items\": []}", Format::Json).is_err());
        assert!(rows_of("[{}, {]", Format::Json).is_err());
        assert!(rows_of("[] []", Format::Json).is_err());
    }

    #[test]
    fn a_csv_row_starts_on_its_line_and_may_not_outgrow_the_header() {
        let rows = rows_of("name,comment\nA,\"two\nlines\"\n,\nB,x\n", Format::Csv).unwrap();
        assert_eq!(rows.len(), 2, "the row of empty cells is skipped");
        assert_eq!((rows[0].row, rows[1].row), (2, 5));
        assert_eq!(rows[0].item, r#"{"name":"A","comment":"two\nlines"}"#);
        // Spreadsheets end lines with CRLF, and a cell may hold a line break.
        let rows = rows_of("name,comment\r\nA,\"x\r\ny\"\r\nB,\r\n", Format::Csv).unwrap();
        assert_eq!((rows[0].row, rows[1].row), (2, 4));
        // Old Macintosh line ends (a bare CR): each row on a line of its own (found by fuzzing).
        let rows = rows_of("name\rA\rB\r\rC", Format::Csv).unwrap();
        let lines: Vec<u64> = rows.iter().map(|r| r.row).collect();
        assert_eq!(lines, [2, 3, 5]);
        let wide = rows_of("name\nA\nB,C\n", Format::Csv).unwrap_err();
        assert_eq!(wide.0, "line 3: 2 cells, but the header names 1 columns");
        let unknown = rows_of("name,colour\nA,red\n", Format::Csv).unwrap_err();
        assert!(unknown.0.starts_with("line 1: unknown column \"colour\""), "{unknown}");
    }
}

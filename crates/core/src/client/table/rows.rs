//! Reading a file of locations, row by row, without holding it: JSON Lines, a
//! JSON array (or `{"locations": [...]}`), or a table in the layout of `layout`: CSV in the
//! dialects spreadsheet programs write, or a workbook's sheet.
//!
//! `Source::open` finds how the file is read (a CSV's encoding and delimiter); `Source::scan` is
//! the one reader. `push` runs it twice: first to check the whole file (a broken line, a row with
//! too many cells, a bad header: exit 2 before anything is sent), then to send it. A row's item is
//! what the service would be sent; the record's read-only keys are taken out, and `location_id` /
//! `version` are kept beside it for `--update`. A table's cells, from either kind of file, become
//! an item in one place (`read_cells`).

use std::borrow::Cow;
use std::fmt;
use std::fs::File;
use std::io::{BufReader, Cursor, Read, Seek};
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::RowError;
use super::layout::{self, Layout};
use crate::client::file::cells::{Cell, Dialect};
use crate::client::file::csv_dialect::{self, CsvDialect, CsvOptions};
use crate::client::file::{csv_rows, json_rows, workbook};
use crate::domain::location::Weekday;

/// A file format of push and pull.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Jsonl,
    Json,
    Csv,
    /// A workbook (Office Open XML).
    Xlsx,
}

impl Format {
    /// The format a file name's extension says, if it says one.
    pub fn of_path(path: &Path) -> Option<Format> {
        let extension = path.extension()?.to_str()?.to_ascii_lowercase();
        match extension.as_str() {
            "jsonl" | "ndjson" => Some(Format::Jsonl),
            "json" => Some(Format::Json),
            "csv" => Some(Format::Csv),
            "xlsx" => Some(Format::Xlsx),
            _ => None,
        }
    }
}

/// Keys of a record that a pushed row may carry and that are not sent.
const READ_ONLY: [&str; 6] = ["location_id", "version", "status", "issue", "created_at", "updated_at"];

/// One row of the file.
#[derive(Debug)]
pub struct Row {
    /// The report's `row`: the line a JSON Lines or CSV row starts on and a workbook row's number
    /// (1-based), the index of a JSON array's element (0-based).
    pub row: u64,
    /// What create or update is sent, as JSON text: the row's fields without the record's
    /// read-only keys (a row that is not an object, as it is). Written once, here, and copied into
    /// the request body as it is.
    pub item: String,
    /// The row's non-empty `location_id`, `null` and `""` being absent.
    pub location_id: Option<Value>,
    pub version: Option<Value>,
    /// The row's `status` is `ARCHIVED`: not sent.
    pub archived: bool,
    /// The item's `merchant_location_id` when it is a non-empty string.
    pub merchant_location_id: Option<String>,
    /// A table row's days, in the order of its `working_schedule` (`None` for JSON).
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

/// How push reads a file beyond its format.
#[derive(Clone, Debug, Default)]
pub struct ReadOptions {
    pub csv: CsvOptions,
    /// A workbook's sheet (default: the first).
    pub sheet: Option<String>,
}

/// A file and how it is read: found once, then read by every pass.
#[derive(Clone, Debug)]
pub struct Source {
    path: PathBuf,
    format: Format,
    csv: Option<CsvDialect>,
    sheet: Option<String>,
}

impl Source {
    /// Opens `path` as `format`: a CSV file's encoding and delimiter are found here.
    pub fn open(path: &Path, format: Format, options: &ReadOptions) -> Result<Source, Unreadable> {
        let csv = match format {
            Format::Csv => Some(csv_dialect::inspect(|| File::open(path), options.csv).map_err(Unreadable)?),
            _ => None,
        };
        Ok(Source {
            path: path.to_owned(),
            format,
            csv,
            sheet: options.sheet.clone(),
        })
    }

    /// What the summary says of how the file was read: a detected encoding.
    pub fn note(&self) -> Option<String> {
        self.csv
            .filter(|d| d.detected)
            .map(|d| format!("read as {}", d.encoding.name().to_ascii_lowercase()))
    }

    /// Reads the file, handing each row to `each` in file order. Stops at the first problem of the
    /// file (its message names the line), or when `each` answers `false`.
    pub fn scan(&self, mut each: impl FnMut(Row) -> bool) -> Result<(), Unreadable> {
        self.scan_lazy(&mut |row| each(row.into_row()))
    }

    /// Checks that the file reads to its end, the way `scan` reads it, without converting its
    /// rows; the number of rows.
    pub fn check(&self) -> Result<u64, Unreadable> {
        let mut rows = 0;
        self.scan_lazy(&mut |_| {
            rows += 1;
            true
        })?;
        Ok(rows)
    }

    fn scan_lazy(&self, each: &mut dyn FnMut(Lazy) -> bool) -> Result<(), Unreadable> {
        let file =
            File::open(&self.path).map_err(|e| Unreadable(format!("cannot read {}: {e}", self.path.display())))?;
        scan_any(file, self.format, self.csv, self.sheet.as_deref(), each)
    }
}

/// `Source::scan` over bytes (the fuzz target's): a CSV's dialect found as `Source::open` finds it.
pub fn scan_bytes(
    data: &[u8],
    format: Format,
    options: &ReadOptions,
    mut each: impl FnMut(Row) -> bool,
) -> Result<(), Unreadable> {
    let csv = match format {
        Format::Csv => Some(csv_dialect::inspect(|| Ok(Cursor::new(data)), options.csv).map_err(Unreadable)?),
        _ => None,
    };
    scan_any(Cursor::new(data), format, csv, options.sheet.as_deref(), &mut |row| {
        each(row.into_row())
    })
}

/// The most a workbook's part may hold uncompressed when read from bytes (`check_bytes`), and all
/// its parts together.
const WORKBOOK_PART_BYTES: u64 = 128 * 1024 * 1024;
const WORKBOOK_BYTES: u64 = 512 * 1024 * 1024;

/// `Source::check` over bytes: the number of rows of a file that reads to its end. A workbook whose
/// parts are larger uncompressed than any file of up to a few megabytes of locations is refused
/// before it is read (its shared strings would be held whole).
pub fn check_bytes(data: &[u8], format: Format, options: &ReadOptions) -> Result<u64, Unreadable> {
    if format == Format::Xlsx {
        workbook::check_parts(Cursor::new(data), WORKBOOK_PART_BYTES, WORKBOOK_BYTES).map_err(Unreadable)?;
    }
    let csv = match format {
        Format::Csv => Some(csv_dialect::inspect(|| Ok(Cursor::new(data)), options.csv).map_err(Unreadable)?),
        _ => None,
    };
    let mut rows = 0;
    scan_any(Cursor::new(data), format, csv, options.sheet.as_deref(), &mut |_| {
        rows += 1;
        true
    })?;
    Ok(rows)
}

fn scan_any<R: Read + Seek>(
    reader: R,
    format: Format,
    csv: Option<CsvDialect>,
    sheet: Option<&str>,
    each: &mut dyn FnMut(Lazy) -> bool,
) -> Result<(), Unreadable> {
    let buffered = || BufReader::with_capacity(256 * 1024, reader);
    match (format, csv) {
        (Format::Jsonl, _) => json_rows::scan_lines(buffered(), &mut |n, value| each(Lazy::Json(n, value))),
        (Format::Json, _) => json_rows::scan_array(buffered(), &mut |n, value| each(Lazy::Json(n, value))),
        (Format::Csv, Some(dialect)) => scan_table_csv(csv_dialect::decoded(buffered(), dialect), dialect, each),
        (Format::Csv, None) => Err("a CSV file read without its dialect".to_owned()),
        (Format::Xlsx, _) => scan_workbook(buffered(), sheet, each),
    }
    .map_err(Unreadable)
}

/// A row that is converted only when it is used: the check pass counts rows and converts none.
enum Lazy<'a> {
    Json(u64, Value),
    Csv(u64, &'a Layout, &'a csv::StringRecord, Dialect),
    Sheet(u64, &'a Layout, &'a [Cell<'a>]),
}

impl Lazy<'_> {
    fn into_row(self) -> Row {
        let (row, cells) = match self {
            Lazy::Json(row, value) => return Row::from_json(row, value),
            Lazy::Csv(line, layout, record, dialect) => {
                let cells: Vec<Cell<'_>> = record.iter().map(|c| Cell::Text(Cow::Borrowed(c))).collect();
                (line, layout.convert(&cells, dialect, record.as_slice().len()))
            }
            Lazy::Sheet(row, layout, cells) => (row, layout.convert(cells, Dialect::WORKBOOK, 64 * cells.len())),
        };
        Row {
            row,
            item: cells.json,
            location_id: cells.location_id,
            version: cells.version,
            archived: cells.archived,
            merchant_location_id: cells.merchant_location_id,
            days: Some(cells.days),
        }
    }
}

/// A row of a table wider than its header.
fn too_wide(what: &str, row: u64, cells: usize, layout: &Layout) -> String {
    format!(
        "{what} {row}: {cells} cells, but the header names {} columns",
        layout.width()
    )
}

fn scan_table_csv(reader: impl Read, dialect: CsvDialect, each: &mut dyn FnMut(Lazy) -> bool) -> Result<(), String> {
    let mut layout: Option<Layout> = None;
    csv_rows::scan_csv(reader, dialect.delimiter, &mut |line, record| {
        let Some(layout) = &layout else {
            layout = Some(Layout::new(record.iter()).map_err(|e| format!("line {line}: {e}"))?);
            return Ok(true);
        };
        if record.len() > layout.width() {
            return Err(too_wide("line", line, record.len(), layout));
        }
        if record.iter().all(str::is_empty) {
            return Ok(true);
        }
        Ok(each(Lazy::Csv(line, layout, record, Dialect::csv(dialect.delimiter))))
    })
}

fn scan_workbook(
    reader: impl Read + Seek,
    sheet: Option<&str>,
    each: &mut dyn FnMut(Lazy) -> bool,
) -> Result<(), String> {
    let mut layout: Option<Layout> = None;
    workbook::read_rows(reader, sheet, &mut |row, cells| {
        let Some(layout) = &layout else {
            let header: Vec<Cow<'_, str>> = cells.iter().map(|c| c.text(Dialect::WORKBOOK)).collect();
            let named = header.iter().rposition(|h| !h.is_empty()).map_or(0, |k| k + 1);
            let header = header[..named].iter().map(|h| h.as_ref());
            layout = Some(Layout::new(header).map_err(|e| format!("row {row}: {e}"))?);
            return Ok(true);
        };
        let used = cells.iter().rposition(|c| !c.is_empty()).map_or(0, |k| k + 1);
        if used > layout.width() {
            return Err(too_wide("row", row, used, layout));
        }
        Ok(each(Lazy::Sheet(row, layout, cells)))
    })
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    fn rows_of(text: &str, format: Format) -> Result<Vec<Row>, Unreadable> {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        file.write_all(text.as_bytes()).unwrap();
        let mut rows = Vec::new();
        Source::open(file.path(), format, &ReadOptions::default())?.scan(|row| {
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

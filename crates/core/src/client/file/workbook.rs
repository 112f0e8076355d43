//! Workbooks (Office Open XML, `.xlsx`): a worksheet's rows read as cells, streamed
//! (`calamine`'s cell reader: the sheet is never held whole), and a pull written as one worksheet
//! (`rust_xlsxwriter` in its constant-memory mode) with a bold, frozen header row.

use std::borrow::Cow;
use std::io::{Read, Seek, Write};

use calamine::{DataRef, Reader, Xlsx};
use rust_xlsxwriter::{Format, Workbook, XlsxError};

use super::cells::Cell;

/// Checks that no part of the workbook in `reader` is over `max_part` bytes uncompressed, and all
/// of them together not over `max_total`: a few megabytes of a workbook can hold gigabytes of
/// text, which a reader holds in part (its shared strings). Each part is decompressed and counted,
/// never held, whatever sizes the archive claims.
pub fn check_parts<RS: Read + Seek>(reader: RS, max_part: u64, max_total: u64) -> Result<(), String> {
    let mut archive = zip::ZipArchive::new(reader).map_err(|e| format!("not a workbook (.xlsx): {e}"))?;
    let mut total = 0u64;
    for i in 0..archive.len() {
        let part = archive
            .by_index(i)
            .map_err(|e| format!("not a workbook (.xlsx): {e}"))?;
        let name = part.name().map(|n| n.into_owned()).unwrap_or_default();
        let mut counted = part.take(max_part + 1);
        let size =
            std::io::copy(&mut counted, &mut std::io::sink()).map_err(|e| format!("not a workbook (.xlsx): {e}"))?;
        total += size;
        if size > max_part || total > max_total {
            return Err(format!(
                "the workbook is too large once uncompressed ({name} and the parts before it: over {} MiB)",
                total.max(size) / (1024 * 1024)
            ));
        }
    }
    Ok(())
}

/// What receives a workbook's rows: the row's number and its cells; whether to go on.
pub type EachRow<'f> = dyn FnMut(u64, &[Cell<'_>]) -> Result<bool, String> + 'f;

/// Reads the sheet named `sheet` (else the first) of the workbook in `reader`, handing `each` every
/// row with a cell that is not empty: its row number (the first row is 1) and its cells, the
/// columns it leaves out empty. Stops when `each` answers `false`.
pub fn read_rows<RS: Read + Seek>(reader: RS, sheet: Option<&str>, each: &mut EachRow<'_>) -> Result<(), String> {
    let mut workbook: Xlsx<RS> = Xlsx::new(reader).map_err(|e| format!("not a workbook (.xlsx): {e}"))?;
    let names = workbook.sheet_names();
    let name = match sheet {
        Some(wanted) => names.iter().find(|n| *n == wanted).cloned().ok_or_else(|| {
            format!(
                "the workbook has no sheet {wanted:?}; its sheets are: {}",
                names.join(", ")
            )
        })?,
        None => names.first().cloned().ok_or("the workbook has no sheet")?,
    };
    let mut cells = workbook
        .worksheet_cells_reader(&name)
        .map_err(|e| format!("sheet {name:?} cannot be read: {e}"))?;
    let mut row: Vec<Cell<'static>> = Vec::new();
    let mut row_index: Option<u32> = None;
    loop {
        let next = cells
            .next_cell()
            .map_err(|e| format!("sheet {name:?} cannot be read: {e}"))?;
        let at = next.as_ref().map(|c| c.get_position().0);
        if row_index.is_some() && at != row_index {
            if let Some(index) = row_index.take()
                && row.iter().any(|c| !c.is_empty())
                && !each(u64::from(index) + 1, &row)?
            {
                return Ok(());
            }
            row.clear();
        }
        let Some(cell) = next else { return Ok(()) };
        let (index, column) = cell.get_position();
        row_index = Some(index);
        let column = column as usize;
        if column >= row.len() {
            // A sheet's columns are few; a cell far to the right is refused by the layout, never
            // allocated for.
            if column > 4096 {
                return Err(format!("row {}: a cell in column {}", index + 1, column + 1));
            }
            row.resize(column + 1, Cell::Empty);
        }
        row[column] = cell_of(cell.get_value());
    }
}

/// A workbook's cell as a cell of the row model: text, number or boolean; a formula is its stored
/// result; a date as `YYYY-MM-DD` (with ` HH:MM` when it has a time of day).
fn cell_of(value: &DataRef<'_>) -> Cell<'static> {
    match value {
        DataRef::Empty => Cell::Empty,
        DataRef::Int(n) => Cell::Number(*n as f64),
        DataRef::Float(n) => Cell::Number(*n),
        DataRef::Bool(b) => Cell::Bool(*b),
        DataRef::String(s) | DataRef::DateTimeIso(s) | DataRef::DurationIso(s) => Cell::Text(Cow::Owned(s.clone())),
        DataRef::SharedString(s) => Cell::Text(Cow::Owned((*s).to_owned())),
        DataRef::Error(e) => Cell::Text(Cow::Owned(e.to_string())),
        DataRef::DateTime(date) => {
            let (year, month, day, hour, minute, _, _) = date.to_ymd_hms_milli();
            let text = match (date.as_f64() < 1.0, hour == 0 && minute == 0) {
                (true, _) => format!("{hour:02}:{minute:02}"),
                (false, true) => format!("{year:04}-{month:02}-{day:02}"),
                (false, false) => format!("{year:04}-{month:02}-{day:02} {hour:02}:{minute:02}"),
            };
            Cell::Text(Cow::Owned(text))
        }
    }
}

/// A pull written as a workbook: one worksheet, the header bold and frozen, numbers as number
/// cells and everything else as text cells (so that `007` keeps its zeros).
pub struct SheetWriter {
    workbook: Workbook,
    next_row: u32,
}

impl SheetWriter {
    pub fn new(header: &[&str]) -> Result<SheetWriter, XlsxError> {
        let mut workbook = Workbook::new();
        let sheet = workbook.add_worksheet_with_constant_memory()?;
        sheet.set_name("locations")?;
        let bold = Format::new().set_bold();
        for (k, name) in header.iter().enumerate() {
            let column = u16::try_from(k).map_err(|_| XlsxError::ParameterError("too many columns".into()))?;
            sheet.write_string_with_format(0, column, *name, &bold)?;
            sheet.set_column_width(column, column_width(name))?;
        }
        sheet.set_freeze_panes(1, 0)?;
        Ok(SheetWriter { workbook, next_row: 1 })
    }

    /// Appends one row.
    pub fn row(&mut self, cells: &[Cell<'_>]) -> Result<(), XlsxError> {
        let row = self.next_row;
        let sheet = self.workbook.worksheet_from_index(0)?;
        for (k, cell) in cells.iter().enumerate() {
            let column = u16::try_from(k).map_err(|_| XlsxError::ParameterError("too many columns".into()))?;
            match cell {
                Cell::Empty => {}
                Cell::Number(n) => {
                    sheet.write_number(row, column, *n)?;
                }
                Cell::Bool(b) => {
                    sheet.write_string(row, column, if *b { "true" } else { "false" })?;
                }
                Cell::Text(text) => {
                    sheet.write_string(row, column, text.as_ref())?;
                }
            }
        }
        self.next_row += 1;
        Ok(())
    }

    /// Writes the workbook to `writer`.
    pub fn finish(mut self, writer: impl Write + Send) -> Result<(), XlsxError> {
        self.workbook.save_to_writer(writer)
    }
}

/// A column wide enough for what people read in it.
fn column_width(name: &str) -> f64 {
    match name {
        "name" | "address_tail" | "comment" | "instruction" | "issue.message" | "individual_schedule" => 40.0,
        "location_id" => 38.0,
        name if name.starts_with("working_schedule.") => 24.0,
        _ => 16.0,
    }
}

#[cfg(test)]
mod tests {
    use std::io::Cursor;

    use super::*;

    #[test]
    fn a_written_workbook_reads_back_as_its_cells() {
        let mut writer = SheetWriter::new(&["name", "latitude", "comment"]).unwrap();
        writer
            .row(&[Cell::Text("007".into()), Cell::Number(55.7558), Cell::Empty])
            .unwrap();
        writer.row(&[Cell::Empty, Cell::Empty, Cell::Empty]).unwrap();
        writer
            .row(&[Cell::Text("=1+1".into()), Cell::Number(7.0), Cell::Bool(true)])
            .unwrap();
        let mut bytes = Vec::new();
        writer.finish(&mut bytes).unwrap();

        let mut rows: Vec<(u64, Vec<Cell<'static>>)> = Vec::new();
        read_rows(Cursor::new(&bytes), None, &mut |row, cells| {
            rows.push((row, cells.iter().cloned().map(owned).collect()));
            Ok(true)
        })
        .unwrap();
        assert_eq!(rows.len(), 3, "the empty row is skipped: {rows:?}");
        assert_eq!(
            rows[0].1,
            [
                Cell::Text("name".into()),
                Cell::Text("latitude".into()),
                Cell::Text("comment".into())
            ]
        );
        assert_eq!(rows[1], (2, vec![Cell::Text("007".into()), Cell::Number(55.7558)]));
        assert_eq!(rows[2].0, 4);
        assert_eq!(rows[2].1[0], Cell::Text("=1+1".into()), "text, not a formula");

        let missing = read_rows(Cursor::new(&bytes), Some("Sheet9"), &mut |_, _| Ok(true)).unwrap_err();
        assert_eq!(
            missing,
            "the workbook has no sheet \"Sheet9\"; its sheets are: locations"
        );
        let not = read_rows(Cursor::new(b"name,latitude\n".to_vec()), None, &mut |_, _| Ok(true)).unwrap_err();
        assert!(not.starts_with("not a workbook (.xlsx)"), "{not}");
    }

    fn owned(cell: Cell<'_>) -> Cell<'static> {
        match cell {
            Cell::Text(text) => Cell::Text(Cow::Owned(text.into_owned())),
            Cell::Empty => Cell::Empty,
            Cell::Number(n) => Cell::Number(n),
            Cell::Bool(b) => Cell::Bool(b),
        }
    }
}

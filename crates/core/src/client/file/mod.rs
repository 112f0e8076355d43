//! Files as the programs that write them do: one cell of any file (`cells`),
//! how a CSV file is written and its records (`csv_dialect`, `csv_rows`), JSON rows
//! (`json_rows`), and workbooks (`workbook`). The bottom layer: nothing here knows a location.

pub mod cells;
pub mod csv_dialect;
pub(crate) mod csv_rows;
pub(crate) mod json_rows;
pub mod workbook;

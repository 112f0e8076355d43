//! A file of locations through the push reader, as CSV (in every dialect of CONTRACT §16: its
//! delimiter and encoding found from the bytes, or named), a workbook, JSON Lines and JSON: it is
//! refused as a whole, or every row it yields is an item of valid JSON, with its row number, and an
//! error of the service at any path names a field of the row.
#![no_main]

use libfuzzer_sys::fuzz_target;
use storefront_core::client::file::csv_dialect::CsvOptions;
use storefront_core::client::table::rows::{self, Format, ReadOptions};

fuzz_target!(|data: &[u8]| {
    let found = ReadOptions::default();
    let named = ReadOptions {
        csv: CsvOptions {
            delimiter: Some(b';'),
            encoding: Some(encoding_rs::WINDOWS_1251),
        },
        sheet: Some("locations".to_owned()),
    };
    for (format, options) in [
        (Format::Csv, &found),
        (Format::Csv, &named),
        (Format::Xlsx, &found),
        (Format::Xlsx, &named),
        (Format::Jsonl, &found),
        (Format::Json, &found),
    ] {
        let mut last = None;
        let _ = rows::scan_bytes(data, format, options, |row| {
            serde_json::from_str::<serde_json::Value>(&row.item).expect("an item is JSON");
            if format != Format::Json {
                assert!(row.row >= 1);
                assert!(last.is_none_or(|l| row.row > l), "rows in file order");
            }
            last = Some(row.row);
            for path in ["", "latitude", "working_schedule[3].schedule", "limits.weight", "individual_schedule[0]"] {
                let error = row.error_at(path, "INVALID_TYPE", "x");
                assert_eq!(error.code, "INVALID_TYPE");
            }
            true
        });
    }
});

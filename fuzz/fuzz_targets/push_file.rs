//! A file of locations through the push reader, as CSV, JSON Lines and JSON: it is refused as a
//! whole, or every row it yields is an item of valid JSON, with its row number, and an error of
//! the service at any path names a field of the row.
#![no_main]

use libfuzzer_sys::fuzz_target;
use storefront::client::rows::{self, Format};

fuzz_target!(|data: &[u8]| {
    for format in [Format::Csv, Format::Jsonl, Format::Json] {
        let mut last = None;
        let _ = rows::scan_reader(data, format, |row| {
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

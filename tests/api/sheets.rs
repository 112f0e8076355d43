//! Merchants' files as spreadsheet programs write them (CONTRACT §16): the sample saved by
//! LibreOffice Calc set to Russian (`;` with decimal commas and ИСТИНА/ЛОЖЬ, windows-1251, KOI8-R,
//! UTF-16 with tabs, a workbook with number, boolean, formula and empty cells; made by
//! `scripts/make-test-sheets`) pushes to the records the plain CSV does; workbooks round-trip;
//! numbers are never guessed; formulas are quoted in a pulled CSV; files that cannot be read send
//! nothing.

use std::path::{Path, PathBuf};

use calamine::{Data, Reader, Xlsx};
use serde_json::{Value, json};

use crate::helpers::*;
use crate::push::{path_arg, report_lines, sample_csv, write};

fn sheet(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/sheets")
        .join(name)
}

/// The records' content: what a file says of each location (no ids, versions or times).
fn contents(records: &[Value]) -> Vec<Value> {
    records
        .iter()
        .map(|r| {
            let mut r = r.clone();
            for key in ["location_id", "version", "created_at", "updated_at"] {
                r.as_object_mut().unwrap().remove(key);
            }
            r
        })
        .collect()
}

/// Pushes `file` (with `args`) into a new service; its summary and what it stored.
async fn pushed(file: &Path, args: &[&str]) -> (String, Vec<Value>) {
    let app = TestApp::spawn().await;
    let mut all = vec![path_arg(file)];
    all.extend_from_slice(args);
    let run = app.push(&all).await;
    assert_eq!(run.code, 0, "{}: {run:?}", file.display());
    (run.stdout.trim().to_owned(), contents(&app.records().await))
}

#[tokio::test]
async fn the_sample_as_spreadsheet_programs_save_it_pushes_to_the_same_records() {
    let (summary, expected) = pushed(&sample_csv(), &[]).await;
    assert_eq!(
        summary,
        "4 rows: 4 created, 0 unchanged, 0 updated, 0 quarantined, 0 failed, 0 unknown"
    );
    assert_eq!(expected[0]["address_tail"], "101000, Россия, Москва, Тверская улица, 1");
    let dir = tempfile::tempdir().unwrap();
    let marked = dir.path().join("bom.csv");
    std::fs::write(
        &marked,
        [b"\xEF\xBB\xBF".as_slice(), &std::fs::read(sample_csv()).unwrap()].concat(),
    )
    .unwrap();
    let files = [
        (sheet("semicolon-windows-1251.csv"), "; read as windows-1251"),
        (sheet("semicolon-koi8-r.csv"), "; read as koi8-u"),
        (sheet("tab-utf-16.csv"), ""),
        (marked, ""),
        (sheet("locations.xlsx"), ""),
        (
            Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/locations.xlsx"),
            "",
        ),
    ];
    for (file, note) in files {
        let (summary, records) = pushed(&file, &[]).await;
        assert_eq!(
            summary,
            format!("4 rows: 4 created, 0 unchanged, 0 updated, 0 quarantined, 0 failed, 0 unknown{note}"),
            "{}",
            file.display()
        );
        assert_eq!(records, expected, "{}", file.display());
    }
}

#[tokio::test]
async fn the_sample_workbook_holds_no_ids_of_another_database() {
    // Pushed with --update into any merchant, its rows are created (an id of the database it came
    // from would fail each row NOT_FOUND).
    let sample = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/locations.xlsx");
    let (summary, _) = pushed(&sample, &["--update"]).await;
    assert_eq!(
        summary,
        "4 rows: 4 created, 0 unchanged, 0 updated, 0 quarantined, 0 failed, 0 unknown"
    );
}

#[tokio::test]
async fn a_workbook_row_is_its_sheet_row_and_a_dry_run_reads_it_alike() {
    let app = TestApp::spawn().await;
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("report.jsonl");
    let run = app
        .push(&[
            path_arg(&sheet("locations.xlsx")),
            "--dry-run",
            "--report",
            path_arg(&report),
        ])
        .await;
    assert_eq!(run.code, 0, "{run:?}");
    let rows: Vec<u64> = report_lines(&report)
        .iter()
        .map(|r| r["row"].as_u64().unwrap())
        .collect();
    assert_eq!(rows, [2, 3, 4, 5], "the header is row 1");
    assert!(app.records().await.is_empty());
}

#[tokio::test]
async fn a_pulled_workbook_holds_numbers_and_text_and_pushes_back_unchanged() {
    let app = TestApp::spawn().await;
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(app.push(&[path_arg(&sample_csv())]).await.code, 0);
    let before = app.records().await;
    let pulled = dir.path().join("pulled.xlsx");
    let run = app.pull(&["--output", path_arg(&pulled)]).await;
    assert_eq!(run.code, 0, "{run:?}");

    let mut workbook: Xlsx<_> = calamine::open_workbook(&pulled).unwrap();
    let range = workbook.worksheet_range("locations").unwrap();
    let header: Vec<String> = range.rows().next().unwrap().iter().map(|c| c.to_string()).collect();
    let at = |name: &str| header.iter().position(|h| h == name).unwrap();
    let first = range.rows().nth(1).unwrap();
    assert_eq!(
        first[at("location_id")],
        Data::String(before[0]["location_id"].as_str().unwrap().to_owned())
    );
    assert_eq!(first[at("latitude")], Data::Float(55.7558));
    assert_eq!(first[at("version")], Data::Float(1.0));
    assert_eq!(first[at("is_accepts_returns")], Data::String("true".to_owned()));
    assert_eq!(first[at("provider_id")], Data::Empty);

    let run = app.push(&[path_arg(&pulled), "--update"]).await;
    assert_eq!(
        run.stdout.trim(),
        "4 rows: 0 created, 4 unchanged, 0 updated, 0 quarantined, 0 failed, 0 unknown",
        "{run:?}"
    );
    assert_eq!(app.records().await, before, "nothing changed, not even a version");
}

#[tokio::test]
async fn numbers_are_never_guessed_and_booleans_may_be_words() {
    let app = TestApp::spawn().await;
    let dir = tempfile::tempdir().unwrap();
    let header = "merchant_location_id;location_types;name;address_tail;latitude;longitude;limits.length;limits.width;\
                  limits.height;limits.weight;working_schedule.monday;is_accepts_returns";
    let row = |id: &str, latitude: &str, weight: &str, returns: &str| {
        format!(
            "{id};WAREHOUSE;Склад {id};101000, Россия, Москва, Тверская улица, 1;{latitude};37,6;1;1;1;{weight};\
             09:00-18:00;{returns}"
        )
    };
    let file = write(
        dir.path(),
        "numbers.csv",
        &[
            header.to_owned(),
            row("a", "55,7558", "9,99", "ЛОЖЬ"),
            row("b", "1.234,56", "1", "WAHR"),
            row("c", "56,1", "1 234", "vrai"),
            row("d", "57.5", "12 kg", "ИСТИНА"),
        ]
        .join("\r\n"),
    );
    let report = dir.path().join("report.jsonl");
    let run = app.push(&[path_arg(&file), "--report", path_arg(&report)]).await;
    assert_eq!(run.code, 1, "{run:?}");
    let report = report_lines(&report);
    let failed: Vec<(String, String)> = report
        .iter()
        .flat_map(|r| r["errors"].as_array().unwrap().clone())
        .map(|e| {
            (
                e["field"].as_str().unwrap().to_owned(),
                e["code"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        failed,
        [
            ("latitude".to_owned(), "INVALID_TYPE".to_owned()),
            ("limits.weight".to_owned(), "INVALID_TYPE".to_owned()),
            ("limits.weight".to_owned(), "INVALID_TYPE".to_owned()),
        ]
    );
    let records = app.records().await;
    assert_eq!(records.len(), 1);
    assert_eq!(records[0]["latitude"], 55.7558);
    assert_eq!(records[0]["longitude"], 37.6);
    assert_eq!(records[0]["limits"]["weight"], 9.99, "never 999");
    assert_eq!(records[0]["is_accepts_returns"], false);
}

#[tokio::test]
async fn a_pulled_csv_quotes_what_a_spreadsheet_would_run_and_pushes_back_unchanged() {
    let app = TestApp::spawn().await;
    let dir = tempfile::tempdir().unwrap();
    let mut item = warehouse(1);
    item["name"] = json!("=HYPERLINK(\"http://evil.example\",\"Warehouse\")");
    item["comment"] = json!("-5 floor; '=not a formula");
    item["merchant_location_id"] = json!("@wh-1");
    let mut other = warehouse(2);
    other["name"] = json!("'s-Hertogenbosch");
    other["comment"] = json!("'+31");
    app.create(vec![item, other]).await;
    let before = app.records().await;

    let pulled = dir.path().join("pulled.csv");
    assert_eq!(app.pull(&["--output", path_arg(&pulled)]).await.code, 0);
    let mut reader = csv::Reader::from_path(&pulled).unwrap();
    let header = reader.headers().unwrap().clone();
    let at = |name: &str| header.iter().position(|h| h == name).unwrap();
    let rows: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    assert_eq!(
        &rows[0][at("name")],
        "'=HYPERLINK(\"http://evil.example\",\"Warehouse\")"
    );
    assert_eq!(&rows[0][at("comment")], "'-5 floor; '=not a formula");
    assert_eq!(&rows[0][at("merchant_location_id")], "'@wh-1");
    assert_eq!(&rows[1][at("name")], "'s-Hertogenbosch", "not a formula: as it is");
    assert_eq!(&rows[1][at("comment")], "''+31");
    assert!(
        rows.iter().all(|r| !r[at("longitude")].starts_with('\'')),
        "numbers never get a '"
    );

    let run = app.push(&[path_arg(&pulled), "--update"]).await;
    assert_eq!(
        run.stdout.trim(),
        "2 rows: 0 created, 2 unchanged, 0 updated, 0 quarantined, 0 failed, 0 unknown",
        "{run:?}"
    );
    assert_eq!(app.records().await, before);
}

#[tokio::test]
async fn a_file_that_cannot_be_read_as_it_says_sends_nothing() {
    let app = TestApp::spawn().await;
    let dir = tempfile::tempdir().unwrap();
    // UTF-16 without its byte order mark: its encoding cannot be told; named, it reads.
    let unmarked = dir.path().join("unmarked.csv");
    std::fs::write(&unmarked, &std::fs::read(sheet("tab-utf-16.csv")).unwrap()[2..]).unwrap();
    let run = app.push(&[path_arg(&unmarked)]).await;
    assert_eq!(run.code, 2, "{run:?}");
    assert!(
        run.stderr.contains("line 1: not UTF-8 text") && run.stderr.contains("--encoding"),
        "{run:?}"
    );
    let run = app
        .push(&[path_arg(&unmarked), "--encoding", "utf-16le", "--dry-run"])
        .await;
    assert_eq!(run.code, 0, "{run:?}");

    let run = app
        .push(&[path_arg(&sheet("locations.xlsx")), "--sheet", "Prices"])
        .await;
    assert_eq!(run.code, 2, "{run:?}");
    assert!(
        run.stderr
            .contains("the workbook has no sheet \"Prices\"; its sheets are: "),
        "{run:?}"
    );
    let fake = write(dir.path(), "fake.xlsx", "merchant_location_id,name\n");
    let run = app.push(&[path_arg(&fake)]).await;
    assert_eq!(run.code, 2, "{run:?}");
    assert!(run.stderr.contains("not a workbook (.xlsx)"), "{run:?}");
    let run = app.push(&[path_arg(&sample_csv()), "--encoding", "martian"]).await;
    assert_eq!(run.code, 2, "{run:?}");
    assert!(app.records().await.is_empty());
}

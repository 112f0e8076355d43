//! `storefront locations push FILE --dry-run` (CONTRACT §14): every chunk is sent with
//! `validate_only`; the report, the outcomes, the summary and the exit code are the real push's,
//! except that a row that would be created has the `location_id` `""` and `--archive-missing`
//! only counts; nothing is stored.

use std::path::Path;

use serde_json::Value;

use crate::helpers::*;
use crate::push::{column, edit_csv, path_arg, report_lines, sample_csv};

/// The reports of a dry push and the real one that follows it, checked equal but for the ids of
/// the rows the real one created; the state is checked unchanged by the dry one. Returns both
/// runs' summaries and the real report.
async fn dry_then_real(app: &TestApp, dir: &Path, args: &[&str]) -> (String, String, Vec<Value>) {
    let before = app.records().await;
    let (dry_report, real_report) = (dir.join("dry.jsonl"), dir.join("real.jsonl"));
    let mut dry_args = args.to_vec();
    dry_args.extend(["--dry-run", "--report", path_arg(&dry_report)]);
    let dry = app.push(&dry_args).await;
    assert_eq!(app.records().await, before, "a dry run stores nothing: {dry:?}");
    let mut real_args = args.to_vec();
    real_args.extend(["--report", path_arg(&real_report)]);
    let real = app.push(&real_args).await;
    assert_eq!(dry.code, real.code, "{dry:?} {real:?}");
    let (dry_report, real_report) = (report_lines(&dry_report), report_lines(&real_report));
    // A row whose location the real push created has the id "" in the dry report.
    let stored: Vec<&Value> = before.iter().map(|r| &r["location_id"]).collect();
    let mut expected = real_report.clone();
    for row in &mut expected {
        if !row["location_id"].is_null() && !stored.contains(&&row["location_id"]) {
            row["location_id"] = Value::from("");
        }
    }
    assert_eq!(dry_report, expected, "the dry report is the real one's");
    let summary = dry.stdout.trim().to_owned();
    (summary, real.stdout.trim().to_owned(), real_report)
}

#[tokio::test]
async fn a_dry_run_of_the_sample_reports_what_the_push_then_does() {
    let app = TestApp::spawn().await;
    let dir = tempfile::tempdir().unwrap();
    let (dry, real, report) = dry_then_real(&app, dir.path(), &[path_arg(&sample_csv())]).await;
    assert_eq!(
        dry,
        "dry run, nothing stored: 4 rows: 4 created, 0 unchanged, 0 updated, 0 quarantined, 0 failed, 0 unknown"
    );
    assert_eq!(
        real,
        "4 rows: 4 created, 0 unchanged, 0 updated, 0 quarantined, 0 failed, 0 unknown"
    );
    assert!(
        report
            .iter()
            .all(|r| r["location_id"].as_str().is_some_and(|id| !id.is_empty()))
    );

    // Again: the dry run says every row is unchanged, with the stored ids.
    let (dry, _, _) = dry_then_real(&app, dir.path(), &[path_arg(&sample_csv())]).await;
    assert!(dry.ends_with("4 rows: 0 created, 4 unchanged, 0 updated, 0 quarantined, 0 failed, 0 unknown"));
}

#[tokio::test]
async fn a_dry_run_of_a_file_with_errors_reports_them_at_their_cells() {
    let app = TestApp::spawn().await;
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.csv");
    edit_csv(&sample_csv(), &bad, |rows| {
        let (lat, limits) = (column(rows, "latitude"), column(rows, "limits.weight"));
        rows[1][lat] = "55.7558.1".to_owned();
        rows[2][limits] = "-1".to_owned();
    });
    let (dry, _, report) = dry_then_real(&app, dir.path(), &[path_arg(&bad)]).await;
    assert!(
        dry.ends_with("4 rows: 2 created, 0 unchanged, 0 updated, 0 quarantined, 2 failed, 0 unknown"),
        "{dry}"
    );
    assert_eq!(report[0]["errors"][0]["field"], "latitude");
    assert_eq!(report[1]["errors"][0]["code"], "NEGATIVE_VALUE");
}

#[tokio::test]
async fn a_dry_update_with_archive_missing_counts_and_changes_nothing() {
    let app = TestApp::spawn().await;
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(app.push(&[path_arg(&sample_csv())]).await.code, 0);
    let pulled = dir.path().join("pulled.csv");
    assert_eq!(app.pull(&["--output", path_arg(&pulled)]).await.code, 0);
    let edited = dir.path().join("edited.csv");
    edit_csv(&pulled, &edited, |rows| {
        let name = column(rows, "name");
        rows[2][name] = "Nevsky 28, renamed".to_owned();
        rows.remove(3);
    });
    let args = [path_arg(&edited), "--update", "--archive-missing"];
    let (dry, real, report) = dry_then_real(&app, dir.path(), &args).await;
    assert_eq!(
        dry,
        "dry run, nothing stored: 3 rows: 0 created, 2 unchanged, 1 updated, 0 quarantined, 0 failed, 0 unknown; \
         1 would be archived"
    );
    assert!(real.ends_with("; 1 archived"), "{real}");
    assert_eq!(report[1]["outcome"], "updated");
}

//! `storefront locations push` and `pull` (CONTRACT §11), the binary against the real server, on
//! the test backend: round trips, `--update`, `--archive-missing`, the report and bad files
//! (`push_faults`: 429s, a server killed in the middle of a push, lost answers).

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::helpers::*;

pub(crate) fn sample_csv() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/locations.csv")
}

/// What one run of the CLI did.
#[derive(Debug)]
pub(crate) struct Run {
    pub(crate) code: i32,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
}

/// Runs `storefront locations ARGS` against `base` as `key`.
pub(crate) async fn cli(base: &str, key: &str, args: &[&str]) -> Run {
    let out = tokio::process::Command::new(BIN)
        .env("STOREFRONT_URL", base)
        .env("STOREFRONT_API_KEY", key)
        .env_remove("STOREFRONT_DATABASE")
        .arg("locations")
        .args(args)
        .output()
        .await
        .unwrap();
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8(out.stdout).unwrap(),
        stderr: String::from_utf8(out.stderr).unwrap(),
    }
}

pub(crate) fn path_arg(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// The report's records (JSON Lines).
pub(crate) fn report_lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

pub(crate) fn outcomes(report: &[Value]) -> Vec<String> {
    report
        .iter()
        .map(|r| r["outcome"].as_str().unwrap().to_owned())
        .collect()
}

impl TestApp {
    pub(crate) async fn push(&self, args: &[&str]) -> Run {
        let mut all = vec!["push"];
        all.extend_from_slice(args);
        cli(&self.base, &self.key, &all).await
    }

    pub(crate) async fn pull(&self, args: &[&str]) -> Run {
        let mut all = vec!["pull"];
        all.extend_from_slice(args);
        cli(&self.base, &self.key, &all).await
    }

    pub(crate) async fn records(&self) -> Vec<Value> {
        self.walk_locations(&self.key, &Value::Null, 1000).await
    }
}

pub(crate) fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

pub(crate) fn jsonl(items: &[Value]) -> String {
    items.iter().map(|i| format!("{i}\n")).collect()
}

#[tokio::test]
async fn the_sample_csv_pushes_pulls_and_pushes_back_unchanged() {
    let app = TestApp::spawn().await;
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("report.jsonl");
    let run = app
        .push(&[path_arg(&sample_csv()), "--report", path_arg(&report)])
        .await;
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        run.stdout.trim(),
        "4 rows: 4 created, 0 unchanged, 0 updated, 0 quarantined, 0 failed, 0 unknown"
    );
    let report = report_lines(&report);
    assert_eq!(outcomes(&report), ["created"; 4]);
    // A CSV's first data row is line 2; the second row's instruction spans two lines.
    let rows: Vec<u64> = report.iter().map(|r| r["row"].as_u64().unwrap()).collect();
    assert_eq!(rows, [2, 3, 5, 6]);

    let records = app.records().await;
    assert_eq!(records.len(), 4);
    for (record, line) in records.iter().zip(&report) {
        assert_eq!(record["location_id"], line["location_id"]);
        assert_eq!(record["merchant_location_id"], line["merchant_location_id"]);
    }
    // Every kind of cell arrived as its field.
    let warehouse = &records[0];
    assert_eq!(warehouse["latitude"], 55.7558);
    assert_eq!(warehouse["comment"], "Gate 3; ring the bell");
    assert_eq!(warehouse["is_accepts_returns"], true);
    assert_eq!(
        warehouse["working_schedule"][0],
        json!({"day": "MONDAY", "schedule": {"time_start": "09:00", "time_end": "21:00", "break": "13:00-14:00", "shipping_cutoff": "18:00"}})
    );
    assert_eq!(warehouse["working_schedule"].as_array().unwrap().len(), 5);
    assert_eq!(
        warehouse["individual_schedule"][1],
        json!({"date": "2027-01-01", "schedule": {"time_start": "09:00", "time_end": "21:00", "break": null, "shipping_cutoff": null}, "is_works": false})
    );
    let pickup = &records[1];
    assert_eq!(pickup["instruction"], "Enter from the courtyard.\nRing twice.");
    assert_eq!(pickup["payment_methods"], json!(["ALREADY_PAID", "CARD", "CASH"]));
    assert_eq!(pickup["limits"]["weight"], 30.0);
    assert_eq!(records[3]["location_types"], json!(["WAREHOUSE", "CLICK_AND_COLLECT"]));

    // Pull CSV, push it back (with and without --update): nothing changes.
    let pulled = dir.path().join("pulled.csv");
    let run = app.pull(&["--output", path_arg(&pulled)]).await;
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.stderr.trim(), "pulled 4 locations");
    let header = std::fs::read_to_string(&pulled).unwrap();
    assert!(header.starts_with("location_id,merchant_location_id,status,version,issue.message,location_types,name,"));
    for args in [
        vec![path_arg(&pulled), "--update"],
        vec![path_arg(&pulled)],
        vec![path_arg(&sample_csv())],
    ] {
        let run = app.push(&args).await;
        assert_eq!(run.code, 0, "{run:?}");
        assert_eq!(
            run.stdout.trim(),
            "4 rows: 0 created, 4 unchanged, 0 updated, 0 quarantined, 0 failed, 0 unknown",
            "{args:?}"
        );
    }
    assert_eq!(app.records().await, records, "nothing changed, not even a version");
}

#[tokio::test]
async fn json_lines_and_json_arrays_round_trip_as_the_records_themselves() {
    let app = TestApp::spawn().await;
    let dir = tempfile::tempdir().unwrap();
    let file = write(
        dir.path(),
        "in.jsonl",
        &jsonl(&[warehouse(1), pickup_point(2), postamat(3), click_and_collect(4)]),
    );
    let run = app.push(&[path_arg(&file)]).await;
    assert_eq!(run.code, 0, "{run:?}");

    let run = app.pull(&[]).await;
    assert_eq!(run.code, 0, "{run:?}");
    let (status, listed) = app
        .post_text("/v1/location/list", &json!({"pagination": {"limit": 10}}))
        .await;
    assert_eq!(status, 200);
    let listed: Value = serde_json::from_str(&listed).unwrap();
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(lines.len(), 4);
    for (line, record) in lines.iter().zip(listed["locations"].as_array().unwrap()) {
        assert_eq!(serde_json::from_str::<Value>(line).unwrap(), *record);
        assert_eq!(
            keys_in_order(line)[..3],
            ["location_id", "merchant_location_id", "status"]
        );
    }
    let pulled = write(dir.path(), "pulled.jsonl", &run.stdout);
    let run = app.push(&[path_arg(&pulled), "--update"]).await;
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stdout.contains("0 created, 4 unchanged"), "{run:?}");

    let array = dir.path().join("pulled.json");
    let run = app
        .pull(&["--output", path_arg(&array), "--type", "PICKUP_POINT"])
        .await;
    assert_eq!(run.code, 0, "{run:?}");
    let pulled: Value = serde_json::from_str(&std::fs::read_to_string(&array).unwrap()).unwrap();
    assert_eq!(pulled.as_array().unwrap().len(), 2, "the pickup point and the postamat");
    let run = app.push(&[path_arg(&array), "--update"]).await;
    assert!(run.stdout.starts_with("2 rows: 0 created, 2 unchanged"), "{run:?}");
    let wrapped = write(dir.path(), "wrapped.json", &json!({"locations": pulled}).to_string());
    let run = app.push(&[path_arg(&wrapped)]).await;
    assert!(run.stdout.starts_with("2 rows: 0 created, 2 unchanged"), "{run:?}");
}

/// Rewrites a CSV file through a closure over its rows (header included).
pub(crate) fn edit_csv(from: &Path, to: &Path, edit: impl FnOnce(&mut Vec<Vec<String>>)) {
    let mut reader = csv::Reader::from_path(from).unwrap();
    let mut rows: Vec<Vec<String>> = vec![reader.headers().unwrap().iter().map(str::to_owned).collect()];
    rows.extend(reader.records().map(|r| r.unwrap().iter().map(str::to_owned).collect()));
    edit(&mut rows);
    let mut writer = csv::Writer::from_path(to).unwrap();
    for row in rows {
        writer.write_record(row).unwrap();
    }
    writer.flush().unwrap();
}

pub(crate) fn column(rows: &[Vec<String>], name: &str) -> usize {
    rows[0].iter().position(|c| c == name).unwrap()
}

#[tokio::test]
async fn update_changes_exactly_the_edited_rows_and_archive_missing_exactly_the_removed_ones() {
    let app = TestApp::spawn().await;
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(app.push(&[path_arg(&sample_csv())]).await.code, 0);
    // A location that is in no file: --archive-missing archives it too.
    let mut loose = warehouse(90);
    loose.as_object_mut().unwrap().remove("merchant_location_id");
    let loose_id = app.create(vec![loose]).await[0]["location_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let before = app.records().await;

    let pulled = dir.path().join("pulled.csv");
    assert_eq!(app.pull(&["--output", path_arg(&pulled)]).await.code, 0);
    let edited = dir.path().join("edited.csv");
    edit_csv(&pulled, &edited, |rows| {
        let name = column(rows, "name");
        rows[2][name] = "Nevsky 28, renamed".to_owned();
        let lat = column(rows, "latitude");
        rows[1][lat] = "55.7600".to_owned();
        rows.remove(5); // the loose one
        rows.remove(3); // the parcel locker
    });
    let report = dir.path().join("report.csv");
    let run = app
        .push(&[
            path_arg(&edited),
            "--update",
            "--archive-missing",
            "--report",
            path_arg(&report),
        ])
        .await;
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        run.stdout.trim(),
        "3 rows: 0 created, 1 unchanged, 2 updated, 0 quarantined, 0 failed, 0 unknown; 2 archived"
    );
    let mut report = csv::Reader::from_path(&report).unwrap();
    assert_eq!(
        report.headers().unwrap(),
        vec!["row", "merchant_location_id", "location_id", "outcome", "errors"]
    );
    let lines: Vec<Vec<String>> = report
        .records()
        .map(|r| r.unwrap().iter().map(str::to_owned).collect())
        .collect();
    assert_eq!(
        lines[0][..4],
        [
            "2",
            "wh-moscow-1",
            before[0]["location_id"].as_str().unwrap(),
            "updated"
        ]
    );
    assert_eq!(lines[1][3], "updated");
    assert_eq!(
        lines[2][..4],
        [
            "5",
            "cc-berlin-5",
            before[3]["location_id"].as_str().unwrap(),
            "unchanged"
        ]
    );

    let after = app.records().await;
    let versions: Vec<(&str, u64)> = after
        .iter()
        .map(|r| (r["status"].as_str().unwrap(), r["version"].as_u64().unwrap()))
        .collect();
    assert_eq!(
        versions,
        [
            ("ACTIVE", 2),
            ("ACTIVE", 2),
            ("ARCHIVED", 2),
            ("ACTIVE", 1),
            ("ARCHIVED", 2)
        ]
    );
    assert_eq!(after[0]["latitude"], 55.76);
    assert_eq!(after[1]["name"], "Nevsky 28, renamed");
    assert_eq!(after[3], before[3]);
    assert_eq!(after[4]["location_id"], loose_id.as_str());

    // The edited file again: nothing left to do. Archived rows pulled back are not sent.
    let run = app.push(&[path_arg(&edited), "--update", "--archive-missing"]).await;
    assert_eq!(
        run.stdout.trim(),
        "3 rows: 0 created, 3 unchanged, 0 updated, 0 quarantined, 0 failed, 0 unknown; 0 archived"
    );
    let all = dir.path().join("all.csv");
    assert_eq!(app.pull(&["--output", path_arg(&all)]).await.code, 0);
    let run = app.push(&[path_arg(&all), "--update", "--archive-missing"]).await;
    assert_eq!(
        run.stdout.trim(),
        "5 rows: 0 created, 5 unchanged, 0 updated, 0 quarantined, 0 failed, 0 unknown; 0 archived"
    );
    assert_eq!(app.records().await, after);

    let run = app.push(&[path_arg(&edited), "--archive-missing"]).await;
    assert_eq!(run.code, 2, "--archive-missing needs --update: {run:?}");
    assert!(run.stderr.contains("--update"), "{run:?}");
}

#[tokio::test]
async fn an_offline_edit_over_a_newer_change_fails_with_the_services_conflict() {
    let app = TestApp::spawn().await;
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "in.jsonl", &jsonl(&[warehouse(1), warehouse(2)]));
    assert_eq!(app.push(&[path_arg(&file)]).await.code, 0);
    let pulled = dir.path().join("pulled.csv");
    assert_eq!(app.pull(&["--output", path_arg(&pulled)]).await.code, 0);
    // Someone changes the first location meanwhile (version 2).
    let changed = with(warehouse(1), "/name", Some(json!("Changed online")));
    let answer = app.post("/v1/location/update", &json!({"locations": [changed]})).await;
    assert_eq!(answer.body["locations"][0]["version"], 2, "{:#}", answer.body);

    let edited = dir.path().join("edited.csv");
    edit_csv(&pulled, &edited, |rows| {
        let name = column(rows, "name");
        rows[1][name] = "Changed offline".to_owned();
    });
    let report = dir.path().join("report.jsonl");
    let run = app
        .push(&[path_arg(&edited), "--update", "--report", path_arg(&report)])
        .await;
    assert_eq!(run.code, 1, "{run:?}");
    let report = report_lines(&report);
    assert_eq!(outcomes(&report), ["failed", "unchanged"]);
    assert_eq!(report[0]["errors"].as_array().unwrap().len(), 1);
    assert_eq!(report[0]["errors"][0]["field"], "version");
    assert_eq!(report[0]["errors"][0]["code"], "CONFLICT");
    assert_eq!(app.records().await[0]["name"], "Changed online");
}

#[tokio::test]
async fn field_errors_come_back_at_their_row_and_column() {
    let app = TestApp::spawn().await;
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.csv");
    edit_csv(&sample_csv(), &bad, |rows| {
        let (lat, limits, monday, dated) = (
            column(rows, "latitude"),
            column(rows, "limits.weight"),
            column(rows, "working_schedule.monday"),
            column(rows, "individual_schedule"),
        );
        rows[1][lat] = "55,7558".to_owned();
        rows[2][limits] = "-1".to_owned();
        rows[3][monday] = "10:00-09:00".to_owned();
        rows[4][dated] = "2026-12-24 from ten".to_owned();
    });
    let report = dir.path().join("report.jsonl");
    let run = app.push(&[path_arg(&bad), "--report", path_arg(&report)]).await;
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stdout.contains("0 created") && run.stdout.contains("4 failed"),
        "{run:?}"
    );
    let report = report_lines(&report);
    let first: Vec<(u64, &str, &str)> = report
        .iter()
        .map(|r| {
            let e = &r["errors"][0];
            (
                r["row"].as_u64().unwrap(),
                e["field"].as_str().unwrap(),
                e["code"].as_str().unwrap(),
            )
        })
        .collect();
    // The written file has no multi-line cell's quirks: rows are lines 2 to 6 of the original
    // layout, the second row's instruction still spanning two lines.
    assert_eq!(
        first,
        [
            (2, "latitude", "INVALID_TYPE"),
            (3, "limits.weight", "NEGATIVE_VALUE"),
            (5, "working_schedule.monday", "INVALID_TIME_RANGE"),
            (6, "individual_schedule", "INVALID_TYPE"),
        ]
    );
    let range = report[2]["errors"][0]["message"].as_str().unwrap();
    assert!(range.starts_with("schedule.time_end: "), "{range}");
    let syntax = report[3]["errors"][0]["message"].as_str().unwrap();
    assert!(
        syntax.starts_with("[0]: ") && syntax.contains("cell syntax: YYYY-MM-DD"),
        "{syntax}"
    );
    assert!(app.records().await.is_empty());
    // Without --report the failures are said all the same: each row, its column, code and why.
    let run = app.push(&[path_arg(&bad)]).await;
    assert_eq!(run.code, 1, "{run:?}");
    for expected in [
        "row 2, column latitude: INVALID_TYPE: ",
        "row 3, column limits.weight: NEGATIVE_VALUE: ",
        "row 5, column working_schedule.monday: INVALID_TIME_RANGE: schedule.time_end: ",
        "row 6, column individual_schedule: INVALID_TYPE: ",
    ] {
        assert!(run.stderr.contains(expected), "{expected} in {}", run.stderr);
    }
    assert!(!run.stderr.contains("more failed row"), "{}", run.stderr);
}

#[tokio::test]
async fn rows_of_one_location_keep_their_order_and_rows_without_an_id_are_created() {
    let app = TestApp::spawn().await;
    let dir = tempfile::tempdir().unwrap();
    let mut nameless = warehouse(5);
    nameless.as_object_mut().unwrap().remove("merchant_location_id");
    let renamed = with(warehouse(1), "/name", Some(json!("Second version")));
    let archived = json!({"location_id": "whatever", "status": "ARCHIVED", "merchant_location_id": "gone"});
    let by_id = json!({"location_id": "some-id", "name": "only an id"});
    let rows = [
        warehouse(1),
        renamed.clone(),
        nameless,
        json!("not an object"),
        archived,
        by_id,
    ];
    let file = write(dir.path(), "rows.jsonl", &jsonl(&rows));
    let report = dir.path().join("report.jsonl");
    let run = app.push(&[path_arg(&file), "--report", path_arg(&report)]).await;
    assert_eq!(run.code, 1, "{run:?}");
    let report = report_lines(&report);
    assert_eq!(
        outcomes(&report),
        ["created", "failed", "created", "failed", "unchanged", "failed"]
    );
    assert_eq!(report[1]["errors"][0]["field"], "merchant_location_id");
    assert_eq!(report[1]["errors"][0]["code"], "CONFLICT");
    assert_eq!(report[3]["errors"][0]["field"], "");
    assert_eq!(report[3]["errors"][0]["code"], "INVALID_TYPE");
    assert_eq!(report[5]["errors"][0]["code"], "NOT_SENT");
    assert!(report[5]["errors"][0]["message"].as_str().unwrap().contains("--update"));
    assert_eq!(app.records().await.len(), 2);

    // With --update the later row of the same location wins, after the earlier one.
    let app = TestApp::spawn().await;
    let run = app.push(&[path_arg(&file), "--update"]).await;
    assert!(
        run.stdout
            .starts_with("6 rows: 2 created, 1 unchanged, 1 updated, 0 quarantined, 2 failed"),
        "{run:?}"
    );
    let records = app.records().await;
    assert_eq!(records[0]["name"], "Second version");
    assert_eq!(records[0]["version"], 2);
}

#[tokio::test]
async fn a_near_neighbour_ends_quarantined() {
    let app = TestApp::spawn().await;
    let dir = tempfile::tempdir().unwrap();
    let twin = with(warehouse(1), "/merchant_location_id", Some(json!("twin")));
    let file = write(dir.path(), "in.jsonl", &jsonl(&[warehouse(1), twin]));
    let report = dir.path().join("report.jsonl");
    let run = app.push(&[path_arg(&file), "--report", path_arg(&report)]).await;
    assert_eq!(run.code, 0, "quarantined is stored: {run:?}");
    let report = report_lines(&report);
    assert_eq!(outcomes(&report), ["created", "quarantined"]);
    assert_eq!(report[1]["errors"][0]["code"], "STOREFRONT_RULE_VIOLATION");
    assert_eq!(report[1]["errors"][0]["field"], "latitude");
}

#[tokio::test]
async fn a_file_that_cannot_be_read_whole_sends_nothing_and_exits_2() {
    let app = TestApp::spawn().await;
    let dir = tempfile::tempdir().unwrap();
    let good = jsonl(&[warehouse(1)]);
    let cases = [
        (
            "unknown.csv",
            "name,colour\nA,red\n".to_owned(),
            "line 1: unknown column \"colour\"",
        ),
        (
            "twice.csv",
            "name,name\nA,B\n".to_owned(),
            "line 1: column \"name\" appears twice",
        ),
        (
            "wide.csv",
            "name,latitude\nA,1\nB,2,3\n".to_owned(),
            "line 3: 3 cells, but the header names 2 columns",
        ),
        (
            "broken.jsonl",
            format!("{good}{{\"name\": \n"),
            "line 2: not a JSON value",
        ),
        ("broken.json", "[{}, {]".to_owned(), "not a JSON array of locations"),
        ("notes.txt", good.clone(), "cannot tell the format"),
    ];
    for (name, text, message) in cases {
        let file = write(dir.path(), name, &text);
        let run = app.push(&[path_arg(&file)]).await;
        assert_eq!(run.code, 2, "{name}: {run:?}");
        assert!(run.stderr.contains(message), "{name}: {run:?}");
        assert!(run.stderr.contains("nothing was sent"), "{name}: {run:?}");
    }
    let file = write(dir.path(), "good.jsonl", &good);
    let run = app.push(&[path_arg(dir.path().join("missing.csv").as_path())]).await;
    assert_eq!(run.code, 2, "{run:?}");
    let run = cli(&app.base, "sf_wrong_key", &["push", path_arg(&file)]).await;
    assert_eq!(run.code, 2, "{run:?}");
    assert!(run.stderr.contains("refused the API key"), "{run:?}");
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let run = cli(&format!("http://{closed}"), &app.key, &["push", path_arg(&file)]).await;
    assert_eq!(run.code, 2, "{run:?}");
    assert!(run.stderr.contains("cannot be reached"), "{run:?}");
    let run = cli(&format!("http://{closed}"), &app.key, &["pull"]).await;
    assert_eq!(run.code, 2, "{run:?}");
    let run = app.pull(&["--status", "GONE"]).await;
    assert_eq!(run.code, 2, "{run:?}");
    assert!(run.stderr.contains("INVALID_FILTER"), "{run:?}");
    assert!(app.records().await.is_empty(), "nothing was sent");
}

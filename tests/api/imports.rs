//! Imports through the API (`/v1/import/*`), on the test backend: a file handed to the service
//! ends row by row as `locations push` reports the same file; a dry run stores nothing; a file
//! push refuses ends `FAILED` with nothing applied; every request rule at its field.

use std::path::{Path, PathBuf};
use std::time::Duration;

use base64::Engine;
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::*;
use crate::push::{jsonl, path_arg, report_lines, sample_csv, write};

pub(crate) fn sheet(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/sheets")
        .join(name)
}

pub(crate) fn base64_of(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// The create request for `file` with `options` (`update`, `dry_run`, …) merged in.
pub(crate) fn create_body(file: &Path, options: Value) -> Value {
    let mut body = json!({
        "file_name": file.file_name().unwrap().to_str().unwrap(),
        "content_base64": base64_of(&std::fs::read(file).unwrap()),
    });
    for (key, value) in options.as_object().unwrap() {
        body[key] = value.clone();
    }
    body
}

impl TestApp {
    /// Creates an import of `body`; the import as created.
    pub(crate) async fn start_import(&self, body: &Value) -> Value {
        let answer = self.post("/v1/import/create", body).await;
        assert_eq!(answer.status, StatusCode::OK, "{:#}", answer.body);
        assert_eq!(answer.body["import"]["status"], "QUEUED");
        answer.body["import"].clone()
    }

    /// The import `id` once it has ended.
    pub(crate) async fn import_ended(&self, id: &str) -> Value {
        let mut last = Value::Null;
        for _ in 0..3000 {
            let answer = self.post("/v1/import/get", &json!({"import_id": id})).await;
            assert_eq!(answer.status, StatusCode::OK, "{:#}", answer.body);
            last = answer.body["import"].clone();
            if last["status"] == "SUCCEEDED" || last["status"] == "FAILED" {
                return last;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!("the import did not end: {last:#}");
    }

    /// Imports `file` with `options` and waits for its end.
    pub(crate) async fn import(&self, file: &Path, options: Value) -> Value {
        let import = self.start_import(&create_body(file, options)).await;
        self.import_ended(import["import_id"].as_str().unwrap()).await
    }

    /// Every row of the import `id` (with `filter`), walking its pages of `limit`.
    pub(crate) async fn import_rows(&self, id: &str, filter: Value, limit: usize) -> Vec<Value> {
        let mut rows = Vec::new();
        let mut cursor = Value::Null;
        loop {
            let body = json!({"import_id": id, "filter": filter, "pagination": {"limit": limit, "cursor": cursor}});
            let answer = self.post("/v1/import/rows", &body).await;
            assert_eq!(answer.status, StatusCode::OK, "{:#}", answer.body);
            rows.extend(answer.body["rows"].as_array().unwrap().iter().cloned());
            if answer.body["pagination"]["has_next"] == json!(false) {
                return rows;
            }
            cursor = answer.body["pagination"]["next_cursor"].clone();
        }
    }
}

/// What a row says beside its ids: its row, name, outcome and errors (the ids a message names,
/// which differ between two services, masked).
fn outcome_of(row: &Value) -> Value {
    let errors: Vec<Value> = row["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| json!([e["field"], e["code"], masked(e["message"].as_str().unwrap())]))
        .collect();
    json!([row["row"], row["merchant_location_id"], row["outcome"], errors])
}

/// `message` with a location's id, or the item of a request it stands for, as `<id>`.
fn masked(message: &str) -> String {
    message
        .split(' ')
        .map(|word| {
            let is_id = word.len() == 36 && word.chars().filter(|c| *c == '-').count() == 4;
            if is_id || word.starts_with("locations[") {
                "<id>"
            } else {
                word
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// A file of JSON Lines with a row that fails (two errors), a row quarantined beside the one
/// before it, a row with no merchant_location_id and a row the file names twice.
fn mixed_jsonl(dir: &Path) -> PathBuf {
    let mut near = pickup_point(1);
    near["merchant_location_id"] = json!("pp-near");
    near["latitude"] = json!(20.0101);
    let mut broken = warehouse(2);
    broken["latitude"] = json!(95);
    broken["working_schedule"][0]["schedule"]["time_end"] = json!("25:00");
    let mut anonymous = warehouse(3);
    anonymous.as_object_mut().unwrap().remove("merchant_location_id");
    let mut renamed = warehouse(4);
    renamed["name"] = json!("Warehouse 4, renamed");
    let rows = [
        pickup_point(1),
        near,
        broken,
        anonymous,
        warehouse(4),
        renamed,
        postamat(5),
    ];
    write(dir, "mixed.jsonl", &jsonl(&rows))
}

/// Push's report of `file` (with `args`) on a fresh service, and the import's rows of the same
/// file on another.
async fn pushed_and_imported(file: &Path, args: &[&str], options: Value) -> (Vec<Value>, Vec<Value>, Value) {
    let pushed = TestApp::spawn().await;
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("report.jsonl");
    let mut all = vec![path_arg(file), "--report", path_arg(&report)];
    all.extend_from_slice(args);
    let run = pushed.push(&all).await;
    assert!(run.code == 0 || run.code == 1, "{run:?}");
    let imported = TestApp::spawn().await;
    let import = imported.import(file, options).await;
    let id = import["import_id"].as_str().unwrap();
    let rows = imported.import_rows(id, Value::Null, 3).await;
    (report_lines(&report), rows, import)
}

#[tokio::test]
async fn an_import_ends_each_row_as_push_reports_the_same_file() {
    let dir = tempfile::tempdir().unwrap();
    let files = [
        sample_csv(),
        sheet("semicolon-windows-1251.csv"),
        sheet("tab-utf-16.csv"),
        sheet("locations.xlsx"),
        mixed_jsonl(dir.path()),
    ];
    for file in &files {
        let (report, rows, import) = pushed_and_imported(file, &[], json!({})).await;
        assert_eq!(import["status"], "SUCCEEDED", "{}: {import:#}", file.display());
        assert_eq!(import["rows_total"], json!(report.len()));
        assert_eq!(import["rows_done"], json!(report.len()));
        let expected: Vec<Value> = report.iter().map(outcome_of).collect();
        let got: Vec<Value> = rows.iter().map(outcome_of).collect();
        assert_eq!(got, expected, "{}", file.display());
        for row in rows
            .iter()
            .filter(|r| r["outcome"] == "created" || r["outcome"] == "quarantined")
        {
            assert!(row["location_id"].is_string(), "{row}");
        }
    }
    // The mixed file: each kind of outcome, counted.
    let (_, rows, import) = pushed_and_imported(&files[4], &[], json!({})).await;
    let outcomes: Vec<&str> = rows.iter().map(|r| r["outcome"].as_str().unwrap()).collect();
    assert_eq!(
        outcomes,
        [
            "created",
            "quarantined",
            "failed",
            "created",
            "created",
            "failed",
            "created"
        ]
    );
    assert_eq!(
        import["counts"],
        json!({"created": 4, "updated": 0, "unchanged": 0, "quarantined": 1, "archived": 0, "failed": 2})
    );
    let fields: Vec<&str> = rows[2]["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["field"].as_str().unwrap())
        .collect();
    assert_eq!(fields, ["latitude", "working_schedule[0].schedule.time_end"]);
    assert_eq!(rows[5]["errors"][0]["code"], "CONFLICT");
    // With update, the renamed row updates the location the row before created.
    let (report, rows, import) = pushed_and_imported(&files[4], &["--update"], json!({"update": true})).await;
    assert_eq!(
        rows.iter().map(outcome_of).collect::<Vec<_>>(),
        report.iter().map(outcome_of).collect::<Vec<_>>()
    );
    assert_eq!(rows[5]["outcome"], "updated");
    assert_eq!(import["counts"]["updated"], 1);
}

#[tokio::test]
async fn a_dry_run_stores_nothing_and_ends_as_a_real_run_of_the_same_file() {
    let app = TestApp::spawn().await;
    let dir = tempfile::tempdir().unwrap();
    let file = mixed_jsonl(dir.path());
    let dry = app.import(&file, json!({"dry_run": true, "update": true})).await;
    assert_eq!(dry["status"], "SUCCEEDED", "{dry:#}");
    assert_eq!(dry["dry_run"], true);
    assert!(app.records().await.is_empty(), "a dry run stores nothing");
    let feed = app.post("/v1/location/events", &json!({})).await;
    assert_eq!(feed.body["events"], json!([]), "and appends no event");
    let dry_rows = app
        .import_rows(dry["import_id"].as_str().unwrap(), Value::Null, 100)
        .await;

    let real = app.import(&file, json!({"update": true})).await;
    let real_rows = app
        .import_rows(real["import_id"].as_str().unwrap(), Value::Null, 100)
        .await;
    assert_eq!(
        dry_rows.iter().map(outcome_of).collect::<Vec<_>>(),
        real_rows.iter().map(outcome_of).collect::<Vec<_>>(),
        "each row of the dry run saw the rows before it, as the real run's did"
    );
    assert_eq!(dry["counts"], real["counts"]);
    assert_eq!(real_rows[5]["outcome"], "updated");
    assert_eq!(app.records().await.len(), 5);
    let metrics = app.client.get(format!("{}/metrics", app.base)).send().await.unwrap();
    let metrics = metrics.text().await.unwrap();
    for line in [
        "imports_total{status=\"SUCCEEDED\"}",
        "import_rows_total{outcome=\"quarantined\"}",
    ] {
        assert!(metrics.contains(line), "{line}: {metrics}");
    }
}

#[tokio::test]
async fn an_import_is_gone_seven_days_after_it_ended() {
    let app = TestApp::spawn().await;
    let ended = app.import(&sample_csv(), json!({})).await;
    let id = ended["import_id"].as_str().unwrap();
    let store = app.store.imports();
    let finished = storefront::store::now_ms();
    let kept = finished - storefront::domain::import::KEPT_FOR_MS;
    assert_eq!(store.prune_imports(kept - 1).await.unwrap(), 0, "kept for 7 days");
    assert_eq!(store.prune_imports(finished + 1).await.unwrap(), 1);
    let answer = app.post("/v1/import/get", &json!({"import_id": id})).await;
    assert_eq!(answer.body["code"], "NOT_FOUND");
    let answer = app.post("/v1/import/rows", &json!({"import_id": id})).await;
    assert_eq!(answer.body["code"], "NOT_FOUND");
}

#[tokio::test]
async fn a_file_push_refuses_fails_the_import_with_the_line_and_nothing_applied() {
    let app = TestApp::spawn().await;
    let dir = tempfile::tempdir().unwrap();
    let unknown = write(dir.path(), "unknown.csv", "name,colour\nA,red\n");
    let import = app.import(&unknown, json!({})).await;
    assert_eq!(import["status"], "FAILED");
    assert_eq!(import["error"]["code"], "INVALID_FILE");
    let message = import["error"]["message"].as_str().unwrap();
    assert!(message.starts_with("line 1: unknown column \"colour\""), "{message}");
    assert_eq!(import["rows_total"], Value::Null);
    assert!(import["finished_at"].is_string());

    let broken = write(
        dir.path(),
        "broken.jsonl",
        &format!("{}\n{}\n{{\"name\":\n", warehouse(1), warehouse(2)),
    );
    let import = app.import(&broken, json!({})).await;
    assert_eq!(import["error"]["code"], "INVALID_FILE");
    let message = import["error"]["message"].as_str().unwrap();
    assert!(message.starts_with("line 3: not a JSON value"), "{message}");
    assert!(
        app.records().await.is_empty(),
        "the valid lines before it were not applied"
    );

    let no_sheet = app.import(&sheet("locations.xlsx"), json!({"sheet": "Nope"})).await;
    assert_eq!(no_sheet["error"]["code"], "INVALID_FILE");

    // A workbook of a few hundred kilobytes whose shared strings are over 128 MiB uncompressed.
    let bomb = dir.path().join("bomb.xlsx");
    {
        use std::io::Write;
        let mut zip = zip::ZipWriter::new(std::fs::File::create(&bomb).unwrap());
        let deflated = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
        zip.start_file("xl/sharedStrings.xml", deflated).unwrap();
        let zeros = vec![b'0'; 1 << 20];
        for _ in 0..129 {
            zip.write_all(&zeros).unwrap();
        }
        zip.finish().unwrap();
    }
    assert!(std::fs::metadata(&bomb).unwrap().len() < 1 << 20);
    let import = app.import(&bomb, json!({})).await;
    assert_eq!(import["error"]["code"], "INVALID_FILE");
    let message = import["error"]["message"].as_str().unwrap();
    assert!(message.contains("too large once uncompressed"), "{message}");

    let many: String = (0..100_001).map(|_| "{}\n").collect();
    let many = write(dir.path(), "many.jsonl", &many);
    let import = app.import(&many, json!({})).await;
    assert_eq!(import["status"], "FAILED");
    assert_eq!(import["error"]["code"], "TOO_MANY_ITEMS");
    assert_eq!(import["counts"]["failed"], 0, "no row was applied");
    let rows = app
        .import_rows(import["import_id"].as_str().unwrap(), Value::Null, 10)
        .await;
    assert!(rows.is_empty());
    let metrics = app.client.get(format!("{}/metrics", app.base)).send().await.unwrap();
    let metrics = metrics.text().await.unwrap();
    assert!(metrics.contains("imports_total{status=\"FAILED\"}"), "{metrics}");
}

#[tokio::test]
async fn every_rule_of_the_create_request_is_answered_at_its_field() {
    let app = TestApp::spawn().await;
    let good = create_body(&sample_csv(), json!({}));
    let with = |key: &str, value: Value| {
        let mut body = good.clone();
        if value.is_null() && key != "sheet" {
            body.as_object_mut().unwrap().remove(key);
        } else {
            body[key] = value;
        }
        body
    };
    let cases = [
        (with("file_name", Value::Null), "file_name"),
        (with("file_name", json!(7)), "file_name"),
        (with("file_name", json!("locations.txt")), "file_name"),
        (with("file_name", json!("locations")), "file_name"),
        (with("content_base64", Value::Null), "content_base64"),
        (with("content_base64", json!(["a"])), "content_base64"),
        (with("content_base64", json!("not base64!")), "content_base64"),
        (with("content_base64", json!("")), "content_base64"),
        (
            with("content_base64", json!(base64_of(&vec![b'x'; 6 * 1024 * 1024 + 1]))),
            "content_base64",
        ),
        (with("update", json!("yes")), "update"),
        (with("archive_missing", json!(1)), "archive_missing"),
        (with("dry_run", json!({})), "dry_run"),
        (with("sheet", json!(1)), "sheet"),
        (with("archive_missing", json!(true)), "archive_missing"),
        (with("colour", json!("red")), "colour"),
    ];
    for (body, field) in cases {
        let answer = app.post("/v1/import/create", &body).await;
        assert_eq!(answer.status, StatusCode::BAD_REQUEST, "{field}: {:#}", answer.body);
        assert_eq!(answer.body["code"], "INVALID_REQUEST", "{field}");
        assert_eq!(answer.body["details"]["field"], field, "{:#}", answer.body);
    }
    let listed = app.post("/v1/import/list", &json!({})).await;
    assert_eq!(listed.body["imports"], json!([]), "nothing was stored");

    // A body over 9 MiB is too large; one of 8.5 MiB is not.
    let (status, text) = app
        .post_text(
            "/v1/import/create",
            &with("content_base64", json!("A".repeat(9 * 1024 * 1024))),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(text.contains("PAYLOAD_TOO_LARGE"), "{text}");
    let exactly = app
        .post(
            "/v1/import/create",
            &with("content_base64", json!(base64_of(&vec![b'\n'; 6 * 1024 * 1024]))),
        )
        .await;
    assert_eq!(exactly.status, StatusCode::OK, "{:#}", exactly.body);
    app.import_ended(exactly.body["import"]["import_id"].as_str().unwrap())
        .await;

    // Null flags are false; an absent sheet is the first.
    let mut nulls = with("update", Value::Null);
    nulls["dry_run"] = Value::Null;
    nulls["sheet"] = Value::Null;
    let plain = app.post("/v1/import/create", &nulls).await;
    assert_eq!(plain.status, StatusCode::OK, "{:#}", plain.body);
    assert_eq!(plain.body["import"]["dry_run"], false);
    assert_eq!(plain.body["import"]["rows_total"], Value::Null);
}

#[tokio::test]
async fn a_third_import_queued_or_running_is_refused_and_another_merchant_sees_none() {
    let app = TestApp::spawn().await;
    // Two imports held by a runner that is not there (its claim far in the future).
    let merchant = "(SELECT merchant_pk FROM api_keys LIMIT 1)";
    for id in ["held-1", "held-2"] {
        execute_sql(
            app.db_url(),
            &format!(
                "INSERT INTO imports (import_id, merchant_pk, file_name, do_update, archive_missing, dry_run, \
                 status, created_at, owner, claim_until) VALUES ('{id}', {merchant}, 'a.csv', false, false, false, \
                 'RUNNING', 1, 'elsewhere', 9000000000000)"
            ),
        )
        .await;
    }
    let answer = app
        .post("/v1/import/create", &create_body(&sample_csv(), json!({})))
        .await;
    assert_eq!(answer.status, StatusCode::BAD_REQUEST, "{:#}", answer.body);
    assert_eq!(answer.body["code"], "TOO_MANY_ITEMS");
    assert_eq!(answer.body["details"]["field"], "file_name");
    let listed = app.post("/v1/import/list", &json!({"pagination": {"limit": 1}})).await;
    assert_eq!(listed.body["imports"][0]["import_id"], "held-2", "newest first");
    assert_eq!(listed.body["pagination"]["has_next"], true);
    let cursor = listed.body["pagination"]["next_cursor"].clone();
    let next = app
        .post(
            "/v1/import/list",
            &json!({"pagination": {"limit": 1, "cursor": cursor}}),
        )
        .await;
    assert_eq!(next.body["imports"][0]["import_id"], "held-1");
    assert_eq!(next.body["pagination"], json!({"next_cursor": null, "has_next": false}));

    let other = app.another_instance(app.state.settings.clone()).await;
    for path in ["/v1/import/get", "/v1/import/rows"] {
        let answer = other.post(path, &json!({"import_id": "held-1"})).await;
        assert_eq!(answer.status, StatusCode::BAD_REQUEST, "{path}");
        assert_eq!(answer.body["code"], "NOT_FOUND");
        assert_eq!(answer.body["details"]["field"], "import_id");
    }
    assert_eq!(
        other.post("/v1/import/list", &json!({})).await.body["imports"],
        json!([])
    );
}

#[tokio::test]
async fn an_import_s_rows_page_in_file_order_and_filter_the_failed_ones() {
    let app = TestApp::spawn().await;
    let dir = tempfile::tempdir().unwrap();
    let import = app.import(&mixed_jsonl(dir.path()), json!({})).await;
    let id = import["import_id"].as_str().unwrap();
    let all = app.import_rows(id, Value::Null, 2).await;
    let lines: Vec<i64> = all.iter().map(|r| r["row"].as_i64().unwrap()).collect();
    assert_eq!(lines, [1, 2, 3, 4, 5, 6, 7]);
    let failed = app.import_rows(id, json!({"outcome": "failed"}), 1).await;
    let lines: Vec<i64> = failed.iter().map(|r| r["row"].as_i64().unwrap()).collect();
    assert_eq!(lines, [3, 6]);
    assert_eq!(app.import_rows(id, json!({"outcome": null}), 100).await.len(), 7);

    let bad = [
        (
            json!({"import_id": id, "filter": {"outcome": "created"}}),
            "INVALID_FILTER",
            "filter.outcome",
        ),
        (
            json!({"import_id": id, "filter": {"colour": 1}}),
            "INVALID_FILTER",
            "filter.colour",
        ),
        (json!({"import_id": id, "filter": 5}), "INVALID_REQUEST", "filter"),
        (json!({"import_id": 5}), "INVALID_REQUEST", "import_id"),
        (
            json!({"import_id": id, "pagination": {"limit": 0}}),
            "INVALID_PAGINATION",
            "pagination.limit",
        ),
    ];
    for (body, code, field) in bad {
        let answer = app.post("/v1/import/rows", &body).await;
        assert_eq!(answer.status, StatusCode::BAD_REQUEST, "{body}");
        assert_eq!(
            (answer.body["code"].as_str(), answer.body["details"]["field"].as_str()),
            (Some(code), Some(field))
        );
    }
    // A cursor is bound to its filter.
    let page = app
        .post("/v1/import/rows", &json!({"import_id": id, "pagination": {"limit": 1}}))
        .await;
    let cursor = page.body["pagination"]["next_cursor"].clone();
    let answer = app
        .post(
            "/v1/import/rows",
            &json!({"import_id": id, "filter": {"outcome": "failed"}, "pagination": {"limit": 1, "cursor": cursor}}),
        )
        .await;
    assert_eq!(answer.body["code"], "INVALID_CURSOR");
}

//! Imports across kills and instances, through the real binary on the test backend: an import
//! whose server is killed with SIGKILL in the middle ends once the server runs again (on
//! PostgreSQL, another instance finishes it), with every location and every event exactly once;
//! a pulled workbook imported with `update` changes nothing, and `archive_missing` archives
//! exactly the missing locations, once.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};

use crate::helpers::*;
use crate::imports::create_body;
use crate::push::{path_arg, sample_csv};

/// A JSON Lines file of `n` small warehouses, each far enough from the others that none
/// quarantines another.
fn many_warehouses(dir: &Path, n: usize) -> PathBuf {
    let text: String = (0..n)
        .map(|i| {
            let item = json!({
                "merchant_location_id": format!("w-{i}"),
                "location_types": ["WAREHOUSE"],
                "name": format!("W{i}"),
                "limits": {"length": 200, "width": 120, "height": 150, "weight": 500},
                "latitude": -60.0 + (i / 200) as f64 * 0.01,
                "longitude": -170.0 + (i % 200) as f64 * 0.01,
                "working_schedule": [{"day": "MONDAY", "schedule": {"time_start": "09:00", "time_end": "21:00"}}],
                "is_accepts_returns": true
            });
            format!("{item}\n")
        })
        .collect();
    let path = dir.join("many.jsonl");
    std::fs::write(&path, text).unwrap();
    path
}

async fn call(base: &str, key: &str, path: &str, body: &Value) -> Value {
    let answer = reqwest::Client::new()
        .post(format!("{base}{path}"))
        .bearer_auth(key)
        .json(body)
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 200, "{path}");
    answer.json().await.unwrap()
}

/// The import once `done` says so of it.
async fn import_when(base: &str, key: &str, id: &str, done: impl Fn(&Value) -> bool) -> Value {
    for _ in 0..6000 {
        let import = call(base, key, "/v1/import/get", &json!({"import_id": id})).await["import"].clone();
        if done(&import) {
            return import;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("the import never got there");
}

/// Every event of the merchant's feed.
async fn all_events(base: &str, key: &str) -> Vec<Value> {
    let mut events = Vec::new();
    let mut cursor = Value::Null;
    loop {
        let page = call(
            base,
            key,
            "/v1/location/events",
            &json!({"pagination": {"limit": 1000, "cursor": cursor}}),
        )
        .await;
        events.extend(page["events"].as_array().unwrap().iter().cloned());
        if page["pagination"]["has_next"] == json!(false) {
            return events;
        }
        cursor = page["pagination"]["next_cursor"].clone();
    }
}

/// Every stored location of the merchant.
async fn all_locations(base: &str, key: &str) -> Vec<Value> {
    let mut records = Vec::new();
    let mut cursor = Value::Null;
    loop {
        let page = call(
            base,
            key,
            "/v1/location/list",
            &json!({"pagination": {"limit": 1000, "cursor": cursor}}),
        )
        .await;
        records.extend(page["locations"].as_array().unwrap().iter().cloned());
        if page["pagination"]["has_next"] == json!(false) {
            return records;
        }
        cursor = page["pagination"]["next_cursor"].clone();
    }
}

const ROWS: usize = 20_000;

/// Every row's location stored once, and one `location.created` event each.
async fn every_location_and_event_once(base: &str, key: &str) {
    let records = all_locations(base, key).await;
    assert_eq!(records.len(), ROWS, "every row's location, once");
    let names: HashSet<&str> = records
        .iter()
        .map(|r| r["merchant_location_id"].as_str().unwrap())
        .collect();
    assert_eq!(names.len(), ROWS);
    let events = all_events(base, key).await;
    assert_eq!(events.len(), ROWS, "one event per location");
    let located: HashSet<&str> = events.iter().map(|e| e["location_id"].as_str().unwrap()).collect();
    assert_eq!(located.len(), ROWS);
    assert!(events.iter().all(|e| e["type"] == "location.created"));
}

#[tokio::test]
async fn an_import_killed_in_the_middle_ends_after_a_restart_with_every_location_and_event_once() {
    let dir = tempfile::tempdir().unwrap();
    let url = fresh_database_url(dir.path()).await;
    let key = merchant_create_at(&url, "import")["api_key"]
        .as_str()
        .unwrap()
        .to_owned();
    let body = create_body(&many_warehouses(dir.path(), ROWS), json!({}));
    let server = Server::start_at(&url);
    let import = call(&server.base, &key, "/v1/import/create", &body).await["import"].clone();
    let id = import["import_id"].as_str().unwrap().to_owned();
    let running = import_when(&server.base, &key, &id, |i| i["rows_done"].as_i64() > Some(1000)).await;
    assert_eq!(running["status"], "RUNNING");
    assert_eq!(running["rows_total"], ROWS);
    server.signal("-KILL");
    drop(server);

    let server = Server::start_at(&url);
    let before = call(&server.base, &key, "/v1/import/get", &json!({"import_id": id})).await["import"].clone();
    assert!(
        before["rows_done"].as_i64() < Some(ROWS as i64),
        "killed in the middle: {before:#}"
    );
    let ended = import_when(&server.base, &key, &id, |i| i["status"] != "RUNNING").await;
    assert_eq!(ended["status"], "SUCCEEDED", "{ended:#}");
    assert_eq!(ended["rows_done"], ROWS);
    let failed = call(
        &server.base,
        &key,
        "/v1/import/rows",
        &json!({"import_id": id, "filter": {"outcome": "failed"}}),
    )
    .await;
    assert_eq!(failed["rows"], json!([]), "no row failed");
    assert_eq!(
        ended["counts"]["created"], ROWS,
        "no row was created twice (it would be unchanged)"
    );
    every_location_and_event_once(&server.base, &key).await;
    let rows = call(
        &server.base,
        &key,
        "/v1/import/rows",
        &json!({"import_id": id, "pagination": {"limit": 1000}}),
    )
    .await;
    assert_eq!(rows["rows"][999]["row"], 1000);
}

#[tokio::test]
#[ignore = "needs PostgreSQL: scripts/test runs it"]
async fn on_postgres_another_instance_finishes_the_import_of_one_that_was_killed() {
    let Some(_) = postgres_admin_url() else { return };
    let dir = tempfile::tempdir().unwrap();
    let url = fresh_database_url(dir.path()).await;
    let key = merchant_create_at(&url, "import")["api_key"]
        .as_str()
        .unwrap()
        .to_owned();
    let body = create_body(&many_warehouses(dir.path(), ROWS), json!({}));
    let first = Server::start_at(&url);
    let import = call(&first.base, &key, "/v1/import/create", &body).await["import"].clone();
    let id = import["import_id"].as_str().unwrap().to_owned();
    import_when(&first.base, &key, &id, |i| i["rows_done"].as_i64() > Some(1000)).await;
    let second = Server::start_at(&url);
    first.signal("-KILL");
    drop(first);
    let ended = import_when(&second.base, &key, &id, |i| i["status"] != "RUNNING").await;
    assert_eq!(ended["status"], "SUCCEEDED", "{ended:#}");
    assert_eq!(ended["counts"]["created"], ROWS);
    every_location_and_event_once(&second.base, &key).await;
}

#[tokio::test]
async fn a_pulled_workbook_imports_unchanged_and_archive_missing_archives_the_rest_once() {
    let app = TestApp::spawn().await;
    let created = app.import(&sample_csv(), json!({})).await;
    assert_eq!(created["counts"]["created"], 4, "{created:#}");
    let dir = tempfile::tempdir().unwrap();
    let pulled = dir.path().join("pulled.xlsx");
    let run = app.pull(&["--output", path_arg(&pulled)]).await;
    assert_eq!(run.code, 0, "{run:?}");

    let again = app.import(&pulled, json!({"update": true})).await;
    assert_eq!(again["status"], "SUCCEEDED", "{again:#}");
    assert_eq!(
        again["counts"],
        json!({"created": 0, "updated": 0, "unchanged": 4, "quarantined": 0, "archived": 0, "failed": 0})
    );

    // Two locations the file does not name.
    let extra = app
        .post(
            "/v1/location/create",
            &json!({"locations": [warehouse(1), pickup_point(2)]}),
        )
        .await;
    let extra: Vec<&str> = extra.body["locations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["location_id"].as_str().unwrap())
        .collect();
    let events_before = app
        .post("/v1/location/events", &json!({"pagination": {"limit": 1000}}))
        .await
        .body["events"]
        .as_array()
        .unwrap()
        .len();
    let dry = app
        .import(
            &pulled,
            json!({"update": true, "archive_missing": true, "dry_run": true}),
        )
        .await;
    assert_eq!(
        dry["counts"]["archived"], 2,
        "a dry run counts what it would archive: {dry:#}"
    );
    let archiving = app
        .import(&pulled, json!({"update": true, "archive_missing": true}))
        .await;
    assert_eq!(archiving["status"], "SUCCEEDED", "{archiving:#}");
    assert_eq!(archiving["counts"]["archived"], 2);
    assert_eq!(archiving["counts"]["unchanged"], 4);
    let records = app.records().await;
    let archived: Vec<&str> = records
        .iter()
        .filter(|r| r["status"] == "ARCHIVED")
        .map(|r| r["location_id"].as_str().unwrap())
        .collect();
    assert_eq!(archived.len(), 2);
    assert!(extra.iter().all(|id| archived.contains(id)), "exactly the missing ones");
    let events = app
        .post("/v1/location/events", &json!({"pagination": {"limit": 1000}}))
        .await
        .body["events"]
        .clone();
    let new: Vec<&Value> = events.as_array().unwrap()[events_before..].iter().collect();
    assert_eq!(new.len(), 2, "one event per archived location: {new:#?}");
    assert!(new.iter().all(|e| e["type"] == "location.archived"));

    // The same again archives nothing more.
    let twice = app
        .import(&pulled, json!({"update": true, "archive_missing": true}))
        .await;
    assert_eq!(twice["counts"]["archived"], 0);
}

/// The rows of `files` (JSON Lines), a batch a file, applied by the store as the first batches
/// of a new import of `merchant_pk`, all in one transaction: their rows' outcomes.
async fn applied_in_one_transaction(
    imports: &dyn storefront::store::import_api::ImportStore,
    (merchant_pk, import_id): (i64, &str),
    files: &[&str],
    update: bool,
) -> storefront::store::import_api::Applied {
    use storefront::client::table::rows::{Format, ReadOptions, scan_bytes};
    use storefront::domain::import::ImportOptions;
    use storefront::store::import_api::{Batch, NewImport};
    use storefront::store::import_apply::RowBatch;

    let rows = |text: &str| {
        let mut rows = Vec::new();
        scan_bytes(text.as_bytes(), Format::Jsonl, &ReadOptions::default(), |row| {
            rows.push(row);
            true
        })
        .unwrap();
        rows
    };
    let new = NewImport {
        merchant_pk,
        import_id: import_id.to_owned(),
        file_name: "many.jsonl".into(),
        content: files.concat().into_bytes(),
        options: ImportOptions {
            update,
            ..ImportOptions::default()
        },
        created_at_ms: 1,
    };
    imports.create_import(new).await.unwrap().unwrap();
    let claim = imports.claim_import("test", 2, i64::MAX).await.unwrap().unwrap();
    let total: usize = files.iter().map(|f| f.lines().count()).sum();
    assert!(imports.set_rows_total(&claim, total as i64).await.unwrap());
    let batches = files.iter().map(|f| RowBatch::checked(rows(f), update)).collect();
    imports
        .apply_batch(Batch {
            claim: &claim,
            first: 0,
            batches,
        })
        .await
        .unwrap()
}

/// Batches written in one transaction, the second naming the first's locations again: the second
/// reads back what the first stored, so each of its rows is push's retry (`unchanged`), never a
/// second create of its name. Through the store, so that both batches are certainly in one write.
#[tokio::test]
async fn a_batch_written_behind_another_in_one_transaction_reads_back_what_it_stored() {
    let dir = tempfile::tempdir().unwrap();
    let store = open_store(&fresh_database_url(dir.path()).await).await;
    let merchant = store.create_merchant("two batches").await.unwrap();
    let content = std::fs::read_to_string(many_warehouses(dir.path(), 200)).unwrap();
    for (n, update) in [(0, false), (1, true)] {
        let import_id = format!("imp_{n}");
        let files = [content.as_str(), content.as_str()];
        let applied = applied_in_one_transaction(&*store.imports(), (merchant.pk, &import_id), &files, update).await;
        let first = if update { "unchanged" } else { "created" };
        let expected: Vec<String> = [first, "unchanged"]
            .iter()
            .flat_map(|word| std::iter::repeat_n(word.to_string(), 200))
            .collect();
        assert_eq!(
            applied,
            storefront::store::import_api::Applied::Done(expected),
            "update: {update}"
        );
    }
}

/// Batches written in one transaction, the second's new locations each within a metre of one the
/// first created: each is quarantined by it, as push's second request would be (the neighbours a
/// batch's new locations are weighed against include every location written before it).
#[tokio::test]
async fn a_batch_written_behind_another_in_one_transaction_is_weighed_against_its_new_locations() {
    let dir = tempfile::tempdir().unwrap();
    let store = open_store(&fresh_database_url(dir.path()).await).await;
    let merchant = store.create_merchant("near").await.unwrap();
    let first = std::fs::read_to_string(many_warehouses(dir.path(), 200)).unwrap();
    // The same places a few centimetres east, under other names.
    let second: String = first
        .lines()
        .map(|line| {
            let mut item: Value = serde_json::from_str(line).unwrap();
            let name = item["merchant_location_id"].as_str().unwrap().replace("w-", "n-");
            item["merchant_location_id"] = json!(name);
            item["longitude"] = json!(item["longitude"].as_f64().unwrap() + 0.000_001);
            format!("{item}\n")
        })
        .collect();
    let files = [first.as_str(), second.as_str()];
    let applied = applied_in_one_transaction(&*store.imports(), (merchant.pk, "imp_near"), &files, false).await;
    let expected: Vec<String> = ["created", "quarantined"]
        .iter()
        .flat_map(|word| std::iter::repeat_n(word.to_string(), 200))
        .collect();
    assert_eq!(applied, storefront::store::import_api::Applied::Done(expected));
}

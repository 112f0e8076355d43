//! The `storefront` binary as an operator runs it: the CLI, one `serve` per SQLite file,
//! durability across `kill -9`, and a clean stop on SIGTERM.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::helpers::*;

#[tokio::test]
async fn an_answered_create_survives_kill_9() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("durable.db");
    let key = merchant_create(&db, "durable")["api_key"].as_str().unwrap().to_owned();
    let items: Vec<Value> = (0..200).map(warehouse).collect();

    let mut server = Server::start(&db);
    let first = create(&server.base, &key, &items).await;
    assert!(first.iter().all(|r| r["status"] == "ACTIVE"));
    server.signal("-KILL");
    let _ = server.child.wait();
    drop(server);

    let server = Server::start(&db);
    let retry = create(&server.base, &key, &items).await;
    for (a, b) in first.iter().zip(&retry) {
        assert_eq!(a["location_id"], b["location_id"], "same ids after the crash");
        assert_eq!(b["status"], "ACTIVE");
    }
}

#[tokio::test]
async fn answered_changes_survive_kill_9() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("changes.db");
    let key = merchant_create(&db, "durable")["api_key"].as_str().unwrap().to_owned();
    let items: Vec<Value> = (0..50).map(warehouse).collect();
    let mut server = Server::start(&db);
    create(&server.base, &key, &items).await;
    let post = |path: &'static str, body: Value| {
        let (base, key) = (server.base.clone(), key.clone());
        async move {
            read(
                reqwest::Client::new()
                    .post(format!("{base}{path}"))
                    .bearer_auth(key)
                    .json(&body),
            )
            .await
        }
    };
    let renamed: Vec<Value> = items
        .iter()
        .map(|i| with(i.clone(), "/name", Some(json!("Renamed"))))
        .collect();
    let updated = post("/v1/location/update", json!({ "locations": renamed })).await;
    assert!(
        updated.body["locations"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["version"] == 2),
        "{:#}",
        updated.body
    );
    let archived = post(
        "/v1/location/archive",
        json!({"locations": [{"merchant_location_id": "wh-7"}]}),
    )
    .await;
    assert_eq!(archived.body["locations"][0]["status"], "ARCHIVED");
    server.signal("-KILL");
    let _ = server.child.wait();
    drop(server);

    let server = Server::start(&db);
    let page = read(
        reqwest::Client::new()
            .post(format!("{}/v1/location/list", server.base))
            .bearer_auth(&key)
            .json(&json!({"pagination": {"limit": 100}})),
    )
    .await;
    let records = page.body["locations"].as_array().unwrap();
    assert_eq!(records.len(), 50);
    for record in records {
        assert_eq!(record["name"], "Renamed", "{record:#}");
        let archived = record["merchant_location_id"] == "wh-7";
        assert_eq!(record["version"], if archived { 3 } else { 2 });
        assert_eq!(record["status"], if archived { "ARCHIVED" } else { "ACTIVE" });
    }
}

#[tokio::test]
async fn operators_review_and_approve_quarantined_locations() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("review.db");
    let key = merchant_create(&db, "review")["api_key"].as_str().unwrap().to_owned();
    let twin = {
        let server = Server::start(&db);
        let twin = with(warehouse(1), "/merchant_location_id", Some(json!("twin")));
        let results = create(&server.base, &key, &[warehouse(1), twin]).await;
        assert_eq!(results[1]["status"], "QUARANTINE");
        drop(server);
        let out = storefront(&db)
            .args(["locations", "quarantined", "--json"])
            .output()
            .unwrap();
        assert!(out.status.success());
        let text = String::from_utf8(out.stdout).unwrap();
        let lines: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(lines.len(), 1, "{text}");
        let line = &lines[0];
        assert_eq!(
            keys_in_order(text.lines().next().unwrap()),
            [
                "location_id",
                "merchant_id",
                "merchant_location_id",
                "name",
                "issue",
                "neighbour_location_id"
            ]
        );
        assert_eq!(line["location_id"], results[1]["location_id"]);
        assert_eq!(line["merchant_location_id"], "twin");
        assert_eq!(line["neighbour_location_id"], results[0]["location_id"]);
        assert_eq!(line["issue"]["field"], "latitude");
        assert_eq!(line["issue"]["code"], "STOREFRONT_RULE_VIOLATION");
        assert!(line["merchant_id"].as_str().is_some_and(|m| !m.is_empty()));
        results[1]["location_id"].as_str().unwrap().to_owned()
    };
    let out = storefront(&db).args(["locations", "approve", &twin]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("version 2"));
    // Approving it again, or an unknown id: a message, exit 1, nothing changed.
    for id in [twin.as_str(), "nope"] {
        let out = storefront(&db).args(["locations", "approve", id]).output().unwrap();
        assert_eq!(out.status.code(), Some(1), "{id}");
        assert!(!out.stderr.is_empty());
    }
    let out = storefront(&db)
        .args(["locations", "quarantined", "--json"])
        .output()
        .unwrap();
    assert!(out.stdout.is_empty(), "{}", String::from_utf8_lossy(&out.stdout));
    let server = Server::start(&db);
    let page = read(
        reqwest::Client::new()
            .post(format!("{}/v1/location/list", server.base))
            .bearer_auth(&key)
            .json(&json!({"filter": {"merchant_location_ids": ["twin"]}})),
    )
    .await;
    let record = &page.body["locations"][0];
    assert_eq!(
        (
            record["status"].clone(),
            record["issue"].clone(),
            record["version"].clone()
        ),
        (json!("ACTIVE"), Value::Null, json!(2))
    );
}

#[tokio::test]
async fn one_server_per_sqlite_file() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("one.db");
    let server = Server::start(&db);
    let started = Instant::now();
    let out = storefront(&db)
        .args(["serve", "--addr", "127.0.0.1:0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(started.elapsed() < Duration::from_secs(5));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("already serving"), "{stderr}");
    // The CLI still works beside the running server.
    merchant_create(&db, "beside");
    // After a crash the lock is gone with the process.
    server.signal("-KILL");
    drop(server);
    let _again = Server::start(&db);
}

#[tokio::test]
async fn sigterm_stops_cleanly_with_exit_0() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("term.db");
    let key = merchant_create(&db, "term")["api_key"].as_str().unwrap().to_owned();
    let mut server = Server::start(&db);
    create(&server.base, &key, &[warehouse(1)]).await;
    server.signal("-TERM");
    let status = server.child.wait().unwrap();
    assert_eq!(status.code(), Some(0));
}

#[tokio::test]
async fn keys_are_issued_and_revoked_by_the_cli() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("keys.db");
    let merchant = merchant_create(&db, "keys");
    let merchant_id = merchant["merchant_id"].as_str().unwrap();
    let out = storefront(&db)
        .args(["key", "issue", "--merchant", merchant_id, "--json"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let second: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(second["merchant_id"], merchant_id);
    assert_eq!(second["scope"], "full", "the default scope");
    assert_ne!(second["api_key"], merchant["api_key"]);
    let out = storefront(&db)
        .args([
            "key",
            "issue",
            "--merchant",
            merchant_id,
            "--scope",
            "storefront",
            "--json",
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    let published: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(published["scope"], "storefront");
    let out = storefront(&db)
        .args(["key", "issue", "--merchant", merchant_id, "--scope", "admin"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "an unknown scope is a usage error");

    let server = Server::start(&db);
    let key = second["api_key"].as_str().unwrap();
    create(&server.base, key, &[]).await;
    let storefront_key = published["api_key"].as_str().unwrap();
    let refused = read(
        reqwest::Client::new()
            .post(format!("{}/v1/location/create", server.base))
            .bearer_auth(storefront_key)
            .json(&json!({"locations": []})),
    )
    .await;
    assert_error(&refused, 403, "ERROR_TYPE_UNAUTHORIZED", "FORBIDDEN");
    let out = storefront(&db)
        .args(["key", "revoke", second["key_id"].as_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success());
    let answer = read(
        reqwest::Client::new()
            .post(format!("{}/v1/location/create", server.base))
            .bearer_auth(key)
            .json(&json!({"locations": []})),
    )
    .await;
    assert_error(&answer, 401, "ERROR_TYPE_UNAUTHORIZED", "INVALID_API_KEY");

    let unknown = storefront(&db).args(["key", "revoke", "nope"]).output().unwrap();
    assert_eq!(unknown.status.code(), Some(1));
    let unknown = storefront(&db)
        .args(["key", "issue", "--merchant", "nope"])
        .output()
        .unwrap();
    assert_eq!(unknown.status.code(), Some(1));
    // Keys are stored only as hashes.
    let raw = std::fs::read(&db).unwrap();
    let secret = secret_of(key);
    assert!(!raw.windows(secret.len()).any(|w| w == secret.as_bytes()));
}

/// The server caches verified keys; a revocation committed by another process must still refuse
/// the very next request, round after round, while nothing else writes (list requests only).
#[tokio::test]
async fn a_key_revoked_by_the_cli_is_refused_by_the_next_request_every_time() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("revoke.db");
    let merchant = merchant_create(&db, "revoke");
    let server = Server::start(&db);
    let client = reqwest::Client::new();
    let list = |key: String| {
        read(
            client
                .post(format!("{}/v1/categories/list", server.base))
                .bearer_auth(key)
                .json(&json!({})),
        )
    };
    for round in 0..3 {
        let out = storefront(&db)
            .args([
                "key",
                "issue",
                "--merchant",
                merchant["merchant_id"].as_str().unwrap(),
                "--json",
            ])
            .output()
            .unwrap();
        assert!(out.status.success());
        let issued: Value = serde_json::from_slice(&out.stdout).unwrap();
        let key = issued["api_key"].as_str().unwrap().to_owned();
        for _ in 0..3 {
            assert_eq!(list(key.clone()).await.status, 200, "round {round}");
        }
        let out = storefront(&db)
            .args(["key", "revoke", issued["key_id"].as_str().unwrap()])
            .output()
            .unwrap();
        assert!(out.status.success());
        assert_error(&list(key).await, 401, "ERROR_TYPE_UNAUTHORIZED", "INVALID_API_KEY");
    }
    assert_eq!(list(merchant["api_key"].as_str().unwrap().to_owned()).await.status, 200);
}

#[tokio::test]
async fn serve_demo_prints_a_working_key_once() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("demo.db");
    let run = |db: &Path| {
        let mut child = storefront(db)
            .args(["serve", "--demo", "--addr", "127.0.0.1:0"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let mut text = String::new();
        for line in BufReader::new(stdout).lines() {
            let line = line.unwrap();
            let done = line.contains("/widget/#key=") || line.contains("key issue --merchant");
            text.push_str(&line);
            text.push('\n');
            if done {
                break;
            }
        }
        let _ = child.kill();
        let _ = child.wait();
        text
    };
    let first = run(&db);
    let key = first
        .split_whitespace()
        .find(|w| w.starts_with("sf_"))
        .expect("a key is printed")
        .to_owned();
    // The widget's address carries a storefront key (in the fragment, which no server sees).
    let widget = first
        .split_whitespace()
        .find(|w| w.contains("/widget/#key="))
        .expect("the widget's address is printed");
    let published = widget.split_once("#key=").unwrap().1.to_owned();
    assert_ne!(published, key);
    assert!(
        first.contains(&format!("\n    {published}\n")),
        "the storefront key on a line of its own: {first}"
    );
    let second = run(&db);
    assert!(!second.contains("sf_"), "the key is printed only once: {second}");
    // The demo merchant's id is printed instead, so that a key can be issued for it.
    let merchant_id = first
        .split("merchant_id ")
        .nth(1)
        .and_then(|rest| rest.split(')').next())
        .expect("the first run names the demo merchant")
        .to_owned();
    assert!(
        second.contains(&format!("storefront key issue --merchant {merchant_id}")),
        "{second}"
    );

    let server = Server::start(&db);
    create(&server.base, &key, &[warehouse(1)]).await;
    let refused = read(
        reqwest::Client::new()
            .post(format!("{}/v1/location/create", server.base))
            .bearer_auth(&published)
            .json(&json!({"locations": []})),
    )
    .await;
    assert_error(&refused, 403, "ERROR_TYPE_UNAUTHORIZED", "FORBIDDEN");
    let page = reqwest::get(format!("{}/widget/", server.base)).await.unwrap();
    assert_eq!(page.status(), 200);

    // The README's search of the demo merchant's points answers what the README shows.
    let readme = include_str!("../../README.md");
    let section = &readme[readme.find("## Searching for a buyer").unwrap()..];
    let body = section.split("-d '").nth(1).unwrap().split("'\n").next().unwrap();
    let answer = read(
        reqwest::Client::new()
            .post(format!("{}/v1/location/search", server.base))
            .bearer_auth(&published)
            .header("content-type", "application/json")
            .body(body.to_owned()),
    )
    .await;
    assert_eq!(answer.status, 200, "the storefront key searches: {:#}", answer.body);
    let shown = section.split("```json").nth(1).unwrap();
    let results = answer.body["results"].as_array().unwrap();
    assert_eq!(results.len(), 2);
    for result in results {
        let (distance, id) = (&result["distance_m"], &result["location"]["merchant_location_id"]);
        assert!(
            shown.contains(&format!(
                r#""distance_m": {distance}, "location": {{"location_id": "01a21301-…", "merchant_location_id": {id}"#
            )),
            "{result:#}"
        );
    }
    assert_eq!(answer.body["pagination"]["has_next"], true);
}

#[tokio::test]
async fn one_json_log_line_per_request_with_ids_and_never_a_key() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("logs.db");
    let issued = merchant_create(&db, "logs");
    let key = issued["api_key"].as_str().unwrap();
    let log_path = dir.path().join("stderr.log");
    let mut child = serve_logging_to(storefront(&db), &log_path);
    let base = wait_in_log(&log_path, |text| {
        text.lines()
            .find_map(|l| l.strip_prefix("storefront is listening on "))
            .map(|line| line.trim().to_owned())
    });
    let answer = read(
        reqwest::Client::new()
            .post(format!("{base}/v1/location/create"))
            .bearer_auth(key)
            .header("x-request-id", "log-test-1")
            .json(&json!({ "locations": [warehouse(1)] })),
    )
    .await;
    assert_eq!(answer.status, 200);
    let _ = read(
        reqwest::Client::new()
            .get(format!("{base}/nowhere"))
            .header("x-request-id", "log-test-2"),
    )
    .await;
    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    assert_eq!(child.wait().unwrap().code(), Some(0));

    let text = std::fs::read_to_string(&log_path).unwrap();
    let secret = secret_of(key);
    assert!(
        !text.contains(secret),
        "the API key's secret ({secret}) is in the log:\n{text}"
    );
    let events: Vec<Value> = text.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    let served = |id: &str| {
        events
            .iter()
            .find(|e| e["message"] == "served" && e["request_id"] == id)
            .unwrap_or_else(|| panic!("no access line for {id} in:\n{text}"))
            .clone()
    };
    let create = served("log-test-1");
    assert_eq!(create["method"], "POST");
    assert_eq!(create["route"], "/v1/location/create");
    assert_eq!(create["status"], 200);
    assert!(create["latency_ms"].as_f64().is_some());
    assert_eq!(create["merchant_id"], issued["merchant_id"]);
    let missing = served("log-test-2");
    assert_eq!(
        (missing["route"].as_str(), missing["status"].as_u64()),
        (Some("unmatched"), Some(404))
    );
    assert_eq!(
        events.iter().filter(|e| e["message"] == "served").count(),
        2,
        "one line per request"
    );
    assert!(
        events
            .iter()
            .any(|e| e["message"] == "database ready" && e["durability"] == "journal_mode=wal synchronous=FULL")
    );
    // The readers follow the machine: four per core, at least 4, said once.
    let cores = std::thread::available_parallelism().unwrap().get();
    let pools: Vec<&Value> = events
        .iter()
        .filter(|e| e["message"] == "database pool: SQLite readers")
        .collect();
    assert_eq!(pools.len(), 1, "{text}");
    assert_eq!(pools[0]["readers"], (4 * cores).max(4));
}

#[tokio::test]
async fn the_pools_are_the_operators_when_told() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("pools.db");
    let log_path = dir.path().join("stderr.log");
    let mut readers = storefront(&db);
    readers.env("STOREFRONT_DB_READERS", "3");
    let mut child = serve_logging_to(readers, &log_path);
    let line = wait_in_log(&log_path, |text| {
        text.contains("storefront is listening on ")
            .then(|| text.lines().find(|l| l.contains("database pool")).map(str::to_owned))
            .flatten()
    });
    let _ = child.kill();
    let _ = child.wait();
    let line: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(line["readers"], 3);
    for bad in [
        ["--db-readers", "0"],
        ["--pg-pool-size", "1001"],
        ["--db-readers", "many"],
    ] {
        let out = storefront(&db)
            .args(["serve", "--addr", "127.0.0.1:0"])
            .args(bad)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{bad:?} is a usage error");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(bad[0]), "{stderr}");
    }
}

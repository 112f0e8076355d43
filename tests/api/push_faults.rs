//! `storefront locations push` when things go wrong on the way (CONTRACT §11): many 429s waited
//! out, a server killed in the middle of a push, a lost answer and a 503 whose outcome is
//! unknown — every row stored once, nothing doubled.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use storefront::app::Settings;
use storefront::rate_limit::Rate;

use crate::helpers::*;
use crate::push::{cli, jsonl, outcomes, path_arg, report_lines, write};

#[tokio::test]
async fn many_429s_are_waited_out_and_every_row_is_stored_once() {
    let settings = Settings {
        rate: Rate::PerSecond(std::num::NonZeroU32::new(20).unwrap()),
        burst: 1,
        ..Settings::default()
    };
    let app = TestApp::spawn_with_settings(settings).await;
    let dir = tempfile::tempdir().unwrap();
    let rows: Vec<Value> = (0..1000).map(warehouse).collect();
    let file = write(dir.path(), "many.jsonl", &jsonl(&rows));
    let run = app.push(&[path_arg(&file), "--concurrency", "8"]).await;
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stdout.starts_with("1000 rows: 1000 created"), "{run:?}");
    let metrics = app.get_text("/metrics").await;
    let limited: f64 = metrics
        .lines()
        .find_map(|l| l.strip_prefix("rate_limited_total "))
        .expect("some requests were limited")
        .parse()
        .unwrap();
    assert!(limited >= 5.0, "{limited} 429s");
    let records = records_at(&app.base, &app.key).await;
    assert_eq!(records.len(), 1000);
    let ids: std::collections::HashSet<&str> = records
        .iter()
        .map(|r| r["merchant_location_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids.len(), 1000);
}

/// Every record of the merchant at `base`.
async fn records_at(base: &str, key: &str) -> Vec<Value> {
    let client = reqwest::Client::new();
    let mut records = Vec::new();
    let mut cursor = Value::Null;
    loop {
        let body = json!({"pagination": {"limit": 1000, "cursor": cursor}});
        let answer = read(
            client
                .post(format!("{base}/v1/location/list"))
                .bearer_auth(key)
                .json(&body),
        )
        .await;
        if answer.status == 429 {
            tokio::time::sleep(Duration::from_secs(1)).await;
            continue;
        }
        assert_eq!(answer.status, 200, "{:#}", answer.body);
        records.extend(answer.body["locations"].as_array().unwrap().iter().cloned());
        if answer.body["pagination"]["has_next"] == false {
            return records;
        }
        cursor = answer.body["pagination"]["next_cursor"].clone();
    }
}

async fn total_at(base: &str, key: &str) -> Option<u64> {
    let body = json!({"pagination": {"limit": 1}});
    let response = reqwest::Client::new()
        .post(format!("{base}/v1/location/list"))
        .bearer_auth(key)
        .json(&body)
        .send()
        .await
        .ok()?;
    let body: Value = response.json().await.ok()?;
    body["pagination"]["total"].as_u64()
}

#[tokio::test]
async fn a_server_killed_in_the_middle_of_a_push_loses_and_doubles_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let url = fresh_database_url(dir.path()).await;
    let key = merchant_create_at(&url, "killed")["api_key"]
        .as_str()
        .unwrap()
        .to_owned();
    // Slow enough to be caught in the middle: 4 requests a second, one chunk at a time.
    let flags = ["--rate-limit", "4/s", "--rate-burst", "1"];
    let server = Server::start_on(Path::new(BIN), &url, "127.0.0.1:0", &flags);
    let base = server.base.clone();
    let addr = base.trim_start_matches("http://").to_owned();

    // 2,000 rows; every 40th has no merchant_location_id.
    let rows: Vec<Value> = (0..2000)
        .map(|n| {
            let mut row = warehouse(n);
            if n % 40 == 0 {
                row.as_object_mut().unwrap().remove("merchant_location_id");
            }
            row
        })
        .collect();
    let file = write(dir.path(), "big.jsonl", &jsonl(&rows));
    let report = dir.path().join("report.jsonl");
    let push = tokio::spawn({
        let (base, key, file, report) = (base.clone(), key.clone(), file.clone(), report.clone());
        async move {
            let args = [
                "push",
                path_arg(&file),
                "--concurrency",
                "1",
                "--retries",
                "8",
                "--report",
                path_arg(&report),
            ];
            cli(&base, &key, &args).await
        }
    });
    let deadline = Instant::now() + Duration::from_secs(60);
    while total_at(&base, &key).await.unwrap_or(0) < 600 {
        assert!(Instant::now() < deadline, "the push did not get going");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    server.signal("-KILL");
    drop(server);
    tokio::time::sleep(Duration::from_millis(500)).await;
    let _server = Server::start_on(Path::new(BIN), &url, &addr, &flags);

    let run = push.await.unwrap();
    eprintln!("{}{}", run.stdout, run.stderr);
    let report = report_lines(&report);
    assert_eq!(report.len(), 2000, "{run:?}");
    let records = records_at(&base, &key).await;
    let mut stored: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for record in &records {
        if let Some(m) = record["merchant_location_id"].as_str() {
            *stored.entry(m).or_default() += 1;
        }
    }
    let named = rows.iter().filter(|r| r.get("merchant_location_id").is_some()).count();
    assert_eq!(stored.len(), named, "every row with a merchant_location_id is stored");
    assert!(stored.values().all(|n| *n == 1), "and stored once");
    let mut unknown = 0;
    let mut created_nameless = 0;
    for (line, row) in report.iter().zip(&rows) {
        let outcome = line["outcome"].as_str().unwrap();
        if row.get("merchant_location_id").is_some() {
            assert!(["created", "unchanged"].contains(&outcome), "{line}");
            assert!(line["location_id"].as_str().is_some_and(|id| !id.is_empty()), "{line}");
        } else {
            assert!(["created", "unknown"].contains(&outcome), "{line}");
            unknown += usize::from(outcome == "unknown");
            created_nameless += usize::from(outcome == "created");
        }
    }
    let nameless = records.len() - named;
    assert!(
        (created_nameless..=created_nameless + unknown).contains(&nameless),
        "{nameless} stored without merchant_location_id, {created_nameless} reported created, {unknown} unknown"
    );
    assert_eq!(run.code, if unknown > 0 { 1 } else { 0 }, "{run:?}");
}

/// A proxy in front of `upstream` whose first create is passed on (and so stored) but answered
/// 503 `OUTCOME_UNKNOWN`, as a server whose database connection broke during the commit answers.
async fn proxy_losing_the_first_create_answer(upstream: String) -> String {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    use axum::body::{Body, to_bytes};
    use axum::extract::{Request, State};
    use axum::response::{IntoResponse, Response};

    #[derive(Clone)]
    struct Proxy {
        upstream: String,
        client: reqwest::Client,
        lost: Arc<AtomicBool>,
    }
    async fn forward(State(proxy): State<Proxy>, request: Request) -> Response {
        let path = request.uri().path().to_owned();
        let headers = request.headers().clone();
        let body = to_bytes(request.into_body(), 16 << 20).await.unwrap();
        let mut outgoing = proxy.client.post(format!("{}{path}", proxy.upstream)).body(body);
        for name in ["authorization", "content-type"] {
            if let Some(value) = headers.get(name) {
                outgoing = outgoing.header(name, value.clone());
            }
        }
        let answer = outgoing.send().await.unwrap();
        let status = answer.status().as_u16();
        let bytes = answer.bytes().await.unwrap();
        if path == "/v1/location/create" && status == 200 && !proxy.lost.swap(true, Ordering::SeqCst) {
            let body = json!({"error_type": "ERROR_TYPE_INTERNAL", "code": "OUTCOME_UNKNOWN",
                "message": "the write may or may not be stored", "details": {"request_id": "r"}});
            return (axum::http::StatusCode::SERVICE_UNAVAILABLE, axum::Json(body)).into_response();
        }
        let status = axum::http::StatusCode::from_u16(status).unwrap();
        (status, [("content-type", "application/json")], Body::from(bytes)).into_response()
    }
    let proxy = Proxy {
        upstream,
        client: reqwest::Client::new(),
        lost: Arc::default(),
    };
    let app = axum::Router::new().fallback(forward).with_state(proxy);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{addr}")
}

#[tokio::test]
async fn a_chunk_answered_503_outcome_unknown_is_resent_only_where_safe_and_nothing_is_stored_twice() {
    let app = TestApp::spawn().await;
    let proxy = proxy_losing_the_first_create_answer(app.base.clone()).await;
    let dir = tempfile::tempdir().unwrap();
    let mut rows: Vec<Value> = (0..3).map(warehouse).collect();
    for n in 10..12 {
        let mut nameless = warehouse(n);
        nameless.as_object_mut().unwrap().remove("merchant_location_id");
        rows.push(nameless);
    }
    let file = write(dir.path(), "five.jsonl", &jsonl(&rows));
    let report = dir.path().join("report.jsonl");
    let run = cli(
        &proxy,
        &app.key,
        &["push", path_arg(&file), "--report", path_arg(&report)],
    )
    .await;
    assert_eq!(run.code, 1, "unknown rows make the exit code 1: {run:?}");
    let outcomes = outcomes(&report_lines(&report));
    assert_eq!(outcomes[3..], ["unknown", "unknown"], "{outcomes:?}");
    assert!(
        outcomes[..3].iter().all(|o| o != "unknown" && o != "failed"),
        "{outcomes:?}"
    );
    // Stored once each: the named rows were resent safely, the nameless ones were not resent.
    let records = app.records().await;
    assert_eq!(records.len(), 5, "{records:#?}");
}

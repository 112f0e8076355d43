//! Rate limiting, the bound on requests in flight, the request time cap, and slow clients
//! (CONTRACT §3, §6).

use std::num::NonZeroU32;
use std::time::{Duration, Instant};

use reqwest::Method;
use serde_json::json;
use storefront::app::Settings;
use storefront::rate_limit::Rate;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::helpers::*;

const LIST: &str = "/v1/categories/list";

fn header(answer: &Answer, name: &str) -> String {
    answer
        .headers
        .get(name)
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default()
}

fn limited(per_second: u32, burst: u32) -> Settings {
    Settings {
        rate: Rate::PerSecond(NonZeroU32::new(per_second).unwrap()),
        burst,
        ..Settings::default()
    }
}

#[tokio::test]
async fn a_burst_then_429_with_its_headers_another_merchant_unaffected_then_recovery() {
    let app = TestApp::spawn_with_settings(limited(2, 3)).await;
    for left in [2, 1, 0] {
        let answer = app.list(&json!({})).await;
        assert_eq!(answer.status, 200);
        assert_eq!(header(&answer, "ratelimit-policy"), "\"merchant\";q=3;w=2");
        let state = header(&answer, "ratelimit");
        assert!(state.starts_with(&format!("\"merchant\";r={left};t=")), "{state}");
        assert!(state.ends_with(";t=1"), "a unit every 0.5 s: {state}");
    }
    let refused = app.list(&json!({})).await;
    let details = assert_error(&refused, 429, "ERROR_TYPE_RATE_LIMIT", "RATE_LIMITED");
    let wait_ms = details["retry_after_ms"].as_u64().unwrap();
    assert!((1..=500).contains(&wait_ms), "{wait_ms}");
    assert_eq!(header(&refused, "retry-after"), "1");
    assert_eq!(header(&refused, "ratelimit"), "\"merchant\";r=0;t=1");
    assert_eq!(header(&refused, "ratelimit-policy"), "\"merchant\";q=3;w=2");

    let other = app.merchant_key("other").await;
    let answer = app.post_as(LIST, &other, &json!({})).await;
    assert_eq!(answer.status, 200, "another merchant has its own budget");

    tokio::time::sleep(Duration::from_millis(wait_ms)).await;
    assert_eq!(app.list(&json!({})).await.status, 200, "allowed again after the wait");
}

#[tokio::test]
async fn refused_and_unauthenticated_requests_and_operational_endpoints_spend_nothing() {
    let app = TestApp::spawn_with_settings(limited(1, 2)).await;
    for _ in 0..5 {
        let bad = app.post_as(LIST, "sf_000000000000000000000000_nope", &json!({})).await;
        assert_eq!(bad.status, 401);
        assert!(bad.headers.get("ratelimit").is_none());
        assert_eq!(
            read(app.request(Method::GET, LIST).bearer_auth(&app.key)).await.status,
            405
        );
        assert_eq!(
            read(app.request(Method::POST, "/v1/nowhere").bearer_auth(&app.key))
                .await
                .status,
            404
        );
        let health = read(app.request(Method::GET, "/healthz")).await;
        assert!(health.headers.get("ratelimit").is_none());
    }
    assert_eq!(header(&app.list(&json!({})).await, "ratelimit"), "\"merchant\";r=1;t=1");
    // A 400 spends its unit like any answered request.
    assert_eq!(app.list(&json!({"filter": 1})).await.status, 400);
    assert_eq!(app.list(&json!({})).await.status, 429);
    assert_eq!(
        app.list(&json!({})).await.status,
        429,
        "a 429 spends nothing, and still is one"
    );
}

#[tokio::test]
async fn requests_over_the_in_flight_bound_are_refused_not_queued() {
    let dir = tempfile::tempdir().unwrap();
    let inner = open_store(&fresh_database_url(dir.path()).await).await;
    let store = FaultyStore::wrap(inner, Fault::Slow(Duration::from_millis(1500)));
    let settings = Settings {
        rate: Rate::Off,
        max_in_flight: 1,
        ..Settings::default()
    };
    let app = TestApp::spawn_configured(store, dir, settings).await;
    let slow = app.create(vec![warehouse(1)]);
    let refused = async {
        tokio::time::sleep(Duration::from_millis(300)).await;
        app.post("/v1/location/create", &json!({"locations": [warehouse(2)]}))
            .await
    };
    let (stored, refused) = tokio::join!(slow, refused);
    assert_eq!(stored[0]["status"], "ACTIVE");
    let details = assert_error(&refused, 429, "ERROR_TYPE_RATE_LIMIT", "RATE_LIMITED");
    assert!(details["retry_after_ms"].as_u64().unwrap() >= 1);
    assert_eq!(header(&refused, "retry-after"), "1");
    // The slot is free again.
    assert_eq!(app.list(&json!({})).await.status, 200);
}

/// Creates one warehouse and checks the 500 of a request over its time, with its request id.
async fn create_answered_500(app: &TestApp) {
    let answer = app
        .post("/v1/location/create", &json!({"locations": [warehouse(1)]}))
        .await;
    let details = assert_error(&answer, 500, "ERROR_TYPE_INTERNAL", "INTERNAL");
    assert!(details["request_id"].is_string());
}

/// Settings whose requests have `time` each, with no rate limit.
fn requests_of(time: Duration) -> Settings {
    Settings {
        rate: Rate::Off,
        request_timeout: time,
        ..Settings::default()
    }
}

#[tokio::test]
async fn a_request_over_its_time_is_a_500_and_stores_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let url = fresh_database_url(dir.path()).await;
    let store = FaultyStore::wrap(open_store(&url).await, Fault::Slow(Duration::from_millis(2500)));
    let app = TestApp::spawn_configured(store, dir, requests_of(Duration::from_secs(2))).await;
    create_answered_500(&app).await;
    // Let the slow store reach the real one: past its deadline, it must not write.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let plain = TestApp::spawn_with(open_store(&url).await, tempfile::tempdir().unwrap()).await;
    // Same merchant_location_id, other content: had anything been stored, this would conflict.
    let results = plain
        .create_as(&app.key, vec![with(warehouse(1), "/name", Some(json!("Changed")))])
        .await;
    assert_eq!(results[0]["status"], "ACTIVE", "{:#}", results[0]);
}

/// A server whose requests have 3 s (their writes' deadline: 1.5 s).
async fn short_lived_requests() -> TestApp {
    TestApp::spawn_with_settings(requests_of(Duration::from_secs(3))).await
}

#[tokio::test]
async fn a_write_that_overruns_its_deadline_is_rolled_back_and_never_stored_after_its_500() {
    // The request's time cap is 3 s, its write's deadline 1.5 s; the failpoint stalls the write
    // for 4 s inside its transaction, past both.
    let app = short_lived_requests().await;
    app.store.delay_next_write(Duration::from_secs(4));
    create_answered_500(&app).await;
    // Wait out the stalled write, then look: nothing of it may have been committed.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let listed = app.list_locations(&json!({})).await;
    assert_eq!(listed.body["locations"], json!([]), "a 500 stored after all");
    // The writer is free again: the same item is stored now.
    let results = app.create(vec![warehouse(1)]).await;
    assert_eq!(results[0]["status"], "ACTIVE", "{:#}", results[0]);
}

#[tokio::test]
async fn a_change_that_overruns_its_deadline_is_rolled_back_and_never_stored_after_its_500() {
    let app = short_lived_requests().await;
    let created = app.create(vec![warehouse(1)]).await;
    let id = created[0]["location_id"].as_str().unwrap().to_owned();
    app.store.delay_next_write(Duration::from_secs(4));
    let answer = app
        .post("/v1/location/archive", &json!({"locations": [{"location_id": id}]}))
        .await;
    assert_error(&answer, 500, "ERROR_TYPE_INTERNAL", "INTERNAL");
    tokio::time::sleep(Duration::from_secs(3)).await;
    let listed = app.list_locations(&json!({})).await;
    assert_eq!(listed.body["locations"][0]["status"], "ACTIVE", "{:#}", listed.body);
    assert_eq!(listed.body["locations"][0]["version"], 1);
}

#[tokio::test]
async fn a_client_that_drips_its_headers_is_cut_off() {
    let app = TestApp::spawn().await;
    let address = app.base.strip_prefix("http://").unwrap().to_owned();
    let mut stream = tokio::net::TcpStream::connect(&address).await.unwrap();
    stream
        .write_all(b"POST /v1/location/create HTTP/1.1\r\nHost: x\r\n")
        .await
        .unwrap();
    let started = Instant::now();
    let mut cut_off = false;
    // One header byte a second for up to 40 seconds.
    while started.elapsed() < Duration::from_secs(40) {
        if stream.write_all(b"X").await.is_err() {
            cut_off = true;
            break;
        }
        let mut buf = [0u8; 512];
        match tokio::time::timeout(Duration::from_secs(1), stream.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => {
                cut_off = true;
                break;
            }
            Ok(Ok(_)) => {
                // An error answer (408) followed by the close also counts; keep reading.
            }
            Err(_) => {}
        }
    }
    assert!(cut_off, "the slow client held its connection for 40 s");
    // Others are served meanwhile and after.
    assert_eq!(read(app.request(Method::GET, "/healthz")).await.status, 200);
}

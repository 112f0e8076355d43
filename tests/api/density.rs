//! CONTRACT §17 (density) and §6: a create, an update that moves, or a restore fails with
//! `STOREFRONT_RULE_VIOLATION` at `latitude` when the location would have more than 100 other live
//! locations of its merchant within 50 m (earlier items of the request included, whatever their
//! types); nothing is stored for that item. And another merchant is served while one works at its
//! densest point.

use std::time::Duration;

use serde_json::{Value, json};

use crate::helpers::*;
use crate::staying_up::victim_creates_p99;

const CREATE: &str = "/v1/location/create";
const UPDATE: &str = "/v1/location/update";
const ARCHIVE: &str = "/v1/location/archive";
const RESTORE: &str = "/v1/location/restore";

/// The dense point: every location below is within about 25 m of it.
const LAT: f64 = 55.75;
const LON: f64 = 37.61;

/// Location `n` of the stack: a warehouse, or (odd `n`) a warehouse that also takes returns at
/// another type, placed on a 10 × 10 grid of about 2 m steps around the dense point.
fn stacked(n: u32) -> Value {
    let lat = LAT + f64::from(n % 10) * 0.00002;
    let lon = LON + f64::from((n / 10) % 10) * 0.00003;
    let item = with(warehouse(n), "/latitude", Some(json!(lat)));
    with(item, "/longitude", Some(json!(lon)))
}

fn assert_too_dense(result: &Value, index: usize) {
    assert_eq!(result["status"], "FAILED", "{result:#}");
    assert_eq!(result["location_id"], "", "{result:#}");
    let errors = result["errors"].as_array().unwrap();
    assert_eq!(errors.len(), 1, "{result:#}");
    assert_eq!(errors[0]["field"], format!("locations[{index}].latitude"));
    assert_eq!(errors[0]["code"], "STOREFRONT_RULE_VIOLATION");
    assert!(errors[0]["message"].as_str().unwrap().contains("100"), "{result:#}");
}

async fn count(app: &TestApp) -> usize {
    app.walk_locations(&app.key, &Value::Null, 1000).await.len()
}

#[tokio::test]
async fn the_hundred_and_second_location_within_50_m_fails_earlier_items_of_the_request_included() {
    let app = TestApp::spawn().await;
    // 101 at once: the last of them would have 100 others within 50 m, which is allowed.
    let results = app.create((0..101).map(stacked).collect()).await;
    assert!(results.iter().all(|r| r["status"] != "FAILED"), "{:#}", results[100]);
    // The 102nd, alone or as a later item of a request, is refused; an item far away is not.
    let results = app.create(vec![warehouse(500), stacked(101), stacked(102)]).await;
    assert_eq!(results[0]["status"], "ACTIVE");
    assert_too_dense(&results[1], 1);
    assert_too_dense(&results[2], 2);
    assert_eq!(count(&app).await, 102, "nothing stored for the refused items");
    // Another merchant's locations do not count.
    let other = app.merchant_key("other").await;
    let results = app.create_as(&other, vec![stacked(0)]).await;
    assert_eq!(results[0]["status"], "ACTIVE");
}

#[tokio::test]
async fn a_move_into_a_full_neighbourhood_fails_and_changes_nothing() {
    let app = TestApp::spawn().await;
    app.create((0..101).map(stacked).collect()).await;
    let far = app.create(vec![warehouse(500)]).await;
    assert_eq!(far[0]["status"], "ACTIVE");
    let moved = with(
        with(warehouse(500), "/latitude", Some(json!(LAT))),
        "/longitude",
        Some(json!(LON)),
    );
    let answer = app.post(UPDATE, &json!({ "locations": [moved] })).await;
    assert_eq!(answer.status, 200);
    let result = &answer.body["locations"][0];
    assert_eq!(result["status"], "FAILED", "{result:#}");
    assert_eq!(result["location_id"], far[0]["location_id"]);
    assert_eq!(result["errors"][0]["field"], "locations[0].latitude");
    assert_eq!(result["errors"][0]["code"], "STOREFRONT_RULE_VIOLATION");
    let record = app
        .list_locations(&json!({"filter": {"merchant_location_ids": ["wh-500"]}}))
        .await;
    let record = &record.body["locations"][0];
    assert_eq!(record["version"], 1, "{record:#}");
    assert_eq!(record["latitude"], warehouse(500)["latitude"]);
    // A move within the neighbourhood (a location already there) counts as it did: allowed.
    let nudged = with(stacked(5), "/longitude", Some(json!(LON + 0.00001)));
    let answer = app.post(UPDATE, &json!({ "locations": [nudged] })).await;
    assert_ne!(answer.body["locations"][0]["status"], "FAILED", "{:#}", answer.body);
}

#[tokio::test]
async fn a_restore_into_a_full_neighbourhood_fails_and_stays_archived() {
    let app = TestApp::spawn().await;
    app.create((0..101).map(stacked).collect()).await;
    let archived = app
        .post(ARCHIVE, &json!({"locations": [{"merchant_location_id": "wh-0"}]}))
        .await;
    assert_eq!(
        archived.body["locations"][0]["status"], "ARCHIVED",
        "{:#}",
        archived.body
    );
    // With wh-0 archived, one more fits (100 others live).
    let results = app.create(vec![stacked(101)]).await;
    assert_ne!(results[0]["status"], "FAILED", "{:#}", results[0]);
    let answer = app
        .post(RESTORE, &json!({"locations": [{"merchant_location_id": "wh-0"}]}))
        .await;
    let result = &answer.body["locations"][0];
    assert_eq!(result["status"], "FAILED", "{result:#}");
    assert_eq!(result["errors"][0]["field"], "locations[0].latitude");
    assert_eq!(result["errors"][0]["code"], "STOREFRONT_RULE_VIOLATION");
    let record = app
        .list_locations(&json!({"filter": {"merchant_location_ids": ["wh-0"]}}))
        .await;
    assert_eq!(record.body["locations"][0]["status"], "ARCHIVED");
}

#[tokio::test]
async fn another_merchant_is_served_while_one_creates_moves_and_archives_at_its_densest_point() {
    let app = TestApp::spawn().await;
    let attacker = app.merchant_key("attacker").await;
    app.create_as(&attacker, (0..101).map(stacked).collect()).await;
    let base = app.base.clone();
    let key = attacker.clone();
    let attack = tokio::spawn(async move {
        let client = reqwest::Client::new();
        let post = |path: &str, body: Value| {
            client
                .post(format!("{base}{path}"))
                .bearer_auth(&key)
                .header("content-type", "application/json")
                .body(body.to_string())
                .send()
        };
        for round in 0..15u32 {
            // 200 more at the point (all refused), a move of one of the stack, an archive and a restore.
            let items: Vec<Value> = (0..200).map(|n| stacked(1000 + round * 200 + n)).collect();
            let _ = post(CREATE, json!({ "locations": items })).await;
            let nudged = with(
                stacked(round),
                "/longitude",
                Some(json!(LON + 0.00001 * f64::from(round))),
            );
            let _ = post(UPDATE, json!({ "locations": [nudged] })).await;
            let _ = post(ARCHIVE, json!({"locations": [{"merchant_location_id": "wh-50"}]})).await;
            let _ = post(RESTORE, json!({"locations": [{"merchant_location_id": "wh-50"}]})).await;
        }
    });
    let p99 = victim_creates_p99(&app, &app.key, 2000..2030).await;
    assert!(p99 <= Duration::from_secs(1), "victim p99 {p99:?}");
    attack.await.unwrap();
}

//! `"validate_only": true` on create and update (CONTRACT §14): the answer is the one the real
//! request that follows it gets, except what §14 names (a new location's `location_id` is `""`, a
//! quarantine decision against a new item of the request names `locations[j]`), and nothing is
//! stored: every record, version and count is as it was.

use serde_json::{Value, json};

use crate::helpers::*;

const CREATE: &str = "/v1/location/create";
const UPDATE: &str = "/v1/location/update";

/// Metres north as degrees of latitude (on the service's sphere).
fn north(metres: f64) -> f64 {
    metres / 111_195.08
}

/// A pickup point named `mlid`, `metres` north of latitude 45, longitude 30.
fn point(mlid: &str, metres: f64) -> Value {
    let mut item = pickup_point(0);
    item["merchant_location_id"] = json!(mlid);
    item["name"] = json!(format!("Point {mlid}"));
    item["latitude"] = json!(45.0 + north(metres));
    item["longitude"] = json!(30.0);
    item
}

/// Everything a merchant can read of its state: every record (versions, statuses, issues, times)
/// and the totals by status.
async fn state(app: &TestApp) -> (Vec<Value>, Vec<Value>) {
    let records = app.walk_locations(&app.key, &json!({}), 1000).await;
    let mut totals = Vec::new();
    for status in [Value::Null, json!("ACTIVE"), json!("QUARANTINE"), json!("ARCHIVED")] {
        let answer = app
            .list_locations(&json!({"filter": {"status": status}, "pagination": {"limit": 1}}))
            .await;
        totals.push(answer.body["pagination"]["total"].clone());
    }
    (records, totals)
}

/// Sends `items` to `path` with `validate_only`, checks that nothing changed, sends them for real,
/// and checks that the two answers are equal except as CONTRACT §14 says. Returns the real answer.
async fn dry_then_real(app: &TestApp, path: &str, items: Vec<Value>) -> Vec<Value> {
    let before = state(app).await;
    let dry = app
        .post(path, &json!({"locations": items, "validate_only": true}))
        .await;
    assert_eq!(dry.status, 200, "{:#}", dry.body);
    assert_eq!(state(app).await, before, "a validate_only request stores nothing");
    let real = app
        .post(path, &json!({"locations": items, "validate_only": false}))
        .await;
    assert_eq!(real.status, 200, "{:#}", real.body);
    let dry = dry.body["locations"].as_array().unwrap().clone();
    let real = real.body["locations"].as_array().unwrap().clone();
    assert_eq!(dry.len(), real.len());

    // The ids the real request created, by item: the dry answer has "" there and names the item.
    let stored: Vec<&str> = before.0.iter().map(|r| r["location_id"].as_str().unwrap()).collect();
    let mut expected = real.clone();
    let new: Vec<(usize, String)> = real
        .iter()
        .enumerate()
        .filter_map(|(j, r)| {
            let id = r["location_id"].as_str().unwrap();
            (!id.is_empty() && !stored.contains(&id)).then(|| (j, id.to_owned()))
        })
        .collect();
    for (j, _) in &new {
        expected[*j]["location_id"] = json!("");
    }
    for result in &mut expected {
        for error in result["errors"].as_array_mut().unwrap() {
            let mut message = error["message"].as_str().unwrap().to_owned();
            for (j, id) in &new {
                message = message.replace(id.as_str(), &format!("locations[{j}]"));
            }
            error["message"] = json!(message);
        }
    }
    assert_eq!(dry, expected, "the dry answer is the real one (CONTRACT §14)");
    real
}

#[tokio::test]
async fn a_dry_create_answers_what_the_real_one_does_and_stores_nothing() {
    let app = TestApp::spawn().await;
    let mut invalid = point("bad", 5_000.0);
    invalid["latitude"] = json!(91);
    invalid["payment_methods"] = json!(["CHEQUE"]);
    // New items, one invalid, and one quarantined by an earlier new item of the same request.
    let first = dry_then_real(
        &app,
        CREATE,
        vec![point("a", 0.0), point("b", 1_000.0), invalid, point("a-near", 20.0)],
    )
    .await;
    assert_eq!(first[0]["status"], "ACTIVE");
    assert_eq!(first[2]["status"], "FAILED");
    assert_eq!(first[3]["status"], "QUARANTINE");

    // Safe retries, a conflict, a quarantine against a stored location, duplicates in the request,
    // and a new one.
    let mut changed = point("b", 1_000.0);
    changed["name"] = json!("Other content");
    let second = dry_then_real(
        &app,
        CREATE,
        vec![
            point("a", 0.0),
            point("a-near", 20.0),
            changed,
            point("b-near", 1_030.0),
            point("dup", 9_000.0),
            point("dup", 9_000.0),
            point("c", 3_000.0),
        ],
    )
    .await;
    assert_eq!(second[0]["location_id"], first[0]["location_id"], "a safe retry");
    assert_eq!(second[2]["errors"][0]["code"], "CONFLICT");
    assert_eq!(second[3]["status"], "QUARANTINE");
    assert_eq!(second[4]["errors"][0]["code"], "CONFLICT", "superseded");
    assert_eq!(second[6]["status"], "ACTIVE");
}

#[tokio::test]
async fn a_dry_update_answers_what_the_real_one_does_and_changes_nothing() {
    let app = TestApp::spawn().await;
    let created = app
        .create(vec![
            point("a", 0.0),
            point("a-near", 20.0),
            point("b", 2_000.0),
            point("c", 4_000.0),
        ])
        .await;
    assert_eq!(created[1]["status"], "QUARANTINE");
    app.post(
        "/v1/location/archive",
        &json!({"locations": [{"merchant_location_id": "c"}]}),
    )
    .await;

    let mut renamed = point("b", 2_000.0);
    renamed["name"] = json!("Renamed");
    let mut stale = point("b", 2_000.0);
    stale["expected_version"] = json!(7);
    stale["merchant_location_id"] = Value::Null;
    stale["location_id"] = created[2]["location_id"].clone();
    // `a` moves away: `a-near` is decided again (ACTIVE), which the answer does not show but the
    // store would; `b` is renamed (version 2); an unchanged one keeps its version; an archived one
    // and an unknown one fail; a stale version conflicts.
    let results = dry_then_real(
        &app,
        UPDATE,
        vec![
            point("a", 8_000.0),
            renamed,
            point("a-near", 20.0),
            point("c", 4_000.0),
            point("nobody", 0.0),
        ],
    )
    .await;
    assert_eq!(results[0]["version"], 2);
    assert_eq!(results[1]["version"], 2);
    assert_eq!(results[2]["version"], 2, "a-near was decided again by a's move");
    assert_eq!(results[3]["status"], "FAILED");
    assert_eq!(results[4]["errors"][0]["code"], "NOT_FOUND");
    let results = dry_then_real(&app, UPDATE, vec![stale]).await;
    assert_eq!(results[0]["errors"][0]["code"], "CONFLICT");

    // A move next to another live location: quarantined, against a stored one.
    let results = dry_then_real(&app, UPDATE, vec![point("b", 8_010.0)]).await;
    assert_eq!(results[0]["status"], "QUARANTINE");
    assert_eq!(results[0]["version"], 3);
}

#[tokio::test]
async fn validate_only_is_a_boolean_of_create_and_update_only() {
    let app = TestApp::spawn().await;
    for path in [CREATE, UPDATE] {
        for bad in [json!("true"), json!(1), json!({}), json!([true])] {
            let answer = app
                .post(path, &json!({"locations": [point("a", 0.0)], "validate_only": bad}))
                .await;
            let error = assert_error(&answer, 400, "ERROR_TYPE_BAD_REQUEST", "INVALID_REQUEST");
            assert_eq!(error["field"], "validate_only", "{path} {bad}");
        }
    }
    // `null` and `false` mean a normal request.
    let answer = app
        .post(CREATE, &json!({"locations": [point("a", 0.0)], "validate_only": null}))
        .await;
    assert_eq!(answer.status, 200);
    assert_ne!(answer.body["locations"][0]["location_id"], "");
    // Archive and restore have no such key.
    for path in ["/v1/location/archive", "/v1/location/restore"] {
        let answer = app
            .post(
                path,
                &json!({"locations": [{"merchant_location_id": "a"}], "validate_only": true}),
            )
            .await;
        let error = assert_error(&answer, 400, "ERROR_TYPE_BAD_REQUEST", "INVALID_REQUEST");
        assert_eq!(error["field"], "validate_only");
    }
    let records = app.walk_locations(&app.key, &json!({}), 10).await;
    assert_eq!(records[0]["status"], "ACTIVE", "the refused archive changed nothing");
}

/// In a process of its own (the in-process tests share one metrics registry): a dry request counts
/// as a request, not as a location created or changed.
#[tokio::test]
async fn a_dry_request_is_counted_as_a_request_and_not_as_a_change() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("dry.db");
    let key = crate::helpers::merchant_create(&db, "dry")["api_key"]
        .as_str()
        .unwrap()
        .to_owned();
    let server = crate::helpers::Server::start(&db);
    let client = reqwest::Client::new();
    let post = |path: &str, body: Value| {
        client
            .post(format!("{}{path}", server.base))
            .bearer_auth(&key)
            .json(&body)
            .send()
    };
    let read_metrics = || async {
        let answer = client.get(format!("{}/metrics", server.base)).send().await.unwrap();
        answer.text().await.unwrap()
    };
    let dry = json!({"locations": [point("a", 0.0), point("a-near", 10.0)], "validate_only": true});
    assert_eq!(post(CREATE, dry).await.unwrap().status(), 200);
    let dry = json!({"locations": [point("a", 500.0)], "validate_only": true});
    let answer: Value = post(UPDATE, dry).await.unwrap().json().await.unwrap();
    assert_eq!(
        answer["locations"][0]["errors"][0]["code"], "NOT_FOUND",
        "nothing was created"
    );
    let metrics = read_metrics().await;
    let has = |needle: &str| metrics.lines().any(|l| l.starts_with(needle));
    assert!(
        has("http_requests_total{route=\"/v1/location/create\",status=\"200\"} 1"),
        "{metrics}"
    );
    assert!(
        has("http_requests_total{route=\"/v1/location/update\",status=\"200\"} 1"),
        "{metrics}"
    );
    assert!(!has("locations_created_total"), "{metrics}");
    assert!(!has("location_changes_total"), "{metrics}");

    // The same request for real is counted.
    let real = json!({"locations": [point("a", 0.0)]});
    assert_eq!(post(CREATE, real).await.unwrap().status(), 200);
    let metrics = read_metrics().await;
    assert!(
        metrics
            .lines()
            .any(|l| l == "locations_created_total{status=\"ACTIVE\"} 1"),
        "{metrics}"
    );
}

#[tokio::test]
async fn the_served_openapi_document_shows_validate_only_on_create_and_update_only() {
    let app = TestApp::spawn().await;
    let document: Value = serde_json::from_str(&app.get_text("/openapi.json").await).unwrap();
    let schemas = &document["components"]["schemas"];
    for name in ["CreateRequest", "UpdateRequest"] {
        let property = &schemas[name]["properties"]["validate_only"];
        assert_eq!(property["type"], json!(["boolean", "null"]), "{name}: {property}");
        // No schema default (generated clients would make the field required); the description
        // says what absent means.
        assert!(property.get("default").is_none(), "{name}: {property}");
        let said = property["description"].as_str().unwrap_or("");
        assert!(said.contains("Absent, `null` or `false`"), "{name}: {said}");
    }
    assert!(schemas["NamingRequest"]["properties"]["validate_only"].is_null());
}

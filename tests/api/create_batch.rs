//! Batch behaviour of create (CONTRACT §4.1, §4.5 quarantine): order, last-wins duplicates, safe
//! retry, conflicts, quarantine, and merchants kept apart.

use serde_json::{Value, json};

use crate::helpers::*;

fn id(result: &Value) -> &str {
    result["location_id"].as_str().unwrap()
}

/// A point `metres` north of (lat, lon).
fn north_of(item: Value, metres: f64) -> Value {
    let lat = item["latitude"].as_f64().unwrap() + (metres / 6_371_008.8_f64).to_degrees();
    with(item, "/latitude", Some(json!(lat)))
}

#[tokio::test]
async fn empty_batch_answers_an_empty_list() {
    let app = TestApp::spawn().await;
    let answer = app.post("/v1/location/create", &json!({"locations": []})).await;
    assert_eq!(answer.status, 200);
    assert_eq!(answer.body, json!({"locations": []}));
}

#[tokio::test]
async fn results_keep_request_order_and_echo_ids() {
    let app = TestApp::spawn().await;
    let items = vec![
        warehouse(1),
        with(warehouse(2), "/name", Some(json!(""))),
        with(pickup_point(3), "/merchant_location_id", None),
        json!(17),
        with(warehouse(4), "/name", Some(json!(["not", "a", "string"]))),
    ];
    let results = app.create(items).await;
    assert_eq!(results.len(), 5);
    assert_eq!(results[0]["merchant_location_id"], "wh-1");
    assert_eq!(results[0]["name"], "Warehouse 1");
    assert_eq!(results[0]["status"], "ACTIVE");
    assert_eq!(results[1]["merchant_location_id"], "wh-2");
    assert_eq!(results[1]["status"], "FAILED");
    assert_eq!(results[1]["location_id"], "");
    assert_eq!(results[1]["name"], "");
    assert!(
        results[2].get("merchant_location_id").is_none(),
        "omitted when not sent"
    );
    assert_eq!(results[2]["status"], "ACTIVE");
    assert_eq!(
        results[3],
        json!({"location_id": "", "name": "", "status": "FAILED", "errors": [{"field": "locations[3]", "code": "INVALID_TYPE", "message": "must be an object, not a number"}]})
    );
    assert_eq!(results[4]["name"], "", "name echoed only when it is a string");
    for r in &results {
        let keys: Vec<&String> = r.as_object().unwrap().keys().collect();
        assert!(
            keys.iter()
                .all(|k| ["location_id", "merchant_location_id", "name", "status", "errors"].contains(&k.as_str()))
        );
    }
}

#[tokio::test]
async fn last_duplicate_wins_and_earlier_ones_are_superseded() {
    let app = TestApp::spawn().await;
    let first = with(warehouse(1), "/merchant_location_id", Some(json!("same")));
    let other = warehouse(2);
    let last = with(
        with(warehouse(3), "/merchant_location_id", Some(json!("same"))),
        "/name",
        Some(json!("The last one")),
    );
    let middle = with(
        with(warehouse(4), "/merchant_location_id", Some(json!("same"))),
        "/latitude",
        Some(json!(500)),
    );
    let results = app.create(vec![first, other, middle, last]).await;
    for i in [0, 2] {
        assert_eq!(results[i]["status"], "FAILED");
        assert_eq!(results[i]["location_id"], "");
        assert_eq!(results[i]["merchant_location_id"], "same");
        assert_eq!(
            results[i]["errors"],
            json!([{"field": format!("locations[{i}].merchant_location_id"), "code": "CONFLICT", "message": "superseded by locations[3] with the same merchant_location_id"}])
        );
    }
    assert_eq!(results[1]["status"], "ACTIVE");
    assert_eq!(results[3]["status"], "ACTIVE");
    assert_eq!(results[3]["name"], "The last one");
}

#[tokio::test]
async fn a_retry_with_the_same_content_returns_the_stored_location() {
    let app = TestApp::spawn().await;
    let original = pickup_point(1);
    let first = app.create(vec![original.clone()]).await;
    assert_eq!(first[0]["status"], "ACTIVE");

    // The same location written differently: keys reordered, arrays reordered, 7 as 7.0,
    // absent optional fields as null or empty.
    let mut same = json!({});
    let object = original.as_object().unwrap();
    for key in object.keys().rev() {
        same[key] = object[key].clone();
    }
    let same = with(same, "/payment_methods", Some(json!(["CASH", "CARD", "ALREADY_PAID"])));
    let same = with(same, "/storage_period_days", Some(json!(7.0)));
    let same = with(same, "/limits/weight", Some(json!(30.0)));
    let same = with(
        same,
        "/working_schedule",
        Some(json!([
            original["working_schedule"][1],
            original["working_schedule"][0]
        ])),
    );
    let same = with(
        same,
        "/individual_schedule",
        Some(json!([
            original["individual_schedule"][1],
            original["individual_schedule"][0]
        ])),
    );
    let same = with(same, "/comment", Some(Value::Null));
    let same = with(same, "/working_schedule/0/schedule/break", Some(json!("")));
    let same = with(same, "/working_schedule/0/schedule/break", None);
    // (the reordered Saturday kept its break: put it back so the content really is the same)
    let same = with(same, "/working_schedule/0/schedule/break", Some(json!("13:00-14:00")));
    let retry = app.create(vec![same]).await;
    assert_eq!(retry[0]["location_id"], first[0]["location_id"]);
    assert_eq!(retry[0]["status"], "ACTIVE");
    assert_eq!(retry[0]["errors"], json!([]));

    // A retry of a quarantined location answers its stored status, without errors.
    let near = with(
        north_of(pickup_point(1), 10.0),
        "/merchant_location_id",
        Some(json!("near")),
    );
    let q = app.create(vec![near.clone()]).await;
    assert_eq!(q[0]["status"], "QUARANTINE");
    let again = app.create(vec![near]).await;
    assert_eq!(again[0]["location_id"], q[0]["location_id"]);
    assert_eq!(again[0]["status"], "QUARANTINE");
    assert_eq!(again[0]["errors"], json!([]));
}

#[tokio::test]
async fn changed_content_under_a_used_id_is_a_conflict() {
    let app = TestApp::spawn().await;
    let first = app.create(vec![warehouse(1)]).await;
    let stored = id(&first[0]).to_owned();
    for changed in [
        with(warehouse(1), "/name", Some(json!("Renamed"))),
        with(warehouse(1), "/comment", None),
        with(warehouse(1), "/working_schedule/0/schedule/break", None),
        with(
            warehouse(1),
            "/location_types",
            Some(json!(["WAREHOUSE", "CLICK_AND_COLLECT"])),
        ),
    ] {
        let changed = if changed["location_types"].as_array().unwrap().len() == 2 {
            with(
                with(
                    with(changed, "/payment_methods", Some(json!(["CARD"]))),
                    "/storage_period_days",
                    Some(json!(2)),
                ),
                "/latitude",
                Some(json!(-40)),
            )
        } else {
            changed
        };
        let results = app.create(vec![changed]).await;
        assert_eq!(results[0]["status"], "FAILED", "{:#}", results[0]);
        assert_eq!(results[0]["location_id"], "");
        let errors = results[0]["errors"].as_array().unwrap();
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0]["field"], "locations[0].merchant_location_id");
        assert_eq!(errors[0]["code"], "CONFLICT");
        assert!(errors[0]["message"].as_str().unwrap().contains(&stored));
    }
    // Create never changed the stored location: the original content still retries safely.
    let retry = app.create(vec![warehouse(1)]).await;
    assert_eq!(id(&retry[0]), stored);
}

#[tokio::test]
async fn quarantine_within_one_request_and_across_requests() {
    let app = TestApp::spawn().await;
    let a = warehouse(1);
    let b = with(north_of(warehouse(1), 30.0), "/merchant_location_id", Some(json!("b")));
    let far = with(
        north_of(warehouse(1), 60.0),
        "/merchant_location_id",
        Some(json!("far")),
    );
    let results = app.create(vec![a, b, far]).await;
    assert_eq!(results[0]["status"], "ACTIVE");
    assert_eq!(results[1]["status"], "QUARANTINE");
    assert!(!id(&results[1]).is_empty(), "a quarantined location is created");
    let errors = results[1]["errors"].as_array().unwrap();
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0]["field"], "locations[1].latitude");
    assert_eq!(errors[0]["code"], "STOREFRONT_RULE_VIOLATION");
    assert!(errors[0]["message"].as_str().unwrap().contains(id(&results[0])));
    // 60 m north of a is 30 m north of b, which is quarantined but not archived: it counts.
    assert_eq!(results[2]["status"], "QUARANTINE");
    assert!(
        results[2]["errors"][0]["message"]
            .as_str()
            .unwrap()
            .contains(id(&results[1]))
    );

    // Across requests; the nearest one is named.
    let c = with(north_of(warehouse(1), 25.0), "/merchant_location_id", Some(json!("c")));
    let later = app.create(vec![c]).await;
    assert_eq!(later[0]["status"], "QUARANTINE");
    assert!(
        later[0]["errors"][0]["message"]
            .as_str()
            .unwrap()
            .contains(id(&results[1]))
    );
}

#[tokio::test]
async fn quarantine_names_the_first_created_on_a_tie() {
    let app = TestApp::spawn().await;
    let south = with(
        north_of(warehouse(1), -20.0),
        "/merchant_location_id",
        Some(json!("south")),
    );
    let north = with(
        north_of(warehouse(1), 20.0),
        "/merchant_location_id",
        Some(json!("north")),
    );
    let stored = app.create(vec![south, north]).await;
    // The second is 40 m from the first: quarantined; both are live.
    assert_eq!(stored[1]["status"], "QUARANTINE");
    let middle = app.create(vec![warehouse(1)]).await;
    assert_eq!(middle[0]["status"], "QUARANTINE");
    assert!(
        middle[0]["errors"][0]["message"]
            .as_str()
            .unwrap()
            .contains(id(&stored[0]))
    );
}

#[tokio::test]
async fn no_quarantine_without_a_shared_type_or_beyond_50_metres() {
    let app = TestApp::spawn().await;
    let wh = warehouse(1);
    let lat = wh["latitude"].clone();
    let pp = with(
        with(pickup_point(1), "/latitude", Some(lat.clone())),
        "/longitude",
        Some(wh["longitude"].clone()),
    );
    let beyond = with(
        north_of(warehouse(1), 51.0),
        "/merchant_location_id",
        Some(json!("beyond")),
    );
    let results = app.create(vec![wh, pp, beyond]).await;
    for r in &results {
        assert_eq!(r["status"], "ACTIVE", "{r:#}");
    }
}

#[tokio::test]
async fn merchants_never_see_or_collide_with_each_other() {
    let app = TestApp::spawn().await;
    let other = app.merchant_key("other").await;
    let mine = app.create(vec![warehouse(1)]).await;
    // Same merchant_location_id, other content, same place: for another merchant it is new,
    // neither a conflict nor a retry, and not quarantined by my location.
    let theirs = app
        .create_as(&other, vec![with(warehouse(1), "/name", Some(json!("Theirs")))])
        .await;
    assert_eq!(theirs[0]["status"], "ACTIVE");
    assert_eq!(theirs[0]["errors"], json!([]));
    assert_ne!(theirs[0]["location_id"], mine[0]["location_id"]);
    // Their identical retry gives their own id back, mine gives mine.
    let again = app
        .create_as(&other, vec![with(warehouse(1), "/name", Some(json!("Theirs")))])
        .await;
    assert_eq!(again[0]["location_id"], theirs[0]["location_id"]);
    let mine_again = app.create(vec![warehouse(1)]).await;
    assert_eq!(mine_again[0]["location_id"], mine[0]["location_id"]);
}

#[tokio::test]
async fn two_hundred_items_are_stored_in_one_request() {
    let app = TestApp::spawn().await;
    let items: Vec<Value> = (0..200).map(warehouse).collect();
    let results = app.create(items.clone()).await;
    assert_eq!(results.len(), 200);
    assert!(results.iter().all(|r| r["status"] == "ACTIVE"));
    let retry = app.create(items).await;
    for (a, b) in results.iter().zip(&retry) {
        assert_eq!(a["location_id"], b["location_id"]);
    }
}

/// Requests of one merchant that arrive together are written together (one group commit on
/// either engine), yet each decides as if alone after the ones before it: the shared id is stored
/// once and every later request is its safe retry; of the locations all requests put at one spot
/// beside it, the first written is quarantined by the shared one and every other by that first
/// one (the nearest, at 0 m).
#[tokio::test]
async fn concurrent_requests_of_one_merchant_decide_one_after_another() {
    let app = TestApp::spawn().await;
    let shared = warehouse(1);
    let requests = (0..12).map(|i| {
        let beside = with(
            north_of(warehouse(1), 10.0),
            "/merchant_location_id",
            Some(json!(format!("beside-{i}"))),
        );
        app.create(vec![shared.clone(), beside])
    });
    let answers = futures_util::future::join_all(requests).await;
    let first = id(&answers[0][0]).to_owned();
    let named = |result: &Value| {
        let message = result["errors"][0]["message"].as_str().unwrap().to_owned();
        answers
            .iter()
            .map(|r| id(&r[0]))
            .chain(answers.iter().map(|r| id(&r[1])))
            .find(|id| message.contains(id))
            .unwrap()
            .to_owned()
    };
    for results in &answers {
        assert_eq!(results[0]["status"], "ACTIVE", "{results:#?}");
        assert_eq!(id(&results[0]), first, "one location for the shared id");
        assert_eq!(results[1]["status"], "QUARANTINE", "{results:#?}");
    }
    let by_shared: Vec<&Value> = answers.iter().map(|r| &r[1]).filter(|r| named(r) == first).collect();
    assert_eq!(
        by_shared.len(),
        1,
        "only the first beside it is quarantined by the shared one"
    );
    let first_beside = id(by_shared[0]).to_owned();
    for results in &answers {
        if id(&results[1]) != first_beside {
            assert_eq!(named(&results[1]), first_beside, "{results:#?}");
        }
    }
    let beside: std::collections::HashSet<&str> = answers.iter().map(|r| id(&r[1])).collect();
    assert_eq!(beside.len(), 12, "every request's own location is stored");
    let page = app.post("/v1/location/list", &json!({})).await;
    assert_eq!(page.body["pagination"]["total"], 13);
}

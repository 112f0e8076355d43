//! Finding a location by text (CONTRACT §26, amending §9.2): `filter.text` matches a location
//! whose name or merchant_location_id contains it, in any letter case (Cyrillic included); it
//! combines with the other conditions, binds the cursor, pages in creation order with `total`
//! null, follows renames, and never shows another merchant's locations.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value, json};
use storefront::config::Settings;

use crate::helpers::*;

fn named(n: u32, name: &str, mlid: &str) -> Value {
    let mut w = warehouse(n);
    w["name"] = json!(name);
    w["merchant_location_id"] = json!(mlid);
    w
}

fn ids(records: &[Value]) -> Vec<&str> {
    records
        .iter()
        .map(|r| r["merchant_location_id"].as_str().unwrap())
        .collect()
}

async fn page(app: &TestApp, filter: Value, limit: usize) -> Answer {
    let answer = app
        .list_locations(&json!({"filter": filter, "pagination": {"limit": limit}}))
        .await;
    assert_eq!(answer.status, StatusCode::OK, "{:#}", answer.body);
    answer
}

#[tokio::test]
async fn text_finds_names_and_ids_in_any_letter_case_page_by_page() {
    let app = TestApp::spawn().await;
    app.create(vec![
        named(1, "Пункт выдачи Тверская", "pvz-0001"),
        named(2, "Склад на Садовой", "wh-01"),
        named(3, "Point TVERSKAYA", "PVZ-0002"),
        named(4, "Ёлки-Палки", "x-1"),
    ])
    .await;
    let other = app.merchant_key("other").await;
    app.create_as(&other, vec![named(5, "Тверская, другой продавец", "pvz-0003")])
        .await;

    let found = |text: &str| {
        let text = text.to_owned();
        let app = &app;
        async move {
            ids(&app.walk_locations(&app.key, &json!({"text": text}), 2).await)
                .into_iter()
                .map(str::to_owned)
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(found("ТВЕР").await, ["pvz-0001"]);
    assert_eq!(found("tverskaya").await, ["PVZ-0002"]);
    assert_eq!(found("pvz-000").await, ["pvz-0001", "PVZ-0002"]);
    assert_eq!(found("ёЛКи").await, ["x-1"]);
    assert_eq!(found("садовой").await, ["wh-01"]);
    assert_eq!(found("nowhere").await, Vec::<String>::new());
    // One and two characters, found in the merchant's own rows only, in creation order.
    assert_eq!(found("0").await, ["pvz-0001", "wh-01", "PVZ-0002"]);
    assert_eq!(found("-0").await, ["pvz-0001", "wh-01", "PVZ-0002"]);
    assert_eq!(found("Ё").await, ["x-1"]);
    // Never across the name and the id.
    assert_eq!(found("тверская pvz").await, Vec::<String>::new());

    // Pages: creation order, a cursor bound to the text, total null.
    let first = page(&app, json!({"text": "0"}), 2).await;
    assert_eq!(ids(first.body["locations"].as_array().unwrap()), ["pvz-0001", "wh-01"]);
    assert_eq!(first.body["pagination"]["has_next"], true);
    assert_eq!(first.body["pagination"]["total"], Value::Null);
    assert!(first.body["pagination"].as_object().unwrap().contains_key("total"));
    let cursor = first.body["pagination"]["next_cursor"].clone();
    let elsewhere = app
        .list_locations(&json!({"filter": {"text": "pvz"}, "pagination": {"limit": 2, "cursor": cursor}}))
        .await;
    assert_eq!(elsewhere.status, StatusCode::BAD_REQUEST);
    assert_eq!(elsewhere.body["code"], "INVALID_CURSOR");
    // Without text the total is exact as before.
    assert_eq!(page(&app, json!({}), 2).await.body["pagination"]["total"], 4);
}

#[tokio::test]
async fn text_combines_with_the_other_conditions_and_follows_changes() {
    let app = TestApp::spawn().await;
    let created = app
        .create(vec![
            named(1, "North depot", "d-1"),
            named(2, "South depot", "d-2"),
            named(3, "East depot", "d-3"),
        ])
        .await;
    let id = |i: usize| created[i]["location_id"].as_str().unwrap().to_owned();
    let archived = app
        .post("/v1/location/archive", &json!({"locations": [{"location_id": id(1)}]}))
        .await;
    assert_eq!(archived.status, StatusCode::OK);
    let active = app
        .walk_locations(&app.key, &json!({"text": "DEPOT", "status": "ACTIVE"}), 10)
        .await;
    assert_eq!(ids(&active), ["d-1", "d-3"]);
    let by_id = app
        .walk_locations(&app.key, &json!({"text": "depot", "location_ids": [id(0), id(1)]}), 10)
        .await;
    assert_eq!(ids(&by_id), ["d-1", "d-2"]);
    let typed = app
        .walk_locations(
            &app.key,
            &json!({"text": "depot", "location_types": ["PICKUP_POINT"]}),
            10,
        )
        .await;
    assert!(typed.is_empty());

    // Renamed: found by the new name only, at once.
    let mut renamed = named(3, "East warehouse", "d-3");
    renamed["location_id"] = json!(id(2));
    let updated = app.post("/v1/location/update", &json!({"locations": [renamed]})).await;
    assert_eq!(updated.body["locations"][0]["status"], "ACTIVE", "{:#}", updated.body);
    assert_eq!(
        ids(&app.walk_locations(&app.key, &json!({"text": "depot"}), 10).await),
        ["d-1", "d-2"]
    );
    assert_eq!(
        ids(&app.walk_locations(&app.key, &json!({"text": "WAREHOUSE"}), 10).await),
        ["d-3"]
    );
}

#[tokio::test]
async fn a_text_filter_that_is_not_one_is_refused_at_its_field() {
    let app = TestApp::spawn().await;
    for text in [json!(""), json!("x".repeat(101)), json!(7), json!(["a"]), json!({})] {
        let answer = app.list_locations(&json!({"filter": {"text": text}})).await;
        assert_eq!(answer.status, StatusCode::BAD_REQUEST, "{text}");
        assert_eq!(answer.body["code"], "INVALID_FILTER");
        assert_eq!(answer.body["details"]["field"], "filter.text");
    }
    let most = page(&app, json!({"text": "я".repeat(100)}), 10).await;
    assert_eq!(most.body["locations"], json!([]));
    let null = page(&app, json!({"text": null}), 10).await;
    assert_eq!(null.body["pagination"]["total"], 0, "a null text is no text");
}

/// No name or id holds a control character, and the index keeps a location's name and id apart
/// with one: a text holding one finds no location (before, the null character and the separator
/// found every location on SQLite, and a text across the name and the id found it).
#[tokio::test]
async fn a_text_with_a_control_character_finds_nothing() {
    let app = TestApp::spawn().await;
    app.create(vec![named(1, "Пункт выдачи", "pvz-1"), named(2, "Depot", "d-2")])
        .await;
    assert_eq!(app.walk_locations(&app.key, &json!({"text": "p"}), 10).await.len(), 2);
    for text in [
        "\u{0}",
        "\u{0}\u{0}\u{0}",
        "\u{1}",
        "выдачи\u{1}pvz",
        "t\u{1}d",
        "\t",
        "\u{7f}",
        "a\u{0}",
    ] {
        let answer = page(&app, json!({"text": text}), 10).await;
        assert_eq!(answer.body["locations"], json!([]), "{text:?}");
        assert_eq!(answer.body["pagination"]["has_next"], false);
        assert_eq!(answer.body["pagination"]["total"], Value::Null);
    }
}

/// A list filtered by text may read much of its merchant's index, so a merchant's lists by text
/// take turns: while the merchant's turn is held, its next list by text waits (out of the requests
/// in flight) and is answered 429 with Retry-After when its turn has not come within half its time.
/// Its list without text, and another merchant's list by text, are answered meanwhile; the turn
/// given back, its list by text is answered again.
#[tokio::test]
async fn a_merchant_s_lists_by_text_take_turns_and_no_other_list_waits_for_them() {
    let app = TestApp::spawn_with_settings(Settings {
        request_timeout: Duration::from_secs(8),
        ..Settings::default()
    })
    .await;
    app.create(vec![named(1, "Склад на Садовой", "wh-01")]).await;
    let other = app.merchant_key("other").await;
    app.create_as(&other, vec![named(2, "Склад у моста", "wh-02")]).await;
    let by_text = json!({"filter": {"text": "склад"}});

    let held = app.state.text_turns.turn(app.merchant_pk().await).await.unwrap();
    let waited = app.list_locations(&by_text).await;
    let details = assert_error(&waited, 429, "ERROR_TYPE_RATE_LIMIT", "RATE_LIMITED");
    assert_eq!(details["retry_after_ms"], 5000);
    assert_eq!(waited.headers["retry-after"], "5");
    let all = page(&app, Value::Null, 10).await;
    assert_eq!(ids(all.body["locations"].as_array().unwrap()), ["wh-01"]);
    let theirs = app.post_as("/v1/location/list", &other, &by_text).await;
    assert_eq!(theirs.status, StatusCode::OK, "{:#}", theirs.body);
    assert_eq!(ids(theirs.body["locations"].as_array().unwrap()), ["wh-02"]);

    drop(held);
    let mine = page(&app, json!({"text": "склад"}), 10).await;
    assert_eq!(ids(mine.body["locations"].as_array().unwrap()), ["wh-01"]);
}

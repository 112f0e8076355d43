//! POST /v1/location/list (CONTRACT §9): the stored record, filters, pages, cursors, errors.

use serde_json::{Value, json};

use storefront::domain::location::validate::KEYS as FIELDS;

use crate::helpers::*;

const LIST: &str = "/v1/location/list";

/// The keys of a record, in the order of CONTRACT §9.1: its own, then every field of SPEC §2.1
/// after `merchant_location_id`.
fn record_keys() -> Vec<&'static str> {
    let own = [
        "location_id",
        "merchant_location_id",
        "status",
        "issue",
        "version",
        "created_at",
        "updated_at",
    ];
    own.into_iter().chain(FIELDS[1..].iter().copied()).collect()
}

fn ids(records: &[Value]) -> Vec<String> {
    records
        .iter()
        .map(|r| r["location_id"].as_str().unwrap().to_owned())
        .collect()
}

fn is_timestamp(v: &Value) -> bool {
    let s = v.as_str().unwrap_or_default();
    let b = s.as_bytes();
    s.len() == 24 && b[4] == b'-' && b[10] == b'T' && b[19] == b'.' && s.ends_with('Z')
}

#[tokio::test]
async fn a_created_location_reads_back_as_its_normalised_record() {
    let app = TestApp::spawn().await;
    // Sent in a non-canonical form: sets and schedules out of order, 7.0 for 7, an empty optional
    // string, a null optional field.
    let mut item = pickup_point(1);
    item["payment_methods"] = json!(["CASH", "ALREADY_PAID", "CARD"]);
    item["storage_period_days"] = json!(7.0);
    item["comment"] = json!("");
    item["provider_location_id"] = json!("PVZ-77");
    item["working_schedule"] = json!([
        {"day": "SATURDAY", "schedule": {"time_start": "10:00", "time_end": "16:00"}},
        {"day": "MONDAY", "schedule": {"time_start": "09:00", "time_end": "21:00", "break": "13:00-14:00", "break_extra": null}}
    ]);
    item["working_schedule"][1]["schedule"]
        .as_object_mut()
        .unwrap()
        .remove("break_extra");
    item["individual_schedule"] = json!([
        {"date": "2027-01-01", "schedule": {"time_start": "00:00", "time_end": "24:00"}, "is_works": false},
        {"date": "2026-12-31", "schedule": {"time_start": "10:00", "time_end": "16:00", "break": ""}, "is_works": true}
    ]);
    item["name"] = json!("  Pickup \"point\" Ж ");
    let created = app.create(vec![item, with(warehouse(2), "/comment", None)]).await;
    let (pp_id, wh_id) = (
        created[0]["location_id"].as_str().unwrap(),
        created[1]["location_id"].as_str().unwrap(),
    );

    let (status, text) = app.post_text(LIST, &json!({})).await;
    assert_eq!(status, 200, "{text}");
    let body: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(keys_in_order(&text), ["locations", "pagination"]);
    let records = body["locations"].as_array().unwrap();
    assert_eq!(ids(records), [pp_id, wh_id], "creation order");
    // Every record has every key, in the contract's order.
    let first_record = &text[text.find("[{").unwrap() + 1..];
    assert_eq!(
        keys_in_order(&first_record[..first_record.find(",{\"location_id\"").unwrap()]),
        record_keys()
    );

    let pp = &records[0];
    assert!(is_timestamp(&pp["created_at"]), "{pp:#}");
    assert_eq!(pp["updated_at"], pp["created_at"]);
    let expected = json!({
        "location_id": pp_id,
        "merchant_location_id": "pp-1",
        "status": "ACTIVE",
        "issue": null,
        "version": 1,
        "created_at": pp["created_at"],
        "updated_at": pp["created_at"],
        "location_types": ["PICKUP_POINT"],
        "name": "  Pickup \"point\" Ж ",
        "address_tail": "190000, Russia, Saint Petersburg, Nevsky prospekt, 28, 2, 1, 15",
        "comment": null,
        "latitude": 20.01,
        "longitude": 30.3,
        "provider_id": "PROVIDER_3",
        "provider_location_id": "PVZ-77",
        "pickup_point_type": "PICKUP_POINT",
        "payment_methods": ["ALREADY_PAID", "CARD", "CASH"],
        "storage_period_days": 7,
        "limits": {"length": 100.0, "width": 60.0, "height": 60.0, "weight": 30.0},
        "instruction": "Enter from the courtyard.\nRing twice.",
        "pickup_services": ["FITTING"],
        "working_schedule": [
            {"day": "MONDAY", "schedule": {"time_start": "09:00", "time_end": "21:00", "break": "13:00-14:00", "shipping_cutoff": null}},
            {"day": "SATURDAY", "schedule": {"time_start": "10:00", "time_end": "16:00", "break": null, "shipping_cutoff": null}}
        ],
        "individual_schedule": [
            {"date": "2026-12-31", "schedule": {"time_start": "10:00", "time_end": "16:00", "break": null, "shipping_cutoff": null}, "is_works": true},
            {"date": "2027-01-01", "schedule": {"time_start": "00:00", "time_end": "24:00", "break": null, "shipping_cutoff": null}, "is_works": false}
        ],
        "is_accepts_returns": false
    });
    assert_eq!(pp, &expected);
    // 7.0 reads back as a number of the same value.
    assert_eq!(pp["storage_period_days"].as_f64(), Some(7.0));

    let wh = &records[1];
    for absent in [
        "comment",
        "provider_id",
        "provider_location_id",
        "pickup_point_type",
        "payment_methods",
        "storage_period_days",
        "instruction",
        "pickup_services",
        "individual_schedule",
    ] {
        assert_eq!(wh[absent], Value::Null, "{absent}");
    }
    assert_eq!(wh["working_schedule"][2]["schedule"]["shipping_cutoff"], "16:00");
    assert_eq!(wh["working_schedule"][2]["schedule"]["break"], Value::Null);
    assert_eq!(
        body["pagination"],
        json!({"next_cursor": null, "has_next": false, "total": 2})
    );

    // The same on every read.
    let (_, again) = app.post_text(LIST, &json!({})).await;
    assert_eq!(again, text);
}

#[tokio::test]
async fn a_quarantined_location_carries_its_issue_naming_the_neighbour() {
    let app = TestApp::spawn().await;
    let first = app.create(vec![warehouse(1)]).await;
    let twin = with(warehouse(1), "/merchant_location_id", Some(json!("wh-twin")));
    let second = app.create(vec![twin]).await;
    assert_eq!(second[0]["status"], "QUARANTINE");
    let answer = app.list_locations(&json!({"filter": {"status": "QUARANTINE"}})).await;
    assert_eq!(answer.status, 200, "{:#}", answer.body);
    let records = answer.body["locations"].as_array().unwrap();
    assert_eq!(records.len(), 1);
    let issue = &records[0]["issue"];
    assert_eq!(issue["field"], "latitude");
    assert_eq!(issue["code"], "STOREFRONT_RULE_VIOLATION");
    let neighbour = first[0]["location_id"].as_str().unwrap();
    assert!(issue["message"].as_str().unwrap().contains(neighbour), "{issue:#}");
    assert_eq!(
        issue["message"], second[0]["errors"][0]["message"],
        "the create answer said the same"
    );
    assert_eq!(answer.body["pagination"]["total"], 1);
}

/// Four locations of two types and two statuses, for the filter tests.
async fn four_locations(app: &TestApp) -> Vec<String> {
    let twin = with(warehouse(1), "/merchant_location_id", Some(json!("wh-twin")));
    let results = app
        .create(vec![warehouse(1), pickup_point(1), twin, click_and_collect(1)])
        .await;
    let statuses: Vec<&str> = results.iter().map(|r| r["status"].as_str().unwrap()).collect();
    assert_eq!(statuses, ["ACTIVE", "ACTIVE", "QUARANTINE", "ACTIVE"]);
    ids(&results)
}

#[tokio::test]
async fn every_filter_alone_and_together() {
    let app = TestApp::spawn().await;
    let all = four_locations(&app).await;
    let (wh, pp, twin, cc) = (&all[0], &all[1], &all[2], &all[3]);
    let other = app.merchant_key("other").await;
    let theirs = app.create_as(&other, vec![warehouse(1)]).await;
    let their_id = theirs[0]["location_id"].as_str().unwrap();

    let cases: Vec<(Value, Vec<&String>)> = vec![
        (json!({}), vec![wh, pp, twin, cc]),
        (json!(null), vec![wh, pp, twin, cc]),
        (
            json!({"status": null, "location_types": null, "location_ids": null}),
            vec![wh, pp, twin, cc],
        ),
        (json!({"status": "ACTIVE"}), vec![wh, pp, cc]),
        (json!({"status": "QUARANTINE"}), vec![twin]),
        (json!({"status": "ARCHIVED"}), vec![]),
        (json!({"location_types": ["WAREHOUSE"]}), vec![wh, twin, cc]),
        (
            json!({"location_types": ["PICKUP_POINT", "CLICK_AND_COLLECT"]}),
            vec![pp, cc],
        ),
        (
            json!({"location_types": ["WAREHOUSE"], "status": "ACTIVE"}),
            vec![wh, cc],
        ),
        (json!({"location_ids": [cc, wh, "nope", their_id, wh]}), vec![wh, cc]),
        (json!({"location_ids": []}), vec![]),
        (
            json!({"merchant_location_ids": ["pp-1", "wh-twin", "wh-404"]}),
            vec![pp, twin],
        ),
        (json!({"merchant_location_ids": []}), vec![]),
        (
            json!({"location_ids": [wh, pp], "merchant_location_ids": ["pp-1", "cc-1"]}),
            vec![pp],
        ),
        (
            json!({"location_ids": [wh, twin, pp], "status": "ACTIVE", "location_types": ["WAREHOUSE"]}),
            vec![wh],
        ),
    ];
    for (filter, expected) in cases {
        for limit in [1, 2, 100] {
            let records = app.walk_locations(&app.key, &filter, limit).await;
            assert_eq!(
                ids(&records),
                expected.iter().map(|s| s.as_str()).collect::<Vec<_>>(),
                "{filter} limit {limit}"
            );
        }
        let first = app.list_locations(&json!({"filter": filter})).await;
        assert_eq!(first.body["pagination"]["total"], expected.len(), "{filter}");
    }
    // The other merchant sees only its own.
    let records = app.walk_locations(&other, &json!({}), 10).await;
    assert_eq!(ids(&records), [their_id]);
    let records = app
        .walk_locations(&other, &json!({"location_ids": [wh, their_id]}), 10)
        .await;
    assert_eq!(ids(&records), [their_id]);
}

#[tokio::test]
async fn pages_follow_their_cursors_with_the_exact_total_and_new_locations_come_at_the_end() {
    let app = TestApp::spawn().await;
    let created: Vec<Value> = (1..=5).map(warehouse).collect();
    let first_ids = ids(&app.create(created).await);
    let page = app.list_locations(&json!({"pagination": {"limit": 2}})).await;
    assert_eq!(page.status, 200);
    assert_eq!(ids(page.body["locations"].as_array().unwrap()), first_ids[..2]);
    assert_eq!(page.body["pagination"]["has_next"], true);
    assert_eq!(page.body["pagination"]["total"], 5);
    let cursor = page.body["pagination"]["next_cursor"].as_str().unwrap().to_owned();
    assert!(
        cursor.len() <= 512
            && cursor
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    );

    // Created during the walk: comes at its end, and the total follows.
    let late = ids(&app.create(vec![warehouse(6)]).await);
    let page = app
        .list_locations(&json!({"pagination": {"limit": 3, "cursor": cursor}}))
        .await;
    assert_eq!(ids(page.body["locations"].as_array().unwrap()), first_ids[2..5]);
    assert_eq!(page.body["pagination"]["total"], 6);
    let cursor = page.body["pagination"]["next_cursor"].as_str().unwrap().to_owned();
    let page = app
        .list_locations(&json!({"pagination": {"limit": 3, "cursor": cursor}}))
        .await;
    assert_eq!(ids(page.body["locations"].as_array().unwrap()), late);
    assert_eq!(
        page.body["pagination"],
        json!({"next_cursor": null, "has_next": false, "total": 6})
    );

    // `limit` above 1000 is served as 1000; an empty cursor is the first page.
    let page = app
        .list_locations(&json!({"pagination": {"limit": 5000, "cursor": ""}}))
        .await;
    assert_eq!(page.status, 200);
    assert_eq!(page.body["locations"].as_array().unwrap().len(), 6);
    // Without pagination: 100 a page.
    let page = app.list_locations(&json!({"filter": {}})).await;
    assert_eq!(page.body["locations"].as_array().unwrap().len(), 6);
}

#[tokio::test]
async fn a_cursor_is_bound_to_its_merchant_its_filter_and_its_list() {
    let app = TestApp::spawn().await;
    let all = four_locations(&app).await;
    let filter = json!({"location_ids": [&all[0], &all[1], &all[3]]});
    let page = app
        .list_locations(&json!({"filter": filter, "pagination": {"limit": 1}}))
        .await;
    let cursor = page.body["pagination"]["next_cursor"].clone();
    assert!(cursor.is_string());

    // The same filter written otherwise is the same filter.
    let same = json!({"location_ids": [&all[3], &all[0], &all[1], &all[0]], "status": null});
    let next = app
        .list_locations(&json!({"filter": same, "pagination": {"limit": 1, "cursor": cursor}}))
        .await;
    assert_eq!(next.status, 200, "{:#}", next.body);
    assert_eq!(ids(next.body["locations"].as_array().unwrap()), [all[1].clone()]);

    let invalid_cursor = |answer: &Answer| {
        let details = assert_error(answer, 400, "ERROR_TYPE_BAD_REQUEST", "INVALID_CURSOR");
        assert_eq!(details["field"], "pagination.cursor");
    };
    // Another filter.
    let answer = app
        .list_locations(&json!({"filter": {"location_ids": [&all[0]]}, "pagination": {"limit": 1, "cursor": cursor}}))
        .await;
    invalid_cursor(&answer);
    // Another merchant, with the same filter.
    let other = app.merchant_key("other").await;
    let answer = app
        .post_as(
            LIST,
            &other,
            &json!({"filter": filter, "pagination": {"limit": 1, "cursor": cursor}}),
        )
        .await;
    invalid_cursor(&answer);
    // The category list's cursor here, and this list's there.
    app.import_categories(&json!([
        {"id": "1", "name": "A", "slug": "a", "leaf": true, "status": "active"},
        {"id": "2", "name": "B", "slug": "b", "leaf": true, "status": "active"}
    ]))
    .await;
    let categories = app.list(&json!({"pagination": {"limit": 1}})).await;
    let category_cursor = categories.body["pagination"]["next_cursor"].clone();
    assert!(category_cursor.is_string());
    invalid_cursor(
        &app.list_locations(&json!({"pagination": {"limit": 1, "cursor": category_cursor}}))
            .await,
    );
    let unfiltered = app.list_locations(&json!({"pagination": {"limit": 1}})).await;
    let location_cursor = unfiltered.body["pagination"]["next_cursor"].clone();
    invalid_cursor(
        &app.list(&json!({"pagination": {"limit": 1, "cursor": location_cursor}}))
            .await,
    );
    // Altered, not a string, not ours.
    let mut altered = location_cursor.as_str().unwrap().to_owned();
    let last = altered.pop().unwrap();
    altered.push(if last == 'A' { 'B' } else { 'A' });
    invalid_cursor(
        &app.list_locations(&json!({"pagination": {"limit": 1, "cursor": altered}}))
            .await,
    );
    invalid_cursor(
        &app.list_locations(&json!({"pagination": {"limit": 1, "cursor": 7}}))
            .await,
    );
    invalid_cursor(
        &app.list_locations(&json!({"pagination": {"limit": 1, "cursor": "x".repeat(600)}}))
            .await,
    );
}

#[tokio::test]
async fn every_request_level_error_names_its_field() {
    let app = TestApp::spawn().await;
    let many: Vec<String> = (0..1001).map(|i| format!("id-{i}")).collect();
    let cases: Vec<(Value, &str, &str)> = vec![
        (json!([]), "INVALID_REQUEST", ""),
        (json!("x"), "INVALID_REQUEST", ""),
        (json!({"locations": []}), "INVALID_REQUEST", "locations"),
        (json!({"filter": 5}), "INVALID_REQUEST", "filter"),
        (
            json!({"filter": [], "pagination": {"limit": 1}}),
            "INVALID_REQUEST",
            "filter",
        ),
        (json!({"pagination": "x"}), "INVALID_REQUEST", "pagination"),
        (
            json!({"filter": {"parent_id": "1"}}),
            "INVALID_FILTER",
            "filter.parent_id",
        ),
        (json!({"filter": {"nope": null}}), "INVALID_FILTER", "filter.nope"),
        (json!({"filter": {"status": ""}}), "INVALID_FILTER", "filter.status"),
        (
            json!({"filter": {"status": "FAILED"}}),
            "INVALID_FILTER",
            "filter.status",
        ),
        (
            json!({"filter": {"status": "DRAFT"}}),
            "INVALID_FILTER",
            "filter.status",
        ),
        (
            json!({"filter": {"status": "active"}}),
            "INVALID_FILTER",
            "filter.status",
        ),
        (json!({"filter": {"status": 1}}), "INVALID_FILTER", "filter.status"),
        (
            json!({"filter": {"location_types": []}}),
            "INVALID_FILTER",
            "filter.location_types",
        ),
        (
            json!({"filter": {"location_types": ["POSTAMAT"]}}),
            "INVALID_FILTER",
            "filter.location_types",
        ),
        (
            json!({"filter": {"location_types": "WAREHOUSE"}}),
            "INVALID_FILTER",
            "filter.location_types",
        ),
        (
            json!({"filter": {"location_ids": "a"}}),
            "INVALID_FILTER",
            "filter.location_ids",
        ),
        (
            json!({"filter": {"location_ids": ["a", 1]}}),
            "INVALID_FILTER",
            "filter.location_ids",
        ),
        (
            json!({"filter": {"merchant_location_ids": [null]}}),
            "INVALID_FILTER",
            "filter.merchant_location_ids",
        ),
        (
            json!({"filter": {"location_ids": many}}),
            "TOO_MANY_ITEMS",
            "filter.location_ids",
        ),
        (
            json!({"filter": {"merchant_location_ids": many}}),
            "TOO_MANY_ITEMS",
            "filter.merchant_location_ids",
        ),
        (json!({"pagination": {}}), "INVALID_PAGINATION", "pagination.limit"),
        (
            json!({"pagination": {"limit": 0}}),
            "INVALID_PAGINATION",
            "pagination.limit",
        ),
        (
            json!({"pagination": {"limit": 2.5}}),
            "INVALID_PAGINATION",
            "pagination.limit",
        ),
        (
            json!({"pagination": {"limit": "5"}}),
            "INVALID_PAGINATION",
            "pagination.limit",
        ),
        (
            json!({"pagination": {"limit": 5, "page": 2}}),
            "INVALID_PAGINATION",
            "pagination.page",
        ),
        (
            json!({"pagination": {"limit": 5, "cursor": false}}),
            "INVALID_CURSOR",
            "pagination.cursor",
        ),
    ];
    for (body, code, field) in cases {
        let answer = app.list_locations(&body).await;
        let details = assert_error(&answer, 400, "ERROR_TYPE_BAD_REQUEST", code);
        assert_eq!(details["field"], field, "{body}");
        if code == "TOO_MANY_ITEMS" {
            assert_eq!(details["max"], 1000);
            assert_eq!(details["actual"], 1001);
        }
    }
    // `5.0` is 5; an empty body is `{}`.
    assert_eq!(
        app.list_locations(&json!({"pagination": {"limit": 5.0}})).await.status,
        200
    );
    let empty = read(
        app.request(reqwest::Method::POST, LIST)
            .bearer_auth(&app.key)
            .header("content-length", "0"),
    )
    .await;
    assert_eq!(empty.status, 200, "{:#}", empty.body);
    assert_eq!(
        empty.body,
        json!({"locations": [], "pagination": {"next_cursor": null, "has_next": false, "total": 0}})
    );
    // Authentication comes first.
    let answer = app.post_as(LIST, "sf_nope_nope", &json!({"filter": 5})).await;
    assert_error(&answer, 401, "ERROR_TYPE_UNAUTHORIZED", "INVALID_API_KEY");
}

//! One case per field rule of CONTRACT §4.2–4.5: a valid fixture with one thing changed, and the
//! exact errors (path and code) it must produce, and no others.

use serde_json::{Value, json};

use crate::helpers::*;

use crate::create_cases::cases;

#[tokio::test]
async fn every_rule_reports_its_exact_path_and_code_and_nothing_else() {
    let app = TestApp::spawn().await;
    let mut failures = Vec::new();
    for case in cases() {
        let got = app.errors_of(case.item.clone()).await;
        let want: Vec<(String, String)> = case
            .expected
            .iter()
            .map(|(path, code)| (format!("locations[0]{path}"), (*code).to_owned()))
            .collect();
        if got != want {
            failures.push(format!("{}: want {want:?}, got {got:?}", case.name));
        }
    }
    assert!(
        failures.is_empty(),
        "{} cases failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[tokio::test]
async fn valid_variants_are_created() {
    let app = TestApp::spawn().await;
    let items = vec![
        warehouse(1),
        pickup_point(2),
        postamat(3),
        click_and_collect(4),
        // A warehouse needs no address; empty optional strings and arrays, and nulls, are absent.
        with(with(warehouse(5), "/address_tail", None), "/comment", Some(json!(""))),
        with(
            with(warehouse(6), "/individual_schedule", Some(json!([]))),
            "/merchant_location_id",
            Some(Value::Null),
        ),
        with(
            with(pickup_point(7), "/provider_id", Some(json!(""))),
            "/provider_location_id",
            None,
        ),
        // Line feeds and tabs in comment and instruction; 24:00 as the end of a day.
        with(warehouse(8), "/comment", Some(json!("line one\n\tline two"))),
        with(
            warehouse(9),
            "/working_schedule/0/schedule/time_end",
            Some(json!("24:00")),
        ),
        // Empty break and cutoff mean none.
        with(
            with(warehouse(10), "/working_schedule/0/schedule/break", Some(json!(""))),
            "/working_schedule/2/schedule/shipping_cutoff",
            Some(json!("")),
        ),
        // Boundaries.
        with(
            with(warehouse(11), "/limits/length", Some(json!(1000))),
            "/limits/weight",
            Some(json!(10000)),
        ),
        with(pickup_point(12), "/storage_period_days", Some(json!(90.0))),
        with(
            with(warehouse(13), "/latitude", Some(json!(-90))),
            "/longitude",
            Some(json!(180)),
        ),
        with(warehouse(14), "/name", Some(Value::String("名".repeat(255)))),
        with(
            warehouse(15),
            "/working_schedule/0/schedule/break",
            Some(json!("09:00-21:00")),
        ),
        with(
            pickup_point(16),
            "/individual_schedule/0/date",
            Some(json!("2028-02-29")),
        ),
        // Types allow fields as a union: PICKUP_POINT + WAREHOUSE may carry a cutoff.
        with(
            pickup_point(17),
            "/location_types",
            Some(json!(["WAREHOUSE", "PICKUP_POINT"])),
        ),
        with(
            with(
                pickup_point(17),
                "/location_types",
                Some(json!(["WAREHOUSE", "PICKUP_POINT"])),
            ),
            "/working_schedule/0/schedule/shipping_cutoff",
            Some(json!("12:00")),
        ),
    ];
    // Distinct ids and places, so nothing supersedes or quarantines anything else.
    let items: Vec<Value> = items
        .into_iter()
        .enumerate()
        .map(|(i, item)| {
            let item = with(item, "/latitude", Some(json!(-80.0 + i as f64)));
            if item.get("merchant_location_id").is_some_and(Value::is_string) {
                with(item, "/merchant_location_id", Some(json!(format!("valid-{i}"))))
            } else {
                item
            }
        })
        .collect();
    let results = app.create(items.clone()).await;
    assert_eq!(results.len(), items.len());
    for (i, result) in results.iter().enumerate() {
        assert_eq!(result["status"], "ACTIVE", "item {i}: {result:#}");
        assert_eq!(result["errors"], json!([]), "item {i}");
        assert!(!result["location_id"].as_str().unwrap().is_empty());
    }
}

#[tokio::test]
async fn types_unknown_turn_the_type_matrix_off() {
    // With an invalid location_types, no SCHEMA_MISMATCH or CONDITIONALLY_REQUIRED is derived from it.
    let app = TestApp::spawn().await;
    let item = with(
        with(
            pickup_point(0),
            "/location_types",
            Some(json!(["PICKUP_POINT", "DEPOT"])),
        ),
        "/payment_methods",
        None,
    );
    let item = with(
        item,
        "/working_schedule/0/schedule/shipping_cutoff",
        Some(json!("12:00")),
    );
    assert_eq!(
        app.errors_of(item).await,
        vec![("locations[0].location_types[1]".to_owned(), "INVALID_ENUM".to_owned())]
    );
}

#[tokio::test]
async fn a_field_not_allowed_is_not_checked_further() {
    let app = TestApp::spawn().await;
    let item = with(warehouse(0), "/payment_methods", Some(json!(["CARD", "CARD", 5])));
    assert_eq!(
        app.errors_of(item).await,
        vec![("locations[0].payment_methods".to_owned(), "SCHEMA_MISMATCH".to_owned())]
    );
}

#[tokio::test]
async fn every_error_of_an_item_in_field_order() {
    let app = TestApp::spawn().await;
    let item = json!({
        "zzz": 1,
        "is_accepts_returns": "no",
        "working_schedule": [{"day": "MONDAY", "schedule": {"time_start": "9", "time_end": "18:00"}}, {"day": "MONDAY", "schedule": {"time_start": "10:00", "time_end": "09:00"}}],
        "limits": {"length": 0, "width": -1, "height": 2000},
        "storage_period_days": 100,
        "payment_methods": ["CASH", "CASH"],
        "pickup_point_type": "POSTAMAT",
        "latitude": 91,
        "name": "",
        "location_types": ["PICKUP_POINT"],
        "merchant_location_id": "m-1"
    });
    let got = app.errors_of(item).await;
    let want: Vec<(String, String)> = [
        ("name", "REQUIRED"),
        ("address_tail", "CONDITIONALLY_REQUIRED"),
        ("latitude", "INVALID_LATITUDE"),
        ("longitude", "REQUIRED"),
        ("payment_methods[1]", "INVALID_FORMAT"),
        ("storage_period_days", "MAX_VALUE"),
        ("limits.length", "MIN_VALUE"),
        ("limits.width", "NEGATIVE_VALUE"),
        ("limits.height", "MAX_VALUE"),
        ("limits.weight", "REQUIRED"),
        ("working_schedule[0].schedule.time_start", "INVALID_TIME"),
        ("working_schedule[1].day", "INVALID_FORMAT"),
        ("working_schedule[1].schedule.time_end", "INVALID_TIME_RANGE"),
        ("is_accepts_returns", "INVALID_TYPE"),
        ("zzz", "SCHEMA_MISMATCH"),
    ]
    .iter()
    .map(|(p, c)| (format!("locations[0].{p}"), (*c).to_owned()))
    .collect();
    assert_eq!(got, want);
}

#[tokio::test]
async fn multi_error_items_snapshot() {
    let app = TestApp::spawn().await;
    let items = vec![
        json!({"merchant_location_id": "snap-1", "location_types": ["CLICK_AND_COLLECT", "CLICK_AND_COLLECT"], "name": 42, "latitude": "north", "longitude": -200, "limits": {}, "working_schedule": "always", "is_accepts_returns": null}),
        with(
            with(
                with(postamat(1), "/payment_methods", Some(json!(["CASH"]))),
                "/pickup_services",
                Some(json!(["FITTING"])),
            ),
            "/address_tail",
            Some(json!("1, , Moscow, Tverskaya, 1")),
        ),
        with(
            with(warehouse(2), "/latitude", Some(json!(0))),
            "/longitude",
            Some(json!(0)),
        ),
        json!("not an object"),
    ];
    let results = app.create(items).await;
    insta::assert_json_snapshot!(results);
}

#[tokio::test]
async fn an_item_reports_at_most_fifty_errors_in_field_order_and_fails() {
    let app = TestApp::spawn().await;
    // 3 errors among the fields, then 80 unknown keys: the first 50 in order.
    let mut item = with(warehouse(0), "/name", Some(json!("")));
    item["latitude"] = json!(91);
    item["limits"]["weight"] = json!(-1);
    for i in 0..80 {
        item[format!("zz{i:02}")] = json!(i);
    }
    let mut updated = item.clone();
    let results = app.create(vec![item, warehouse(1)]).await;
    assert_eq!(results[0]["status"], "FAILED");
    assert_eq!(results[0]["location_id"], "");
    let errors = field_codes(&results[0]);
    assert_eq!(errors.len(), 50);
    assert_eq!(
        errors[..4],
        [
            ("locations[0].name".to_owned(), "REQUIRED".to_owned()),
            ("locations[0].latitude".to_owned(), "INVALID_LATITUDE".to_owned()),
            ("locations[0].limits.weight".to_owned(), "NEGATIVE_VALUE".to_owned()),
            ("locations[0].zz00".to_owned(), "SCHEMA_MISMATCH".to_owned()),
        ]
    );
    assert_eq!(
        errors[49],
        ("locations[0].zz46".to_owned(), "SCHEMA_MISMATCH".to_owned())
    );
    assert_eq!(results[1]["status"], "ACTIVE", "the other item is not affected");
    // The same validator through update.
    app.create(vec![warehouse(0)]).await;
    updated["location_types"] = json!(["PICKUP_POINT"]);
    let answer = app.post("/v1/location/update", &json!({"locations": [updated]})).await;
    let result = &answer.body["locations"][0];
    assert_eq!(result["status"], "FAILED");
    assert_eq!(field_codes(result).len(), 50);
}

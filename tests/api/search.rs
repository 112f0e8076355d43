//! `POST /v1/location/search` (CONTRACT §12): the request's rules with their codes and paths,
//! distances, each filter's edges (parcel fit, the open-at rule on every schedule shape), what is
//! found as locations change, the 180th meridian and the poles, isolation and cursors.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::*;
use crate::search_model::distance_m;

const SEARCH: &str = "/v1/location/search";
const NEAR: (f64, f64) = (55.7575, 37.6134);

fn near() -> Value {
    json!({"latitude": NEAR.0, "longitude": NEAR.1})
}

/// `item` moved to (`lat`, `lon`) under a new merchant id.
fn at(mut item: Value, id: &str, lat: f64, lon: f64) -> Value {
    item["merchant_location_id"] = json!(id);
    item["latitude"] = json!(lat);
    item["longitude"] = json!(lon);
    item
}

/// The point `metres` north of `NEAR`.
fn north(metres: f64) -> (f64, f64) {
    (NEAR.0 + metres / 111_195.08, NEAR.1)
}

async fn search(app: &TestApp, body: Value) -> Answer {
    app.post(SEARCH, &body).await
}

/// The merchant ids found, in order, on the first page.
async fn found(app: &TestApp, body: Value) -> Vec<String> {
    let answer = search(app, body).await;
    assert_eq!(answer.status, StatusCode::OK, "{:#}", answer.body);
    result_ids(&answer.body)
}

#[tokio::test]
async fn request_errors_name_their_field() {
    let app = TestApp::spawn().await;
    let n = near();
    let filter = |f: Value| json!({"near": n, "filter": f});
    let cases: Vec<(Value, &str, &str)> = vec![
        (json!({}), "INVALID_REQUEST", "near"),
        (json!({"near": null}), "INVALID_REQUEST", "near"),
        (json!({"near": [55.7, 37.6]}), "INVALID_REQUEST", "near"),
        (json!({"near": {"longitude": 37.6}}), "INVALID_REQUEST", "near.latitude"),
        (
            json!({"near": {"latitude": "55.7", "longitude": 37.6}}),
            "INVALID_REQUEST",
            "near.latitude",
        ),
        (
            json!({"near": {"latitude": 90.01, "longitude": 37.6}}),
            "INVALID_REQUEST",
            "near.latitude",
        ),
        (
            json!({"near": {"latitude": 55.7, "longitude": -180.5}}),
            "INVALID_REQUEST",
            "near.longitude",
        ),
        (json!({"near": {"latitude": 55.7}}), "INVALID_REQUEST", "near.longitude"),
        (
            json!({"near": {"latitude": 55.7, "longitude": 37.6, "altitude": 1}}),
            "INVALID_REQUEST",
            "near.altitude",
        ),
        (json!({"near": n, "radius_m": 0}), "INVALID_REQUEST", "radius_m"),
        (json!({"near": n, "radius_m": 50001}), "INVALID_REQUEST", "radius_m"),
        (json!({"near": n, "radius_m": 500.5}), "INVALID_REQUEST", "radius_m"),
        (json!({"near": n, "radius_m": "500"}), "INVALID_REQUEST", "radius_m"),
        (json!({"near": n, "sort": "distance"}), "INVALID_REQUEST", "sort"),
        (json!({"near": n, "filter": 5}), "INVALID_REQUEST", "filter"),
        (filter(json!({"colour": "red"})), "INVALID_FILTER", "filter.colour"),
        (
            filter(json!({"location_types": []})),
            "INVALID_FILTER",
            "filter.location_types",
        ),
        (
            filter(json!({"location_types": ["SHOP"]})),
            "INVALID_FILTER",
            "filter.location_types",
        ),
        (
            filter(json!({"location_types": "WAREHOUSE"})),
            "INVALID_FILTER",
            "filter.location_types",
        ),
        (
            filter(json!({"pickup_point_type": "LOCKER"})),
            "INVALID_FILTER",
            "filter.pickup_point_type",
        ),
        (
            filter(json!({"payment_method": ["CARD"]})),
            "INVALID_FILTER",
            "filter.payment_method",
        ),
        (
            filter(json!({"pickup_services": []})),
            "INVALID_FILTER",
            "filter.pickup_services",
        ),
        (
            filter(json!({"pickup_services": ["MASSAGE"]})),
            "INVALID_FILTER",
            "filter.pickup_services",
        ),
        (
            filter(json!({"accepts_returns": "yes"})),
            "INVALID_FILTER",
            "filter.accepts_returns",
        ),
        (filter(json!({"parcel": 5})), "INVALID_FILTER", "filter.parcel"),
        (
            filter(json!({"parcel": {"length": 1, "width": 1, "height": 1}})),
            "INVALID_FILTER",
            "filter.parcel.weight",
        ),
        (
            filter(json!({"parcel": {"length": 0, "width": 1, "height": 1, "weight": 1}})),
            "INVALID_FILTER",
            "filter.parcel.length",
        ),
        (
            filter(json!({"parcel": {"length": 1, "width": -2, "height": 1, "weight": 1}})),
            "INVALID_FILTER",
            "filter.parcel.width",
        ),
        (
            filter(json!({"parcel": {"length": 1, "width": 1, "height": "1", "weight": 1}})),
            "INVALID_FILTER",
            "filter.parcel.height",
        ),
        (
            filter(json!({"parcel": {"length": 1, "width": 1, "height": 1, "weight": 1, "depth": 1}})),
            "INVALID_FILTER",
            "filter.parcel.depth",
        ),
        (
            filter(json!({"open_at": "2026-02-29T10:00"})),
            "INVALID_FILTER",
            "filter.open_at",
        ),
        (
            filter(json!({"open_at": "2026-11-28T24:00"})),
            "INVALID_FILTER",
            "filter.open_at",
        ),
        (
            filter(json!({"open_at": "2026-11-28 10:00"})),
            "INVALID_FILTER",
            "filter.open_at",
        ),
        (
            filter(json!({"open_at": "2026-11-28T10:00:00"})),
            "INVALID_FILTER",
            "filter.open_at",
        ),
        (
            filter(json!({"open_at": 202611281000u64})),
            "INVALID_FILTER",
            "filter.open_at",
        ),
        (
            json!({"near": n, "pagination": {"limit": 0}}),
            "INVALID_PAGINATION",
            "pagination.limit",
        ),
        (
            json!({"near": n, "pagination": {"cursor": null}}),
            "INVALID_PAGINATION",
            "pagination.limit",
        ),
        (
            json!({"near": n, "pagination": {"limit": 5, "page": 2}}),
            "INVALID_PAGINATION",
            "pagination.page",
        ),
        (
            json!({"near": n, "pagination": {"limit": 5, "cursor": "nope"}}),
            "INVALID_CURSOR",
            "pagination.cursor",
        ),
    ];
    for (body, code, field) in cases {
        let answer = search(&app, body.clone()).await;
        let details = assert_error(&answer, 400, "ERROR_TYPE_BAD_REQUEST", code);
        assert_eq!(details["field"], field, "{body}");
    }
    // Nulls mean absent; a whole number written with a fraction is that number.
    for body in [
        json!({"near": n, "radius_m": null, "filter": null, "pagination": null}),
        json!({"near": n, "radius_m": 500.0, "filter": {"location_types": null, "parcel": null, "open_at": null}}),
        json!({"near": {"latitude": -90, "longitude": 180}, "radius_m": 50000}),
    ] {
        let answer = search(&app, body.clone()).await;
        assert_eq!(answer.status, StatusCode::OK, "{body}: {:#}", answer.body);
        assert_eq!(
            answer.body,
            json!({"results": [], "pagination": {"next_cursor": null, "has_next": false}})
        );
    }
    let unauthenticated = read(app.request(reqwest::Method::POST, SEARCH).json(&json!({"near": n}))).await;
    assert_error(&unauthenticated, 401, "ERROR_TYPE_UNAUTHORIZED", "UNAUTHENTICATED");
}

#[tokio::test]
async fn results_are_nearest_first_with_their_distance_and_record() {
    let app = TestApp::spawn().await;
    // Created farthest first; two at the same distance (east and west), created in that order.
    let (east, west) = ((NEAR.0, NEAR.1 + 0.01), (NEAR.0, NEAR.1 - 0.01));
    let points = [
        ("far", north(4900.0)),
        ("east", east),
        ("west", west),
        ("near", north(120.0)),
        ("out", north(5100.0)),
    ];
    let items: Vec<Value> = points
        .iter()
        .map(|(id, (lat, lon))| at(pickup_point(1), id, *lat, *lon))
        .collect();
    app.create(items).await;
    let answer = search(&app, json!({"near": near()})).await;
    assert_eq!(answer.status, StatusCode::OK, "{:#}", answer.body);
    let results = answer.body["results"].as_array().unwrap();
    let got: Vec<(&str, u64)> = results
        .iter()
        .map(|r| {
            (
                r["location"]["merchant_location_id"].as_str().unwrap(),
                r["distance_m"].as_u64().unwrap(),
            )
        })
        .collect();
    let d = |p: (f64, f64)| distance_m(NEAR, p).round() as u64;
    assert_eq!(
        got,
        [
            ("near", d(north(120.0))),
            ("east", d(east)),
            ("west", d(west)),
            ("far", d(north(4900.0)))
        ]
    );
    assert_eq!(d(east), d(west), "a tie is ordered by creation");
    // The result's location is the record of /v1/location/list, key for key.
    let listed = app
        .walk_locations(&app.key, &json!({"merchant_location_ids": ["near"]}), 10)
        .await;
    assert_eq!(results[0]["location"], listed[0]);
    assert_eq!(
        results[0].as_object().unwrap().keys().collect::<Vec<_>>(),
        ["distance_m", "location"]
    );
    // The radius is inclusive of the rounded distance; the default is 5000.
    let exact = d(north(4900.0));
    assert_eq!(found(&app, json!({"near": near(), "radius_m": exact})).await.len(), 4);
    assert_eq!(
        found(&app, json!({"near": near(), "radius_m": exact - 1})).await.len(),
        3
    );
    assert_eq!(found(&app, json!({"near": near(), "radius_m": 5200})).await.len(), 5);
}

#[tokio::test]
async fn a_parcel_fits_turned_and_to_the_edge() {
    let app = TestApp::spawn().await;
    // The pickup point's limits: 100 × 60 × 60 cm, 30 kg.
    app.create(vec![at(pickup_point(1), "pp", north(50.0).0, NEAR.1)]).await;
    let fits = |l: f64, w: f64, h: f64, kg: f64| {
        let app = &app;
        async move {
            let body =
                json!({"near": near(), "filter": {"parcel": {"length": l, "width": w, "height": h, "weight": kg}}});
            found(app, body).await == ["pp"]
        }
    };
    assert!(
        fits(100.0, 60.0, 60.0, 30.0).await,
        "equal on every edge and the weight"
    );
    assert!(fits(60.0, 100.0, 60.0, 1.0).await, "turned");
    assert!(fits(60.0, 60.0, 100.0, 1.0).await, "stood on end");
    assert!(fits(59.5, 59.5, 59.5, 29.99).await);
    assert!(!fits(100.5, 10.0, 10.0, 1.0).await, "longest side too long");
    assert!(
        !fits(61.0, 61.0, 10.0, 1.0).await,
        "two sides over 60: it cannot be turned to fit"
    );
    assert!(!fits(10.0, 10.0, 10.0, 30.01).await, "too heavy");
}

/// A location open Monday 09:00–21:00 with a 13:00–14:00 break, Saturday 10:00–24:00, no other
/// weekday; closed on 2026-11-30 (a Monday), 10:00–12:00 on 2026-12-05 (a Saturday).
fn scheduled() -> Value {
    let mut item = at(pickup_point(1), "sched", north(30.0).0, NEAR.1);
    item["working_schedule"] = json!([
        {"day": "MONDAY", "schedule": {"time_start": "09:00", "time_end": "21:00", "break": "13:00-14:00"}},
        {"day": "SATURDAY", "schedule": {"time_start": "10:00", "time_end": "24:00"}}
    ]);
    item["individual_schedule"] = json!([
        {"date": "2026-11-30", "schedule": {"time_start": "09:00", "time_end": "21:00"}, "is_works": false},
        {"date": "2026-12-05", "schedule": {"time_start": "10:00", "time_end": "12:00"}, "is_works": true}
    ]);
    item
}

#[tokio::test]
async fn open_at_follows_both_schedules_to_the_minute() {
    let app = TestApp::spawn().await;
    app.create(vec![scheduled()]).await;
    let cases = [
        ("2026-11-23T09:00", true, "a Monday at its opening"),
        ("2026-11-23T08:59", false, "a minute before"),
        ("2026-11-23T12:59", true, "just before the break"),
        ("2026-11-23T13:00", false, "the break's start"),
        ("2026-11-23T13:59", false, "the break's last minute"),
        ("2026-11-23T14:00", true, "the break's end"),
        ("2026-11-23T20:59", true, "the last minute"),
        ("2026-11-23T21:00", false, "the end is closed"),
        ("2026-11-24T12:00", false, "a Tuesday: no element"),
        ("2026-11-28T23:59", true, "a Saturday until 24:00"),
        ("2026-11-28T00:00", false, "before a Saturday's opening"),
        ("2026-11-30T12:00", false, "a Monday that is a holiday"),
        ("2026-12-05T11:59", true, "a Saturday with other hours"),
        ("2026-12-05T12:00", false, "after that day's other hours"),
        ("2026-12-05T23:00", false, "the weekday's hours do not apply that day"),
    ];
    for (at, open, why) in cases {
        let body = json!({"near": near(), "filter": {"open_at": at}});
        assert_eq!(found(&app, body).await == ["sched"], open, "{at}: {why}");
        assert_eq!(
            crate::search_model::open_at(&scheduled(), at),
            open,
            "the model agrees: {at}"
        );
    }
}

#[tokio::test]
async fn each_filter_alone_selects_what_its_row_says() {
    let app = TestApp::spawn().await;
    let (lat, lon) = north(100.0);
    // pickup point: PICKUP_POINT, all payments, FITTING, no returns; postamat: POSTAMAT, no cash;
    // warehouse: returns; store: WAREHOUSE + CLICK_AND_COLLECT, CARD, FITTING, returns.
    app.create(vec![
        at(pickup_point(1), "pp", lat, lon),
        at(postamat(1), "pm", lat, lon + 0.002),
        at(warehouse(1), "wh", lat, lon + 0.004),
        at(click_and_collect(1), "cc", lat, lon + 0.006),
    ])
    .await;
    let sorted = |mut v: Vec<String>| {
        v.sort();
        v
    };
    let cases = [
        (json!({"location_types": ["WAREHOUSE"]}), vec!["cc", "wh"]),
        (
            json!({"location_types": ["CLICK_AND_COLLECT", "PICKUP_POINT"]}),
            vec!["cc", "pm", "pp"],
        ),
        (json!({"pickup_point_type": "POSTAMAT"}), vec!["pm"]),
        (json!({"pickup_point_type": "PICKUP_POINT"}), vec!["pp"]),
        (json!({"payment_method": "CASH"}), vec!["pp"]),
        (json!({"payment_method": "CARD"}), vec!["cc", "pm", "pp"]),
        (json!({"pickup_services": ["FITTING"]}), vec!["cc", "pp"]),
        (json!({"accepts_returns": true}), vec!["cc", "wh"]),
        (json!({"accepts_returns": false}), vec!["pm", "pp"]),
        (
            json!({"payment_method": "CARD", "accepts_returns": true, "pickup_services": ["FITTING"]}),
            vec!["cc"],
        ),
        (json!({}), vec!["cc", "pm", "pp", "wh"]),
    ];
    for (filter, want) in cases {
        let got = sorted(found(&app, json!({"near": near(), "filter": filter})).await);
        assert_eq!(got, want, "{filter}");
    }
}

async fn change(app: &TestApp, action: &str, body: Value) -> Value {
    let answer = app
        .post(&format!("/v1/location/{action}"), &json!({"locations": [body]}))
        .await;
    assert_eq!(answer.status, StatusCode::OK, "{:#}", answer.body);
    answer.body["locations"][0].clone()
}

#[tokio::test]
async fn a_change_is_found_or_not_at_once() {
    let app = TestApp::spawn().await;
    let (lat, lon) = north(200.0);
    let created = app
        .create(vec![
            at(pickup_point(1), "a", lat, lon),
            at(pickup_point(2), "b", lat + 0.0001, lon),
            at(pickup_point(3), "c", north(1000.0).0, lon),
        ])
        .await;
    assert_eq!(created[1]["status"], "QUARANTINE", "b is 11 m from a");
    let everything = || json!({"near": near()});
    assert_eq!(
        found(&app, everything()).await,
        ["a", "c"],
        "a QUARANTINE location is not found"
    );
    change(&app, "archive", json!({"merchant_location_id": "c"})).await;
    assert_eq!(found(&app, everything()).await, ["a"], "an archived one neither");
    change(&app, "restore", json!({"merchant_location_id": "c"})).await;
    assert_eq!(found(&app, everything()).await, ["a", "c"], "a restored one is");
    // An operator approves b: found at once.
    let b = created[1]["location_id"].as_str().unwrap();
    app.store.approve_location(b).await.unwrap();
    assert_eq!(found(&app, everything()).await, ["a", "b", "c"]);
    // a moves 3 km away: found there, at its new distance, at once.
    let moved = at(pickup_point(1), "a", north(3000.0).0, NEAR.1);
    assert_eq!(change(&app, "update", moved).await["status"], "ACTIVE");
    let answer = search(&app, everything()).await;
    let results = answer.body["results"].as_array().unwrap();
    assert_eq!(results[2]["location"]["merchant_location_id"], "a");
    assert_eq!(results[2]["distance_m"], distance_m(NEAR, north(3000.0)).round() as u64);
    assert_eq!(found(&app, json!({"near": near(), "radius_m": 2000})).await, ["b", "c"]);
}

#[tokio::test]
async fn the_antimeridian_and_the_poles() {
    let app = TestApp::spawn().await;
    app.create(vec![
        at(warehouse(1), "east-of-180", 80.0, -179.9),
        at(warehouse(2), "pole", 89.99, 10.0),
        at(warehouse(3), "south", -89.995, -120.0),
    ])
    .await;
    let answer = search(&app, json!({"near": {"latitude": 80.0, "longitude": 179.9}})).await;
    assert_eq!(
        answer.body["results"][0]["location"]["merchant_location_id"],
        "east-of-180"
    );
    let d = answer.body["results"][0]["distance_m"].as_u64().unwrap();
    assert_eq!(d, distance_m((80.0, 179.9), (80.0, -179.9)).round() as u64);
    assert!((3800..4000).contains(&d), "3.9 km across the meridian: {d}");
    // On the other side of the north pole, and at the south pole.
    assert_eq!(
        found(&app, json!({"near": {"latitude": 89.99, "longitude": -170.0}})).await,
        ["pole"]
    );
    assert_eq!(
        found(
            &app,
            json!({"near": {"latitude": -90.0, "longitude": 0.0}, "radius_m": 1000})
        )
        .await,
        ["south"]
    );
}

#[tokio::test]
async fn merchants_see_only_their_own_and_cursors_are_bound_to_the_question() {
    let app = TestApp::spawn().await;
    let other = app.merchant_key("other").await;
    let items: Vec<Value> = (0..5)
        .map(|i| {
            at(
                warehouse(i),
                &format!("w{i}"),
                north(100.0 + f64::from(i) * 100.0).0,
                NEAR.1,
            )
        })
        .collect();
    app.create(items.clone()).await;
    app.create_as(&other, vec![at(warehouse(9), "theirs", north(50.0).0, NEAR.1)])
        .await;
    assert_eq!(
        found(&app, json!({"near": near()})).await,
        ["w0", "w1", "w2", "w3", "w4"]
    );

    let first = search(&app, json!({"near": near(), "pagination": {"limit": 2}})).await;
    let cursor = first.body["pagination"]["next_cursor"].clone();
    assert_eq!(first.body["pagination"]["has_next"], true);
    // The limit may change between pages.
    let next = search(
        &app,
        json!({"near": near(), "pagination": {"limit": 3, "cursor": cursor}}),
    )
    .await;
    assert_eq!(result_ids(&next.body), ["w2", "w3", "w4"]);
    assert_eq!(next.body["pagination"], json!({"next_cursor": null, "has_next": false}));

    let other_question = |body: Value| {
        let mut body = body;
        body["pagination"] = json!({"limit": 2, "cursor": cursor});
        body
    };
    let misuses = [
        other_question(json!({"near": {"latitude": NEAR.0, "longitude": NEAR.1 + 0.000001}})),
        other_question(json!({"near": near(), "radius_m": 4999})),
        other_question(json!({"near": near(), "filter": {"accepts_returns": true}})),
    ];
    for body in misuses {
        let details = assert_error(
            &search(&app, body.clone()).await,
            400,
            "ERROR_TYPE_BAD_REQUEST",
            "INVALID_CURSOR",
        );
        assert_eq!(details["field"], "pagination.cursor", "{body}");
    }
    // The same question, said otherwise, keeps its cursor: the default radius, a null filter.
    let same = other_question(json!({"near": near(), "radius_m": 5000, "filter": {"open_at": null}}));
    assert_eq!(search(&app, same).await.status, StatusCode::OK);
    // Another merchant's use of the cursor, a list's cursor here, and this cursor in the list.
    let theirs = app
        .post_as(SEARCH, &other, &other_question(json!({"near": near()})))
        .await;
    assert_error(&theirs, 400, "ERROR_TYPE_BAD_REQUEST", "INVALID_CURSOR");
    let listed = app.list_locations(&json!({"pagination": {"limit": 1}})).await;
    let list_cursor = listed.body["pagination"]["next_cursor"].clone();
    assert!(list_cursor.is_string());
    let crossed = search(
        &app,
        json!({"near": near(), "pagination": {"limit": 1, "cursor": list_cursor}}),
    )
    .await;
    assert_error(&crossed, 400, "ERROR_TYPE_BAD_REQUEST", "INVALID_CURSOR");
    let crossed = app
        .list_locations(&json!({"pagination": {"limit": 1, "cursor": cursor}}))
        .await;
    assert_error(&crossed, 400, "ERROR_TYPE_BAD_REQUEST", "INVALID_CURSOR");
}

#[tokio::test]
async fn a_limit_above_100_is_served_as_100_and_the_route_has_its_metrics() {
    let app = TestApp::spawn().await;
    let items: Vec<Value> = (0..105u32)
        .map(|i| {
            let (lat, lon) = (NEAR.0 + f64::from(i / 10) * 0.001, NEAR.1 + f64::from(i % 10) * 0.0015);
            at(warehouse(i), &format!("w{i}"), lat, lon)
        })
        .collect();
    app.create(items).await;
    let answer = search(&app, json!({"near": near(), "pagination": {"limit": 1000}})).await;
    assert_eq!(answer.body["results"].as_array().unwrap().len(), 100);
    assert_eq!(answer.body["pagination"]["has_next"], true);
    let answer = search(&app, json!({"near": near()})).await;
    assert_eq!(
        answer.body["results"].as_array().unwrap().len(),
        20,
        "20 when pagination is absent"
    );
    // The recorder is the process's: other tests' searches count too.
    let metrics = app.get_text("/metrics").await;
    let line = r#"http_requests_total{route="/v1/location/search",status="200"} "#;
    let count = metrics
        .lines()
        .find_map(|l| l.strip_prefix(line))
        .map(|n| n.parse::<u64>().unwrap());
    assert!(count.is_some_and(|n| n >= 2), "{metrics}");
    assert!(metrics.contains(r#"http_request_duration_seconds_count{route="/v1/location/search"}"#));
}

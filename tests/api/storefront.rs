//! Storefront keys and browsers (CONTRACT §13.1, §13.2): what a key that may be published in a web
//! page can call, its budget apart from the merchant's own, and the CORS headers a page needs.

use std::num::NonZeroU32;

use reqwest::Method;
use serde_json::{Value, json};
use storefront::app::Settings;
use storefront::rate_limit::Rate;

use crate::helpers::*;

const SEARCH: &str = "/v1/location/search";
const CATEGORIES: &str = "/v1/categories/list";
const SHOP: &str = "https://shop.example";
const EXPOSED: &str = "RateLimit, RateLimit-Policy, Retry-After, X-Request-Id";

fn header(answer: &Answer, name: &str) -> Option<String> {
    answer.headers.get(name).map(|v| v.to_str().unwrap().to_owned())
}

fn per_second(n: u32) -> Rate {
    Rate::PerSecond(NonZeroU32::new(n).unwrap())
}

fn near() -> Value {
    json!({"near": {"latitude": 10.0, "longitude": 37.6}, "radius_m": 50_000})
}

/// Every `/v1` operation a storefront key may not call, with a body that would change something.
fn forbidden(location_id: &str) -> Vec<(&'static str, Value)> {
    vec![
        ("/v1/location/create", json!({"locations": [warehouse(7)]})),
        ("/v1/location/list", json!({})),
        (
            "/v1/location/update",
            json!({"locations": [{"location_id": location_id, "name": "Renamed by a buyer"}]}),
        ),
        (
            "/v1/location/archive",
            json!({"locations": [{"location_id": location_id}]}),
        ),
        (
            "/v1/location/restore",
            json!({"locations": [{"location_id": location_id}]}),
        ),
    ]
}

#[tokio::test]
async fn a_storefront_key_searches_and_lists_categories_and_is_refused_everything_else() {
    let app = TestApp::spawn().await;
    let point = with(pickup_point(1), "/latitude", Some(json!(10.0)));
    let point = with(point, "/longitude", Some(json!(37.6)));
    let created = app.create(vec![point]).await;
    let id = created[0]["location_id"].as_str().unwrap().to_owned();
    let (key, _) = app.storefront_key().await;

    let found = app.post_as(SEARCH, &key, &near()).await;
    assert_eq!(found.status, 200, "{:#}", found.body);
    assert_eq!(found.body["results"][0]["location"]["location_id"], id.as_str());
    assert_eq!(app.post_as(CATEGORIES, &key, &json!({})).await.status, 200);

    for (path, body) in forbidden(&id) {
        let answer = app.post_as(path, &key, &body).await;
        assert_error(&answer, 403, "ERROR_TYPE_UNAUTHORIZED", "FORBIDDEN");
        let message = answer.body["message"].as_str().unwrap();
        assert!(message.contains("storefront scope"), "{path}: {message}");
        // It names what the key may call: the routes behind the storefront gate.
        assert!(
            message.contains(SEARCH) && message.contains(CATEGORIES),
            "{path}: {message}"
        );
        assert!(header(&answer, "ratelimit").is_none(), "{path}: no budget spent");
        // Refused before the body is read: a malformed one is refused the same way.
        let raw = app
            .request(Method::POST, path)
            .bearer_auth(&key)
            .header("content-type", "application/json")
            .body("{not json");
        assert_error(&read(raw).await, 403, "ERROR_TYPE_UNAUTHORIZED", "FORBIDDEN");
    }

    // Nothing was changed: one location, as created.
    let records = app.walk_locations(&app.key, &json!({}), 10).await;
    assert_eq!(records.len(), 1);
    assert_eq!(records[0]["name"], "Pickup point 1");
    assert_eq!(records[0]["status"], "ACTIVE");
    assert_eq!(records[0]["version"], 1);
    // The merchant's full key still calls everything.
    assert_eq!(app.post(SEARCH, &near()).await.status, 200);
}

#[tokio::test]
async fn a_revoked_storefront_key_is_refused() {
    let app = TestApp::spawn().await;
    let (key, key_id) = app.storefront_key().await;
    assert_eq!(app.post_as(SEARCH, &key, &near()).await.status, 200);
    assert!(app.store.revoke_key(&key_id).await.unwrap());
    let answer = app.post_as(SEARCH, &key, &near()).await;
    assert_error(&answer, 401, "ERROR_TYPE_UNAUTHORIZED", "INVALID_API_KEY");
    assert_eq!(app.post(SEARCH, &near()).await.status, 200, "the full key is untouched");
}

#[tokio::test]
async fn storefront_keys_spend_a_budget_of_their_own_per_merchant() {
    let app = TestApp::spawn_with_settings(Settings {
        rate: per_second(1),
        burst: 2,
        storefront_rate: per_second(1),
        storefront_burst: 3,
        ..Settings::default()
    })
    .await;
    let (key, _) = app.storefront_key().await;
    // Refused operations spend nothing.
    for _ in 0..5 {
        assert_eq!(app.post_as("/v1/location/list", &key, &json!({})).await.status, 403);
    }
    for left in [2, 1, 0] {
        let answer = app.post_as(SEARCH, &key, &near()).await;
        assert_eq!(answer.status, 200);
        assert_eq!(header(&answer, "ratelimit-policy").unwrap(), "\"storefront\";q=3;w=3");
        let state = header(&answer, "ratelimit").unwrap();
        assert!(state.starts_with(&format!("\"storefront\";r={left};")), "{state}");
    }
    let refused = app.post_as(CATEGORIES, &key, &json!({})).await;
    assert_error(&refused, 429, "ERROR_TYPE_RATE_LIMIT", "RATE_LIMITED");
    assert_eq!(header(&refused, "ratelimit-policy").unwrap(), "\"storefront\";q=3;w=3");
    assert!(header(&refused, "retry-after").is_some());

    // Buyers' traffic spent the storefront budget, not the merchant's own.
    for left in [1, 0] {
        let answer = app.post(CATEGORIES, &json!({})).await;
        assert_eq!(answer.status, 200);
        assert_eq!(header(&answer, "ratelimit-policy").unwrap(), "\"merchant\";q=2;w=2");
        assert!(
            header(&answer, "ratelimit")
                .unwrap()
                .starts_with(&format!("\"merchant\";r={left};"))
        );
    }
    assert_eq!(app.post(CATEGORIES, &json!({})).await.status, 429);
    // And the merchant's spent budget leaves its storefront keys' as it was (still empty here),
    // while another merchant's storefront budget is whole.
    assert_eq!(app.post_as(SEARCH, &key, &near()).await.status, 429);
    let other = app.merchant_key("other").await;
    let other_id = app
        .store
        .find_key(other.strip_prefix("sf_").unwrap().split_once('_').unwrap().0)
        .await
        .unwrap()
        .unwrap()
        .merchant
        .id;
    let other_storefront =
        storefront::auth::issue_key(app.store.as_ref(), &other_id, storefront::auth::KeyScope::Storefront)
            .await
            .unwrap()
            .api_key;
    let answer = app.post_as(SEARCH, &other_storefront, &near()).await;
    assert_eq!(answer.status, 200);
    assert!(header(&answer, "ratelimit").unwrap().starts_with("\"storefront\";r=2;"));
}

fn with_shop() -> Settings {
    Settings {
        cors_origins: vec![SHOP.to_owned()],
        rate: per_second(1),
        burst: 1,
        storefront_rate: per_second(1),
        storefront_burst: 1,
        ..Settings::default()
    }
}

fn preflight(app: &TestApp, path: &str, origin: &str) -> reqwest::RequestBuilder {
    app.request(Method::OPTIONS, path)
        .header("origin", origin)
        .header("access-control-request-method", "POST")
        .header("access-control-request-headers", "authorization, content-type")
}

fn access_control_headers(answer: &Answer) -> Vec<String> {
    answer
        .headers
        .keys()
        .map(|k| k.as_str().to_owned())
        .filter(|k| k.starts_with("access-control-"))
        .collect()
}

#[tokio::test]
async fn preflights_from_an_allowed_origin_are_answered_before_authentication_and_spend_nothing() {
    let app = TestApp::spawn_with_settings(with_shop()).await;
    for path in [SEARCH, CATEGORIES, "/v1/location/create"] {
        for _ in 0..3 {
            let answer = read(preflight(&app, path, SHOP)).await;
            assert_eq!(answer.status, 204, "{path}");
            assert_eq!(header(&answer, "access-control-allow-origin").unwrap(), SHOP);
            assert_eq!(header(&answer, "access-control-allow-methods").unwrap(), "POST");
            assert_eq!(
                header(&answer, "access-control-allow-headers").unwrap(),
                "authorization, content-type"
            );
            assert_eq!(header(&answer, "access-control-max-age").unwrap(), "600");
            assert_eq!(header(&answer, "access-control-expose-headers").unwrap(), EXPOSED);
            assert!(answer.headers.get_all("vary").iter().any(|v| v == "Origin"));
            assert!(header(&answer, "ratelimit").is_none());
            assert!(header(&answer, "x-request-id").is_some());
        }
    }
    // Nine preflights later the budget of one request is whole.
    let (key, _) = app.storefront_key().await;
    let answer = app.post_as(SEARCH, &key, &near()).await;
    assert_eq!(answer.status, 200);
    assert!(header(&answer, "ratelimit").unwrap().starts_with("\"storefront\";r=0;"));
}

#[tokio::test]
async fn another_origin_gets_no_cors_headers_and_its_preflight_is_refused() {
    let app = TestApp::spawn_with_settings(with_shop()).await;
    for origin in [
        "https://evil.example",
        "http://shop.example",
        "https://shop.example.evil.example",
        "null",
    ] {
        let answer = read(preflight(&app, SEARCH, origin)).await;
        assert_error(&answer, 403, "ERROR_TYPE_UNAUTHORIZED", "FORBIDDEN");
        assert_eq!(access_control_headers(&answer), Vec::<String>::new(), "{origin}");
    }
    let (key, _) = app.storefront_key().await;
    let answer = read(
        app.request(Method::POST, SEARCH)
            .bearer_auth(&key)
            .header("origin", "https://evil.example")
            .json(&near()),
    )
    .await;
    assert_eq!(
        answer.status, 200,
        "the server answers; the browser keeps it from the page"
    );
    assert_eq!(access_control_headers(&answer), Vec::<String>::new());

    // With no origin allowed at all, every preflight is refused.
    let closed = TestApp::spawn().await;
    assert_error(
        &read(preflight(&closed, SEARCH, SHOP)).await,
        403,
        "ERROR_TYPE_UNAUTHORIZED",
        "FORBIDDEN",
    );
}

#[tokio::test]
async fn answers_and_errors_to_an_allowed_origin_carry_the_cors_headers() {
    let app = TestApp::spawn_with_settings(with_shop()).await;
    let (key, _) = app.storefront_key().await;
    let from_shop = |path: &str, key: &str, body: &str| {
        app.request(Method::POST, path)
            .bearer_auth(key)
            .header("origin", SHOP)
            .header("content-type", "application/json")
            .body(body.to_owned())
    };
    let near = near().to_string();
    let answers = [
        (200, read(from_shop(SEARCH, &key, &near)).await),
        (400, read(from_shop(SEARCH, &app.key, r#"{"near": {}}"#)).await),
        (
            401,
            read(from_shop(SEARCH, "sf_000000000000000000000000_nope", &near)).await,
        ),
        (403, read(from_shop("/v1/location/create", &key, "{}")).await),
        (429, read(from_shop(SEARCH, &key, &near)).await),
        (404, read(from_shop("/v1/nowhere", &key, &near)).await),
    ];
    for (status, answer) in answers {
        assert_eq!(answer.status, status, "{:#}", answer.body);
        assert_eq!(
            header(&answer, "access-control-allow-origin").unwrap(),
            SHOP,
            "{status}"
        );
        assert_eq!(
            header(&answer, "access-control-expose-headers").unwrap(),
            EXPOSED,
            "{status}"
        );
        assert!(answer.headers.get_all("vary").iter().any(|v| v == "Origin"), "{status}");
        assert!(
            header(&answer, "access-control-allow-methods").is_none(),
            "{status}: preflights only"
        );
    }
    // A request with no Origin (a server, curl) gets no CORS headers.
    let answer = app.post(CATEGORIES, &json!({})).await;
    assert_eq!(access_control_headers(&answer), Vec::<String>::new());
    assert!(header(&answer, "vary").is_none_or(|v| !v.contains("Origin")));
}

/// Buyers see pickup points only (CONTRACT §22): a storefront key's search never finds a location
/// that is only a warehouse, also when its filter asks for warehouses; a full key's finds it.
#[tokio::test]
async fn a_storefront_key_never_finds_a_warehouse() {
    let app = TestApp::spawn().await;
    let at = |item: Value, metres: f64| {
        let item = with(item, "/latitude", Some(json!(10.0 + metres / 111_000.0)));
        with(item, "/longitude", Some(json!(37.6)))
    };
    // Far enough apart that neither is quarantined by the other.
    app.create(vec![at(warehouse(1), 0.0), at(pickup_point(2), 500.0)])
        .await;
    let (key, _) = app.storefront_key().await;
    let ids = |answer: &Answer| -> Vec<String> {
        assert_eq!(answer.status, 200, "{:#}", answer.body);
        result_ids(&answer.body)
    };
    let buyer = app.post_as(SEARCH, &key, &near()).await;
    assert_eq!(ids(&buyer), ["pp-2"], "the warehouse is the nearer, and not shown");
    let mut warehouses = near();
    warehouses["filter"] = json!({"location_types": ["WAREHOUSE"]});
    assert!(ids(&app.post_as(SEARCH, &key, &warehouses).await).is_empty());
    let mut either = near();
    either["filter"] = json!({"location_types": ["WAREHOUSE", "PICKUP_POINT"]});
    assert_eq!(ids(&app.post_as(SEARCH, &key, &either).await), ["pp-2"]);
    let merchant = app.post(SEARCH, &near()).await;
    assert_eq!(ids(&merchant), ["wh-1", "pp-2"], "a full key finds every type");
    let merchant = app.post(SEARCH, &warehouses).await;
    assert_eq!(ids(&merchant), ["wh-1"]);
}

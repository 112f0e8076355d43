//! Storefront keys a merchant makes (CONTRACT §25): made, listed and revoked through the API with a
//! full key; their allowed origins checked at the gate beside the scope (before the rate limit),
//! and allowed by CORS on every instance from the next request on.

use std::num::NonZeroU32;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use storefront::app::Settings;
use storefront::rate_limit::Rate;

use crate::helpers::*;

const SEARCH: &str = "/v1/location/search";
const SHOP: &str = "https://shop.example";

fn near() -> Value {
    json!({"near": {"latitude": 10.0, "longitude": 37.6}, "radius_m": 50_000})
}

fn header(answer: &Answer, name: &str) -> Option<String> {
    answer.headers.get(name).map(|v| v.to_str().unwrap().to_owned())
}

fn preflight(app: &TestApp, origin: &str) -> reqwest::RequestBuilder {
    app.request(Method::OPTIONS, SEARCH)
        .header("origin", origin)
        .header("access-control-request-method", "POST")
}

fn search_from(app: &TestApp, key: &str, origin: Option<&str>) -> reqwest::RequestBuilder {
    let request = app.request(Method::POST, SEARCH).bearer_auth(key).json(&near());
    match origin {
        Some(origin) => request.header("origin", origin),
        None => request,
    }
}

/// Makes a storefront key with `body`, expecting 200: its KEY object and the key itself.
async fn make(app: &TestApp, body: Value) -> (Value, String) {
    let answer = app.post("/v1/key/create", &body).await;
    assert_eq!(answer.status, StatusCode::OK, "{:#}", answer.body);
    let api_key = answer.body["api_key"].as_str().unwrap().to_owned();
    (answer.body["key"].clone(), api_key)
}

/// Every key of the app's merchant, page by page (`limit` a page).
async fn all_keys(app: &TestApp, limit: usize) -> Vec<Value> {
    let mut keys = Vec::new();
    let mut cursor = Value::Null;
    loop {
        let page = app
            .post(
                "/v1/key/list",
                &json!({"pagination": {"limit": limit, "cursor": cursor}}),
            )
            .await;
        assert_eq!(page.status, StatusCode::OK, "{:#}", page.body);
        keys.extend(page.body["keys"].as_array().unwrap().iter().cloned());
        if page.body["pagination"]["has_next"] == false {
            assert_eq!(page.body["pagination"]["next_cursor"], Value::Null);
            return keys;
        }
        cursor = page.body["pagination"]["next_cursor"].clone();
    }
}

#[tokio::test]
async fn a_merchant_makes_lists_and_revokes_its_storefront_keys() {
    let app = TestApp::spawn().await;
    let (key, api_key) = make(
        &app,
        json!({"label": "Main shop", "allowed_origins": [SHOP, "http://localhost:3000"]}),
    )
    .await;
    let key_id = key["key_id"].as_str().unwrap().to_owned();
    assert!(api_key.starts_with(&format!("sf_{key_id}_")), "{api_key}");
    let (_, text) = app.post_text("/v1/key/list", &json!({})).await;
    let listed: Value = serde_json::from_str(&text).unwrap();
    let second = &text[text.find(r#"{"key_id":"#).unwrap() + 1..];
    let second = &second[second.find(r#"{"key_id":"#).unwrap()..];
    assert_eq!(
        keys_in_order(&second[..=second.find('}').unwrap()]),
        [
            "key_id",
            "scope",
            "label",
            "allowed_origins",
            "created_at",
            "revoked_at"
        ],
        "{listed:#}"
    );
    assert_eq!(key["scope"], "storefront");
    assert_eq!(key["label"], "Main shop");
    assert_eq!(key["allowed_origins"], json!([SHOP, "http://localhost:3000"]));
    assert_eq!(key["revoked_at"], Value::Null);
    // A storefront key: it searches, and may not make keys.
    assert_eq!(app.post_as(SEARCH, &api_key, &near()).await.status, StatusCode::OK);
    let refused = app.post_as("/v1/key/create", &api_key, &json!({"label": "mine"})).await;
    assert_error(&refused, 403, "ERROR_TYPE_UNAUTHORIZED", "FORBIDDEN");
    let (_, any_origin) = make(&app, json!({"label": "Any page", "allowed_origins": null})).await;

    // Every key, the merchant's own full key first, oldest first; the same one page at a time.
    let keys = all_keys(&app, 100).await;
    assert_eq!(keys.len(), 3, "{keys:#?}");
    assert_eq!(keys[0]["scope"], "full");
    assert_eq!(keys[0]["label"], Value::Null);
    assert_eq!(keys[0]["allowed_origins"], Value::Null);
    assert_eq!(keys[1], key);
    assert_eq!(keys[2]["label"], "Any page");
    assert_eq!(keys[2]["allowed_origins"], Value::Null);
    assert_eq!(all_keys(&app, 1).await, keys);
    assert!(
        !keys.iter().any(|k| k.to_string().contains(&api_key)),
        "never the key itself"
    );
    let other = app.merchant_key("other").await;
    let theirs = app.post_as("/v1/key/list", &other, &json!({})).await;
    assert_eq!(theirs.body["keys"].as_array().unwrap().len(), 1, "{:#}", theirs.body);

    // Revoked: refused from the next request on; revoking it again answers it unchanged.
    let revoked = app.post("/v1/key/revoke", &json!({"key_id": key_id})).await;
    assert_eq!(revoked.status, StatusCode::OK, "{:#}", revoked.body);
    assert!(revoked.body["key"]["revoked_at"].is_string());
    assert_eq!(revoked.body["key"]["label"], "Main shop");
    assert_error(
        &app.post_as(SEARCH, &api_key, &near()).await,
        401,
        "ERROR_TYPE_UNAUTHORIZED",
        "INVALID_API_KEY",
    );
    let again = app.post("/v1/key/revoke", &json!({"key_id": key_id})).await;
    assert_eq!(again.status, StatusCode::OK);
    assert_eq!(again.body, revoked.body);
    assert_eq!(all_keys(&app, 100).await[1], revoked.body["key"]);
    assert_eq!(app.post_as(SEARCH, &any_origin, &near()).await.status, StatusCode::OK);

    // The merchant's own full key is the operator's to revoke; other merchants' keys are unknown.
    let full_id = keys[0]["key_id"].clone();
    error_at(
        &app.post("/v1/key/revoke", &json!({"key_id": full_id})).await,
        "INVALID_REQUEST",
        "key_id",
    );
    assert_eq!(app.post("/v1/location/list", &json!({})).await.status, StatusCode::OK);
    let other_id = theirs.body["keys"][0]["key_id"].clone();
    let other_storefront = app.post_as("/v1/key/create", &other, &json!({"label": "theirs"})).await;
    for id in [
        other_id,
        other_storefront.body["key"]["key_id"].clone(),
        json!("000000000000000000000000"),
    ] {
        error_at(
            &app.post("/v1/key/revoke", &json!({"key_id": id})).await,
            "NOT_FOUND",
            "key_id",
        );
    }
    for body in [json!({}), json!({"key_id": 7}), json!({"key_id": null})] {
        error_at(&app.post("/v1/key/revoke", &body).await, "INVALID_REQUEST", "key_id");
    }
    let still = app
        .post_as(SEARCH, &other, &json!({"near": {"latitude": 1.0, "longitude": 1.0}}))
        .await;
    assert_eq!(still.status, StatusCode::OK, "the other merchant's keys still work");
}

#[tokio::test]
async fn each_rule_of_a_new_key_is_refused_at_its_field_and_nothing_is_stored() {
    let app = TestApp::spawn().await;
    let cases = [
        (json!({}), "label"),
        (json!({"label": null}), "label"),
        (json!({"label": ""}), "label"),
        (json!({"label": 5}), "label"),
        (json!({"label": "x".repeat(101)}), "label"),
        (json!({"label": "shop", "allowed_origins": []}), "allowed_origins"),
        (json!({"label": "shop", "allowed_origins": SHOP}), "allowed_origins"),
        (
            json!({"label": "shop", "allowed_origins": vec![SHOP; 11]}),
            "allowed_origins",
        ),
        (
            json!({"label": "shop", "allowed_origins": [SHOP, "https://Shop.example"]}),
            "allowed_origins[1]",
        ),
        (
            json!({"label": "shop", "allowed_origins": ["https://shop.example/"]}),
            "allowed_origins[0]",
        ),
        (
            json!({"label": "shop", "allowed_origins": ["http://shop.example"]}),
            "allowed_origins[0]",
        ),
        (
            json!({"label": "shop", "allowed_origins": [SHOP, "https://shop.example:443"]}),
            "allowed_origins[1]",
        ),
        (json!({"label": "shop", "allowed_origins": [7]}), "allowed_origins[0]"),
        (json!({"label": "shop", "colour": "red"}), "colour"),
    ];
    for (body, field) in cases {
        error_at(&app.post("/v1/key/create", &body).await, "INVALID_REQUEST", field);
    }
    assert_eq!(all_keys(&app, 100).await.len(), 1, "only the merchant's own key");
    // The bounds themselves are allowed.
    let (key, _) = make(
        &app,
        json!({"label": "я".repeat(100), "allowed_origins": vec![SHOP; 10]}),
    )
    .await;
    assert_eq!(key["allowed_origins"].as_array().unwrap().len(), 10);
}

#[tokio::test]
async fn a_merchant_has_at_most_twenty_storefront_keys_not_revoked() {
    let app = TestApp::spawn().await;
    // One issued by the operator counts too.
    let (_, operator_key_id) = app.storefront_key().await;
    for n in 0..19 {
        make(&app, json!({"label": format!("shop {n}")})).await;
    }
    let refused = app.post("/v1/key/create", &json!({"label": "one more"})).await;
    error_at(&refused, "TOO_MANY_ITEMS", "label");
    assert_eq!(all_keys(&app, 7).await.len(), 21, "nothing stored");
    let revoked = app.post("/v1/key/revoke", &json!({"key_id": operator_key_id})).await;
    assert_eq!(revoked.status, StatusCode::OK, "{:#}", revoked.body);
    assert_eq!(revoked.body["key"]["label"], Value::Null);
    make(&app, json!({"label": "one more"})).await;
    // Another merchant is not bounded by this one's keys.
    let other = app.merchant_key("other").await;
    let theirs = app.post_as("/v1/key/create", &other, &json!({"label": "theirs"})).await;
    assert_eq!(theirs.status, StatusCode::OK);
}

fn per_minute(n: u32) -> Rate {
    Rate::PerMinute(NonZeroU32::new(n).unwrap())
}

#[tokio::test]
async fn a_key_s_origins_are_checked_before_the_rate_limit_and_allowed_by_cors_on_every_instance() {
    let settings = Settings {
        storefront_rate: per_minute(1),
        storefront_burst: 5,
        ..Settings::default()
    };
    let app = TestApp::spawn_with_settings(settings.clone()).await;
    let other = app.another_instance(settings).await;
    // No key names the shop yet: its pages may not call.
    assert_eq!(read(preflight(&other, SHOP)).await.status, StatusCode::FORBIDDEN);
    let (key, shop_key) = make(&app, json!({"label": "Main shop", "allowed_origins": [SHOP]})).await;

    for instance in [&app, &other] {
        let answer = read(preflight(instance, SHOP)).await;
        assert_eq!(answer.status, StatusCode::NO_CONTENT);
        assert_eq!(header(&answer, "access-control-allow-origin").unwrap(), SHOP);
        let answer = read(preflight(instance, "https://evil.example")).await;
        assert_error(&answer, 403, "ERROR_TYPE_UNAUTHORIZED", "FORBIDDEN");
    }
    let served = read(search_from(&app, &shop_key, Some(SHOP))).await;
    assert_eq!(served.status, StatusCode::OK, "{:#}", served.body);
    assert_eq!(header(&served, "access-control-allow-origin").unwrap(), SHOP);
    assert!(header(&served, "ratelimit").unwrap().starts_with("\"storefront\";r=4;"));

    // From another page: 403, nothing spent; from no page at all (a server): served.
    for origin in ["https://evil.example", "http://localhost:3000", "null"] {
        let refused = read(search_from(&app, &shop_key, Some(origin))).await;
        assert_error(&refused, 403, "ERROR_TYPE_UNAUTHORIZED", "FORBIDDEN");
        assert!(header(&refused, "ratelimit").is_none(), "{origin}");
    }
    let served = read(search_from(&app, &shop_key, None)).await;
    assert_eq!(served.status, StatusCode::OK);
    assert!(header(&served, "ratelimit").unwrap().starts_with("\"storefront\";r=3;"));
    let served = read(search_from(&other, &shop_key, Some(SHOP))).await;
    assert_eq!(served.status, StatusCode::OK, "{:#}", served.body);
    assert_eq!(header(&served, "access-control-allow-origin").unwrap(), SHOP);

    // A key that names no origin is served from any page; the browser allows only the shop's.
    let (_, open_key) = make(&app, json!({"label": "Any page"})).await;
    let served = read(search_from(&app, &open_key, Some("https://evil.example"))).await;
    assert_eq!(served.status, StatusCode::OK);
    assert!(header(&served, "access-control-allow-origin").is_none());

    // Revoked on one instance: the key and its origin are refused on the other at once.
    let revoked = app.post("/v1/key/revoke", &json!({"key_id": key["key_id"]})).await;
    assert_eq!(revoked.status, StatusCode::OK);
    assert_eq!(read(preflight(&other, SHOP)).await.status, StatusCode::FORBIDDEN);
    assert_eq!(read(preflight(&app, SHOP)).await.status, StatusCode::FORBIDDEN);
    assert_error(
        &read(search_from(&other, &shop_key, Some(SHOP))).await,
        401,
        "ERROR_TYPE_UNAUTHORIZED",
        "INVALID_API_KEY",
    );
    // A new key naming another origin opens that one, on the other instance too.
    make(
        &app,
        json!({"label": "Dev", "allowed_origins": ["http://localhost:3000"]}),
    )
    .await;
    assert_eq!(
        read(preflight(&other, "http://localhost:3000")).await.status,
        StatusCode::NO_CONTENT
    );
}

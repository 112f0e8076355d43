//! Request-level answers (CONTRACT §3) for the create endpoint, and the operational endpoints.

use reqwest::Method;
use serde_json::{Value, json};
use storefront::store::KeyScope;

use crate::helpers::*;

const CREATE: &str = "/v1/location/create";

fn raw(app: &TestApp, content_type: Option<&str>, body: impl Into<reqwest::Body>) -> reqwest::RequestBuilder {
    let request = app.request(Method::POST, CREATE).bearer_auth(&app.key).body(body);
    match content_type {
        Some(ct) => request.header("content-type", ct),
        None => request,
    }
}

#[tokio::test]
async fn content_type_must_be_json_with_an_optional_charset() {
    let app = TestApp::spawn().await;
    for ct in [
        None,
        Some("text/plain"),
        Some("application/x-www-form-urlencoded"),
        Some("application/json; boundary=x"),
    ] {
        let answer = read(raw(&app, ct, r#"{"locations":[]}"#)).await;
        assert_error(&answer, 400, "ERROR_TYPE_BAD_REQUEST", "UNSUPPORTED_MEDIA_TYPE");
    }
    for ct in ["application/json; charset=utf-8", "APPLICATION/JSON"] {
        let answer = read(raw(&app, Some(ct), r#"{"locations":[]}"#)).await;
        assert_eq!(answer.status, 200, "{ct}");
    }
    // A body sent compressed (or declared so) is refused as such, not read as broken JSON.
    for coding in ["gzip", "br"] {
        let answer =
            read(raw(&app, Some("application/json"), r#"{"locations":[]}"#).header("content-encoding", coding)).await;
        assert_error(&answer, 400, "ERROR_TYPE_BAD_REQUEST", "UNSUPPORTED_MEDIA_TYPE");
        let message = answer.body["message"].as_str().unwrap();
        assert!(message.starts_with("Content-Encoding"), "{message}");
    }
    let answer =
        read(raw(&app, Some("application/json"), r#"{"locations":[]}"#).header("content-encoding", "identity")).await;
    assert_eq!(answer.status, 200);
    // Declared twice, the body is not declared JSON, whichever comes first.
    for (first, second) in [("application/json", "text/plain"), ("text/plain", "application/json")] {
        let answer = read(raw(&app, Some(first), r#"{"locations":[]}"#).header("content-type", second)).await;
        assert_error(&answer, 400, "ERROR_TYPE_BAD_REQUEST", "UNSUPPORTED_MEDIA_TYPE");
    }
}

#[tokio::test]
async fn an_empty_body_is_an_empty_object_whatever_its_content_type() {
    let app = TestApp::spawn().await;
    for ct in [None, Some("text/plain"), Some("application/json")] {
        let answer = read(raw(&app, ct, "")).await;
        let details = assert_error(&answer, 400, "ERROR_TYPE_BAD_REQUEST", "INVALID_REQUEST");
        assert_eq!(details, json!({"field": "locations"}));
    }
}

#[tokio::test]
async fn a_body_over_8_mib_is_refused() {
    let app = TestApp::spawn().await;
    let body = format!(r#"{{"locations":[],"pad":"{}"}}"#, "x".repeat(8 * 1024 * 1024));
    let answer = read(raw(&app, Some("application/json"), body)).await;
    assert_error(&answer, 400, "ERROR_TYPE_BAD_REQUEST", "PAYLOAD_TOO_LARGE");
    // Exactly 8 MiB is read (and then judged on its shape).
    let mut exact = format!(r#"{{"locations":[],"pad":"{}"}}"#, "x".repeat(8 * 1024 * 1024 - 30));
    while exact.len() < 8 * 1024 * 1024 {
        exact.insert(1, ' ');
    }
    assert_eq!(exact.len(), 8 * 1024 * 1024);
    let answer = read(raw(&app, Some("application/json"), exact)).await;
    assert_eq!(
        assert_error(&answer, 400, "ERROR_TYPE_BAD_REQUEST", "INVALID_REQUEST"),
        json!({"field": "pad"})
    );
    // Streamed without a Content-Length, too.
    let chunks: Vec<Result<Vec<u8>, std::io::Error>> = (0..9).map(|_| Ok(vec![b' '; 1024 * 1024])).collect();
    let stream = reqwest::Body::wrap_stream(futures_util::stream::iter(chunks));
    let answer = read(raw(&app, Some("application/json"), stream)).await;
    assert_error(&answer, 400, "ERROR_TYPE_BAD_REQUEST", "PAYLOAD_TOO_LARGE");
}

#[tokio::test]
async fn a_body_refused_by_its_headers_is_never_asked_for_when_the_client_waits_to_be_asked() {
    use tokio::io::AsyncWriteExt;
    let app = TestApp::spawn().await;
    let address = app.base.strip_prefix("http://").unwrap().to_owned();
    let head = |content_type: &str, length: usize| {
        format!(
            "POST {CREATE} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {}\r\nContent-Type: {content_type}\r\n\
             Content-Length: {length}\r\nExpect: 100-continue\r\n\r\n",
            app.key
        )
    };
    for (head, code) in [
        (head("application/json", 9 * 1024 * 1024), "PAYLOAD_TOO_LARGE"),
        (head("text/plain", 1024), "UNSUPPORTED_MEDIA_TYPE"),
    ] {
        let mut stream = tokio::net::TcpStream::connect(&address).await.unwrap();
        stream.write_all(head.as_bytes()).await.unwrap();
        // The refusal itself, not `100 Continue`: the body is never asked for...
        let answer = read_raw_answer(&mut stream).await;
        assert!(answer.starts_with("HTTP/1.1 400 "), "{answer}");
        assert!(answer.contains(&format!(r#""code":"{code}""#)), "{answer}");
        // ...and the connection ends after it, the body unsent.
        assert!(closed_within(&mut stream, std::time::Duration::from_secs(10)).await);
    }
    // A body the headers do not refuse is asked for, and read.
    let body = r#"{"locations":[]}"#;
    let mut stream = tokio::net::TcpStream::connect(&address).await.unwrap();
    stream
        .write_all(head("application/json", body.len()).as_bytes())
        .await
        .unwrap();
    let answer = read_raw_answer(&mut stream).await;
    assert!(answer.starts_with("HTTP/1.1 100 Continue\r\n"), "{answer}");
    stream.write_all(body.as_bytes()).await.unwrap();
    let answer = read_raw_answer(&mut stream).await;
    assert!(answer.starts_with("HTTP/1.1 200 "), "{answer}");
}

#[tokio::test]
async fn malformed_json_reports_line_and_column() {
    let app = TestApp::spawn().await;
    let answer = read(raw(&app, Some("application/json"), "{\n  \"locations\": [1,]\n}")).await;
    let details = assert_error(&answer, 400, "ERROR_TYPE_BAD_REQUEST", "MALFORMED_JSON");
    assert_eq!(details, json!({"line": 2, "column": 19}));
    for bad in ["{", "nul", "{\"locations\": []} x", "\u{feff}{}"] {
        let answer = read(raw(&app, Some("application/json"), bad)).await;
        let details = assert_error(&answer, 400, "ERROR_TYPE_BAD_REQUEST", "MALFORMED_JSON");
        assert!(
            details["line"].as_u64().unwrap() >= 1 && details["column"].as_u64().is_some(),
            "{bad}"
        );
    }
    let answer = read(raw(&app, Some("application/json"), vec![b'{', 0xff, b'}'])).await;
    assert_error(&answer, 400, "ERROR_TYPE_BAD_REQUEST", "MALFORMED_JSON");
}

#[tokio::test]
async fn the_request_must_have_the_create_shape() {
    let app = TestApp::spawn().await;
    let cases = [
        (json!([]), ""),
        (json!("locations"), ""),
        (json!({"locations": [], "merchant": "x"}), "merchant"),
        (json!({}), "locations"),
        (json!({"locations": null}), "locations"),
        (json!({"locations": {"0": {}}}), "locations"),
        (json!({"locations": "[]"}), "locations"),
    ];
    for (body, field) in cases {
        let answer = app.post(CREATE, &body).await;
        let details = assert_error(&answer, 400, "ERROR_TYPE_BAD_REQUEST", "INVALID_REQUEST");
        assert_eq!(details, json!({"field": field}), "{body}");
    }
}

/// The body reads as JSON defines it: escapes decoded in keys and values; a repeated key counts
/// once, with its last value (unknown keys: one error each, in byte order, after the known ones).
#[tokio::test]
async fn escapes_and_repeated_keys_read_as_json_defines_them() {
    let app = TestApp::spawn().await;
    let first = serde_json::to_string(&warehouse(1)).unwrap();
    // An invalid `name` first, then the item's own, then an escaped key spelling `name` last.
    let first = first.replacen('{', r#"{"name":7,"#, 1);
    let first = format!(
        r#"{},"n\u0061me":"Dock \"B\" \u00e9"}}"#,
        first.strip_suffix('}').unwrap()
    );
    let second = serde_json::to_string(&warehouse(2)).unwrap();
    let second = format!(r#"{},"zz":1,"aa":2,"zz":3}}"#, second.strip_suffix('}').unwrap());
    let body = format!(r#"{{"locations":"not these","locations":[{first},{second}]}}"#);
    let answer = read(raw(&app, Some("application/json"), body)).await;
    assert_eq!(answer.status, 200, "{:#}", answer.body);
    let results = answer.body["locations"].as_array().unwrap();
    assert_eq!(results[0]["status"], "ACTIVE", "{:#}", results[0]);
    assert_eq!(results[0]["name"], "Dock \"B\" \u{e9}");
    assert_eq!(
        field_codes(&results[1]),
        [
            ("locations[1].aa".to_owned(), "SCHEMA_MISMATCH".to_owned()),
            ("locations[1].zz".to_owned(), "SCHEMA_MISMATCH".to_owned())
        ]
    );

    let answer = read(raw(&app, Some("application/json"), r#"{"z":1,"b":2,"locations":[]}"#)).await;
    let details = assert_error(&answer, 400, "ERROR_TYPE_BAD_REQUEST", "INVALID_REQUEST");
    assert_eq!(details, json!({"field": "b"}));
}

#[tokio::test]
async fn more_than_200_locations_is_refused_whole() {
    let app = TestApp::spawn().await;
    let items: Vec<Value> = (0..201).map(warehouse).collect();
    let answer = app.post(CREATE, &json!({"locations": items})).await;
    let details = assert_error(&answer, 400, "ERROR_TYPE_BAD_REQUEST", "TOO_MANY_ITEMS");
    assert_eq!(details, json!({"field": "locations", "max": 200, "actual": 201}));
    // Nothing was stored: the first item is new on a later request.
    let results = app.create(vec![warehouse(0)]).await;
    let retry = app.create(vec![warehouse(0)]).await;
    assert_eq!(results[0]["location_id"], retry[0]["location_id"]);
    assert_eq!(results[0]["status"], "ACTIVE");
}

#[tokio::test]
async fn authentication_comes_first_and_is_strict() {
    let app = TestApp::spawn().await;
    let send = |auth: Option<&'static str>, body: &'static str| {
        let request = app
            .request(Method::POST, CREATE)
            .header("content-type", "text/plain")
            .body(body);
        match auth {
            Some(value) => request.header("authorization", value),
            None => request,
        }
    };
    // A malformed body and a wrong content type are not looked at before the key.
    for (auth, code) in [
        (None, "UNAUTHENTICATED"),
        (Some("Basic dXNlcjpwYXNz"), "UNAUTHENTICATED"),
        (Some("Bearer"), "UNAUTHENTICATED"),
        (Some("Bearer two tokens"), "UNAUTHENTICATED"),
        (Some("Bearer sf_000000000000000000000000_abc"), "INVALID_API_KEY"),
        (Some("Bearer not-a-key"), "INVALID_API_KEY"),
    ] {
        let answer = read(send(auth, "{not json")).await;
        assert_error(&answer, 401, "ERROR_TYPE_UNAUTHORIZED", code);
    }
    // A valid key with a wrong secret.
    let secret = secret_of(&app.key);
    let wrong = format!(
        "{}AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
        &app.key[..app.key.len() - secret.len()]
    );
    let answer = app.post_as(CREATE, &wrong, &json!({"locations": []})).await;
    assert_error(&answer, 401, "ERROR_TYPE_UNAUTHORIZED", "INVALID_API_KEY");
    // The scheme word in any case.
    let answer = read(
        app.request(Method::POST, CREATE)
            .header("authorization", format!("bEaReR {}", app.key))
            .header("content-type", "application/json")
            .body(r#"{"locations":[]}"#),
    )
    .await;
    assert_eq!(answer.status, 200);
    // Two Authorization headers, even two valid keys of two merchants: neither is taken.
    let other = app.merchant_key("other").await;
    for keys in [[&app.key, &other], [&app.key, &app.key]] {
        let answer = read(
            app.request(Method::POST, "/v1/location/list")
                .header("authorization", format!("Bearer {}", keys[0]))
                .header("authorization", format!("Bearer {}", keys[1]))
                .header("content-type", "application/json")
                .body("{}"),
        )
        .await;
        assert_error(&answer, 401, "ERROR_TYPE_UNAUTHORIZED", "UNAUTHENTICATED");
    }
}

#[tokio::test]
async fn a_revoked_key_is_refused_from_the_next_request_on() {
    let app = TestApp::spawn().await;
    let issued = storefront::auth::issue_key(app.store.as_ref(), &app.merchant_id().await, KeyScope::Full)
        .await
        .unwrap();
    assert_eq!(
        app.post_as(CREATE, &issued.api_key, &json!({"locations": []}))
            .await
            .status,
        200
    );
    assert!(app.store.revoke_key(&issued.key_id).await.unwrap());
    let answer = app.post_as(CREATE, &issued.api_key, &json!({"locations": []})).await;
    assert_error(&answer, 401, "ERROR_TYPE_UNAUTHORIZED", "INVALID_API_KEY");
    assert!(
        !app.store.revoke_key(&issued.key_id).await.unwrap(),
        "revoking twice reports no active key"
    );
    // The merchant's other key still works.
    assert_eq!(app.post(CREATE, &json!({"locations": []})).await.status, 200);
}

#[tokio::test]
async fn unknown_routes_and_methods_answer_in_the_contract_body_before_auth() {
    let app = TestApp::spawn().await;
    let answer = read(app.request(Method::POST, "/v1/location/delete")).await;
    assert_error(&answer, 404, "ERROR_TYPE_UNSPECIFIED", "NOT_FOUND");
    let answer = read(app.request(Method::GET, CREATE)).await;
    assert_error(&answer, 405, "ERROR_TYPE_UNSPECIFIED", "METHOD_NOT_ALLOWED");
    let answer = read(app.request(Method::PUT, CREATE).bearer_auth(&app.key)).await;
    assert_error(&answer, 405, "ERROR_TYPE_UNSPECIFIED", "METHOD_NOT_ALLOWED");
}

#[tokio::test]
async fn every_answer_carries_a_request_id() {
    let app = TestApp::spawn().await;
    let ok = app.post(CREATE, &json!({"locations": []})).await;
    assert!(ok.headers.contains_key("x-request-id"));
    assert!(!ok.headers.contains_key("cache-control"));
    let health = read(app.request(Method::GET, "/healthz")).await;
    assert_eq!(health.body, json!({"status": "ok"}));
    assert!(health.headers.contains_key("x-request-id"));
    let mine = read(
        app.request(Method::GET, "/nowhere")
            .header("x-request-id", "trace-me-42"),
    )
    .await;
    assert_eq!(mine.headers["x-request-id"], "trace-me-42");
    let ids: std::collections::HashSet<String> = [ok, health]
        .iter()
        .map(|a| a.headers["x-request-id"].to_str().unwrap().to_owned())
        .collect();
    assert_eq!(ids.len(), 2, "ids are unique per request");
}

#[tokio::test]
async fn readyz_reflects_the_database() {
    let app = TestApp::spawn().await;
    let answer = read(app.request(Method::GET, "/readyz")).await;
    assert_eq!(answer.status, 200);
    let broken = faulty_app(Fault::Fail).await;
    let answer = read(broken.request(Method::GET, "/readyz")).await;
    assert_eq!(answer.status, 503);
    assert_eq!(read(broken.request(Method::GET, "/healthz")).await.status, 200);
}

#[tokio::test]
async fn a_panic_is_a_500_with_the_request_id_and_the_server_keeps_serving() {
    let app = faulty_app(Fault::Panic).await;
    for _ in 0..3 {
        let answer = app.post(CREATE, &json!({"locations": [warehouse(1)]})).await;
        let details = assert_error(&answer, 500, "ERROR_TYPE_INTERNAL", "INTERNAL");
        assert_eq!(
            details,
            json!({"request_id": answer.headers["x-request-id"].to_str().unwrap()})
        );
        assert!(
            !answer.body.to_string().contains("injected"),
            "no internals in the body"
        );
    }
    assert_eq!(read(app.request(Method::GET, "/healthz")).await.status, 200);
}

#[tokio::test]
async fn a_database_failure_is_a_500_without_internals() {
    let app = faulty_app(Fault::Fail).await;
    let answer = app.post(CREATE, &json!({"locations": [warehouse(1)]})).await;
    let details = assert_error(&answer, 500, "ERROR_TYPE_INTERNAL", "INTERNAL");
    assert!(details["request_id"].is_string());
    let text = answer.body.to_string();
    assert!(!text.contains("SQLITE") && !text.contains("/var/lib"), "{text}");
    // Invalid items never reach the store: an all-invalid batch still answers 200.
    let answer = app.post(CREATE, &json!({"locations": [json!(1)]})).await;
    assert_eq!(answer.status, 200, "{:#}", answer.body);
}

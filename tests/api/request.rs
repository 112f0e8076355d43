//! Request-level answers (CONTRACT §3) for the create endpoint, and the operational endpoints.

use std::sync::Arc;

use async_trait::async_trait;
use reqwest::Method;
use serde_json::{Value, json};
use storefront::domain::category::Category;
use storefront::domain::category::import::{Mode, Parsed, Problem};
use storefront::domain::event::{EventPage, EventQuery};
use storefront::domain::location::batch::{NewLocation, Outcome};
use storefront::domain::location::change::{ChangePlan, Decision};
use storefront::domain::location::listing::{LocationPage, LocationQuery};
use storefront::domain::location::search::{SearchPage, SearchQuery};
use storefront::store::{
    Approval, Imported, KeyScope, MerchantRef, NewKey, QuarantinedLocation, ReadFrom, Store, StoreError, StoredKey,
    WriteFor,
};

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

/// A real store with one fault switched on.
pub struct FaultyStore {
    inner: Arc<dyn Store>,
    fault: Fault,
    /// How many times an API key was looked up.
    key_lookups: Arc<std::sync::atomic::AtomicUsize>,
}

#[derive(Clone, Copy, PartialEq)]
pub enum Fault {
    Panic,
    Fail,
    /// Creates wait this long, then go to the real store (which honours the deadline).
    Slow(std::time::Duration),
}

impl FaultyStore {
    pub fn wrap(inner: Arc<dyn Store>, fault: Fault) -> Arc<dyn Store> {
        FaultyStore::wrap_counting(inner, fault).0
    }

    /// The store, and the count of its key lookups.
    pub fn wrap_counting(inner: Arc<dyn Store>, fault: Fault) -> (Arc<dyn Store>, Arc<std::sync::atomic::AtomicUsize>) {
        let key_lookups = Arc::default();
        let store = FaultyStore {
            inner,
            fault,
            key_lookups: Arc::clone(&key_lookups),
        };
        (Arc::new(store), key_lookups)
    }
}

#[async_trait]
impl Store for FaultyStore {
    async fn ping(&self) -> Result<(), StoreError> {
        match self.fault {
            Fault::Fail => Err(StoreError::Backend("disk I/O error at /var/lib/secret.db".into())),
            _ => self.inner.ping().await,
        }
    }
    async fn durability(&self) -> Result<Vec<(String, String)>, StoreError> {
        self.inner.durability().await
    }
    async fn create_merchant(&self, name: &str) -> Result<MerchantRef, StoreError> {
        self.inner.create_merchant(name).await
    }
    async fn merchant_count(&self) -> Result<u64, StoreError> {
        self.inner.merchant_count().await
    }
    async fn insert_key(&self, key: NewKey) -> Result<(), StoreError> {
        self.inner.insert_key(key).await
    }
    async fn revoke_key(&self, key_id: &str) -> Result<bool, StoreError> {
        self.inner.revoke_key(key_id).await
    }
    async fn find_key(&self, key_id: &str) -> Result<Option<StoredKey>, StoreError> {
        self.key_lookups.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.inner.find_key(key_id).await
    }
    async fn create_locations(&self, to: WriteFor<'_>, items: Vec<NewLocation>) -> Result<Vec<Outcome>, StoreError> {
        match self.fault {
            Fault::Panic => panic!("injected panic while storing {} items", items.len()),
            Fault::Fail => Err(StoreError::Backend(
                "SQLITE_FULL: database or disk is full: /var/lib/secret.db".into(),
            )),
            Fault::Slow(wait) => {
                tokio::time::sleep(wait).await;
                self.inner.create_locations(to, items).await
            }
        }
    }
    async fn change_locations(&self, to: WriteFor<'_>, plan: ChangePlan) -> Result<Decision, StoreError> {
        match self.fault {
            Fault::Panic => panic!("injected panic while changing locations"),
            Fault::Fail => Err(StoreError::Backend(
                "SQLITE_FULL: database or disk is full: /var/lib/secret.db".into(),
            )),
            Fault::Slow(wait) => {
                tokio::time::sleep(wait).await;
                self.inner.change_locations(to, plan).await
            }
        }
    }
    async fn quarantined_locations(&self) -> Result<Vec<QuarantinedLocation>, StoreError> {
        self.inner.quarantined_locations().await
    }
    async fn approve_location(&self, location_id: &str) -> Result<Approval, StoreError> {
        self.inner.approve_location(location_id).await
    }
    async fn list_locations(&self, query: LocationQuery) -> Result<LocationPage, StoreError> {
        match self.fault {
            Fault::Panic => panic!("injected panic while listing"),
            Fault::Fail => Err(StoreError::Backend("SQLITE_IOERR: /var/lib/secret.db".into())),
            Fault::Slow(_) => self.inner.list_locations(query).await,
        }
    }
    async fn read_events(&self, query: EventQuery) -> Result<EventPage, StoreError> {
        match self.fault {
            Fault::Panic => panic!("injected panic while reading events"),
            Fault::Fail => Err(StoreError::Backend("SQLITE_IOERR: /var/lib/secret.db".into())),
            Fault::Slow(_) => self.inner.read_events(query).await,
        }
    }

    async fn prune_events(&self, cutoff_ms: i64) -> Result<usize, StoreError> {
        self.inner.prune_events(cutoff_ms).await
    }

    fn webhooks(&self) -> Arc<dyn storefront::store::webhook_api::WebhookStore> {
        self.inner.webhooks()
    }

    fn event_signal(&self) -> Arc<storefront::store::event_signal::EventSignal> {
        self.inner.event_signal()
    }

    async fn search_locations(&self, query: SearchQuery, from: ReadFrom) -> Result<SearchPage, StoreError> {
        match self.fault {
            Fault::Panic => panic!("injected panic while searching"),
            Fault::Fail => Err(StoreError::Backend("SQLITE_IOERR: /var/lib/secret.db".into())),
            Fault::Slow(_) => self.inner.search_locations(query, from).await,
        }
    }
    async fn cursor_secret(&self) -> Result<[u8; 32], StoreError> {
        self.inner.cursor_secret().await
    }
    async fn taxonomy_version(&self) -> Result<i64, StoreError> {
        self.inner.taxonomy_version().await
    }
    async fn load_taxonomy(&self) -> Result<storefront::domain::category::taxonomy::Taxonomy, StoreError> {
        self.inner.load_taxonomy().await
    }
    async fn load_categories(&self) -> Result<(i64, Vec<Category>), StoreError> {
        self.inner.load_categories().await
    }
    async fn import_categories(
        &self,
        parsed: Parsed,
        mode: Mode,
    ) -> Result<Result<Imported, Vec<Problem>>, StoreError> {
        self.inner.import_categories(parsed, mode).await
    }
    async fn close(&self) {
        self.inner.close().await;
    }
}

pub async fn faulty_app(fault: Fault) -> TestApp {
    let dir = tempfile::tempdir().unwrap();
    let inner = open_store(&fresh_database_url(dir.path()).await).await;
    TestApp::spawn_with(FaultyStore::wrap(inner, fault), dir).await
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

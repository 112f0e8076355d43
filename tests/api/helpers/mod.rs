//! Test harness: a real server on 127.0.0.1:0 over a fresh database, and valid fixtures.

pub mod api_reference;
mod cluster;
mod faulty;
mod raw;
mod receiver;
mod server;

pub use cluster::Cluster;
pub use faulty::{Fault, FaultyStore, faulty_app};
pub use raw::{closed_within, read_raw_answer};
pub use receiver::{
    Receiver, counter, event_ids, events, now_rfc3339, signed_by, wait_until, webhook_app, webhook_settings,
};
pub use server::{
    BIN, Server, create, merchant_create, merchant_create_at, serve_logging_to, storefront, storefront_at, wait_in_log,
};
use std::net::SocketAddr;
use std::sync::Arc;

use reqwest::header::HeaderMap;
use reqwest::{Client, StatusCode};
use serde_json::{Value, json};
use storefront::app::{self, AppState, Settings};
use storefront::auth;
use storefront::domain::category::import;
use storefront::rate_limit::Rate;
use storefront::store::{self, DatabaseUrl, Store};
use tempfile::TempDir;
use tokio::sync::oneshot;

pub struct TestApp {
    pub base: String,
    pub client: Client,
    /// API key of the merchant created with the app.
    pub key: String,
    pub store: Arc<dyn Store>,
    /// The served state (its taxonomy snapshot can be refreshed at once with `refresh_taxonomy`).
    pub state: AppState,
    url: String,
    /// Holds the database file for as long as the app lives.
    pub _dir: TempDir,
    stop: Option<oneshot::Sender<()>>,
}

/// A response, read whole.
#[derive(Debug)]
pub struct Answer {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Value,
}

/// The `merchant_location_id`s of a search page's results, in order.
pub fn result_ids(page: &Value) -> Vec<String> {
    page["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["location"]["merchant_location_id"].as_str().unwrap().to_owned())
        .collect()
}

/// The service's `/metrics` page, as text.
pub async fn metrics_text(base: &str) -> String {
    reqwest::get(format!("{base}/metrics"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
}

/// The value of the line of `metrics` (a `/metrics` page) that starts `name{labels} `, if there is
/// one (`inf` is infinite).
pub fn metric_in(metrics: &str, series: &str) -> Option<f64> {
    metrics
        .lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .map(|v| if v == "inf" { f64::INFINITY } else { v.parse().unwrap() })
}

/// Where the test suite's databases live: SQLite files, or PostgreSQL when
/// `STOREFRONT_TEST_POSTGRES` names a server (an admin URL such as
/// `postgres://postgres@127.0.0.1:55432/postgres`; `scripts/test` starts one and sets it).
pub fn postgres_admin_url() -> Option<String> {
    std::env::var("STOREFRONT_TEST_POSTGRES").ok().filter(|s| !s.is_empty())
}

/// The URL of a new, empty database on the test backend (a file in `dir` for SQLite).
pub async fn fresh_database_url(dir: &std::path::Path) -> String {
    match postgres_admin_url() {
        None => format!("sqlite://{}", dir.join("test.db").display()),
        Some(admin) => {
            let (client, connection) = tokio_postgres::connect(&admin, tokio_postgres::NoTls).await.unwrap();
            tokio::spawn(connection);
            let name = format!("t_{}", uuid::Uuid::new_v4().simple());
            client.batch_execute(&format!("CREATE DATABASE {name}")).await.unwrap();
            let (server, _) = admin.rsplit_once('/').unwrap();
            format!("{server}/{name}")
        }
    }
}

/// Runs one SQL statement (no parameters) on the database at `url`, either engine: for tests that
/// set a state no request can (a claim held by an instance that does not exist).
pub async fn execute_sql(url: &str, sql: &str) {
    match url.strip_prefix("sqlite://") {
        Some(path) => {
            rusqlite::Connection::open(path).unwrap().execute_batch(sql).unwrap();
        }
        None => {
            let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls).await.unwrap();
            tokio::spawn(connection);
            client.batch_execute(sql).await.unwrap();
        }
    }
}

/// Opens the store at `url` (creating and migrating it).
pub async fn open_store(url: &str) -> Arc<dyn Store> {
    store::open(&DatabaseUrl::parse(url).unwrap()).await.unwrap()
}

impl TestApp {
    /// A server over a fresh database of the test backend.
    pub async fn spawn() -> TestApp {
        let dir = tempfile::tempdir().unwrap();
        let url = fresh_database_url(dir.path()).await;
        let store = open_store(&url).await;
        let mut app = TestApp::spawn_with(store, dir).await;
        app.url = url;
        app
    }

    /// Serves `store` (possibly wrapped to inject faults), without rate limiting.
    pub async fn spawn_with(store: Arc<dyn Store>, dir: TempDir) -> TestApp {
        let settings = Settings {
            rate: Rate::Off,
            ..Settings::default()
        };
        TestApp::spawn_configured(store, dir, settings).await
    }

    /// A server over a fresh database with these settings.
    pub async fn spawn_with_settings(settings: Settings) -> TestApp {
        let dir = tempfile::tempdir().unwrap();
        let url = fresh_database_url(dir.path()).await;
        let store = open_store(&url).await;
        let mut app = TestApp::spawn_configured(store, dir, settings).await;
        app.url = url;
        app
    }

    /// A second instance on this one's database (PostgreSQL: several instances, one service),
    /// with `settings`; its own merchant is created beside this one's.
    pub async fn another_instance(&self, settings: Settings) -> TestApp {
        let dir = tempfile::tempdir().unwrap();
        TestApp::spawn_configured(open_store(self.db_url()).await, dir, settings).await
    }

    pub async fn spawn_configured(store: Arc<dyn Store>, dir: TempDir, settings: Settings) -> TestApp {
        let key = auth::create_merchant(store.as_ref(), "test").await.unwrap().api_key;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr: SocketAddr = listener.local_addr().unwrap();
        let (stop, stopped) = oneshot::channel::<()>();
        let state = AppState::load(Arc::clone(&store), settings).await.unwrap();
        tokio::spawn(app::serve(listener, state.clone(), async move {
            let _ = stopped.await;
        }));
        TestApp {
            base: format!("http://{addr}"),
            client: Client::new(),
            key,
            store,
            state,
            url: String::new(),
            _dir: dir,
            stop: Some(stop),
        }
    }

    /// The URL of the database this app serves (when it was spawned over a fresh one).
    pub fn db_url(&self) -> &str {
        &self.url
    }

    /// Imports categories (replacing the stored set) and makes the server serve them now.
    pub async fn import_categories(&self, categories: &Value) {
        let parsed = import::parse(&categories.to_string(), Some(import::Format::Json));
        assert!(parsed.problems.is_empty(), "{:?}", parsed.problems);
        self.store
            .import_categories(parsed, import::Mode::Replace)
            .await
            .unwrap()
            .unwrap();
        self.state.refresh_taxonomy().await.unwrap();
    }

    /// `POST /v1/categories/list`.
    pub async fn list(&self, body: &Value) -> Answer {
        self.post("/v1/categories/list", body).await
    }

    /// `POST /v1/location/list` with this app's key.
    pub async fn list_locations(&self, body: &Value) -> Answer {
        self.post("/v1/location/list", body).await
    }

    /// Every record of a walk over `/v1/location/list` with `filter`, `limit` records a page, as
    /// `key`'s merchant.
    pub async fn walk_locations(&self, key: &str, filter: &Value, limit: usize) -> Vec<Value> {
        let mut records = Vec::new();
        let mut cursor = Value::Null;
        for _ in 0..10_000 {
            let body = json!({"filter": filter, "pagination": {"limit": limit, "cursor": cursor}});
            let answer = self.post_as("/v1/location/list", key, &body).await;
            assert_eq!(answer.status, StatusCode::OK, "{:#}", answer.body);
            let page = answer.body["locations"].as_array().unwrap();
            assert!(page.len() <= limit);
            records.extend(page.iter().cloned());
            let pagination = &answer.body["pagination"];
            if pagination["has_next"] == json!(false) {
                assert_eq!(pagination["next_cursor"], Value::Null);
                return records;
            }
            assert!(!page.is_empty(), "a page before the end is never empty");
            cursor = pagination["next_cursor"].clone();
        }
        panic!("the walk did not end");
    }

    /// POSTs and returns the status and the body as text (to check the order of keys).
    pub async fn post_text(&self, path: &str, body: &Value) -> (StatusCode, String) {
        self.post_text_as(path, &self.key, body).await
    }

    /// POSTs with `key` and returns the status and the body as text.
    pub async fn post_text_as(&self, path: &str, key: &str, body: &Value) -> (StatusCode, String) {
        let response = self.json_request(path, key, body).send().await.unwrap();
        (response.status(), response.text().await.unwrap())
    }

    /// The public id of this app's merchant.
    pub async fn merchant_id(&self) -> String {
        self.merchant().await.id
    }

    /// The store's number of this app's merchant.
    pub async fn merchant_pk(&self) -> i64 {
        self.merchant().await.pk
    }

    async fn merchant(&self) -> storefront::store::MerchantRef {
        let key_id = self.key.strip_prefix("sf_").unwrap().split_once('_').unwrap().0;
        self.store.find_key(key_id).await.unwrap().unwrap().merchant
    }

    /// A new storefront key (CONTRACT §13.1) of this app's merchant: its key and its key id.
    pub async fn storefront_key(&self) -> (String, String) {
        let issued = auth::issue_key(
            self.store.as_ref(),
            &self.merchant_id().await,
            auth::KeyScope::Storefront,
        )
        .await
        .unwrap();
        (issued.api_key, issued.key_id)
    }

    /// Another merchant's API key.
    pub async fn merchant_key(&self, name: &str) -> String {
        auth::create_merchant(self.store.as_ref(), name).await.unwrap().api_key
    }

    /// POSTs a JSON body to `path` with this app's key.
    pub async fn post(&self, path: &str, body: &Value) -> Answer {
        self.post_as(path, &self.key, body).await
    }

    pub async fn post_as(&self, path: &str, key: &str, body: &Value) -> Answer {
        read(self.json_request(path, key, body)).await
    }

    fn json_request(&self, path: &str, key: &str, body: &Value) -> reqwest::RequestBuilder {
        self.client
            .post(format!("{}{path}", self.base))
            .bearer_auth(key)
            .header("content-type", "application/json")
            .body(body.to_string())
    }

    /// `GET path`, its body as text.
    pub async fn get_text(&self, path: &str) -> String {
        self.request(reqwest::Method::GET, path)
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap()
    }

    pub fn request(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        self.client.request(method, format!("{}{path}", self.base))
    }

    /// `POST /v1/location/create` with `items`, expecting 200; returns the result items.
    pub async fn create(&self, items: Vec<Value>) -> Vec<Value> {
        self.create_as(&self.key, items).await
    }

    pub async fn create_as(&self, key: &str, items: Vec<Value>) -> Vec<Value> {
        let answer = self
            .post_as("/v1/location/create", key, &json!({ "locations": items }))
            .await;
        assert_eq!(answer.status, StatusCode::OK, "{:#}", answer.body);
        answer.body["locations"].as_array().unwrap().clone()
    }

    /// The errors of one item sent alone, as `(field, code)` pairs.
    pub async fn errors_of(&self, item: Value) -> Vec<(String, String)> {
        let results = self.create(vec![item]).await;
        field_codes(&results[0])
    }
}

impl Drop for TestApp {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

pub async fn read(request: reqwest::RequestBuilder) -> Answer {
    let response = request.send().await.unwrap();
    let status = response.status();
    let headers = response.headers().clone();
    let bytes = response.bytes().await.unwrap();
    let body = if bytes.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&bytes)))
    };
    Answer { status, headers, body }
}

/// The secret part of an API key `sf_<key_id>_<secret>` (the secret itself may contain `_`).
pub fn secret_of(key: &str) -> &str {
    key.strip_prefix("sf_")
        .and_then(|rest| rest.split_once('_'))
        .map(|(_, secret)| secret)
        .unwrap()
}

/// An event's keys (CONTRACT §18.1), in their order: the feed's, a delivery's, a test event's.
pub const EVENT_KEYS: [&str; 9] = [
    "event_id",
    "sequence",
    "type",
    "occurred_at",
    "location_id",
    "merchant_location_id",
    "version",
    "status",
    "previous_status",
];

/// The keys of the JSON object `text`, in the order they are written.
pub fn keys_in_order(text: &str) -> Vec<String> {
    struct Keys(Vec<String>);
    impl<'de> serde::Deserialize<'de> for Keys {
        fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct Visit;
            impl<'de> serde::de::Visitor<'de> for Visit {
                type Value = Keys;
                fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                    f.write_str("an object")
                }
                fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Keys, A::Error> {
                    let mut keys = Vec::new();
                    while let Some((k, _)) = map.next_entry::<String, serde::de::IgnoredAny>()? {
                        keys.push(k);
                    }
                    Ok(Keys(keys))
                }
            }
            d.deserialize_map(Visit)
        }
    }
    serde_json::from_str::<Keys>(text).unwrap().0
}

/// `(field, code)` of every error of a result item.
pub fn field_codes(result: &Value) -> Vec<(String, String)> {
    result["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["field"].as_str().unwrap().to_owned(),
                e["code"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

/// A 400 with `code` at `field`.
pub fn error_at(answer: &Answer, code: &str, field: &str) {
    assert_eq!(answer.status, StatusCode::BAD_REQUEST, "{field}: {:#}", answer.body);
    assert_eq!(answer.body["code"], code, "{field}: {:#}", answer.body);
    assert_eq!(answer.body["details"]["field"], field, "{:#}", answer.body);
}

/// Asserts the contract's request-level error body and returns its `details`.
pub fn assert_error(answer: &Answer, status: u16, error_type: &str, code: &str) -> Value {
    assert_eq!(answer.status.as_u16(), status, "{:#}", answer.body);
    assert_eq!(answer.body["error_type"], error_type, "{:#}", answer.body);
    assert_eq!(answer.body["code"], code, "{:#}", answer.body);
    assert!(answer.body["message"].as_str().is_some_and(|m| !m.is_empty()));
    assert!(answer.body["details"].is_object(), "{:#}", answer.body);
    assert_eq!(answer.body.as_object().unwrap().len(), 4, "{:#}", answer.body);
    assert_eq!(answer.headers["cache-control"], "no-store");
    assert!(answer.headers.contains_key("x-request-id"));
    answer.body["details"].clone()
}

// ---- fixtures -------------------------------------------------------------------------------

fn day(day: &str) -> Value {
    json!({"day": day, "schedule": {"time_start": "09:00", "time_end": "21:00", "break": "13:00-14:00"}})
}

/// A valid WAREHOUSE, at a point derived from `n` (fixtures with different `n` are far apart).
pub fn warehouse(n: u32) -> Value {
    json!({
        "merchant_location_id": format!("wh-{n}"),
        "location_types": ["WAREHOUSE"],
        "name": format!("Warehouse {n}"),
        "address_tail": "101000, Russia, Moscow, Tverskaya street, 1",
        "comment": "Gate 3",
        "latitude": 10.0 + f64::from(n) * 0.01,
        "longitude": 37.6,
        "limits": {"length": 200, "width": 120, "height": 150, "weight": 500},
        "working_schedule": [
            day("MONDAY"), day("TUESDAY"),
            {"day": "WEDNESDAY", "schedule": {"time_start": "08:00", "time_end": "20:00", "shipping_cutoff": "16:00"}}
        ],
        "is_accepts_returns": true
    })
}

/// A valid PICKUP_POINT (a pickup point, not a postamat).
pub fn pickup_point(n: u32) -> Value {
    json!({
        "merchant_location_id": format!("pp-{n}"),
        "location_types": ["PICKUP_POINT"],
        "name": format!("Pickup point {n}"),
        "address_tail": "190000, Russia, Saint Petersburg, Nevsky prospekt, 28, 2, 1, 15",
        "latitude": 20.0 + f64::from(n) * 0.01,
        "longitude": 30.3,
        "provider_id": "PROVIDER_3",
        "provider_location_id": "PVZ-77",
        "pickup_point_type": "PICKUP_POINT",
        "payment_methods": ["ALREADY_PAID", "CARD", "CASH"],
        "storage_period_days": 7,
        "limits": {"length": 100, "width": 60, "height": 60, "weight": 30},
        "instruction": "Enter from the courtyard.\nRing twice.",
        "pickup_services": ["FITTING"],
        "working_schedule": [day("MONDAY"), day("SATURDAY")],
        "individual_schedule": [
            {"date": "2026-12-31", "schedule": {"time_start": "10:00", "time_end": "16:00"}, "is_works": true},
            {"date": "2027-01-01", "schedule": {"time_start": "00:00", "time_end": "24:00"}, "is_works": false}
        ],
        "is_accepts_returns": false
    })
}

/// A valid POSTAMAT (a parcel locker: no cash, no fitting).
pub fn postamat(n: u32) -> Value {
    let mut p = pickup_point(n);
    p["merchant_location_id"] = json!(format!("pm-{n}"));
    p["pickup_point_type"] = json!("POSTAMAT");
    p["payment_methods"] = json!(["ALREADY_PAID", "CARD"]);
    p["latitude"] = json!(25.0 + f64::from(n) * 0.01);
    p.as_object_mut().unwrap().remove("pickup_services");
    p
}

/// A valid WAREHOUSE + CLICK_AND_COLLECT.
pub fn click_and_collect(n: u32) -> Value {
    json!({
        "merchant_location_id": format!("cc-{n}"),
        "location_types": ["WAREHOUSE", "CLICK_AND_COLLECT"],
        "name": format!("Store {n}"),
        "address_tail": "10115, Germany, Berlin, Unter den Linden, 5a",
        "latitude": 52.5 + f64::from(n) * 0.01,
        "longitude": 13.4,
        "payment_methods": ["CARD"],
        "storage_period_days": 3,
        "limits": {"length": 50, "width": 50, "height": 50, "weight": 20},
        "pickup_services": ["FITTING"],
        "working_schedule": [{"day": "FRIDAY", "schedule": {"time_start": "10:00", "time_end": "22:00", "shipping_cutoff": "18:00"}}],
        "is_accepts_returns": true
    })
}

/// `value` with the field at JSON pointer `pointer` set to `new` (`None` removes it).
pub fn with(mut value: Value, pointer: &str, new: Option<Value>) -> Value {
    let (parent, last) = pointer.rsplit_once('/').unwrap();
    let target = value.pointer_mut(parent).unwrap_or_else(|| panic!("no {parent}"));
    match (target, new) {
        (Value::Object(map), Some(new)) => {
            map.insert(last.to_owned(), new);
        }
        (Value::Object(map), None) => {
            map.remove(last);
        }
        (Value::Array(items), Some(new)) => items[last.parse::<usize>().unwrap()] = new,
        (Value::Array(items), None) => {
            items.remove(last.parse::<usize>().unwrap());
        }
        (other, _) => panic!("cannot set {pointer} in {other}"),
    }
    value
}

//! A webhook receiver on 127.0.0.1 that records every request and answers as its path says, a
//! server that may call it, and the checks of a delivery's signature.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, KeyInit, Mac};
use serde_json::{Value, json};
use sha2::Sha256;
use storefront::app::Settings;
use storefront::domain::webhook::RetrySchedule;
use storefront::rate_limit::Rate;
use storefront::webhooks::WebhookSettings;
use storefront::webhooks::address::Reach;

use super::TestApp;

/// One request a receiver got.
#[derive(Clone, Debug)]
pub struct Received {
    pub path: String,
    pub headers: HeaderMap,
    pub body: String,
}

/// A receiver on 127.0.0.1: every request recorded; how it answers depends on its path.
#[derive(Clone, Default)]
pub struct Receiver {
    pub got: Arc<Mutex<Vec<Received>>>,
    pub base: String,
    /// While set, `switch` and `switch-slow` answer 500.
    pub down: Arc<std::sync::atomic::AtomicBool>,
}

async fn receive(State(r): State<Receiver>, Path(path): Path<String>, headers: HeaderMap, body: String) -> Response {
    let earlier = {
        let mut got = r.got.lock().unwrap();
        let earlier = got.iter().filter(|g| g.path == path).count();
        got.push(Received {
            path: path.clone(),
            headers,
            body,
        });
        earlier
    };
    match path.as_str() {
        "gone" => StatusCode::GONE.into_response(),
        "redirect" => (StatusCode::FOUND, [("location", format!("{}/ok", r.base))]).into_response(),
        "hang" => {
            tokio::time::sleep(Duration::from_secs(20)).await;
            StatusCode::OK.into_response()
        }
        "down" => StatusCode::INTERNAL_SERVER_ERROR.into_response(),
        // 410 at once, then 500 after a second to the next seven, then 204.
        "gone-then-slow" if earlier == 0 => StatusCode::GONE.into_response(),
        "gone-then-slow" if earlier < 8 => {
            tokio::time::sleep(Duration::from_secs(1)).await;
            StatusCode::INTERNAL_SERVER_ERROR.into_response()
        }
        "gone-then-slow" => StatusCode::NO_CONTENT.into_response(),
        // Answers its first request 410 and every other 500.
        "gone-first" if earlier == 0 => StatusCode::GONE.into_response(),
        "gone-first" => StatusCode::INTERNAL_SERVER_ERROR.into_response(),
        // `slow-MS`: answers 204 after MS milliseconds; `slowfail-MS`: 500 after MS.
        slow if slow.starts_with("slow-") || slow.starts_with("slowfail-") => {
            let (kind, ms) = slow.split_once('-').unwrap();
            tokio::time::sleep(Duration::from_millis(ms.parse().unwrap())).await;
            if kind == "slow" {
                StatusCode::NO_CONTENT.into_response()
            } else {
                StatusCode::INTERNAL_SERVER_ERROR.into_response()
            }
        }
        // 204 at first, 410 to every later request.
        "ok-then-gone" if earlier == 0 => StatusCode::NO_CONTENT.into_response(),
        "ok-then-gone" => StatusCode::GONE.into_response(),
        // 500 at first, 204 to every later request.
        "fail-once" if earlier == 0 => StatusCode::INTERNAL_SERVER_ERROR.into_response(),
        // 500 while the receiver is down, else 204 (`switch-slow`: after 1.5 s).
        "switch" | "switch-slow" => {
            if path == "switch-slow" {
                tokio::time::sleep(Duration::from_millis(1500)).await;
            }
            if r.down.load(std::sync::atomic::Ordering::SeqCst) {
                StatusCode::INTERNAL_SERVER_ERROR.into_response()
            } else {
                StatusCode::NO_CONTENT.into_response()
            }
        }
        // 500 at once while the receiver is down, else no answer until the client gives up.
        "switch-hang" => {
            if r.down.load(std::sync::atomic::Ordering::SeqCst) {
                return StatusCode::INTERNAL_SERVER_ERROR.into_response();
            }
            tokio::time::sleep(Duration::from_secs(120)).await;
            StatusCode::NO_CONTENT.into_response()
        }
        // Fails its first two requests, then recovers.
        "flaky" if earlier < 2 => StatusCode::SERVICE_UNAVAILABLE.into_response(),
        _ => StatusCode::NO_CONTENT.into_response(),
    }
}

impl Receiver {
    pub async fn start() -> Receiver {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let receiver = Receiver {
            base: format!("http://{}", listener.local_addr().unwrap()),
            ..Receiver::default()
        };
        let app = axum::Router::new()
            .route("/{*path}", axum::routing::post(receive))
            .with_state(receiver.clone());
        tokio::spawn(async move { axum::serve(listener, app).await });
        receiver
    }

    /// How many times each `webhook-id` reached `path`.
    pub fn ids_at(&self, path: &str) -> std::collections::HashMap<String, usize> {
        let mut ids = std::collections::HashMap::new();
        for got in self.at(path) {
            *ids.entry(got.headers["webhook-id"].to_str().unwrap().to_owned())
                .or_default() += 1;
        }
        ids
    }

    /// Sets whether `switch` is down.
    pub fn set_down(&self, down: bool) {
        self.down.store(down, std::sync::atomic::Ordering::SeqCst);
    }

    pub fn at(&self, path: &str) -> Vec<Received> {
        self.got
            .lock()
            .unwrap()
            .iter()
            .filter(|g| g.path == path)
            .cloned()
            .collect()
    }

    /// Waits (at most a minute) until `path` got `n` requests; they.
    pub async fn wait_for(&self, path: &str, n: usize) -> Vec<Received> {
        for _ in 0..600 {
            let got = self.at(path);
            if got.len() >= n {
                return got;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("{path} got {} requests, not {n}", self.at(path).len());
    }
}

/// Settings whose webhooks may call the test's receivers on loopback over http, retrying fast
/// (300 ms, three times).
pub fn webhook_settings() -> Settings {
    Settings {
        rate: Rate::Off,
        webhooks: WebhookSettings {
            attempt_timeout: std::time::Duration::from_secs(15),
            retry: RetrySchedule::parse("300ms,300ms,300ms").unwrap(),
            disable_after: Duration::from_secs(3600),
            reach: Reach {
                allow_http: true,
                allow_private: true,
            },
        },
        ..Settings::default()
    }
}

/// A server with `webhook_settings`.
pub async fn webhook_app() -> TestApp {
    TestApp::spawn_with_settings(webhook_settings()).await
}

impl TestApp {
    /// Registers an endpoint; its id and secret.
    pub async fn webhook(&self, url: &str, types: Value) -> (String, String) {
        let answer = self
            .post("/v1/webhook/create", &json!({"url": url, "types": types}))
            .await;
        assert_eq!(answer.status, 200, "{:#}", answer.body);
        (
            answer.body["webhook"]["webhook_id"].as_str().unwrap().to_owned(),
            answer.body["secret"].as_str().unwrap().to_owned(),
        )
    }

    /// The endpoint's attempts, newest first (one page of 1000).
    pub async fn attempts(&self, webhook_id: &str) -> Vec<Value> {
        let answer = self
            .post(
                "/v1/webhook/deliveries",
                &json!({"webhook_id": webhook_id, "pagination": {"limit": 1000}}),
            )
            .await;
        assert_eq!(answer.status, 200, "{:#}", answer.body);
        answer.body["deliveries"].as_array().unwrap().clone()
    }

    pub async fn webhook_of(&self, webhook_id: &str) -> Value {
        let list = self.post("/v1/webhook/list", &json!({})).await;
        list.body["webhooks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|w| w["webhook_id"] == webhook_id)
            .cloned()
            .unwrap_or(Value::Null)
    }
}

/// The signatures of `webhook-signature` that `secret` makes for a delivery, checked as the
/// Standard Webhooks specification says.
pub fn signed_by(got: &Received, secret: &str) -> bool {
    let id = got.headers["webhook-id"].to_str().unwrap();
    let timestamp = got.headers["webhook-timestamp"].to_str().unwrap();
    let key = STANDARD.decode(secret.strip_prefix("whsec_").unwrap()).unwrap();
    let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(&key).unwrap();
    mac.update(format!("{id}.{timestamp}.{}", got.body).as_bytes());
    let expected = format!("v1,{}", STANDARD.encode(mac.finalize().into_bytes()));
    got.headers["webhook-signature"]
        .to_str()
        .unwrap()
        .split(' ')
        .any(|s| s == expected)
}

pub async fn wait_until<F: std::future::Future<Output = bool>>(what: &str, mut check: impl FnMut() -> F) {
    for _ in 0..600 {
        if check().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{what} did not happen within a minute");
}

/// The merchant's events, oldest first.
pub async fn events(app: &TestApp) -> Vec<Value> {
    let page = app
        .post("/v1/location/events", &json!({"pagination": {"limit": 1000}}))
        .await;
    assert_eq!(page.status, 200, "{:#}", page.body);
    page.body["events"].as_array().unwrap().clone()
}

pub fn event_ids(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .map(|e| e["event_id"].as_str().unwrap().to_owned())
        .collect()
}

/// A counter's value in `/metrics` (0 before it was first counted). The tests of one process
/// share the recorder: a test checks that it grew by at least what it did.
pub async fn counter(app: &TestApp, line_start: &str) -> f64 {
    app.get_text("/metrics")
        .await
        .lines()
        .filter(|l| l.starts_with(line_start))
        .filter_map(|l| l.rsplit_once(' ').and_then(|(_, v)| v.parse::<f64>().ok()))
        .sum()
}

/// Now, as RFC 3339 with milliseconds.
pub fn now_rfc3339() -> String {
    let ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    String::from_utf8(storefront::domain::wire::timestamp(ms).to_vec()).unwrap()
}

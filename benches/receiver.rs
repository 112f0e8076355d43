//! The benchmark's webhook receiver (issue 38): answers every `POST` with 204 at once, and keeps,
//! for each delivery, how long after its event was committed it arrived (now − `occurred_at`).
//! `GET /stats` answers `{"deliveries", "unique", "first_ms", "last_ms", "lag_p50_ms",
//! "lag_p99_ms", "lag_max_ms"}`; `POST /reset` forgets everything.
//!
//! Usage: `receiver ADDR`.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::{get, post};

#[derive(Default)]
struct Seen {
    lags_ms: Vec<i64>,
    ids: HashSet<String>,
    first_ms: i64,
    last_ms: i64,
}

type Shared = Arc<Mutex<Seen>>;

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// `occurred_at` (RFC 3339, UTC, milliseconds) in Unix milliseconds.
fn occurred_ms(body: &[u8]) -> Option<i64> {
    let text = std::str::from_utf8(body).ok()?;
    let at = text.split("\"occurred_at\":\"").nth(1)?.get(..24)?;
    let n = |r: std::ops::Range<usize>| at.get(r).and_then(|s| s.parse::<u32>().ok());
    let month = time::Month::try_from(u8::try_from(n(5..7)?).ok()?).ok()?;
    let date =
        time::Date::from_calendar_date(i32::try_from(n(0..4)?).ok()?, month, u8::try_from(n(8..10)?).ok()?).ok()?;
    let clock = time::Time::from_hms_milli(
        u8::try_from(n(11..13)?).ok()?,
        u8::try_from(n(14..16)?).ok()?,
        u8::try_from(n(17..19)?).ok()?,
        u16::try_from(n(20..23)?).ok()?,
    )
    .ok()?;
    Some((date.with_time(clock).assume_utc().unix_timestamp_nanos() / 1_000_000) as i64)
}

async fn receive(State(seen): State<Shared>, headers: HeaderMap, body: Bytes) -> StatusCode {
    let now = now_ms();
    let lag = occurred_ms(&body).map_or(0, |at| now - at);
    let id = headers
        .get("webhook-id")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let mut seen = seen.lock().unwrap_or_else(PoisonError::into_inner);
    if seen.lags_ms.is_empty() {
        seen.first_ms = now;
    }
    seen.last_ms = now;
    seen.lags_ms.push(lag);
    seen.ids.insert(id);
    StatusCode::NO_CONTENT
}

async fn stats(State(seen): State<Shared>) -> String {
    let seen = seen.lock().unwrap_or_else(PoisonError::into_inner);
    let mut lags = seen.lags_ms.clone();
    lags.sort_unstable();
    let at = |q: f64| {
        lags.get(((lags.len() as f64 * q) as usize).min(lags.len().saturating_sub(1)))
            .copied()
    };
    serde_json::json!({
        "deliveries": lags.len(), "unique": seen.ids.len(), "first_ms": seen.first_ms, "last_ms": seen.last_ms,
        "lag_p50_ms": at(0.5), "lag_p99_ms": at(0.99), "lag_max_ms": lags.last(),
    })
    .to_string()
}

async fn reset(State(seen): State<Shared>) -> StatusCode {
    *seen.lock().unwrap_or_else(PoisonError::into_inner) = Seen::default();
    StatusCode::NO_CONTENT
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let addr = std::env::args().nth(1).unwrap_or_else(|| "127.0.0.1:8091".into());
    let seen = Shared::default();
    let app = Router::new()
        .route("/stats", get(stats))
        .route("/reset", post(reset))
        .fallback(post(receive))
        .with_state(seen);
    let listener = tokio::net::TcpListener::bind(addr).await?;
    axum::serve(listener, app).await
}

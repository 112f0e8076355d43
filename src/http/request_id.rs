//! The request id: taken from the client's `X-Request-Id` when it sent a sane one, otherwise a
//! new UUIDv7; echoed on every answer, put in the log span, and reachable (task-local) from
//! anywhere that builds a 500 body.

use axum::extract::Request;
use axum::http::HeaderValue;

pub const HEADER: &str = "x-request-id";

tokio::task_local! {
    static REQUEST_ID: String;
}

/// The id of the request being served on this task, if any.
pub fn current() -> Option<String> {
    REQUEST_ID.try_with(Clone::clone).ok()
}

fn sane(value: &HeaderValue) -> Option<String> {
    let s = value.to_str().ok()?;
    (!s.is_empty() && s.len() <= 128 && s.bytes().all(|b| b.is_ascii_graphic())).then(|| s.to_owned())
}

/// The request's id: the client's `X-Request-Id` when it is sane, else a new UUIDv7; set on the
/// request (so the handlers see it) and returned with the header value to echo on the answer.
pub fn take_or_assign(request: &mut Request) -> (String, HeaderValue) {
    let id = request
        .headers()
        .get(HEADER)
        .and_then(sane)
        .unwrap_or_else(|| uuid::Uuid::now_v7().to_string());
    let header = HeaderValue::from_str(&id).unwrap_or_else(|_| HeaderValue::from_static("invalid"));
    request.headers_mut().insert(HEADER, header.clone());
    (id, header)
}

/// Runs `serve` with `id` as the current request id (see [`current`]).
pub async fn scope<F: Future>(id: String, serve: F) -> F::Output {
    REQUEST_ID.scope(id, serve).await
}

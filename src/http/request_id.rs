//! The request id: taken from the client's `X-Request-Id` when it sent a sane one, otherwise a
//! new UUIDv7; echoed on every answer, put in the log span, and reachable (task-local) from
//! anywhere that builds a 500 body.

use axum::extract::Request;
use axum::http::HeaderValue;
use axum::middleware::Next;
use axum::response::Response;

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

/// Middleware: assigns the id, runs the rest of the stack inside its scope, echoes it.
pub async fn assign(mut request: Request, next: Next) -> Response {
    let id = request
        .headers()
        .get(HEADER)
        .and_then(sane)
        .unwrap_or_else(|| uuid::Uuid::now_v7().to_string());
    let header = HeaderValue::from_str(&id).unwrap_or_else(|_| HeaderValue::from_static("invalid"));
    request.headers_mut().insert(HEADER, header.clone());
    let mut response = REQUEST_ID.scope(id, next.run(request)).await;
    response.headers_mut().insert(HEADER, header);
    response
}

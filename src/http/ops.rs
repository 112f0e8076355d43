//! Operational endpoints: no authentication, no rate limit.

use axum::http::header;
use axum::response::{IntoResponse, Response};

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde_json::{Value, json};

use crate::state::AppState;

/// `GET /healthz`: the process is up.
pub async fn healthz() -> Json<Value> {
    Json(json!({"status": "ok"}))
}

/// `GET /readyz`: the database answers.
pub async fn readyz(State(state): State<AppState>) -> (StatusCode, Json<Value>) {
    match state.store.ping().await {
        Ok(()) => (StatusCode::OK, Json(json!({"status": "ready"}))),
        Err(e) => {
            tracing::warn!(error = %crate::errors::ErrorChain(&e), "readiness check failed");
            (StatusCode::SERVICE_UNAVAILABLE, Json(json!({"status": "unavailable"})))
        }
    }
}

/// `GET /metrics`: Prometheus text exposition.
pub async fn metrics() -> Response {
    match crate::telemetry::metrics() {
        Some(handle) => (
            [(header::CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")],
            handle.render(),
        )
            .into_response(),
        None => (
            StatusCode::SERVICE_UNAVAILABLE,
            "another metrics recorder is installed in this process\n",
        )
            .into_response(),
    }
}

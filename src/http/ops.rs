//! Operational endpoints (CONTRACT §7): no authentication, no rate limit.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde_json::{Value, json};

use crate::app::AppState;

/// `GET /healthz`: the process is up.
pub async fn healthz() -> Json<Value> {
    Json(json!({"status": "ok"}))
}

/// `GET /readyz`: the database answers.
pub async fn readyz(State(state): State<AppState>) -> (StatusCode, Json<Value>) {
    match state.store.ping().await {
        Ok(()) => (StatusCode::OK, Json(json!({"status": "ready"}))),
        Err(e) => {
            tracing::warn!(error = %super::error::ErrorChain(&e), "readiness check failed");
            (StatusCode::SERVICE_UNAVAILABLE, Json(json!({"status": "unavailable"})))
        }
    }
}

//! The router and its shared state; the same function serves `storefront serve` and the tests.
//!
//! Layers, outermost first: request id (assigned, echoed, in scope for 500 bodies) → trace span
//! (one log line per request) → panic catcher (a panic is a 500 and the server keeps serving) →
//! routes, whose 404/405 answer in the contract's body.

use std::any::Any;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::{MatchedPath, Request};
use axum::http::Response;
use axum::response::IntoResponse;
use axum::routing::{get, post};
use tokio::net::TcpListener;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::trace::TraceLayer;
use tracing::Span;

use crate::http::error::ApiError;
use crate::http::{locations, ops, request_id};
use crate::store::Store;

/// What every handler can reach.
#[derive(Clone)]
pub struct AppState {
    pub store: Arc<dyn Store>,
}

pub fn router(state: AppState) -> Router {
    Router::new()
        .route("/v1/location/create", post(locations::create))
        .route("/healthz", get(ops::healthz))
        .route("/readyz", get(ops::readyz))
        .fallback(|| async { ApiError::not_found() })
        .method_not_allowed_fallback(|| async { ApiError::method_not_allowed() })
        .with_state(state)
        .layer(CatchPanicLayer::custom(panic_response))
        .layer(
            TraceLayer::new_for_http()
                .make_span_with(|request: &Request| {
                    let route = request
                        .extensions()
                        .get::<MatchedPath>()
                        .map_or("unmatched", MatchedPath::as_str)
                        .to_owned();
                    let id = request
                        .headers()
                        .get(request_id::HEADER)
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or_default();
                    tracing::info_span!(
                        "request",
                        method = %request.method(),
                        route,
                        request_id = id,
                        merchant_id = tracing::field::Empty,
                    )
                })
                .on_request(())
                .on_response(|response: &Response<_>, latency: Duration, _span: &Span| {
                    tracing::info!(
                        status = response.status().as_u16(),
                        latency_ms = latency.as_secs_f64() * 1000.0,
                        "served"
                    );
                })
                .on_failure(()),
        )
        .layer(axum::middleware::from_fn(request_id::assign))
}

fn panic_response(panic: Box<dyn Any + Send + 'static>) -> Response<axum::body::Body> {
    let message = panic
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| panic.downcast_ref::<&str>().copied())
        .unwrap_or("(no message)");
    ApiError::internal(&Panicked(message.to_owned())).into_response()
}

#[derive(Debug, thiserror::Error)]
#[error("handler panicked: {0}")]
struct Panicked(String);

/// Serves `state` on `listener` until `shutdown` resolves, then lets in-flight requests finish.
pub async fn serve(
    listener: TcpListener,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    axum::serve(listener, router(state))
        .with_graceful_shutdown(shutdown)
        .await
}

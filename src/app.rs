//! The router and its shared state; the same function serves `storefront serve` and the tests.
//!
//! Layers, outermost first: request id (assigned, echoed, in scope for 500 bodies) → trace span
//! (one log line per request) → panic catcher (a panic is a 500 and the server keeps serving) →
//! routes, whose 404/405 answer in the contract's body.

use std::any::Any;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use arc_swap::ArcSwap;
use axum::Router;
use axum::extract::{MatchedPath, Request};
use axum::http::Response;
use axum::response::IntoResponse;
use axum::routing::{get, post};
use tokio::net::TcpListener;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::trace::TraceLayer;
use tracing::Span;

use crate::domain::category::taxonomy::Taxonomy;
use crate::http::error::ApiError;
use crate::http::{categories, locations, ops, request_id};
use crate::pagination::Cursors;
use crate::store::{Store, StoreError};

/// How often a server checks whether the stored taxonomy changed.
pub const TAXONOMY_POLL: Duration = Duration::from_secs(1);

/// What every handler can reach.
#[derive(Clone)]
pub struct AppState {
    pub store: Arc<dyn Store>,
    /// The current taxonomy snapshot, swapped whole when the stored one changes.
    pub taxonomy: Arc<ArcSwap<Taxonomy>>,
    pub cursors: Arc<Cursors>,
}

impl AppState {
    /// Loads what serving needs from the store: the cursor secret and the taxonomy.
    pub async fn load(store: Arc<dyn Store>) -> Result<Self, StoreError> {
        let cursors = Cursors::new(store.cursor_secret().await?);
        let taxonomy = load_taxonomy(store.as_ref()).await?;
        Ok(AppState {
            store,
            taxonomy: Arc::new(ArcSwap::from_pointee(taxonomy)),
            cursors: Arc::new(cursors),
        })
    }

    /// Swaps in the stored taxonomy when its version differs from the one served; returns
    /// whether it did.
    pub async fn refresh_taxonomy(&self) -> Result<bool, StoreError> {
        let stored = self.store.taxonomy_version().await?;
        if stored == self.taxonomy.load().version() {
            return Ok(false);
        }
        let taxonomy = load_taxonomy(self.store.as_ref()).await?;
        tracing::info!(
            version = taxonomy.version(),
            categories = taxonomy.len(),
            "taxonomy refreshed"
        );
        self.taxonomy.store(Arc::new(taxonomy));
        Ok(true)
    }
}

async fn load_taxonomy(store: &dyn Store) -> Result<Taxonomy, StoreError> {
    let (version, categories) = store.load_categories().await?;
    tokio::task::spawn_blocking(move || Taxonomy::build(version, categories))
        .await
        .map_err(StoreError::backend)
}

/// Polls the stored taxonomy version and refreshes the snapshot, for as long as it runs.
async fn refresh_taxonomy_forever(state: AppState) {
    let mut tick = tokio::time::interval(TAXONOMY_POLL);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        if let Err(e) = state.refresh_taxonomy().await {
            tracing::warn!(error = %crate::http::error::ErrorChain(&e), "taxonomy refresh failed; serving the previous one");
        }
    }
}

pub fn router(state: AppState) -> Router {
    Router::new()
        .route("/v1/location/create", post(locations::create))
        .route("/v1/categories/list", post(categories::list))
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
/// Keeps the taxonomy fresh meanwhile.
pub async fn serve(
    listener: TcpListener,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let refresher = tokio::spawn(refresh_taxonomy_forever(state.clone()));
    let result = axum::serve(listener, router(state))
        .with_graceful_shutdown(shutdown)
        .await;
    refresher.abort();
    result
}

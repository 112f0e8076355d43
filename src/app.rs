//! The router, its shared state and the accept loop; the same code serves `storefront serve` and
//! the tests.
//!
//! Layers, outermost first: `observe` (the request id, assigned, echoed and in scope for 500
//! bodies; CORS preflights answered and every answer's CORS headers; the request's time cap, 500
//! after it; metrics; one access-log line, with the client's address) → panic catcher (a
//! panic is a 500 and the server keeps serving) → routes, whose 404/405 answer in the contract's
//! body; the `/v1` routes pass the gate (authentication, requests in flight, rate limit) first.
//!
//! The accept loop and the discipline of connections are `crate::server`'s.

use std::any::Any;
use std::future::Future;
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::{MatchedPath, Request, State};
use axum::http::Response;
use axum::middleware::{self, Next};
use axum::response::IntoResponse;
use axum::routing::{get, post};
use tokio::net::TcpListener;
use tower::ServiceBuilder;
use tower_http::catch_panic::CatchPanicLayer;
use utoipa_swagger_ui::SwaggerUi;

pub use crate::config::Settings;
use crate::http::error::ApiError;
use crate::http::{
    categories, changes, console, cors, events, gate, imports, keys, locations, openapi, ops, redelivery, request_id,
    search, webhooks, widget,
};
use crate::server::ClientAddr;
use crate::state::STORE_MARGIN;
pub use crate::state::{AppState, BodyTiming, Deadline, ServedMerchant};

/// How often a server checks whether the stored taxonomy changed.
pub const TAXONOMY_POLL: Duration = Duration::from_secs(1);
/// How long before a request's time cap its body must be complete: enough for the 408 to be the
/// answer rather than the cap's 500.
const BODY_MARGIN: Duration = Duration::from_millis(250);
/// How often idle merchants are dropped from the rate limiter.
const FORGET_IDLE_EVERY: Duration = Duration::from_secs(60);

/// Background upkeep for as long as it runs: taxonomy refresh, the metrics' pending samples, idle
/// rate-limit state. (The shared budgets' upkeep is a task of its own: `share_upkeep`.)
async fn upkeep(state: AppState) {
    let mut tick = tokio::time::interval(TAXONOMY_POLL);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut last_forget = Instant::now();
    loop {
        tick.tick().await;
        if let Err(e) = state.refresh_taxonomy().await {
            tracing::warn!(error = %crate::errors::ErrorChain(&e), "taxonomy refresh failed; serving the previous one");
        }
        // The recorder keeps every histogram sample until its upkeep folds them into buckets; a
        // server nobody scrapes would otherwise grow by every request it answers.
        if let Some(metrics) = crate::telemetry::metrics() {
            metrics.run_upkeep();
        }
        if last_forget.elapsed() >= FORGET_IDLE_EVERY {
            state.limits.forget_idle();
            state.storefront_limits.forget_idle();
            state.keys.forget_expired();
            state.bodies.forget_idle_merchants();
            last_forget = Instant::now();
        }
    }
}

/// Every second, where budgets are shared: the heartbeat that counts the
/// instances, and the idle holdings given back. Each step is bounded; a slow ledger delays
/// neither requests nor the taxonomy's refresh.
async fn share_upkeep(state: AppState) {
    if state.sharing.is_none() {
        return;
    }
    let mut tick = tokio::time::interval(crate::rate_limit::shared::IDLE);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        state.heartbeat().await;
        state.limits.settle().await;
        state.storefront_limits.settle().await;
    }
}

/// How often retention looks for events past `--event-retention`, and the pause between two of
/// its batches (each a short transaction of its own, so the writer is never held for long).
const PRUNE_EVERY: Duration = Duration::from_secs(60);
const PRUNE_PAUSE: Duration = Duration::from_millis(50);

/// Other instances' commits ring this one's waiting feeds (`Store::follow_events`).
async fn follow_events(state: AppState) {
    state.store.follow_events(std::sync::Arc::clone(&state.events)).await;
}

/// Retention: events older than `--event-retention` are dropped in batches.
async fn prune_events(state: AppState) {
    let mut tick = tokio::time::interval(PRUNE_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let retention = crate::store::api::millis(state.settings.event_retention);
        let cutoff = crate::store::now_ms().saturating_sub(retention);
        let webhooks = state.store.webhooks();
        loop {
            match webhooks.prune_attempts(cutoff).await {
                Ok(1000..) => tokio::time::sleep(PRUNE_PAUSE).await,
                Ok(_) => break,
                Err(e) => {
                    tracing::warn!(error = %crate::errors::ErrorChain(&e), "dropping old delivery attempts failed; trying again later");
                    break;
                }
            }
        }
        loop {
            match state.store.prune_events(cutoff).await {
                Ok(0) => break,
                Ok(_) => tokio::time::sleep(PRUNE_PAUSE).await,
                Err(e) => {
                    tracing::warn!(error = %crate::errors::ErrorChain(&e), "dropping old events failed; trying again later");
                    break;
                }
            }
        }
    }
}

pub fn router(state: AppState) -> Router {
    // A key's scope is decided by the router: a route is behind the gate of the keys it admits.
    let storefront = Router::new()
        .route("/v1/location/search", post(search::search))
        .route("/v1/categories/list", post(categories::list))
        .route_layer(middleware::from_fn_with_state(state.clone(), gate::storefront_gate));
    let merchant = Router::new()
        .route("/v1/location/create", post(locations::create))
        .route("/v1/location/list", post(locations::list))
        .route("/v1/location/update", post(changes::update))
        .route("/v1/location/archive", post(changes::archive))
        .route("/v1/location/restore", post(changes::restore))
        .route("/v1/location/events", post(events::feed))
        .route("/v1/webhook/create", post(webhooks::create))
        .route("/v1/webhook/list", post(webhooks::list))
        .route("/v1/webhook/delete", post(webhooks::delete))
        .route("/v1/webhook/enable", post(webhooks::enable))
        .route("/v1/webhook/rotate_secret", post(webhooks::rotate_secret))
        .route("/v1/webhook/deliveries", post(webhooks::deliveries))
        .route("/v1/webhook/resend", post(redelivery::resend))
        .route("/v1/webhook/recover", post(redelivery::recover))
        .route("/v1/webhook/test", post(redelivery::test))
        .route("/v1/import/create", post(imports::create))
        .route("/v1/import/get", post(imports::get))
        .route("/v1/import/list", post(imports::list))
        .route("/v1/import/rows", post(imports::rows))
        .route("/v1/key/create", post(keys::create))
        .route("/v1/key/list", post(keys::list))
        .route("/v1/key/revoke", post(keys::revoke))
        .route_layer(middleware::from_fn_with_state(state.clone(), gate::merchant_gate));
    Router::new()
        .merge(storefront)
        .merge(merchant)
        .merge(
            SwaggerUi::new("/docs")
                .external_url_unchecked("/openapi.json", openapi::document())
                .config(
                    // No call to the public validator: the page loads nothing from outside the service.
                    utoipa_swagger_ui::Config::from("/openapi.json")
                        .validator_url("none")
                        .try_it_out_enabled(true)
                        // A key typed into the page is not kept in the browser's storage.
                        .persist_authorization(false),
                ),
        )
        .merge(widget::routes())
        .merge(console::routes())
        .route("/healthz", get(ops::healthz))
        .route("/readyz", get(ops::readyz))
        .route("/metrics", get(ops::metrics))
        .fallback(|| async { ApiError::not_found() })
        .method_not_allowed_fallback(|| async { ApiError::method_not_allowed() })
        .with_state(state.clone())
        // One layer of the two (a layer of a router wraps, and boxes, every route once more).
        .layer(
            ServiceBuilder::new()
                .layer(middleware::from_fn_with_state(state, observe))
                .layer(CatchPanicLayer::custom(panic_response)),
        )
}

/// The route a request matched (its path template), or `unmatched`: the label of logs and metrics.
fn route_of(request: &Request) -> String {
    request
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| "unmatched".to_owned(), |p| p.as_str().to_owned())
}

/// Every request's bookkeeping, in one layer (one layer is one boxed service per route, cloned for
/// every request): its id (echoed, and in scope for any 500 body), CORS (a preflight answered here,
/// before authentication and the rate limit; the headers on every answer), its time cap (after
/// `request_timeout` the answer is 500; handlers that store find a `Deadline` a margin earlier and
/// must not begin a write after it), its metrics and its access-log line.
async fn observe(State(state): State<AppState>, mut request: Request, next: Next) -> axum::response::Response {
    let started = Instant::now();
    let (id, id_header) = request_id::take_or_assign(&mut request);
    let method = request.method().clone();
    let route = route_of(&request);
    let client = request.extensions().get::<ClientAddr>().map(|c| c.0.ip());
    let origin = cors::origin_with_keys(&state.settings.cors_origins, state.store.as_ref(), request.headers()).await;
    let preflight = cors::is_preflight(&method, request.uri().path(), request.headers());
    let timeout = state.settings.request_timeout;
    let deadline = started + timeout.saturating_sub(STORE_MARGIN.min(timeout / 2));
    request.extensions_mut().insert(Deadline(deadline));
    request.extensions_mut().insert(BodyTiming {
        deadline: started + timeout.saturating_sub(BODY_MARGIN.min(timeout / 4)),
        stall: state.settings.body_stall_timeout,
    });
    let mut response = if preflight {
        cors::preflight(&origin)
    } else {
        request_id::scope(id.clone(), async move {
            match tokio::time::timeout(timeout, next.run(request)).await {
                Ok(response) => response,
                Err(_) => ApiError::internal(&TimedOut(timeout)).into_response(),
            }
        })
        .await
    };
    response.headers_mut().insert(request_id::HEADER, id_header);
    cors::decorate(&origin, response.headers_mut());
    security_headers(&route, response.headers_mut());
    let latency = started.elapsed();
    let status = response.status().as_u16();
    record_metrics(route.clone(), status, latency);
    crate::telemetry::Access {
        method: method.as_str(),
        route: &route,
        status,
        latency,
        request_id: &id,
        merchant_id: response
            .extensions()
            .get::<ServedMerchant>()
            .map_or("", |m| m.0.as_str()),
        client,
    }
    .log();
    response
}

/// What a browser may do with an answer: no answer is sniffed as another type;
/// a page the service serves runs only what the service itself serves and is never framed
/// (`/docs`: Swagger UI needs its inline styles and data images; `/widget/` needs nothing inline).
/// API answers are JSON that no browser renders, so they carry `nosniff` alone.
fn security_headers(route: &str, headers: &mut axum::http::HeaderMap) {
    use axum::http::{HeaderValue, header};
    const DOCS: &str = "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; \
                        object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";
    const WIDGET: &str = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; \
                          img-src 'self' data:; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";
    // Everything from this service, nothing inline, never framed.
    const CONSOLE: &str = "default-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; \
                           frame-ancestors 'none'";
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    let page = match route {
        "/widget/" => Some(WIDGET),
        console if console.starts_with("/console/") => Some(CONSOLE),
        docs if docs.starts_with("/docs") => Some(DOCS),
        _ => None,
    };
    if let Some(policy) = page {
        headers.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(policy));
        headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
        headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    }
}

/// `http_requests_total{route,status}` and `http_request_duration_seconds{route}` (route: the
/// path template; `unmatched` for unknown paths).
fn record_metrics(route: String, status: u16, latency: Duration) {
    metrics::counter!("http_requests_total", "route" => route.clone(), "status" => status.to_string()).increment(1);
    metrics::histogram!("http_request_duration_seconds", "route" => route).record(latency.as_secs_f64());
}

#[derive(Debug, thiserror::Error)]
#[error("the request took longer than {0:?}")]
struct TimedOut(Duration);

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

/// Serves `state` on `listener` until `shutdown` resolves, then stops accepting, closes idle
/// connections and lets the requests in progress finish (`crate::server`). Keeps the taxonomy
/// fresh meanwhile.
pub async fn serve(
    listener: TcpListener,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let _ = crate::telemetry::metrics();
    let upkeep = tokio::spawn(upkeep(state.clone()));
    let share_upkeep = tokio::spawn(share_upkeep(state.clone()));
    let follow = tokio::spawn(follow_events(state.clone()));
    let prune = tokio::spawn(prune_events(state.clone()));
    // The delivery worker stops claiming as soon as the shutdown begins, and ends once the
    // attempts it has in flight have ended and been recorded (within the drain: each attempt is
    // bounded by `webhooks::worker::MAX_ATTEMPT`).
    let stopping = tokio_util::sync::CancellationToken::new();
    let deliver = tokio::spawn(crate::webhooks::deliver(
        state.store.webhooks(),
        state.by_hand.transport(),
        state.by_hand.clock(),
        state.by_hand.places(),
        state.settings.webhooks.clone(),
        crate::webhooks::worker::Wake {
            events: std::sync::Arc::clone(&state.events),
            look_every: crate::webhooks::worker::LOOK_EVERY,
        },
        stopping.clone(),
    ));
    let imports = tokio::spawn(crate::imports::run(
        state.store.imports(),
        std::sync::Arc::clone(&state.imports_wake),
        stopping.clone(),
    ));
    let signal = stopping.clone();
    let shutdown = async move {
        shutdown.await;
        signal.cancel();
    };
    let limits = state.settings.connections.clone();
    let served = crate::server::run(listener, router(state), limits, shutdown).await;
    upkeep.abort();
    share_upkeep.abort();
    follow.abort();
    prune.abort();
    stopping.cancel();
    let _ = deliver.await;
    let _ = imports.await;
    served
}

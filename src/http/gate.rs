//! The gate every `/v1` request passes before its handler:
//! authentication (401, the body not read), the key's scope (403 for a storefront key outside
//! search and the category list: nothing read, no budget spent), the bound on
//! requests in flight (429, nothing spent), the rate limit of the key's budget (the merchant's, or
//! its storefront keys', 429), then the handler; the answer gets the rate-limit headers.
//!
//! Authentication answers from memory where it can (`crate::key_verdicts`): a
//! client address whose 401 budget is spent gets 429 without a lookup (unless its key was served
//! lately), a key found unknown within the last minute gets 401 without one. Every 401 spends a
//! unit of the address's budget; the access line logs every answer with the client's address.
//! Those 429s are sent after a short wait (`TARPIT`), so that a flood from one address gets a few
//! answers a second a connection.

use std::net::{IpAddr, Ipv6Addr};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::OwnedSemaphorePermit;

use axum::extract::{FromRequestParts, Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderName, HeaderValue, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::error::{ApiError, ErrorCode};
use crate::auth::{self, Caller, KeyScope};
use crate::key_verdicts::Presented;
use crate::rate_limit::{self, Budget, Refusal};
use crate::server::ClientAddr;
use crate::state::{AppState, ServedMerchant};
use crate::store::MerchantRef;

const RATELIMIT_POLICY: HeaderName = HeaderName::from_static("ratelimit-policy");
const RATELIMIT: HeaderName = HeaderName::from_static("ratelimit");

/// Which keys a group of routes admits: the router says it, by the gate it puts its routes behind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Admits {
    /// Full keys only: a storefront key is refused 403.
    FullKeys,
    /// Full and storefront keys: what a web page needs, nothing that changes.
    StorefrontKeys,
}

/// The gate of the routes that full keys only may call.
pub async fn merchant_gate(State(state): State<AppState>, request: Request, next: Next) -> Response {
    gate(state, Admits::FullKeys, request, next).await
}

/// The gate of the routes that storefront keys may call too ([`STOREFRONT_ROUTES`]).
pub async fn storefront_gate(State(state): State<AppState>, request: Request, next: Next) -> Response {
    gate(state, Admits::StorefrontKeys, request, next).await
}

async fn gate(state: AppState, admits: Admits, mut request: Request, next: Next) -> Response {
    let client = request
        .extensions()
        .get::<ClientAddr>()
        .map_or(IpAddr::V6(Ipv6Addr::UNSPECIFIED), |c| c.0.ip());
    let Caller {
        merchant,
        scope,
        allowed_origins,
    } = match authenticate(&state, client, request.headers()).await {
        Ok(caller) => caller,
        Err(refused) => return refused,
    };
    let refusal = if scope == KeyScope::Storefront && admits == Admits::FullKeys {
        Some(format!(
            "this API key has the {} scope: it may call {} only",
            scope.as_str(),
            STOREFRONT_ROUTES.join(" and ")
        ))
    } else {
        foreign_origin(allowed_origins.as_deref(), request.headers())
    };
    if let Some(message) = refusal {
        let mut refused = ApiError::new(ErrorCode::Forbidden, message).into_response();
        // The access line names the merchant whose key was refused.
        refused.extensions_mut().insert(ServedMerchant(merchant.id));
        return refused;
    }
    let (limits, exceeded) = budget_of(&state, scope);
    let Ok(permit) = state.in_flight.clone().try_acquire_owned() else {
        return rate_limited(
            "the service is at its limit of requests in flight; retry shortly",
            Duration::from_secs(1),
            None,
        );
    };
    let headers = match limits.check(merchant.pk).await {
        None => None,
        Some(Ok(headers)) => Some(headers),
        Some(Err(Refusal { retry_after, headers })) => {
            metrics::counter!("rate_limited_total").increment(1);
            return rate_limited(exceeded, retry_after, Some(headers));
        }
    };
    let merchant_id = ServedMerchant(merchant.id.clone());
    request.extensions_mut().insert(merchant);
    request.extensions_mut().insert(scope);
    // Held here until the answer, unless the handler gives it back to wait (`InFlight::give_back`).
    let in_flight = InFlight(Arc::new(Mutex::new(Some(permit))));
    request.extensions_mut().insert(in_flight.clone());
    let mut response = next.run(request).await;
    drop(in_flight);
    response.extensions_mut().insert(merchant_id);
    if let Some(headers) = headers {
        insert_headers(response.headers_mut(), &headers);
    }
    response
}

/// Why a key that names its web origins may not serve this request, if it may not: the request
/// comes from a page of another origin. A request without `Origin` (a server, curl) is not a
/// page's, and is served.
fn foreign_origin(allowed: Option<&[String]>, headers: &HeaderMap) -> Option<String> {
    let allowed = allowed?;
    let origin = headers.get(header::ORIGIN)?;
    if allowed.iter().any(|a| a.as_bytes() == origin.as_bytes()) {
        return None;
    }
    let shown: String = String::from_utf8_lossy(origin.as_bytes()).chars().take(300).collect();
    Some(format!(
        "this storefront key may be used only from pages of {}; this page is of {shown}",
        allowed.join(", ")
    ))
}

/// A request's place among those in flight (`--max-in-flight`).
#[derive(Clone)]
pub struct InFlight(Arc<Mutex<Option<OwnedSemaphorePermit>>>);

impl InFlight {
    /// The request no longer counts as in flight: it waits (a feed request's
    /// `wait_s`) and does no work meanwhile.
    pub fn give_back(&self) {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).take();
    }
}

/// What a storefront key may call, as its 403 names them: the routes that
/// `app::router` puts behind [`storefront_gate`].
pub const STOREFRONT_ROUTES: [&str; 2] = ["/v1/location/search", "/v1/categories/list"];

/// The budget a key's requests spend, and what its 429 says.
fn budget_of(state: &AppState, scope: KeyScope) -> (&Budget, &'static str) {
    match scope {
        KeyScope::Full => (&state.limits, "rate limit exceeded for this merchant"),
        KeyScope::Storefront => (
            &state.storefront_limits,
            "rate limit exceeded for this merchant's storefront keys",
        ),
    }
}

fn insert_headers(map: &mut HeaderMap, headers: &rate_limit::Headers) {
    for (name, value) in [(RATELIMIT_POLICY, &headers.policy), (RATELIMIT, &headers.state)] {
        if let Ok(value) = HeaderValue::from_str(value) {
            map.insert(name, value);
        }
    }
}

fn rate_limited(message: &'static str, wait: Duration, headers: Option<rate_limit::Headers>) -> Response {
    let wait_ms = wait.as_nanos().div_ceil(1_000_000) as u64;
    let retry_after = wait_ms.div_ceil(1000).max(1);
    let mut response = ApiError::new(ErrorCode::RateLimited, message)
        .detail("retry_after_ms", wait_ms)
        .retry_after(retry_after)
        .into_response();
    if let Some(headers) = headers {
        insert_headers(response.headers_mut(), &headers);
    }
    response
}

/// Who the request's key speaks for, or the answer refusing it (401, or 429 past the address's
/// 401 budget).
async fn authenticate(state: &AppState, client: IpAddr, headers: &HeaderMap) -> Result<Caller, Response> {
    let token = bearer_token(headers);
    let presented = token.as_ref().ok().map(|token| Presented::new(token));
    if let Some(refusal) = state.keys.refusal(client, presented.as_ref()) {
        return Err(unauthenticated_limited(refusal).await);
    }
    let unknown = || ApiError::new(ErrorCode::InvalidApiKey, "unknown or revoked API key");
    let refused = match (token, presented) {
        (Err(e), _) => e,
        (Ok(_), Some(presented)) if state.keys.is_unknown(&presented) => unknown(),
        (Ok(token), Some(presented)) => match auth::authenticate(state.store.as_ref(), token).await {
            Ok(Some(caller)) => {
                state.keys.remember_valid(&presented);
                return Ok(caller);
            }
            Ok(None) => {
                state.keys.remember_unknown(&presented);
                unknown()
            }
            Err(e) => return Err(ApiError::from(e).into_response()),
        },
        (Ok(_), None) => unknown(),
    };
    Err(match state.keys.spend_failure(client) {
        Ok(()) => refused.into_response(),
        Err(refusal) => unauthenticated_limited(refusal).await,
    })
}

/// How long an address that spent its 401 budget waits for each 429 (never more than its
/// `Retry-After`): a flood on one connection gets four answers a second, at most 256 connections
/// an address, and costs the server a sleeping task per request rather than a busy one.
pub const TARPIT: Duration = Duration::from_millis(250);

/// 429 for an address that spent its 401 budget, after the tarpit. (The access line logs it with
/// the address.)
async fn unauthenticated_limited(refusal: Refusal) -> Response {
    metrics::counter!("rate_limited_total").increment(1);
    tokio::time::sleep(TARPIT.min(refusal.retry_after)).await;
    rate_limited(
        "too many requests with a missing or invalid API key from this address",
        refusal.retry_after,
        Some(refusal.headers),
    )
}

/// `Authorization: Bearer <token>` (the scheme word in any case), in exactly one header: of two,
/// neither is taken, since a proxy on the way may have added one the client did not send.
fn bearer_token(headers: &HeaderMap) -> Result<&str, ApiError> {
    let unauthenticated = |message: &'static str| ApiError::new(ErrorCode::Unauthenticated, message);
    let mut values = headers.get_all(header::AUTHORIZATION).iter();
    let value = values
        .next()
        .ok_or_else(|| unauthenticated("missing Authorization header; send Authorization: Bearer <api_key>"))?;
    if values.next().is_some() {
        return Err(unauthenticated(
            "more than one Authorization header; send one: Authorization: Bearer <api_key>",
        ));
    }
    let malformed = || unauthenticated("malformed Authorization header; send Authorization: Bearer <api_key>");
    let value = value.to_str().map_err(|_| malformed())?;
    let (scheme, token) = value.trim().split_once(' ').ok_or_else(malformed)?;
    let token = token.trim();
    if !scheme.eq_ignore_ascii_case("bearer") || token.is_empty() || token.contains(char::is_whitespace) {
        return Err(malformed());
    }
    Ok(token)
}

/// The merchant the gate authenticated.
pub struct Merchant(pub MerchantRef);

impl<S: Send + Sync> FromRequestParts<S> for Merchant {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, ApiError> {
        gated(parts).map(Merchant)
    }
}

/// The scope of the key the gate admitted.
pub struct Scope(pub KeyScope);

impl<S: Send + Sync> FromRequestParts<S> for Scope {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, ApiError> {
        gated(parts).map(Scope)
    }
}

/// What the gate put in the request for its handler; a 500 on a route the gate did not pass.
fn gated<T: Clone + Send + Sync + 'static>(parts: &Parts) -> Result<T, ApiError> {
    parts
        .extensions
        .get::<T>()
        .cloned()
        .ok_or_else(|| ApiError::internal(&NotGated))
}

#[derive(Debug, thiserror::Error)]
#[error("a /v1 route was reached without passing the gate")]
struct NotGated;

#[cfg(test)]
mod tests {
    use super::*;

    fn with(value: &'static str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(header::AUTHORIZATION, HeaderValue::from_static(value));
        h
    }

    #[test]
    fn bearer_tokens() {
        let token = |v: &'static str| bearer_token(&with(v)).map(str::to_owned).map_err(|e| e.code());
        assert_eq!(token("Bearer abc"), Ok("abc".to_owned()));
        assert_eq!(token("bearer abc"), Ok("abc".to_owned()));
        assert_eq!(token("BEARER  abc "), Ok("abc".to_owned()));
        for bad in ["Basic abc", "Bearer", "Bearer ", "Bearer a b", "abc"] {
            assert_eq!(token(bad), Err(ErrorCode::Unauthenticated), "{bad}");
        }
        assert_eq!(
            bearer_token(&HeaderMap::new()).map_err(|e| e.code()),
            Err(ErrorCode::Unauthenticated)
        );
        let mut twice = with("Bearer abc");
        twice.append(header::AUTHORIZATION, HeaderValue::from_static("Bearer abc"));
        assert_eq!(
            bearer_token(&twice).map_err(|e| e.code()),
            Err(ErrorCode::Unauthenticated)
        );
    }
}

//! Browsers (CORS): which web origins' pages may call the service, the headers
//! that let such a page read an answer (every answer, errors and the time cap's 500 included), and
//! the preflight, answered before authentication and the rate limit.
//!
//! Written here rather than with tower-http's `CorsLayer`, which answers every `OPTIONS` itself
//! with 200 and its allow-headers whatever the origin: the service answers a preflight from an allowed
//! origin 204, one from another origin 403 in the error body with no `Access-Control-*` header, and
//! wants the headers on answers the outermost layer makes (`app::observe` calls [`decorate`] last).

use axum::http::{HeaderMap, HeaderValue, Method, header};
use axum::response::{IntoResponse, Response};

use super::error::{ApiError, ErrorCode};
use crate::domain::key::is_key_origin;
use crate::store::Store;

/// The headers a page may read beyond the simple ones (`Content-Type`, …).
const EXPOSE: &str = "RateLimit, RateLimit-Policy, Retry-After, X-Request-Id";
/// How long a browser may reuse a preflight's answer, in seconds.
const MAX_AGE: &str = "600";

/// What the request's `Origin` is to us.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Origin {
    /// No `Origin` header: not a cross-origin browser request.
    None,
    /// One of the allowed origins (the header's own value).
    Allowed(HeaderValue),
    /// Any other origin.
    Other,
}

/// The request's origin against `allowed` (lower-case `scheme://host[:port]`, as `config` parses
/// them; browsers send the same form).
pub fn origin(allowed: &[String], headers: &HeaderMap) -> Origin {
    match headers.get(header::ORIGIN) {
        None => Origin::None,
        Some(value) => match value.to_str() {
            Ok(text) if allowed.iter().any(|a| a.eq_ignore_ascii_case(text)) => Origin::Allowed(value.clone()),
            _ => Origin::Other,
        },
    }
}

/// The request's origin against `allowed` and against the origins that storefront keys not
/// revoked name. Only a well-formed origin is looked up (one indexed read, remembered while the
/// database does not change); a store that cannot answer allows nothing more.
pub async fn origin_with_keys(allowed: &[String], store: &dyn Store, headers: &HeaderMap) -> Origin {
    let configured = origin(allowed, headers);
    let Some(value) = headers.get(header::ORIGIN).filter(|_| configured == Origin::Other) else {
        return configured;
    };
    let Ok(text) = value.to_str() else {
        return configured;
    };
    if !is_key_origin(text) {
        return configured;
    }
    match store.origin_allowed(text).await {
        Ok(true) => Origin::Allowed(value.clone()),
        Ok(false) => Origin::Other,
        Err(e) => {
            tracing::warn!(error = %e.chain(), "could not read the origins storefront keys allow");
            Origin::Other
        }
    }
}

/// A CORS preflight: `OPTIONS` with `Access-Control-Request-Method`, to a `/v1` path.
pub fn is_preflight(method: &Method, path: &str, headers: &HeaderMap) -> bool {
    method == Method::OPTIONS && path.starts_with("/v1/") && headers.contains_key(header::ACCESS_CONTROL_REQUEST_METHOD)
}

/// The answer to a preflight: 204 with what the page may send, or 403 for another origin.
pub fn preflight(origin: &Origin) -> Response {
    match origin {
        Origin::Allowed(_) => {
            let mut response = axum::http::StatusCode::NO_CONTENT.into_response();
            let headers = response.headers_mut();
            headers.insert(header::ACCESS_CONTROL_ALLOW_METHODS, HeaderValue::from_static("POST"));
            headers.insert(
                header::ACCESS_CONTROL_ALLOW_HEADERS,
                HeaderValue::from_static("authorization, content-type"),
            );
            headers.insert(header::ACCESS_CONTROL_MAX_AGE, HeaderValue::from_static(MAX_AGE));
            response
        }
        Origin::None | Origin::Other => ApiError::new(
            ErrorCode::Forbidden,
            "this origin may not call the service from a browser: a storefront key's allowed_origins, or the \
             operator's --cors-origin, allows an origin",
        )
        .into_response(),
    }
}

/// Adds what a page of an allowed origin needs to read `response`; `Vary: Origin` on every answer
/// to a request that named an origin (the answer depends on it).
pub fn decorate(origin: &Origin, headers: &mut HeaderMap) {
    if *origin == Origin::None {
        return;
    }
    headers.append(header::VARY, HeaderValue::from_static("Origin"));
    if let Origin::Allowed(value) = origin {
        headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, value.clone());
        headers.insert(header::ACCESS_CONTROL_EXPOSE_HEADERS, HeaderValue::from_static(EXPOSE));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_origin(value: &'static str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(header::ORIGIN, HeaderValue::from_static(value));
        h
    }

    #[test]
    fn origins_are_matched_whole() {
        let allowed = ["https://shop.example".to_owned(), "http://localhost:3000".to_owned()];
        assert_eq!(origin(&allowed, &HeaderMap::new()), Origin::None);
        assert!(matches!(
            origin(&allowed, &with_origin("https://shop.example")),
            Origin::Allowed(_)
        ));
        assert!(matches!(
            origin(&allowed, &with_origin("http://localhost:3000")),
            Origin::Allowed(_)
        ));
        for other in [
            "https://shop.example.evil",
            "http://shop.example",
            "https://shop.example:8443",
            "http://localhost:3001",
            "null",
        ] {
            assert_eq!(origin(&allowed, &with_origin(other)), Origin::Other, "{other}");
        }
        assert_eq!(origin(&[], &with_origin("https://shop.example")), Origin::Other);
    }
}

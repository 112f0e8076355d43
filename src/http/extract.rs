//! Our own body extractor, so every malformed request is answered with the contract's body, in
//! the contract's order (CONTRACT §3): content type, size, JSON syntax (400). Authentication ran
//! before, in the gate.

use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use axum::http::{HeaderMap, header};
use http_body_util::{BodyExt, LengthLimitError, Limited};
use serde::Deserialize;

use super::error::{ApiError, ErrorCode};

/// Largest request body accepted.
pub const MAX_BODY_BYTES: usize = 8 * 1024 * 1024;

/// A request body of the right type and size, to be read as JSON with [`JsonBody::parse`]. An
/// empty body is `{}` (its Content-Type is then not checked).
pub struct JsonBody(Bytes);

impl JsonBody {
    const EMPTY: &'static [u8] = b"{}";

    /// The body as a `T`, which may borrow from it; `MALFORMED_JSON` when it is not JSON.
    pub fn parse<'a, T: Deserialize<'a>>(&'a self) -> Result<T, ApiError> {
        serde_json::from_slice(&self.0).map_err(|e| {
            ApiError::new(ErrorCode::MalformedJson, format!("request body is not valid JSON: {e}"))
                .detail("line", e.line())
                .detail("column", e.column())
        })
    }
}

impl<S: Send + Sync> FromRequest<S> for JsonBody {
    type Rejection = ApiError;

    async fn from_request(request: Request, _state: &S) -> Result<Self, ApiError> {
        let (parts, body) = request.into_parts();
        let is_json = is_json(&parts.headers);
        let declared = parts
            .headers
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
        let unsupported = || ApiError::new(ErrorCode::UnsupportedMediaType, "Content-Type must be application/json");
        let too_large = || {
            ApiError::new(
                ErrorCode::PayloadTooLarge,
                format!("request body must be at most {MAX_BODY_BYTES} bytes"),
            )
            .detail("max_bytes", MAX_BODY_BYTES)
        };
        match declared {
            Some(0) => return Ok(JsonBody(Bytes::from_static(JsonBody::EMPTY))),
            Some(_) if !is_json => {
                discard(body).await;
                return Err(unsupported());
            }
            Some(n) if n > MAX_BODY_BYTES as u64 => {
                discard(body).await;
                return Err(too_large());
            }
            _ => {}
        }
        // Read at most the limit: a larger body is refused without being held in memory.
        let mut body = body;
        let bytes = match Limited::new(&mut body, MAX_BODY_BYTES).collect().await {
            Ok(collected) => collected.to_bytes(),
            Err(e) if e.downcast_ref::<LengthLimitError>().is_some() => {
                discard(body).await;
                return Err(if is_json { too_large() } else { unsupported() });
            }
            Err(_) => {
                return Err(ApiError::new(
                    ErrorCode::InvalidRequest,
                    "the request body could not be read",
                ));
            }
        };
        if bytes.is_empty() {
            return Ok(JsonBody(Bytes::from_static(JsonBody::EMPTY)));
        }
        if !is_json {
            return Err(unsupported());
        }
        Ok(JsonBody(bytes))
    }
}

/// Most bytes of a refused body read and dropped, so that an ordinary client, still sending,
/// gets the answer rather than a broken connection; past this the connection is closed.
const DISCARD_LIMIT: usize = 32 * 1024 * 1024;

/// Reads and drops what is left of a refused body, up to `DISCARD_LIMIT`, holding none of it.
async fn discard(mut body: axum::body::Body) {
    let mut dropped = 0usize;
    while dropped < DISCARD_LIMIT {
        match body.frame().await {
            Some(Ok(frame)) => dropped += frame.data_ref().map_or(0, |d| d.len()),
            _ => break,
        }
    }
}

/// `application/json`, optionally with a `charset` parameter (and nothing else).
fn is_json(headers: &HeaderMap) -> bool {
    let Some(value) = headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()) else {
        return false;
    };
    let mut parts = value.split(';');
    let essence = parts.next().unwrap_or_default().trim();
    essence.eq_ignore_ascii_case("application/json")
        && parts.all(|param| {
            param
                .split_once('=')
                .is_some_and(|(name, value)| name.trim().eq_ignore_ascii_case("charset") && !value.trim().is_empty())
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn with(name: header::HeaderName, value: &'static str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(name, HeaderValue::from_static(value));
        h
    }

    #[test]
    fn content_types() {
        for ok in [
            "application/json",
            "Application/JSON",
            "application/json; charset=utf-8",
            "application/json;charset=\"UTF-8\"",
        ] {
            assert!(is_json(&with(header::CONTENT_TYPE, ok)), "{ok}");
        }
        for bad in [
            "text/plain",
            "application/jsonx",
            "application/json; boundary=x",
            "application/json;",
            "application/x-www-form-urlencoded",
        ] {
            assert!(!is_json(&with(header::CONTENT_TYPE, bad)), "{bad}");
        }
        assert!(!is_json(&HeaderMap::new()));
    }
}

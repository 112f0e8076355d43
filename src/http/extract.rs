//! Our own body extractor, so every malformed request is answered with the contract's body, in
//! the contract's order: content type, size, JSON syntax (400). Authentication ran
//! before, in the gate.
//!
//! Memory stays bounded whatever a body's shape. A body is read only within
//! a server-wide budget of body bytes, of which one merchant's bodies in flight hold at most a
//! quarter (`body_budget`); a body that stalls for 10 s or is not complete within the request's
//! time is answered 408 `REQUEST_TIMEOUT`. It is parsed only within
//! a budget of parsed-form bytes, estimated from the body's count of JSON tokens before parsing: a
//! parsed value costs tens of bytes however short its text, so eight megabytes of `[0,0,…]` or of
//! `[[[…]]]` would become hundreds. Requests over a budget wait their turn (within their 30 s);
//! a body with more tokens than any valid request has (`MAX_TOKENS`) is refused before it is
//! parsed, as too large. Both budgets are held until the body and its parsed form are dropped.

use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use axum::http::{HeaderMap, header};
use http_body_util::BodyExt;
use serde::Deserialize;
use tokio::sync::OwnedSemaphorePermit;

use super::error::{ApiError, ErrorCode};
use crate::body_budget::BodyBudgets;
use crate::state::{AppState, BodyTiming};
use crate::store::MerchantRef;

/// Largest request body accepted.
pub const MAX_BODY_BYTES: usize = 8 * 1024 * 1024;

/// Largest body of an import's create, the one operation that takes more: a file of up to 6 MiB
/// is 8 MiB as base64, with the request's other keys around it.
pub const IMPORT_BODY_BYTES: usize = 9 * 1024 * 1024;

/// Most JSON tokens (`{`, `[`, `:` and `,` outside strings) in a body. The largest valid request,
/// 200 items each with 100 dated schedules and every field, has under 400,000.
pub const MAX_TOKENS: usize = 1_000_000;

/// What a parsed token costs at most, in bytes (a value, its slot in its array or object, growth).
const BYTES_PER_TOKEN: usize = 64;

/// A request body of the right type and size, to be read as JSON with [`JsonBody::parse`]. An
/// empty body is `{}` (its Content-Type is then not checked).
pub struct JsonBody {
    bytes: Bytes,
    /// Its share of the budgets, given back when the body (and so what was parsed from it) goes.
    _budget: Vec<OwnedSemaphorePermit>,
}

impl JsonBody {
    const EMPTY: &'static [u8] = b"{}";

    fn empty() -> JsonBody {
        JsonBody {
            bytes: Bytes::from_static(JsonBody::EMPTY),
            _budget: Vec::new(),
        }
    }

    /// Drops the body, keeping its share of the budgets: the answer an operation builds from a
    /// body (an invalid item's name echoed, its errors) is then counted too, until it is dropped.
    pub fn into_budget(self) -> Budget {
        Budget { _permits: self._budget }
    }

    /// The body as a `T`, which may borrow from it; `MALFORMED_JSON` when it is not JSON.
    pub fn parse<'a, T: Deserialize<'a>>(&'a self) -> Result<T, ApiError> {
        serde_json::from_slice(&self.bytes).map_err(|e| {
            ApiError::new(ErrorCode::MalformedJson, format!("request body is not valid JSON: {e}"))
                .detail("line", e.line())
                .detail("column", e.column())
        })
    }
}

impl FromRequest<AppState> for JsonBody {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &AppState) -> Result<Self, ApiError> {
        extract(request, state, MAX_BODY_BYTES).await
    }
}

/// The body of an import's create: a [`JsonBody`] of up to `IMPORT_BODY_BYTES`.
pub struct ImportBody(pub JsonBody);

impl FromRequest<AppState> for ImportBody {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &AppState) -> Result<Self, ApiError> {
        extract(request, state, IMPORT_BODY_BYTES).await.map(ImportBody)
    }
}

/// A body of at most `max` bytes, checked in the contract's order.
async fn extract(request: Request, state: &AppState, max: usize) -> Result<JsonBody, ApiError> {
    let budgets = &state.bodies;
    let (parts, body) = request.into_parts();
    let media = not_plain_json(&parts.headers);
    let is_json = media.is_none();
    let timing = parts.extensions.get::<BodyTiming>().copied().unwrap_or_default();
    let declared = parts
        .headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    let unsupported = || {
        ApiError::new(
            ErrorCode::UnsupportedMediaType,
            media.unwrap_or("Content-Type must be application/json"),
        )
    };
    let too_large = || {
        ApiError::new(
            ErrorCode::PayloadTooLarge,
            format!("request body must be at most {max} bytes"),
        )
        .detail("max_bytes", max)
    };
    match declared {
        Some(0) => return Ok(JsonBody::empty()),
        Some(_) if !is_json => {
            refuse_unsent(body, &parts.headers, timing).await;
            return Err(unsupported());
        }
        Some(n) if n > max as u64 => {
            refuse_unsent(body, &parts.headers, timing).await;
            return Err(too_large());
        }
        _ => {}
    }
    let merchant = parts.extensions.get::<MerchantRef>().map_or(0, |m| m.pk);
    let (bytes, mut budget) = match read(budgets, body, declared, merchant, timing, max).await {
        Ok(read) => read,
        Err(Unread::TooLarge) => return Err(if is_json { too_large() } else { unsupported() }),
        Err(Unread::Late(why)) => {
            tracing::warn!(
                request_id = super::request_id::current().as_deref().unwrap_or_default(),
                "{why}: answered 408"
            );
            return Err(ApiError::new(
                ErrorCode::RequestTimeout,
                format!("{why}; send the whole body without pausing"),
            ));
        }
        Err(Unread::Broken) => {
            return Err(ApiError::new(
                ErrorCode::InvalidRequest,
                "the request body could not be read",
            ));
        }
    };
    if bytes.is_empty() {
        return Ok(JsonBody::empty());
    }
    if !is_json {
        return Err(unsupported());
    }
    let Some(tokens) = tokens(&bytes, MAX_TOKENS) else {
        return Err(ApiError::new(
            ErrorCode::PayloadTooLarge,
            format!("request body must have at most {MAX_TOKENS} JSON values, keys and separators"),
        )
        .detail("max_tokens", MAX_TOKENS));
    };
    budget.push(
        budgets
            .parsing(tokens * BYTES_PER_TOKEN)
            .await
            .map_err(|closed| ApiError::internal(&closed))?,
    );
    Ok(JsonBody { bytes, _budget: budget })
}

/// `INVALID_REQUEST` at `field`.
pub fn invalid(field: &str, message: impl Into<std::borrow::Cow<'static, str>>) -> ApiError {
    ApiError::new(ErrorCode::InvalidRequest, message).field(field)
}

/// A parsed body as an object with no key but `keys`: else `INVALID_REQUEST`, at the first
/// unknown key in byte order (or at the body, `""`, when it is not an object).
pub fn object(body: serde_json::Value, keys: &[&str]) -> Result<serde_json::Map<String, serde_json::Value>, ApiError> {
    let serde_json::Value::Object(body) = body else {
        return Err(invalid("", "the request body must be a JSON object"));
    };
    if let Some(unknown) = body.keys().find(|k| !keys.contains(&k.as_str())) {
        let listed = match keys.split_last() {
            Some((last, [])) => (*last).to_owned(),
            Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
            None => "no field".to_owned(),
        };
        return Err(invalid(
            unknown,
            format!("unknown top-level field; the request has only {listed}"),
        ));
    }
    Ok(body)
}

/// A request's share of the memory budgets, held while what it accounts for lives.
pub struct Budget {
    _permits: Vec<OwnedSemaphorePermit>,
}

/// Why a body was not read.
enum Unread {
    /// Over its limit, or over its declared length (the rest was read and dropped, up to
    /// `DISCARD_LIMIT`).
    TooLarge,
    /// It stalled or was not complete in time: the reason, for the answer.
    Late(&'static str),
    /// The connection broke, or the client sent something that is not a body.
    Broken,
}

/// Reads a body within its budgets (`BodyBudgets::reading`: its declared size, else the limit,
/// reserved whole from its merchant's quarter and the server's budget). A pause of `timing.stall`
/// between frames, or a body (its wait for budget included) not complete by `timing.deadline`,
/// is `Late`.
async fn read(
    budgets: &BodyBudgets,
    mut body: axum::body::Body,
    declared: Option<u64>,
    merchant: i64,
    timing: BodyTiming,
    max: usize,
) -> Result<(Bytes, Vec<OwnedSemaphorePermit>), Unread> {
    let limit = declared.map_or(max, |n| (n as usize).min(max));
    let (mine, shared) = match tokio::time::timeout_at(timing.deadline.into(), budgets.reading(merchant, limit)).await {
        Err(_) => return Err(Unread::Late("the request body was not complete in time")),
        Ok(Ok(taken)) => taken,
        Ok(Err(_)) => return Err(Unread::Broken),
    };
    let mut buf: Vec<u8> = Vec::with_capacity(limit.min(BUFFER_START));
    loop {
        let frame = tokio::time::timeout_at(timing.deadline.into(), tokio::time::timeout(timing.stall, body.frame()));
        let frame = match frame.await {
            Err(_) => return Err(Unread::Late("the request body was not complete in time")),
            Ok(Err(_)) => return Err(Unread::Late("the request body stopped arriving")),
            Ok(Ok(None)) => break,
            Ok(Ok(Some(Err(_)))) => return Err(Unread::Broken),
            Ok(Ok(Some(Ok(frame)))) => frame,
        };
        let Ok(data) = frame.into_data() else {
            continue; // trailers
        };
        if buf.len() + data.len() > limit {
            drop((buf, mine, shared));
            discard(body, timing).await;
            return Err(Unread::TooLarge);
        }
        buf.extend_from_slice(&data);
    }
    // Complete: the merchant's quarter bounds bodies in flight, so it goes back now; the
    // server's budget stays held for as long as the body and what is built from it live.
    drop(mine);
    Ok((Bytes::from(buf), vec![shared]))
}

/// A body's buffer starts this large and grows as bytes arrive (never to more than reserved).
const BUFFER_START: usize = 64 * 1024;

/// The JSON tokens of `bytes` (`{`, `[`, `:` and `,` outside strings, plus one), or `None` past
/// `max`: an upper bound on the values and members parsing it makes, counted without parsing.
fn tokens(bytes: &[u8], max: usize) -> Option<usize> {
    let mut count = 1usize;
    let mut in_string = false;
    let mut escaped = false;
    for &b in bytes {
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
        } else {
            match b {
                b'"' => in_string = true,
                b'{' | b'[' | b':' | b',' => {
                    count += 1;
                    if count > max {
                        return None;
                    }
                }
                _ => {}
            }
        }
    }
    Some(count)
}

/// Most bytes of a refused body read and dropped, so that an ordinary client, still sending,
/// gets the answer rather than a broken connection; past this the connection is closed.
const DISCARD_LIMIT: usize = 32 * 1024 * 1024;

/// A body refused by its headers alone, before a byte of it is read: read and dropped
/// ([`discard`]), unless the client waits to be asked for it (`Expect: 100-continue`). Then it is
/// never asked for: the answer goes first, and hyper, finding the body unread, closes the
/// connection after it, since the client may still send the body and those bytes are no request.
async fn refuse_unsent(body: axum::body::Body, headers: &HeaderMap, timing: BodyTiming) {
    let waits_to_be_asked = headers
        .get(header::EXPECT)
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"100-continue"));
    if !waits_to_be_asked {
        discard(body, timing).await;
    }
}

/// Reads and drops what is left of a refused body, up to `DISCARD_LIMIT`, holding none of it,
/// for as long as it keeps arriving in time.
async fn discard(mut body: axum::body::Body, timing: BodyTiming) {
    let mut dropped = 0usize;
    while dropped < DISCARD_LIMIT {
        let frame = tokio::time::timeout_at(timing.deadline.into(), tokio::time::timeout(timing.stall, body.frame()));
        match frame.await {
            Ok(Ok(Some(Ok(frame)))) => dropped += frame.data_ref().map_or(0, |d| d.len()),
            _ => break,
        }
    }
}

/// Why a body is not JSON as the service reads it, or `None` when it is: its type must be JSON,
/// and its bytes the JSON itself, not compressed or otherwise encoded.
fn not_plain_json(headers: &HeaderMap) -> Option<&'static str> {
    if !is_json(headers) {
        return Some("Content-Type must be application/json");
    }
    let encoded = headers.get_all(header::CONTENT_ENCODING).iter().any(|value| {
        value.to_str().map_or(true, |codings| {
            // A list's empty elements are no coding.
            codings
                .split(',')
                .map(str::trim)
                .any(|c| !c.is_empty() && !c.eq_ignore_ascii_case("identity"))
        })
    });
    encoded.then_some("Content-Encoding must be absent or identity: send the JSON body as it is, not compressed")
}

/// `application/json`, optionally with a `charset` parameter (and nothing else), in exactly one
/// header: a body declared twice is not declared JSON.
fn is_json(headers: &HeaderMap) -> bool {
    let mut values = headers.get_all(header::CONTENT_TYPE).iter();
    let (Some(value), None) = (values.next(), values.next()) else {
        return false;
    };
    let Ok(value) = value.to_str() else {
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
    fn tokens_are_counted_outside_strings_and_capped() {
        assert_eq!(tokens(br#"{"a":[1,2],"b":"x,y:{[\"]"}"#, 100), Some(7));
        assert_eq!(tokens(b"[0,0,0,0]", 100), Some(5));
        assert_eq!(tokens(b"[0,0,0,0]", 4), None);
        assert_eq!(tokens(b"", 4), Some(1));
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
        let mut twice = with(header::CONTENT_TYPE, "application/json");
        twice.append(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
        assert!(!is_json(&twice));
    }

    #[test]
    fn only_an_unencoded_body_is_read() {
        let json = || with(header::CONTENT_TYPE, "application/json");
        assert_eq!(not_plain_json(&json()), None);
        for identity in ["identity", "Identity", "identity, identity", "", " , "] {
            let mut h = json();
            h.insert(header::CONTENT_ENCODING, HeaderValue::from_static(identity));
            assert_eq!(not_plain_json(&h), None, "{identity}");
        }
        for coding in ["gzip", "br", "deflate", "identity, gzip", ", gzip"] {
            let mut h = json();
            h.insert(header::CONTENT_ENCODING, HeaderValue::from_static(coding));
            assert!(
                not_plain_json(&h).is_some_and(|why| why.starts_with("Content-Encoding")),
                "{coding:?}"
            );
        }
        let mut h = with(header::CONTENT_TYPE, "text/plain");
        h.insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
        assert!(not_plain_json(&h).is_some_and(|why| why.starts_with("Content-Type")));
    }
}

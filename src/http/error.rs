//! Request-level errors: the body every non-200 answer carries,
//! `{"error_type", "code", "message", "details"}`, for the codes of the catalogue (`crate::codes`).
//!
//! A 500 never says what failed inside: the cause is logged with the request id, and the body
//! carries only that id (`details.request_id`).

use std::borrow::Cow;

use axum::Json;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde_json::{Map, Value};

pub use crate::codes::{ErrorCode, ErrorType};
use crate::errors::ErrorChain;
use crate::store::StoreError;

/// How long a client is asked to wait after the database was busy: the pool's wait has just
/// passed, and connections come free within a request's time.
const BUSY_RETRY_AFTER_SECS: u64 = 1;

/// A request-level error, answered with the contract's body.
#[derive(Debug)]
pub struct ApiError {
    code: ErrorCode,
    message: Cow<'static, str>,
    details: Map<String, Value>,
    retry_after_secs: Option<u64>,
    /// Answered with this status rather than the code's own.
    status: Option<u16>,
}

#[derive(Serialize)]
struct Body<'a> {
    error_type: ErrorType,
    code: ErrorCode,
    message: &'a str,
    details: &'a Map<String, Value>,
}

impl ApiError {
    pub fn new(code: ErrorCode, message: impl Into<Cow<'static, str>>) -> Self {
        ApiError {
            code,
            message: message.into(),
            details: Map::new(),
            retry_after_secs: None,
            status: None,
        }
    }

    /// `details.field`: the path of the offending key (`""` for the body itself).
    pub fn field(self, path: impl Into<String>) -> Self {
        self.detail("field", path.into())
    }

    pub fn detail(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.details.insert(key.to_owned(), value.into());
        self
    }

    /// `Retry-After`: for 429, and for a 500 that says the database was busy.
    pub fn retry_after(mut self, secs: u64) -> Self {
        self.retry_after_secs = Some(secs);
        self
    }

    /// `NOT_FOUND` for an id in a request's body: 400, not the 404 of a path.
    pub fn unknown_id(field: &str, message: impl Into<Cow<'static, str>>) -> Self {
        ApiError {
            status: Some(400),
            ..ApiError::new(ErrorCode::NotFound, message).field(field)
        }
    }

    pub fn code(&self) -> ErrorCode {
        self.code
    }

    /// `details.field`, when the error has one.
    pub fn field_path(&self) -> Option<&str> {
        self.details.get("field").and_then(Value::as_str)
    }

    /// A 500. The cause goes to the log (with the request id of the current request), never to
    /// the client.
    pub fn internal(cause: &(dyn std::error::Error + 'static)) -> Self {
        let request_id = super::request_id::current();
        tracing::error!(error = %ErrorChain(cause), request_id = request_id.as_deref().unwrap_or_default(), "request failed");
        Self::new(
            ErrorCode::Internal,
            "internal error; quote the request_id when reporting it",
        )
    }

    pub fn not_found() -> Self {
        Self::new(ErrorCode::NotFound, "no such endpoint")
    }

    pub fn method_not_allowed() -> Self {
        Self::new(ErrorCode::MethodNotAllowed, "method not allowed for this endpoint")
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::OutcomeUnknown(_) => {
                let request_id = super::request_id::current();
                tracing::error!(error = %ErrorChain(&e), request_id = request_id.as_deref().unwrap_or_default(), "outcome of a write unknown");
                ApiError::new(
                    ErrorCode::OutcomeUnknown,
                    "the connection to the database broke while this write was committing: it may or may not be stored; retry it safely, or read it back",
                )
            }
            // Every connection stayed taken for the whole wait: the load passes, so the client is
            // told when to try again, and the answer is counted apart from failures.
            StoreError::Busy(_) => {
                let request_id = super::request_id::current();
                tracing::warn!(error = %ErrorChain(&e), request_id = request_id.as_deref().unwrap_or_default(), "database busy");
                metrics::counter!("database_busy_total").increment(1);
                ApiError::new(
                    ErrorCode::Internal,
                    "the database is busy: no connection came free in time; nothing was done, try again after Retry-After",
                )
                .retry_after(BUSY_RETRY_AFTER_SECS)
            }
            e => ApiError::internal(&e),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(mut self) -> Response {
        if matches!(self.code, ErrorCode::Internal | ErrorCode::OutcomeUnknown)
            && let Some(id) = super::request_id::current()
        {
            self.details.insert("request_id".to_owned(), Value::String(id));
        }
        let status = self.status.unwrap_or(self.code.status());
        let body = Body {
            error_type: ErrorType::of_status(status),
            code: self.code,
            message: &self.message,
            details: &self.details,
        };
        let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let mut response = (status, Json(body)).into_response();
        let headers = response.headers_mut();
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        if let Some(secs) = self.retry_after_secs {
            headers.insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        response
    }
}

//! `POST /v1/categories/list` (CONTRACT §5.2–5.3): parse the filter and pagination, answer a
//! page from the in-memory taxonomy snapshot, with the next cursor and the exact total.

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value};

use super::body::Pieces;
use super::error::{ApiError, ErrorCode};
use super::extract::JsonBody;
use super::gate::Merchant;
use crate::app::AppState;
use crate::domain::category::CategoryStatus;
use crate::domain::category::taxonomy::Filter;

pub const DEFAULT_LIMIT: usize = 100;
pub const MAX_LIMIT: usize = 1000;
pub const MAX_IDS: usize = 1000;

/// Lists product categories: flat, filtered, in a stable order, paged by cursor.
///
/// Order: `sort_order` ascending with nulls last, then `id`. Pass `next_cursor` as
/// `pagination.cursor` with the same filter for the next page; `has_next` false ends the list.
/// `total` is the exact number of matching categories.
#[utoipa::path(
    post,
    path = "/v1/categories/list",
    tag = "categories",
    operation_id = "listCategories",
    request_body(
        content = crate::http::openapi::ListRequest,
        description = "Optional: an empty body means `{}`, the first page of every category",
        content_type = "application/json",
        example = json!(crate::http::openapi::list_example_request())
    ),
    responses(
        (status = 200, description = "A page of categories", body = crate::http::openapi::ListResponse,
         headers(
             ("X-Request-Id" = String, description = "The request's id, also in the logs"),
             ("RateLimit-Policy" = String, description = "\"merchant\";q=<burst>;w=<seconds to refill it>, while limiting is on"),
             ("RateLimit" = String, description = "\"merchant\";r=<units left>;t=<seconds until one more>, while limiting is on")
         ),
         example = json!(crate::http::openapi::list_example_answer())),
        (status = 400, description = "Malformed request: UNSUPPORTED_MEDIA_TYPE, PAYLOAD_TOO_LARGE, MALFORMED_JSON, INVALID_REQUEST, TOO_MANY_ITEMS, INVALID_FILTER, INVALID_PAGINATION, INVALID_CURSOR",
         body = crate::http::openapi::ErrorBody),
        (status = 401, description = "UNAUTHENTICATED or INVALID_API_KEY", body = crate::http::openapi::ErrorBody),
        (status = 429, description = "RATE_LIMITED", body = crate::http::openapi::ErrorBody,
         headers(("Retry-After" = u64, description = "Seconds to wait, rounded up"))),
        (status = 500, description = "INTERNAL", body = crate::http::openapi::ErrorBody)
    )
)]
pub async fn list(
    State(state): State<AppState>,
    Merchant(_merchant): Merchant,
    body: JsonBody,
) -> Result<Response, ApiError> {
    let request = ListRequest::parse(body.parse()?)?;
    let digest = request.filter.digest();
    let after = match &request.cursor {
        None => None,
        Some(cursor) => Some(state.cursors.decode(cursor, &digest).ok_or_else(|| {
            ApiError::new(
                ErrorCode::InvalidCursor,
                "the cursor is not valid for this request; start again without one",
            )
            .field("pagination.cursor")
        })?),
    };
    let taxonomy = state.taxonomy.load();
    let page = taxonomy.page(&request.filter, after.as_ref(), request.limit);

    let mut tail = Vec::with_capacity(160);
    tail.extend_from_slice(br#"],"pagination":{"next_cursor":"#);
    match &page.next {
        // Cursors are base64url: nothing in them needs escaping.
        Some(resume) => {
            tail.push(b'"');
            tail.extend_from_slice(state.cursors.encode(&digest, resume).as_bytes());
            tail.push(b'"');
        }
        None => tail.extend_from_slice(b"null"),
    }
    tail.extend_from_slice(br#","has_next":"#);
    tail.extend_from_slice(if page.next.is_some() { b"true" } else { b"false" });
    tail.extend_from_slice(br#","total":"#);
    tail.extend_from_slice(page.total.to_string().as_bytes());
    tail.extend_from_slice(b"}}");

    let mut body = Pieces::with_capacity(2 * SHARED_RUNS + 1);
    body.push(Bytes::from_static(HEAD));
    // A page of neighbours in the arena is sent from the snapshot itself.
    page.inside(SHARED_RUNS).into_iter().for_each(|part| body.push(part));
    body.push(tail);
    Ok(([(header::CONTENT_TYPE, "application/json")], Body::new(body)).into_response())
}

const HEAD: &[u8] = br#"{"categories":["#;

/// Up to this many runs of the arena a page is sent as they are; more are copied into one buffer.
const SHARED_RUNS: usize = 4;

/// A list request after the request-level checks of CONTRACT §3 and §5.2.
#[derive(Debug)]
struct ListRequest {
    filter: Filter,
    limit: usize,
    cursor: Option<String>,
}

fn invalid_filter(field: &str, message: impl Into<std::borrow::Cow<'static, str>>) -> ApiError {
    ApiError::new(ErrorCode::InvalidFilter, message).field(field)
}

fn invalid_pagination(field: &str, message: impl Into<std::borrow::Cow<'static, str>>) -> ApiError {
    ApiError::new(ErrorCode::InvalidPagination, message).field(field)
}

/// The object at a top-level key: `None` when absent or null.
fn section(body: &mut Map<String, Value>, key: &str) -> Result<Option<Map<String, Value>>, ApiError> {
    match body.remove(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(object)) => Ok(Some(object)),
        Some(_) => Err(ApiError::new(ErrorCode::InvalidRequest, format!("{key} must be an object or null")).field(key)),
    }
}

impl ListRequest {
    fn parse(body: Value) -> Result<Self, ApiError> {
        let Value::Object(mut body) = body else {
            return Err(ApiError::new(ErrorCode::InvalidRequest, "the request body must be a JSON object").field(""));
        };
        if let Some(unknown) = body.keys().find(|k| *k != "filter" && *k != "pagination") {
            return Err(ApiError::new(
                ErrorCode::InvalidRequest,
                "unknown top-level field; the request has only filter and pagination",
            )
            .field(unknown));
        }
        let filter = section(&mut body, "filter")?;
        let pagination = section(&mut body, "pagination")?;
        let filter = parse_filter(filter.unwrap_or_default())?;
        let (limit, cursor) = match pagination {
            None => (DEFAULT_LIMIT, None),
            Some(pagination) => parse_pagination(pagination)?,
        };
        Ok(ListRequest { filter, limit, cursor })
    }
}

fn parse_filter(filter: Map<String, Value>) -> Result<Filter, ApiError> {
    const KEYS: &[&str] = &["status", "leaf_only", "parent_id", "ids"];
    if let Some(unknown) = filter.keys().find(|k| !KEYS.contains(&k.as_str())) {
        return Err(invalid_filter(&format!("filter.{unknown}"), "unknown filter field"));
    }
    let get = |key: &str| filter.get(key).filter(|v| !v.is_null());
    let status = match get("status") {
        None => None,
        Some(v) => Some(
            v.as_str()
                .and_then(CategoryStatus::from_wire)
                .ok_or_else(|| invalid_filter("filter.status", "filter.status must be \"active\" or \"disabled\""))?,
        ),
    };
    let leaf_only = match get("leaf_only") {
        None => false,
        Some(v) => v
            .as_bool()
            .ok_or_else(|| invalid_filter("filter.leaf_only", "filter.leaf_only must be a boolean or null"))?,
    };
    let parent_id = match get("parent_id") {
        None => None,
        Some(v) => Some(
            v.as_str()
                .ok_or_else(|| invalid_filter("filter.parent_id", "filter.parent_id must be a string or null"))?
                .to_owned(),
        ),
    };
    let ids = match get("ids") {
        None => None,
        Some(v) => {
            let items = v
                .as_array()
                .ok_or_else(|| invalid_filter("filter.ids", "filter.ids must be an array of strings or null"))?;
            if items.len() > MAX_IDS {
                return Err(ApiError::new(
                    ErrorCode::TooManyItems,
                    format!("at most {MAX_IDS} ids, got {}", items.len()),
                )
                .field("filter.ids")
                .detail("max", MAX_IDS)
                .detail("actual", items.len()));
            }
            let ids = items
                .iter()
                .map(|id| id.as_str().map(str::to_owned))
                .collect::<Option<Vec<String>>>()
                .ok_or_else(|| invalid_filter("filter.ids", "every element of filter.ids must be a string"))?;
            Some(ids)
        }
    };
    Ok(Filter::new(status, leaf_only, parent_id, ids))
}

fn parse_pagination(pagination: Map<String, Value>) -> Result<(usize, Option<String>), ApiError> {
    if let Some(unknown) = pagination.keys().find(|k| *k != "limit" && *k != "cursor") {
        return Err(invalid_pagination(
            &format!("pagination.{unknown}"),
            "unknown pagination field",
        ));
    }
    let limit = match pagination.get("limit").filter(|v| !v.is_null()) {
        None => {
            return Err(invalid_pagination(
                "pagination.limit",
                "pagination.limit is required when pagination is sent",
            ));
        }
        Some(v) => match v.as_f64() {
            Some(n) if n.fract() == 0.0 && n >= 1.0 => n.min(MAX_LIMIT as f64) as usize,
            Some(n) if n.fract() == 0.0 => {
                return Err(invalid_pagination(
                    "pagination.limit",
                    "pagination.limit must be at least 1",
                ));
            }
            _ => {
                return Err(invalid_pagination(
                    "pagination.limit",
                    "pagination.limit must be an integer",
                ));
            }
        },
    };
    let cursor = match pagination.get("cursor") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if s.is_empty() => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => {
            return Err(
                ApiError::new(ErrorCode::InvalidCursor, "pagination.cursor must be a string or null")
                    .field("pagination.cursor"),
            );
        }
    };
    Ok((limit, cursor))
}

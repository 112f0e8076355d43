//! What every list request shares: the body's shape
//! (`{"filter", "pagination"}`), `pagination` with its limit and cursor, a filter's list of ids,
//! and the `pagination` object of the answer. Each list adds only its own filter keys.

use std::borrow::Cow;

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use super::error::{ApiError, ErrorCode};
pub use crate::domain::wire::{Total, answer_tail};
use crate::pagination::{Cursors, Position};

/// A list's page sizes: `pagination.limit` when `pagination` is not sent, and the largest served
/// (a larger limit is served as it).
#[derive(Clone, Copy, Debug)]
pub struct PageSize {
    pub default: usize,
    pub max: usize,
}

/// The page sizes of the category and location lists.
pub const LIST_PAGE: PageSize = PageSize {
    default: 100,
    max: 1000,
};
/// Most ids in one filter list.
pub const MAX_IDS: usize = 1000;

/// A list request after the request-level checks: its filter (as the list reads it), its page
/// size and its cursor (not yet decoded).
#[derive(Debug)]
pub struct ListRequest<F> {
    pub filter: F,
    pub limit: usize,
    pub cursor: Option<String>,
}

impl<F> ListRequest<F> {
    /// Checks the body's shape, then the filter object with `parse_filter` (given `{}` when the
    /// filter is absent or null), then `pagination`.
    pub fn parse(
        body: Value,
        parse_filter: impl FnOnce(&Map<String, Value>) -> Result<F, ApiError>,
    ) -> Result<Self, ApiError> {
        let mut body = super::extract::object(body, &["filter", "pagination"])?;
        let filter = section(&mut body, "filter")?;
        let pagination = section(&mut body, "pagination")?;
        let filter = parse_filter(&filter.unwrap_or_default())?;
        let (limit, cursor) = parse_pagination(pagination, LIST_PAGE)?;
        Ok(ListRequest { filter, limit, cursor })
    }

    /// The position the cursor continues after (`None` for the first page), or `INVALID_CURSOR`
    /// when the cursor is not one of this list's for the filter with `digest`.
    pub fn after<P: Position>(&self, cursors: &Cursors, digest: &[u8; 16]) -> Result<Option<P>, ApiError> {
        cursor_position(self.cursor.as_deref(), cursors, digest)
    }
}

/// A list of one merchant's own things that takes nothing but `pagination` (`{}` or
/// `{"pagination": …}`): its page size, the position its cursor continues after, and the digest
/// its cursors carry (`kind` and the merchant: a cursor of another list or merchant is refused).
#[derive(Debug)]
pub struct MerchantPage<P> {
    pub limit: usize,
    pub after: Option<P>,
    pub digest: [u8; 16],
}

impl<P: Position> MerchantPage<P> {
    /// `kind` names the list and the version of its cursors (`keys/v1`): a cursor keeps working
    /// across releases while both stay.
    pub fn parse(
        body: Value,
        size: PageSize,
        kind: &[u8],
        merchant_id: &str,
        cursors: &Cursors,
    ) -> Result<Self, ApiError> {
        let mut body = super::extract::object(body, &["pagination"])?;
        let (limit, cursor) = parse_pagination(section(&mut body, "pagination")?, size)?;
        let mut h = Sha256::new();
        h.update(kind);
        h.update(b"\0");
        h.update(merchant_id.as_bytes());
        let digest = crate::domain::wire::digest16(h);
        let after = cursor_position(cursor.as_deref(), cursors, &digest)?;
        Ok(MerchantPage { limit, after, digest })
    }
}

/// A page of a list read with one item more than `limit`: at most `limit` items, and the answer's
/// `pagination` object, whose cursor continues after the last item's `position`.
pub fn paged<T, P: Position>(
    mut items: Vec<T>,
    limit: usize,
    cursors: &Cursors,
    digest: &[u8; 16],
    position: impl Fn(&T) -> P,
) -> (Vec<T>, Value) {
    let has_next = items.len() > limit;
    items.truncate(limit);
    let next_cursor = items
        .last()
        .filter(|_| has_next)
        .map(|last| cursors.encode(digest, &position(last)));
    (
        items,
        serde_json::json!({"next_cursor": next_cursor, "has_next": has_next}),
    )
}

/// The position a cursor continues after (`None` without a cursor), or `INVALID_CURSOR` when it
/// is not one of this kind of list's for the question with `digest`.
pub fn cursor_position<P: Position>(
    cursor: Option<&str>,
    cursors: &Cursors,
    digest: &[u8; 16],
) -> Result<Option<P>, ApiError> {
    match cursor {
        None => Ok(None),
        Some(cursor) => cursors.decode(cursor, digest).map(Some).ok_or_else(|| {
            ApiError::new(
                ErrorCode::InvalidCursor,
                "the cursor is not valid for this request; start again without one",
            )
            .field("pagination.cursor")
        }),
    }
}

pub fn invalid_filter(field: &str, message: impl Into<Cow<'static, str>>) -> ApiError {
    ApiError::new(ErrorCode::InvalidFilter, message).field(field)
}

fn invalid_pagination(field: &str, message: impl Into<Cow<'static, str>>) -> ApiError {
    ApiError::new(ErrorCode::InvalidPagination, message).field(field)
}

/// `INVALID_FILTER` at the first key of `filter` (in its order) that is not in `known`.
pub fn reject_unknown_filter_keys(filter: &Map<String, Value>, known: &[&str]) -> Result<(), ApiError> {
    match filter.keys().find(|k| !known.contains(&k.as_str())) {
        Some(unknown) => Err(invalid_filter(&format!("filter.{unknown}"), "unknown filter field")),
        None => Ok(()),
    }
}

/// The value of a filter key; `None` when absent or null.
pub fn filter_value<'a>(filter: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
    filter.get(key).filter(|v| !v.is_null())
}

/// A filter's list of ids at `filter.<key>`: an array of at most `MAX_IDS` strings
/// (`TOO_MANY_ITEMS`), else `INVALID_FILTER`. `None` when absent or null.
pub fn id_list(filter: &Map<String, Value>, key: &str) -> Result<Option<Vec<String>>, ApiError> {
    let Some(v) = filter_value(filter, key) else {
        return Ok(None);
    };
    let field = format!("filter.{key}");
    let items = v
        .as_array()
        .ok_or_else(|| invalid_filter(&field, format!("{field} must be an array of strings or null")))?;
    if items.len() > MAX_IDS {
        return Err(ApiError::new(
            ErrorCode::TooManyItems,
            format!("at most {MAX_IDS} ids, got {}", items.len()),
        )
        .field(field)
        .detail("max", MAX_IDS)
        .detail("actual", items.len()));
    }
    items
        .iter()
        .map(|id| id.as_str().map(str::to_owned))
        .collect::<Option<Vec<String>>>()
        .map(Some)
        .ok_or_else(|| invalid_filter(&field, format!("every element of {field} must be a string")))
}

/// The object at a top-level key: `None` when absent or null.
pub fn section(body: &mut Map<String, Value>, key: &str) -> Result<Option<Map<String, Value>>, ApiError> {
    match body.remove(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(object)) => Ok(Some(object)),
        Some(_) => Err(ApiError::new(ErrorCode::InvalidRequest, format!("{key} must be an object or null")).field(key)),
    }
}

/// `pagination` (absent or null: the default page size from the start): its limit, served at
/// most `size.max`, and its cursor, not yet decoded.
pub fn parse_pagination(
    pagination: Option<Map<String, Value>>,
    size: PageSize,
) -> Result<(usize, Option<String>), ApiError> {
    let Some(pagination) = pagination else {
        return Ok((size.default, None));
    };
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
            Some(n) if n.fract() == 0.0 && n >= 1.0 => n.min(size.max as f64) as usize,
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

//! `POST /v1/categories/list`: parse the filter and pagination, answer a
//! page from the in-memory taxonomy snapshot, with the next cursor and the exact total.

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value};

use super::body::Pieces;
use super::error::ApiError;
use super::extract::JsonBody;
use super::gate::Merchant;
use super::paging::{
    ListRequest, Total, answer_tail, filter_value, id_list, invalid_filter, reject_unknown_filter_keys,
};
use crate::domain::category::CategoryStatus;
use crate::domain::category::taxonomy::Filter;
use crate::state::AppState;

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
        content = crate::http::schemas::ListRequest,
        description = "Optional: an empty body means `{}`, the first page of every category",
        content_type = "application/json",
        example = json!(crate::http::schemas::list_example_request())
    ),
    responses(
        (status = 200, description = "A page of categories", body = crate::http::schemas::ListResponse,
         example = json!(crate::http::schemas::list_example_answer())),
        (status = 400, description = "INVALID_REQUEST, TOO_MANY_ITEMS, INVALID_FILTER, INVALID_PAGINATION, INVALID_CURSOR",
         body = crate::http::schemas::ErrorBody)
    )
)]
pub async fn list(
    State(state): State<AppState>,
    Merchant(_merchant): Merchant,
    body: JsonBody,
) -> Result<Response, ApiError> {
    let request = ListRequest::parse(body.parse()?, parse_filter)?;
    let filter = &request.filter;
    let digest = filter.digest();
    let after = request.after(&state.cursors, &digest)?;
    let taxonomy = state.taxonomy.load();
    let page = taxonomy.page(filter, after.as_ref(), request.limit);
    let next_cursor = page.next.as_ref().map(|resume| state.cursors.encode(&digest, resume));
    let tail = answer_tail(next_cursor.as_deref(), Total::Of(Some(page.total as u64)));

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

fn parse_filter(filter: &Map<String, Value>) -> Result<Filter, ApiError> {
    reject_unknown_filter_keys(filter, &["status", "leaf_only", "parent_id", "ids"])?;
    let get = |key: &str| filter_value(filter, key);
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
    let ids = id_list(filter, "ids")?;
    Ok(Filter::new(status, leaf_only, parent_id, ids))
}

//! `POST /v1/location/create` (CONTRACT §4): check the request's shape, plan the batch, store
//! the valid items in one transaction, answer one result per item in request order.

use axum::extract::State;
use axum::{Extension, Json};
use serde::Serialize;
use serde_json::Value;

use super::error::{ApiError, ErrorCode};
use super::extract::JsonBody;
use super::gate::Merchant;
use crate::app::{AppState, Deadline};
use crate::domain::location::batch::{ItemResult, Plan};

/// Most items in one create request.
pub const MAX_ITEMS: usize = 200;

#[derive(Serialize)]
pub struct CreateResponse {
    pub locations: Vec<ItemResult>,
}

pub async fn create(
    State(state): State<AppState>,
    Merchant(merchant): Merchant,
    Extension(Deadline(deadline)): Extension<Deadline>,
    JsonBody(body): JsonBody,
) -> Result<Json<CreateResponse>, ApiError> {
    let items = request_items(body)?;
    let mut plan = Plan::new(&items);
    drop(items);
    let to_store = plan.take_to_store();
    // A batch with nothing valid never touches the database.
    let outcomes = if to_store.is_empty() {
        Vec::new()
    } else {
        state.store.create_locations(&merchant, to_store, deadline).await?
    };
    let locations = plan
        .finish(outcomes)
        .ok_or_else(|| ApiError::internal(&Inconsistent("the store answered for fewer items than it was given")))?;
    Ok(Json(CreateResponse { locations }))
}

/// The request's `locations`, after the request-level checks of CONTRACT §3.
fn request_items(body: Value) -> Result<Vec<Value>, ApiError> {
    let invalid = |message: &'static str, field: &str| ApiError::new(ErrorCode::InvalidRequest, message).field(field);
    let Value::Object(mut body) = body else {
        return Err(invalid("the request body must be a JSON object", ""));
    };
    if let Some(unknown) = body.keys().find(|k| *k != "locations") {
        return Err(invalid(
            "unknown top-level field; the request has only locations",
            unknown,
        ));
    }
    let Some(Value::Array(items)) = body.remove("locations") else {
        return Err(invalid("locations is required and must be an array", "locations"));
    };
    if items.len() > MAX_ITEMS {
        return Err(ApiError::new(
            ErrorCode::TooManyItems,
            format!("at most {MAX_ITEMS} locations per request, got {}", items.len()),
        )
        .field("locations")
        .detail("max", MAX_ITEMS)
        .detail("actual", items.len()));
    }
    Ok(items)
}

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct Inconsistent(&'static str);

//! `POST /v1/location/create` (CONTRACT §4): check the request's shape, plan the batch, store
//! the valid items in one transaction, answer one result per item in request order.

use axum::extract::State;
use axum::{Extension, Json};
use serde::Serialize;

use super::error::{ApiError, ErrorCode};
use super::extract::JsonBody;
use super::gate::Merchant;
use crate::app::{AppState, Deadline};
use crate::domain::json::{Value, take_member};
use crate::domain::location::batch::{ItemResult, Outcome, Plan};

/// Most items in one create request.
pub const MAX_ITEMS: usize = 200;

#[derive(Serialize, utoipa::ToSchema)]
pub struct CreateResponse {
    pub locations: Vec<ItemResult>,
}

/// Creates up to 200 delivery locations of the authenticated merchant.
///
/// One result per request item, in request order. A valid item is stored (`ACTIVE`, or
/// `QUARANTINE` with one STOREFRONT_RULE_VIOLATION when a live location of a shared type is within
/// 50 m); an invalid one is not (`FAILED`) and carries every error it has. Items with the same
/// `merchant_location_id`: the last one wins. Sending the same item again returns the stored
/// location; other content under a used id is a CONFLICT. All items are stored in one transaction,
/// and the answer is sent only after it is durably committed.
#[utoipa::path(
    post,
    path = "/v1/location/create",
    tag = "locations",
    operation_id = "createLocations",
    request_body(
        content = crate::http::openapi::CreateRequest,
        content_type = "application/json",
        examples(
            ("valid" = (summary = "A valid warehouse", value = json!(crate::http::openapi::create_example_valid()))),
            ("invalid" = (summary = "A pickup point with four errors", value = json!(crate::http::openapi::create_example_invalid())))
        )
    ),
    responses(
        (status = 200, description = "One result per request item, in request order", body = CreateResponse,
         headers(
             ("X-Request-Id" = String, description = "The request's id, also in the logs"),
             ("RateLimit-Policy" = String, description = "\"merchant\";q=<burst>;w=<seconds to refill it>, while limiting is on"),
             ("RateLimit" = String, description = "\"merchant\";r=<units left>;t=<seconds until one more>, while limiting is on")
         ),
         example = json!(crate::http::openapi::create_example_answer())),
        (status = 400, description = "Malformed request: UNSUPPORTED_MEDIA_TYPE, PAYLOAD_TOO_LARGE, MALFORMED_JSON, INVALID_REQUEST, TOO_MANY_ITEMS",
         body = crate::http::openapi::ErrorBody, example = json!(crate::http::openapi::error_example())),
        (status = 401, description = "UNAUTHENTICATED or INVALID_API_KEY", body = crate::http::openapi::ErrorBody),
        (status = 429, description = "RATE_LIMITED", body = crate::http::openapi::ErrorBody,
         headers(("Retry-After" = u64, description = "Seconds to wait, rounded up"))),
        (status = 500, description = "INTERNAL; nothing of the request is stored", body = crate::http::openapi::ErrorBody)
    )
)]
pub async fn create(
    State(state): State<AppState>,
    Merchant(merchant): Merchant,
    Extension(Deadline(deadline)): Extension<Deadline>,
    body: JsonBody,
) -> Result<Json<CreateResponse>, ApiError> {
    let items = request_items(body.parse()?)?;
    let mut plan = Plan::new(&items);
    drop(items);
    drop(body);
    let to_store = plan.take_to_store();
    // A batch with nothing valid never touches the database.
    let outcomes = if to_store.is_empty() {
        Vec::new()
    } else {
        state.store.create_locations(&merchant, to_store, deadline).await?
    };
    for outcome in &outcomes {
        if let Outcome::Created { quarantined_by, .. } = outcome {
            let status = if quarantined_by.is_some() {
                "QUARANTINE"
            } else {
                "ACTIVE"
            };
            metrics::counter!("locations_created_total", "status" => status).increment(1);
        }
    }
    let locations = plan
        .finish(outcomes)
        .ok_or_else(|| ApiError::internal(&Inconsistent("the store answered for fewer items than it was given")))?;
    Ok(Json(CreateResponse { locations }))
}

/// The request's `locations`, after the request-level checks of CONTRACT §3.
/// With several unknown keys the one first in byte order is named; with `locations` repeated,
/// the last one counts.
fn request_items(body: Value<'_>) -> Result<Vec<Value<'_>>, ApiError> {
    let invalid = |message: &'static str, field: &str| ApiError::new(ErrorCode::InvalidRequest, message).field(field);
    let Value::Object(body) = body else {
        return Err(invalid("the request body must be a JSON object", ""));
    };
    if let Some(unknown) = body.keys().filter(|k| *k != "locations").min() {
        return Err(invalid(
            "unknown top-level field; the request has only locations",
            unknown,
        ));
    }
    let Some(Value::Array(items)) = take_member(body, "locations") else {
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

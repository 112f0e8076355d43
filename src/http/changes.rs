//! `POST /v1/location/update`, `/archive`, `/restore` (CONTRACT §10): check the request's shape
//! (as create does), plan the items, let the store decide and write them in one transaction,
//! answer one result per item in request order.

use axum::extract::State;
use axum::{Extension, Json};
use serde::Serialize;

use super::error::ApiError;
use super::extract::JsonBody;
use super::gate::Merchant;
use super::locations::request_items;
use crate::domain::location::change::{ChangePlan, ChangeResult, Operation};
use crate::state::{AppState, Deadline};

#[derive(Serialize, utoipa::ToSchema)]
pub struct ChangeResponse {
    pub locations: Vec<ChangeResult>,
}

/// Replaces up to 200 locations' content (every field of a location, as create takes it).
///
/// Each item names a location by `location_id` or `merchant_location_id`; `expected_version`
/// makes the change conditional on the version read. `location_types` and `merchant_location_id`
/// are fixed at creation; an archived location is not updated. Content equal to the stored one
/// changes nothing. A location whose coordinates change is decided `ACTIVE` or `QUARANTINE` again.
#[utoipa::path(
    post,
    path = "/v1/location/update",
    tag = "locations",
    operation_id = "updateLocations",
    request_body(
        content = crate::http::schemas::UpdateRequest,
        content_type = "application/json",
        example = json!(crate::http::schemas::update_example_request())
    ),
    responses(
        (status = 200, description = "One result per request item, in request order", body = ChangeResponse,
         example = json!(crate::http::schemas::change_example_answer())),
        (status = 400, description = "Malformed request: UNSUPPORTED_MEDIA_TYPE, PAYLOAD_TOO_LARGE, MALFORMED_JSON, INVALID_REQUEST, TOO_MANY_ITEMS",
         body = crate::http::schemas::ErrorBody)
    )
)]
pub async fn update(
    state: State<AppState>,
    merchant: Merchant,
    deadline: Extension<Deadline>,
    body: JsonBody,
) -> Result<Json<ChangeResponse>, ApiError> {
    change(Operation::Update, state, merchant, deadline, body).await
}

/// Archives up to 200 locations: they leave the storefront (no neighbour of any other) and keep
/// their ids; the locations they kept in `QUARANTINE` are decided again.
#[utoipa::path(
    post,
    path = "/v1/location/archive",
    tag = "locations",
    operation_id = "archiveLocations",
    request_body(
        content = crate::http::schemas::NamingRequest,
        content_type = "application/json",
        example = json!(crate::http::schemas::archive_example_request())
    ),
    responses(
        (status = 200, description = "One result per request item, in request order", body = ChangeResponse),
        (status = 400, description = "Malformed request: UNSUPPORTED_MEDIA_TYPE, PAYLOAD_TOO_LARGE, MALFORMED_JSON, INVALID_REQUEST, TOO_MANY_ITEMS",
         body = crate::http::schemas::ErrorBody)
    )
)]
pub async fn archive(
    state: State<AppState>,
    merchant: Merchant,
    deadline: Extension<Deadline>,
    body: JsonBody,
) -> Result<Json<ChangeResponse>, ApiError> {
    change(Operation::Archive, state, merchant, deadline, body).await
}

/// Restores up to 200 archived locations, each decided `ACTIVE` or `QUARANTINE`.
#[utoipa::path(
    post,
    path = "/v1/location/restore",
    tag = "locations",
    operation_id = "restoreLocations",
    request_body(
        content = crate::http::schemas::NamingRequest,
        content_type = "application/json",
        example = json!(crate::http::schemas::archive_example_request())
    ),
    responses(
        (status = 200, description = "One result per request item, in request order", body = ChangeResponse),
        (status = 400, description = "Malformed request: UNSUPPORTED_MEDIA_TYPE, PAYLOAD_TOO_LARGE, MALFORMED_JSON, INVALID_REQUEST, TOO_MANY_ITEMS",
         body = crate::http::schemas::ErrorBody)
    )
)]
pub async fn restore(
    state: State<AppState>,
    merchant: Merchant,
    deadline: Extension<Deadline>,
    body: JsonBody,
) -> Result<Json<ChangeResponse>, ApiError> {
    change(Operation::Restore, state, merchant, deadline, body).await
}

async fn change(
    operation: Operation,
    State(state): State<AppState>,
    Merchant(merchant): Merchant,
    Extension(Deadline(deadline)): Extension<Deadline>,
    body: JsonBody,
) -> Result<Json<ChangeResponse>, ApiError> {
    let items = request_items(body.parse()?)?;
    let plan = ChangePlan::new(operation, &items);
    drop(items);
    drop(body);
    // A batch that names no location never touches the database.
    let decision = if plan.names_any() {
        state.store.change_locations(&merchant, plan, deadline).await?
    } else {
        plan.decide(Vec::new(), Vec::new(), Vec::new())
    };
    for status in &decision.changed {
        metrics::counter!("location_changes_total", "operation" => operation.as_str(), "status" => status.as_str())
            .increment(1);
    }
    Ok(Json(ChangeResponse {
        locations: decision.results,
    }))
}

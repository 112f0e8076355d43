//! `POST /v1/location/update`, `/archive`, `/restore`: check the request's shape
//! (as create does), plan the items, let the store decide and write them in one transaction,
//! answer one result per item in request order.

use axum::extract::State;
use axum::{Extension, Json};
use serde::Serialize;

use super::error::ApiError;
use super::extract::JsonBody;
use super::gate::Merchant;
use super::locations::batch_request;
use crate::domain::location::change::{ChangePlan, ChangeResult, Operation};
use crate::domain::location::request::{Batch, Options};
use crate::state::{AppState, Deadline};
use crate::store::WriteFor;

#[derive(Serialize, utoipa::ToSchema)]
pub struct ChangeResponse {
    pub locations: Vec<ChangeResult>,
}

/// Declares one change operation's handler and its OpenAPI operation: the three differ only in
/// their path, their request's shape and what they do (`Operation`).
macro_rules! change_operation {
    ($(#[doc = $doc:literal])* $name:ident, $operation:expr, $path:literal, $id:literal, $request:ty, $example:expr) => {
        $(#[doc = $doc])*
        #[utoipa::path(
            post,
            path = $path,
            tag = "locations",
            operation_id = $id,
            request_body(content = $request, content_type = "application/json", example = json!($example)),
            responses(
                (status = 200, description = "One result per request item, in request order", body = ChangeResponse,
                 example = json!(crate::http::schemas::change_example_answer())),
                (status = 400, description = "INVALID_REQUEST, TOO_MANY_ITEMS",
                 body = crate::http::schemas::ErrorBody)
            )
        )]
        pub async fn $name(
            state: State<AppState>,
            merchant: Merchant,
            deadline: Extension<Deadline>,
            body: JsonBody,
        ) -> Result<Json<ChangeResponse>, ApiError> {
            change($operation, state, merchant, deadline, body).await
        }
    };
}

change_operation!(
    /// Replaces up to 200 locations' content (every field of a location, as create takes it).
    ///
    /// Each item names a location by `location_id` or `merchant_location_id`; `expected_version`
    /// makes the change conditional on the version read. `location_types` and
    /// `merchant_location_id` are fixed at creation; an archived location is not updated. Content
    /// equal to the stored one changes nothing. A location whose coordinates change is decided
    /// `ACTIVE` or `QUARANTINE` again. With `"validate_only": true` nothing is changed: the answer
    /// is what the request would answer now (a changed location's `version` is the one it would get).
    update, Operation::Update, "/v1/location/update", "updateLocations",
    crate::http::schemas::UpdateRequest, crate::http::schemas::update_example_request()
);

change_operation!(
    /// Archives up to 200 locations: they leave the storefront (no neighbour of any other) and
    /// keep their ids; the locations they kept in `QUARANTINE` are decided again.
    archive, Operation::Archive, "/v1/location/archive", "archiveLocations",
    crate::http::schemas::NamingRequest, crate::http::schemas::archive_example_request()
);

change_operation!(
    /// Restores up to 200 archived locations, each decided `ACTIVE` or `QUARANTINE`.
    restore, Operation::Restore, "/v1/location/restore", "restoreLocations",
    crate::http::schemas::NamingRequest, crate::http::schemas::archive_example_request()
);

async fn change(
    operation: Operation,
    State(state): State<AppState>,
    Merchant(merchant): Merchant,
    Extension(Deadline(deadline)): Extension<Deadline>,
    body: JsonBody,
) -> Result<Json<ChangeResponse>, ApiError> {
    let options = match operation {
        Operation::Update => Options::ValidateOnly,
        Operation::Archive | Operation::Restore => Options::LocationsOnly,
    };
    let Batch { items, persist } = batch_request(body.parse()?, options)?;
    let plan = ChangePlan::new(operation, &items);
    drop(items);
    let _budget = body.into_budget();
    // A batch that names no location never touches the database.
    let decision = if plan.names_any() {
        let to = WriteFor {
            merchant: &merchant,
            persist,
            deadline,
        };
        state.store.change_locations(to, plan).await?
    } else {
        plan.decide(Vec::new(), Vec::new(), Vec::new())
    };
    for status in decision.changed.iter().filter(|_| persist.commits()) {
        metrics::counter!("location_changes_total", "operation" => operation.as_str(), "status" => status.as_str())
            .increment(1);
    }
    Ok(Json(ChangeResponse {
        locations: decision.results,
    }))
}

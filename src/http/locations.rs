//! `POST /v1/location/create`: check the request's shape, plan the batch, store
//! the valid items in one transaction, answer one result per item in request order.
//! `POST /v1/location/list`: parse the filter, read one page, answer the records.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Instant;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use serde::Serialize;
use serde_json::Map;

use super::body::Pieces;
use super::error::{ApiError, ErrorCode};
use super::extract::JsonBody;
use super::gate::{InFlight, Merchant};
use super::paging::{
    ListRequest, Total, answer_tail, filter_value, id_list, invalid_filter, reject_unknown_filter_keys,
};
use crate::domain::json::Value;
use crate::domain::location::batch::{ItemResult, Outcome, Plan};
use crate::domain::location::listing::{self, LocationFilter, LocationPage, LocationQuery};
use crate::domain::location::request::{self, Batch, Options, Refusal};
use crate::domain::location::schema::limits::ITEMS_PER_REQUEST;
use crate::domain::location::{LocationType, Status, TypeSet, text};
use crate::pagination::AfterSeq;
use crate::state::{AppState, Deadline};
use crate::store::heavy::Turn;
use crate::store::{ReadOn, StoreError, WriteFor};

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
///
/// With `"validate_only": true` nothing is stored: the answer is what the request would answer
/// now, except that a location that would be new has the `location_id` `""` (and a quarantine
/// decision against one of them names it as `locations[j]`).
#[utoipa::path(
    post,
    path = "/v1/location/create",
    tag = "locations",
    operation_id = "createLocations",
    request_body(
        content = crate::http::schemas::CreateRequest,
        content_type = "application/json",
        examples(
            ("valid" = (summary = "A valid warehouse", value = json!(crate::http::schemas::create_example_valid()))),
            ("invalid" = (summary = "A pickup point with four errors", value = json!(crate::http::schemas::create_example_invalid())))
        )
    ),
    responses(
        (status = 200, description = "One result per request item, in request order", body = CreateResponse,
         example = json!(crate::http::schemas::create_example_answer())),
        (status = 400, description = "INVALID_REQUEST, TOO_MANY_ITEMS",
         body = crate::http::schemas::ErrorBody, example = json!(crate::http::schemas::error_example()))
    )
)]
pub async fn create(
    State(state): State<AppState>,
    Merchant(merchant): Merchant,
    Extension(Deadline(deadline)): Extension<Deadline>,
    body: JsonBody,
) -> Result<Json<CreateResponse>, ApiError> {
    let Batch { items, persist } = batch_request(body.parse()?, Options::ValidateOnly)?;
    let mut plan = Plan::new(&items);
    drop(items);
    let _budget = body.into_budget();
    let to_store = plan.take_to_store();
    // A batch with nothing valid never touches the database.
    let outcomes = if to_store.is_empty() {
        Vec::new()
    } else {
        let to = WriteFor {
            merchant: &merchant,
            persist,
            deadline,
        };
        state.store.create_locations(to, to_store).await?
    };
    for outcome in outcomes.iter().filter(|_| persist.commits()) {
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
        .finish(outcomes, persist)
        .ok_or_else(|| ApiError::internal(&Inconsistent("the store answered for fewer items than it was given")))?;
    Ok(Json(CreateResponse { locations }))
}

/// The request-level checks, answered in the contract's error body when the request is refused
/// whole.
pub fn batch_request(body: Value<'_>, options: Options) -> Result<Batch<'_>, ApiError> {
    request::batch_request(body, options).map_err(|refusal| match refusal {
        Refusal::Invalid { message, field } => ApiError::new(ErrorCode::InvalidRequest, message).field(field),
        Refusal::TooManyItems { actual } => ApiError::new(
            ErrorCode::TooManyItems,
            format!("at most {ITEMS_PER_REQUEST} locations per request, got {actual}"),
        )
        .field("locations")
        .detail("max", ITEMS_PER_REQUEST)
        .detail("actual", actual),
    })
}

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct Inconsistent(&'static str);

/// Reads the authenticated merchant's locations back: their stored records, filtered, in creation
/// order, paged by cursor.
///
/// Every record has the same keys in the same order: `location_id`, `merchant_location_id`,
/// `status`, `issue` (why a location is in `QUARANTINE`), `version`, `created_at`, `updated_at`,
/// then every field of the location, `null` where it has none. Pass `next_cursor` as
/// `pagination.cursor` with the same filter for the next page; `total` is exact on every page,
/// except with `filter.text`, whose pages are found through a text index without counting what
/// matches (`total` is null).
#[utoipa::path(
    post,
    path = "/v1/location/list",
    tag = "locations",
    operation_id = "listLocations",
    request_body(
        content = crate::http::schemas::LocationListRequest,
        description = "Optional: an empty body means `{}`, the first page of every location",
        content_type = "application/json",
        example = json!(crate::http::schemas::location_list_example_request())
    ),
    responses(
        (status = 200, description = "A page of the merchant's locations", body = crate::http::schemas::LocationListResponse,
         example = json!(crate::http::schemas::location_list_example_answer())),
        (status = 400, description = "INVALID_REQUEST, TOO_MANY_ITEMS, INVALID_FILTER, INVALID_PAGINATION, INVALID_CURSOR",
         body = crate::http::schemas::ErrorBody),
        (status = 429, description = "RATE_LIMITED: or, a list filtered by `text`, its turn did not come within half its \
         time (a merchant's lists by text run one at a time)",
         body = crate::http::schemas::ErrorBody)
    )
)]
pub async fn list(
    State(state): State<AppState>,
    Merchant(merchant): Merchant,
    Extension(Deadline(deadline)): Extension<Deadline>,
    in_flight: Option<Extension<InFlight>>,
    body: JsonBody,
) -> Result<Response, ApiError> {
    let request = ListRequest::parse(body.parse()?, parse_filter)?;
    drop(body);
    let digest = request.filter.digest(&merchant.id);
    let after = request.after::<AfterSeq>(&state.cursors, &digest)?;
    let turn = match request.filter.text.as_deref() {
        // A text no location can hold answers an empty page without a turn or a read.
        Some(t) if !text::findable(t) => return Ok(list_answer(&state, &digest, LocationPage::default())),
        Some(_) => Some(text_turn(&state, merchant.pk, deadline, in_flight).await?),
        None => None,
    };
    let store = Arc::clone(&state.store);
    let list = async move {
        store
            .list_locations(LocationQuery {
                merchant_pk: merchant.pk,
                after: after.map(|a| a.0),
                limit: request.limit,
                filter: request.filter,
            })
            .await
    };
    let page = match turn {
        // The turn is held until the list's reading has ended, even when the request is
        // abandoned meanwhile (its client gone, its time up).
        Some(turn) => tokio::spawn(async move {
            let page = list.await;
            drop(turn);
            page
        })
        .await
        .unwrap_or(Err(StoreError::Unavailable))?,
        None => list.await?,
    };
    ReadOn::Primary.count();
    Ok(list_answer(&state, &digest, page))
}

/// The answer of a page of the location list whose filter's digest is `digest`.
fn list_answer(state: &AppState, digest: &[u8; 16], page: LocationPage) -> Response {
    let next_cursor = page
        .last_seq
        .filter(|_| page.has_next)
        .map(|last| state.cursors.encode(digest, &AfterSeq(last)));
    // The records' JSON as the store wrote it, between the answer's head and tail.
    let mut body = Pieces::with_capacity(3);
    body.push(Bytes::from_static(br#"{"locations":["#));
    body.push(page.json);
    body.push(answer_tail(next_cursor.as_deref(), Total::Of(page.total)));
    ([(header::CONTENT_TYPE, "application/json")], Body::new(body)).into_response()
}

/// Waits for the merchant's turn at a list filtered by text (`Services::text_turns`), out of the
/// requests in flight meanwhile, for half the time left before the deadline at most: the other
/// half is the list's. 429 when the turn does not come by then.
async fn text_turn(
    state: &AppState,
    merchant_pk: i64,
    deadline: Instant,
    in_flight: Option<Extension<InFlight>>,
) -> Result<Turn, ApiError> {
    if let Some(Extension(slot)) = in_flight {
        slot.give_back();
    }
    let now = Instant::now();
    let wait_until = now + deadline.saturating_duration_since(now) / 2;
    state.text_turns.turn_by(merchant_pk, wait_until).await.map_err(|_| {
        ApiError::new(
            ErrorCode::RateLimited,
            "this merchant's lists filtered by text run one at a time, and the ones before this one took \
             all its wait; try again in a few seconds",
        )
        .retry_after(TEXT_RETRY_S)
        .detail("retry_after_ms", TEXT_RETRY_S * 1000)
    })
}

/// When to try a list filtered by text again after its turn did not come.
const TEXT_RETRY_S: u64 = 5;

/// The location list's filter.
fn parse_filter(filter: &Map<String, serde_json::Value>) -> Result<LocationFilter, ApiError> {
    reject_unknown_filter_keys(
        filter,
        &[
            "location_ids",
            "merchant_location_ids",
            "status",
            "location_types",
            "text",
        ],
    )?;
    let location_ids = id_list(filter, "location_ids")?.map(BTreeSet::from_iter);
    let merchant_location_ids = id_list(filter, "merchant_location_ids")?.map(BTreeSet::from_iter);
    let status = match filter_value(filter, "status") {
        None => None,
        Some(v) => Some(
            v.as_str()
                .and_then(Status::from_wire)
                .filter(|s| listing::STORED.contains(s))
                .ok_or_else(|| {
                    invalid_filter(
                        "filter.status",
                        "filter.status must be ACTIVE, QUARANTINE or ARCHIVED, or null",
                    )
                })?,
        ),
    };
    let types = match filter_value(filter, "location_types") {
        None => None,
        Some(v) => {
            let invalid = || {
                invalid_filter(
                    "filter.location_types",
                    "filter.location_types must be a non-empty array of WAREHOUSE, PICKUP_POINT, CLICK_AND_COLLECT, or null",
                )
            };
            let items = v.as_array().filter(|a| !a.is_empty()).ok_or_else(invalid)?;
            let mut types = TypeSet::EMPTY;
            for item in items {
                types.insert(item.as_str().and_then(LocationType::from_wire).ok_or_else(invalid)?);
            }
            Some(types)
        }
    };
    let text = match filter_value(filter, "text") {
        None => None,
        Some(serde_json::Value::String(t)) if (1..=text::MAX_CHARS).contains(&t.chars().count()) => Some(text::fold(t)),
        Some(_) => {
            return Err(invalid_filter(
                "filter.text",
                format!(
                    "filter.text must be a string of 1 to {} characters (found in the name or merchant_location_id, \
                     in any letter case), or null",
                    text::MAX_CHARS
                ),
            ));
        }
    };
    Ok(LocationFilter {
        location_ids,
        merchant_location_ids,
        status,
        types,
        text,
    })
}

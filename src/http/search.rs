//! `POST /v1/location/search`: check the question, walk the store's spatial index
//! from the buyer outward, answer one page of results nearest first.

use axum::body::Body;
use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value};

use super::body::Pieces;
use super::error::ApiError;
use super::extract::{JsonBody, invalid, object};
use super::gate::{Merchant, Scope};
use super::paging::{
    PageSize, cursor_position, filter_value, invalid_filter, parse_pagination, reject_unknown_filter_keys, section,
};
use crate::domain::location::search::{
    self, Hit, LocalTime, MAX_RADIUS_M, Near, Parcel, Radius, SearchFilter, SearchQuery,
};
use crate::domain::location::{LocationType, PaymentMethod, PickupPointType, PickupService, TypeSet};
use crate::state::AppState;

/// The search's page sizes.
const SEARCH_PAGE: PageSize = PageSize {
    default: search::DEFAULT_LIMIT,
    max: search::MAX_LIMIT,
};

/// The top-level keys of a search.
const KEYS: [&str; 4] = ["near", "radius_m", "filter", "pagination"];

/// Finds the authenticated merchant's locations that can serve a buyer near a point.
///
/// Only `ACTIVE` locations within `radius_m` of `near` that meet every filter condition, nearest
/// first (`distance_m`, rounded to the metre), then oldest first. A storefront key finds only what
/// a buyer may see: locations that are a `PICKUP_POINT` or a `CLICK_AND_COLLECT` point, never a
/// warehouse alone (`filter.location_types` narrows that further). With a storefront key the page
/// may be read on a PostgreSQL replica within `--replica-max-lag` of the primary. Follow `next_cursor` with the same
/// question for the next page: every match is reachable, none is skipped, however many lie nearer.
#[utoipa::path(
    post,
    path = "/v1/location/search",
    tag = "locations",
    operation_id = "searchLocations",
    request_body(
        content = crate::http::search_schemas::SearchRequest,
        content_type = "application/json",
        example = json!(crate::http::search_schemas::search_example_request())
    ),
    responses(
        (status = 200, description = "A page of the locations found, nearest first", body = crate::http::search_schemas::SearchResponse,
         example = json!(crate::http::search_schemas::search_example_answer())),
        (status = 400, description = "INVALID_REQUEST, INVALID_FILTER, INVALID_PAGINATION, INVALID_CURSOR",
         body = crate::http::schemas::ErrorBody)
    )
)]
pub async fn search(
    State(state): State<AppState>,
    Merchant(merchant): Merchant,
    Scope(scope): Scope,
    body: JsonBody,
) -> Result<Response, ApiError> {
    let request = parse_request(body.parse()?)?;
    drop(body);
    let Request {
        near,
        radius,
        filter,
        limit,
        cursor,
    } = request;
    let filter = SearchFilter {
        buyers_only: scope.buyers_only(),
        ..filter
    };
    let query = SearchQuery::new(merchant.pk, near, radius, filter, limit);
    let digest = query.digest(&merchant.id);
    let query = query.after(cursor_position::<Hit>(cursor.as_deref(), &state.cursors, &digest)?);
    let page = state.search.search(query, scope.search_reads()).await?;
    let next_cursor = page
        .last
        .filter(|_| page.has_next)
        .map(|last| state.cursors.encode(&digest, &last));
    let mut body = Pieces::with_capacity(3);
    for piece in page.into_answer(next_cursor.as_deref()) {
        body.push(piece);
    }
    Ok(([(header::CONTENT_TYPE, "application/json")], Body::new(body)).into_response())
}

/// A search after the request-level checks.
#[derive(Debug)]
struct Request {
    near: Near,
    radius: Radius,
    filter: SearchFilter,
    limit: usize,
    cursor: Option<String>,
}

/// The search request's checks, in the order of its keys: an unknown top-level key, `near`,
/// `radius_m`, `filter`, `pagination`.
fn parse_request(body: Value) -> Result<Request, ApiError> {
    let mut body = object(body, &KEYS)?;
    let near = parse_near(body.remove("near"))?;
    let radius = parse_radius(body.remove("radius_m"))?;
    let filter = section(&mut body, "filter")?;
    let pagination = section(&mut body, "pagination")?;
    let filter = parse_filter(&filter.unwrap_or_default())?;
    let (limit, cursor) = parse_pagination(pagination, SEARCH_PAGE)?;
    Ok(Request {
        near,
        radius,
        filter,
        limit,
        cursor,
    })
}

fn parse_near(near: Option<Value>) -> Result<Near, ApiError> {
    let Some(Value::Object(near)) = near else {
        return Err(invalid(
            "near",
            "near is required: an object with latitude and longitude",
        ));
    };
    if let Some(unknown) = near.keys().find(|k| *k != "latitude" && *k != "longitude") {
        return Err(invalid(
            &format!("near.{unknown}"),
            "unknown field; near has only latitude and longitude",
        ));
    }
    let number = |key: &str| near.get(key).and_then(Value::as_f64);
    Near::new(number("latitude"), number("longitude")).map_err(|axis| {
        let (key, bound) = axis.name_and_bound();
        invalid(
            &format!("near.{key}"),
            format!("near.{key} is required: a number from -{bound} to {bound}"),
        )
    })
}

fn parse_radius(radius: Option<Value>) -> Result<Radius, ApiError> {
    match radius {
        None | Some(Value::Null) => Ok(Radius::DEFAULT),
        Some(v) => v.as_f64().and_then(Radius::new).ok_or_else(|| {
            invalid(
                "radius_m",
                format!("radius_m must be an integer from 1 to {MAX_RADIUS_M}, or null"),
            )
        }),
    }
}

/// A filter key whose value is one word of `E`.
fn one_of<E: crate::domain::wire::WireEnum>(filter: &Map<String, Value>, key: &str) -> Result<Option<E>, ApiError> {
    filter_value(filter, key)
        .map(|v| {
            v.as_str().and_then(E::parse_wire).ok_or_else(|| {
                invalid_filter(
                    &format!("filter.{key}"),
                    format!("filter.{key} must be one of {}, or null", E::listing()),
                )
            })
        })
        .transpose()
}

/// A filter key whose value is a non-empty array of words of `E`.
fn some_of<E: crate::domain::wire::WireEnum>(
    filter: &Map<String, Value>,
    key: &str,
) -> Result<Option<Vec<E>>, ApiError> {
    let Some(v) = filter_value(filter, key) else {
        return Ok(None);
    };
    let invalid = || {
        invalid_filter(
            &format!("filter.{key}"),
            format!("filter.{key} must be a non-empty array of {}, or null", E::listing()),
        )
    };
    let items = v.as_array().filter(|a| !a.is_empty()).ok_or_else(invalid)?;
    items
        .iter()
        .map(|item| item.as_str().and_then(E::parse_wire).ok_or_else(invalid))
        .collect::<Result<Vec<E>, ApiError>>()
        .map(Some)
}

/// The search's filter.
fn parse_filter(filter: &Map<String, Value>) -> Result<SearchFilter, ApiError> {
    reject_unknown_filter_keys(
        filter,
        &[
            "location_types",
            "pickup_point_type",
            "payment_method",
            "pickup_services",
            "accepts_returns",
            "parcel",
            "open_at",
        ],
    )?;
    let types = some_of::<LocationType>(filter, "location_types")?.map(|types| {
        let mut set = TypeSet::EMPTY;
        types.into_iter().for_each(|t| set.insert(t));
        set
    });
    let pickup_point_type = one_of::<PickupPointType>(filter, "pickup_point_type")?;
    let payment_method = one_of::<PaymentMethod>(filter, "payment_method")?;
    let services = some_of::<PickupService>(filter, "pickup_services")?.unwrap_or_default();
    let accepts_returns = filter_value(filter, "accepts_returns")
        .map(|v| {
            v.as_bool().ok_or_else(|| {
                invalid_filter(
                    "filter.accepts_returns",
                    "filter.accepts_returns must be true, false or null",
                )
            })
        })
        .transpose()?;
    let parcel = filter_value(filter, "parcel").map(parse_parcel).transpose()?;
    let open_at = filter_value(filter, "open_at")
        .map(|v| {
            v.as_str().and_then(LocalTime::parse).ok_or_else(|| {
                invalid_filter(
                    "filter.open_at",
                    "filter.open_at must be a local date and time YYYY-MM-DDTHH:MM (a real date, HH 00-23, MM 00-59), or null",
                )
            })
        })
        .transpose()?;
    Ok(SearchFilter {
        types,
        pickup_point_type,
        payment_method,
        services,
        accepts_returns,
        parcel,
        open_at,
        buyers_only: false,
    })
}

const PARCEL_KEYS: [&str; 4] = ["length", "width", "height", "weight"];

fn parse_parcel(parcel: &Value) -> Result<Parcel, ApiError> {
    let Some(parcel) = parcel.as_object() else {
        return Err(invalid_filter(
            "filter.parcel",
            "filter.parcel must be an object with length, width, height (cm) and weight (kg), or null",
        ));
    };
    if let Some(unknown) = parcel.keys().find(|k| !PARCEL_KEYS.contains(&k.as_str())) {
        return Err(invalid_filter(
            &format!("filter.parcel.{unknown}"),
            "unknown field; a parcel has length, width, height and weight",
        ));
    }
    let mut sizes = [0.0; 4];
    for (size, key) in sizes.iter_mut().zip(PARCEL_KEYS) {
        *size = parcel
            .get(key)
            .and_then(Value::as_f64)
            .filter(|n| *n > 0.0)
            .ok_or_else(|| {
                invalid_filter(
                    &format!("filter.parcel.{key}"),
                    format!("filter.parcel.{key} is required: a number greater than 0"),
                )
            })?;
    }
    let [length, width, height, weight] = sizes;
    Ok(Parcel::new(length, width, height, weight))
}

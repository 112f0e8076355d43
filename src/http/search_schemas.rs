//! The OpenAPI shapes of a buyer's search, beside `schemas`, which holds the rest, and its examples.

use serde::Deserialize;
use serde_json::json;
use utoipa::ToSchema;

use super::schemas::{LocationRecord, location_list_example_answer, page_limit};
use crate::domain::location::{LocationType, PaymentMethod, PickupPointType, PickupService};

/// The buyer's point.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub struct NearInput {
    #[schema(minimum = -90, maximum = 90)]
    latitude: f64,
    #[schema(minimum = -180, maximum = 180)]
    longitude: f64,
}

/// A parcel: sides in cm and weight in kg, each > 0. It fits a location when its weight is within
/// `limits.weight` and its sides, longest to shortest, are each within the location's, sorted the
/// same way (a parcel may be turned).
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub struct ParcelInput {
    #[schema(exclusive_minimum = 0)]
    length: f64,
    #[schema(exclusive_minimum = 0)]
    width: f64,
    #[schema(exclusive_minimum = 0)]
    height: f64,
    #[schema(exclusive_minimum = 0)]
    weight: f64,
}

/// The search's filter. Every key may be null (absent); all given conditions hold
/// together.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub struct SearchFilter {
    /// Locations that have at least one of these types.
    #[schema(min_items = 1)]
    location_types: Option<Vec<LocationType>>,
    pickup_point_type: Option<PickupPointType>,
    /// Locations whose `payment_methods` include it.
    payment_method: Option<PaymentMethod>,
    /// Locations that offer every one.
    #[schema(min_items = 1)]
    pickup_services: Option<Vec<PickupService>>,
    /// Locations whose `is_accepts_returns` equals it.
    accepts_returns: Option<bool>,
    /// Locations this parcel fits.
    parcel: Option<ParcelInput>,
    /// Locations open at this local date and time, `YYYY-MM-DDTHH:MM`, in their own wall-clock time:
    /// the dated element of the day when there is one (`is_works` false: closed), else the weekday's.
    #[schema(pattern = r"^\d{4}-\d{2}-\d{2}T([01]\d|2[0-3]):[0-5]\d$")]
    open_at: Option<String>,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub struct SearchPagination {
    /// `next_cursor` of the previous page, for the same question; empty or absent for the first page.
    cursor: Option<String>,
    /// Results per page, at least 1; above 100 is served as 100. 20 when `pagination` is absent.
    #[schema(schema_with = page_limit)]
    limit: i64,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub struct SearchRequest {
    near: NearInput,
    /// Metres, an integer; absent or null: 5000.
    #[schema(minimum = 1, maximum = 50000)]
    radius_m: Option<i64>,
    filter: Option<SearchFilter>,
    pagination: Option<SearchPagination>,
}

#[derive(ToSchema)]
#[allow(dead_code)]
pub struct SearchResult {
    /// The great-circle distance from `near`, rounded to the metre.
    #[schema(minimum = 0)]
    distance_m: i64,
    location: LocationRecord,
}

#[derive(ToSchema)]
#[allow(dead_code)]
pub struct SearchPaginationResponse {
    /// Null when `has_next` is false.
    next_cursor: Option<String>,
    /// Whether another page follows (exact).
    has_next: bool,
}

#[derive(ToSchema)]
#[allow(dead_code)]
pub struct SearchResponse {
    /// Nearest first; equal distances oldest first.
    results: Vec<SearchResult>,
    pagination: SearchPaginationResponse,
}

pub fn search_example_request() -> serde_json::Value {
    json!({
        "near": {"latitude": 55.7575, "longitude": 37.6134},
        "radius_m": 3000,
        "filter": {"parcel": {"length": 40, "width": 30, "height": 20, "weight": 4.5}, "open_at": "2026-11-28T11:00"},
        "pagination": {"limit": 1}
    })
}

pub fn search_example_answer() -> serde_json::Value {
    let mut record = location_list_example_answer()["locations"][0].clone();
    record["latitude"] = json!(55.7612);
    record["longitude"] = json!(37.6189);
    json!({
        "results": [{"distance_m": 532, "location": record}],
        "pagination": {"next_cursor": "U2VhcmNoIGN1cnNvcg", "has_next": true}
    })
}

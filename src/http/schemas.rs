//! The request and answer shapes of the OpenAPI document, and its examples (those of the search,
//! the event feed and the keys are beside it: `search_schemas`, `event_schemas`, `key_schemas`).
//!
//! The answer types the handlers serialise (`ItemResult`, `FieldError`, `Category`) document
//! themselves; the request shapes are declared here as documentation types, because the real
//! parsing is hand-written: it must report every error of every item, which no deserialiser does.

use serde::Deserialize;
use serde_json::json;
use utoipa::openapi::{ObjectBuilder, RefOr, Schema};
use utoipa::{PartialSchema, ToSchema};

use super::error::{ErrorCode, ErrorType};
use crate::domain::category::{Category, CategoryStatus};
use crate::domain::field_error::FieldError;
use crate::domain::location::listing::STORED;
use crate::domain::location::{LocationType, PaymentMethod, PickupPointType, PickupService, Provider, Status, Weekday};

/// The body of every non-200 answer.
#[derive(ToSchema)]
#[schema(as = ErrorBody)]
#[allow(dead_code)] // a documentation type
pub struct ErrorBody {
    error_type: ErrorType,
    code: ErrorCode,
    message: String,
    /// Additional details: `field` (the path of the offending key) where a field is at fault,
    /// `line`/`column` for MALFORMED_JSON, `max`/`actual` for TOO_MANY_ITEMS, `retry_after_ms`
    /// for RATE_LIMITED, `request_id` for INTERNAL.
    #[schema(value_type = Object)]
    details: serde_json::Map<String, serde_json::Value>,
}

// The fields' descriptions, with their rules and codes, are written in by `rules_doc.rs`, as the
// location input's are.
/// Day schedule.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub struct DayScheduleInput {
    #[schema(pattern = "^([01][0-9]|2[0-3]):[0-5][0-9]$")]
    time_start: String,
    #[schema(pattern = "^(([01][0-9]|2[0-3]):[0-5][0-9]|24:00)$")]
    time_end: String,
    #[serde(rename = "break")]
    break_time: Option<String>,
    shipping_cutoff: Option<String>,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub struct WorkingDayInput {
    day: Weekday,
    schedule: DayScheduleInput,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub struct DatedDayInput {
    #[schema(format = Date)]
    date: String,
    schedule: DayScheduleInput,
    is_works: bool,
}

/// Maximum order dimensions (cm) and weight (kg).
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub struct LimitsInput {
    length: f64,
    width: f64,
    height: f64,
    weight: f64,
}

// A location: its description, and each field's with its rule and codes, are written in by
// `rules_doc.rs` (where the rules of every field are said once).
#[derive(Deserialize, ToSchema)]
#[allow(dead_code)]
pub struct LocationInput {
    merchant_location_id: Option<String>,
    #[schema(min_items = 1)]
    location_types: Vec<LocationType>,
    #[schema(min_length = 1)]
    name: String,
    address_tail: Option<String>,
    comment: Option<String>,
    latitude: f64,
    longitude: f64,
    provider_id: Option<Provider>,
    provider_location_id: Option<String>,
    pickup_point_type: Option<PickupPointType>,
    payment_methods: Option<Vec<PaymentMethod>>,
    storage_period_days: Option<i64>,
    limits: LimitsInput,
    instruction: Option<String>,
    pickup_services: Option<Vec<PickupService>>,
    #[schema(min_items = 1)]
    working_schedule: Vec<WorkingDayInput>,
    individual_schedule: Option<Vec<DatedDayInput>>,
    is_accepts_returns: bool,
}

/// Declares a request item typed as the named schema, as clients generated from the document
/// should build it. The server still takes any JSON value there: items are validated one by one,
/// and an invalid item is answered in its own result (HTTP 200), never with a 400 for the request.
/// The description says so; an `anyOf` with an empty schema would say it too, but erased the
/// item's type in every generated client (`unknown`).
macro_rules! any_item {
    ($(#[$meta:meta])* $name:ident => $valid:literal, $description:literal) => {
        $(#[$meta])*
        pub struct $name;

        impl PartialSchema for $name {
            fn schema() -> RefOr<Schema> {
                let mut typed = utoipa::openapi::Ref::from_schema_name($valid);
                typed.description = $description.to_owned();
                RefOr::Ref(typed)
            }
        }

        impl ToSchema for $name {}

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                serde::de::IgnoredAny::deserialize(d).map(|_| $name)
            }
        }
    };
}

any_item!(
    /// One item of a create request.
    LocationItem => "LocationInput",
    "A location. Items are validated one by one: an item that breaks a rule (a field missing, \
     of the wrong type or out of range, an unknown key) is answered 200 in its own result with every \
     error it has, never with a 400 for the request, and the other items are stored."
);

any_item!(
    /// One item of an update request.
    UpdateItem => "UpdateInput",
    "The whole new content of a location, naming it by location_id or merchant_location_id. Items are \
     validated one by one: an invalid item is answered in its result, not with a 400 for the request."
);

any_item!(
    /// One item of an archive or restore request.
    NamingItem => "NamingInput",
    "Names a location by location_id or merchant_location_id. An invalid item is answered in its \
     result, not with a 400 for the request."
);

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub struct CreateRequest {
    locations: Vec<LocationItem>,
    /// `true`: decide every item exactly as now and store nothing. A location that would be new
    /// answers the `location_id` `""`. Absent, `null` or `false`: store them.
    validate_only: Option<bool>,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub struct ListFilter {
    status: Option<CategoryStatus>,
    leaf_only: Option<bool>,
    /// `""` for root categories; ignored when `ids` is given.
    parent_id: Option<String>,
    ids: Option<Vec<String>>,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub struct PaginationRequest {
    /// `next_cursor` of the previous page; empty or absent for the first page.
    cursor: Option<String>,
    /// Items per page, at least 1; above 1000 is served as 1000. 100 when `pagination` is absent.
    #[schema(schema_with = page_limit)]
    limit: i64,
}

/// An integer of at least 1, with no upper bound (no int64 format): larger limits are served.
pub(super) fn page_limit() -> ObjectBuilder {
    ObjectBuilder::new()
        .schema_type(utoipa::openapi::schema::Type::Integer)
        .minimum(Some(1))
        .description(Some("Items per page, at least 1; above 1000 is served as 1000."))
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub struct ListRequest {
    filter: Option<ListFilter>,
    pagination: Option<PaginationRequest>,
}

#[derive(ToSchema)]
#[allow(dead_code)]
pub struct PaginationResponse {
    /// Null when `has_next` is false.
    next_cursor: Option<String>,
    has_next: bool,
    /// The exact number of categories or locations matching the filter; null for a location list
    /// filtered by `text`.
    total: Option<u64>,
}

#[derive(ToSchema)]
#[allow(dead_code)]
pub struct ListResponse {
    categories: Vec<Category>,
    pagination: PaginationResponse,
}

/// A valid update item: the whole new content of the location (the fields of `LocationInput`),
/// naming it by `location_id`, or by `merchant_location_id` when that is absent.
#[derive(Deserialize, ToSchema)]
#[allow(dead_code)]
pub struct UpdateInput {
    /// The location to update; when absent, `merchant_location_id` names it.
    location_id: Option<String>,
    /// Apply only when the location is at this version.
    #[schema(minimum = 1)]
    expected_version: Option<i64>,
    #[serde(flatten)]
    content: LocationInput,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub struct UpdateRequest {
    locations: Vec<UpdateItem>,
    /// `true`: decide every item exactly as now and change nothing; a location that would change
    /// answers the `version` it would get. Absent, `null` or `false`: change them.
    validate_only: Option<bool>,
}

/// A valid archive or restore item: it only names the location.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub struct NamingInput {
    location_id: Option<String>,
    /// Names the location when `location_id` is absent.
    merchant_location_id: Option<String>,
    /// Apply only when the location is at this version.
    #[schema(minimum = 1)]
    expected_version: Option<i64>,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub struct NamingRequest {
    locations: Vec<NamingItem>,
}

/// The statuses a stored location has (`listing::STORED`).
fn stored_status() -> ObjectBuilder {
    ObjectBuilder::new()
        .schema_type(utoipa::openapi::schema::Type::String)
        .enum_values(Some(STORED.map(Status::as_str)))
}

/// A stored status or null, as a `oneOf` of the two: one enumeration that also holds `null` made
/// client generators invent a type for each of its members.
fn stored_status_or_null() -> Schema {
    Schema::OneOf(
        utoipa::openapi::schema::OneOfBuilder::new()
            .item(stored_status())
            .item(ObjectBuilder::new().schema_type(utoipa::openapi::schema::Type::Null))
            .build(),
    )
}

/// The location list's filter. Every key may be null (absent); all given
/// conditions hold together.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub struct LocationListFilter {
    /// Only these locations; unknown ids are skipped.
    location_ids: Option<Vec<String>>,
    /// Only the locations with these merchant ids; unknown ids are skipped.
    merchant_location_ids: Option<Vec<String>>,
    /// ACTIVE, QUARANTINE or ARCHIVED; absent: all three.
    #[schema(schema_with = stored_status_or_null)]
    status: Option<Status>,
    /// Locations that have at least one of these types.
    #[schema(min_items = 1)]
    location_types: Option<Vec<LocationType>>,
    /// Locations whose `name` or `merchant_location_id` contains this text, in any letter case
    /// (Unicode simple case folding). Found through a text index: the page's `total` is null.
    #[schema(min_length = 1, max_length = 100)]
    text: Option<String>,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub struct LocationListRequest {
    filter: Option<LocationListFilter>,
    pagination: Option<PaginationRequest>,
}

/// A stored location: every key present, in this order; `null` where there is none.
#[derive(Deserialize, ToSchema)]
#[allow(dead_code)]
pub struct LocationRecord {
    location_id: String,
    merchant_location_id: Option<String>,
    /// ACTIVE, QUARANTINE or ARCHIVED.
    #[schema(schema_with = stored_status)]
    status: Status,
    /// Why the location has its status: for QUARANTINE the STOREFRONT_RULE_VIOLATION at `latitude`
    /// naming the neighbour; null otherwise.
    #[schema(value_type = Option<FieldError>)]
    issue: Option<serde_json::Value>,
    /// 1 when created, one more at every change.
    #[schema(minimum = 1)]
    version: i64,
    /// UTC, RFC 3339 with milliseconds.
    #[schema(format = DateTime)]
    created_at: String,
    #[schema(format = DateTime)]
    updated_at: String,
    /// Then every field of the location, as stored (absent ones `null`).
    #[serde(flatten)]
    content: LocationInput,
}

#[derive(ToSchema)]
#[allow(dead_code)]
pub struct LocationListResponse {
    locations: Vec<LocationRecord>,
    pagination: PaginationResponse,
}

/// A valid create request (for the document's examples).
pub fn create_example_valid() -> serde_json::Value {
    json!({"locations": [{
        "merchant_location_id": "msk-wh-1",
        "location_types": ["WAREHOUSE"],
        "name": "Moscow warehouse",
        "address_tail": "101000, Russia, Moscow, Tverskaya street, 1",
        "latitude": 55.7575, "longitude": 37.6134,
        "limits": {"length": 200, "width": 120, "height": 150, "weight": 500},
        "working_schedule": [{"day": "MONDAY", "schedule": {"time_start": "09:00", "time_end": "18:00", "break": "13:00-14:00", "shipping_cutoff": "16:00"}}],
        "is_accepts_returns": true
    }]})
}

/// An invalid create request (for the document's examples).
pub fn create_example_invalid() -> serde_json::Value {
    json!({"locations": [{
        "merchant_location_id": "spb-pp-1",
        "location_types": ["PICKUP_POINT"],
        "name": "Nevsky pickup point",
        "latitude": 59.93, "longitude": 30.36,
        "pickup_point_type": "POSTAMAT",
        "payment_methods": ["CARD", "CASH"],
        "storage_period_days": 120,
        "limits": {"length": 60, "width": 40, "height": 40, "weight": 15},
        "working_schedule": [{"day": "MONDAY", "schedule": {"time_start": "10:00", "time_end": "09:00"}}],
        "is_accepts_returns": false
    }]})
}

pub fn create_example_answer() -> serde_json::Value {
    json!({"locations": [{
        "location_id": "",
        "merchant_location_id": "spb-pp-1",
        "name": "Nevsky pickup point",
        "status": "FAILED",
        "errors": [
            {"field": "locations[0].address_tail", "code": "CONDITIONALLY_REQUIRED", "message": "address_tail is required for PICKUP_POINT locations"},
            {"field": "locations[0].payment_methods", "code": "STOREFRONT_RULE_VIOLATION", "message": "a POSTAMAT does not take CASH"},
            {"field": "locations[0].storage_period_days", "code": "MAX_VALUE", "message": "must be at most 90 days"},
            {"field": "locations[0].working_schedule[0].schedule.time_end", "code": "INVALID_TIME_RANGE", "message": "time_end 09:00 must be after time_start 10:00"}
        ]
    }]})
}

pub fn list_example_request() -> serde_json::Value {
    json!({"filter": {"parent_id": "100", "status": "active"}, "pagination": {"limit": 2}})
}

pub fn list_example_answer() -> serde_json::Value {
    json!({
        "categories": [
            {"id": "101", "name": "Phones", "slug": "phones-101", "parent_id": "100", "leaf": false, "sort_order": 10,
             "icon_url": null, "description": null, "is_service": null, "is_digital": null, "status": "active"},
            {"id": "102", "name": "Computers", "slug": "computers-102", "parent_id": "100", "leaf": false, "sort_order": 20,
             "icon_url": null, "description": null, "is_service": null, "is_digital": null, "status": "active"}
        ],
        "pagination": {"next_cursor": "Am747F6z_KuADvmXN6imB88AAAABAQAAAAAAAAAUMTAyjh3rMXYmlL2SQzDX8Q9VMQ", "has_next": true, "total": 5}
    })
}

pub fn error_example() -> serde_json::Value {
    json!({"error_type": "ERROR_TYPE_BAD_REQUEST", "code": "TOO_MANY_ITEMS",
           "message": "at most 200 locations per request, got 201", "details": {"field": "locations", "max": 200, "actual": 201}})
}

pub fn location_list_example_request() -> serde_json::Value {
    json!({"filter": {"status": "ACTIVE", "location_types": ["WAREHOUSE"]}, "pagination": {"limit": 1}})
}

pub fn location_list_example_answer() -> serde_json::Value {
    json!({
        "locations": [{
            "location_id": "019ab5b2-7c1e-7d3a-9f1e-2c4d5e6f7a8b",
            "merchant_location_id": "msk-wh-1",
            "status": "ACTIVE",
            "issue": null,
            "version": 1,
            "created_at": "2026-11-22T09:30:00.123Z",
            "updated_at": "2026-11-22T09:30:00.123Z",
            "location_types": ["WAREHOUSE"],
            "name": "Moscow warehouse",
            "address_tail": "101000, Russia, Moscow, Tverskaya street, 1",
            "comment": null,
            "latitude": 55.7575, "longitude": 37.6134,
            "provider_id": null, "provider_location_id": null, "pickup_point_type": null,
            "payment_methods": null, "storage_period_days": null,
            "limits": {"length": 200.0, "width": 120.0, "height": 150.0, "weight": 500.0},
            "instruction": null, "pickup_services": null,
            "working_schedule": [{"day": "MONDAY", "schedule": {"time_start": "09:00", "time_end": "18:00", "break": "13:00-14:00", "shipping_cutoff": "16:00"}}],
            "individual_schedule": null,
            "is_accepts_returns": true
        }],
        "pagination": {"next_cursor": null, "has_next": false, "total": 1}
    })
}

pub fn update_example_request() -> serde_json::Value {
    let mut request = create_example_valid();
    request["locations"][0]["expected_version"] = json!(1);
    request["locations"][0]["working_schedule"] = json!([
        {"day": "MONDAY", "schedule": {"time_start": "09:00", "time_end": "20:00", "break": "13:00-14:00", "shipping_cutoff": "16:00"}},
        {"day": "TUESDAY", "schedule": {"time_start": "09:00", "time_end": "20:00"}}
    ]);
    request
}

pub fn archive_example_request() -> serde_json::Value {
    json!({"locations": [{"merchant_location_id": "msk-wh-1"}, {"location_id": "019ab5b2-7c1e-7d3a-9f1e-2c4d5e6f7a8b", "expected_version": 3}]})
}

pub fn change_example_answer() -> serde_json::Value {
    json!({"locations": [{
        "location_id": "019ab5b2-7c1e-7d3a-9f1e-2c4d5e6f7a8b",
        "merchant_location_id": "msk-wh-1",
        "name": "Moscow warehouse",
        "status": "ACTIVE",
        "version": 2,
        "errors": []
    }]})
}

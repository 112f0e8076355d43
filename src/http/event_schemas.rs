//! The OpenAPI shapes of the event feed (CONTRACT §18), beside `schemas`, which holds the rest.

use serde::Deserialize;
use serde_json::json;
use utoipa::ToSchema;

use super::schemas::PaginationRequest;
use crate::domain::event::EventType;
use crate::domain::location::Status;

/// Which events a feed reads.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub struct EventFilter {
    /// Only these types (a repeated type counts once); null or absent: every type.
    #[schema(min_items = 1)]
    types: Option<Vec<EventType>>,
}

/// Where a feed without a cursor begins.
#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
#[allow(dead_code)]
pub enum FeedStart {
    /// The oldest event kept.
    Oldest,
    /// The end of the log: no event, and a cursor from which the next ones are read.
    Latest,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub struct EventFeedRequest {
    filter: Option<EventFilter>,
    /// `limit` 1..1000 (default 100; more is served as 1000).
    pagination: Option<PaginationRequest>,
    /// Only without a cursor; default `oldest`.
    start: Option<FeedStart>,
    /// When the page would hold no event, wait up to this many seconds for one (default 0).
    #[schema(minimum = 0, maximum = 25)]
    wait_s: Option<u32>,
}

/// An event (CONTRACT §18.1): these keys, in this order.
#[derive(Deserialize, ToSchema)]
#[allow(dead_code)]
pub struct Event {
    /// Unique in the service; the same every time the event is read or delivered.
    event_id: String,
    /// The event's place in its merchant's log: 1, 2, 3… in commit order, without gaps.
    #[schema(minimum = 1)]
    sequence: i64,
    #[serde(rename = "type")]
    kind: EventType,
    /// The location's `updated_at` after the change.
    occurred_at: String,
    location_id: String,
    merchant_location_id: Option<String>,
    /// The location's version after the change.
    #[schema(minimum = 1)]
    version: i64,
    /// Its status after the change.
    status: Status,
    /// Its status before the change; null for `location.created`.
    previous_status: Option<Status>,
}

#[derive(Deserialize, ToSchema)]
#[allow(dead_code)]
pub struct FeedPagination {
    /// Never null: pass it as `pagination.cursor` (with the same filter) to continue after this page.
    next_cursor: String,
    /// Matching events after this page existed when it was answered.
    has_next: bool,
}

#[derive(Deserialize, ToSchema)]
#[allow(dead_code)]
pub struct EventFeedResponse {
    events: Vec<Event>,
    pagination: FeedPagination,
}

pub fn event_feed_example_request() -> serde_json::Value {
    json!({"filter": {"types": ["location.approved", "location.redecided"]}, "pagination": {"limit": 100}, "wait_s": 25})
}

pub fn event_feed_example_answer() -> serde_json::Value {
    json!({
        "events": [{
            "event_id": "evt_019ab5b27c1e7d3a9f1e2c4d5e6f7a8b",
            "sequence": 42,
            "type": "location.approved",
            "occurred_at": "2026-11-22T09:30:00.123Z",
            "location_id": "019ab5b2-7c1e-7d3a-9f1e-2c4d5e6f7a8b",
            "merchant_location_id": "msk-pp-7",
            "version": 2,
            "status": "ACTIVE",
            "previous_status": "QUARANTINE"
        }],
        "pagination": {"next_cursor": "RQAAAAAAAAAqW0s1Qe6q0vO3Yk6mZbmX1w", "has_next": false}
    })
}

/// An endpoint (CONTRACT §18.3); never its secret.
#[derive(Deserialize, ToSchema)]
#[allow(dead_code)]
pub struct WebhookObject {
    webhook_id: String,
    url: String,
    /// The event types it takes; null: every type.
    types: Option<Vec<EventType>>,
    /// `ENABLED` or `DISABLED`.
    status: String,
    /// Why it was disabled: `gone` (it answered 410) or `failing` (no attempt succeeded for 5
    /// days); null while enabled.
    disabled_reason: Option<String>,
    created_at: String,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub struct WebhookCreateRequest {
    /// An absolute https:// URL without user name, password or fragment, at most 2048
    /// characters, reaching a public address.
    url: String,
    /// The event types it takes (a repeated one counts once); null or absent: every type.
    #[schema(min_items = 1)]
    types: Option<Vec<EventType>>,
}

/// An empty object: the request has no field.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct EmptyRequest {}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub struct WebhookIdRequest {
    webhook_id: String,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub struct DeliveriesRequest {
    webhook_id: String,
    /// `limit` 1..1000 (default 100).
    pagination: Option<PaginationRequest>,
}

/// One delivery attempt.
#[derive(Deserialize, ToSchema)]
#[allow(dead_code)]
pub struct AttemptObject {
    event_id: String,
    sequence: i64,
    /// 1 for the first.
    #[schema(minimum = 1)]
    attempt: i64,
    attempted_at: String,
    /// `delivered` or `failed`.
    outcome: String,
    /// The receiver's status, when it answered.
    http_status: Option<i64>,
    /// Why it failed, in words.
    error: Option<String>,
    duration_ms: i64,
}

#[derive(Deserialize, ToSchema)]
#[allow(dead_code)]
pub struct AttemptPagination {
    /// Null on the last page.
    next_cursor: Option<String>,
    has_next: bool,
}

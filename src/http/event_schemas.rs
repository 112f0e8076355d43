//! The OpenAPI shapes of the event feed, beside `schemas`, which holds the rest.

use serde::Deserialize;
use serde_json::json;
use utoipa::ToSchema;

use super::schemas::PaginationRequest;
use crate::domain::event::EventType;
use crate::domain::location::Status;
use crate::domain::webhook::{Outcome, Trigger};

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

/// An event: these keys, in this order.
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

/// An endpoint; never its secret.
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
    /// characters, reaching a public address (an IPv4 address written in IPv6 counts as that
    /// IPv4 address), on a port other than 0.
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
    /// Only these attempts; null or absent: every one. A cursor is bound to the filter it was
    /// issued with.
    filter: Option<AttemptFilterInput>,
    /// `limit` 1..1000 (default 100).
    pagination: Option<PaginationRequest>,
}

/// Which attempts the deliveries log answers.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub struct AttemptFilterInput {
    /// Only the attempts that ended so; null: either.
    outcome: Option<Outcome>,
    /// Only the attempts of this event (or test event); null: every event.
    event_id: Option<String>,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub struct ResendRequest {
    webhook_id: String,
    /// An event the endpoint was to receive: of the merchant, still kept, of a type it takes,
    /// appended after it was created.
    event_id: String,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub struct RecoverRequest {
    /// An enabled endpoint.
    webhook_id: String,
    /// RFC 3339 with an offset: the events that occurred at or after it.
    #[schema(format = DateTime)]
    since: String,
    /// RFC 3339 with an offset, after `since`: the events that occurred before it; null or
    /// absent: now.
    #[schema(format = DateTime)]
    until: Option<String>,
}

/// The test event: sent by `POST /v1/webhook/test` only, never in the feed, never
/// retried; the keys of an event, in its order, with no location.
#[derive(Deserialize, ToSchema)]
#[allow(dead_code)]
pub struct TestEvent {
    /// A new id for each test.
    event_id: String,
    /// Always null: a test event is in no log.
    sequence: Option<i64>,
    /// Always `webhook.test`.
    #[serde(rename = "type")]
    #[schema(pattern = "^webhook\\.test$")]
    kind: String,
    /// When the test was sent.
    occurred_at: String,
    /// Always null.
    location_id: Option<String>,
    /// Always null.
    merchant_location_id: Option<String>,
    /// Always null.
    version: Option<i64>,
    /// Always null.
    status: Option<Status>,
    /// Always null.
    previous_status: Option<Status>,
}

/// One delivery attempt.
#[derive(Deserialize, ToSchema)]
#[allow(dead_code)]
pub struct AttemptObject {
    event_id: String,
    /// The event's sequence; null for a test event.
    sequence: Option<i64>,
    /// 1 for the first.
    #[schema(minimum = 1)]
    attempt: i64,
    attempted_at: String,
    outcome: Outcome,
    /// The receiver's status, when it answered.
    http_status: Option<i64>,
    /// Why it failed, in words.
    error: Option<String>,
    duration_ms: i64,
    /// What made it: the schedule (a recovery's attempts included), a resend, or a test.
    trigger: Trigger,
}

#[derive(Deserialize, ToSchema)]
#[allow(dead_code)]
pub struct AttemptPagination {
    /// Null on the last page.
    next_cursor: Option<String>,
    has_next: bool,
}

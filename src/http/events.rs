//! `POST /v1/location/events`: the merchant's event feed, followed with a
//! cursor, waiting up to `wait_s` for the next event without a database connection or a place
//! among the requests in flight.

use std::time::{Duration, Instant};

use axum::Extension;
use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value};

use super::error::{ApiError, ErrorCode};
use super::extract::{JsonBody, invalid, object};
use super::gate::{InFlight, Merchant};
use super::paging::{PageSize, cursor_position, invalid_filter, parse_pagination, reject_unknown_filter_keys, section};
use crate::domain::event::{EventPage, EventQuery, EventType, EventTypes, feed_digest};
use crate::pagination::AfterEvent;
use crate::state::{AppState, Deadline};
use crate::store::ReadOn;
use crate::store::event_signal::RECHECK;

/// The feed's page sizes.
const FEED_PAGE: PageSize = PageSize {
    default: 100,
    max: 1000,
};

/// The longest `wait_s`.
const MAX_WAIT_S: u64 = 25;

/// Where a feed without a cursor begins.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Start {
    Oldest,
    Latest,
}

/// A feed request after its request-level checks.
#[derive(Debug)]
struct FeedRequest {
    types: EventTypes,
    limit: usize,
    cursor: Option<String>,
    start: Start,
    wait: Duration,
}

/// A set of event types at `field` (`filter.types`; a webhook's `types`): a non-empty array of
/// the event types, a repeated one counting once; `None` when absent or null.
pub fn parse_types(
    value: Option<&Value>,
    on_error: impl Fn(String) -> ApiError,
) -> Result<Option<EventTypes>, ApiError> {
    let Some(value) = value.filter(|v| !v.is_null()) else {
        return Ok(None);
    };
    let message = || {
        format!(
            "must be a non-empty array of event types ({}), or null",
            EventType::ALL.iter().map(|t| t.as_str()).collect::<Vec<_>>().join(", ")
        )
    };
    let items = value
        .as_array()
        .filter(|a| !a.is_empty())
        .ok_or_else(|| on_error(message()))?;
    items
        .iter()
        .map(|item| {
            item.as_str()
                .and_then(EventType::from_wire)
                .ok_or_else(|| on_error(message()))
        })
        .collect::<Result<EventTypes, _>>()
        .map(Some)
}

fn parse_filter(filter: &Map<String, Value>) -> Result<EventTypes, ApiError> {
    reject_unknown_filter_keys(filter, &["types"])?;
    let types = parse_types(filter.get("types"), |m| {
        invalid_filter("filter.types", format!("filter.types {m}"))
    })?;
    Ok(types.unwrap_or(EventTypes::ALL))
}

impl FeedRequest {
    fn parse(body: Value) -> Result<Self, ApiError> {
        let mut body = object(body, &["filter", "pagination", "start", "wait_s"])?;
        let filter = section(&mut body, "filter")?;
        let types = parse_filter(&filter.unwrap_or_default())?;
        let pagination = section(&mut body, "pagination")?;
        let (limit, cursor) = parse_pagination(pagination, FEED_PAGE)?;
        let start = match body.get("start") {
            None | Some(Value::Null) => None,
            Some(v) => Some(match v.as_str() {
                Some("oldest") => Start::Oldest,
                Some("latest") => Start::Latest,
                _ => return Err(invalid("start", "start must be \"oldest\" or \"latest\", or null")),
            }),
        };
        if start.is_some() && cursor.is_some() {
            return Err(invalid(
                "start",
                "start is only for a request without a cursor: the cursor says where the feed continues",
            ));
        }
        let wait = match body.get("wait_s") {
            None | Some(Value::Null) => 0,
            Some(v) => match v.as_f64() {
                Some(n) if n.fract() == 0.0 && (0.0..=MAX_WAIT_S as f64).contains(&n) => n as u64,
                _ => {
                    return Err(invalid(
                        "wait_s",
                        format!("wait_s must be an integer from 0 to {MAX_WAIT_S}"),
                    ));
                }
            },
        };
        Ok(FeedRequest {
            types,
            limit,
            cursor,
            start: start.unwrap_or(Start::Oldest),
            wait: Duration::from_secs(wait),
        })
    }
}

/// Reads the merchant's events in order, from a cursor or the start of its log.
///
/// Events are in `sequence` order, only of the types in `filter.types` when given. `next_cursor`
/// is never null: it continues after the last event answered (or where the request began, when
/// the page has none). With `wait_s`, a request whose page would be empty waits up to that many
/// seconds and is answered as soon as a matching event is committed. A cursor older than the
/// events kept (`--event-retention`) is `CURSOR_EXPIRED`: take a new one with `"start": "latest"`,
/// read the locations again, then follow the feed.
#[utoipa::path(
    post,
    path = "/v1/location/events",
    tag = "events",
    operation_id = "listEvents",
    request_body(
        content = crate::http::event_schemas::EventFeedRequest,
        description = "Optional: an empty body means `{}`, the first page from the oldest event kept",
        content_type = "application/json",
        example = json!(crate::http::event_schemas::event_feed_example_request())
    ),
    responses(
        (status = 200, description = "A page of the merchant's events", body = crate::http::event_schemas::EventFeedResponse,
         example = json!(crate::http::event_schemas::event_feed_example_answer())),
        (status = 400, description = "INVALID_REQUEST, INVALID_FILTER, INVALID_PAGINATION, INVALID_CURSOR, CURSOR_EXPIRED",
         body = crate::http::schemas::ErrorBody)
    )
)]
pub async fn feed(
    State(state): State<AppState>,
    Merchant(merchant): Merchant,
    Extension(Deadline(deadline)): Extension<Deadline>,
    in_flight: Option<Extension<InFlight>>,
    body: JsonBody,
) -> Result<Response, ApiError> {
    let request = FeedRequest::parse(body.parse()?)?;
    drop(body);
    let digest = feed_digest(&merchant.id, request.types);
    let cursor = cursor_position::<AfterEvent>(request.cursor.as_deref(), &state.cursors, &digest)?;
    let query = |after: i64| EventQuery {
        merchant_pk: merchant.pk,
        types: request.types,
        after,
        limit: request.limit,
    };
    let (after, mut page) = match (cursor, request.start) {
        (Some(AfterEvent(after)), _) => (after, state.store.read_events(query(after)).await?),
        (None, Start::Oldest) => {
            let page = state.store.read_events(query(0)).await?;
            (page.bounds.pruned_through, page)
        }
        (None, Start::Latest) => {
            // No event is answered: the page is read past any sequence, for the log's bounds.
            let mut page = state.store.read_events(query(i64::MAX)).await?;
            page.has_next = false;
            (page.bounds.last, page)
        }
    };
    if after < page.bounds.pruned_through {
        return Err(expired());
    }
    if page.events.is_empty() && !request.wait.is_zero() {
        let until = (Instant::now() + request.wait).min(deadline);
        if let Some(place) = state.events.wait_place(merchant.pk) {
            // Waiting is not work: the request leaves the bound on requests in flight.
            if let Some(Extension(slot)) = &in_flight {
                slot.give_back();
            }
            loop {
                // Listening before looking: a commit between the look and the wait still rings.
                let rung = place.notify().notified();
                tokio::pin!(rung);
                rung.as_mut().enable();
                page = state.store.read_events(query(after)).await?;
                if after < page.bounds.pruned_through {
                    return Err(expired());
                }
                let left = until.saturating_duration_since(Instant::now());
                if !page.events.is_empty() || left.is_zero() {
                    break;
                }
                let _ = tokio::time::timeout(left.min(RECHECK), rung).await;
            }
        }
    }
    // Answered from the database, on the primary: once per answer, however many
    // looks its waiting took.
    ReadOn::Primary.count();
    Ok(answer(&state, &digest, after, &page))
}

fn expired() -> ApiError {
    ApiError::new(
        ErrorCode::CursorExpired,
        "the cursor points before the oldest event kept; take a new cursor with \"start\": \"latest\", \
         read your locations again, then follow the feed from it",
    )
    .field("pagination.cursor")
}

/// The answer: the events' JSON (rendered from their stored columns) in a page whose cursor
/// continues after the last one, or from `after` when it has none.
fn answer(state: &AppState, digest: &[u8; 16], after: i64, page: &EventPage) -> Response {
    let last = page.events.last().map_or(after, |(sequence, _)| *sequence);
    let cursor = state.cursors.encode(digest, &AfterEvent(last));
    let size: usize = page.events.iter().map(|(_, e)| e.len() + 1).sum();
    let mut body = String::with_capacity(size + cursor.len() + 64);
    body.push_str(r#"{"events":["#);
    for (i, (_, event)) in page.events.iter().enumerate() {
        if i > 0 {
            body.push(',');
        }
        body.push_str(event);
    }
    body.push_str(r#"],"pagination":{"next_cursor":""#);
    // A cursor is URL-safe base64: nothing in it needs escaping.
    body.push_str(&cursor);
    body.push_str(r#"","has_next":"#);
    body.push_str(if page.has_next { "true" } else { "false" });
    body.push_str("}}");
    ([(header::CONTENT_TYPE, "application/json")], body).into_response()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn code(body: Value) -> (ErrorCode, Option<String>) {
        match FeedRequest::parse(body) {
            Ok(r) => panic!("accepted: {r:?}"),
            Err(e) => (e.code(), e.field_path().map(str::to_owned)),
        }
    }

    #[test]
    fn every_request_rule_has_its_code_and_field() {
        let at = |c: ErrorCode, f: &str| (c, Some(f.to_owned()));
        assert_eq!(
            code(json!({"filter": {"types": []}})),
            at(ErrorCode::InvalidFilter, "filter.types")
        );
        assert_eq!(
            code(json!({"filter": {"types": ["location.moved"]}})),
            at(ErrorCode::InvalidFilter, "filter.types")
        );
        assert_eq!(
            code(json!({"filter": {"types": "location.created"}})),
            at(ErrorCode::InvalidFilter, "filter.types")
        );
        assert_eq!(
            code(json!({"filter": {"kinds": null}})),
            at(ErrorCode::InvalidFilter, "filter.kinds")
        );
        assert_eq!(code(json!({"start": "first"})), at(ErrorCode::InvalidRequest, "start"));
        assert_eq!(
            code(json!({"start": "latest", "pagination": {"limit": 5, "cursor": "abc"}})),
            at(ErrorCode::InvalidRequest, "start")
        );
        for bad in [json!(26), json!(-1), json!(2.5), json!("5")] {
            assert_eq!(code(json!({ "wait_s": bad })), at(ErrorCode::InvalidRequest, "wait_s"));
        }
        assert_eq!(code(json!({"since": 1})), at(ErrorCode::InvalidRequest, "since"));
        assert_eq!(
            code(json!({"pagination": {"limit": 0}})),
            at(ErrorCode::InvalidPagination, "pagination.limit")
        );
    }

    #[test]
    fn defaults_and_what_null_means() {
        let r = FeedRequest::parse(json!({})).unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(
            (r.types, r.limit, r.start, r.wait),
            (EventTypes::ALL, 100, Start::Oldest, Duration::ZERO)
        );
        let r = FeedRequest::parse(json!({
            "filter": {"types": ["location.archived", "location.archived"]},
            "pagination": {"limit": 5000, "cursor": ""},
            "start": "latest",
            "wait_s": 5.0
        }))
        .unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(r.types.types().collect::<Vec<_>>(), [EventType::Archived]);
        assert_eq!(
            (r.limit, r.start, r.wait),
            (1000, Start::Latest, Duration::from_secs(5))
        );
        let r = FeedRequest::parse(json!({"filter": {"types": null}, "start": null, "wait_s": null}))
            .unwrap_or_else(|e| panic!("{e:?}"));
        assert!(r.types.is_all());
    }
}

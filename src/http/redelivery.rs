//! `POST /v1/webhook/resend`, `recover` and `test`: getting deliveries back. Full
//! keys only. A resend and a test make one attempt by hand (`webhooks::by_hand`: the worker's
//! transport, a place among its attempts in flight) and answer when it has ended; the request no
//! longer counts among those in flight meanwhile (it waits on the receiver, doing no work). A
//! recovery is stored in one transaction before it is answered.

use axum::extract::State;
use axum::{Extension, Json};
use serde::Serialize;
use serde_json::{Map, Value};

use super::error::{ApiError, ErrorCode};
use super::extract::{JsonBody, invalid, object};
use super::gate::{InFlight, Merchant};
use super::webhooks::{not_found, webhook_id};
use crate::domain::event::{new_event_id, render_test};
use crate::domain::webhook::{Attempt, Trigger};
use crate::domain::wire::parse_timestamp;
use crate::state::{AppState, Deadline};
use crate::store::redelivery_api::{Recovered, Recovery, Resendable};
use crate::webhooks::by_hand::HandMade;
use crate::webhooks::worker::MAX_ATTEMPT;

#[derive(Serialize, utoipa::ToSchema)]
pub struct DeliveryAnswer {
    #[schema(value_type = crate::http::event_schemas::AttemptObject)]
    delivery: Attempt,
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct RecoverAnswer {
    /// How many events are now pending for the endpoint (each delivered once).
    recovered: u64,
}

/// How long a 429 asks a resend or a test to wait when its endpoint's places stayed taken.
const BUSY_RETRY_S: u64 = 5;

/// A string at `key` (`INVALID_REQUEST` at it otherwise).
fn string(body: &Map<String, Value>, key: &str, what: &str) -> Result<String, ApiError> {
    body.get(key)
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| invalid(key, format!("{key} is required: {what}")))
}

/// Makes the attempt, waiting for a place of its endpoint while there is time for the attempt
/// too; records it. 429 when the endpoint's places stayed taken.
async fn attempt(
    state: &AppState,
    deadline: Deadline,
    in_flight: Option<Extension<InFlight>>,
    made: HandMade<'_>,
) -> Result<Attempt, ApiError> {
    let webhook_id = made.webhook_id.to_owned();
    let wait_until = tokio::time::Instant::from_std(deadline.0)
        .checked_sub(MAX_ATTEMPT)
        .unwrap_or_else(tokio::time::Instant::now);
    if let Some(Extension(slot)) = &in_flight {
        slot.give_back();
    }
    let Some(attempt) = state.by_hand.attempt(made, wait_until).await else {
        return Err(ApiError::new(
            ErrorCode::RateLimited,
            "this endpoint has as many attempts in flight as it is sent at once; try again in a few seconds",
        )
        .retry_after(BUSY_RETRY_S)
        .detail("retry_after_ms", BUSY_RETRY_S * 1000));
    };
    Ok(state.store.redeliveries().record_by_hand(&webhook_id, attempt).await?)
}

/// Sends one event to an endpoint again, now, and answers when the attempt has ended.
///
/// The event must be one the endpoint was to receive: its merchant's, still kept, of a type it
/// takes, appended after it was created. The endpoint may be disabled (to check a mended
/// receiver before enabling it). A resend that delivers settles the event for the endpoint (no
/// automatic attempt of it follows); one that fails changes nothing else.
#[utoipa::path(
    post, path = "/v1/webhook/resend", tag = "webhooks", operation_id = "resendWebhookEvent",
    request_body(content = crate::http::event_schemas::ResendRequest, content_type = "application/json",
        example = json!({"webhook_id": "019ab5b2-7c1e-7d3a-9f1e-2c4d5e6f7a8b", "event_id": "evt_019ab5b27c1e7d3a9f1e2c4d5e6f7a8b"})),
    responses(
        (status = 200, description = "The attempt, as the deliveries log records it (trigger `resend`)", body = DeliveryAnswer),
        (status = 400, description = "INVALID_REQUEST, NOT_FOUND (field webhook_id or event_id)",
         body = crate::http::schemas::ErrorBody),
        (status = 429, description = "RATE_LIMITED: or the endpoint's attempts in flight stayed at their bound",
         body = crate::http::schemas::ErrorBody)
    )
)]
pub async fn resend(
    State(state): State<AppState>,
    Merchant(merchant): Merchant,
    Extension(deadline): Extension<Deadline>,
    in_flight: Option<Extension<InFlight>>,
    body: JsonBody,
) -> Result<Json<DeliveryAnswer>, ApiError> {
    let body = object(body.parse()?, &["webhook_id", "event_id"])?;
    let id = webhook_id(&body)?;
    let event_id = string(&body, "event_id", "the event_id of one of your events")?;
    let now = crate::store::now_ms();
    let due = match state
        .store
        .redeliveries()
        .resendable(merchant.pk, &id, &event_id, now)
        .await?
    {
        Resendable::NoWebhook => return Err(not_found()),
        Resendable::NoEvent => {
            return Err(ApiError::unknown_id(
                "event_id",
                "this endpoint was not to receive an event with this event_id: it must be one of your events, \
                 still kept, of a type the endpoint takes, appended after the endpoint was created",
            ));
        }
        Resendable::Due(due) => due,
    };
    let made = HandMade {
        webhook_id: &due.webhook_id,
        merchant_pk: merchant.pk,
        url: &due.url,
        secrets: &due.secrets,
        event_id: &due.event_id,
        body: &due.body,
        sequence: Some(due.sequence),
        attempt: due.attempts + 1,
        trigger: Trigger::Resend,
    };
    let delivery = attempt(&state, deadline, in_flight, made).await?;
    Ok(Json(DeliveryAnswer { delivery }))
}

/// Sends an endpoint a test event now (type `webhook.test`, in no feed, never retried), signed
/// as every delivery is, whatever types it takes; answers when the attempt has ended. The
/// endpoint may be disabled.
#[utoipa::path(
    post, path = "/v1/webhook/test", tag = "webhooks", operation_id = "testWebhook",
    request_body(content = crate::http::event_schemas::WebhookIdRequest, content_type = "application/json",
        example = json!({"webhook_id": "019ab5b2-7c1e-7d3a-9f1e-2c4d5e6f7a8b"})),
    responses(
        (status = 200, description = "The attempt, as the deliveries log records it (trigger `test`)", body = DeliveryAnswer),
        (status = 400, description = "INVALID_REQUEST, NOT_FOUND (field webhook_id)",
         body = crate::http::schemas::ErrorBody),
        (status = 429, description = "RATE_LIMITED: or the endpoint's attempts in flight stayed at their bound",
         body = crate::http::schemas::ErrorBody)
    )
)]
pub async fn test(
    State(state): State<AppState>,
    Merchant(merchant): Merchant,
    Extension(deadline): Extension<Deadline>,
    in_flight: Option<Extension<InFlight>>,
    body: JsonBody,
) -> Result<Json<DeliveryAnswer>, ApiError> {
    let body = object(body.parse()?, &["webhook_id"])?;
    let id = webhook_id(&body)?;
    let now = crate::store::now_ms();
    let target = state
        .store
        .redeliveries()
        .test_target(merchant.pk, &id, now)
        .await?
        .ok_or_else(not_found)?;
    let event_id = new_event_id();
    let body = render_test(&event_id, now);
    let made = HandMade {
        webhook_id: &target.webhook_id,
        merchant_pk: merchant.pk,
        url: &target.url,
        secrets: &target.secrets,
        event_id: &event_id,
        body: &body,
        sequence: None,
        attempt: 1,
        trigger: Trigger::Test,
    };
    let delivery = attempt(&state, deadline, in_flight, made).await?;
    Ok(Json(DeliveryAnswer { delivery }))
}

/// An RFC 3339 time with an offset at `key` (`INVALID_REQUEST` at it otherwise).
fn time_at(body: &Map<String, Value>, key: &str) -> Result<Option<i64>, ApiError> {
    match body.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v.as_str().and_then(parse_timestamp).map(Some).ok_or_else(|| {
            invalid(
                key,
                format!("{key} must be an RFC 3339 time with an offset, such as 2026-11-28T09:00:00Z"),
            )
        }),
    }
}

/// Sends an endpoint again every event it missed in a window of time.
///
/// Every event of the merchant with `since ≤ occurred_at < until` (`until` null: now), of a type
/// the endpoint takes, appended after it was created, that was not delivered to it (given up,
/// appended while it was disabled, or waiting for a retry) is delivered again from the start of
/// the schedule. They are stored before the answer. The endpoint must be enabled.
#[utoipa::path(
    post, path = "/v1/webhook/recover", tag = "webhooks", operation_id = "recoverWebhookEvents",
    request_body(content = crate::http::event_schemas::RecoverRequest, content_type = "application/json",
        example = json!({"webhook_id": "019ab5b2-7c1e-7d3a-9f1e-2c4d5e6f7a8b", "since": "2026-11-27T18:00:00Z", "until": null})),
    responses(
        (status = 200, description = "How many events are now pending for the endpoint", body = RecoverAnswer),
        (status = 400, description = "INVALID_REQUEST (a disabled endpoint: field webhook_id), NOT_FOUND (field webhook_id)",
         body = crate::http::schemas::ErrorBody)
    )
)]
pub async fn recover(
    State(state): State<AppState>,
    Merchant(merchant): Merchant,
    Extension(Deadline(deadline)): Extension<Deadline>,
    body: JsonBody,
) -> Result<Json<RecoverAnswer>, ApiError> {
    let body = object(body.parse()?, &["webhook_id", "since", "until"])?;
    let id = webhook_id(&body)?;
    let since = time_at(&body, "since")?.ok_or_else(|| {
        invalid(
            "since",
            "since is required: the RFC 3339 time from which to recover, such as 2026-11-28T09:00:00Z",
        )
    })?;
    let now = crate::store::now_ms();
    let until = time_at(&body, "until")?;
    if until.is_some_and(|until| until <= since) {
        return Err(invalid("until", "until must be after since"));
    }
    let recovery = Recovery {
        merchant_pk: merchant.pk,
        webhook_id: id,
        since_ms: since,
        until_ms: until.unwrap_or(now),
        now_ms: now,
        deadline,
    };
    match state.store.redeliveries().recover(recovery).await? {
        Recovered::NoWebhook => Err(not_found()),
        Recovered::Disabled => Err(invalid(
            "webhook_id",
            "this endpoint is disabled: enable it first (POST /v1/webhook/enable), then recover",
        )),
        Recovered::Pending(n) => {
            metrics::counter!("webhook_recovered_total").increment(n);
            state.events.deliveries_due();
            Ok(Json(RecoverAnswer { recovered: n }))
        }
    }
}

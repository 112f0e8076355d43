//! One attempt of an event to an endpoint, made the same way by the worker and by hand (a resend
//! or a test): timed by the instance's clock, sent through the transport while it counts as in
//! flight, its outcome counted in `webhook_attempts_total`, and recorded as an `Attempt`.

use std::time::Duration;

use super::address::Reach;
use super::config::Clock;
use super::places::InFlight;
use super::send::{Delivery, Transport};
use crate::domain::webhook::{Attempt, Outcome, Trigger};
use crate::store::api::millis;

/// Which attempt of which event it is.
pub struct Of {
    /// The event's sequence (none for a test event).
    pub sequence: Option<i64>,
    /// Its number among the attempts of the event to the endpoint.
    pub attempt: i64,
    pub trigger: Trigger,
}

/// An attempt as it ended.
pub struct Made {
    /// As it is recorded (its `id` is given when it is).
    pub attempt: Attempt,
    /// Whether the receiver answered at all (any status).
    pub answered: bool,
    /// A 429's or 503's `Retry-After`.
    pub retry_after: Option<Duration>,
    pub ended_at_ms: i64,
}

/// Makes one attempt of `delivery`.
pub async fn make(transport: &dyn Transport, reach: Reach, clock: &dyn Clock, delivery: Delivery<'_>, of: Of) -> Made {
    let attempted_at_ms = clock.now_ms();
    let event_id = delivery.event_id.to_owned();
    let in_flight = InFlight::start();
    let sent = transport.send(delivery, reach).await;
    drop(in_flight);
    let ended_at_ms = clock.now_ms();
    let outcome = if sent.delivered() {
        Outcome::Delivered
    } else {
        Outcome::Failed
    };
    metrics::counter!("webhook_attempts_total", "outcome" => outcome.as_str()).increment(1);
    Made {
        answered: sent.status.is_some(),
        retry_after: sent.retry_after,
        ended_at_ms,
        attempt: Attempt {
            id: 0,
            event_id,
            sequence: of.sequence,
            attempt: of.attempt,
            attempted_at_ms,
            outcome,
            http_status: sent.status.map(i64::from),
            error: sent.error,
            duration_ms: millis(sent.took),
            trigger: of.trigger,
        },
    }
}

//! Attempts made by hand: a resend or a test is one attempt made as the worker makes one
//! (`attempt`), through the very transport and clock the worker uses (the same signing,
//! public-address rule and 15 s), made while it holds a place of its endpoint (`places`: it
//! counts against the bound on attempts in flight), and counted in
//! `webhook_attempts_total{outcome}` (not in `webhook_delivery_seconds`: it is no event's delivery
//! after its commit).

use std::sync::Arc;

use tokio::time::Instant;

use super::attempt::{self, Of};
use super::config::{Clock, WebhookSettings};
use super::places::Places;
use super::send::{Delivery, Transport};
use crate::domain::webhook::{Attempt, Trigger};
use crate::secret::Secret;

/// What to send by hand, to whom.
pub struct HandMade<'a> {
    pub webhook_id: &'a str,
    /// The endpoint's merchant, whose share of the places it takes.
    pub merchant_pk: i64,
    pub url: &'a str,
    pub secrets: &'a [Secret],
    pub event_id: &'a str,
    pub body: &'a str,
    /// The event's sequence (none for a test event).
    pub sequence: Option<i64>,
    /// Its number among the attempts of the event to the endpoint.
    pub attempt: i64,
    pub trigger: Trigger,
}

/// The attempts made by hand, sharing the worker's transport and places.
pub struct ByHand {
    transport: Arc<dyn Transport>,
    places: Arc<Places>,
    clock: Arc<dyn Clock>,
    settings: WebhookSettings,
}

impl ByHand {
    pub fn new(
        transport: Arc<dyn Transport>,
        places: Arc<Places>,
        clock: Arc<dyn Clock>,
        settings: WebhookSettings,
    ) -> Self {
        ByHand {
            transport,
            places,
            clock,
            settings,
        }
    }

    /// Makes the attempt once a place of its endpoint is free; none when no place was free by
    /// `wait_until`. The attempt, as it ended (its `id` is given when it is recorded).
    pub async fn attempt(&self, made: HandMade<'_>, wait_until: Instant) -> Option<Attempt> {
        let place = self
            .places
            .wait_for_one(made.webhook_id, made.merchant_pk, wait_until)
            .await?;
        let delivery = Delivery {
            url: made.url,
            event_id: made.event_id,
            body: made.body,
            secrets: made.secrets,
        };
        let of = Of {
            sequence: made.sequence,
            attempt: made.attempt,
            trigger: made.trigger,
        };
        let ended = attempt::make(
            self.transport.as_ref(),
            self.settings.reach,
            self.clock.as_ref(),
            delivery,
            of,
        )
        .await;
        drop(place);
        Some(ended.attempt)
    }

    /// The places this instance's attempts share: the worker's.
    pub fn places(&self) -> Arc<Places> {
        Arc::clone(&self.places)
    }

    /// The transport both make their attempts through.
    pub fn transport(&self) -> Arc<dyn Transport> {
        Arc::clone(&self.transport)
    }

    /// The clock both time their attempts by.
    pub fn clock(&self) -> Arc<dyn Clock> {
        Arc::clone(&self.clock)
    }
}

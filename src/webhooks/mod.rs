//! Delivering events to the merchants' endpoints (CONTRACT §18.3): signed (`sign`), only to
//! public addresses (`address`), one HTTP attempt at a time (`send`), by the worker here.
//!
//! The worker claims due deliveries (the store's claims expire, so with several instances each
//! attempt is made by one, and a dead instance's are taken over), makes each attempt in a task of
//! its own, and records what became of it (in batches, one transaction each): delivered; retried on the schedule (at least a 429's
//! or 503's `Retry-After`); given up past the schedule; the endpoint disabled at a 410 or once its
//! attempts have failed for `--webhook-disable-after`. At most `PER_ENDPOINT` attempts of one
//! endpoint and `PER_INSTANCE` in all are in flight here: a slow or dead endpoint holds its own
//! places only, and no request's.

pub mod address;
pub mod send;
pub mod sign;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::{Notify, mpsc};

use self::address::Reach;
use self::send::{Delivery, Sender};
use crate::domain::webhook::{Attempt, DisabledReason, Outcome, RetrySchedule};
use crate::store::now_ms;
use crate::store::webhook_api::{Due, Next, Settled, WebhookStore};

/// Most attempts of one endpoint in flight on one instance.
pub const PER_ENDPOINT: usize = 8;
/// Most attempts in flight on one instance.
pub const PER_INSTANCE: usize = 64;
/// How long a claim holds: twice an attempt's 15 s, for its recording too. A dead instance's
/// claims are taken over this long after it claimed them.
const CLAIM: Duration = Duration::from_secs(30);
/// How often the worker looks for due deliveries when it found none.
const POLL: Duration = Duration::from_millis(100);

/// How deliveries are made (`--webhook-*`).
#[derive(Clone, Debug)]
pub struct WebhookSettings {
    pub retry: RetrySchedule,
    /// An endpoint whose attempts all failed for this long is disabled.
    pub disable_after: Duration,
    pub reach: Reach,
}

impl Default for WebhookSettings {
    fn default() -> Self {
        WebhookSettings {
            retry: RetrySchedule::default(),
            disable_after: Duration::from_secs(5 * 86_400),
            reach: Reach::default(),
        }
    }
}

/// What becomes of a delivery after an attempt that ended as `sent` at `now_ms` (the rule, in
/// one place): delivered; the endpoint disabled (410, or failing too long); retried; given up.
pub fn next_after(due: &Due, sent: &send::Sent, settings: &WebhookSettings, now_ms: i64, jitter: f64) -> Next {
    if sent.delivered() {
        return Next::Done;
    }
    if sent.status == Some(410) {
        return Next::Disable(DisabledReason::Gone);
    }
    let disable_after = i64::try_from(settings.disable_after.as_millis()).unwrap_or(i64::MAX);
    if due
        .failing_since_ms
        .is_some_and(|since| now_ms - since >= disable_after)
    {
        return Next::Disable(DisabledReason::Failing);
    }
    let attempts = usize::try_from(due.attempts + 1).unwrap_or(usize::MAX);
    match settings.retry.next(attempts, sent.retry_after, jitter) {
        Some(delay) => Next::RetryAt(now_ms + i64::try_from(delay.as_millis()).unwrap_or(i64::MAX / 2)),
        None => Next::Done,
    }
}

/// The attempts in flight on this instance, by endpoint.
#[derive(Default)]
struct InFlight {
    by_endpoint: Mutex<HashMap<String, usize>>,
    /// Rung when an attempt ends (a place is free).
    freed: Notify,
}

impl InFlight {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, usize>> {
        self.by_endpoint.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn total(&self) -> usize {
        self.lock().values().sum()
    }

    /// The endpoints at their bound.
    fn full(&self) -> Vec<String> {
        self.lock()
            .iter()
            .filter(|(_, n)| **n >= PER_ENDPOINT)
            .map(|(k, _)| k.clone())
            .collect()
    }

    /// Takes a place for an attempt to `endpoint`, when it has one free.
    fn take(&self, endpoint: &str) -> bool {
        let mut map = self.lock();
        let n = map.entry(endpoint.to_owned()).or_default();
        if *n >= PER_ENDPOINT {
            return false;
        }
        *n += 1;
        true
    }

    fn give_back(&self, endpoint: &str) {
        let mut map = self.lock();
        if let Some(n) = map.get_mut(endpoint) {
            *n -= 1;
            if *n == 0 {
                map.remove(endpoint);
            }
        }
        drop(map);
        self.freed.notify_one();
    }
}

/// A random number in -1..1, for the schedule's jitter.
fn jitter() -> f64 {
    let bytes = crate::secret::random::<8>().unwrap_or_default();
    (u64::from_le_bytes(bytes) as f64 / u64::MAX as f64) * 2.0 - 1.0
}

/// Delivers for as long as it runs.
pub async fn deliver(store: Arc<dyn WebhookStore>, settings: WebhookSettings) {
    let sender = Arc::new(Sender::default());
    let in_flight = Arc::new(InFlight::default());
    let settings = Arc::new(settings);
    let pending = tokio::spawn(count_pending(Arc::clone(&store)));
    let _pending = AbortOnDrop(pending);
    let (settled, to_settle) = mpsc::channel(SETTLE_QUEUE);
    let _settler = AbortOnDrop(tokio::spawn(settle_batches(Arc::clone(&store), to_settle)));
    loop {
        let free = PER_INSTANCE.saturating_sub(in_flight.total());
        if free == 0 {
            let _ = tokio::time::timeout(POLL, in_flight.freed.notified()).await;
            continue;
        }
        let now = now_ms();
        let until = now + i64::try_from(CLAIM.as_millis()).unwrap_or(60_000);
        let claimed = match store.claim(now, until, free, &in_flight.full()).await {
            Ok(claimed) => claimed,
            Err(e) => {
                tracing::warn!(error = %crate::http::error::ErrorChain(&e), "claiming webhook deliveries failed");
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
        };
        let found = claimed.len();
        let mut unplaced = Vec::new();
        for due in claimed {
            if !in_flight.take(&due.webhook_id) {
                unplaced.push((due.webhook_id, due.sequence));
                continue;
            }
            tokio::spawn(attempt(
                settled.clone(),
                Arc::clone(&sender),
                Arc::clone(&in_flight),
                Arc::clone(&settings),
                due,
            ));
        }
        if !unplaced.is_empty()
            && let Err(e) = store.release(&unplaced).await
        {
            tracing::warn!(error = %crate::http::error::ErrorChain(&e), "giving claims back failed; they expire");
        }
        if found < free {
            tokio::time::sleep(POLL).await;
        }
    }
}

/// One attempt, queued to be recorded.
async fn attempt(
    settled: mpsc::Sender<Settled>,
    sender: Arc<Sender>,
    in_flight: Arc<InFlight>,
    settings: Arc<WebhookSettings>,
    due: Due,
) {
    let attempted_at = now_ms();
    let sent = sender
        .send(
            Delivery {
                url: &due.url,
                event_id: &due.event_id,
                body: &due.body,
                secrets: &due.secrets,
            },
            settings.reach,
        )
        .await;
    let now = now_ms();
    let next = next_after(&due, &sent, &settings, now, jitter());
    let outcome = if sent.delivered() {
        Outcome::Delivered
    } else {
        Outcome::Failed
    };
    metrics::counter!("webhook_attempts_total", "outcome" => outcome.as_str()).increment(1);
    if sent.delivered() {
        let lag = (now - due.appended_at_ms).max(0) as f64 / 1000.0;
        metrics::histogram!("webhook_delivery_seconds").record(lag);
    }
    let one = Settled {
        webhook_id: due.webhook_id.clone(),
        attempt: Attempt {
            id: 0,
            event_id: due.event_id.clone(),
            sequence: due.sequence,
            attempt: due.attempts + 1,
            attempted_at_ms: attempted_at,
            outcome,
            http_status: sent.status.map(i64::from),
            error: sent.error.clone(),
            duration_ms: i64::try_from(sent.took.as_millis()).unwrap_or(i64::MAX),
        },
        next,
    };
    // The place is given back once the attempt is queued for recording: a recording that falls
    // behind holds the claims back (the queue is bounded).
    let _ = settled.send(one).await;
    in_flight.give_back(&due.webhook_id);
}

/// Most attempts waiting to be recorded, and most recorded in one transaction.
const SETTLE_QUEUE: usize = 1024;
const SETTLE_BATCH: usize = 256;

/// Records finished attempts in batches, one transaction each.
async fn settle_batches(store: Arc<dyn WebhookStore>, mut queue: mpsc::Receiver<Settled>) {
    let mut batch = Vec::with_capacity(SETTLE_BATCH);
    while queue.recv_many(&mut batch, SETTLE_BATCH).await > 0 {
        if let Err(e) = store.settle(std::mem::take(&mut batch)).await {
            // Their claims expire and the deliveries are attempted again: at least once.
            tracing::warn!(error = %crate::http::error::ErrorChain(&e), "recording webhook attempts failed");
        }
    }
}

/// `webhook_pending`, every few seconds.
async fn count_pending(store: Arc<dyn WebhookStore>) {
    let mut tick = tokio::time::interval(Duration::from_secs(5));
    loop {
        tick.tick().await;
        if let Ok(n) = store.pending().await {
            metrics::gauge!("webhook_pending").set(n as f64);
        }
    }
}

/// A task stopped when its handle goes.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::webhooks::send::Sent;

    fn due(attempts: i64, failing_since_ms: Option<i64>) -> Due {
        Due {
            webhook_id: "w".into(),
            url: String::new(),
            secrets: Vec::new(),
            failing_since_ms,
            sequence: 1,
            attempts,
            appended_at_ms: 0,
            event_id: "e".into(),
            body: String::new(),
        }
    }

    fn sent(status: Option<u16>, ok: bool, retry_after: Option<u64>) -> Sent {
        Sent {
            status,
            error: (!ok).then(|| "failed".to_owned()),
            retry_after: retry_after.map(Duration::from_secs),
            took: Duration::ZERO,
        }
    }

    #[test]
    fn what_becomes_of_a_delivery_after_an_attempt() {
        let s = WebhookSettings::default();
        assert_eq!(
            next_after(&due(0, None), &sent(Some(204), true, None), &s, 1000, 0.0),
            Next::Done
        );
        assert_eq!(
            next_after(&due(0, None), &sent(Some(410), false, None), &s, 1000, 0.0),
            Next::Disable(DisabledReason::Gone)
        );
        assert_eq!(
            next_after(&due(0, None), &sent(None, false, None), &s, 1000, 0.0),
            Next::RetryAt(6000)
        );
        assert_eq!(
            next_after(&due(0, None), &sent(Some(429), false, Some(60)), &s, 1000, 0.0),
            Next::RetryAt(61_000)
        );
        assert_eq!(
            next_after(&due(9, None), &sent(Some(500), false, None), &s, 1000, 0.0),
            Next::Done,
            "given up"
        );
        let five_days = 5 * 86_400_000;
        assert_eq!(
            next_after(&due(3, Some(0)), &sent(Some(500), false, None), &s, five_days, 0.0),
            Next::Disable(DisabledReason::Failing)
        );
        assert!(matches!(
            next_after(&due(3, Some(1)), &sent(Some(500), false, None), &s, five_days, 0.0),
            Next::RetryAt(_)
        ));
    }
}

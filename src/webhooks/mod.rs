//! Delivering events to the merchants' endpoints (CONTRACT §18.3): signed (`sign`), only to
//! public addresses (`address`), one HTTP attempt at a time (`send`), by the worker here.
//!
//! The worker claims windows of endpoints' fresh events and retries due (the store's claims expire,
//! so with several instances each attempt is made by one, and a dead instance's are taken over),
//! makes the attempts, and records what became of them (in batches, one transaction each): delivered; retried on the schedule (at least a 429's
//! or 503's `Retry-After`); given up past the schedule; the endpoint disabled at a 410 or once its
//! attempts have failed for `--webhook-disable-after`. At most `PER_ENDPOINT` attempts of one
//! endpoint (one window, or its retries) and `PER_INSTANCE` in all are in flight here: a slow or
//! dead endpoint holds its own places only, and no request's.

pub mod address;
pub mod send;
pub mod sign;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures_util::StreamExt;
use tokio::sync::{Notify, mpsc};

use self::address::Reach;
use self::send::{Delivery, Sender};
use crate::domain::webhook::{Attempt, DisabledReason, Outcome, RetrySchedule};
use crate::store::now_ms;
use crate::store::webhook_api::{Due, Next, Settled, Settlement, WebhookStore, Window};

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
    /// Rung when attempts end (places are free).
    freed: Notify,
}

impl InFlight {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, usize>> {
        self.by_endpoint.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn total(&self) -> usize {
        self.lock().values().sum()
    }

    /// The endpoints with attempts in flight: nothing more of theirs is claimed meanwhile.
    fn busy(&self) -> Vec<String> {
        self.lock().keys().cloned().collect()
    }

    fn take(&self, endpoint: &str, places: usize) {
        *self.lock().entry(endpoint.to_owned()).or_default() += places;
    }

    fn give_back(&self, endpoint: &str, places: usize) {
        let mut map = self.lock();
        if let Some(n) = map.get_mut(endpoint) {
            *n = n.saturating_sub(places);
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

/// What a claim's attempts need.
struct Worker {
    sender: Sender,
    in_flight: InFlight,
    settings: WebhookSettings,
    settle: mpsc::Sender<Settlement>,
}

/// Delivers for as long as it runs.
pub async fn deliver(store: Arc<dyn WebhookStore>, settings: WebhookSettings) {
    let _pending = AbortOnDrop(tokio::spawn(count_pending(Arc::clone(&store))));
    let (settle, to_settle) = mpsc::channel(SETTLE_QUEUE);
    let _settler = AbortOnDrop(tokio::spawn(settle_batches(Arc::clone(&store), to_settle)));
    let worker = Arc::new(Worker {
        sender: Sender::default(),
        in_flight: InFlight::default(),
        settings,
        settle,
    });
    loop {
        let free = PER_INSTANCE.saturating_sub(worker.in_flight.total());
        if free < PER_ENDPOINT {
            let _ = tokio::time::timeout(POLL, worker.in_flight.freed.notified()).await;
            continue;
        }
        let now = now_ms();
        let until = now + i64::try_from(CLAIM.as_millis()).unwrap_or(30_000);
        let windows = free / PER_ENDPOINT;
        // Retries a claim at most `PER_ENDPOINT`: those of one endpoint then never exceed its bound.
        let retries = PER_ENDPOINT;
        let claimed = match store
            .claim(now, until, windows, retries, &worker.in_flight.busy())
            .await
        {
            Ok(claimed) => claimed,
            Err(e) => {
                tracing::warn!(error = %crate::http::error::ErrorChain(&e), "claiming webhook deliveries failed");
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
        };
        let found = claimed.windows.len() + claimed.retries.len();
        for window in claimed.windows {
            worker.in_flight.take(&window.webhook_id, PER_ENDPOINT);
            tokio::spawn(deliver_window(Arc::clone(&worker), window));
        }
        for due in claimed.retries {
            worker.in_flight.take(&due.webhook_id, 1);
            tokio::spawn(deliver_retry(Arc::clone(&worker), due));
        }
        if found == 0 {
            tokio::time::sleep(POLL).await;
        }
    }
}

/// A window of an endpoint's fresh events: at most `PER_ENDPOINT` attempts at once, then settled
/// whole (its failures become retries, and the endpoint's `delivered_through` moves past it).
async fn deliver_window(worker: Arc<Worker>, window: Window) {
    let attempts = futures_util::stream::iter(window.dues)
        .map(|due| attempt(&worker, due))
        .buffer_unordered(PER_ENDPOINT)
        .collect::<Vec<Settled>>()
        .await;
    // The places are given back once the window is queued for recording: a recording that falls
    // behind holds the claims back (the queue is bounded).
    let settlement = Settlement {
        attempts,
        window: Some((window.webhook_id.clone(), window.through)),
    };
    let _ = worker.settle.send(settlement).await;
    worker.in_flight.give_back(&window.webhook_id, PER_ENDPOINT);
}

async fn deliver_retry(worker: Arc<Worker>, due: Due) {
    let webhook_id = due.webhook_id.clone();
    let settled = attempt(&worker, due).await;
    let _ = worker
        .settle
        .send(Settlement {
            attempts: vec![settled],
            window: None,
        })
        .await;
    worker.in_flight.give_back(&webhook_id, 1);
}

/// One attempt, and what becomes of its delivery.
async fn attempt(worker: &Worker, due: Due) -> Settled {
    let attempted_at = now_ms();
    let sent = worker
        .sender
        .send(
            Delivery {
                url: &due.url,
                event_id: &due.event_id,
                body: &due.body,
                secrets: &due.secrets,
            },
            worker.settings.reach,
        )
        .await;
    let now = now_ms();
    let next = next_after(&due, &sent, &worker.settings, now, jitter());
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
    Settled {
        webhook_id: due.webhook_id,
        merchant_pk: due.merchant_pk,
        appended_at_ms: due.appended_at_ms,
        attempt: Attempt {
            id: 0,
            event_id: due.event_id,
            sequence: due.sequence,
            attempt: due.attempts + 1,
            attempted_at_ms: attempted_at,
            outcome,
            http_status: sent.status.map(i64::from),
            error: sent.error,
            duration_ms: i64::try_from(sent.took.as_millis()).unwrap_or(i64::MAX),
        },
        next,
    }
}

/// Most claims' results waiting to be recorded, and most recorded in one transaction.
const SETTLE_QUEUE: usize = 256;
const SETTLE_BATCH: usize = 64;

/// Records what the claims came to in batches, one transaction each.
async fn settle_batches(store: Arc<dyn WebhookStore>, mut queue: mpsc::Receiver<Settlement>) {
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
            merchant_pk: 1,
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

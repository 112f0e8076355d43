//! The delivery worker: one loop that claims, attempts and settles, given its
//! store, its transport and its clock, so that tests drive it with fakes.
//!
//! - **Claims with an owner.** Each worker claims in the name of a random token. A claim holds for
//!   `CLAIM` and is extended every `EXTEND_EVERY` while its attempts run (or their results wait to
//!   be written); an attempt starts only while its claim is known to hold for longer than the
//!   longest attempt (`MAX_ATTEMPT`), so a claim that lapsed (the database unreachable, the
//!   process stalled) is never attempted on beside the instance that took it over. Settling
//!   checks the owner: a window taken over is settled once, by its new owner.
//! - **A window** is attempted `PER_ENDPOINT` at a time, in sequence order; when the worker stops,
//!   or the claim can no longer be held, no further attempt of it starts, and it is settled
//!   through the last event attempted (the rest are claimed again).
//! - **Woken, not polling.** A worker that found nothing due sleeps until an event is appended
//!   (on this instance, or on another through the store's notices: `EventSignal::deliveries`),
//!   until the first retry it scheduled is due, until a place is freed or a claim released (its
//!   results written: the endpoint's next window may be claimed), or at most `LOOK_EVERY`:
//!   what no signal reaches (another instance's retries, a lapsed claim) waits that long at most
//!   (a lapsed claim's window longer where a look at every endpoint is slow: `looks` keeps those
//!   to a share of the time).
//!   Woken by a commit, it looks at most once every `WOKEN_EVERY`: a burst of commits is one look.
//!   Between looks at every endpoint (`looks`), a turn reads only the endpoints of the merchants
//!   that rang, that it has work of, or whose endpoint was freed by an attempt made by hand, and
//!   claims retries only when some may be due, so what a turn costs does not grow with idle
//!   endpoints nor with retries scheduled for later.
//! - **A clean stop.** Once `stop` is cancelled nothing more is claimed or started; the attempts in
//!   flight end (each within `MAX_ATTEMPT`), their results are written, then `run` returns.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use futures_util::StreamExt;
use tokio::sync::{Notify, mpsc};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use super::attempt::{self, Of};
use super::config::{Clock, WebhookSettings, jitter};
use super::looks::{Look, Looks};
use super::pending;
use super::places::{Candidate, PER_ENDPOINT, Places};
use super::send::{Delivery, Transport};
use super::settle::{self, SettleRules};
use crate::domain::webhook::{Outcome, Trigger};
use crate::errors::ErrorChain;
use crate::store::api::millis;
use crate::store::event_signal::EventSignal;
use crate::store::webhook_api::{
    Chooser, ClaimRequest, Due, Held as HeldClaims, Settled, Settlement, Source, WebhookStore, Window,
};

/// How long a claim holds unless extended: a dead instance's claims are taken over this long
/// after its last extension.
pub const CLAIM: Duration = Duration::from_secs(30);
/// How often the claims in flight are extended, and so how soon a window learns that its
/// endpoint was deleted or disabled (or its claim taken over): no attempt of it starts after that.
const EXTEND_EVERY: Duration = Duration::from_secs(2);
/// The longest one attempt takes: resolving the host (5 s), the exchange (15 s), a second's margin.
pub const MAX_ATTEMPT: Duration = Duration::from_secs(21);
// An attempt that starts under a claim just extended ends before the claim could lapse.
const _: () = assert!(EXTEND_EVERY.as_millis() + MAX_ATTEMPT.as_millis() < CLAIM.as_millis());
/// Most retry rows claimed at once (each endpoint's `RETRIES_PER_PLACE` for each place it gets).
const RETRY_ROWS: usize = 64;
/// Most endpoints whose fresh events are claimed at once.
const WINDOWS: usize = 16;
/// How often the worker looks for due deliveries when nothing woke it. Events and this
/// worker's own retries wake it; this bounds how late it sees the rest (another instance's
/// retries, a claim that lapsed, a recovery stored by another instance).
pub const LOOK_EVERY: Duration = Duration::from_secs(1);
/// The shortest time between two looks when the worker is woken.
const WOKEN_EVERY: Duration = Duration::from_millis(100);
/// Most claims' results waiting to be recorded, and most recorded in one transaction.
const SETTLE_QUEUE: usize = 256;
const SETTLE_BATCH: usize = 64;

/// The claims this worker holds, each by when it was last taken or extended (on this worker's
/// clock, read before the statement that took or extended it: the database's claim holds at least
/// `CLAIM` from then).
#[derive(Default)]
struct Held {
    windows: HashMap<String, i64>,
    retries: HashMap<(String, i64), i64>,
    /// The merchant of each endpoint with a claim held, to look at once it is settled.
    merchants: HashMap<String, i64>,
}

/// Claims, attempts, settles.
pub struct Worker {
    store: Arc<dyn WebhookStore>,
    transport: Arc<dyn Transport>,
    clock: Arc<dyn Clock>,
    settings: WebhookSettings,
    /// Who this worker is, in its claims.
    owner: String,
    /// The places in flight, shared with the attempts made by hand.
    places: Arc<Places>,
    held: Mutex<Held>,
    stop: CancellationToken,
    settle: mpsc::Sender<Settlement>,
    /// Rung when deliveries may be due: an event appended, a recovery stored.
    wake: Arc<Notify>,
    /// Which merchants rang.
    events: Arc<EventSignal>,
    /// Whose endpoints the next turn looks at.
    looks: Mutex<Looks>,
    /// Rung when results are written and their claims released.
    settled: Notify,
    /// How long to sleep at most when nothing woke the worker (`LOOK_EVERY`).
    look_every: Duration,
    /// When the earliest retry this worker scheduled is due, on its clock (`i64::MAX`: none).
    next_retry_ms: AtomicI64,
}

/// What the worker is woken by (and told which merchants rang), and how often it looks at every
/// endpoint.
pub struct Wake {
    pub events: Arc<EventSignal>,
    pub look_every: Duration,
}

/// Delivers until `stop` is cancelled, then lets what is in flight end and records it.
pub async fn deliver(
    store: Arc<dyn WebhookStore>,
    transport: Arc<dyn Transport>,
    clock: Arc<dyn Clock>,
    places: Arc<Places>,
    settings: WebhookSettings,
    wake: Wake,
    stop: CancellationToken,
) {
    let (worker, queue) = Worker::new(store, transport, clock, places, settings, wake, stop);
    worker.run(queue).await;
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Worker {
    pub fn new(
        store: Arc<dyn WebhookStore>,
        transport: Arc<dyn Transport>,
        clock: Arc<dyn Clock>,
        places: Arc<Places>,
        settings: WebhookSettings,
        wake: Wake,
        stop: CancellationToken,
    ) -> (Arc<Worker>, mpsc::Receiver<Settlement>) {
        let (settle, queue) = mpsc::channel(SETTLE_QUEUE);
        let token = crate::secret::random::<12>().unwrap_or_default();
        let worker = Worker {
            store,
            transport,
            clock,
            settings,
            owner: token.iter().map(|b| format!("{b:02x}")).collect(),
            places,
            held: Mutex::default(),
            stop,
            settle,
            wake: wake.events.deliveries(),
            events: wake.events,
            looks: Mutex::new(Looks::new(wake.look_every)),
            settled: Notify::new(),
            look_every: wake.look_every,
            next_retry_ms: AtomicI64::new(i64::MAX),
        };
        (Arc::new(worker), queue)
    }

    /// The loop: turns until stopped, then the drain.
    pub async fn run(self: Arc<Self>, queue: mpsc::Receiver<Settlement>) {
        let written = CancellationToken::new();
        let settler = tokio::spawn(Arc::clone(&self).settle_batches(queue, written.clone()));
        let extender = tokio::spawn(Arc::clone(&self).extend_claims());
        let pending = tokio::spawn(pending::count(Arc::clone(&self.store)));
        let mut tasks = JoinSet::new();
        while !self.stop.is_cancelled() {
            let started = tokio::time::Instant::now();
            let (wait, idle) = match self.turn(&mut tasks).await {
                Ok(0) => (self.idle_wait(), true),
                Ok(_) => (Duration::ZERO, false),
                Err(e) => {
                    tracing::warn!(error = %ErrorChain(&e), "claiming webhook deliveries failed");
                    (Duration::from_secs(1), false)
                }
            };
            while tasks.try_join_next().is_some() {}
            tokio::select! {
                () = self.stop.cancelled() => {}
                () = tokio::time::sleep(wait) => {}
                () = self.places.freed(), if !wait.is_zero() => {}
                () = self.settled.notified(), if idle => {}
                () = self.wake.notified(), if idle => {
                    // Writes ring with every commit: one look per `WOKEN_EVERY` at most, each
                    // finding all of them, so a burst of writes costs no more claims than that.
                    tokio::select! {
                        () = self.stop.cancelled() => {}
                        () = tokio::time::sleep_until(started + WOKEN_EVERY) => {}
                    }
                }
            }
        }
        while tasks.join_next().await.is_some() {}
        written.cancel();
        let _ = settler.await;
        extender.abort();
        pending.abort();
    }

    /// How long to sleep having found nothing due: until the earliest retry this worker
    /// scheduled, `look_every` at most.
    fn idle_wait(&self) -> Duration {
        let next = self.next_retry_ms.load(Ordering::SeqCst);
        let until = next.saturating_sub(self.clock.now_ms()).max(0);
        Duration::from_millis(u64::try_from(until).unwrap_or(0)).min(self.look_every)
    }

    /// One turn: claims what there is room for and starts its attempts; how many claims it took
    /// (0 when there was no room or nothing was due). Whom to claim for is the places' choice
    /// (`Places::choose`), made inside the claim; what was chosen but not claimed is given back.
    pub async fn turn(self: &Arc<Self>, tasks: &mut JoinSet<()>) -> Result<usize, crate::store::StoreError> {
        // The retries due by now are this turn's to claim (or, with no room, the turn a freed
        // place starts): the worker no longer sleeps for them.
        let now = self.clock.now_ms();
        let own_due = self
            .next_retry_ms
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |at| (at <= now).then_some(i64::MAX))
            .is_ok();
        let (free, busy) = self.places.free_and_busy();
        if free == 0 {
            if own_due {
                lock(&self.looks).retries_owed();
            }
            return Ok(0);
        }
        // Fresh events and retries alike: a backlog of retries (a recovery's) is attempted beside
        // fresh events, each endpoint served in its turn.
        let windows = free.min(WINDOWS);
        let turn = Arc::new(Turn {
            places: Arc::clone(&self.places),
            granted: Mutex::default(),
        });
        let chooser: Arc<dyn Chooser> = turn.clone();
        // An endpoint busy until now (an attempt made by hand) was left out of the last looks.
        let mut rung = self.events.take_rung();
        rung.merchants.extend(self.places.take_freed());
        let (look, retries) = {
            let mut looks = lock(&self.looks);
            let look = looks.next(rung, now);
            let retries = looks.retries(&look, own_due, now);
            (look, if retries { free.min(RETRY_ROWS) } else { 0 })
        };
        let claimed = self
            .store
            .claim(ClaimRequest {
                owner: &self.owner,
                now_ms: now,
                hold: CLAIM,
                windows,
                retries,
                skip: &busy,
                merchants: look.merchants(),
                chooser: &chooser,
            })
            .await;
        let mut granted = std::mem::take(&mut *lock(&turn.granted));
        let claimed = match claimed {
            Ok(claimed) => claimed,
            Err(e) => {
                lock(&self.looks).failed();
                for (endpoint, n) in granted {
                    self.places.give_back(&endpoint, n);
                }
                return Err(e);
            }
        };
        let mut looks = lock(&self.looks);
        if look == Look::All {
            looks.took_all(self.clock.now_ms().saturating_sub(now));
        }
        if retries > 0 {
            looks.retries_offered(claimed.retries_offered);
        }
        looks.found(look, &claimed.unclaimed, claimed.more);
        drop(looks);
        let found = claimed.windows.len() + claimed.retries.len();
        for window in claimed.windows {
            let places = granted
                .remove(&window.webhook_id)
                .unwrap_or_else(|| self.places.take(&window.webhook_id, window.merchant_pk, PER_ENDPOINT));
            {
                let mut held = lock(&self.held);
                held.windows.insert(window.webhook_id.clone(), now);
                held.merchants.insert(window.webhook_id.clone(), window.merchant_pk);
            }
            tasks.spawn(Arc::clone(self).deliver_window(window, places));
        }
        let mut groups: HashMap<String, Vec<Due>> = HashMap::new();
        for due in claimed.retries {
            groups.entry(due.webhook_id.clone()).or_default().push(due);
        }
        for (endpoint, dues) in groups {
            let merchant_pk = dues.first().map_or(0, |d| d.merchant_pk);
            let places = granted
                .remove(&endpoint)
                .unwrap_or_else(|| self.places.take(&endpoint, merchant_pk, dues.len()));
            {
                let mut held = lock(&self.held);
                for due in &dues {
                    held.retries.insert((due.webhook_id.clone(), due.sequence), now);
                }
            }
            tasks.spawn(Arc::clone(self).deliver_retries(endpoint, dues, places));
        }
        for (endpoint, n) in granted {
            self.places.give_back(&endpoint, n);
        }
        Ok(found)
    }

    /// Whether an attempt under a claim held since `held_since` may start now: not stopping, and
    /// the claim holds for longer than the attempt can take.
    fn may_start(&self, held_since: Option<i64>) -> bool {
        let Some(held_since) = held_since else {
            return false;
        };
        !self.stop.is_cancelled() && self.clock.now_ms() + millis(MAX_ATTEMPT) <= held_since + millis(CLAIM)
    }

    /// A window of an endpoint's fresh events, `places` attempts at once in sequence order,
    /// then queued to be settled whole (or through the last event attempted).
    async fn deliver_window(self: Arc<Self>, window: Window, places: usize) {
        let Window {
            webhook_id,
            through,
            dues,
            ..
        } = window;
        let total = dues.len();
        let attempts: Vec<Settled> = futures_util::stream::iter(dues)
            .take_while(|_| {
                let claimed_at = lock(&self.held).windows.get(&webhook_id).copied();
                std::future::ready(self.may_start(claimed_at))
            })
            .map(|due| self.attempt(due))
            .buffer_unordered(places.max(1))
            .collect()
            .await;
        let settled_through = if attempts.len() == total {
            Some(through)
        } else {
            attempts.iter().map(|s| s.sequence).max()
        };
        let settlement = Settlement {
            source: Source::Window {
                webhook_id: webhook_id.clone(),
                claimed_through: through,
                settled_through,
            },
            attempts,
        };
        // The places are given back once the results are queued: a recording that falls behind
        // holds the claims back (the queue is bounded). The claim stays held (and extended) until
        // they are written.
        let _ = self.settle.send(settlement).await;
        self.places.give_back(&webhook_id, places);
    }

    /// An endpoint's retries claimed together, `places` (at most its limit) attempts at
    /// once, each only while its own claim holds, then queued to be settled together.
    async fn deliver_retries(self: Arc<Self>, endpoint: String, dues: Vec<Due>, places: usize) {
        let keys: Vec<(String, i64)> = dues.iter().map(|d| (d.webhook_id.clone(), d.sequence)).collect();
        let attempts: Vec<Settled> = futures_util::stream::iter(dues)
            .filter(|due| {
                let claimed_at = lock(&self.held)
                    .retries
                    .get(&(due.webhook_id.clone(), due.sequence))
                    .copied();
                std::future::ready(self.may_start(claimed_at))
            })
            .map(|due| self.attempt(due))
            .buffer_unordered(places.max(1))
            .collect()
            .await;
        // Those not attempted: their claims lapse and they are claimed again.
        {
            let mut held = lock(&self.held);
            for key in &keys {
                if !attempts.iter().any(|a| a.webhook_id == key.0 && a.sequence == key.1) {
                    held.retries.remove(key);
                }
            }
        }
        if !attempts.is_empty() {
            let settlement = Settlement {
                source: Source::Retries,
                attempts,
            };
            let _ = self.settle.send(settlement).await;
        }
        self.places.give_back(&endpoint, places);
    }

    /// One attempt, as it ended.
    async fn attempt(&self, due: Due) -> Settled {
        let delivery = Delivery {
            url: &due.url,
            event_id: &due.event_id,
            body: &due.body,
            secrets: &due.secrets,
        };
        let of = Of {
            sequence: Some(due.sequence),
            attempt: due.attempts + 1,
            trigger: Trigger::Automatic,
        };
        let made = attempt::make(
            self.transport.as_ref(),
            self.settings.reach,
            self.clock.as_ref(),
            delivery,
            of,
        )
        .await;
        self.places.answered(&due.webhook_id, due.merchant_pk, made.answered);
        if made.attempt.outcome == Outcome::Delivered {
            let lag = (made.ended_at_ms - due.appended_at_ms).max(0) as f64 / 1000.0;
            metrics::histogram!("webhook_delivery_seconds").record(lag);
        }
        Settled {
            webhook_id: due.webhook_id,
            merchant_pk: due.merchant_pk,
            appended_at_ms: due.appended_at_ms,
            sequence: due.sequence,
            failing_since_ms: due.failing_since_ms,
            attempt: made.attempt,
            retry_after: made.retry_after,
            ended_at_ms: made.ended_at_ms,
            jitter: jitter(),
        }
    }

    /// Writes the queued results in batches, one settle plan and one transaction each, until
    /// `written` is cancelled and the queue is empty; releases their claims.
    async fn settle_batches(self: Arc<Self>, mut queue: mpsc::Receiver<Settlement>, written: CancellationToken) {
        let mut batch = Vec::with_capacity(SETTLE_BATCH);
        loop {
            let n = tokio::select! {
                n = queue.recv_many(&mut batch, SETTLE_BATCH) => n,
                () = written.cancelled() => {
                    queue.close();
                    queue.recv_many(&mut batch, SETTLE_BATCH).await
                }
            };
            if n == 0 {
                return;
            }
            self.write(std::mem::take(&mut batch)).await;
        }
    }

    async fn write(&self, batch: Vec<Settlement>) {
        let mut windows = Vec::new();
        let mut retries = Vec::new();
        let mut retry_merchants = HashSet::new();
        for s in &batch {
            match &s.source {
                Source::Window { webhook_id, .. } => windows.push(webhook_id.clone()),
                Source::Retries => {
                    retries.extend(s.attempts.iter().map(|a| (a.webhook_id.clone(), a.sequence)));
                    retry_merchants.extend(s.attempts.iter().map(|a| a.merchant_pk));
                }
            }
        }
        let rules = SettleRules {
            retry: &self.settings.retry,
            disable_after: self.settings.disable_after,
        };
        let plan = settle::plan(batch, &rules);
        let first_retry = plan
            .new_retries
            .iter()
            .map(|(r, _)| r.at_ms)
            .chain(plan.rescheduled.iter().map(|r| r.at_ms))
            .min();
        match self.store.settle(&self.owner, plan).await {
            Ok(()) => {
                if let Some(at) = first_retry {
                    self.next_retry_ms.fetch_min(at, Ordering::SeqCst);
                }
            }
            // Their claims lapse and the deliveries are attempted again: at least once.
            Err(e) => tracing::warn!(error = %ErrorChain(&e), "recording webhook attempts failed"),
        }
        let mut held = lock(&self.held);
        let mut looks = lock(&self.looks);
        for w in &windows {
            held.windows.remove(w);
            if let Some(merchant_pk) = held.merchants.remove(w) {
                looks.settled(merchant_pk);
            }
        }
        for r in &retries {
            held.retries.remove(r);
        }
        for merchant_pk in retry_merchants {
            looks.settled(merchant_pk);
        }
        if !retries.is_empty() {
            // Their endpoints are free again: more of their retries may be due.
            looks.retries_owed();
        }
        drop((held, looks));
        // The claims are released: their endpoints' next windows may be claimed now, and the
        // worker sleeps no longer than until the first retry just scheduled.
        self.settled.notify_one();
    }

    /// Extends every claim held, every `EXTEND_EVERY`.
    async fn extend_claims(self: Arc<Self>) {
        let mut tick = tokio::time::interval(EXTEND_EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            let started = self.clock.now_ms();
            let (windows, retries): (Vec<String>, Vec<(String, i64)>) = {
                let held = lock(&self.held);
                (
                    held.windows.keys().cloned().collect(),
                    held.retries.keys().cloned().collect(),
                )
            };
            if windows.is_empty() && retries.is_empty() {
                continue;
            }
            let held = HeldClaims {
                owner: &self.owner,
                hold: CLAIM,
                windows: &windows,
                retries: &retries,
            };
            match self.store.extend(held).await {
                Ok(lost) => {
                    let mut held = lock(&self.held);
                    // A claim no longer held starts no attempt (`may_start` finds no claim).
                    for w in &lost.windows {
                        held.windows.remove(w);
                        held.merchants.remove(w);
                    }
                    for r in &lost.retries {
                        held.retries.remove(r);
                    }
                    for w in &windows {
                        if let Some(since) = held.windows.get_mut(w) {
                            *since = (*since).max(started);
                        }
                    }
                    for r in &retries {
                        if let Some(since) = held.retries.get_mut(r) {
                            *since = (*since).max(started);
                        }
                    }
                }
                Err(e) => tracing::warn!(error = %ErrorChain(&e), "extending webhook claims failed"),
            }
        }
    }
}

/// One turn's choice: the places' choice, with what it granted kept so that the turn gives back
/// what the store chose but did not claim.
struct Turn {
    places: Arc<Places>,
    granted: Mutex<HashMap<String, usize>>,
}

impl Chooser for Turn {
    fn choose(&self, candidates: &[Candidate], most: usize) -> Vec<usize> {
        let granted = self.places.choose(candidates, most);
        let mut kept = lock(&self.granted);
        for (c, &n) in candidates.iter().zip(&granted) {
            if n > 0 {
                *kept.entry(c.webhook_id.clone()).or_default() += n;
            }
        }
        granted
    }
}

#[cfg(test)]
#[path = "worker_tests.rs"]
mod tests;

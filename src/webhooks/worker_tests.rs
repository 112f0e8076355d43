//! The worker's loop driven with a fake store, a fake transport and a fake clock: what it
//! claims, what it attempts, what it settles, and how it stops.

use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};

use async_trait::async_trait;
use tokio::sync::{Notify, Semaphore};

use super::*;
use crate::domain::webhook::{Attempt, Outcome, Trigger, Webhook};
use crate::store::StoreError;
use crate::store::event_signal::EventSignal;
use crate::store::webhook_api::{
    AttemptsQuery, Claimed, Lost, NewWebhook, SettlePlan, WebhookChange, choose_windows, retry_room, take_rows,
};
use crate::webhooks::address::Reach;
use crate::webhooks::send::Sent;

/// A claim's owner, windows, retries and merchants looked at (none: all).
type Asked = (String, usize, usize, Option<Vec<i64>>);

/// Hands out the claims it is given once, records extensions and plans.
#[derive(Default)]
struct FakeStore {
    to_claim: Mutex<Option<Claimed>>,
    requests: Mutex<Vec<Asked>>,
    plans: Mutex<Vec<(String, SettlePlan)>>,
    extend_fails: bool,
    /// Offered once the first plan is written (its claims released), which takes 50 ms.
    after_settle: Mutex<Option<Claimed>>,
}

#[async_trait]
impl WebhookStore for FakeStore {
    async fn create_webhook(&self, _: i64, _: NewWebhook) -> Result<Option<Webhook>, StoreError> {
        Ok(None)
    }
    async fn list_webhooks(&self, _: i64) -> Result<Vec<Webhook>, StoreError> {
        Ok(Vec::new())
    }
    async fn change_webhook(&self, _: i64, _: &str, _: WebhookChange) -> Result<Option<Webhook>, StoreError> {
        Ok(None)
    }
    async fn attempts(&self, _: AttemptsQuery) -> Result<Option<Vec<Attempt>>, StoreError> {
        Ok(None)
    }
    /// As the real stores do: the chooser picks among what there is to claim.
    async fn claim(&self, request: ClaimRequest<'_>) -> Result<Claimed, StoreError> {
        let merchants = request.merchants.map(|m| {
            let mut m = m.to_vec();
            m.sort_unstable();
            m
        });
        lock(&self.requests).push((request.owner.to_owned(), request.windows, request.retries, merchants));
        let Some(mut offered) = lock(&self.to_claim).take() else {
            return Ok(Claimed::default());
        };
        let candidate = |webhook_id: &str, merchant_pk: i64| Candidate {
            webhook_id: webhook_id.to_owned(),
            merchant_pk,
            failing: false,
        };
        let windows: Vec<Candidate> = offered
            .windows
            .iter()
            .map(|w| candidate(&w.webhook_id, w.merchant_pk))
            .collect();
        let chosen = choose_windows(request.chooser.as_ref(), &windows, request.windows);
        let mut claimed = Claimed::default();
        for i in chosen.into_iter().rev() {
            claimed.windows.insert(0, offered.windows.remove(i));
        }
        // The endpoints in the order of their first row (the order they fell due), each with its rows.
        let mut endpoints: Vec<(Candidate, Vec<Due>)> = Vec::new();
        for due in offered.retries {
            match endpoints.iter_mut().find(|(c, _)| c.webhook_id == due.webhook_id) {
                Some((_, rows)) => rows.push(due),
                None => endpoints.push((candidate(&due.webhook_id, due.merchant_pk), vec![due])),
            }
        }
        let offers: Vec<Candidate> = endpoints.iter().map(|(c, _)| c.clone()).collect();
        let room = retry_room(request.chooser.as_ref(), &offers, request.retries);
        let read: Vec<Vec<Due>> = endpoints
            .into_iter()
            .zip(room)
            .map(|((_, rows), r)| rows.into_iter().take(r).collect())
            .collect();
        claimed.retries = take_rows(read, request.retries);
        claimed.retries_offered = request.retries > 0 && !offers.is_empty();
        Ok(claimed)
    }
    async fn extend(&self, _: HeldClaims<'_>) -> Result<Lost, StoreError> {
        if self.extend_fails {
            Err(StoreError::Unavailable)
        } else {
            Ok(Lost::default())
        }
    }
    async fn settle(&self, owner: &str, plan: SettlePlan) -> Result<(), StoreError> {
        let next = lock(&self.after_settle).take();
        if next.is_some() {
            tokio::time::sleep(Duration::from_millis(50)).await;
            *lock(&self.to_claim) = next;
        }
        lock(&self.plans).push((owner.to_owned(), plan));
        Ok(())
    }
    async fn pending(&self) -> Result<u64, StoreError> {
        Ok(0)
    }
    async fn prune_attempts(&self, _: i64) -> Result<usize, StoreError> {
        Ok(0)
    }
}

/// Answers 204 to every attempt once a permit is given (`release`); counts the attempts started.
struct FakeTransport {
    started: AtomicUsize,
    answers: Semaphore,
    sent: Notify,
}

impl FakeTransport {
    fn new() -> Arc<Self> {
        Arc::new(FakeTransport {
            started: AtomicUsize::new(0),
            answers: Semaphore::new(0),
            sent: Notify::new(),
        })
    }

    fn release(&self, n: usize) {
        self.answers.add_permits(n);
    }

    async fn until_started(&self, n: usize) {
        while self.started.load(Ordering::SeqCst) < n {
            let _ = tokio::time::timeout(Duration::from_millis(10), self.sent.notified()).await;
        }
    }
}

#[async_trait]
impl Transport for FakeTransport {
    async fn send(&self, _: Delivery<'_>, _: Reach) -> Sent {
        self.started.fetch_add(1, Ordering::SeqCst);
        self.sent.notify_waiters();
        if let Ok(permit) = self.answers.acquire().await {
            permit.forget();
        }
        Sent {
            status: Some(204),
            error: None,
            retry_after: None,
            took: Duration::from_millis(1),
        }
    }
}

#[derive(Default)]
struct FakeClock(AtomicI64);

impl Clock for FakeClock {
    fn now_ms(&self) -> i64 {
        self.0.load(Ordering::SeqCst)
    }
}

fn due(sequence: i64) -> Due {
    Due {
        webhook_id: "w".into(),
        merchant_pk: 1,
        url: "https://example.com/".into(),
        secrets: Vec::new(),
        failing_since_ms: None,
        sequence,
        attempts: 0,
        appended_at_ms: 0,
        event_id: format!("e{sequence}"),
        body: "{}".into(),
    }
}

/// A store that hands out one window of `n` events (sequences 1..=n, through `n + 5`).
fn one_window(n: i64, extend_fails: bool) -> Arc<FakeStore> {
    Arc::new(FakeStore {
        to_claim: Mutex::new(Some(Claimed {
            windows: vec![Window {
                webhook_id: "w".into(),
                merchant_pk: 1,
                through: n + 5,
                dues: (1..=n).map(due).collect(),
            }],
            ..Claimed::default()
        })),
        extend_fails,
        ..FakeStore::default()
    })
}

fn start(
    store: &Arc<FakeStore>,
    transport: &Arc<FakeTransport>,
    clock: &Arc<FakeClock>,
) -> (CancellationToken, tokio::task::JoinHandle<()>) {
    let (stop, run, _) = start_with_places(store, transport, clock);
    (stop, run)
}

fn start_with_places(
    store: &Arc<FakeStore>,
    transport: &Arc<FakeTransport>,
    clock: &Arc<FakeClock>,
) -> (CancellationToken, tokio::task::JoinHandle<()>, Arc<Places>) {
    let stop = CancellationToken::new();
    let places = Arc::new(Places::default());
    let (worker, queue) = worker(store, transport, clock, &places, &stop, Arc::default());
    (stop, tokio::spawn(worker.run(queue)), places)
}

/// A worker that nothing wakes but `wake` and its own retries (it would look again only after
/// an hour), on a retry schedule of 2 s.
fn worker(
    store: &Arc<FakeStore>,
    transport: &Arc<FakeTransport>,
    clock: &Arc<FakeClock>,
    places: &Arc<Places>,
    stop: &CancellationToken,
    events: Arc<EventSignal>,
) -> (Arc<Worker>, mpsc::Receiver<Settlement>) {
    Worker::new(
        Arc::clone(store) as Arc<dyn WebhookStore>,
        Arc::clone(transport) as Arc<dyn Transport>,
        Arc::clone(clock) as Arc<dyn Clock>,
        Arc::clone(places),
        WebhookSettings {
            retry: crate::domain::webhook::RetrySchedule(vec![Duration::from_secs(2)]),
            ..WebhookSettings::default()
        },
        Wake {
            events,
            look_every: AN_HOUR,
        },
        stop.clone(),
    )
}

const AN_HOUR: Duration = Duration::from_secs(3600);

fn window_of(plan: &SettlePlan) -> (i64, Option<i64>) {
    let (_, claimed, settled) = plan.windows[0].clone();
    (claimed, settled)
}

#[tokio::test]
async fn a_window_is_attempted_eight_at_a_time_and_settled_whole_in_the_owner_s_name() {
    let (store, transport, clock) = (
        one_window(20, false),
        FakeTransport::new(),
        Arc::new(FakeClock::default()),
    );
    let (stop, run, places) = start_with_places(&store, &transport, &clock);
    transport.until_started(8).await;
    tokio::task::yield_now().await;
    assert_eq!(transport.started.load(Ordering::SeqCst), 8, "eight at once");
    assert_eq!(
        places.taken(),
        PER_ENDPOINT,
        "the window holds its endpoint's eight places"
    );
    transport.release(20);
    transport.until_started(20).await;
    stop.cancel();
    run.await.unwrap();
    let plans = lock(&store.plans);
    let attempts: usize = plans.iter().map(|(_, p)| p.attempts.len()).sum();
    assert_eq!(attempts, 20);
    assert_eq!(
        window_of(&plans[0].1),
        (25, Some(25)),
        "settled through the whole window"
    );
    let requests = lock(&store.requests);
    assert!(
        requests.iter().all(|(owner, ..)| *owner == plans[0].0),
        "claimed and settled by one owner"
    );
    assert_eq!(places.taken(), 0, "every place given back");
}

/// A stop with attempts in flight: nothing new starts, the eight in flight end and are recorded,
/// and the window is settled through the last of them (the rest are claimed again).
#[tokio::test]
async fn a_stop_lets_the_attempts_in_flight_end_and_records_them() {
    let (store, transport, clock) = (
        one_window(20, false),
        FakeTransport::new(),
        Arc::new(FakeClock::default()),
    );
    let (stop, run) = start(&store, &transport, &clock);
    transport.until_started(8).await;
    stop.cancel();
    transport.release(8);
    run.await.unwrap();
    assert_eq!(
        transport.started.load(Ordering::SeqCst),
        8,
        "no attempt started after the stop"
    );
    let plans = lock(&store.plans);
    assert_eq!(plans.len(), 1);
    assert_eq!(plans[0].1.attempts.len(), 8, "every attempt in flight recorded");
    assert_eq!(window_of(&plans[0].1), (25, Some(8)));
}

/// The claim cannot be extended (the database is away) and time passes: no attempt starts once
/// the claim could lapse before it ended.
#[tokio::test]
async fn no_attempt_starts_once_its_claim_could_lapse() {
    let (store, transport, clock) = (
        one_window(20, true),
        FakeTransport::new(),
        Arc::new(FakeClock::default()),
    );
    let (stop, run) = start(&store, &transport, &clock);
    transport.until_started(8).await;
    clock.0.store(millis(CLAIM - MAX_ATTEMPT) + 1, Ordering::SeqCst);
    transport.release(8);
    // The window ends by itself: nothing more may start.
    for _ in 0..1000 {
        if !lock(&store.plans).is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    stop.cancel();
    run.await.unwrap();
    assert_eq!(transport.started.load(Ordering::SeqCst), 8);
    let plans = lock(&store.plans);
    assert_eq!(window_of(&plans[0].1), (25, Some(8)));
}

/// Retries are attempted one place each, and a delivered retry row is done (deleted).
#[tokio::test]
async fn delivered_retries_are_settled_as_done() {
    let store = Arc::new(FakeStore {
        to_claim: Mutex::new(Some(Claimed {
            windows: Vec::new(),
            retries: vec![due(1), due(2)],
            ..Claimed::default()
        })),
        ..FakeStore::default()
    });
    let (transport, clock) = (FakeTransport::new(), Arc::new(FakeClock::default()));
    clock.0.store(1_000_000, Ordering::SeqCst);
    let (stop, run) = start(&store, &transport, &clock);
    transport.until_started(2).await;
    stop.cancel();
    transport.release(2);
    run.await.unwrap();
    let plans = lock(&store.plans);
    let done: Vec<_> = plans.iter().flat_map(|(_, p)| p.done.clone()).collect();
    assert_eq!(done.len(), 2, "both delivered retries are done: {done:?}");
}

/// An endpoint's retries claimed together (a recovery's backlog) are attempted `PER_ENDPOINT` at
/// a time, each once, and settled together.
#[tokio::test]
async fn an_endpoint_s_retries_are_attempted_eight_at_a_time() {
    let store = Arc::new(FakeStore {
        to_claim: Mutex::new(Some(Claimed {
            windows: Vec::new(),
            retries: (1..=20).map(due).collect(),
            ..Claimed::default()
        })),
        ..FakeStore::default()
    });
    let (transport, clock) = (FakeTransport::new(), Arc::new(FakeClock::default()));
    clock.0.store(1_000_000, Ordering::SeqCst);
    let (stop, run) = start(&store, &transport, &clock);
    transport.until_started(PER_ENDPOINT).await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(
        transport.started.load(Ordering::SeqCst),
        PER_ENDPOINT,
        "no more than eight of one endpoint at once"
    );
    transport.release(20);
    transport.until_started(20).await;
    for _ in 0..1000 {
        if !lock(&store.plans).is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    stop.cancel();
    run.await.unwrap();
    let plans = lock(&store.plans);
    let attempts: usize = plans.iter().map(|(_, p)| p.attempts.len()).sum();
    assert_eq!(attempts, 20, "each once");
    let done: usize = plans.iter().map(|(_, p)| p.done.len()).sum();
    assert_eq!(done, 20);
}

/// An idle worker sleeps until it is rung (an event appended), not until its next look.
#[tokio::test]
async fn an_idle_worker_claims_again_when_rung() {
    let (store, transport, clock) = (
        Arc::new(FakeStore::default()),
        FakeTransport::new(),
        Arc::new(FakeClock::default()),
    );
    let (stop, places, wake) = (
        CancellationToken::new(),
        Arc::new(Places::default()),
        Arc::new(EventSignal::default()),
    );
    let (w, queue) = worker(&store, &transport, &clock, &places, &stop, Arc::clone(&wake));
    let run = tokio::spawn(w.run(queue));
    while lock(&store.requests).is_empty() {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    *lock(&store.to_claim) = one_window(1, false).to_claim.lock().unwrap().take();
    wake.ring(1);
    tokio::time::timeout(Duration::from_secs(30), transport.until_started(1))
        .await
        .unwrap_or_else(|_| panic!("the ring did not wake the idle worker"));
    transport.release(1);
    stop.cancel();
    run.await.unwrap();
}

/// A failed attempt's retry, once recorded, sets how long the idle worker sleeps: until it is
/// due, not until its next look; once due, the turn that claims it clears it.
#[tokio::test]
async fn a_retry_recorded_wakes_the_worker_when_it_is_due() {
    let (store, transport, clock) = (
        Arc::new(FakeStore::default()),
        FakeTransport::new(),
        Arc::new(FakeClock(AtomicI64::new(1_000_000))),
    );
    let (stop, places, wake) = (
        CancellationToken::new(),
        Arc::new(Places::default()),
        Arc::new(EventSignal::default()),
    );
    let (w, _queue) = worker(&store, &transport, &clock, &places, &stop, Arc::clone(&wake));
    assert_eq!(w.idle_wait(), AN_HOUR, "no retry scheduled");
    let failed = Settled {
        webhook_id: "w".into(),
        merchant_pk: 1,
        appended_at_ms: 0,
        sequence: 1,
        failing_since_ms: None,
        attempt: Attempt {
            id: 0,
            event_id: "e1".into(),
            sequence: Some(1),
            attempt: 1,
            attempted_at_ms: 1_000_000,
            outcome: Outcome::Failed,
            http_status: Some(500),
            error: None,
            duration_ms: 10,
            trigger: Trigger::Automatic,
        },
        retry_after: None,
        ended_at_ms: 1_000_000,
        jitter: 0.0,
    };
    let settlement = Settlement {
        source: Source::Window {
            webhook_id: "w".into(),
            claimed_through: 1,
            settled_through: Some(1),
        },
        attempts: vec![failed],
    };
    w.write(vec![settlement]).await;
    assert_eq!(lock(&store.plans)[0].1.new_retries[0].0.at_ms, 1_002_000);
    assert_eq!(w.idle_wait(), Duration::from_secs(2), "asleep until the retry is due");
    tokio::time::timeout(Duration::from_secs(30), w.settled.notified())
        .await
        .unwrap_or_else(|_| panic!("a worker asleep for longer is not woken to sleep less"));
    clock.0.store(1_001_500, Ordering::SeqCst);
    assert_eq!(w.idle_wait(), Duration::from_millis(500));
    clock.0.store(1_002_000, Ordering::SeqCst);
    let mut tasks = JoinSet::new();
    assert_eq!(w.turn(&mut tasks).await.unwrap(), 0);
    assert_eq!(w.idle_wait(), AN_HOUR, "the turn at its time took it");
}

/// An endpoint's next window is claimed as soon as the last one's results are written (its claim
/// released), not at the worker's next look, nor only when a place is freed (before the write).
#[tokio::test]
async fn the_next_window_is_claimed_once_the_last_is_written() {
    let store = one_window(1, false);
    *lock(&store.after_settle) = one_window(1, false).to_claim.lock().unwrap().take();
    let (transport, clock) = (FakeTransport::new(), Arc::new(FakeClock::default()));
    let (stop, places) = (CancellationToken::new(), Arc::new(Places::default()));
    let (w, queue) = worker(&store, &transport, &clock, &places, &stop, Arc::default());
    let run = tokio::spawn(w.run(queue));
    transport.release(2);
    tokio::time::timeout(Duration::from_secs(30), transport.until_started(2))
        .await
        .unwrap_or_else(|_| panic!("the next window waited for the worker's next look"));
    stop.cancel();
    run.await.unwrap();
    assert_eq!(lock(&store.plans).len(), 2, "both windows written");
    let requests = lock(&store.requests);
    assert_eq!(requests[0].3, None, "the first look is at every merchant");
    assert!(
        requests.iter().any(|r| r.3 == Some(vec![1])),
        "the endpoint's merchant is looked at once its window is settled"
    );
}

#[path = "worker_looks_tests.rs"]
mod looks;

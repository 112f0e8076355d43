//! The worker's looks: whose endpoints a turn reads, and when it claims retries.

use super::*;

/// A worker on `store` and `places`, with a clock and an event signal of its own.
struct Looking {
    w: Arc<Worker>,
    clock: Arc<FakeClock>,
    events: Arc<EventSignal>,
    _queue: mpsc::Receiver<Settlement>,
}

fn looking(store: &Arc<FakeStore>, places: &Arc<Places>) -> Looking {
    let (clock, events) = (Arc::new(FakeClock::default()), Arc::new(EventSignal::default()));
    let (w, queue) = worker(
        store,
        &FakeTransport::new(),
        &clock,
        places,
        &CancellationToken::new(),
        Arc::clone(&events),
    );
    Looking {
        w,
        clock,
        events,
        _queue: queue,
    }
}

/// A store whose first claim hands out one retry (of sequence 1).
fn one_retry_to_claim() -> Arc<FakeStore> {
    Arc::new(FakeStore {
        to_claim: Mutex::new(Some(Claimed {
            retries: vec![due(1)],
            ..Claimed::default()
        })),
        ..FakeStore::default()
    })
}

/// Between its looks at every endpoint (the first, then one a period), a turn reads only the
/// endpoints of the merchants that rang; a ring of all, or deliveries due, is a look at all.
#[tokio::test]
async fn between_looks_at_all_a_turn_looks_only_at_the_merchants_that_rang() {
    let store = Arc::new(FakeStore::default());
    let Looking {
        w,
        clock,
        events,
        _queue,
    } = looking(&store, &Arc::default());
    let mut tasks = JoinSet::new();
    w.turn(&mut tasks).await.unwrap();
    events.ring(6);
    events.ring(5);
    w.turn(&mut tasks).await.unwrap();
    w.turn(&mut tasks).await.unwrap();
    events.ring(7);
    clock.0.store(AN_HOUR.as_millis() as i64, Ordering::SeqCst);
    w.turn(&mut tasks).await.unwrap();
    events.deliveries_due();
    w.turn(&mut tasks).await.unwrap();
    let looks: Vec<Option<Vec<i64>>> = lock(&store.requests).iter().map(|r| r.3.clone()).collect();
    assert_eq!(looks, vec![None, Some(vec![5, 6]), Some(vec![]), None, None]);
}

/// An endpoint busy with an attempt made by hand is left out of the worker's looks; once its last
/// place is given back, the next turn looks at its merchant again, not only the next look at all.
#[tokio::test]
async fn an_endpoint_freed_by_an_attempt_made_by_hand_is_looked_at_by_the_next_turn() {
    let (store, places) = (Arc::new(FakeStore::default()), Arc::new(Places::default()));
    let Looking { w, _queue, .. } = looking(&store, &places);
    let mut tasks = JoinSet::new();
    assert_eq!(places.take("by-hand", 9, 1), 1);
    w.turn(&mut tasks).await.unwrap();
    w.turn(&mut tasks).await.unwrap();
    places.give_back("by-hand", 1);
    w.turn(&mut tasks).await.unwrap();
    w.turn(&mut tasks).await.unwrap();
    let looks: Vec<Option<Vec<i64>>> = lock(&store.requests).iter().map(|r| r.3.clone()).collect();
    assert_eq!(looks, vec![None, Some(vec![]), Some(vec![9]), Some(vec![])]);
}

/// Retries are claimed with a look at all, while the last claim was offered some, and when one
/// this worker scheduled is due; a turn woken by a ring between those claims only fresh events.
#[tokio::test]
async fn a_turn_woken_by_a_ring_claims_retries_only_when_some_may_be_due() {
    let store = one_retry_to_claim();
    let Looking { w, events, _queue, .. } = looking(&store, &Arc::default());
    let mut tasks = JoinSet::new();
    assert_eq!(w.turn(&mut tasks).await.unwrap(), 1);
    for _ in 0..2 {
        events.ring(1);
        w.turn(&mut tasks).await.unwrap();
    }
    w.next_retry_ms.store(0, Ordering::SeqCst);
    events.ring(1);
    w.turn(&mut tasks).await.unwrap();
    let asked: Vec<usize> = lock(&store.requests).iter().map(|r| r.2).collect();
    assert_eq!(asked, vec![RETRY_ROWS, RETRY_ROWS, 0, RETRY_ROWS]);
}

/// Once the retries it attempted are settled, their endpoints are free again: the worker's next
/// turn claims retries, not only its next claim of them once a period.
#[tokio::test]
async fn retries_settled_are_followed_by_a_claim_of_retries() {
    let store = one_retry_to_claim();
    let transport = FakeTransport::new();
    let (stop, run) = start(&store, &transport, &Arc::new(FakeClock::default()));
    transport.until_started(1).await;
    // The turn after the claim asks for retries too (it was offered one), then finds none.
    while lock(&store.requests).len() < 2 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let before = 2;
    transport.release(1);
    let after_settling = async {
        loop {
            let asked = lock(&store.requests).iter().skip(before).any(|r| r.2 == RETRY_ROWS);
            if asked && !lock(&store.plans).is_empty() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(30), after_settling)
        .await
        .unwrap_or_else(|_| panic!("no claim of retries followed the settlement"));
    stop.cancel();
    run.await.unwrap();
}

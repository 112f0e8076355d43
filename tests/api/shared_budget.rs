//! Several instances, one rate budget (CONTRACT §15): a merchant that sends without pause for T
//! seconds, its requests spread over n instances in any way, gets `burst + rate × T ± m` of them
//! admitted, `m = n × ⌈burst ÷ 10⌉`; while the database is unreachable each instance keeps
//! limiting on its share. Ignored on the SQLite pass (one instance a file); `scripts/test` runs them
//! on PostgreSQL.

use std::num::NonZeroU32;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::json;
use storefront::app::Settings;
use storefront::rate_limit::Rate;

use crate::helpers::*;

const RATE: u32 = 20;
const BURST: u32 = 20;
const LIST: &str = "/v1/categories/list";

fn settings() -> Settings {
    Settings {
        rate: Rate::PerSecond(NonZeroU32::new(RATE).unwrap()),
        burst: BURST,
        ..Settings::default()
    }
}

/// `n` instances on the database at `url`, each with its own store and state, as `serve` would be,
/// each having served the first merchant once (their connections to the database open); then
/// quiet for longer than `burst ÷ rate`, as §15's bound begins.
async fn instances(url: &str, n: usize) -> Vec<TestApp> {
    let mut apps: Vec<TestApp> = Vec::new();
    for _ in 0..n {
        let store = open_store(url).await;
        apps.push(TestApp::spawn_configured(store, tempfile::tempdir().unwrap(), settings()).await);
    }
    let key = apps[0].key.clone();
    for app in &apps {
        assert_eq!(app.post_as(LIST, &key, &json!({})).await.status, 200);
    }
    tokio::time::sleep(Duration::from_millis(2500)).await;
    apps
}

/// How requests are spread over the instances.
#[derive(Clone, Copy, Debug)]
enum Spread {
    Evenly,
    ThroughOne,
}

/// Sends `key`'s requests without pause for `for_how_long` from 8 clients, each connected to every
/// instance beforehand; answers how many were admitted, how many refused, and T: from the first
/// answer (when the instances began to see the merchant) to the last request sent.
async fn flood(apps: &[TestApp], key: &str, spread: Spread, for_how_long: Duration) -> (usize, usize, Duration) {
    let bases: Arc<Vec<String>> = Arc::new(apps.iter().map(|a| a.base.clone()).collect());
    let (admitted, refused, sent) = (
        Arc::new(AtomicUsize::new(0)),
        Arc::new(AtomicUsize::new(0)),
        Arc::new(AtomicUsize::new(0)),
    );
    let mut clients = Vec::new();
    for _ in 0..8 {
        let client = reqwest::Client::new();
        for base in bases.iter() {
            assert_eq!(
                client.get(format!("{base}/healthz")).send().await.unwrap().status(),
                200
            );
        }
        clients.push(client);
    }
    let started = Instant::now();
    let mut tasks = Vec::new();
    for client in clients {
        let (bases, key) = (Arc::clone(&bases), key.to_owned());
        let (admitted, refused, sent) = (Arc::clone(&admitted), Arc::clone(&refused), Arc::clone(&sent));
        tasks.push(tokio::spawn(async move {
            let (mut first, mut last) = (None, Duration::ZERO);
            while started.elapsed() < for_how_long {
                let i = sent.fetch_add(1, Ordering::SeqCst);
                let base = match spread {
                    Spread::Evenly => &bases[i % bases.len()],
                    Spread::ThroughOne => &bases[0],
                };
                last = started.elapsed();
                let answer = client
                    .post(format!("{base}{LIST}"))
                    .bearer_auth(&key)
                    .json(&json!({"pagination": {"limit": 1}}))
                    .send()
                    .await
                    .unwrap_or_else(|e| panic!("{base}: {e:?}"));
                first.get_or_insert_with(|| started.elapsed());
                match answer.status().as_u16() {
                    200 => admitted.fetch_add(1, Ordering::SeqCst),
                    429 => refused.fetch_add(1, Ordering::SeqCst),
                    other => panic!("answered {other}"),
                };
            }
            (first.unwrap_or_default(), last)
        }));
    }
    let (mut first, mut last) = (Duration::MAX, Duration::ZERO);
    for task in tasks {
        let (f, l) = task.await.unwrap();
        first = first.min(f);
        last = last.max(l);
    }
    (
        admitted.load(Ordering::SeqCst),
        refused.load(Ordering::SeqCst),
        last.saturating_sub(first),
    )
}

/// `admitted` is within `burst + rate × T ± m` for `n` instances (one unit more either way for the
/// request in flight when T was read).
fn assert_within_bound(admitted: usize, elapsed: Duration, n: usize, what: &str) {
    let expected = f64::from(BURST) + f64::from(RATE) * elapsed.as_secs_f64();
    let margin = (n as u32 * BURST.div_ceil(10)) as f64 + 1.0;
    assert!(
        (admitted as f64 - expected).abs() <= margin,
        "{what}: {admitted} admitted in {elapsed:?}, the bound is {expected:.1} ± {margin}"
    );
}

#[tokio::test]
#[ignore = "needs PostgreSQL: scripts/test runs it"]
async fn one_budget_however_the_requests_are_spread_over_one_two_or_three_instances() {
    let _ = postgres_admin_url().expect("STOREFRONT_TEST_POSTGRES");
    for n in 1..=3 {
        for spread in [Spread::Evenly, Spread::ThroughOne] {
            let dir = tempfile::tempdir().unwrap();
            let url = fresh_database_url(dir.path()).await;
            let apps = instances(&url, n).await;
            let key = apps[0].key.clone();
            let (admitted, refused, elapsed) = flood(&apps, &key, spread, Duration::from_millis(1500)).await;
            assert!(
                refused > admitted,
                "{n} instances, {spread:?}: the flood was refused mostly ({refused})"
            );
            assert_within_bound(admitted, elapsed, n, &format!("{n} instances, {spread:?}"));
            // The answers' headers describe the shared budget, all but spent (an instance may
            // still hold a unit it took).
            for app in &apps {
                let answer = app.post_as(LIST, &key, &json!({})).await;
                assert_eq!(answer.headers["ratelimit-policy"], "\"merchant\";q=20;w=1");
                let state = answer.headers["ratelimit"].to_str().unwrap();
                let left: u32 = state
                    .split(";r=")
                    .nth(1)
                    .unwrap()
                    .split(';')
                    .next()
                    .unwrap()
                    .parse()
                    .unwrap();
                assert!(left <= BURST.div_ceil(10), "{n} instances, {spread:?}: {state}");
                if answer.status == 429 {
                    assert!(answer.headers.contains_key("retry-after"));
                }
            }
        }
    }
}

/// A session of its own on `url` holding the budgets' table locked until it rolls back.
async fn lock_budgets(url: &str) -> tokio_postgres::Client {
    let (locker, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(connection);
    locker
        .batch_execute("BEGIN; LOCK TABLE rate_budgets IN ACCESS EXCLUSIVE MODE")
        .await
        .unwrap();
    locker
}

#[tokio::test]
#[ignore = "needs PostgreSQL: scripts/test runs it"]
async fn while_the_shared_budget_cannot_be_reached_each_instance_limits_on_its_share_and_the_bound_holds_once_back() {
    let cluster = Cluster::new();
    let apps = instances(&cluster.url(), 2).await;
    let key = apps[0].key.clone();

    // The budgets' table locked by another session: every take waits, the database answers the
    // rest (keys, categories). Each instance limits on its share, half the budget.
    let lock = lock_budgets(&cluster.url()).await;
    let (admitted, refused, elapsed) = flood(&apps, &key, Spread::Evenly, Duration::from_millis(2000)).await;
    assert!(admitted > 0, "limiting, not refusing everything");
    assert!(refused > admitted, "never unlimited while the budget cannot be reached");
    // Two shares of half the budget: within the bound, with a margin of a burst more (what each
    // had of its share and of the shared budget when the table was locked).
    let expected = f64::from(BURST) + f64::from(RATE) * elapsed.as_secs_f64();
    assert!(
        (admitted as f64) <= expected + f64::from(BURST),
        "{admitted} admitted in {elapsed:?} while the budget could not be reached"
    );
    lock.batch_execute("ROLLBACK").await.unwrap();

    // A whole outage: nothing is served (keys are checked in the database), then it comes back.
    cluster.stop();
    let down = apps[1].post_as(LIST, &key, &json!({})).await;
    assert_error(&down, 500, "ERROR_TYPE_INTERNAL", "INTERNAL");
    cluster.start();
    let deadline = Instant::now() + Duration::from_secs(15);
    for app in &apps {
        while read(app.request(reqwest::Method::GET, "/readyz")).await.status != 200 {
            assert!(Instant::now() < deadline, "not ready again within 15 s");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
    // Quiet for longer than burst ÷ rate (and the failed ledger's pause), then the shared bound.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let (admitted, _, elapsed) = flood(&apps, &key, Spread::Evenly, Duration::from_millis(1500)).await;
    assert_within_bound(admitted, elapsed, 2, "once the database is back");
}

#[tokio::test]
#[ignore = "needs PostgreSQL: scripts/test runs it"]
async fn a_locked_budget_table_delays_no_request_past_the_take_bound_and_the_policy_stays_the_budget_s() {
    let cluster = Cluster::new();
    let apps = instances(&cluster.url(), 1).await;
    let app = &apps[0];
    let policy = "\"merchant\";q=20;w=1";
    // In rounds (issue 45: a request once waited 29.98 s here, in one run of many): each round
    // the instance holds units of the merchant's budget, then the table is locked by another
    // session and the merchant goes quiet, so that the instance's upkeep tries to give the units
    // back; then every request is answered within the take's bound (250 ms) and a little, on the
    // instance's share, under the same policy.
    for round in 0..3 {
        let first = app.post(LIST, &json!({})).await;
        assert!(
            first.status == 200 || first.status == 429,
            "round {round}: {}",
            first.status
        );
        assert_eq!(first.headers["ratelimit-policy"], policy);
        let lock = lock_budgets(&cluster.url()).await;
        tokio::time::sleep(Duration::from_millis(1500)).await;
        let (mut admitted, mut refused) = (0, 0);
        for _ in 0..40 {
            let started = Instant::now();
            let answer = app.post(LIST, &json!({})).await;
            let took = started.elapsed();
            assert!(
                took < Duration::from_secs(1),
                "round {round}: answered after {took:?} with the budget table locked"
            );
            assert_eq!(answer.headers["ratelimit-policy"], policy, "{}", answer.status);
            match answer.status.as_u16() {
                200 => admitted += 1,
                429 => refused += 1,
                other => panic!("{other}: {:#}", answer.body),
            }
        }
        assert!(
            admitted > 0 && refused > 0,
            "round {round}: limited on the share: {admitted} admitted, {refused} refused"
        );
        lock.batch_execute("ROLLBACK").await.unwrap();
        // Quiet for longer than burst ÷ rate and the failed ledger's pause: the next round starts
        // with the budget reachable and full.
        tokio::time::sleep(Duration::from_millis(2500)).await;
    }
}

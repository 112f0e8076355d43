//! PostgreSQL: requests beside a lock held outside the service (on a merchant's advisory lock or on
//! the locations table): what waits, what is still answered, and what a page waiting there keeps.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::helpers::*;
use crate::postgres::{admin_url, list};

/// Writers hold at most half of the pool (`--pg-pool-size`): with every writing merchant stuck
/// behind a lock held outside the service, a read still finds a connection and is answered while
/// the writes wait. With writers free to take the whole pool, the read would wait behind them.
#[tokio::test]
#[ignore = "needs PostgreSQL: scripts/test runs it"]
async fn a_read_is_never_starved_by_writers() {
    let (app, url) = two_connections().await;
    let keys = [app.merchant_key("a").await, app.merchant_key("b").await];
    // Each merchant's writes take its advisory lock (one key: its pk); hold both from outside.
    let holder = holding(&url, "SELECT pg_advisory_lock(pk) FROM merchants").await;
    let writes: Vec<_> = keys
        .iter()
        .enumerate()
        .map(|(i, key)| {
            let (base, key) = (app.base.clone(), key.clone());
            tokio::spawn(async move {
                read(
                    reqwest::Client::new()
                        .post(format!("{base}/v1/location/create"))
                        .bearer_auth(key)
                        .json(&json!({ "locations": [warehouse(i as u32)] })),
                )
                .await
            })
        })
        .collect();
    // One write's group waits on its lock inside a transaction, holding a connection.
    await_lock_waits(&holder, 1, "no write reached its merchant's lock").await;
    // Time for the other merchant's group to take whatever it may take.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let listed = app.list_locations(&json!({})).await;
    assert_eq!(listed.status, 200, "{:?}", listed.body);
    assert!(
        writes.iter().all(|w| !w.is_finished()),
        "the writes were still waiting on their locks when the read was answered"
    );
    holder.batch_execute("SELECT pg_advisory_unlock_all()").await.unwrap();
    for write in writes {
        let answer = write.await.unwrap();
        assert_eq!(answer.status, 200, "{:?}", answer.body);
        assert_eq!(answer.body["locations"][0]["status"], "ACTIVE");
    }
}

/// A read that waits the pool's whole 5 s for a connection is told the database is busy: the
/// catalogue's 500 `INTERNAL` (nothing was done), with `Retry-After`, and counted apart from
/// failures (`database_busy_total`). Two reads hold the pool's two connections behind a lock taken
/// outside the service (on the table and its counts, which an empty list reads alone); the third
/// finds none.
#[tokio::test]
#[ignore = "needs PostgreSQL: scripts/test runs it"]
async fn a_read_that_finds_no_connection_in_time_is_told_the_database_is_busy() {
    let (app, url) = two_connections().await;
    let key = app.merchant_key("busy").await;
    assert_eq!(app.list_locations(&json!({})).await.status, 200);
    let holder = holding(
        &url,
        "BEGIN; LOCK TABLE locations, location_counts IN ACCESS EXCLUSIVE MODE",
    )
    .await;
    let list = |base: String, key: String| async move {
        read(
            reqwest::Client::new()
                .post(format!("{base}/v1/location/list"))
                .bearer_auth(key)
                .json(&json!({})),
        )
        .await
    };
    let held: Vec<_> = (0..2)
        .map(|_| tokio::spawn(list(app.base.clone(), key.clone())))
        .collect();
    await_lock_waits(&holder, 2, "the two reads never reached the lock").await;
    let busy = list(app.base.clone(), key.clone()).await;
    assert_eq!(busy.status, 500, "{:?}", busy.body);
    assert_eq!(busy.body["error_type"], "ERROR_TYPE_INTERNAL");
    assert_eq!(busy.body["code"], "INTERNAL");
    assert!(
        busy.body["message"].as_str().unwrap().contains("busy"),
        "{:?}",
        busy.body
    );
    assert!(busy.body["details"]["request_id"].is_string(), "{:?}", busy.body);
    assert_eq!(busy.headers["retry-after"], "1");
    let metrics = metrics_text(&app.base).await;
    let counted = metrics
        .lines()
        .find_map(|l| l.strip_prefix("database_busy_total "))
        .map(|v| v.parse::<f64>().unwrap());
    assert!(counted.is_some_and(|n| n >= 1.0), "{metrics}");
    holder.batch_execute("COMMIT").await.unwrap();
    for read in held {
        assert_eq!(read.await.unwrap().status, 200);
    }
}

/// The service's own upkeep never holds a request's connection while it waits: with a lock on
/// the locations table held outside the service, its look at the table's size waits on a session
/// of its own, and of the pool's two connections one waits with a list behind the lock while the
/// other still answers the categories at once (not the busy 500 after the pool's 5 s).
#[tokio::test]
#[ignore = "needs PostgreSQL: scripts/test runs it"]
async fn upkeep_waiting_on_a_lock_leaves_the_requests_their_connections() {
    let (app, url) = two_connections().await;
    let (key, holder) = a_location_and_its_table_locked(&app, &url, "upkeep").await;
    await_sessions_waiting(
        &holder,
        "storefront-statistics",
        1,
        "the statistics' look never reached the lock",
    )
    .await;
    let held = list_behind(&app, &key);
    await_lock_waits(&holder, 1, "the list never reached the lock").await;
    let categories = list(&app.base, &key, &json!({})).await;
    assert_eq!(categories.status, 200, "{:?}", categories.body);
    holder.batch_execute("COMMIT").await.unwrap();
    let listed = held.await.unwrap();
    assert_eq!(listed.status, 200, "{:?}", listed.body);
}

/// A location page is one snapshot even on connections that have not yet prepared its statements:
/// with the page's statement held behind a lock on the locations table, after its total was read,
/// a location inserted meanwhile is in neither its total nor its page.
#[tokio::test]
#[ignore = "needs PostgreSQL: scripts/test runs it"]
async fn a_page_prepared_behind_a_lock_keeps_its_snapshot() {
    let (_app, _key, holder, listed) = a_page_waiting_behind_a_lock("snapshot").await;
    holder
        .batch_execute(
            "INSERT INTO locations (location_id, merchant_pk, status, types, latitude, longitude, body, \
             created_at, updated_at, cell, flags, hours) SELECT location_id || 'x', merchant_pk, status, types, \
             latitude, longitude, body, created_at, updated_at, cell, flags, hours FROM locations; COMMIT",
        )
        .await
        .unwrap();
    let stored: i64 = holder
        .query_one("SELECT count(*) FROM locations", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(stored, 2, "the second location was not inserted");
    let page = listed.await.unwrap();
    assert_eq!(page.status, 200, "{:?}", page.body);
    assert_eq!(page.body["pagination"]["total"], 1, "{:?}", page.body);
    let locations = page.body["locations"].as_array().unwrap();
    assert_eq!(
        locations.len(),
        1,
        "the page saw a later state than its total: {:?}",
        page.body
    );
}

/// A client that hangs up while its page waits costs no connection: the page's snapshot is rolled
/// back and its connection, the same session, serves again.
#[tokio::test]
#[ignore = "needs PostgreSQL: scripts/test runs it"]
async fn a_page_given_up_by_its_client_keeps_its_connection() {
    let (app, key, holder, given_up) = a_page_waiting_behind_a_lock("hangs up").await;
    let waiting: i32 = holder
        .query_one(
            "SELECT pid FROM pg_stat_activity WHERE application_name = 'storefront' \
             AND wait_event_type = 'Lock' AND datname = current_database()",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    given_up.abort();
    assert!(given_up.await.unwrap_err().is_cancelled());
    // The server sees the connection closed and drops the request before the lock is released.
    tokio::time::sleep(Duration::from_millis(300)).await;
    holder.batch_execute("COMMIT").await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let state: Option<String> = holder
            .query_opt("SELECT state FROM pg_stat_activity WHERE pid = $1", &[&waiting])
            .await
            .unwrap()
            .map(|r| r.get(0));
        match state.as_deref() {
            Some("idle") => break,
            None => panic!("the connection of the page given up was closed"),
            Some(_) => assert!(Instant::now() < deadline, "the page given up was never rolled back"),
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let page = app.post_as("/v1/location/list", &key, &json!({})).await;
    assert_eq!(page.status, 200, "{:?}", page.body);
    assert_eq!(page.body["pagination"]["total"], 1, "{:?}", page.body);
}

/// A new merchant's key, the merchant with one location (so that its list reads the locations
/// table: an empty merchant's is answered from its counts alone), and a session of the test's own
/// holding the locations table locked.
async fn a_location_and_its_table_locked(app: &TestApp, url: &str, name: &str) -> (String, tokio_postgres::Client) {
    let key = app.merchant_key(name).await;
    assert_eq!(app.create_as(&key, vec![warehouse(1)]).await[0]["status"], "ACTIVE");
    let holder = holding(url, "BEGIN; LOCK TABLE locations IN ACCESS EXCLUSIVE MODE").await;
    (key, holder)
}

/// A server of two connections, a merchant's key, a session of the test's own holding the locations
/// table locked, and the merchant's first location page waiting behind the lock.
async fn a_page_waiting_behind_a_lock(
    name: &str,
) -> (TestApp, String, tokio_postgres::Client, tokio::task::JoinHandle<Answer>) {
    let (app, url) = two_connections().await;
    let (key, holder) = a_location_and_its_table_locked(&app, &url, name).await;
    let page = list_behind(&app, &key);
    await_lock_waits(&holder, 1, "the page never reached the lock").await;
    (app, key, holder, page)
}

/// The merchant's first location page, asked on a task of its own (it may wait behind a lock).
fn list_behind(app: &TestApp, key: &str) -> tokio::task::JoinHandle<Answer> {
    tokio::spawn(read(
        reqwest::Client::new()
            .post(format!("{}/v1/location/list", app.base))
            .bearer_auth(key)
            .json(&json!({})),
    ))
}

/// A session of the test's own on `url` that has run `sql` (the locks it takes are held until
/// it ends them, or is dropped).
async fn holding(url: &str, sql: &str) -> tokio_postgres::Client {
    let (holder, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(connection);
    holder.batch_execute(sql).await.unwrap();
    holder
}

/// Waits (10 s at most) until `n` of the service's sessions wait on a lock, asking on `holder`.
async fn await_lock_waits(holder: &tokio_postgres::Client, n: i64, what: &str) {
    await_sessions_waiting(holder, "storefront", n, what).await;
}

/// Waits (10 s at most) until `n` sessions named `name` of `holder`'s database (not another
/// test's) wait on a lock, asking on `holder`.
async fn await_sessions_waiting(holder: &tokio_postgres::Client, name: &str, n: i64, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let waiting: i64 = holder
            .query_one(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock' \
                 AND datname = current_database()",
                &[&name],
            )
            .await
            .unwrap()
            .get(0);
        if waiting >= n {
            return;
        }
        assert!(Instant::now() < deadline, "{what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A server on a fresh database whose pool has two connections, and the database's URL.
async fn two_connections() -> (TestApp, String) {
    use storefront::store::{self, DatabaseUrl, Pools, ReadReplicas};
    let _ = admin_url();
    let dir = tempfile::tempdir().unwrap();
    let url = fresh_database_url(dir.path()).await;
    let pools = Pools {
        readers: 4,
        pg_connections: 2,
    };
    let store = store::open_with(&DatabaseUrl::parse(&url).unwrap(), &ReadReplicas::default(), pools)
        .await
        .unwrap();
    (TestApp::spawn_with(store, dir).await, url)
}

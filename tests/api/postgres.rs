//! What only PostgreSQL promises (CONTRACT §8): several instances on one database, and recovery
//! when the database comes back. Ignored on the SQLite pass; `scripts/test` runs them against the
//! PostgreSQL server it starts.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::helpers::*;

fn admin_url() -> String {
    postgres_admin_url().expect("set STOREFRONT_TEST_POSTGRES to a PostgreSQL admin URL (scripts/test does)")
}

async fn list(base: &str, key: &str, body: &Value) -> Answer {
    read(
        reqwest::Client::new()
            .post(format!("{base}/v1/categories/list"))
            .bearer_auth(key)
            .json(body),
    )
    .await
}

/// `storefront categories import -` with `categories` on standard input.
fn import(url: &str, categories: &Value) {
    use std::io::Write;
    let mut child = storefront_at(url)
        .args(["categories", "import", "-"])
        .stdin(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(categories.to_string().as_bytes())
        .unwrap();
    assert!(child.wait().unwrap().success());
}

async fn count_rows(url: &str, merchant_location_id: &str) -> i64 {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(connection);
    client
        .query_one(
            "SELECT count(*) FROM locations WHERE merchant_location_id = $1",
            &[&merchant_location_id],
        )
        .await
        .unwrap()
        .get(0)
}

#[tokio::test]
#[ignore = "needs PostgreSQL: scripts/test runs it"]
async fn two_instances_share_one_database() {
    let _ = admin_url();
    let dir = tempfile::tempdir().unwrap();
    let url = fresh_database_url(dir.path()).await;
    let key = merchant_create_at(&url, "shared")["api_key"]
        .as_str()
        .unwrap()
        .to_owned();
    let categories: Vec<Value> = (0..10)
        .map(|i| json!({"id": format!("c{i}"), "name": format!("C{i}"), "slug": format!("c{i}"), "leaf": true, "sort_order": i, "status": "active"}))
        .collect();
    import(&url, &Value::Array(categories));

    let a = Server::start_at(&url);
    let b = Server::start_at(&url);

    // A cursor issued by one instance is accepted by the other.
    let first = list(&a.base, &key, &json!({"pagination": {"limit": 4}})).await;
    assert_eq!(first.status, 200, "{:#}", first.body);
    let cursor = first.body["pagination"]["next_cursor"].clone();
    let next = list(&b.base, &key, &json!({"pagination": {"limit": 4, "cursor": cursor}})).await;
    assert_eq!(next.status, 200, "{:#}", next.body);
    assert_eq!(next.body["categories"][0]["id"], "c4");

    // A safe retry on the second instance returns the id created on the first.
    let created = create(&a.base, &key, &[warehouse(1)]).await;
    let retried = create(&b.base, &key, &[warehouse(1)]).await;
    assert_eq!(created[0]["status"], "ACTIVE");
    assert_eq!(retried[0]["location_id"], created[0]["location_id"]);

    // Concurrent creates of one merchant_location_id through both: exactly one location.
    let same = with(warehouse(2), "/merchant_location_id", Some(json!("raced")));
    let other = with(
        with(warehouse(2), "/merchant_location_id", Some(json!("raced"))),
        "/name",
        Some(json!("Other")),
    );
    let requests = (0..16).map(|i| {
        let base = if i % 2 == 0 { a.base.clone() } else { b.base.clone() };
        let item = if i % 4 == 3 { other.clone() } else { same.clone() };
        let key = key.clone();
        tokio::spawn(async move { create(&base, &key, &[item]).await })
    });
    let mut ids = std::collections::HashSet::new();
    let mut created_or_retried = 0;
    for answer in futures_util::future::join_all(requests).await {
        let result = answer.unwrap().remove(0);
        match result["status"].as_str().unwrap() {
            "ACTIVE" | "QUARANTINE" => {
                created_or_retried += 1;
                ids.insert(result["location_id"].as_str().unwrap().to_owned());
            }
            "FAILED" => assert_eq!(result["errors"][0]["code"], "CONFLICT", "{result:#}"),
            other => panic!("unexpected status {other}"),
        }
    }
    assert!(created_or_retried > 0);
    assert_eq!(ids.len(), 1, "every success names the one stored location");
    assert_eq!(count_rows(&url, "raced").await, 1);

    // An import is seen by both within 5 seconds.
    let more = json!([{"id": "new", "name": "New", "slug": "new", "leaf": true, "sort_order": -1, "status": "active"}]);
    import(&url, &more);
    let imported = Instant::now();
    for server in [&a, &b] {
        loop {
            let page = list(&server.base, &key, &json!({"pagination": {"limit": 1}})).await;
            if page.body["categories"][0]["id"] == "new" {
                break;
            }
            assert!(
                imported.elapsed() < Duration::from_secs(5),
                "an instance did not see the import within 5 s"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

#[tokio::test]
#[ignore = "needs PostgreSQL: scripts/test runs it"]
async fn a_database_outage_is_a_500_and_the_service_recovers_without_restart() {
    let cluster = Cluster::new();
    let store = open_store(&cluster.url()).await;
    let app = TestApp::spawn_with(store, tempfile::tempdir().unwrap()).await;
    assert_eq!(app.create(vec![warehouse(1)]).await[0]["status"], "ACTIVE");

    cluster.stop();
    let answer = app
        .post("/v1/location/create", &json!({"locations": [warehouse(2)]}))
        .await;
    let details = assert_error(&answer, 500, "ERROR_TYPE_INTERNAL", "INTERNAL");
    assert!(details["request_id"].is_string());
    let ready = read(app.request(reqwest::Method::GET, "/readyz")).await;
    assert_eq!(ready.status, 503);
    assert_eq!(read(app.request(reqwest::Method::GET, "/healthz")).await.status, 200);

    cluster.start();
    let deadline = Instant::now() + Duration::from_secs(15);
    while read(app.request(reqwest::Method::GET, "/readyz")).await.status != 200 {
        assert!(Instant::now() < deadline, "not ready again within 15 s");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // Nothing of the failed request was stored: warehouse(2) is new now, and warehouse(1) a retry.
    let results = app.create(vec![warehouse(1), warehouse(2)]).await;
    assert_eq!(results[0]["status"], "ACTIVE");
    assert_eq!(count_rows(&cluster.url(), "wh-2").await, 1);
    let retry = app.create(vec![warehouse(2)]).await;
    assert_eq!(retry[0]["location_id"], results[1]["location_id"]);
}

#[tokio::test]
#[ignore = "needs PostgreSQL: scripts/test runs it"]
async fn two_instances_changing_one_location_never_lose_an_update() {
    let _ = admin_url();
    let dir = tempfile::tempdir().unwrap();
    let url = fresh_database_url(dir.path()).await;
    let key = merchant_create_at(&url, "racing")["api_key"]
        .as_str()
        .unwrap()
        .to_owned();
    let a = Server::start_at(&url);
    let b = Server::start_at(&url);
    create(&a.base, &key, &[warehouse(1)]).await;
    let update = |i: usize, expected: Option<i64>| {
        let base = if i.is_multiple_of(2) {
            a.base.clone()
        } else {
            b.base.clone()
        };
        let mut item = with(warehouse(1), "/name", Some(json!(format!("Name {i}"))));
        item["comment"] = json!(format!("Comment {i}"));
        if let Some(v) = expected {
            item["expected_version"] = json!(v);
        }
        let key = key.clone();
        tokio::spawn(async move {
            let answer = read(
                reqwest::Client::new()
                    .post(format!("{base}/v1/location/update"))
                    .bearer_auth(key)
                    .json(&json!({ "locations": [item] })),
            )
            .await;
            assert_eq!(answer.status, 200, "{:#}", answer.body);
            answer.body["locations"][0].clone()
        })
    };
    // With expected_version: exactly one of the racing changes wins, the others get CONFLICT.
    let results = futures_util::future::join_all((0..16).map(|i| update(i, Some(1)))).await;
    let mut winners = 0;
    for result in results {
        let result = result.unwrap();
        match result["status"].as_str().unwrap() {
            "ACTIVE" => {
                winners += 1;
                assert_eq!(result["version"], 2);
            }
            _ => assert_eq!(
                field_codes(&result),
                [("locations[0].expected_version".to_owned(), "CONFLICT".to_owned())]
            ),
        }
    }
    assert_eq!(winners, 1);
    // Without it: every change applies, one after another, each whole (no mixed record).
    let results = futures_util::future::join_all((100..116).map(|i| update(i, None))).await;
    let mut versions: Vec<i64> = results
        .into_iter()
        .map(|r| r.unwrap()["version"].as_i64().unwrap())
        .collect();
    versions.sort_unstable();
    assert_eq!(versions, (3..19).collect::<Vec<_>>(), "one version each");
    let page = read(
        reqwest::Client::new()
            .post(format!("{}/v1/location/list", a.base))
            .bearer_auth(&key)
            .json(&json!({})),
    )
    .await;
    let record = &page.body["locations"][0];
    assert_eq!(record["version"], 18);
    let n = record["name"].as_str().unwrap().strip_prefix("Name ").unwrap();
    assert_eq!(record["comment"], format!("Comment {n}"), "the last commit wins whole");
}

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
    let key = app.merchant_key("upkeep").await;
    // A location of its own, so that the merchant's list reads the locations table (an empty
    // merchant's is answered from its counts alone).
    assert_eq!(app.create_as(&key, vec![warehouse(1)]).await[0]["status"], "ACTIVE");
    let holder = holding(&url, "BEGIN; LOCK TABLE locations IN ACCESS EXCLUSIVE MODE").await;
    await_sessions_waiting(
        &holder,
        "storefront-statistics",
        1,
        "the statistics' look never reached the lock",
    )
    .await;
    let held = tokio::spawn(read(
        reqwest::Client::new()
            .post(format!("{}/v1/location/list", app.base))
            .bearer_auth(key.clone())
            .json(&json!({})),
    ));
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
    let (app, url) = two_connections().await;
    let key = app.merchant_key("snapshot").await;
    assert_eq!(app.create_as(&key, vec![warehouse(1)]).await[0]["status"], "ACTIVE");
    let holder = holding(&url, "BEGIN; LOCK TABLE locations IN ACCESS EXCLUSIVE MODE").await;
    let listed = tokio::spawn(read(
        reqwest::Client::new()
            .post(format!("{}/v1/location/list", app.base))
            .bearer_auth(key.clone())
            .json(&json!({})),
    ));
    await_lock_waits(&holder, 1, "the page never reached the lock").await;
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
    let (app, url) = two_connections().await;
    let key = app.merchant_key("hangs up").await;
    assert_eq!(app.create_as(&key, vec![warehouse(1)]).await[0]["status"], "ACTIVE");
    let holder = holding(&url, "BEGIN; LOCK TABLE locations IN ACCESS EXCLUSIVE MODE").await;
    let given_up = tokio::spawn(read(
        reqwest::Client::new()
            .post(format!("{}/v1/location/list", app.base))
            .bearer_auth(key.clone())
            .json(&json!({})),
    ));
    await_lock_waits(&holder, 1, "the page never reached the lock").await;
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

#[tokio::test]
#[ignore = "needs PostgreSQL: scripts/test runs it"]
async fn a_new_database_s_locations_get_statistics_once_they_are_a_thousand() {
    let _ = admin_url();
    let dir = tempfile::tempdir().unwrap();
    let url = fresh_database_url(dir.path()).await;
    let key = merchant_create_at(&url, "first-statistics")["api_key"]
        .as_str()
        .unwrap()
        .to_owned();
    let server = Server::start_at(&url);
    let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(connection);
    // Statistics of the service's own taking are those of a plain ANALYZE, not autovacuum's.
    let analyzed = || async {
        client
            .query_one(
                "SELECT last_analyze IS NOT NULL FROM pg_stat_user_tables WHERE relname = 'locations'",
                &[],
            )
            .await
            .unwrap()
            .get::<_, bool>(0)
    };
    create(&server.base, &key, &(1..=10).map(warehouse).collect::<Vec<_>>()).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(!analyzed().await, "ten rows are not worth statistics");
    for batch in 0..5u32 {
        let items: Vec<Value> = (1..=200).map(|n| warehouse(1000 + batch * 200 + n)).collect();
        let answers = create(&server.base, &key, &items).await;
        assert!(answers.iter().all(|a| a["status"] == "ACTIVE"), "{answers:#?}");
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    while !analyzed().await {
        assert!(
            Instant::now() < deadline,
            "a thousand locations and still no statistics"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
#[ignore = "needs PostgreSQL: scripts/test runs it"]
async fn a_broken_notice_connection_is_logged_with_the_database_s_reason() {
    let _ = admin_url();
    let dir = tempfile::tempdir().unwrap();
    let url = fresh_database_url(dir.path()).await;
    let log_path = dir.path().join("stderr.log");
    let mut child = serve_logging_to(storefront_at(&url), &log_path);
    wait_in_log(&log_path, |text| {
        text.contains("storefront is listening on ").then_some(())
    });
    let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(connection);
    // The connection that follows the other instances' writes, ended as an operator would end it.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let ended: i64 = client
            .query_one(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity \
                 WHERE application_name = 'storefront-events' AND datname = current_database()",
                &[],
            )
            .await
            .unwrap()
            .get(0);
        if ended > 0 {
            break;
        }
        assert!(Instant::now() < deadline, "no notice connection");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let line = wait_in_log(&log_path, |text| {
        text.lines()
            .find(|l| l.contains("notice connection"))
            .map(str::to_owned)
    });
    let _ = child.kill();
    let _ = child.wait();
    let line: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(line["level"], "WARN", "{line}");
    let error = line["error"].as_str().unwrap_or_default();
    assert!(
        error.contains("terminating connection due to administrator command"),
        "{line}"
    );
}

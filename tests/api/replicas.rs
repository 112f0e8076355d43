//! Buyers' reads on replicas (CONTRACT §19), on real streaming replication: a private primary and
//! a hot standby of it (`pg_basebackup -R`) per test, the real binary started with
//! `--read-replica`, and its `/metrics` saying where each search was read.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::helpers::*;

/// The bound the tests run with: short, so the wait for it is, and long beside what a test does
/// between pausing replay and searching.
const MAX_LAG: &str = "3s";
const MAX_LAG_S: f64 = 3.0;

/// A primary, its standby, and an instance reading buyers' searches on the standby.
struct Replicated {
    /// Runs for as long as the test.
    _primary: Cluster,
    standby: Cluster,
    server: Server,
    key: String,
    storefront_key: String,
}

impl Replicated {
    /// Searches on the database, where the replicas serve storefront keys' searches whole.
    async fn start() -> Replicated {
        Replicated::start_with(&["--search-memory", "0"]).await
    }

    async fn start_with(flags: &[&str]) -> Replicated {
        let primary = Cluster::new();
        let standby = primary.standby();
        let issued = merchant_create_at(&primary.url(), "replicated");
        let out = storefront_at(&primary.url())
            .args(["key", "issue", "--scope", "storefront", "--json", "--merchant"])
            .arg(issued["merchant_id"].as_str().unwrap())
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let storefront: Value = serde_json::from_slice(&out.stdout).unwrap();
        let server = Server::start_binary_with(
            std::path::Path::new(BIN),
            &primary.url(),
            &[&["--read-replica", &standby.url(), "--replica-max-lag", MAX_LAG], flags].concat(),
        );
        let replicated = Replicated {
            _primary: primary,
            standby,
            server,
            key: issued["api_key"].as_str().unwrap().to_owned(),
            storefront_key: storefront["api_key"].as_str().unwrap().to_owned(),
        };
        replicated.await_lag(|lag| lag == 0.0, "the replica 0 behind").await;
        replicated
    }

    async fn metrics(&self) -> String {
        metrics_text(&self.server.base).await
    }

    /// The value of the metric line starting `name{labels} `, if there is one.
    async fn metric(&self, series: &str) -> Option<f64> {
        metric_in(&self.metrics().await, series)
    }

    /// Searches read on the primary and on the replica so far.
    async fn reads(&self) -> (f64, f64) {
        let primary = self.metric(r#"db_reads_total{target="primary"}"#).await.unwrap_or(0.0);
        let replica = self.metric(r#"db_reads_total{target="replica"}"#).await.unwrap_or(0.0);
        (primary, replica)
    }

    async fn lag(&self) -> Option<f64> {
        self.metric(r#"replica_lag_seconds{replica="0"}"#).await
    }

    /// Pauses the standby's replay, and waits until it is paused.
    async fn pause_replay(&self) {
        self.standby.execute("SELECT pg_wal_replay_pause()").await;
        let deadline = Instant::now() + Duration::from_secs(10);
        while self.standby.execute("SELECT pg_get_wal_replay_pause_state()").await[0].get::<_, String>(0) != "paused" {
            assert!(Instant::now() < deadline, "replay did not pause");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Waits (20 s at most) until the replica's lag passes `test`.
    async fn await_lag(&self, test: impl Fn(f64) -> bool, what: &str) {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if self.lag().await.is_some_and(&test) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "not {what} within 20 s: {:?}",
                self.lag().await
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// A search around `near` with `key`; answered 200 within 2 s, whatever the replica does.
    async fn search(&self, key: &str, near: (f64, f64), pagination: Value) -> Value {
        let started = Instant::now();
        let answer = read(
            reqwest::Client::new()
                .post(format!("{}/v1/location/search", self.server.base))
                .bearer_auth(key)
                .json(&json!({
                    "near": {"latitude": near.0, "longitude": near.1},
                    "pagination": pagination,
                })),
        )
        .await;
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "a search took {:?}",
            started.elapsed()
        );
        assert_eq!(answer.status, 200, "{:#}", answer.body);
        answer.body
    }

    /// The `merchant_location_id`s a storefront search around `near` finds.
    async fn found(&self, key: &str, near: (f64, f64)) -> Vec<String> {
        let body = self.search(key, near, json!({"limit": 100})).await;
        result_ids(&body)
    }
}

/// A pickup point where `warehouse(n)` stands, named as it (`wh-n`): a storefront key's search
/// finds nothing else (CONTRACT §22).
fn point(n: u32) -> Value {
    let w = warehouse(n);
    let p = with(pickup_point(n), "/latitude", Some(w["latitude"].clone()));
    let p = with(p, "/longitude", Some(w["longitude"].clone()));
    with(p, "/merchant_location_id", Some(w["merchant_location_id"].clone()))
}

fn near_of(item: &Value) -> (f64, f64) {
    (item["latitude"].as_f64().unwrap(), item["longitude"].as_f64().unwrap())
}

#[tokio::test]
#[ignore = "needs PostgreSQL: scripts/test runs it"]
async fn a_storefront_search_reads_the_replica_and_the_primary_once_the_replica_is_too_far_behind() {
    let r = Replicated::start().await;
    let first = point(1);
    let near = near_of(&first);
    create(&r.server.base, &r.key, &[first]).await;
    // Streamed to the replica and read there.
    let deadline = Instant::now() + Duration::from_secs(10);
    while r.found(&r.storefront_key, near).await != ["wh-1"] {
        assert!(Instant::now() < deadline, "wh-1 never reached the replica");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (on_primary, on_replica) = r.reads().await;
    assert!(on_replica >= 1.0, "read on the replica");
    assert_eq!(on_primary, 0.0, "nothing read on the primary yet");

    r.pause_replay().await;
    let second = with(point(2), "/latitude", Some(json!(near.0 + 0.001)));
    create(&r.server.base, &r.key, &[second]).await;
    let created = Instant::now();
    // At once: the storefront search reads the paused replica (well within the bound), a full
    // key reads the primary.
    assert_eq!(
        r.found(&r.storefront_key, near).await,
        ["wh-1"],
        "read on the paused replica"
    );
    assert_eq!(r.reads().await, (on_primary, on_replica + 1.0));
    assert_eq!(
        r.found(&r.key, near).await,
        ["wh-1", "wh-2"],
        "a full key reads the primary"
    );
    assert_eq!(r.reads().await, (on_primary + 1.0, on_replica + 1.0));

    // Once the replica is past the bound, the storefront search is read on the primary: within
    // the bound and a second of the create (CONTRACT §19), here given 3 s more of slack.
    loop {
        let found = r.found(&r.storefront_key, near).await;
        if found == ["wh-1", "wh-2"] {
            break;
        }
        assert_eq!(found, ["wh-1"]);
        assert!(
            created.elapsed() < Duration::from_secs_f64(MAX_LAG_S + 1.0 + 3.0),
            "wh-2 not found {:?} after it was stored",
            created.elapsed()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (p, q) = r.reads().await;
    let behind = r.lag().await.unwrap();
    assert!(behind > MAX_LAG_S, "the replica is {behind} s behind");
    assert_eq!(r.found(&r.storefront_key, near).await, ["wh-1", "wh-2"]);
    assert_eq!(
        r.reads().await,
        (p + 1.0, q),
        "read on the primary while the replica is behind"
    );

    r.standby.execute("SELECT pg_wal_replay_resume()").await;
    r.await_lag(|lag| lag == 0.0, "caught up").await;
    let (p, q) = r.reads().await;
    assert_eq!(r.found(&r.storefront_key, near).await, ["wh-1", "wh-2"]);
    assert_eq!(r.reads().await, (p, q + 1.0), "read on the replica again");
}

/// With the merchant's index in memory, a storefront key's search reads nothing while the index is
/// known current and its page's records are kept, and otherwise reads them (and where the log
/// stands) on the replica; a replica that has not replayed what the index holds is passed over for
/// the primary, so a search from memory never answers older than its index.
#[tokio::test]
#[ignore = "needs PostgreSQL: scripts/test runs it"]
async fn searches_from_memory_read_their_records_on_the_replica_unless_it_is_behind_the_index() {
    let r = Replicated::start_with(&[]).await;
    let first = point(1);
    let near = near_of(&first);
    create(&r.server.base, &r.key, &[first]).await;
    let from_memory = || r.metric(r#"searches_total{served="memory"}"#);
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let found = r.found(&r.storefront_key, near).await;
        if found == ["wh-1"] && from_memory().await.unwrap_or(0.0) >= 1.0 {
            break;
        }
        assert!(Instant::now() < deadline, "no search of wh-1 from memory: {found:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Nothing read: no write since the index was found current, its record kept. (A search that
    // comes more than a moment after the index was found current, on a loaded machine, reads once
    // and vouches for it again: one of a few searches in a row reads nothing.)
    let served = from_memory().await.unwrap();
    let (mut searches, mut quiet) = (0.0, false);
    while !quiet && searches < 5.0 {
        let before = r.reads().await;
        assert_eq!(r.found(&r.storefront_key, near).await, ["wh-1"]);
        searches += 1.0;
        quiet = r.reads().await == before;
    }
    assert!(quiet, "every search read the database though nothing was written");
    assert_eq!(from_memory().await, Some(served + searches));
    let (on_primary, on_replica) = r.reads().await;
    // A write (far from the buyer) makes the next search read where the log stands, on the replica.
    let far = with(point(3), "/latitude", Some(json!(near.0 + 1.0)));
    create(&r.server.base, &r.key, &[far]).await;
    assert_eq!(r.found(&r.storefront_key, near).await, ["wh-1"]);
    assert_eq!(r.reads().await, (on_primary, on_replica + 1.0), "read on the replica");
    assert_eq!(from_memory().await, Some(served + searches + 1.0));

    r.pause_replay().await;
    let second = with(point(2), "/latitude", Some(json!(near.0 + 0.001)));
    create(&r.server.base, &r.key, &[second]).await;
    // A full key's search brings the index up to the log; after another write, a storefront key's
    // search finds what the index holds, where the log stands read on the primary (the paused
    // replica has not replayed what the index holds).
    assert_eq!(r.found(&r.key, near).await, ["wh-1", "wh-2"]);
    let far = with(point(4), "/latitude", Some(json!(near.0 - 1.0)));
    create(&r.server.base, &r.key, &[far]).await;
    let (p, q) = r.reads().await;
    assert_eq!(r.found(&r.storefront_key, near).await, ["wh-1", "wh-2"]);
    assert_eq!(r.reads().await, (p + 1.0, q), "read on the primary");
    r.standby.execute("SELECT pg_wal_replay_resume()").await;
}

#[tokio::test]
#[ignore = "needs PostgreSQL: scripts/test runs it"]
async fn every_replica_s_lag_is_shown_from_the_first_scrape_even_when_one_is_listed_twice() {
    let primary = Cluster::new();
    let standby = primary.standby();
    let server = Server::start_binary_with(
        std::path::Path::new(BIN),
        &primary.url(),
        &[
            "--read-replica",
            &standby.url(),
            "--read-replica",
            &standby.url(),
            "--replica-max-lag",
            MAX_LAG,
        ],
    );
    let series = |metrics: &str, replica: &str| -> Option<f64> {
        let name = format!(r#"replica_lag_seconds{{replica="{replica}"}} "#);
        metrics
            .lines()
            .find_map(|l| l.strip_prefix(name.as_str()))
            .map(|v| if v == "inf" { f64::INFINITY } else { v.parse().unwrap() })
    };
    let scrape = || metrics_text(&server.base);
    // Not yet known to be within the bound is +Inf, never absent.
    let first = scrape().await;
    assert!(series(&first, "0").is_some(), "{first}");
    assert!(series(&first, "1").is_some(), "{first}");
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let metrics = scrape().await;
        if series(&metrics, "0") == Some(0.0) && series(&metrics, "1") == Some(0.0) {
            break;
        }
        assert!(Instant::now() < deadline, "both not 0 behind within 20 s: {metrics}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
#[ignore = "needs PostgreSQL: scripts/test runs it"]
async fn a_stopped_replica_costs_a_buyer_nothing_and_pages_continue_on_either_side() {
    let r = Replicated::start().await;
    let items: Vec<Value> = (1..=30)
        .map(|n| with(point(n), "/latitude", Some(json!(10.0 + f64::from(n) * 0.0005))))
        .collect();
    let near = (10.0, 37.6);
    create(&r.server.base, &r.key, &items).await;
    let deadline = Instant::now() + Duration::from_secs(10);
    while r.found(&r.storefront_key, near).await.len() < 30 {
        assert!(Instant::now() < deadline, "the locations never reached the replica");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // The walk in pages of 7, on the primary.
    let mut expected = Vec::new();
    let mut cursor = Value::Null;
    loop {
        let page = r.search(&r.key, near, json!({"limit": 7, "cursor": cursor})).await;
        expected.push(result_ids(&page));
        cursor = page["pagination"]["next_cursor"].clone();
        if cursor.is_null() {
            break;
        }
    }
    assert_eq!(expected.concat().len(), 30);

    // A page read on the replica, the next ones on the primary while the replica is stopped.
    let (p, q) = r.reads().await;
    let page = r.search(&r.storefront_key, near, json!({"limit": 7})).await;
    assert_eq!(result_ids(&page), expected[0]);
    assert_eq!(r.reads().await, (p, q + 1.0), "page 1 read on the replica");
    r.standby.stop();
    let mut cursor = page["pagination"]["next_cursor"].clone();
    for expected_page in &expected[1..] {
        let page = r
            .search(&r.storefront_key, near, json!({"limit": 7, "cursor": cursor}))
            .await;
        assert_eq!(&result_ids(&page), expected_page);
        cursor = page["pagination"]["next_cursor"].clone();
    }
    assert!(cursor.is_null());
    let (p2, q2) = r.reads().await;
    assert_eq!(q2, q + 1.0, "nothing more read on the stopped replica");
    assert_eq!(p2, p + 4.0, "pages 2 to 5 read on the primary");
    assert_eq!(
        r.lag().await,
        Some(f64::INFINITY),
        "a silent replica is shown infinitely behind"
    );
    let ready = reqwest::get(format!("{}/readyz", r.server.base)).await.unwrap();
    assert_eq!(ready.status(), 200, "readiness depends on the primary only");

    // A page read on the primary, the next on the replica once it is back.
    let page = r.search(&r.storefront_key, near, json!({"limit": 7})).await;
    assert_eq!(result_ids(&page), expected[0]);
    let cursor = page["pagination"]["next_cursor"].clone();
    r.standby.start();
    r.await_lag(|lag| lag == 0.0, "back and caught up").await;
    let (p, q) = r.reads().await;
    let page = r
        .search(&r.storefront_key, near, json!({"limit": 7, "cursor": cursor}))
        .await;
    assert_eq!(result_ids(&page), expected[1]);
    assert_eq!(r.reads().await, (p, q + 1.0), "page 2 read on the replica");
}

#[test]
fn sqlite_refuses_read_replicas_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(BIN)
        .env_remove("STOREFRONT_DATABASE")
        .args(["serve", "--addr", "127.0.0.1:0", "--database"])
        .arg(format!("sqlite://{}", dir.path().join("x.db").display()))
        .args(["--read-replica", "postgres://postgres@127.0.0.1:1/postgres"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--read-replica needs a PostgreSQL --database"),
        "{stderr}"
    );
    assert!(!dir.path().join("x.db").exists(), "refused before opening the database");
}

#[test]
fn an_empty_replica_list_is_none() {
    use std::io::BufRead;
    let dir = tempfile::tempdir().unwrap();
    let mut child = std::process::Command::new(BIN)
        .env("STOREFRONT_READ_REPLICAS", "")
        .env("STOREFRONT_LOG_FORMAT", "json")
        .args(["serve", "--addr", "127.0.0.1:0", "--database"])
        .arg(format!("sqlite://{}", dir.path().join("x.db").display()))
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = std::io::BufReader::new(child.stderr.take().unwrap());
    let listening = stderr
        .lines()
        .map_while(Result::ok)
        .any(|line| line.starts_with("storefront is listening on "));
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(listening, "STOREFRONT_READ_REPLICAS= names no replica: SQLite serves");
}

/// `db_reads_total{target}` counts every request answered from the database (CONTRACT §19), not
/// only searches: a location list, a feed page and a deliveries page are one each (SQLite: all on
/// the primary). A process of its own, so that no other test's reads are counted.
#[tokio::test]
async fn every_read_from_the_database_is_counted_by_where_it_was_read() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("reads.db").display());
    let key = merchant_create_at(&url, "reads")["api_key"]
        .as_str()
        .unwrap()
        .to_owned();
    let server = Server::start_at(&url);
    let client = reqwest::Client::new();
    let post = |path: &str, body: Value| {
        client
            .post(format!("{}{path}", server.base))
            .bearer_auth(&key)
            .json(&body)
    };
    let hook = read(post("/v1/webhook/create", json!({"url": "https://example.com/hook"}))).await;
    assert_eq!(hook.status, 200, "{:#}", hook.body);
    let id = hook.body["webhook"]["webhook_id"].clone();
    let reads = || async {
        let metrics = metrics_text(&server.base).await;
        metric_in(&metrics, r#"db_reads_total{target="primary"}"#).unwrap_or(0.0)
    };
    let before = reads().await;
    for (path, body) in [
        ("/v1/location/list", json!({})),
        ("/v1/location/events", json!({})),
        ("/v1/webhook/deliveries", json!({"webhook_id": id})),
        (
            "/v1/location/search",
            json!({"near": {"latitude": 55.75, "longitude": 37.61}}),
        ),
    ] {
        let answer = read(post(path, body)).await;
        assert_eq!(answer.status, 200, "{path}: {:#}", answer.body);
    }
    assert_eq!(reads().await - before, 4.0);
}

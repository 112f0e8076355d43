//! What only PostgreSQL promises (CONTRACT §8): several instances on one database, and recovery
//! when the database comes back. Ignored on the SQLite pass; `scripts/test` runs them against the
//! PostgreSQL server it starts.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::helpers::*;

pub(crate) fn admin_url() -> String {
    postgres_admin_url().expect("set STOREFRONT_TEST_POSTGRES to a PostgreSQL admin URL (scripts/test does)")
}

/// `POST /v1/categories/list` with `key`.
pub(crate) async fn list(base: &str, key: &str, body: &Value) -> Answer {
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

//! A database written before the stored record existed (schema 2) is migrated in place on both
//! engines: every location gets its record (version 1, `updated_at = created_at`, its content in
//! the record's form, the issue of a quarantined one), the counts behind `total`, its columns in
//! the search index (found by a search with a parcel and a time), and still answers a create
//! retry as before, and the text filter finds them. A key issued before keys had a scope is a full key (CONTRACT §13.1). Events
//! stored as JSON (before their compact rows) are converted and read as the same bytes.

use serde_json::{Value, json};

use crate::helpers::*;

/// Bodies as schema 2 stored them: absent values left out, `merchant_location_id` inside.
const FIRST: &str = r#"{"merchant_location_id":"wh-1","location_types":["WAREHOUSE"],"name":"Warehouse 1","address_tail":"101000, Russia, Moscow, Tverskaya street, 1","comment":"Gate 3","latitude":10.01,"longitude":37.6,"limits":{"length":200.0,"width":120.0,"height":150.0,"weight":500.0},"working_schedule":[{"day":"MONDAY","schedule":{"time_start":"09:00","time_end":"21:00","break":"13:00-14:00"}},{"day":"TUESDAY","schedule":{"time_start":"09:00","time_end":"21:00","break":"13:00-14:00"}},{"day":"WEDNESDAY","schedule":{"time_start":"08:00","time_end":"20:00","shipping_cutoff":"16:00"}}],"is_accepts_returns":true}"#;
const TWIN: &str = r#"{"merchant_location_id":"wh-twin","location_types":["WAREHOUSE"],"name":"Twin","latitude":10.01,"longitude":37.6,"limits":{"length":1.0,"width":1.0,"height":1.0,"weight":1.0},"working_schedule":[{"day":"FRIDAY","schedule":{"time_start":"09:00","time_end":"21:00"}}],"is_accepts_returns":false}"#;

const CREATED_AT: i64 = 1_795_339_800_123;

/// A key stored before keys had a scope: its id, and its secret (stored as a SHA-256).
const OLD_KEY_ID: &str = "0123456789abcdef01234567";
const OLD_SECRET: &str = "a-secret-issued-before-scopes";

fn old_key() -> String {
    format!("sf_{OLD_KEY_ID}_{OLD_SECRET}")
}

fn old_hash() -> Vec<u8> {
    use sha2::Digest;
    sha2::Sha256::digest(OLD_SECRET.as_bytes()).to_vec()
}

/// (location_id, merchant_location_id, status, body, created_at)
fn rows() -> [(&'static str, &'static str, &'static str, &'static str, i64); 2] {
    [
        ("loc-1", "wh-1", "ACTIVE", FIRST, CREATED_AT),
        ("loc-2", "wh-twin", "QUARANTINE", TWIN, CREATED_AT + 1),
    ]
}

/// A schema-2 database at `url` holding merchant `m-old`, its key and the two rows.
async fn write_schema_2(url: &str) {
    match postgres_admin_url() {
        None => {
            let path = url.strip_prefix("sqlite://").unwrap();
            let conn = rusqlite::Connection::open(path).unwrap();
            conn.execute_batch(include_str!("../../migrations/sqlite/0001_init.sql"))
                .unwrap();
            conn.execute_batch(include_str!("../../migrations/sqlite/0002_categories.sql"))
                .unwrap();
            conn.pragma_update(None, "user_version", 2).unwrap();
            conn.execute(
                "INSERT INTO merchants (id, name, created_at) VALUES ('m-old', 'old', 1)",
                [],
            )
            .unwrap();
            conn.execute(
                "INSERT INTO api_keys (key_id, merchant_pk, secret_hash, created_at) VALUES (?1, 1, ?2, 1)",
                rusqlite::params![OLD_KEY_ID, old_hash()],
            )
            .unwrap();
            for (id, mlid, status, body, created_at) in rows() {
                conn.execute(
                    "INSERT INTO locations (location_id, merchant_pk, merchant_location_id, status, types, latitude, \
                     longitude, band, body, created_at) VALUES (?1, 1, ?2, ?3, 1, 10.01, 37.6, 10010, ?4, ?5)",
                    rusqlite::params![id, mlid, status, body, created_at],
                )
                .unwrap();
            }
        }
        Some(_) => {
            let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls).await.unwrap();
            tokio::spawn(connection);
            client
                .batch_execute(include_str!("../../migrations/postgres/0001_init.sql"))
                .await
                .unwrap();
            client
                .batch_execute(include_str!("../../migrations/postgres/0002_categories.sql"))
                .await
                .unwrap();
            client
                .batch_execute(
                    "CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY); \
                     INSERT INTO schema_migrations VALUES (1), (2); \
                     INSERT INTO merchants (id, name, created_at) VALUES ('m-old', 'old', 1);",
                )
                .await
                .unwrap();
            client
                .execute(
                    "INSERT INTO api_keys (key_id, merchant_pk, secret_hash, created_at) \
                     SELECT $1, pk, $2, 1 FROM merchants WHERE id = 'm-old'",
                    &[&OLD_KEY_ID, &old_hash()],
                )
                .await
                .unwrap();
            for (id, mlid, status, body, created_at) in rows() {
                client
                    .execute(
                        "INSERT INTO locations (location_id, merchant_pk, merchant_location_id, status, types, latitude, \
                         longitude, band, body, created_at) \
                         SELECT $1, pk, $2, $3, 1, 10.01, 37.6, 10010, $4, $5 FROM merchants WHERE id = 'm-old'",
                        &[&id, &mlid, &status, &body, &created_at],
                    )
                    .await
                    .unwrap();
            }
        }
    }
}

#[tokio::test]
async fn locations_stored_before_the_record_existed_read_back_as_records() {
    let dir = tempfile::tempdir().unwrap();
    let url = fresh_database_url(dir.path()).await;
    write_schema_2(&url).await;
    let store = open_store(&url).await;
    // The key issued before scopes existed is a full key: it lists (a storefront key may not).
    let key = old_key();
    let app = TestApp::spawn_with(store, dir).await;

    let answer = app.post_as("/v1/location/list", &key, &json!({})).await;
    assert_eq!(answer.status, 200, "{:#}", answer.body);
    let records = answer.body["locations"].as_array().unwrap();
    assert_eq!(records.len(), 2);
    let first = &records[0];
    assert_eq!(first["location_id"], "loc-1");
    assert_eq!(first["merchant_location_id"], "wh-1");
    assert_eq!(first["version"], 1);
    assert_eq!(first["created_at"], "2026-11-22T09:30:00.123Z");
    assert_eq!(first["updated_at"], first["created_at"]);
    assert_eq!(first["issue"], Value::Null);
    assert_eq!(first["provider_id"], Value::Null);
    assert_eq!(first["working_schedule"][0]["schedule"]["shipping_cutoff"], Value::Null);
    assert_eq!(first["working_schedule"][2]["schedule"]["shipping_cutoff"], "16:00");
    let twin = &records[1];
    assert_eq!(twin["status"], "QUARANTINE");
    assert_eq!(twin["issue"]["field"], "latitude");
    assert!(twin["issue"]["message"].as_str().unwrap().contains("loc-1"), "{twin:#}");
    assert_eq!(answer.body["pagination"]["total"], 2);
    let quarantined = app
        .post_as("/v1/location/list", &key, &json!({"filter": {"status": "QUARANTINE"}}))
        .await;
    assert_eq!(quarantined.body["pagination"]["total"], 1);
    // The text migration indexed both: by a piece of the name, and of the id, in any case.
    for (text, found) in [
        ("WAREHOUSE 1", vec!["loc-1"]),
        ("TWIN", vec!["loc-2"]),
        ("wh-", vec!["loc-1", "loc-2"]),
    ] {
        let answer = app
            .post_as("/v1/location/list", &key, &json!({"filter": {"text": text}}))
            .await;
        let ids: Vec<&str> = answer.body["locations"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l["location_id"].as_str().unwrap())
            .collect();
        assert_eq!(ids, found, "{text}");
    }

    // The search migration filled the index: the ACTIVE one is found, its limits and hours too.
    let search = |filter: Value| json!({"near": {"latitude": 10.0, "longitude": 37.6}, "filter": filter});
    let found = app
        .post_as(
            "/v1/location/search",
            &key,
            &search(json!({"parcel": {"length": 150, "width": 200, "height": 100, "weight": 500}, "open_at": "2026-11-25T08:30"})),
        )
        .await;
    assert_eq!(found.status, 200, "{:#}", found.body);
    let results = found.body["results"].as_array().unwrap();
    assert_eq!(results.len(), 1, "only the ACTIVE one: {:#}", found.body);
    assert_eq!(results[0]["location"]["location_id"], "loc-1");
    assert_eq!(results[0]["distance_m"], 1112);
    let closed = app
        .post_as(
            "/v1/location/search",
            &key,
            &search(json!({"open_at": "2026-11-26T08:30"})),
        )
        .await;
    assert_eq!(closed.body["results"], json!([]), "no Thursday element");

    // A retry of the first, as its merchant sent it then, is still recognised.
    let retry = app.create_as(&key, vec![warehouse(1)]).await;
    assert_eq!(retry[0]["location_id"], "loc-1", "{retry:#?}");
    assert_eq!(retry[0]["status"], "ACTIVE");
    // A new location after the migration counts on.
    let created = app.create_as(&key, vec![pickup_point(1)]).await;
    assert_eq!(created[0]["status"], "ACTIVE");
    let all = app.post_as("/v1/location/list", &key, &json!({})).await;
    assert_eq!(all.body["pagination"]["total"], 3);
}

/// An event as the feed answered it, and as an earlier schema stored it.
struct OldEvent {
    sequence: i64,
    code: i64,
    appended_at: i64,
    event_id: String,
    /// Its JSON after `sequence` (`"type":…}`), as schemas before the compact rows stored it.
    tail: String,
}

/// The `events` table as SQLite schema 7 and PostgreSQL schema 10 made it.
const OLD_EVENTS: &str = "CREATE TABLE events (merchant_pk BIGINT NOT NULL, sequence BIGINT NOT NULL, \
     type SMALLINT NOT NULL, appended_at BIGINT NOT NULL, event_id TEXT NOT NULL, body TEXT NOT NULL, \
     PRIMARY KEY (merchant_pk, sequence)); \
     CREATE INDEX events_by_type ON events (merchant_pk, type, sequence)";

/// Puts the events back as the schema before compact rows stored them, and the schema's version
/// with them.
async fn store_as_json(url: &str, merchant_pk: i64, events: &[OldEvent]) {
    match url.strip_prefix("sqlite://") {
        Some(path) => {
            let conn = rusqlite::Connection::open(path).unwrap();
            // Version 7's schema: the claims' owners (migration 9), the endpoints' first
            // sequence (10), the imports (12, and their files, 15), the keys' origins (13) and the text index (14) came after it too (10 rebuilds the attempts' table
            // whatever it holds).
            conn.execute_batch(&format!(
                "DROP TABLE location_text; DROP TABLE key_origins; DROP INDEX api_keys_by_merchant; ALTER TABLE api_keys DROP COLUMN label; \
                 ALTER TABLE api_keys DROP COLUMN allowed_origins; DROP TABLE import_rows; DROP TABLE import_files; DROP TABLE imports; \
                 DROP TABLE events; {OLD_EVENTS}; ALTER TABLE webhooks DROP COLUMN claim_owner; \
                 ALTER TABLE deliveries DROP COLUMN claim_owner; ALTER TABLE webhooks DROP COLUMN created_through; \
                 ALTER TABLE webhooks DROP COLUMN resent_through; PRAGMA user_version = 7"
            ))
            .unwrap();
            for e in events {
                conn.execute(
                    "INSERT INTO events (merchant_pk, sequence, type, appended_at, event_id, body) \
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                    rusqlite::params![merchant_pk, e.sequence, e.code, e.appended_at, e.event_id, e.tail],
                )
                .unwrap();
            }
        }
        None => {
            let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls).await.unwrap();
            tokio::spawn(connection);
            client
                .batch_execute(&format!(
                    "ALTER TABLE locations DROP COLUMN search_text; DROP TABLE key_origins; DROP INDEX api_keys_by_merchant; ALTER TABLE api_keys DROP COLUMN label; \
                     ALTER TABLE api_keys DROP COLUMN allowed_origins; DROP TABLE import_rows; DROP TABLE import_files; DROP TABLE imports; \
                     DROP TABLE events; {OLD_EVENTS}; ALTER TABLE webhooks DROP COLUMN claim_owner; \
                     ALTER TABLE deliveries DROP COLUMN claim_owner; ALTER TABLE webhooks DROP COLUMN created_through; \
                     ALTER TABLE webhooks DROP COLUMN resent_through; \
                     ALTER TABLE delivery_attempts DROP COLUMN made_by; \
                     ALTER TABLE delivery_attempts ALTER COLUMN sequence SET NOT NULL; \
                     DROP INDEX delivery_attempts_by_outcome, delivery_attempts_by_event; \
                     DELETE FROM schema_migrations WHERE version >= 11"
                ))
                .await
                .unwrap();
            for e in events {
                client
                    .execute(
                        "INSERT INTO events (merchant_pk, sequence, type, appended_at, event_id, body) \
                         VALUES ($1, $2, $3, $4, $5, $6)",
                        &[
                            &merchant_pk,
                            &e.sequence,
                            &(e.code as i16),
                            &e.appended_at,
                            &e.event_id,
                            &e.tail,
                        ],
                    )
                    .await
                    .unwrap();
            }
        }
    }
}

/// The merchant's `pk` and each event's stored type and time, read with the store's own URL.
async fn stored_events(url: &str) -> (i64, Vec<(i64, i64, i64)>) {
    const SQL: &str = "SELECT merchant_pk, sequence, type, appended_at FROM events ORDER BY sequence";
    match url.strip_prefix("sqlite://") {
        Some(path) => {
            let conn = rusqlite::Connection::open(path).unwrap();
            let mut stmt = conn.prepare(SQL).unwrap();
            let rows: Vec<(i64, i64, i64, i64)> = stmt
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap();
            (rows[0].0, rows.iter().map(|r| (r.1, r.2, r.3)).collect())
        }
        None => {
            let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls).await.unwrap();
            tokio::spawn(connection);
            let rows = client.query(SQL, &[]).await.unwrap();
            let pk: i64 = rows[0].get(0);
            let events = rows
                .iter()
                .map(|r| (r.get(1), i64::from(r.get::<_, i16>(2)), r.get(3)))
                .collect();
            (pk, events)
        }
    }
}

#[tokio::test]
async fn events_stored_as_json_are_converted_in_place_and_read_the_same() {
    let mut app = TestApp::spawn().await;
    let created = app.create(vec![warehouse(1), pickup_point(2)]).await;
    assert_eq!(created[1]["status"], "ACTIVE");
    let renamed = with(warehouse(1), "/name", Some(json!("Renamed \"quoted\" \u{444}")));
    let answer = app.post("/v1/location/update", &json!({"locations": [renamed]})).await;
    assert_eq!(answer.status, 200, "{:#}", answer.body);
    let answer = app
        .post(
            "/v1/location/archive",
            &json!({"locations": [{"merchant_location_id": "pp-2"}]}),
        )
        .await;
    assert_eq!(answer.status, 200, "{:#}", answer.body);
    let feed = json!({"pagination": {"limit": 100}});
    let (status, before) = app.post_text("/v1/location/events", &feed).await;
    assert_eq!(status, 200, "{before}");

    #[derive(serde::Deserialize)]
    struct Page<'a> {
        #[serde(borrow)]
        events: Vec<&'a serde_json::value::RawValue>,
    }
    let page: Page = serde_json::from_str(&before).unwrap();
    assert_eq!(page.events.len(), 4, "created twice, updated, archived: {before}");
    let url = app.db_url().to_owned();
    let (merchant_pk, stored) = stored_events(&url).await;
    let events: Vec<OldEvent> = page
        .events
        .iter()
        .zip(&stored)
        .map(|(raw, &(sequence, code, appended_at))| {
            let event: Value = serde_json::from_str(raw.get()).unwrap();
            assert_eq!(event["sequence"], sequence);
            let (_, rest) = raw.get().split_once(",\"type\":").unwrap();
            OldEvent {
                sequence,
                code,
                appended_at,
                event_id: event["event_id"].as_str().unwrap().to_owned(),
                tail: format!("\"type\":{rest}"),
            }
        })
        .collect();

    let dir = std::mem::replace(&mut app._dir, tempfile::tempdir().unwrap());
    let key = app.key.clone();
    app.store.close().await;
    drop(app);
    store_as_json(&url, merchant_pk, &events).await;
    let app = TestApp::spawn_with(open_store(&url).await, dir).await;
    let (status, after) = app.post_text_as("/v1/location/events", &key, &feed).await;
    assert_eq!(status, 200, "{after}");
    assert_eq!(after, before, "the converted events read as the same bytes");
    // And the log goes on after them.
    app.create_as(&key, vec![warehouse(3)]).await;
    let answer = app.post_as("/v1/location/events", &key, &feed).await;
    let events = answer.body["events"].as_array().unwrap();
    assert_eq!(events.len(), 5);
    assert_eq!(events[4]["sequence"], 5);
    assert_eq!(events[4]["merchant_location_id"], "wh-3");
}

/// An import queued before its file had a table of its own (SQLite schema 14, PostgreSQL 17) runs
/// to its end after the upgrade, with every row applied, and its file is dropped when it ends.
#[tokio::test]
async fn an_import_queued_before_files_had_a_table_of_their_own_runs_after_the_upgrade() {
    let mut app = TestApp::spawn().await;
    let url = app.db_url().to_owned();
    let dir = std::mem::replace(&mut app._dir, tempfile::tempdir().unwrap());
    let key = app.key.clone();
    app.store.close().await;
    drop(app);
    let (downgrade, blob) = match url.strip_prefix("sqlite://") {
        Some(_) => (
            "ALTER TABLE imports ADD COLUMN content BLOB NOT NULL DEFAULT x''; DROP TABLE import_files; \
             PRAGMA user_version = 14",
            "x'6d65726368616e745f6c6f636174696f6e5f69642c6e616d650a6f6c642d312c4f6c64206f6e650a'",
        ),
        None => (
            "ALTER TABLE imports ADD COLUMN content BYTEA NOT NULL DEFAULT ''; DROP TABLE import_files; \
             ALTER TABLE import_rows DROP COLUMN for_archive; \
             CREATE INDEX import_rows_by_location ON import_rows (import_pk, location_id); \
             CREATE INDEX import_rows_by_name ON import_rows (import_pk, merchant_location_id); \
             ALTER TABLE import_rows ADD FOREIGN KEY (import_pk) REFERENCES imports (import_pk) ON DELETE CASCADE; \
             DELETE FROM schema_migrations WHERE version >= 18",
            "'\\x6d65726368616e745f6c6f636174696f6e5f69642c6e616d650a6f6c642d312c4f6c64206f6e650a'::bytea",
        ),
    };
    execute_sql(&url, downgrade).await;
    // `merchant_location_id,name` / `old-1,Old one`: a row that fails (no coordinates, no types),
    // so its outcome names its fields.
    execute_sql(
        &url,
        &format!(
            "INSERT INTO imports (import_id, merchant_pk, file_name, content, do_update, archive_missing, dry_run, \
             status, created_at) VALUES ('queued-before', (SELECT merchant_pk FROM api_keys LIMIT 1), 'old.csv', \
             {blob}, false, false, false, 'QUEUED', 1)"
        ),
    )
    .await;
    let app = TestApp::spawn_with(open_store(&url).await, dir).await;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let import = loop {
        let got = app
            .post_as("/v1/import/get", &key, &json!({"import_id": "queued-before"}))
            .await;
        assert_eq!(got.status, 200, "{:#}", got.body);
        let import = got.body["import"].clone();
        if import["status"] == "SUCCEEDED" || import["status"] == "FAILED" {
            break import;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "not ended within 20 s: {import:#}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    assert_eq!(import["status"], "SUCCEEDED", "{import:#}");
    assert_eq!(import["rows_total"], 1);
    assert_eq!(import["counts"]["failed"], 1, "{import:#}");
    let rows = app
        .post_as("/v1/import/rows", &key, &json!({"import_id": "queued-before"}))
        .await;
    assert_eq!(rows.body["rows"][0]["merchant_location_id"], "old-1", "{:#}", rows.body);
    assert_eq!(rows.body["rows"][0]["row"], 2);
    let left = match url.strip_prefix("sqlite://") {
        Some(path) => rusqlite::Connection::open(path)
            .unwrap()
            .query_row("SELECT count(*) FROM import_files", [], |r| r.get::<_, i64>(0))
            .unwrap(),
        None => {
            let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls).await.unwrap();
            tokio::spawn(connection);
            client
                .query_one("SELECT count(*) FROM import_files", &[])
                .await
                .unwrap()
                .get::<_, i64>(0)
        }
    };
    assert_eq!(left, 0, "the file is dropped when its import ends");
}

//! A database written before the stored record existed (schema 2) is migrated in place on both
//! engines: every location gets its record (version 1, `updated_at = created_at`, its content in
//! the record's form, the issue of a quarantined one), the counts behind `total`, its columns in
//! the search index (found by a search with a parcel and a time), and still answers a create
//! retry as before. A key issued before keys had a scope is a full key (CONTRACT §13.1).

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

//! Faults of the SQLite store (CONTRACT §3, §4.1 step 6): a failure in the middle of a request's
//! inserts and a full disk answer 500 with nothing half-stored, `/readyz` says 503, and the
//! service recovers by itself. The full disk is a real one (a small tmpfs the test mounts), which
//! needs root, as CI has. (A read-only remount of a file system SQLite holds open for writing is
//! refused by the kernel as busy, so that fault has no test of its own; it fails the same write
//! path as a full disk.)

use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use reqwest::Method;
use serde_json::{Value, json};
use storefront::store::Store;
use storefront::store::sqlite::SqliteStore;

use crate::helpers::*;

fn rows(db: &Path, merchant_location_id_prefix: &str) -> i64 {
    let conn = rusqlite::Connection::open(db).unwrap();
    conn.query_row(
        "SELECT count(*) FROM locations WHERE merchant_location_id LIKE ?1 || '%'",
        [merchant_location_id_prefix],
        |r| r.get(0),
    )
    .unwrap()
}

fn batch(prefix: &str, n: u32) -> Vec<Value> {
    (0..n)
        .map(|i| {
            with(
                warehouse(i),
                "/merchant_location_id",
                Some(json!(format!("{prefix}{i}"))),
            )
        })
        .collect()
}

#[tokio::test]
async fn a_failure_after_k_of_n_inserts_leaves_none_of_the_request() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("test.db");
    let sqlite = Arc::new(SqliteStore::open(&db).await.unwrap());
    let app = TestApp::spawn_with(Arc::clone(&sqlite) as Arc<dyn Store>, tempfile::tempdir().unwrap()).await;
    let _keep = dir;

    sqlite.fail_after_inserts(Some(150));
    let answer = app
        .post("/v1/location/create", &json!({"locations": batch("f-", 200)}))
        .await;
    assert_error(&answer, 500, "ERROR_TYPE_INTERNAL", "INTERNAL");
    assert_eq!(rows(&db, "f-"), 0, "nothing of the failed request is stored");

    // The failpoint fired once; the same request now succeeds whole.
    let results = app.create(batch("f-", 200)).await;
    assert!(results.iter().all(|r| r["status"] == "ACTIVE"));
    assert_eq!(rows(&db, "f-"), 200);
}

#[tokio::test]
async fn a_change_that_fails_in_its_transaction_changes_no_location() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("test.db");
    let store = open_store(&format!("sqlite://{}", db.display())).await;
    let app = TestApp::spawn_with(store, tempfile::tempdir().unwrap()).await;
    let _keep = dir;
    app.create(batch("c-", 3)).await;
    // The database refuses to write the second location of the request, as a full disk would.
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute_batch(
        "CREATE TRIGGER refuse BEFORE UPDATE ON locations WHEN NEW.merchant_location_id = 'c-1' \
         BEGIN SELECT RAISE(ABORT, 'refused'); END;",
    )
    .unwrap();
    let renamed: Vec<Value> = batch("c-", 3)
        .into_iter()
        .map(|item| with(item, "/name", Some(json!("Renamed"))))
        .collect();
    let answer = app.post("/v1/location/update", &json!({ "locations": renamed })).await;
    assert_error(&answer, 500, "ERROR_TYPE_INTERNAL", "INTERNAL");
    let archive = json!({"locations": [{"merchant_location_id": "c-0"}, {"merchant_location_id": "c-1"}]});
    let answer = app.post("/v1/location/archive", &archive).await;
    assert_error(&answer, 500, "ERROR_TYPE_INTERNAL", "INTERNAL");
    let unchanged: i64 = conn
        .query_row(
            "SELECT count(*) FROM locations WHERE version = 1 AND status = 'ACTIVE' AND body NOT LIKE '%Renamed%'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(unchanged, 3, "no item of a failed request changed");
    // Once the database writes again, the same change applies whole.
    conn.execute_batch("DROP TRIGGER refuse").unwrap();
    let renamed: Vec<Value> = batch("c-", 3)
        .into_iter()
        .map(|item| with(item, "/name", Some(json!("Renamed"))))
        .collect();
    let answer = app.post("/v1/location/update", &json!({ "locations": renamed })).await;
    assert_eq!(answer.status, 200, "{:#}", answer.body);
    assert!(
        answer.body["locations"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["version"] == 2)
    );
}

fn is_root() -> bool {
    String::from_utf8(Command::new("id").arg("-u").output().unwrap().stdout)
        .unwrap()
        .trim()
        == "0"
}

/// A small tmpfs of its own, unmounted when dropped.
struct SmallDisk {
    dir: tempfile::TempDir,
}

impl SmallDisk {
    fn mount(size: &str) -> Option<SmallDisk> {
        if !is_root() {
            eprintln!("skipped: mounting a tmpfs needs root (CI runs as root)");
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.path())
            .status()
            .unwrap()
            .success();
        assert!(ok, "mount tmpfs");
        Some(SmallDisk { dir })
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(self.dir.path()).status();
    }
}

/// The full disk's batch of a round: 200 warehouses a degree of longitude from the other rounds'
/// (no round's locations near another's, which would be quarantined).
fn round_batch(round: u32) -> Vec<Value> {
    batch(&format!("d{round}-"), 200)
        .into_iter()
        .map(|item| with(item, "/longitude", Some(json!(37.6 + f64::from(round)))))
        .collect()
}

async fn ready(app: &TestApp) -> u16 {
    read(app.request(Method::GET, "/readyz")).await.status.as_u16()
}

async fn wait_ready(app: &TestApp) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while ready(app).await != 200 {
        assert!(Instant::now() < deadline, "not ready again within 10 s");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn a_full_disk_is_a_500_with_nothing_half_stored_and_the_service_recovers() {
    let Some(disk) = SmallDisk::mount("3m") else { return };
    let db = disk.path().join("full.db");
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&db).await.unwrap());
    let app = TestApp::spawn_with(store, tempfile::tempdir().unwrap()).await;
    // Fill the disk around the database.
    let filler = disk.path().join("filler");
    let _ = Command::new("dd")
        .args(["if=/dev/zero", "bs=64k", "count=100"])
        .arg(format!("of={}", filler.display()))
        .output();
    let mut refused = None;
    for round in 0..20 {
        let answer = app
            .post("/v1/location/create", &json!({"locations": round_batch(round)}))
            .await;
        if answer.status == 500 {
            refused = Some(round);
            assert_error(&answer, 500, "ERROR_TYPE_INTERNAL", "INTERNAL");
            break;
        }
        assert_eq!(answer.status, 200, "{:#}", answer.body);
    }
    let round = refused.expect("the disk never filled");
    assert_eq!(rows(&db, &format!("d{round}-")), 0, "nothing of the refused request");
    // Whatever free blocks are left go too. Room the WAL file already holds (after a checkpoint,
    // new frames are written over old ones) may still take small writes, and while it does the
    // service is truly ready: small creates use it up, and once one fails, so does readiness.
    let topped = disk.path().join("filler-2");
    let _ = Command::new("dd")
        .args(["if=/dev/zero", "bs=4k", "count=1000"])
        .arg(format!("of={}", topped.display()))
        .output();
    let mut small = 0;
    while ready(&app).await == 200 {
        small += 1;
        assert!(small <= 2000, "still ready after 2,000 small writes on a full disk");
        // Far from the refused batch's places, which it stores at the end.
        let far = with(
            batch(&format!("s{small}-"), 1).remove(0),
            "/latitude",
            Some(json!(-40.0)),
        );
        let answer = app.post("/v1/location/create", &json!({"locations": [far]})).await;
        if answer.status != 200 {
            assert_error(&answer, 500, "ERROR_TYPE_INTERNAL", "INTERNAL");
            assert_eq!(ready(&app).await, 503, "not ready while writes fail");
            break;
        }
    }

    std::fs::remove_file(&filler).unwrap();
    std::fs::remove_file(&topped).unwrap();
    wait_ready(&app).await;
    let results = app.create(round_batch(round)).await;
    assert!(results.iter().all(|r| r["status"] == "ACTIVE"), "{results:#?}");
}

fn rss_kib(pid: u32) -> u64 {
    status_kib(pid, "VmRSS:")
}

fn status_kib(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

/// Eight-megabyte create bodies of the shapes that cost the most memory for their size (issue 18).
fn hostile_bodies() -> Vec<(&'static str, String)> {
    const SIZE: usize = 8 * 1024 * 1024 - 64;
    let keys = |n: usize| (0..n).map(|i| format!("\"k{i}\":0")).collect::<Vec<_>>().join(",");
    let per_item = keys(SIZE / 200 / 12);
    let deep = format!("{}{}", "[".repeat(120), "]".repeat(120));
    vec![
        (
            "many keys in one item",
            format!(r#"{{"locations":[{{{}}}]}}"#, keys(SIZE / 12)),
        ),
        (
            "many keys in each of 200 items",
            format!(
                r#"{{"locations":[{}]}}"#,
                vec![format!("{{{per_item}}}"); 200].join(",")
            ),
        ),
        (
            "millions of tiny array elements",
            format!(
                r#"{{"locations":[{{"location_types":[{}]}}]}}"#,
                vec!["0"; SIZE / 2 - 40].join(",")
            ),
        ),
        (
            "one huge string",
            format!(r#"{{"locations":[{{"name":"{}"}}]}}"#, "x".repeat(SIZE - 40)),
        ),
        (
            "deep but allowed nesting",
            format!(
                r#"{{"locations":[{{"comment":[{}]}}]}}"#,
                vec![deep; (SIZE - 40) / 241].join(",")
            ),
        ),
    ]
}

#[tokio::test]
async fn sixteen_hostile_bodies_at_once_keep_memory_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("hostile.db");
    let key = merchant_create(&db, "hostile")["api_key"].as_str().unwrap().to_owned();
    let server = Server::start_binary_with(
        Path::new(env!("CARGO_BIN_EXE_storefront")),
        &format!("sqlite://{}", db.display()),
        &["--rate-limit", "0"],
    );
    let client = reqwest::Client::new();
    let start = rss_kib(server.child.id());
    for (shape, body) in hostile_bodies() {
        assert!(body.len() <= 8 * 1024 * 1024, "{shape}: {} bytes", body.len());
        let sends = (0..16).map(|_| {
            client
                .post(format!("{}/v1/location/create", server.base))
                .bearer_auth(&key)
                .header("content-type", "application/json")
                .body(body.clone())
                .send()
        });
        for response in futures_util::future::join_all(sends).await {
            let response = response.unwrap();
            let status = response.status();
            let answer = response.bytes().await.unwrap();
            // Every answer stays small, but for the one that echoes the item's name (SPEC §2.2):
            // then it is the body's size.
            let bound = if shape == "one huge string" {
                body.len() + 4096
            } else {
                2 * 1024 * 1024
            };
            assert!(answer.len() <= bound, "{shape}: an answer of {} bytes", answer.len());
            let answer: Value = serde_json::from_slice(&answer).unwrap();
            match status.as_u16() {
                200 => assert_eq!(answer["locations"][0]["status"], "FAILED", "{shape}"),
                400 => assert_eq!(answer["code"], "PAYLOAD_TOO_LARGE", "{shape}: {answer}"),
                other => panic!("{shape}: {other} {answer}"),
            }
        }
        let peak = status_kib(server.child.id(), "VmHWM:");
        eprintln!("hostile bodies: {shape}: peak RSS {peak} KiB");
        assert!(peak <= 256 * 1024, "{shape}: peak RSS {peak} KiB");
    }
    // jemalloc's background threads give the burst's memory back within its decay time (0.4 s).
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut end = rss_kib(server.child.id());
    while end > start + 32 * 1024 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_secs(1)).await;
        end = rss_kib(server.child.id());
    }
    eprintln!("hostile bodies: RSS {start} KiB at the start, {end} KiB after the burst");
    assert!(
        end <= start + 32 * 1024,
        "RSS {end} KiB stayed above {start} KiB + 32 MiB"
    );
}

/// The allocator's settings are built into the binary (`.cargo/config.toml`): freed pages go back
/// to the system over 0.4 s, not jemalloc's default 10 s, whatever the service's environment.
#[cfg(feature = "jemalloc")]
#[test]
fn the_allocator_returns_freed_pages_soon() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_storefront"))
        .arg("--version")
        .env("_RJEM_MALLOC_CONF", "stats_print:true")
        .output()
        .unwrap();
    assert!(out.status.success());
    // jemalloc prints its statistics, options first, on stderr at the exit.
    let stats = String::from_utf8_lossy(&out.stderr);
    assert!(
        stats
            .lines()
            .any(|line| line.trim() == "opt.dirty_decay_ms: 400 (arenas.dirty_decay_ms: 400)"),
        "jemalloc's options: {}",
        stats
            .lines()
            .filter(|line| line.contains("opt."))
            .collect::<Vec<_>>()
            .join("\n")
    );
}

#[tokio::test]
async fn memory_stays_flat_under_repeated_oversized_requests() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("mem.db");
    let key = merchant_create(&db, "mem")["api_key"].as_str().unwrap().to_owned();
    // What is measured is memory: no rate limit, and a fresh connection for every request.
    let server = Server::start_binary_with(
        Path::new(env!("CARGO_BIN_EXE_storefront")),
        &format!("sqlite://{}", db.display()),
        &["--rate-limit", "0"],
    );
    let client = reqwest::Client::builder().pool_max_idle_per_host(0).build().unwrap();
    let too_big = format!(r#"{{"locations":[],"pad":"{}"}}"#, "x".repeat(8 * 1024 * 1024));
    let too_many = json!({"locations": (0..201).map(warehouse).collect::<Vec<_>>()}).to_string();
    let too_many_ids = json!({"filter": {"ids": (0..1001).map(|i| i.to_string()).collect::<Vec<_>>()}}).to_string();
    let round = || async {
        for (path, body, code) in [
            ("/v1/location/create", &too_big, "PAYLOAD_TOO_LARGE"),
            ("/v1/location/create", &too_many, "TOO_MANY_ITEMS"),
            ("/v1/categories/list", &too_many_ids, "TOO_MANY_ITEMS"),
        ] {
            let answer = read(
                client
                    .post(format!("{}{path}", server.base))
                    .bearer_auth(&key)
                    .header("content-type", "application/json")
                    .body(body.clone()),
            )
            .await;
            assert_eq!(answer.body["code"], code);
        }
    };
    for _ in 0..5 {
        round().await;
    }
    let warm = rss_kib(server.child.id());
    for _ in 0..30 {
        round().await;
    }
    let after = rss_kib(server.child.id());
    eprintln!("memory: RSS {warm} KiB after 5 rounds, {after} KiB after 35 rounds of refused oversized requests");
    assert!(after < warm + 16 * 1024, "RSS grew from {warm} KiB to {after} KiB");
}

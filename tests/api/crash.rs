//! Crash safety (issue: "keeps working, loses nothing"): clients send 200-item creates while the
//! server is killed with SIGKILL at random moments and restarted. Afterwards, read straight from
//! the file: every request that was answered is stored whole with the answered ids, no request is
//! stored in part, and `PRAGMA integrity_check` says `ok`.
//!
//! `STOREFRONT_CRASH_CYCLES` (default 10) and `STOREFRONT_CRASH_BIN` (default: this build's
//! binary) scale it up; `scripts/crash-test` runs 100 cycles against the release binary.

use std::collections::HashMap;
use std::hash::{BuildHasher, RandomState};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

use crate::helpers::*;

const CLIENTS: usize = 4;

/// A random number below `n` (no seeding needed: it only picks kill moments).
fn random_below(n: u64) -> u64 {
    RandomState::new().hash_one(std::time::Instant::now()) % n.max(1)
}

fn request_items(request: usize) -> Vec<Value> {
    (0..200u32)
        .map(|i| {
            let item = with(
                warehouse(i),
                "/merchant_location_id",
                Some(json!(format!("r{request}-{i}"))),
            );
            // Each request in its own place, so none quarantines another's items.
            with(item, "/longitude", Some(json!(-170.0 + request as f64 * 0.01)))
        })
        .collect()
}

#[tokio::test]
async fn acknowledged_creates_survive_kill_9_and_nothing_is_half_stored() {
    let cycles: usize = std::env::var("STOREFRONT_CRASH_CYCLES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(10);
    let bin = std::env::var("STOREFRONT_CRASH_BIN")
        .map_or_else(|_| PathBuf::from(env!("CARGO_BIN_EXE_storefront")), PathBuf::from);
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("crash.db");
    let url = format!("sqlite://{}", db.display());
    let key = merchant_create(&db, "crash")["api_key"].as_str().unwrap().to_owned();

    let next_request = Arc::new(Mutex::new(0usize));
    let acknowledged: Arc<Mutex<HashMap<usize, Vec<String>>>> = Arc::default();
    let mut in_flight_at_kill = 0;
    for _ in 0..cycles {
        // No rate limit: the clients send as fast as they can, and every refusal would fail the test.
        let mut server = Server::start_binary_with(&bin, &url, &["--rate-limit", "0"]);
        let base = server.base.clone();
        let clients: Vec<_> = (0..CLIENTS)
            .map(|_| {
                let (base, key, next, acked) = (base.clone(), key.clone(), next_request.clone(), acknowledged.clone());
                tokio::spawn(async move {
                    let client = reqwest::Client::new();
                    loop {
                        let n = {
                            let mut next = next.lock().unwrap();
                            *next += 1;
                            *next
                        };
                        let sent = client
                            .post(format!("{base}/v1/location/create"))
                            .bearer_auth(&key)
                            .json(&json!({ "locations": request_items(n) }))
                            .send()
                            .await;
                        let Ok(response) = sent else { return 1 };
                        let status = response.status();
                        let Ok(body) = response.json::<Value>().await else {
                            return 1;
                        };
                        // Only a 200 says the request is stored; anything else is a refusal, and
                        // the server must not refuse these valid requests.
                        assert_eq!(status, 200, "request {n} refused: {body}");
                        let ids = body["locations"]
                            .as_array()
                            .map(|items| {
                                items
                                    .iter()
                                    .map(|r| r["location_id"].as_str().unwrap_or("").to_owned())
                                    .collect()
                            })
                            .unwrap_or_default();
                        acked.lock().unwrap().insert(n, ids);
                    }
                })
            })
            .collect();
        // Kill at a random moment after this cycle's first answer, so every cycle proves something
        // however slow the machine is.
        let before = acknowledged.lock().unwrap().len();
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        while acknowledged.lock().unwrap().len() == before && std::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        tokio::time::sleep(Duration::from_millis(random_below(400))).await;
        server.signal("-KILL");
        let _ = server.child.wait();
        for client in clients {
            in_flight_at_kill += client.await.unwrap();
        }
    }

    let acknowledged = acknowledged.lock().unwrap();
    let sent = *next_request.lock().unwrap();
    let conn = rusqlite::Connection::open(&db).unwrap();
    let integrity: String = conn.query_row("PRAGMA integrity_check", [], |r| r.get(0)).unwrap();
    assert_eq!(integrity, "ok");
    let mut stored: HashMap<usize, Vec<(u32, String)>> = HashMap::new();
    let mut stmt = conn
        .prepare("SELECT merchant_location_id, location_id FROM locations")
        .unwrap();
    for row in stmt
        .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))
        .unwrap()
    {
        let (mlid, id) = row.unwrap();
        let (request, item) = mlid.trim_start_matches('r').split_once('-').unwrap();
        stored
            .entry(request.parse().unwrap())
            .or_default()
            .push((item.parse().unwrap(), id));
    }
    for (request, rows) in &stored {
        assert_eq!(
            rows.len(),
            200,
            "request {request} is stored in part: {} of 200 rows",
            rows.len()
        );
    }
    for (request, ids) in acknowledged.iter() {
        let rows = stored
            .get(request)
            .unwrap_or_else(|| panic!("acknowledged request {request} was lost"));
        let mut rows = rows.clone();
        rows.sort();
        let stored_ids: Vec<&String> = rows.iter().map(|(_, id)| id).collect();
        assert_eq!(
            stored_ids,
            ids.iter().collect::<Vec<_>>(),
            "request {request}: stored ids differ from the answer"
        );
    }
    eprintln!(
        "crash test: {cycles} kill -9 cycles, {sent} requests sent, {} acknowledged and all stored whole, \
         {} stored in all ({} unanswered but committed), {in_flight_at_kill} cut off by a kill, 0 half-stored, integrity ok",
        acknowledged.len(),
        stored.len(),
        stored.len() - acknowledged.len(),
    );
    assert!(
        acknowledged.len() >= cycles,
        "too few requests got through to prove anything"
    );
}

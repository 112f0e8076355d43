//! Buyers' searches from the merchants' indexes in memory: byte for byte what the database's walk
//! answers, through random creates, moves, archives and restores, with both kinds of keys and
//! every page's cursor; exact on an instance that did not make the writes; correct and bounded
//! when the bound holds fewer merchants than are searched; built again when retention dropped events
//! it had not read; no wait for an index at the start; and what `/metrics` says of it all.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use storefront::app::Settings;
use storefront::rate_limit::Rate;
use storefront::search_memory::SearchStats;

use crate::helpers::*;
use crate::search_model::{Rng, random_location, random_question};

const CENTRE: (f64, f64) = (55.75, 37.62);

/// Without rate limits, either key's: the two servers share the merchant's budgets in the
/// database, and a walk of many pages on both spends a storefront key's faster than it refills.
fn settings(search_memory: usize) -> Settings {
    Settings {
        rate: Rate::Off,
        storefront_rate: Rate::Off,
        search_memory,
        ..Settings::default()
    }
}

/// A server whose searches are all made on the database, and one beside it, on the same store,
/// that answers from memory.
async fn pair() -> (TestApp, TestApp) {
    let database = TestApp::spawn_with_settings(settings(0)).await;
    let memory = beside(&database, 64 << 20).await;
    (database, memory)
}

/// A server on `database`'s store that holds indexes within `bound` bytes.
async fn beside(database: &TestApp, bound: usize) -> TestApp {
    let dir = tempfile::tempdir().unwrap();
    TestApp::spawn_configured(std::sync::Arc::clone(&database.store), dir, settings(bound)).await
}

/// The bytes of `key`'s merchant's index once held (with the records its first searches keep),
/// measured on a server beside `database` with room to spare.
async fn index_bytes(database: &TestApp, key: &str) -> usize {
    let probe = beside(database, 64 << 20).await;
    until_held(&probe, key).await;
    stats(&probe).bytes
}

/// A server whose searches are all made on the database, its merchant given `n` random locations
/// within 2 km of the centre.
async fn on_the_database(rng: &mut Rng, n: usize) -> TestApp {
    let database = TestApp::spawn_with_settings(settings(0)).await;
    let items: Vec<Value> = (0..n).map(|i| random_location(rng, i, CENTRE, 2000.0)).collect();
    database.create_as(&database.key, items).await;
    database
}

fn stats(app: &TestApp) -> SearchStats {
    app.state.search.stats()
}

/// Every page of `question` (`limit` a page) from both servers, compared byte for byte; the pages.
async fn same_walk(database: &TestApp, memory: &TestApp, key: &str, question: &Value, limit: u64) -> usize {
    let mut cursor = Value::Null;
    for page in 0..200 {
        let mut body = question.clone();
        body["pagination"] = json!({"limit": limit, "cursor": cursor});
        let (status, expected) = database.post_text_as("/v1/location/search", key, &body).await;
        let (got_status, got) = memory.post_text_as("/v1/location/search", key, &body).await;
        assert_eq!((got_status, &got), (status, &expected), "page {page} of {body}");
        let answer: Value = serde_json::from_str(&expected).unwrap();
        if answer["pagination"]["has_next"] != true {
            return page + 1;
        }
        cursor = answer["pagination"]["next_cursor"].clone();
    }
    panic!("the walk did not end");
}

/// Searches with `key` until one is answered from memory (the index built in the background).
async fn until_held(app: &TestApp, key: &str) {
    let before = stats(app).from_memory;
    let deadline = Instant::now() + Duration::from_secs(20);
    let question = json!({"near": {"latitude": CENTRE.0, "longitude": CENTRE.1}});
    while stats(app).from_memory == before {
        assert!(Instant::now() < deadline, "no index within 20 s: {:?}", stats(app));
        let answer = app.post_as("/v1/location/search", key, &question).await;
        assert_eq!(answer.status, 200, "{:#}", answer.body);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Waits, 20 s at most, until `app`'s search counts are as `done` says (`what`, when they are not).
async fn until_stats(app: &TestApp, what: &str, done: impl Fn(&SearchStats) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !done(&stats(app)) {
        assert!(Instant::now() < deadline, "{what} within 20 s: {:?}", stats(app));
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn change(app: &TestApp, key: &str, action: &str, item: Value) {
    let answer = app
        .post_as(&format!("/v1/location/{action}"), key, &json!({ "locations": [item] }))
        .await;
    assert_eq!(answer.status, 200, "{:#}", answer.body);
}

/// The seeds the comparison below runs with: 58 alone, or `STOREFRONT_TEST_SEEDS=N` of them from
/// `STOREFRONT_TEST_FIRST_SEED` (58 unless set), to hunt for a difference beyond the one CI runs.
fn seeds() -> std::ops::Range<u64> {
    let var = |name: &str| std::env::var(name).ok().and_then(|v| v.parse::<u64>().ok());
    let first = var("STOREFRONT_TEST_FIRST_SEED").unwrap_or(58);
    first..first + var("STOREFRONT_TEST_SEEDS").unwrap_or(1).max(1)
}

#[tokio::test]
async fn answers_from_memory_equal_the_database_s_byte_for_byte_through_random_changes() {
    for seed in seeds() {
        byte_for_byte_through_random_changes(seed).await;
    }
}

async fn byte_for_byte_through_random_changes(seed: u64) {
    // Printed with a failure's output: the seed that reproduces it.
    eprintln!("seed {seed}");
    let (database, memory) = pair().await;
    let key = database.key.clone();
    let (storefront, _) = database.storefront_key().await;
    let mut rng = Rng::new(seed);
    let mut items: Vec<Value> = (0..150).map(|n| random_location(&mut rng, n, CENTRE, 2000.0)).collect();
    database.create_as(&key, items.clone()).await;
    until_held(&memory, &key).await;
    let mut archived = vec![false; items.len()];
    for round in 0..12 {
        // Writes through either server: the other learns of them from the log.
        let writer = if round % 2 == 0 { &database } else { &memory };
        for _ in 0..6 {
            let i = rng.below(items.len() as u64) as usize;
            let id = json!({"merchant_location_id": items[i]["merchant_location_id"].clone()});
            match rng.below(4) {
                0 if !archived[i] => {
                    change(writer, &key, "archive", id).await;
                    archived[i] = true;
                }
                1 if archived[i] => {
                    change(writer, &key, "restore", id).await;
                    archived[i] = false;
                }
                2 if !archived[i] => {
                    let mut moved = items[i].clone();
                    moved["latitude"] = json!(moved["latitude"].as_f64().unwrap() + (rng.unit() - 0.5) * 0.01);
                    moved["is_accepts_returns"] = json!(rng.chance(0.5));
                    change(writer, &key, "update", moved.clone()).await;
                    items[i] = moved;
                }
                _ => {
                    let n = items.len();
                    let item = random_location(&mut rng, n, CENTRE, 2000.0);
                    writer.create_as(&key, vec![item.clone()]).await;
                    items.push(item);
                    archived.push(false);
                }
            }
        }
        for _ in 0..4 {
            let question = random_question(&mut rng, CENTRE);
            let limit = 1 + rng.below(12);
            let key = if rng.chance(0.5) { &key } else { &storefront };
            same_walk(&database, &memory, key, &question, limit).await;
        }
    }
    let served = stats(&memory);
    assert!(served.from_memory > 40, "seed {seed}: {served:?}");
    assert_eq!(stats(&database).merchants, 0, "a bound of 0 holds nothing");
    assert!(stats(&database).from_memory == 0);
}

#[tokio::test]
async fn a_write_on_another_instance_is_found_at_once_by_a_search_from_memory() {
    let writer = TestApp::spawn_with_settings(settings(0)).await;
    let reader = writer.another_instance(settings(64 << 20)).await;
    let key = writer.key.clone();
    writer
        .create_as(&key, vec![with(pickup_point(1), "/latitude", Some(json!(CENTRE.0)))])
        .await;
    until_held(&reader, &key).await;
    let from_memory = stats(&reader).from_memory;
    let item = with(pickup_point(2), "/latitude", Some(json!(CENTRE.0 + 0.0001)));
    let item = with(item, "/longitude", Some(json!(CENTRE.1)));
    writer.create_as(&key, vec![item]).await;
    let question = json!({"near": {"latitude": CENTRE.0, "longitude": CENTRE.1}, "radius_m": 50000});
    let answer = reader.post_as("/v1/location/search", &key, &question).await;
    assert_eq!(answer.status, 200, "{:#}", answer.body);
    let found = result_ids(&answer.body);
    assert!(found.iter().any(|id| id == "pp-2"), "{found:?}");
    assert_eq!(stats(&reader).from_memory, from_memory + 1, "answered from memory");
}

#[tokio::test]
async fn a_search_made_while_others_of_its_key_are_under_way_still_finds_every_write_before_it() {
    let writer = TestApp::spawn_with_settings(settings(0)).await;
    let reader = writer.another_instance(settings(64 << 20)).await;
    let key = writer.key.clone();
    let at = |n: u32| {
        let item = with(
            pickup_point(n),
            "/latitude",
            Some(json!(CENTRE.0 + f64::from(n) * 0.001)),
        );
        with(item, "/longitude", Some(json!(CENTRE.1)))
    };
    writer.create_as(&key, vec![at(1)]).await;
    until_held(&reader, &key).await;
    // Searches of the same key all along, which may share their reads of where the log stands.
    let done = std::sync::atomic::AtomicBool::new(false);
    let busy = futures_util::future::join_all((0..4).map(|_| async {
        let mut searches = 0;
        while !done.load(std::sync::atomic::Ordering::SeqCst) {
            found(&reader, &key).await;
            searches += 1;
        }
        searches
    }));
    let writes = async {
        for n in 2..=8 {
            writer.create_as(&key, vec![at(n)]).await;
            let expected: Vec<String> = (1..=n).map(|n| format!("pp-{n}")).collect();
            assert_eq!(found(&reader, &key).await, expected, "the write just answered is found");
        }
        done.store(true, std::sync::atomic::Ordering::SeqCst);
    };
    let (searches, ()) = tokio::join!(busy, writes);
    assert!(searches.iter().all(|&n| n > 0), "the other searches ran: {searches:?}");
}

/// This instance's searches that read the database, from memory or on it (`/metrics` counts those
/// of every server the tests run in this process).
fn reads(app: &TestApp) -> u64 {
    let stats = stats(app);
    stats.reads_from_memory + stats.from_database
}

/// The `merchant_location_id`s a search with `key` finds within 50 km of the centre.
async fn found(app: &TestApp, key: &str) -> Vec<String> {
    let question = json!({"near": {"latitude": CENTRE.0, "longitude": CENTRE.1}, "radius_m": 50000});
    let answer = app.post_as("/v1/location/search", key, &question).await;
    assert_eq!(answer.status, 200, "{:#}", answer.body);
    result_ids(&answer.body)
}

#[tokio::test]
async fn a_storefront_key_s_search_reads_nothing_while_its_index_is_current_and_still_finds_every_write() {
    let app = TestApp::spawn_with_settings(settings(64 << 20)).await;
    let (storefront, _) = app.storefront_key().await;
    let at = |n: u32, dlat: f64| {
        let item = with(pickup_point(n), "/latitude", Some(json!(CENTRE.0 + dlat)));
        with(item, "/longitude", Some(json!(CENTRE.1)))
    };
    app.create(vec![at(1, 0.0)]).await;
    until_held(&app, &storefront).await;
    // Back to back, the same page: its record is kept, and the index was found current by the
    // search before, so most of them read nothing at all.
    let before = reads(&app);
    for _ in 0..20 {
        assert_eq!(found(&app, &storefront).await, ["pp-1"]);
    }
    let read = reads(&app) - before;
    assert!(read < 20, "every one of 20 searches read the database");
    // A write on this instance is found by the very next search.
    app.create(vec![at(2, 0.001)]).await;
    assert_eq!(found(&app, &storefront).await, ["pp-1", "pp-2"]);
    // A write on another instance: found once its notice comes (PostgreSQL), or once the index's
    // last look at the log is a little old (nothing tells this instance of a SQLite file's other
    // writers).
    let other = app.another_instance(settings(0)).await;
    other.create_as(&app.key, vec![at(3, 0.002)]).await;
    let deadline = Instant::now() + Duration::from_secs(10);
    while found(&app, &storefront).await.len() < 3 {
        assert!(Instant::now() < deadline, "another instance's write not found in 10 s");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(found(&app, &storefront).await, ["pp-1", "pp-2", "pp-3"]);
}

/// A full key's search reads where the merchant's log stands, and only the searches that read the
/// database are counted as reads: on PostgreSQL each of these (its row), on SQLite about one, since
/// a read made at the database's current version still holds and nothing is committed between
/// these back-to-back searches of a kept page.
#[tokio::test]
async fn a_full_key_s_searches_with_nothing_committed_between_them_read_the_database_once() {
    let app = TestApp::spawn_with_settings(settings(64 << 20)).await;
    let item = with(pickup_point(1), "/latitude", Some(json!(CENTRE.0)));
    app.create(vec![with(item, "/longitude", Some(json!(CENTRE.1)))]).await;
    let key = app.key.clone();
    until_held(&app, &key).await;
    let before = reads(&app);
    let from_memory = stats(&app).from_memory;
    for _ in 0..20 {
        assert_eq!(found(&app, &key).await.len(), 1);
    }
    assert_eq!(stats(&app).from_memory - from_memory, 20, "{:?}", stats(&app));
    let read = reads(&app) - before;
    if postgres_admin_url().is_some() {
        assert_eq!(read, 20);
    } else {
        // A commit of the service's own upkeep meanwhile may call for one more look.
        assert!(read <= 3, "{read} of 20 searches counted as reads of the database");
    }
}

/// Writes that the index has not read yet, whose events retention then drops: the log can no
/// longer say what changed, so the merchant's index is dropped and built again from its table.
/// Meanwhile and after, every answer is the database's, the writes found.
#[tokio::test]
async fn an_index_behind_events_that_retention_dropped_is_built_again_and_stays_exact() {
    let (database, memory) = pair().await;
    let key = database.key.clone();
    let mut rng = Rng::new(61);
    let mut items: Vec<Value> = (0..60).map(|n| random_location(&mut rng, n, CENTRE, 2000.0)).collect();
    database.create_as(&key, items.clone()).await;
    until_held(&memory, &key).await;
    let held = stats(&memory);
    assert_eq!((held.merchants, held.builds), (1, 1), "{held:?}");
    // Through the other server: the index reads them at its next search, from the log.
    items[0]["latitude"] = json!(CENTRE.0);
    items[0]["longitude"] = json!(CENTRE.1);
    change(&database, &key, "update", items[0].clone()).await;
    let archived = json!({"merchant_location_id": items[1]["merchant_location_id"].clone()});
    change(&database, &key, "archive", archived).await;
    let added = random_location(&mut rng, items.len(), CENTRE, 2000.0);
    database.create_as(&key, vec![added.clone()]).await;
    // Every event so far is past a retention that ends now.
    while database
        .store
        .prune_events(storefront::store::now_ms() + 1)
        .await
        .unwrap()
        > 0
    {}
    let question = json!({"near": {"latitude": CENTRE.0, "longitude": CENTRE.1}, "radius_m": 3000});
    let from_memory = stats(&memory).from_memory;
    let first = json!({"near": question["near"], "radius_m": 3000, "pagination": {"limit": 7}});
    assert_eq!(
        memory.post_text_as("/v1/location/search", &key, &first).await,
        database.post_text_as("/v1/location/search", &key, &first).await
    );
    let after = stats(&memory);
    assert_eq!(
        after.from_memory, from_memory,
        "answered from an index the log cannot update: {after:?}"
    );
    until_stats(&memory, "not built again", |s| s.builds >= 2).await;
    until_held(&memory, &key).await;
    same_walk(&database, &memory, &key, &question, 7).await;
    let everything = json!({"near": question["near"], "radius_m": 3000, "pagination": {"limit": 100}});
    let (status, found) = memory.post_text_as("/v1/location/search", &key, &everything).await;
    assert_eq!(status, 200, "{found}");
    let found: Value = serde_json::from_str(&found).unwrap();
    let ids: Vec<&str> = found["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["location"]["merchant_location_id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids[0], items[0]["merchant_location_id"],
        "the moved location, now at the centre"
    );
    assert!(
        ids.contains(&added["merchant_location_id"].as_str().unwrap()),
        "{ids:?}"
    );
    assert!(
        !ids.contains(&items[1]["merchant_location_id"].as_str().unwrap()),
        "archived: {ids:?}"
    );
    let held = stats(&memory);
    assert!(held.from_memory > after.from_memory, "{held:?}");
}

#[tokio::test]
async fn a_bound_smaller_than_two_merchants_holds_one_and_both_stay_correct() {
    let database = TestApp::spawn_with_settings(settings(0)).await;
    let other = database.merchant_key("other").await;
    let mut rng = Rng::new(7);
    let mine: Vec<Value> = (0..400).map(|n| random_location(&mut rng, n, CENTRE, 3000.0)).collect();
    let theirs: Vec<Value> = (0..400).map(|n| random_location(&mut rng, n, CENTRE, 3000.0)).collect();
    for chunk in mine.chunks(200) {
        database.create_as(&database.key, chunk.to_vec()).await;
    }
    for chunk in theirs.chunks(200) {
        database.create_as(&other, chunk.to_vec()).await;
    }
    // Room for one merchant's index (measured), not for two.
    let bound = index_bytes(&database, &database.key).await * 3 / 2;
    let memory = beside(&database, bound).await;
    until_held(&memory, &database.key).await;
    assert_eq!(stats(&memory).merchants, 1);
    for round in 0..6 {
        let key = if round % 2 == 0 { &other } else { &database.key };
        until_held(&memory, key).await;
        let held = stats(&memory);
        assert!(held.bytes <= bound, "{held:?}");
        assert_eq!(held.merchants, 1, "{held:?}");
        let question = random_question(&mut rng, CENTRE);
        same_walk(&database, &memory, key, &question, 10).await;
    }
    assert!(
        stats(&memory).builds >= 6,
        "rebuilt after each eviction: {:?}",
        stats(&memory)
    );
}

/// A few searches of each of other merchants (a crawler going through every shop), with no room
/// beside the index of a merchant searched often: their locations are counted and not read, that
/// merchant's index stays, and their next searches read nothing either. Searched more than the held merchant
/// lately, one of them is given the room. Every answer is the database's.
#[tokio::test]
async fn a_few_searches_of_each_of_other_merchants_do_not_drop_an_index_searched_often() {
    let mut rng = Rng::new(23);
    let database = TestApp::spawn_with_settings(settings(0)).await;
    let mut keys = vec![database.key.clone()];
    for n in 0..3 {
        keys.push(database.merchant_key(&format!("crawled-{n}")).await);
    }
    for key in &keys {
        let items: Vec<Value> = (0..400).map(|i| random_location(&mut rng, i, CENTRE, 3000.0)).collect();
        for chunk in items.chunks(200) {
            database.create_as(key, chunk.to_vec()).await;
        }
    }
    let crawled = &keys[1..];
    // Room for one merchant's index, and a quarter of it beside.
    let bound = index_bytes(&database, &database.key).await * 5 / 4;
    let memory = beside(&database, bound).await;
    until_held(&memory, &database.key).await;
    for _ in 0..60 {
        found(&memory, &database.key).await;
    }
    let builds = stats(&memory).builds;
    let question = random_question(&mut rng, CENTRE);
    for key in crawled {
        same_walk(&database, &memory, key, &question, 50).await;
    }
    until_stats(&memory, "no three builds refused room", |s| s.no_room >= 3).await;
    let from_memory = stats(&memory).from_memory;
    found(&memory, &database.key).await;
    let held = stats(&memory);
    assert_eq!((held.merchants, held.from_memory), (1, from_memory + 1), "{held:?}");
    for key in crawled {
        tokio::time::sleep(Duration::from_millis(300)).await;
        same_walk(&database, &memory, key, &question, 50).await;
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    let after = stats(&memory);
    assert_eq!(
        (after.builds, after.no_room),
        (builds, 3),
        "none of theirs read: {after:?}"
    );
    until_held(&memory, &crawled[0]).await;
    assert_eq!(stats(&memory).merchants, 1, "{:?}", stats(&memory));
    same_walk(&database, &memory, &crawled[0], &question, 10).await;
}

#[tokio::test]
async fn a_merchant_with_more_locations_than_the_bound_can_hold_is_never_read_into_memory() {
    let mut rng = Rng::new(11);
    let database = on_the_database(&mut rng, 150).await;
    // Room for 100 locations' entries at the least an entry takes: fewer than the merchant has.
    let bound = 100 * storefront::domain::location::search::memory::MemoryIndex::LEAST_BYTES_AN_ENTRY;
    let memory = beside(&database, bound).await;
    let question = random_question(&mut rng, CENTRE);
    same_walk(&database, &memory, &database.key, &question, 10).await;
    until_stats(&memory, "not found too large", |s| s.too_large > 0).await;
    // Found so by the count alone: no index was built of its entries.
    let after = stats(&memory);
    assert_eq!(
        (after.too_large, after.builds, after.merchants, after.bytes),
        (1, 0, 0, 0),
        "{after:?}"
    );
    // Its searches stay on the database, correct, and ask for no index again meanwhile.
    same_walk(&database, &memory, &database.key, &question, 10).await;
    let later = stats(&memory);
    assert_eq!((later.too_large, later.from_memory), (1, 0), "{later:?}");
    assert!(later.from_database > after.from_database, "{later:?}");
}

#[tokio::test]
async fn the_first_search_after_a_start_is_answered_without_waiting_for_an_index() {
    let mut rng = Rng::new(3);
    let database = on_the_database(&mut rng, 200).await;
    let memory = beside(&database, 64 << 20).await;
    assert_eq!(stats(&memory), SearchStats::default(), "nothing built at the start");
    let question = json!({"near": {"latitude": CENTRE.0, "longitude": CENTRE.1}, "pagination": {"limit": 20}});
    let (status, expected) = database
        .post_text_as("/v1/location/search", &database.key, &question)
        .await;
    assert_eq!(status, 200, "{expected}");
    let (_, got) = memory
        .post_text_as("/v1/location/search", &database.key, &question)
        .await;
    assert_eq!(got, expected);
    let first = stats(&memory);
    assert_eq!((first.from_database, first.from_memory), (1, 0), "{first:?}");
}

/// What an operator reads on `/metrics`, from a process of its own (the recorder is the
/// process's): where each search was served, the index's builds, its merchants and its bytes.
#[tokio::test]
async fn metrics_show_the_index_and_where_each_search_was_served() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("metrics.db");
    let key = merchant_create(&db, "metrics")["api_key"].as_str().unwrap().to_owned();
    let server = Server::start(&db);
    let mut rng = Rng::new(5);
    let items: Vec<Value> = (0..100).map(|n| random_location(&mut rng, n, CENTRE, 2000.0)).collect();
    create(&server.base, &key, &items).await;
    let client = reqwest::Client::new();
    let question = json!({"near": {"latitude": CENTRE.0, "longitude": CENTRE.1}, "radius_m": 3000});
    let deadline = Instant::now() + Duration::from_secs(20);
    let (searches, text) = loop {
        assert!(Instant::now() < deadline, "no search served from memory within 20 s");
        let answer = client
            .post(format!("{}/v1/location/search", server.base))
            .bearer_auth(&key)
            .json(&question)
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), 200);
        let text = metrics_text(&server.base).await;
        let searches = (
            metric_in(&text, r#"searches_total{served="database"}"#).unwrap_or(0.0),
            metric_in(&text, r#"searches_total{served="memory"}"#).unwrap_or(0.0),
        );
        if searches.1 > 0.0 {
            break (searches, text);
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert!(searches.0 >= 1.0, "the first search, on the database: {text}");
    assert_eq!(metric_in(&text, "search_memory_builds_total"), Some(1.0), "{text}");
    assert_eq!(metric_in(&text, "search_memory_merchants"), Some(1.0), "{text}");
    let bytes = metric_in(&text, "search_memory_bytes").unwrap_or(0.0);
    // A hundred locations' entries, and the records its searches kept.
    assert!((8_000.0..8_000_000.0).contains(&bytes), "{bytes} bytes: {text}");
}

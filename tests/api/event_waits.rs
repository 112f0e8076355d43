//! Waiting on the event feed (CONTRACT §18.2 `wait_s`): answered by the next commit, holding no
//! place in flight, 16 waiters a merchant; and several writers and readers at once (through two
//! instances on PostgreSQL), every reader seeing every sequence once, in order.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use storefront::app::Settings;
use storefront::rate_limit::Rate;

use crate::helpers::*;

const EVENTS: &str = "/v1/location/events";

/// `wait_s`: a request whose page is empty is answered with the next event once it is committed;
/// waiting requests hold no place among the requests in flight; a merchant's 17th waiter is
/// answered at once.
#[tokio::test]
async fn a_waiting_feed_is_answered_by_the_next_commit_and_holds_no_place_in_flight() {
    let app = Arc::new(
        TestApp::spawn_with_settings(Settings {
            rate: Rate::Off,
            max_in_flight: 4,
            ..Settings::default()
        })
        .await,
    );
    let cursor = app.feed(&json!({"start": "latest"})).await.body["pagination"]["next_cursor"].clone();
    let mut waiters = Vec::new();
    for _ in 0..16 {
        let app = Arc::clone(&app);
        let cursor = cursor.clone();
        waiters.push(tokio::spawn(async move {
            loop {
                let answer = app
                    .feed(&json!({"pagination": {"limit": 10, "cursor": cursor}, "wait_s": 25}))
                    .await;
                // More than 4 arriving at once: retried, as a client does after a 429.
                if answer.status != 429 {
                    return answer;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }));
    }
    let key_id = app.key.strip_prefix("sf_").unwrap().split_once('_').unwrap().0;
    let merchant_pk = app.store.find_key(key_id).await.unwrap().unwrap().merchant.pk;
    // With 4 in flight at most, 16 wait at once only if a waiting request holds no place.
    tokio::time::timeout(Duration::from_secs(20), async {
        while app.state.events.waiting(merchant_pk) < 16 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("16 requests wait at once beside a limit of 4 in flight");
    // The 17th is answered at once, with no event.
    let extra = tokio::time::timeout(
        Duration::from_secs(10),
        app.feed(&json!({"pagination": {"limit": 10, "cursor": cursor}, "wait_s": 25})),
    )
    .await
    .expect("the 17th waiter of a merchant is answered at once");
    assert_eq!(extra.status, 200);
    assert_eq!(extra.body["events"], json!([]));
    // 16 waiters and a limit of 4 in flight: a create still gets through.
    let created = app.create(vec![warehouse(9)]).await;
    let id = created[0]["location_id"].clone();
    for waiter in waiters {
        let answer = waiter.await.unwrap();
        assert_eq!(answer.status, 200, "{:#}", answer.body);
        let events = answer.body["events"].as_array().unwrap();
        assert_eq!(events.len(), 1, "{:#}", answer.body);
        assert_eq!(events[0]["location_id"], id);
        assert_eq!(events[0]["type"], "location.created");
    }
    // A filter that matches nothing new waits out its time and answers its own cursor.
    let filtered = app
        .feed(&json!({"filter": {"types": ["location.approved"]}, "start": "latest", "wait_s": 1}))
        .await;
    assert_eq!(filtered.body["events"], json!([]));
}

/// Several writers of one merchant (through two instances on PostgreSQL) while readers wait on
/// the feed: every reader sees every sequence once, in order.
#[tokio::test]
async fn concurrent_writers_and_waiting_readers_see_every_sequence_once_in_order() {
    let first = TestApp::spawn().await;
    let mut apps = vec![first];
    if postgres_admin_url().is_some() {
        let store = open_store(apps[0].db_url()).await;
        let settings = Settings {
            rate: Rate::Off,
            ..Settings::default()
        };
        apps.push(TestApp::spawn_configured(store, tempfile::tempdir().unwrap(), settings).await);
    }
    let apps = Arc::new(apps);
    let key = apps[0].key.clone();
    const WRITERS: u32 = 4;
    const CREATES: u32 = 12;
    const TOTAL: usize = (WRITERS * CREATES * 2) as usize;
    let mut readers = Vec::new();
    for r in 0..4 {
        let apps = Arc::clone(&apps);
        let key = key.clone();
        readers.push(tokio::spawn(async move {
            let app = &apps[r % apps.len()];
            let mut seen: Vec<i64> = Vec::new();
            let mut cursor: Option<String> = None;
            while seen.len() < TOTAL {
                let answer = app
                    .post_as(
                        EVENTS,
                        &key,
                        &json!({"pagination": {"limit": 5, "cursor": cursor}, "wait_s": 5}),
                    )
                    .await;
                assert_eq!(answer.status, 200, "{:#}", answer.body);
                seen.extend(
                    answer.body["events"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|e| e["sequence"].as_i64().unwrap()),
                );
                cursor = Some(answer.body["pagination"]["next_cursor"].as_str().unwrap().to_owned());
            }
            seen
        }));
    }
    let mut writers = Vec::new();
    for w in 0..WRITERS {
        let apps = Arc::clone(&apps);
        let key = key.clone();
        writers.push(tokio::spawn(async move {
            for c in 0..CREATES {
                let app = &apps[(w + c) as usize % apps.len()];
                let n = 1000 + w * 100 + c * 2;
                let results = app.create_as(&key, vec![warehouse(n), warehouse(n + 1)]).await;
                assert!(results.iter().all(|r| r["status"] != "FAILED"), "{results:#?}");
            }
        }));
    }
    for writer in writers {
        writer.await.unwrap();
    }
    for reader in readers {
        let seen = tokio::time::timeout(Duration::from_secs(120), reader)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(seen, (1..=TOTAL as i64).collect::<Vec<_>>());
    }
}

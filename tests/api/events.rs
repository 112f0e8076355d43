//! Events (CONTRACT §18.1, §18.2): the log against the changes that made it, the feed's request
//! rules, its cursors and retention. Waiting for the next event and several writers and readers at
//! once: `event_waits.rs`.

use std::collections::{BTreeMap, HashSet};

use serde_json::{Value, json};

use crate::helpers::*;

const EVENTS: &str = "/v1/location/events";

impl TestApp {
    /// `POST /v1/location/events` with this app's key.
    pub async fn feed(&self, body: &Value) -> Answer {
        self.post(EVENTS, body).await
    }

    /// Every event from the oldest kept, following the cursors by pages of `limit`; and the
    /// cursor after the last.
    async fn all_events(&self, filter: &Value, limit: usize) -> (Vec<Value>, String) {
        let mut events = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let answer = self
                .feed(&json!({"filter": filter, "pagination": {"limit": limit, "cursor": cursor}}))
                .await;
            assert_eq!(answer.status, 200, "{:#}", answer.body);
            let page = answer.body["events"].as_array().unwrap();
            assert!(page.len() <= limit);
            events.extend(page.iter().cloned());
            let next = answer.body["pagination"]["next_cursor"].as_str().unwrap().to_owned();
            if !answer.body["pagination"]["has_next"].as_bool().unwrap() {
                return (events, next);
            }
            cursor = Some(next);
        }
    }
}

/// Metres north as degrees of latitude (on the service's sphere).
fn north(metres: f64) -> f64 {
    metres / 111_195.08
}

/// A warehouse named `mlid` at slot `slot`: slots are 30 m apart on one meridian, so neighbouring
/// slots are within the 50 m of the quarantine rule and slots two apart are not.
fn at_slot(mlid: &str, slot: u32, name: &str) -> Value {
    let mut item = warehouse(0);
    item["merchant_location_id"] = json!(mlid);
    item["name"] = json!(name);
    item["latitude"] = json!(40.0 + north(f64::from(slot) * 30.0));
    item
}

#[tokio::test]
async fn the_feed_s_request_rules_have_their_codes_and_fields() {
    let app = TestApp::spawn().await;
    let bad = [
        (json!({"filter": {"types": []}}), "INVALID_FILTER", "filter.types"),
        (
            json!({"filter": {"types": ["location.moved"]}}),
            "INVALID_FILTER",
            "filter.types",
        ),
        (
            json!({"filter": {"types": "location.created"}}),
            "INVALID_FILTER",
            "filter.types",
        ),
        (json!({"filter": {"types": [1]}}), "INVALID_FILTER", "filter.types"),
        (
            json!({"filter": {"status": "ACTIVE"}}),
            "INVALID_FILTER",
            "filter.status",
        ),
        (json!({"filter": 5}), "INVALID_REQUEST", "filter"),
        (
            json!({"pagination": {"limit": 0}}),
            "INVALID_PAGINATION",
            "pagination.limit",
        ),
        (
            json!({"pagination": {"limit": 1.5}}),
            "INVALID_PAGINATION",
            "pagination.limit",
        ),
        (
            json!({"pagination": {"limit": 5, "cursor": 7}}),
            "INVALID_CURSOR",
            "pagination.cursor",
        ),
        (
            json!({"pagination": {"limit": 5, "cursor": "not-a-cursor"}}),
            "INVALID_CURSOR",
            "pagination.cursor",
        ),
        (json!({"start": "first"}), "INVALID_REQUEST", "start"),
        (json!({"start": 1}), "INVALID_REQUEST", "start"),
        (json!({"wait_s": 26}), "INVALID_REQUEST", "wait_s"),
        (json!({"wait_s": -1}), "INVALID_REQUEST", "wait_s"),
        (json!({"wait_s": 2.5}), "INVALID_REQUEST", "wait_s"),
        (json!({"wait_s": "5"}), "INVALID_REQUEST", "wait_s"),
        (json!({"since": 0}), "INVALID_REQUEST", "since"),
        (json!([]), "INVALID_REQUEST", ""),
    ];
    for (body, code, field) in bad {
        let answer = app.feed(&body).await;
        let details = assert_error(&answer, 400, "ERROR_TYPE_BAD_REQUEST", code);
        assert_eq!(details["field"], field, "{body}: {:#}", answer.body);
    }
    // `start` beside a cursor.
    let cursor = app.feed(&json!({})).await.body["pagination"]["next_cursor"].clone();
    let answer = app
        .feed(&json!({"start": "oldest", "pagination": {"limit": 5, "cursor": cursor}}))
        .await;
    assert_eq!(
        assert_error(&answer, 400, "ERROR_TYPE_BAD_REQUEST", "INVALID_REQUEST")["field"],
        "start"
    );

    // A cursor is bound to its filter, its merchant and its kind of list.
    let filtered = |types: Value| json!({"filter": {"types": types}, "pagination": {"limit": 5, "cursor": cursor}});
    let answer = app.feed(&filtered(json!(["location.created"]))).await;
    assert_eq!(
        assert_error(&answer, 400, "ERROR_TYPE_BAD_REQUEST", "INVALID_CURSOR")["field"],
        "pagination.cursor"
    );
    assert_eq!(app.feed(&filtered(Value::Null)).await.status, 200, "null is every type");
    let other = app.merchant_key("other").await;
    let answer = app
        .post_as(EVENTS, &other, &json!({"pagination": {"limit": 5, "cursor": cursor}}))
        .await;
    assert_error(&answer, 400, "ERROR_TYPE_BAD_REQUEST", "INVALID_CURSOR");
    app.create(vec![warehouse(1), warehouse(2)]).await;
    let list_cursor =
        app.list_locations(&json!({"pagination": {"limit": 1}})).await.body["pagination"]["next_cursor"].clone();
    let answer = app
        .feed(&json!({"pagination": {"limit": 5, "cursor": list_cursor}}))
        .await;
    assert_error(&answer, 400, "ERROR_TYPE_BAD_REQUEST", "INVALID_CURSOR");

    // A storefront key may not read the feed.
    let (storefront, _) = app.storefront_key().await;
    let answer = app.post_as(EVENTS, &storefront, &json!({})).await;
    assert_error(&answer, 403, "ERROR_TYPE_UNAUTHORIZED", "FORBIDDEN");

    // A repeated type counts once; a limit above 1000 is served as 1000; an empty body is `{}`.
    let answer = app
        .feed(&json!({"filter": {"types": ["location.created", "location.created"]}, "pagination": {"limit": 5000}}))
        .await;
    assert_eq!(answer.status, 200, "{:#}", answer.body);
    assert_eq!(answer.body["events"].as_array().unwrap().len(), 2);
    let (status, text) = app.post_text(EVENTS, &Value::Null).await;
    assert_eq!(status, 400, "a JSON null body is not an object: {text}");
}

/// What the test expects one request to have appended: `(location_id, type, version, status,
/// previous_status, updated_at)` of each location whose version it set, in location order.
type Expected = Vec<(String, String, i64, String, Value, String)>;

/// The merchant's locations as the list answers them: id → (version, status, updated_at).
async fn snapshot(app: &TestApp) -> BTreeMap<String, (i64, String, String)> {
    let records = app.walk_locations(&app.key, &json!({}), 1000).await;
    records
        .iter()
        .map(|r| {
            (
                r["location_id"].as_str().unwrap().to_owned(),
                (
                    r["version"].as_i64().unwrap(),
                    r["status"].as_str().unwrap().to_owned(),
                    r["updated_at"].as_str().unwrap().to_owned(),
                ),
            )
        })
        .collect()
}

/// The events a request should have appended, from the records before and after it and the
/// locations its items changed (`named`, with the request's event type).
fn expected(
    before: &BTreeMap<String, (i64, String, String)>,
    after: &BTreeMap<String, (i64, String, String)>,
    named: &HashSet<String>,
    kind: &str,
) -> Expected {
    let mut out = Vec::new();
    for (id, (version, status, updated)) in after {
        match before.get(id) {
            None => out.push((
                id.clone(),
                "location.created".to_owned(),
                *version,
                status.clone(),
                Value::Null,
                updated.clone(),
            )),
            Some((was, previous, _)) if was != version => {
                assert_eq!(*version, was + 1, "one request sets a version once");
                let kind = if named.contains(id) { kind } else { "location.redecided" };
                out.push((
                    id.clone(),
                    kind.to_owned(),
                    *version,
                    status.clone(),
                    json!(previous),
                    updated.clone(),
                ));
            }
            Some(_) => {}
        }
    }
    out
}

/// A small deterministic generator (xorshift), so that a failure can be run again.
struct Dice(u64);

impl Dice {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// The log against the changes: a random run of creates (new, retried, conflicting, invalid),
/// updates (renames, moves that decide others again, no-ops, `validate_only`), archives, restores
/// and an operator's approvals. Read from the start, the feed holds exactly the events a model
/// computes from the answers: one per location whose version a request set, of the right type,
/// version, statuses and time, the events of one request consecutive, sequences 1..n.
#[tokio::test]
async fn the_feed_read_from_the_start_is_the_model_of_the_changes_answered() {
    let app = TestApp::spawn().await;
    let mut dice = Dice(0x9e37_79b9_7f4a_7c15);
    // mlid → (slot, name) as last sent and stored.
    let mut content: BTreeMap<String, (u32, String)> = BTreeMap::new();
    let mut steps: Vec<Expected> = Vec::new();
    let mut before = snapshot(&app).await;
    for _ in 0..60 {
        let mut named = HashSet::new();
        let mut kind = "location.created";
        match dice.below(7) {
            // Create 1–3: new ones, a retry of a stored one, a conflict, an invalid item.
            0 | 1 => {
                let mut items = Vec::new();
                for _ in 0..=dice.below(3) {
                    let mlid = format!("m{}", dice.below(14));
                    let stored = content.get(&mlid).cloned();
                    items.push(match (stored, dice.below(4)) {
                        (Some((slot, name)), 0) => at_slot(&mlid, slot, &name),
                        (Some((slot, _)), 1) => at_slot(&mlid, slot, "conflicting content"),
                        (_, 2) => with(at_slot(&mlid, 0, "bad"), "/latitude", Some(json!(91))),
                        (None, _) => {
                            let slot = u32::try_from(dice.below(10)).unwrap();
                            at_slot(&mlid, slot, &format!("Warehouse {mlid}"))
                        }
                        (Some((slot, name)), _) => at_slot(&mlid, slot, &name),
                    });
                }
                let results = app.create(items.clone()).await;
                for (item, result) in items.iter().zip(&results) {
                    let mlid = item["merchant_location_id"].as_str().unwrap().to_owned();
                    if result["status"] != "FAILED" && !content.contains_key(&mlid) {
                        let slot = (item["latitude"].as_f64().unwrap() - 40.0) / north(30.0);
                        content.insert(mlid, (slot.round() as u32, item["name"].as_str().unwrap().to_owned()));
                    }
                }
            }
            // Update one: a rename, a move, the same content (a no-op), or validate_only.
            2 | 3 if !content.is_empty() => {
                kind = "location.updated";
                let keys: Vec<String> = content.keys().cloned().collect();
                let mlid = keys[usize::try_from(dice.below(keys.len() as u64)).unwrap()].clone();
                let (slot, name) = content[&mlid].clone();
                let how = dice.below(4);
                let (new_slot, new_name) = match how {
                    0 => (slot, format!("{name}+")),
                    1 => (u32::try_from(dice.below(10)).unwrap(), name.clone()),
                    _ => (slot, name.clone()),
                };
                let validate_only = how == 3;
                let item = at_slot(&mlid, new_slot, if validate_only { "not kept" } else { &new_name });
                let answer = app
                    .post(
                        "/v1/location/update",
                        &json!({"locations": [item], "validate_only": validate_only}),
                    )
                    .await;
                assert_eq!(answer.status, 200, "{:#}", answer.body);
                let result = &answer.body["locations"][0];
                if result["status"] != "FAILED" && !validate_only {
                    content.insert(mlid, (new_slot, new_name));
                    named.insert(result["location_id"].as_str().unwrap().to_owned());
                }
            }
            // Archive or restore one (maybe already so: a no-op).
            4 | 5 if !content.is_empty() => {
                let path = if dice.below(2) == 0 { "archive" } else { "restore" };
                kind = if path == "archive" {
                    "location.archived"
                } else {
                    "location.restored"
                };
                let keys: Vec<String> = content.keys().cloned().collect();
                let mlid = &keys[usize::try_from(dice.below(keys.len() as u64)).unwrap()];
                let answer = app
                    .post(
                        &format!("/v1/location/{path}"),
                        &json!({"locations": [{"merchant_location_id": mlid}]}),
                    )
                    .await;
                assert_eq!(answer.status, 200, "{:#}", answer.body);
                let result = &answer.body["locations"][0];
                if result["status"] != "FAILED" {
                    named.insert(result["location_id"].as_str().unwrap().to_owned());
                }
            }
            // An operator approves a quarantined location.
            _ => {
                kind = "location.approved";
                let quarantined = app.store.quarantined_locations().await.unwrap();
                if let Some(q) = quarantined.first() {
                    app.store.approve_location(&q.location_id).await.unwrap();
                    named.insert(q.location_id.clone());
                }
            }
        }
        let after = snapshot(&app).await;
        steps.push(expected(&before, &after, &named, kind));
        before = after;
    }
    let kinds: HashSet<&str> = steps.iter().flatten().map(|e| e.1.as_str()).collect();
    for kind in [
        "location.created",
        "location.updated",
        "location.archived",
        "location.restored",
        "location.redecided",
    ] {
        assert!(kinds.contains(kind), "the run made no {kind}: {kinds:?}");
    }

    let (events, _) = app.all_events(&Value::Null, 7).await;
    let sequences: Vec<i64> = events.iter().map(|e| e["sequence"].as_i64().unwrap()).collect();
    assert_eq!(
        sequences,
        (1..=events.len() as i64).collect::<Vec<_>>(),
        "sequences 1..n without a gap"
    );
    let mut rest = events.as_slice();
    for (step, expect) in steps.iter().enumerate() {
        let (these, later) = rest.split_at(expect.len().min(rest.len()));
        rest = later;
        let mut got: Expected = these
            .iter()
            .map(|e| {
                (
                    e["location_id"].as_str().unwrap().to_owned(),
                    e["type"].as_str().unwrap().to_owned(),
                    e["version"].as_i64().unwrap(),
                    e["status"].as_str().unwrap().to_owned(),
                    e["previous_status"].clone(),
                    e["occurred_at"].as_str().unwrap().to_owned(),
                )
            })
            .collect();
        got.sort_by(|a, b| a.0.cmp(&b.0));
        assert_eq!(&got, expect, "step {step}");
    }
    assert!(rest.is_empty(), "events no request made: {rest:#?}");
    // Every event has the keys of §18.1, in that order.
    #[derive(serde::Deserialize)]
    struct Page<'a> {
        #[serde(borrow)]
        events: Vec<&'a serde_json::value::RawValue>,
    }
    let (_, text) = app.post_text(EVENTS, &json!({"pagination": {"limit": 1000}})).await;
    let page: Page = serde_json::from_str(&text).unwrap();
    assert_eq!(page.events.len(), events.len());
    for event in page.events {
        assert_eq!(keys_in_order(event.get()), EVENT_KEYS);
    }
    let ids: HashSet<&str> = events.iter().map(|e| e["event_id"].as_str().unwrap()).collect();
    assert_eq!(ids.len(), events.len(), "event ids are unique");

    // Read again, and by type: the same events, the same bytes.
    let (again, _) = app.all_events(&Value::Null, 1000).await;
    assert_eq!(again, events);
    let types = json!(["location.archived", "location.redecided"]);
    let (filtered, _) = app.all_events(&json!({ "types": types }), 3).await;
    let wanted: Vec<Value> = events
        .iter()
        .filter(|e| e["type"] == "location.archived" || e["type"] == "location.redecided")
        .cloned()
        .collect();
    assert_eq!(filtered, wanted);
}

#[tokio::test]
async fn cursors_continue_from_where_they_point_and_start_latest_reads_only_what_comes_next() {
    let app = TestApp::spawn().await;
    // An empty log: no event, a cursor that reads what comes next.
    let empty = app.feed(&json!({})).await;
    assert_eq!(empty.status, 200);
    assert_eq!(empty.body["events"], json!([]));
    assert_eq!(empty.body["pagination"]["has_next"], false);
    let from_empty = empty.body["pagination"]["next_cursor"].as_str().unwrap().to_owned();
    assert!(from_empty.len() <= 512);

    app.create(vec![warehouse(1), warehouse(2), warehouse(3)]).await;
    let latest = app.feed(&json!({"start": "latest"})).await;
    assert_eq!(latest.body["events"], json!([]));
    assert_eq!(latest.body["pagination"]["has_next"], false);
    let at_end = latest.body["pagination"]["next_cursor"].clone();

    let page = app
        .feed(&json!({"pagination": {"limit": 2, "cursor": from_empty}}))
        .await;
    assert_eq!(page.body["events"].as_array().unwrap().len(), 2);
    assert_eq!(page.body["pagination"]["has_next"], true);
    assert_eq!(page.body["events"][0]["sequence"], 1);

    app.post(
        "/v1/location/archive",
        &json!({"locations": [{"merchant_location_id": "wh-2"}]}),
    )
    .await;
    let next = app.feed(&json!({"pagination": {"limit": 10, "cursor": at_end}})).await;
    let events = next.body["events"].as_array().unwrap();
    assert_eq!(events.len(), 1, "{:#}", next.body);
    assert_eq!(events[0]["type"], "location.archived");
    assert_eq!(events[0]["sequence"], 4);
    assert_eq!(events[0]["previous_status"], "ACTIVE");
    assert_eq!(events[0]["status"], "ARCHIVED");
    // A page with no event answers the cursor it was given.
    let cursor = next.body["pagination"]["next_cursor"].clone();
    let none = app.feed(&json!({"pagination": {"limit": 10, "cursor": cursor}})).await;
    assert_eq!(none.body["events"], json!([]));
    assert_eq!(none.body["pagination"]["next_cursor"], cursor);
}

/// Retention: a cursor pointing before the oldest event kept is `CURSOR_EXPIRED`; `start` then
/// gives a cursor from which nothing is missed.
#[tokio::test]
async fn a_cursor_before_the_oldest_event_kept_is_expired() {
    let app = TestApp::spawn().await;
    let first = app.feed(&json!({})).await.body["pagination"]["next_cursor"].clone();
    app.create(vec![warehouse(1), warehouse(2)]).await;
    // Every event so far is past a retention that ends now.
    while app.store.prune_events(storefront::store::now_ms() + 1).await.unwrap() > 0 {}
    let answer = app.feed(&json!({"pagination": {"limit": 10, "cursor": first}})).await;
    let details = assert_error(&answer, 400, "ERROR_TYPE_BAD_REQUEST", "CURSOR_EXPIRED");
    assert_eq!(details["field"], "pagination.cursor");
    let oldest = app.feed(&json!({"start": "oldest"})).await;
    assert_eq!(oldest.body["events"], json!([]), "nothing is kept");
    let latest = app.feed(&json!({"start": "latest"})).await;
    let cursor = latest.body["pagination"]["next_cursor"].clone();
    assert_eq!(
        oldest.body["pagination"]["next_cursor"], cursor,
        "both begin at the end of the log"
    );
    app.create(vec![warehouse(3)]).await;
    let next = app.feed(&json!({"pagination": {"limit": 10, "cursor": cursor}})).await;
    assert_eq!(next.status, 200, "{:#}", next.body);
    assert_eq!(next.body["events"][0]["sequence"], 3, "sequences go on after a prune");
}

//! Property: whatever JSON the items are, create answers 200 with one result per item, in order,
//! and an item is created exactly when it has no errors (or only its quarantine notice).

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use serde_json::{Map, Value, json};

use crate::helpers::*;

fn arbitrary_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        (-1e6f64..1e6).prop_map(|n| json!(n)),
        "[a-zA-Z0-9 :,\\-_]{0,12}".prop_map(Value::String),
        prop_oneof![
            Just("WAREHOUSE"),
            Just("PICKUP_POINT"),
            Just("MONDAY"),
            Just("09:00"),
            Just("CASH"),
            Just("")
        ]
        .prop_map(|s| Value::String(s.to_owned())),
    ];
    leaf.prop_recursive(3, 24, 5, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::vec(("[a-z_]{1,10}", inner), 0..5)
                .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

use storefront::domain::location::validate::KEYS as FIELDS;

/// A valid fixture with some fields replaced by arbitrary JSON or removed, or arbitrary JSON.
fn item() -> impl Strategy<Value = Value> {
    let mutated = (
        0u32..4,
        0u32..50,
        prop::collection::vec((0..FIELDS.len(), prop::option::of(arbitrary_json())), 0..3),
    )
        .prop_map(|(kind, n, changes)| {
            let mut item = match kind {
                0 => warehouse(n),
                1 => pickup_point(n),
                2 => postamat(n),
                _ => click_and_collect(n),
            };
            for (field, value) in changes {
                item = with(item, &format!("/{}", FIELDS[field]), value);
            }
            item
        });
    prop_oneof![3 => mutated, 1 => arbitrary_json()]
}

#[test]
fn any_items_get_one_consistent_result_each() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let app = runtime.block_on(TestApp::spawn());
    let mut runner = TestRunner::new(Config {
        cases: 48,
        failure_persistence: None,
        ..Config::default()
    });
    runner
        .run(&prop::collection::vec(item(), 0..12), |items| {
            // Each case as a merchant of its own: nothing an earlier case stored is a retry or a
            // neighbour here, so "created exactly when it has no errors" stays exact.
            let key = runtime.block_on(app.merchant_key("case"));
            let body = json!({ "locations": items });
            let answer = runtime.block_on(app.post_as("/v1/location/create", &key, &body));
            prop_assert_eq!(answer.status.as_u16(), 200, "{:#}", answer.body);
            let results = answer.body["locations"].as_array().unwrap();
            prop_assert_eq!(results.len(), items.len());
            for (item, result) in items.iter().zip(results) {
                let id = result["location_id"].as_str().unwrap();
                let errors = result["errors"].as_array().unwrap();
                let status = result["status"].as_str().unwrap();
                let expected_name = item.get("name").and_then(Value::as_str).unwrap_or("");
                prop_assert_eq!(result["name"].as_str().unwrap(), expected_name);
                match status {
                    "ACTIVE" => prop_assert!(!id.is_empty() && errors.is_empty(), "{result:#}"),
                    "QUARANTINE" => {
                        prop_assert!(!id.is_empty());
                        prop_assert_eq!(errors.len(), 1);
                        prop_assert_eq!(&errors[0]["code"], "STOREFRONT_RULE_VIOLATION");
                    }
                    "FAILED" => prop_assert!(id.is_empty() && !errors.is_empty(), "{result:#}"),
                    other => prop_assert!(false, "unexpected status {other}"),
                }
                for e in errors {
                    let field = e["field"].as_str().unwrap();
                    prop_assert!(field.starts_with("locations["), "{field}");
                    prop_assert!(e["message"].as_str().is_some_and(|m| !m.is_empty()));
                }
            }
            Ok(())
        })
        .unwrap();
}

/// A location as the create answers reported it: the independent model of what a list returns.
#[derive(Clone, Debug)]
struct Known {
    merchant: usize,
    location_id: String,
    merchant_location_id: String,
    status: String,
    types: Vec<String>,
}

/// One of the four fixtures, at one of a few points, under one of a few merchant ids: twins
/// (quarantine), retries and conflicts all happen.
fn located_item() -> impl Strategy<Value = Value> {
    (0u32..4, 0u32..3, 0u32..3).prop_map(|(kind, n, suffix)| {
        let mut item = match kind {
            0 => warehouse(n),
            1 => pickup_point(n),
            2 => postamat(n),
            _ => click_and_collect(n),
        };
        let id = format!("{}-{suffix}", item["merchant_location_id"].as_str().unwrap());
        item["merchant_location_id"] = json!(id);
        item
    })
}

#[derive(Clone, Debug)]
struct Walk {
    merchant: usize,
    status: Option<&'static str>,
    types: Option<Vec<&'static str>>,
    /// Picks of known locations (indexes modulo their count) for `location_ids`.
    by_id: Option<Vec<usize>>,
    by_merchant_id: Option<Vec<usize>>,
    limit: usize,
}

fn walk() -> impl Strategy<Value = Walk> {
    let picks = prop::option::weighted(0.25, prop::collection::vec(0usize..64, 0..5));
    (
        0usize..2,
        prop::option::of(prop::sample::select(vec!["ACTIVE", "QUARANTINE", "ARCHIVED"])),
        prop::option::weighted(
            0.4,
            prop::sample::subsequence(vec!["WAREHOUSE", "PICKUP_POINT", "CLICK_AND_COLLECT"], 1..=2),
        ),
        picks.clone(),
        picks,
        1usize..6,
    )
        .prop_map(|(merchant, status, types, by_id, by_merchant_id, limit)| Walk {
            merchant,
            status,
            types,
            by_id,
            by_merchant_id,
            limit,
        })
}

#[test]
fn walks_return_exactly_the_matching_locations_in_creation_order() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let app = runtime.block_on(TestApp::spawn());
    let mut runner = TestRunner::new(Config {
        cases: 24,
        failure_persistence: None,
        ..Config::default()
    });
    let batches = prop::collection::vec((0usize..2, prop::collection::vec(located_item(), 1..6)), 1..6);
    runner
        .run(&(batches, prop::collection::vec(walk(), 1..4)), |(batches, walks)| {
            // Two fresh merchants per case.
            let keys = [
                runtime.block_on(app.merchant_key("a")),
                runtime.block_on(app.merchant_key("b")),
            ];
            let mut known: Vec<Known> = Vec::new();
            let record = |merchant: usize, items: &[Value], results: &[Value], known: &mut Vec<Known>| {
                for (item, result) in items.iter().zip(results) {
                    let id = result["location_id"].as_str().unwrap();
                    if id.is_empty() || known.iter().any(|k| k.location_id == id) {
                        continue;
                    }
                    known.push(Known {
                        merchant,
                        location_id: id.to_owned(),
                        merchant_location_id: item["merchant_location_id"].as_str().unwrap().to_owned(),
                        status: result["status"].as_str().unwrap().to_owned(),
                        types: item["location_types"]
                            .as_array()
                            .unwrap()
                            .iter()
                            .map(|t| t.as_str().unwrap().to_owned())
                            .collect(),
                    });
                }
            };
            for (merchant, items) in &batches {
                let results = runtime.block_on(app.create_as(&keys[*merchant], items.clone()));
                record(*merchant, items, &results, &mut known);
            }
            for (n, w) in walks.iter().enumerate() {
                let pick = |picks: &Option<Vec<usize>>, field: fn(&Known) -> String| {
                    picks.as_ref().map(|p| {
                        let mut ids: Vec<String> = p
                            .iter()
                            .filter(|_| !known.is_empty())
                            .map(|i| field(&known[i % known.len()]))
                            .collect();
                        ids.push("unknown".to_owned());
                        ids
                    })
                };
                let location_ids = pick(&w.by_id, |k| k.location_id.clone());
                let merchant_location_ids = pick(&w.by_merchant_id, |k| k.merchant_location_id.clone());
                let filter = json!({
                    "status": w.status,
                    "location_types": w.types,
                    "location_ids": location_ids,
                    "merchant_location_ids": merchant_location_ids,
                });
                let key = &keys[w.merchant];
                // The first page, then a location created during the walk, then the rest.
                let first = runtime.block_on(app.post_as(
                    "/v1/location/list",
                    key,
                    &json!({"filter": filter, "pagination": {"limit": w.limit}}),
                ));
                prop_assert_eq!(first.status.as_u16(), 200, "{:#}", first.body);
                let mut walked: Vec<String> = first.body["locations"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|r| r["location_id"].as_str().unwrap().to_owned())
                    .collect();
                let late = vec![with(
                    warehouse(90 + n as u32),
                    "/merchant_location_id",
                    Some(json!(format!("late-{n}"))),
                )];
                let mut cursor = first.body["pagination"]["next_cursor"].clone();
                if !cursor.is_null() {
                    // A walk that has not ended yet.
                    let results = runtime.block_on(app.create_as(key, late.clone()));
                    record(w.merchant, &late, &results, &mut known);
                }
                while !cursor.is_null() {
                    let page = runtime.block_on(app.post_as(
                        "/v1/location/list",
                        key,
                        &json!({"filter": filter, "pagination": {"limit": w.limit, "cursor": cursor}}),
                    ));
                    prop_assert_eq!(page.status.as_u16(), 200, "{:#}", page.body);
                    walked.extend(
                        page.body["locations"]
                            .as_array()
                            .unwrap()
                            .iter()
                            .map(|r| r["location_id"].as_str().unwrap().to_owned()),
                    );
                    cursor = page.body["pagination"]["next_cursor"].clone();
                }
                let expected: Vec<String> = known
                    .iter()
                    .filter(|k| k.merchant == w.merchant)
                    .filter(|k| w.status.is_none_or(|s| k.status == s))
                    .filter(|k| {
                        w.types
                            .as_ref()
                            .is_none_or(|t| k.types.iter().any(|x| t.contains(&x.as_str())))
                    })
                    .filter(|k| location_ids.as_ref().is_none_or(|ids| ids.contains(&k.location_id)))
                    .filter(|k| {
                        merchant_location_ids
                            .as_ref()
                            .is_none_or(|ids| ids.contains(&k.merchant_location_id))
                    })
                    .map(|k| k.location_id.clone())
                    .collect();
                prop_assert_eq!(&walked, &expected, "filter {} limit {}", filter, w.limit);
            }
            Ok(())
        })
        .unwrap();
}

/// One step of a change sequence: `(kind, slot, position, variant)`.
#[derive(Clone, Debug)]
enum Step {
    Create { slot: u8, spot: u8, pickup: bool },
    Update { slot: u8, spot: u8, variant: u8 },
    Archive { slot: u8 },
    Restore { slot: u8 },
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        (0u8..6, 0u8..6, any::<bool>()).prop_map(|(slot, spot, pickup)| Step::Create { slot, spot, pickup }),
        (0u8..6, 0u8..6, 0u8..3).prop_map(|(slot, spot, variant)| Step::Update { slot, spot, variant }),
        (0u8..6).prop_map(|slot| Step::Archive { slot }),
        (0u8..6).prop_map(|slot| Step::Restore { slot }),
    ]
}

/// The location of slot `slot` at spot `spot` (spots 20 m apart in a line: neighbours abound).
fn placed(slot: u8, spot: u8, pickup: bool, variant: u8) -> Value {
    let mut item = if pickup { pickup_point(0) } else { warehouse(0) };
    item["merchant_location_id"] = json!(format!("s{slot}"));
    item["name"] = json!(format!("Slot {slot} v{variant}"));
    item["latitude"] = json!(40.0 + f64::from(spot) * 20.0 / 111_195.08);
    item["longitude"] = json!(37.6);
    item
}

fn haversine_m(lat1: f64, lon1: f64, lat2: f64, lon2: f64) -> f64 {
    let r = 6_371_008.8_f64;
    let (p1, p2) = (lat1.to_radians(), lat2.to_radians());
    let (dp, dl) = ((lat2 - lat1).to_radians(), (lon2 - lon1).to_radians());
    let a = (dp / 2.0).sin().powi(2) + p1.cos() * p2.cos() * (dl / 2.0).sin().powi(2);
    2.0 * r * a.sqrt().min(1.0).asin()
}

#[test]
fn changes_keep_every_quarantine_justified_and_count_every_change() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let app = runtime.block_on(TestApp::spawn());
    let mut runner = TestRunner::new(Config {
        cases: 16,
        failure_persistence: None,
        ..Config::default()
    });
    runner
        .run(&prop::collection::vec(step(), 1..24), |steps| {
            let key = runtime.block_on(app.merchant_key("steps"));
            let mut kinds: std::collections::HashMap<u8, bool> = std::collections::HashMap::new();
            let read_all = || -> Vec<Value> {
                let answer =
                    runtime.block_on(app.post_as("/v1/location/list", &key, &json!({"pagination": {"limit": 1000}})));
                answer.body["locations"].as_array().unwrap().clone()
            };
            let mut before: Vec<Value> = Vec::new();
            for step in &steps {
                let (path, item) = match *step {
                    Step::Create { slot, spot, pickup } => {
                        let pickup = *kinds.entry(slot).or_insert(pickup);
                        ("/v1/location/create", placed(slot, spot, pickup, 0))
                    }
                    Step::Update { slot, spot, variant } => {
                        let pickup = kinds.get(&slot).copied().unwrap_or(false);
                        ("/v1/location/update", placed(slot, spot, pickup, variant))
                    }
                    Step::Archive { slot } => (
                        "/v1/location/archive",
                        json!({"merchant_location_id": format!("s{slot}")}),
                    ),
                    Step::Restore { slot } => (
                        "/v1/location/restore",
                        json!({"merchant_location_id": format!("s{slot}")}),
                    ),
                };
                let answer = runtime.block_on(app.post_as(path, &key, &json!({"locations": [item]})));
                prop_assert_eq!(answer.status.as_u16(), 200, "{:#}", answer.body);
                let after = read_all();
                // Every location the request changed is exactly one version higher; the others
                // are as they were.
                for record in &after {
                    let id = &record["location_id"];
                    let strip = |r: &Value| {
                        let mut r = r.clone();
                        r.as_object_mut().unwrap().remove("version");
                        r.as_object_mut().unwrap().remove("updated_at");
                        r
                    };
                    match before.iter().find(|b| &b["location_id"] == id) {
                        None => prop_assert_eq!(&record["version"], &json!(1)),
                        Some(old) => {
                            let changed = strip(old) != strip(record);
                            let want = old["version"].as_i64().unwrap() + i64::from(changed);
                            prop_assert_eq!(
                                record["version"].as_i64().unwrap(),
                                want,
                                "{:?}: {:#} -> {:#}",
                                step,
                                old,
                                record
                            );
                            prop_assert_eq!(changed, old["updated_at"] != record["updated_at"]);
                        }
                    }
                }
                // Every QUARANTINE is justified by §10.4: its issue names a live location that
                // shares a type, within 50 m, ACTIVE or QUARANTINE and created before it.
                for (i, record) in after.iter().enumerate() {
                    match record["status"].as_str().unwrap() {
                        "QUARANTINE" => {
                            let message = record["issue"]["message"].as_str().unwrap_or_default();
                            let named = message
                                .split("location ")
                                .nth(1)
                                .and_then(|r| r.split(' ').next())
                                .unwrap_or("");
                            let Some(j) = after.iter().position(|r| r["location_id"] == named) else {
                                prop_assert!(false, "{record:#} names no location of the merchant");
                                unreachable!();
                            };
                            let n = &after[j];
                            let shares = n["location_types"]
                                .as_array()
                                .unwrap()
                                .iter()
                                .any(|t| record["location_types"].as_array().unwrap().contains(t));
                            let d = haversine_m(
                                record["latitude"].as_f64().unwrap(),
                                record["longitude"].as_f64().unwrap(),
                                n["latitude"].as_f64().unwrap(),
                                n["longitude"].as_f64().unwrap(),
                            );
                            let may = n["status"] == "ACTIVE" || (n["status"] == "QUARANTINE" && j < i);
                            prop_assert!(
                                shares && d <= 50.0 && may,
                                "after {:?}: {:#} named by {:#} ({} m)",
                                step,
                                n,
                                record,
                                d
                            );
                            prop_assert_eq!(&record["issue"]["field"], "latitude");
                        }
                        _ => prop_assert_eq!(&record["issue"], &Value::Null),
                    }
                }
                before = after;
            }
            Ok(())
        })
        .unwrap();
}

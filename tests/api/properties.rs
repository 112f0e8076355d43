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

//! `POST /v1/categories/list` (CONTRACT §5.2–5.3): filters, order, cursors, totals, bad input.

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use serde_json::{Value, json};
use std::cmp::Ordering;

use crate::helpers::*;

fn category(id: &str, parent: Option<&str>, sort: Option<i64>, leaf: bool, status: &str) -> Value {
    json!({
        "id": id, "name": format!("Name {id}"), "slug": format!("slug-{}", id.len()), "parent_id": parent, "leaf": leaf,
        "sort_order": sort, "status": status
    })
}

/// roots r1, r2 (r2 disabled); r1 > a (leaf), b (leaf, disabled), m; m > x (leaf); r2 > y (leaf).
fn small() -> Value {
    json!([
        category("r2", None, Some(2), false, "disabled"),
        category("r1", None, Some(1), false, "active"),
        category("a", Some("r1"), Some(3), true, "active"),
        category("b", Some("r1"), Some(3), true, "disabled"),
        category("m", Some("r1"), None, false, "active"),
        category("x", Some("m"), Some(1), true, "active"),
        category("y", Some("r2"), None, true, "disabled"),
    ])
}

fn ids(answer: &Answer) -> Vec<String> {
    answer.body["categories"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap().to_owned())
        .collect()
}

async fn small_app() -> TestApp {
    let app = TestApp::spawn().await;
    app.import_categories(&small()).await;
    app
}

#[tokio::test]
async fn the_whole_list_in_order_with_every_field() {
    let app = small_app().await;
    let answer = app.list(&json!({})).await;
    assert_eq!(answer.status, 200, "{:#}", answer.body);
    assert_eq!(answer.headers["content-type"], "application/json");
    // sort_order ascending, nulls last, then id by bytes.
    assert_eq!(ids(&answer), ["r1", "x", "r2", "a", "b", "m", "y"]);
    assert_eq!(
        answer.body["pagination"],
        json!({"next_cursor": null, "has_next": false, "total": 7})
    );
    assert_eq!(
        answer.body["categories"][1],
        json!({"id": "x", "name": "Name x", "slug": "slug-1", "parent_id": "m", "leaf": true, "sort_order": 1,
               "icon_url": null, "description": null, "is_service": null, "is_digital": null, "status": "active"})
    );
    assert!(answer.body["categories"][0].get("children").is_none());
    // An empty body, a null filter and a null pagination mean the same.
    for body in [
        json!({"filter": null}),
        json!({"filter": {}, "pagination": null}),
        json!({"filter": {"leaf_only": false, "status": null, "parent_id": null, "ids": null}}),
    ] {
        assert_eq!(app.list(&body).await.body, answer.body, "{body}");
    }
    let empty = read(
        app.request(reqwest::Method::POST, "/v1/categories/list")
            .bearer_auth(&app.key),
    )
    .await;
    assert_eq!(empty.body, answer.body);
}

#[tokio::test]
async fn each_filter_alone_and_combined() {
    let app = small_app().await;
    let cases = [
        (json!({"status": "active"}), vec!["r1", "x", "a", "m"]),
        (json!({"status": "disabled"}), vec!["r2", "b", "y"]),
        (json!({"leaf_only": true}), vec!["x", "a", "b", "y"]),
        (json!({"parent_id": ""}), vec!["r1", "r2"]),
        (json!({"parent_id": "r1"}), vec!["a", "b", "m"]),
        (json!({"parent_id": "x"}), vec![]),
        (json!({"parent_id": "nope"}), vec![]),
        (json!({"ids": ["y", "a", "nope", "a"]}), vec!["a", "y"]),
        (json!({"ids": []}), vec![]),
        (json!({"ids": ["a", "x"], "parent_id": "r2"}), vec!["x", "a"]),
        (json!({"parent_id": "r1", "leaf_only": true}), vec!["a", "b"]),
        (
            json!({"parent_id": "r1", "leaf_only": true, "status": "active"}),
            vec!["a"],
        ),
        (json!({"parent_id": "", "status": "disabled"}), vec!["r2"]),
        (json!({"status": "disabled", "leaf_only": true}), vec!["b", "y"]),
        (
            json!({"ids": ["r1", "r2", "b", "y"], "status": "disabled", "leaf_only": true}),
            vec!["b", "y"],
        ),
    ];
    for (filter, want) in cases {
        let answer = app.list(&json!({ "filter": filter })).await;
        assert_eq!(answer.status, 200, "{:#}", answer.body);
        assert_eq!(ids(&answer), want, "{filter}");
        assert_eq!(answer.body["pagination"]["total"], want.len(), "{filter}");
    }
}

#[tokio::test]
async fn pages_follow_cursors_to_the_end() {
    let app = small_app().await;
    let mut seen = Vec::new();
    let mut cursor = Value::Null;
    loop {
        let answer = app.list(&json!({"pagination": {"limit": 2, "cursor": cursor}})).await;
        assert_eq!(answer.status, 200, "{:#}", answer.body);
        assert_eq!(answer.body["pagination"]["total"], 7);
        seen.extend(ids(&answer));
        let p = &answer.body["pagination"];
        if p["has_next"] == false {
            assert_eq!(p["next_cursor"], Value::Null);
            break;
        }
        cursor = p["next_cursor"].clone();
        assert!(cursor.as_str().unwrap().len() <= 512);
    }
    assert_eq!(seen, ["r1", "x", "r2", "a", "b", "m", "y"]);
    // The limit may change between pages; 5.0 is 5; an empty cursor is the first page.
    let first = app.list(&json!({"pagination": {"limit": 3, "cursor": ""}})).await;
    let next = first.body["pagination"]["next_cursor"].clone();
    let rest = app.list(&json!({"pagination": {"limit": 5.0, "cursor": next}})).await;
    assert_eq!(ids(&rest), ["a", "b", "m", "y"]);
    assert_eq!(rest.body["pagination"]["has_next"], false);
    // has_next is exact: a page that ends exactly at the end says so.
    let exact = app.list(&json!({"pagination": {"limit": 7}})).await;
    assert_eq!(exact.body["pagination"]["has_next"], false);
}

#[tokio::test]
async fn limits_default_to_100_and_cap_at_1000() {
    let app = TestApp::spawn().await;
    let many: Vec<Value> = (0..1100)
        .map(|i| category(&format!("c{i:05}"), None, Some(i), true, "active"))
        .collect();
    app.import_categories(&Value::Array(many)).await;
    let default = app.list(&json!({})).await;
    assert_eq!(default.body["categories"].as_array().unwrap().len(), 100);
    assert_eq!(default.body["pagination"]["total"], 1100);
    let capped = app.list(&json!({"pagination": {"limit": 5000}})).await;
    assert_eq!(capped.body["categories"].as_array().unwrap().len(), 1000);
    assert_eq!(capped.body["pagination"]["has_next"], true);
    let rest = app
        .list(&json!({"pagination": {"limit": 1000, "cursor": capped.body["pagination"]["next_cursor"]}}))
        .await;
    assert_eq!(rest.body["categories"].as_array().unwrap().len(), 100);
    assert_eq!(rest.body["categories"][0]["id"], "c01000");
}

#[tokio::test]
async fn bad_filters_pagination_and_cursors() {
    let app = small_app().await;
    let cases: Vec<(Value, &str, &str)> = vec![
        (json!([]), "INVALID_REQUEST", ""),
        (json!({"page": 1}), "INVALID_REQUEST", "page"),
        (json!({"filter": "active"}), "INVALID_REQUEST", "filter"),
        (json!({"filter": []}), "INVALID_REQUEST", "filter"),
        (json!({"pagination": 10}), "INVALID_REQUEST", "pagination"),
        (json!({"filter": {"state": "active"}}), "INVALID_FILTER", "filter.state"),
        (json!({"filter": {"state": null}}), "INVALID_FILTER", "filter.state"),
        (
            json!({"filter": {"status": "ACTIVE"}}),
            "INVALID_FILTER",
            "filter.status",
        ),
        (json!({"filter": {"status": ""}}), "INVALID_FILTER", "filter.status"),
        (json!({"filter": {"status": 1}}), "INVALID_FILTER", "filter.status"),
        (
            json!({"filter": {"leaf_only": "true"}}),
            "INVALID_FILTER",
            "filter.leaf_only",
        ),
        (
            json!({"filter": {"parent_id": 5}}),
            "INVALID_FILTER",
            "filter.parent_id",
        ),
        (json!({"filter": {"ids": "a"}}), "INVALID_FILTER", "filter.ids"),
        (json!({"filter": {"ids": ["a", 1]}}), "INVALID_FILTER", "filter.ids"),
        (json!({"pagination": {}}), "INVALID_PAGINATION", "pagination.limit"),
        (
            json!({"pagination": {"cursor": null}}),
            "INVALID_PAGINATION",
            "pagination.limit",
        ),
        (
            json!({"pagination": {"limit": null}}),
            "INVALID_PAGINATION",
            "pagination.limit",
        ),
        (
            json!({"pagination": {"limit": 0}}),
            "INVALID_PAGINATION",
            "pagination.limit",
        ),
        (
            json!({"pagination": {"limit": -3}}),
            "INVALID_PAGINATION",
            "pagination.limit",
        ),
        (
            json!({"pagination": {"limit": 2.5}}),
            "INVALID_PAGINATION",
            "pagination.limit",
        ),
        (
            json!({"pagination": {"limit": "10"}}),
            "INVALID_PAGINATION",
            "pagination.limit",
        ),
        (
            json!({"pagination": {"limit": 10, "offset": 5}}),
            "INVALID_PAGINATION",
            "pagination.offset",
        ),
        (
            json!({"pagination": {"limit": 10, "cursor": 5}}),
            "INVALID_CURSOR",
            "pagination.cursor",
        ),
        (
            json!({"pagination": {"limit": 10, "cursor": "not-a-cursor"}}),
            "INVALID_CURSOR",
            "pagination.cursor",
        ),
        (
            json!({"pagination": {"limit": 10, "cursor": "A".repeat(600)}}),
            "INVALID_CURSOR",
            "pagination.cursor",
        ),
    ];
    for (body, code, field) in cases {
        let answer = app.list(&body).await;
        let details = assert_error(&answer, 400, "ERROR_TYPE_BAD_REQUEST", code);
        assert_eq!(details, json!({"field": field}), "{body}");
    }
    let many: Vec<String> = (0..1001).map(|i| i.to_string()).collect();
    let answer = app.list(&json!({"filter": {"ids": many}})).await;
    let details = assert_error(&answer, 400, "ERROR_TYPE_BAD_REQUEST", "TOO_MANY_ITEMS");
    assert_eq!(details, json!({"field": "filter.ids", "max": 1000, "actual": 1001}));

    // Cursors: tampered, truncated, from another filter, from another database.
    let first = app
        .list(&json!({"filter": {"status": "active"}, "pagination": {"limit": 1}}))
        .await;
    let cursor = first.body["pagination"]["next_cursor"].as_str().unwrap().to_owned();
    let page = |filter: Value, cursor: String| json!({"filter": filter, "pagination": {"limit": 1, "cursor": cursor}});
    let mut tampered = cursor.clone().into_bytes();
    let middle = tampered.len() / 2;
    tampered[middle] = if tampered[middle] == b'x' { b'y' } else { b'x' };
    let other = TestApp::spawn().await;
    other.import_categories(&small()).await;
    let foreign = other
        .list(&json!({"filter": {"status": "active"}, "pagination": {"limit": 1}}))
        .await;
    let foreign = foreign.body["pagination"]["next_cursor"].as_str().unwrap().to_owned();
    for body in [
        page(json!({"status": "active"}), String::from_utf8(tampered).unwrap()),
        page(json!({"status": "active"}), cursor[..cursor.len() - 3].to_owned()),
        page(json!({"status": "disabled"}), cursor.clone()),
        page(json!({}), cursor.clone()),
        page(json!({"status": "active", "leaf_only": true}), cursor.clone()),
        page(json!({"status": "active"}), foreign),
    ] {
        let answer = app.list(&body).await;
        let details = assert_error(&answer, 400, "ERROR_TYPE_BAD_REQUEST", "INVALID_CURSOR");
        assert_eq!(details, json!({"field": "pagination.cursor"}));
    }
    // Filters that mean the same accept each other's cursors.
    let ok = app
        .list(&page(json!({"status": "active", "leaf_only": false}), cursor.clone()))
        .await;
    assert_eq!(ok.status, 200);
    let by_ids = app
        .list(&json!({"filter": {"ids": ["a", "x", "r1"]}, "pagination": {"limit": 1}}))
        .await;
    let c = by_ids.body["pagination"]["next_cursor"].as_str().unwrap().to_owned();
    let same = app
        .list(&page(json!({"ids": ["x", "r1", "a", "x"], "parent_id": "m"}), c))
        .await;
    assert_eq!(same.status, 200, "{:#}", same.body);
    assert_eq!(ids(&same), ["x"]);
}

#[tokio::test]
async fn authentication_is_required() {
    let app = small_app().await;
    let answer = read(
        app.request(reqwest::Method::POST, "/v1/categories/list")
            .json(&json!({})),
    )
    .await;
    assert_error(&answer, 401, "ERROR_TYPE_UNAUTHORIZED", "UNAUTHENTICATED");
    let answer = read(app.request(reqwest::Method::GET, "/v1/categories/list")).await;
    assert_error(&answer, 405, "ERROR_TYPE_UNSPECIFIED", "METHOD_NOT_ALLOWED");
}

#[tokio::test]
async fn a_cursor_survives_a_restart() {
    let app = small_app().await;
    let first = app.list(&json!({"pagination": {"limit": 3}})).await;
    let cursor = first.body["pagination"]["next_cursor"].clone();
    // A second server over the same database: the secret is the database's.
    let store = open_store(app.db_url()).await;
    let restarted = TestApp::spawn_with(store, tempfile::tempdir().unwrap()).await;
    let rest = restarted
        .list(&json!({"pagination": {"limit": 10, "cursor": cursor}}))
        .await;
    assert_eq!(rest.status, 200, "{:#}", rest.body);
    assert_eq!(ids(&rest), ["a", "b", "m", "y"]);
}

#[tokio::test]
async fn an_import_during_a_walk_never_repeats_an_unchanged_category() {
    let app = small_app().await;
    let first = app.list(&json!({"pagination": {"limit": 3}})).await;
    assert_eq!(ids(&first), ["r1", "x", "r2"]);
    // Meanwhile: a new category sorts before the cursor, one after it, and one is removed.
    let mut changed = small().as_array().unwrap().clone();
    changed.retain(|c| c["id"] != "b");
    changed.push(category("early", Some("r1"), Some(0), true, "active"));
    changed.push(category("late", Some("r1"), Some(4), true, "active"));
    app.import_categories(&Value::Array(changed)).await;
    let rest = app
        .list(&json!({"pagination": {"limit": 10, "cursor": first.body["pagination"]["next_cursor"]}}))
        .await;
    assert_eq!(ids(&rest), ["a", "late", "m", "y"]);
    assert_eq!(rest.body["pagination"]["total"], 8);
}

// ---- property: walking the cursors yields exactly the filtered, ordered list ------------------

#[derive(Clone, Debug)]
struct Cat {
    id: String,
    parent: Option<usize>,
    sort: Option<i64>,
    leaf: bool,
    active: bool,
}

fn taxonomy() -> impl Strategy<Value = Vec<Cat>> {
    let prefixes = ["a", "B", "ж", "z", "0", "a_"];
    prop::collection::vec(
        (
            0usize..6,
            prop::option::of(0i64..4),
            any::<bool>(),
            any::<bool>(),
            any::<prop::sample::Index>(),
        ),
        1..40,
    )
    .prop_map(move |rows| {
        let mut cats: Vec<Cat> = Vec::new();
        for (n, (prefix, sort, leafish, active, parent)) in rows.into_iter().enumerate() {
            let parent = if n == 0 || parent.index(3) == 0 {
                None
            } else {
                Some(parent.index(n))
            };
            cats.push(Cat {
                id: format!("{}{n}", prefixes[prefix]),
                parent,
                sort,
                leaf: leafish,
                active,
            });
        }
        let has_children: Vec<bool> = (0..cats.len())
            .map(|i| cats.iter().any(|c| c.parent == Some(i)))
            .collect();
        for (cat, children) in cats.iter_mut().zip(has_children) {
            cat.leaf = cat.leaf && !children;
        }
        cats
    })
}

#[derive(Clone, Debug)]
struct Query {
    status: Option<bool>,
    leaf_only: bool,
    parent: Option<Option<usize>>,
    ids: Option<Vec<usize>>,
    limits: Vec<usize>,
}

fn query() -> impl Strategy<Value = Query> {
    (
        prop::option::of(any::<bool>()),
        any::<bool>(),
        prop::option::of(prop::option::of(0usize..50)),
        prop::option::of(prop::collection::vec(0usize..50, 0..10)),
        prop::collection::vec(1usize..6, 1..4),
    )
        .prop_map(|(status, leaf_only, parent, ids, limits)| Query {
            status,
            leaf_only,
            parent,
            ids,
            limits,
        })
}

fn expected(cats: &[Cat], q: &Query) -> Vec<String> {
    let mut out: Vec<&Cat> = cats
        .iter()
        .filter(|c| q.status.is_none_or(|active| c.active == active))
        .filter(|c| !q.leaf_only || c.leaf)
        .filter(|c| match (&q.ids, &q.parent) {
            (Some(ids), _) => ids.iter().any(|&i| cats.get(i).is_some_and(|x| x.id == c.id)),
            (None, Some(None)) => c.parent.is_none(),
            (None, Some(Some(p))) => c.parent == Some(*p),
            (None, None) => true,
        })
        .collect();
    out.sort_by(|a, b| {
        match (a.sort, b.sort) {
            (Some(x), Some(y)) => x.cmp(&y),
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (None, None) => Ordering::Equal,
        }
        .then_with(|| a.id.as_bytes().cmp(b.id.as_bytes()))
    });
    out.into_iter().map(|c| c.id.clone()).collect()
}

fn to_json(cats: &[Cat]) -> Value {
    Value::Array(
        cats.iter()
            .enumerate()
            .map(|(n, c)| {
                json!({"id": c.id, "name": c.id, "slug": format!("s{n}"), "parent_id": c.parent.map(|p| cats[p].id.clone()),
                       "leaf": c.leaf, "sort_order": c.sort, "status": if c.active { "active" } else { "disabled" }})
            })
            .collect(),
    )
}

fn filter_json(cats: &[Cat], q: &Query) -> Value {
    let id_of = |i: usize| cats.get(i).map_or_else(|| format!("missing{i}"), |c| c.id.clone());
    json!({
        "status": q.status.map(|a| if a { "active" } else { "disabled" }),
        "leaf_only": q.leaf_only,
        "parent_id": q.parent.map(|p| p.map_or_else(String::new, id_of)),
        "ids": q.ids.as_ref().map(|ids| ids.iter().map(|&i| id_of(i)).collect::<Vec<_>>()),
    })
}

#[test]
fn walking_cursors_yields_exactly_the_filtered_ordered_list() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let app = runtime.block_on(TestApp::spawn());
    let mut runner = TestRunner::new(Config {
        cases: 40,
        failure_persistence: None,
        ..Config::default()
    });
    runner
        .run(
            &(taxonomy(), prop::collection::vec(query(), 1..6)),
            |(cats, queries)| {
                runtime.block_on(app.import_categories(&to_json(&cats)));
                for q in queries {
                    let want = expected(&cats, &q);
                    let filter = filter_json(&cats, &q);
                    let mut got = Vec::new();
                    let mut cursor = Value::Null;
                    for page in 0.. {
                        let limit = q.limits[page % q.limits.len()];
                        let body = json!({"filter": filter, "pagination": {"limit": limit, "cursor": cursor}});
                        let answer = runtime.block_on(app.list(&body));
                        prop_assert_eq!(answer.status.as_u16(), 200, "{:#}", answer.body);
                        let p = &answer.body["pagination"];
                        prop_assert_eq!(p["total"].as_u64(), Some(want.len() as u64));
                        let items = ids(&answer);
                        prop_assert!(items.len() <= limit);
                        got.extend(items);
                        prop_assert_eq!(p["has_next"].as_bool(), Some(got.len() < want.len()), "has_next exact");
                        if p["has_next"] == false {
                            prop_assert!(p["next_cursor"].is_null());
                            break;
                        }
                        cursor = p["next_cursor"].clone();
                    }
                    prop_assert_eq!(&got, &want, "filter {}", filter);
                }
                Ok(())
            },
        )
        .unwrap();
}

//! POST /v1/location/update, /archive, /restore (CONTRACT §10): naming, versions, the update-only
//! rules, archive and restore, the status decision of §10.4 and its re-decisions, isolation, and
//! the field rules of create run through update.

use serde_json::{Value, json};

use crate::create_cases;
use crate::helpers::*;

pub(crate) const UPDATE: &str = "/v1/location/update";
pub(crate) const ARCHIVE: &str = "/v1/location/archive";
pub(crate) const RESTORE: &str = "/v1/location/restore";

/// Metres north as degrees of latitude (on the service's sphere).
pub(crate) fn north(metres: f64) -> f64 {
    metres / 111_195.08
}

/// A valid warehouse named `mlid` at latitude 40 + `metres` north, longitude 37.6.
pub(crate) fn wh(mlid: &str, metres: f64) -> Value {
    let mut item = warehouse(0);
    item["merchant_location_id"] = json!(mlid);
    item["name"] = json!(format!("Warehouse {mlid}"));
    item["latitude"] = json!(40.0 + north(metres));
    item
}

impl TestApp {
    /// POSTs `{"locations": items}` to a change endpoint; expects 200 and returns the results.
    pub(crate) async fn change(&self, path: &str, items: Vec<Value>) -> Vec<Value> {
        self.change_as(&self.key, path, items).await
    }

    pub(crate) async fn change_as(&self, key: &str, path: &str, items: Vec<Value>) -> Vec<Value> {
        let answer = self.post_as(path, key, &json!({ "locations": items })).await;
        assert_eq!(answer.status, 200, "{:#}", answer.body);
        answer.body["locations"].as_array().unwrap().clone()
    }

    /// The stored record of the location with this merchant_location_id.
    pub(crate) async fn record(&self, mlid: &str) -> Value {
        self.record_as(&self.key, mlid).await
    }

    pub(crate) async fn record_as(&self, key: &str, mlid: &str) -> Value {
        let answer = self
            .post_as(
                "/v1/location/list",
                key,
                &json!({"filter": {"merchant_location_ids": [mlid]}}),
            )
            .await;
        assert_eq!(answer.status, 200, "{:#}", answer.body);
        answer.body["locations"][0].clone()
    }

    /// Creates the items; returns their location ids (all must be created).
    pub(crate) async fn created(&self, items: Vec<Value>) -> Vec<String> {
        self.create(items)
            .await
            .iter()
            .map(|r| {
                let id = r["location_id"].as_str().unwrap();
                assert!(!id.is_empty(), "{r:#}");
                id.to_owned()
            })
            .collect()
    }
}

pub(crate) fn one_error(result: &Value) -> (String, String) {
    let errors = field_codes(result);
    assert_eq!(errors.len(), 1, "{result:#}");
    errors[0].clone()
}

pub(crate) fn failed(result: &Value, field: &str, code: &str) {
    assert_eq!(result["status"], "FAILED", "{result:#}");
    assert_eq!(result["version"], Value::Null, "{result:#}");
    assert_eq!(one_error(result), (field.to_owned(), code.to_owned()), "{result:#}");
}

#[tokio::test]
async fn every_way_of_naming_a_location() {
    let app = TestApp::spawn().await;
    let ids = app.created(vec![wh("a", 0.0), wh("b", 1000.0)]).await;
    let (a, b) = (&ids[0], &ids[1]);
    let other = app.merchant_key("other").await;
    let theirs = app.create_as(&other, vec![wh("a", 0.0)]).await;
    let their_id = theirs[0]["location_id"].as_str().unwrap().to_owned();

    for path in [ARCHIVE, RESTORE, UPDATE] {
        let results = app
            .change(
                path,
                vec![
                    json!({}),
                    json!({"location_id": null, "merchant_location_id": ""}),
                    json!({"location_id": 7}),
                    json!({"merchant_location_id": ["a"]}),
                    json!({"location_id": "nope", "name": "N"}),
                    json!({"merchant_location_id": "nope"}),
                    json!({"location_id": their_id}),
                    json!({"location_id": a, "merchant_location_id": "b"}),
                    json!(42),
                ],
            )
            .await;
        assert_eq!(results.len(), 9);
        failed(&results[0], "locations[0].location_id", "REQUIRED_ONE_OF");
        assert!(
            results[0]["errors"][0]["message"]
                .as_str()
                .unwrap()
                .contains("merchant_location_id")
        );
        failed(&results[1], "locations[1].location_id", "REQUIRED_ONE_OF");
        failed(&results[2], "locations[2].location_id", "INVALID_TYPE");
        failed(&results[3], "locations[3].merchant_location_id", "INVALID_TYPE");
        failed(&results[4], "locations[4].location_id", "NOT_FOUND");
        assert_eq!(results[4]["location_id"], "");
        // The item's name is echoed by update; archive and restore echo the stored name, and
        // there is none.
        assert_eq!(results[4]["name"], if path == UPDATE { "N" } else { "" });
        failed(&results[5], "locations[5].merchant_location_id", "NOT_FOUND");
        assert_eq!(results[5]["merchant_location_id"], "nope");
        // Another merchant's id: nothing reveals that it exists.
        failed(&results[6], "locations[6].location_id", "NOT_FOUND");
        assert_eq!(results[6]["location_id"], "");
        // Both given and they disagree: merchant_location_id is fixed at creation.
        failed(&results[7], "locations[7].merchant_location_id", "CONFLICT");
        assert_eq!(results[7]["location_id"], a.as_str());
        assert_eq!(results[7]["merchant_location_id"], "a");
        failed(&results[8], "locations[8]", "INVALID_TYPE");
    }
    // Nothing of anyone's changed.
    assert_eq!(app.record("a").await["version"], 1);
    assert_eq!(app.record("b").await["version"], 1);
    assert_eq!(app.record_as(&other, "a").await["version"], 1);
    assert_eq!(app.record_as(&other, "a").await["status"], "ACTIVE");

    // By merchant_location_id, or by location_id with the matching merchant_location_id.
    let results = app
        .change(
            ARCHIVE,
            vec![
                json!({"merchant_location_id": "a"}),
                json!({"location_id": b, "merchant_location_id": "b"}),
            ],
        )
        .await;
    for (result, (id, mlid)) in results.iter().zip([(a, "a"), (b, "b")]) {
        assert_eq!(result["status"], "ARCHIVED", "{result:#}");
        assert_eq!(result["location_id"], id.as_str());
        assert_eq!(result["merchant_location_id"], mlid);
        assert_eq!(result["name"], format!("Warehouse {mlid}"));
        assert_eq!(result["version"], 2);
        assert_eq!(result["errors"], json!([]));
    }
}

#[tokio::test]
async fn several_items_naming_one_location_the_last_one_counts() {
    let app = TestApp::spawn().await;
    let ids = app.created(vec![wh("a", 0.0)]).await;
    let renamed = |name: &str| with(wh("a", 0.0), "/name", Some(json!(name)));
    let results = app
        .change(
            UPDATE,
            vec![
                renamed("first"),
                with(renamed("second"), "/location_id", Some(json!(ids[0]))),
                renamed("third"),
            ],
        )
        .await;
    failed(&results[0], "locations[0].merchant_location_id", "CONFLICT");
    assert_eq!(
        results[0]["errors"][0]["message"],
        "superseded by locations[2] naming the same location"
    );
    failed(&results[1], "locations[1].location_id", "CONFLICT");
    assert_eq!(results[1]["location_id"], ids[0].as_str());
    assert_eq!(results[2]["status"], "ACTIVE");
    assert_eq!(results[2]["version"], 2, "one higher per request");
    let record = app.record("a").await;
    assert_eq!(record["name"], "third");
    assert_eq!(record["version"], 2);
}

#[tokio::test]
async fn expected_version_guards_a_change_and_a_resent_change_is_safe() {
    let app = TestApp::spawn().await;
    app.created(vec![wh("a", 0.0)]).await;
    let evening = with(
        wh("a", 0.0),
        "/working_schedule",
        Some(json!([{"day": "MONDAY", "schedule": {"time_start": "12:00", "time_end": "23:00"}}])),
    );
    let bad = |v: Value| with(evening.clone(), "/expected_version", Some(v));
    for (version, code) in [
        (json!("1"), "INVALID_TYPE"),
        (json!(1.5), "INVALID_TYPE"),
        (json!(true), "INVALID_TYPE"),
        (json!(0), "MIN_VALUE"),
        (json!(-3), "MIN_VALUE"),
    ] {
        let results = app.change(UPDATE, vec![bad(version)]).await;
        failed(&results[0], "locations[0].expected_version", code);
    }
    // Its errors come first, then the fields'.
    let both = with(bad(json!(0)), "/name", Some(json!("")));
    let results = app.change(UPDATE, vec![both]).await;
    assert_eq!(
        field_codes(&results[0]),
        [
            ("locations[0].expected_version".to_owned(), "MIN_VALUE".to_owned()),
            ("locations[0].name".to_owned(), "REQUIRED".to_owned())
        ]
    );

    let change = with(evening.clone(), "/expected_version", Some(json!(1.0)));
    let results = app.change(UPDATE, vec![change.clone()]).await;
    assert_eq!(results[0]["status"], "ACTIVE", "{:#}", results[0]);
    assert_eq!(results[0]["version"], 2);
    // Resent (the answer was lost): nothing changes, whatever expected_version says.
    let results = app.change(UPDATE, vec![change]).await;
    assert_eq!(results[0]["version"], 2, "{:#}", results[0]);
    assert_eq!(results[0]["errors"], json!([]));
    // An edit made on version 1 is refused now; its message names the current version.
    let stale = with(evening.clone(), "/name", Some(json!("stale")));
    let stale = with(stale, "/expected_version", Some(json!(1)));
    let results = app.change(UPDATE, vec![stale]).await;
    failed(&results[0], "locations[0].expected_version", "CONFLICT");
    assert!(
        results[0]["errors"][0]["message"]
            .as_str()
            .unwrap()
            .contains("version 2")
    );
    assert_eq!(results[0]["location_id"], app.record("a").await["location_id"]);
    // Archive and restore check it too; a no-op passes.
    let results = app
        .change(
            ARCHIVE,
            vec![json!({"merchant_location_id": "a", "expected_version": 1})],
        )
        .await;
    failed(&results[0], "locations[0].expected_version", "CONFLICT");
    let results = app
        .change(
            RESTORE,
            vec![json!({"merchant_location_id": "a", "expected_version": 1})],
        )
        .await;
    assert_eq!(
        results[0]["status"], "ACTIVE",
        "restoring an active location changes nothing"
    );
    assert_eq!(results[0]["version"], 2);
    let record = app.record("a").await;
    assert_eq!(record["version"], 2);
    assert_eq!(record["working_schedule"][0]["schedule"]["time_start"], "12:00");
}

#[tokio::test]
async fn update_replaces_the_whole_content_and_keeps_what_is_fixed() {
    let app = TestApp::spawn().await;
    let ids = app.created(vec![pickup_point(1)]).await;
    let before = app.record("pp-1").await;
    // Equal content, written otherwise: nothing changes.
    let mut same = pickup_point(1);
    same["payment_methods"] = json!(["CASH", "CARD", "ALREADY_PAID"]);
    same["storage_period_days"] = json!(7.0);
    let results = app.change(UPDATE, vec![same]).await;
    assert_eq!(results[0]["status"], "ACTIVE");
    assert_eq!(results[0]["version"], 1);
    assert_eq!(app.record("pp-1").await, before, "not even updated_at");

    // By location_id, without merchant_location_id: it is kept; a field left out is removed.
    let mut new = pickup_point(1);
    new.as_object_mut().unwrap().remove("merchant_location_id");
    new.as_object_mut().unwrap().remove("instruction");
    new.as_object_mut().unwrap().remove("individual_schedule");
    new["location_id"] = json!(ids[0]);
    new["name"] = json!("Renamed");
    let results = app.change(UPDATE, vec![new]).await;
    assert_eq!(results[0]["name"], "Renamed");
    assert_eq!(results[0]["merchant_location_id"], "pp-1");
    assert_eq!(results[0]["version"], 2);
    let after = app.record("pp-1").await;
    assert_eq!(after["name"], "Renamed");
    assert_eq!(after["instruction"], Value::Null);
    assert_eq!(after["individual_schedule"], Value::Null);
    assert_eq!(after["version"], 2);
    assert_eq!(after["created_at"], before["created_at"]);
    assert_ne!(after["updated_at"], before["updated_at"]);
    assert_eq!(after["location_types"], json!(["PICKUP_POINT"]));

    // A required field left out is REQUIRED; location_types is fixed at creation.
    let results = app.change(UPDATE, vec![with(pickup_point(1), "/limits", None)]).await;
    failed(&results[0], "locations[0].limits", "REQUIRED");
    let other_types = with(
        pickup_point(1),
        "/location_types",
        Some(json!(["PICKUP_POINT", "WAREHOUSE"])),
    );
    let results = app
        .change(UPDATE, vec![with(other_types, "/name", Some(json!("")))])
        .await;
    assert_eq!(
        field_codes(&results[0]),
        [
            ("locations[0].location_types".to_owned(), "CONFLICT".to_owned()),
            ("locations[0].name".to_owned(), "REQUIRED".to_owned())
        ]
    );
    assert!(
        results[0]["errors"][0]["message"]
            .as_str()
            .unwrap()
            .contains("PICKUP_POINT")
    );
    // The same types in another order are the same set.
    let reordered = with(pickup_point(1), "/location_types", Some(json!(["PICKUP_POINT"])));
    assert_eq!(app.change(UPDATE, vec![reordered]).await[0]["status"], "ACTIVE");
    assert_eq!(app.record("pp-1").await["version"], 3);
}

#[tokio::test]
async fn the_field_rules_of_create_run_through_update() {
    let app = TestApp::spawn().await;
    let bases = [warehouse(0), pickup_point(0), postamat(0), click_and_collect(0)];
    let ids = app.created(bases.to_vec()).await;
    let types = |v: &Value| -> Option<Vec<String>> {
        let list: Vec<String> = v["location_types"]
            .as_array()?
            .iter()
            .map(|t| t.as_str().map(str::to_owned))
            .collect::<Option<_>>()?;
        let mut set = list.clone();
        set.sort();
        set.dedup();
        let known = set
            .iter()
            .all(|t| ["WAREHOUSE", "PICKUP_POINT", "CLICK_AND_COLLECT"].contains(&t.as_str()));
        let cc_ok = !set.contains(&"CLICK_AND_COLLECT".to_owned()) || set.contains(&"WAREHOUSE".to_owned());
        (known && cc_ok && !set.is_empty() && set.len() == list.len()).then_some(set)
    };
    let mut failures = Vec::new();
    let mut ran = 0;
    for case in create_cases::cases() {
        // merchant_location_id names the location in an update: its own rules are the naming ones.
        if case.name.contains("merchant_location_id") {
            continue;
        }
        let Some(mlid) = case.item.get("merchant_location_id").and_then(Value::as_str) else {
            // Not an object: the same single error.
            let results = app.change(UPDATE, vec![case.item.clone()]).await;
            if field_codes(&results[0]) != [("locations[0]".to_owned(), "INVALID_TYPE".to_owned())] {
                failures.push(format!("{}: {:?}", case.name, field_codes(&results[0])));
            }
            continue;
        };
        let Some(base) = bases.iter().position(|b| b["merchant_location_id"] == mlid) else {
            continue;
        };
        ran += 1;
        let mut item = case.item.clone();
        item["location_id"] = json!(ids[base]);
        let mut want: Vec<(String, String)> = case
            .expected
            .iter()
            .map(|(path, code)| (format!("locations[0]{path}"), (*code).to_owned()))
            .collect();
        if let Some(new) = types(&item)
            && Some(new) != types(&bases[base])
        {
            let at = want
                .iter()
                .take_while(|(p, _)| p.ends_with("merchant_location_id"))
                .count();
            want.insert(at, ("locations[0].location_types".to_owned(), "CONFLICT".to_owned()));
        }
        let results = app.change(UPDATE, vec![item]).await;
        let got = field_codes(&results[0]);
        if got != want || results[0]["status"] != "FAILED" || results[0]["location_id"] != ids[base].as_str() {
            failures.push(format!("{}: want {want:?}, got {got:?}", case.name));
        }
    }
    assert!(ran > 80, "only {ran} cases ran");
    assert!(
        failures.is_empty(),
        "{} cases failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
    // None of them changed anything.
    for base in &bases {
        let record = app.record(base["merchant_location_id"].as_str().unwrap()).await;
        assert_eq!(record["version"], 1, "{record:#}");
    }
}

#[tokio::test]
async fn archive_and_restore_round_trip() {
    let app = TestApp::spawn().await;
    let ids = app.created(vec![wh("a", 0.0)]).await;
    let results = app.change(ARCHIVE, vec![json!({"location_id": ids[0]})]).await;
    assert_eq!(results[0]["status"], "ARCHIVED");
    assert_eq!(results[0]["version"], 2);
    let record = app.record("a").await;
    assert_eq!(
        (record["status"].clone(), record["issue"].clone()),
        (json!("ARCHIVED"), Value::Null)
    );
    // Again: nothing changes.
    let results = app.change(ARCHIVE, vec![json!({"location_id": ids[0]})]).await;
    assert_eq!(
        (results[0]["status"].clone(), results[0]["version"].clone()),
        (json!("ARCHIVED"), json!(2))
    );
    // An archived location is not updated, whatever the item holds.
    for item in [
        wh("a", 0.0),
        with(wh("a", 0.0), "/name", Some(json!(""))),
        with(wh("a", 0.0), "/name", Some(json!("B"))),
    ] {
        let results = app.change(UPDATE, vec![item]).await;
        failed(&results[0], "locations[0].merchant_location_id", "CONFLICT");
        assert_eq!(results[0]["errors"][0]["message"], "archived: restore it first");
    }
    // A create with its merchant_location_id: the stored id and ARCHIVED when equal, else CONFLICT.
    let created = app.create(vec![wh("a", 0.0)]).await;
    assert_eq!(created[0]["location_id"], ids[0].as_str());
    assert_eq!(created[0]["status"], "ARCHIVED");
    let conflict = app.create(vec![with(wh("a", 0.0), "/name", Some(json!("B")))]).await;
    assert_eq!(conflict[0]["status"], "FAILED");
    // Archived locations are listed by status.
    let archived = app.list_locations(&json!({"filter": {"status": "ARCHIVED"}})).await;
    assert_eq!(archived.body["pagination"]["total"], 1);
    // Items of archive and restore hold only the naming keys.
    let results = app
        .change(RESTORE, vec![json!({"location_id": ids[0], "name": "x", "zzz": 1})])
        .await;
    assert_eq!(
        field_codes(&results[0]),
        [
            ("locations[0].name".to_owned(), "SCHEMA_MISMATCH".to_owned()),
            ("locations[0].zzz".to_owned(), "SCHEMA_MISMATCH".to_owned())
        ]
    );
    assert_eq!(results[0]["location_id"], ids[0].as_str());
    let results = app.change(RESTORE, vec![json!({"merchant_location_id": "a"})]).await;
    assert_eq!(results[0]["status"], "ACTIVE");
    assert_eq!(results[0]["version"], 3);
    assert_eq!(results[0]["name"], "Warehouse a");
    let results = app.change(RESTORE, vec![json!({"merchant_location_id": "a"})]).await;
    assert_eq!(results[0]["version"], 3, "restoring an active location changes nothing");
    // The counts behind total follow.
    let active = app.list_locations(&json!({"filter": {"status": "ACTIVE"}})).await;
    assert_eq!(active.body["pagination"]["total"], 1);
    let archived = app.list_locations(&json!({"filter": {"status": "ARCHIVED"}})).await;
    assert_eq!(archived.body["pagination"]["total"], 0);
}

#[tokio::test]
async fn another_merchants_locations_are_never_touched() {
    let app = TestApp::spawn().await;
    let other = app.merchant_key("other").await;
    let theirs = app.create_as(&other, vec![wh("a", 0.0), wh("q", 30.0)]).await;
    let before = [app.record_as(&other, "a").await, app.record_as(&other, "q").await];
    // Ours, at the same place: their locations are no neighbours of ours either.
    app.created(vec![wh("a", 0.0)]).await;
    for path in [UPDATE, ARCHIVE, RESTORE] {
        let results = app
            .change(path, vec![json!({"location_id": theirs[0]["location_id"]})])
            .await;
        failed(&results[0], "locations[0].location_id", "NOT_FOUND");
    }
    let results = app.change(ARCHIVE, vec![json!({"merchant_location_id": "a"})]).await;
    assert_eq!(results[0]["status"], "ARCHIVED");
    assert_eq!(
        [app.record_as(&other, "a").await, app.record_as(&other, "q").await],
        before,
        "their Q is still quarantined by their A"
    );
}

#[tokio::test]
async fn request_level_errors_are_those_of_create() {
    let app = TestApp::spawn().await;
    for path in [UPDATE, ARCHIVE, RESTORE] {
        let many: Vec<Value> = (0..201)
            .map(|i| json!({"merchant_location_id": format!("m{i}")}))
            .collect();
        let answer = app.post(path, &json!({"locations": many})).await;
        let details = assert_error(&answer, 400, "ERROR_TYPE_BAD_REQUEST", "TOO_MANY_ITEMS");
        assert_eq!(details, json!({"field": "locations", "max": 200, "actual": 201}));
        for (body, field) in [
            (json!([]), ""),
            (json!({}), "locations"),
            (json!({"locations": 1}), "locations"),
            (json!({"locations": [], "x": 1}), "x"),
        ] {
            let answer = app.post(path, &body).await;
            let details = assert_error(&answer, 400, "ERROR_TYPE_BAD_REQUEST", "INVALID_REQUEST");
            assert_eq!(details["field"], field, "{path} {body}");
        }
        let answer = app.post(path, &json!({"locations": []})).await;
        assert_eq!(answer.status, 200);
        assert_eq!(answer.body, json!({"locations": []}));
        let answer = app.post_as(path, "sf_x_y", &json!({"locations": 5})).await;
        assert_error(&answer, 401, "ERROR_TYPE_UNAUTHORIZED", "INVALID_API_KEY");
    }
}

#[tokio::test]
async fn changes_are_counted_in_metrics() {
    let app = TestApp::spawn().await;
    app.created(vec![wh("a", 0.0), wh("b", 1000.0)]).await;
    app.change(
        ARCHIVE,
        vec![
            json!({"merchant_location_id": "a"}),
            json!({"merchant_location_id": "b"}),
        ],
    )
    .await;
    // A no-op and a failed item are not counted.
    app.change(
        ARCHIVE,
        vec![
            json!({"merchant_location_id": "a"}),
            json!({"merchant_location_id": "zz"}),
        ],
    )
    .await;
    app.change(RESTORE, vec![json!({"merchant_location_id": "a"})]).await;
    let metrics = app.get_text("/metrics").await;
    // The recorder is process-wide (other tests count too): at least ours are there.
    let value = |labels: &str| -> u64 {
        metrics
            .lines()
            .find(|l| l.starts_with("location_changes_total{") && l.contains(labels))
            .and_then(|l| l.rsplit(' ').next()?.parse().ok())
            .unwrap_or(0)
    };
    assert!(value("operation=\"archive\",status=\"ARCHIVED\"") >= 2, "{metrics}");
    assert!(value("operation=\"restore\",status=\"ACTIVE\"") >= 1, "{metrics}");
    assert!(metrics.contains("route=\"/v1/location/archive\""), "{metrics}");
}

//! Texts a request or a file may hold that no stored name does: the null character (which
//! PostgreSQL's text cannot hold at all) and the other control characters. Every engine answers
//! them alike: an id holding one names nothing (answered as any unknown id), a label or a file's
//! name holding one is refused at its field, a list by such a text is empty, and an import whose
//! file names a location so ends with that row failed (never a 500, never an import stuck).

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::*;
use crate::imports::base64_of;

const NUL: &str = "a\u{0}b";

#[tokio::test]
async fn an_id_holding_a_null_character_names_nothing() {
    let app = TestApp::spawn().await;
    let created = app.create(vec![warehouse(1)]).await;
    let id = created[0]["location_id"].as_str().unwrap().to_owned();

    for filter in [
        json!({"location_ids": [NUL]}),
        json!({"merchant_location_ids": [NUL]}),
        json!({"location_ids": [NUL, id]}),
    ] {
        let answer = app.list_locations(&json!({"filter": filter})).await;
        assert_eq!(answer.status, StatusCode::OK, "{filter}: {:#}", answer.body);
        let expected = usize::from(filter["location_ids"].as_array().is_some_and(|ids| ids.len() == 2));
        assert_eq!(answer.body["locations"].as_array().unwrap().len(), expected, "{filter}");
    }
    for (path, item) in [
        ("/v1/location/archive", json!({"location_id": NUL})),
        ("/v1/location/archive", json!({"merchant_location_id": NUL})),
        ("/v1/location/restore", json!({"location_id": NUL})),
        ("/v1/location/update", json!({"location_id": NUL, "name": "Renamed"})),
    ] {
        let answer = app.post(path, &json!({"locations": [item]})).await;
        assert_eq!(answer.status, StatusCode::OK, "{path} {item}: {:#}", answer.body);
        let result = &answer.body["locations"][0];
        assert_eq!(result["status"], "FAILED", "{path} {item}: {result:#}");
        assert!(
            field_codes(result).iter().any(|(_, code)| code == "NOT_FOUND"),
            "{path} {item}: {result:#}"
        );
    }
    error_at(
        &app.post("/v1/key/revoke", &json!({"key_id": NUL})).await,
        "NOT_FOUND",
        "key_id",
    );
    for path in ["/v1/import/get", "/v1/import/rows"] {
        error_at(
            &app.post(path, &json!({"import_id": NUL})).await,
            "NOT_FOUND",
            "import_id",
        );
    }
    let made = app
        .post("/v1/webhook/create", &json!({"url": "https://shop.example/hooks"}))
        .await;
    assert_eq!(made.status, StatusCode::OK, "{:#}", made.body);
    let webhook = made.body["webhook"]["webhook_id"].clone();
    for path in [
        "/v1/webhook/delete",
        "/v1/webhook/enable",
        "/v1/webhook/test",
        "/v1/webhook/rotate_secret",
        "/v1/webhook/deliveries",
    ] {
        error_at(
            &app.post(path, &json!({"webhook_id": NUL})).await,
            "NOT_FOUND",
            "webhook_id",
        );
    }
    let resend = app
        .post("/v1/webhook/resend", &json!({"webhook_id": webhook, "event_id": NUL}))
        .await;
    error_at(&resend, "NOT_FOUND", "event_id");
    let by_event = app
        .post(
            "/v1/webhook/deliveries",
            &json!({"webhook_id": webhook, "filter": {"event_id": NUL}}),
        )
        .await;
    assert_eq!(by_event.status, StatusCode::OK, "{:#}", by_event.body);
    assert_eq!(by_event.body["deliveries"], json!([]));
}

#[tokio::test]
async fn a_label_or_a_file_name_with_a_control_character_is_refused_at_its_field() {
    let app = TestApp::spawn().await;
    for label in [NUL, "shop\u{1}", "two\nlines"] {
        error_at(
            &app.post("/v1/key/create", &json!({"label": label})).await,
            "INVALID_REQUEST",
            "label",
        );
    }
    let file = base64_of(b"merchant_location_id,name\n");
    for (body, field) in [
        (json!({"file_name": "a\u{0}.csv", "content_base64": file}), "file_name"),
        (json!({"file_name": "a\tb.csv", "content_base64": file}), "file_name"),
        (
            json!({"file_name": "a.xlsx", "content_base64": file, "sheet": NUL}),
            "sheet",
        ),
    ] {
        error_at(&app.post("/v1/import/create", &body).await, "INVALID_REQUEST", field);
    }
    let keys = app.post("/v1/key/list", &json!({})).await;
    assert_eq!(keys.body["keys"].as_array().unwrap().len(), 1, "nothing stored");
    let imports = app.post("/v1/import/list", &json!({})).await;
    assert_eq!(imports.body["imports"], json!([]), "nothing stored");
}

/// Before, on PostgreSQL, such a row stopped its import at each attempt, which then held one of
/// the merchant's two places for imports for good.
#[tokio::test]
async fn an_import_whose_row_names_a_location_with_a_null_character_ends_with_that_row_failed() {
    let app = TestApp::spawn().await;
    app.create(vec![warehouse(1)]).await;
    let mut bad = warehouse(2);
    bad["merchant_location_id"] = json!(NUL);
    let good = warehouse(3);
    let lines = format!("{bad}\n{good}\n");
    for options in [
        json!({}),
        json!({"update": true}),
        json!({"update": true, "dry_run": true}),
    ] {
        let mut body = json!({"file_name": "locations.jsonl", "content_base64": base64_of(lines.as_bytes())});
        for (key, value) in options.as_object().unwrap() {
            body[key] = value.clone();
        }
        let import = app.start_import(&body).await;
        let id = import["import_id"].as_str().unwrap();
        let ended = app.import_ended(id).await;
        assert_eq!(ended["status"], "SUCCEEDED", "{options}: {ended:#}");
        assert_eq!(ended["counts"]["failed"], 1, "{options}: {ended:#}");
        let rows = app.import_rows(id, Value::Null, 10).await;
        assert_eq!(rows[0]["outcome"], "failed", "{options}: {rows:#?}");
        // Kept as both engines can store it: the null character as U+FFFD.
        assert_eq!(rows[0]["merchant_location_id"], "a\u{fffd}b");
        assert!(
            rows[0]["errors"]
                .as_array()
                .unwrap()
                .iter()
                .any(|e| e["field"] == "merchant_location_id" && e["code"] == "INVALID_FORMAT"),
            "{rows:#?}"
        );
        assert_ne!(rows[1]["outcome"], "failed", "{options}: {rows:#?}");
    }
}

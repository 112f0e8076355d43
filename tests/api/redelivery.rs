//! Getting deliveries back (CONTRACT §20) through the real server, with receivers in the test:
//! every request rule, the deliveries log's filter and `trigger`, resends (to a disabled endpoint,
//! settling a pending retry, failing without consequence), test events, and recoveries (a window
//! of given-up events, events appended while disabled, the same event recovered twice).

use std::time::Duration;

use serde_json::{Value, json};
use storefront::app::Settings;
use storefront::domain::webhook::RetrySchedule;

use crate::changes::ARCHIVE;
use crate::helpers::*;

/// `webhook_settings` with another retry schedule.
async fn app_with_schedule(schedule: &str) -> TestApp {
    let mut settings: Settings = webhook_settings();
    settings.webhooks.retry = RetrySchedule::parse(schedule).unwrap();
    TestApp::spawn_with_settings(settings).await
}

/// `details.field` of a 400 with `code`.
fn field_of(answer: &Answer, code: &str) -> Value {
    assert_error(answer, 400, "ERROR_TYPE_BAD_REQUEST", code)["field"].clone()
}

#[tokio::test]
async fn every_request_rule_of_section_20_has_its_code_and_field() {
    let app = webhook_app().await;
    let receiver = Receiver::start().await;
    let early = app.create(vec![warehouse(1)]).await;
    let before = early[0]["location_id"].clone();
    let archived_only = json!(["location.archived"]);
    let (id, _) = app.webhook(&format!("{}/ok", receiver.base), archived_only).await;
    app.create(vec![warehouse(2)]).await;
    app.change(ARCHIVE, vec![json!({"merchant_location_id": "wh-2"})]).await;
    let events = events(&app).await;
    let (created_before, created_after, archived) = (&events[0], &events[1], &events[2]);
    assert_eq!(created_before["location_id"], before);
    assert_eq!(archived["type"], "location.archived");
    let other = app.merchant_key("other").await;
    let (others_id, _) = {
        let a = app
            .post_as(
                "/v1/webhook/create",
                &other,
                &json!({"url": format!("{}/ok", receiver.base)}),
            )
            .await;
        (a.body["webhook"]["webhook_id"].as_str().unwrap().to_owned(), ())
    };

    // resend
    let bad = [
        (json!({}), "INVALID_REQUEST", "webhook_id"),
        (
            json!({"webhook_id": 5, "event_id": "x"}),
            "INVALID_REQUEST",
            "webhook_id",
        ),
        (json!({"webhook_id": id}), "INVALID_REQUEST", "event_id"),
        (json!({"webhook_id": id, "event_id": 5}), "INVALID_REQUEST", "event_id"),
        (
            json!({"webhook_id": id, "event_id": "x", "force": true}),
            "INVALID_REQUEST",
            "force",
        ),
        (
            json!({"webhook_id": "nope", "event_id": "x"}),
            "NOT_FOUND",
            "webhook_id",
        ),
        (
            json!({"webhook_id": others_id, "event_id": archived["event_id"]}),
            "NOT_FOUND",
            "webhook_id",
        ),
        (json!({"webhook_id": id, "event_id": "evt_0"}), "NOT_FOUND", "event_id"),
        // Appended before the endpoint was created; of a type it does not take.
        (
            json!({"webhook_id": id, "event_id": created_before["event_id"]}),
            "NOT_FOUND",
            "event_id",
        ),
        (
            json!({"webhook_id": id, "event_id": created_after["event_id"]}),
            "NOT_FOUND",
            "event_id",
        ),
    ];
    for (body, code, field) in bad {
        let answer = app.post("/v1/webhook/resend", &body).await;
        assert_eq!(field_of(&answer, code), field, "resend {body}");
    }
    // Another merchant's event, to that merchant's endpoint... is not this merchant's.
    let answer = app
        .post_as(
            "/v1/webhook/resend",
            &other,
            &json!({"webhook_id": others_id, "event_id": archived["event_id"]}),
        )
        .await;
    assert_eq!(field_of(&answer, "NOT_FOUND"), "event_id");

    // recover
    let bad = [
        (
            json!({"since": "2026-01-01T00:00:00Z"}),
            "INVALID_REQUEST",
            "webhook_id",
        ),
        (json!({"webhook_id": id}), "INVALID_REQUEST", "since"),
        (json!({"webhook_id": id, "since": null}), "INVALID_REQUEST", "since"),
        (
            json!({"webhook_id": id, "since": "yesterday"}),
            "INVALID_REQUEST",
            "since",
        ),
        (
            json!({"webhook_id": id, "since": "2026-01-01T00:00:00"}),
            "INVALID_REQUEST",
            "since",
        ),
        (
            json!({"webhook_id": id, "since": 1_700_000_000}),
            "INVALID_REQUEST",
            "since",
        ),
        (
            json!({"webhook_id": id, "since": "2026-01-01T00:00:00Z", "until": "soon"}),
            "INVALID_REQUEST",
            "until",
        ),
        (
            json!({"webhook_id": id, "since": "2026-01-01T03:00:00+03:00", "until": "2026-01-01T00:00:00Z"}),
            "INVALID_REQUEST",
            "until",
        ),
        (
            json!({"webhook_id": id, "since": "2026-01-01T00:00:00Z", "to": null}),
            "INVALID_REQUEST",
            "to",
        ),
        (
            json!({"webhook_id": "nope", "since": "2026-01-01T00:00:00Z"}),
            "NOT_FOUND",
            "webhook_id",
        ),
        (
            json!({"webhook_id": others_id, "since": "2026-01-01T00:00:00Z"}),
            "NOT_FOUND",
            "webhook_id",
        ),
    ];
    for (body, code, field) in bad {
        let answer = app.post("/v1/webhook/recover", &body).await;
        assert_eq!(field_of(&answer, code), field, "recover {body}");
    }

    // test
    for (body, code, field) in [
        (json!({}), "INVALID_REQUEST", "webhook_id"),
        (json!({"webhook_id": ["x"]}), "INVALID_REQUEST", "webhook_id"),
        (json!({"webhook_id": "nope"}), "NOT_FOUND", "webhook_id"),
        (json!({"webhook_id": others_id}), "NOT_FOUND", "webhook_id"),
    ] {
        let answer = app.post("/v1/webhook/test", &body).await;
        assert_eq!(field_of(&answer, code), field, "test {body}");
    }

    // the deliveries log's filter
    for (filter, code, field) in [
        (json!(5), "INVALID_REQUEST", "filter"),
        (json!({"outcome": "pending"}), "INVALID_FILTER", "filter.outcome"),
        (json!({"outcome": 1}), "INVALID_FILTER", "filter.outcome"),
        (json!({"event_id": 5}), "INVALID_FILTER", "filter.event_id"),
        (json!({"trigger": "test"}), "INVALID_FILTER", "filter.trigger"),
    ] {
        let answer = app
            .post("/v1/webhook/deliveries", &json!({"webhook_id": id, "filter": filter}))
            .await;
        assert_eq!(field_of(&answer, code), field, "filter {filter}");
    }

    // A deleted endpoint is unknown to all three; a storefront key may call none of them.
    let deleted = app.post("/v1/webhook/delete", &json!({"webhook_id": id})).await;
    assert_eq!(deleted.status, 200);
    for (path, body) in [
        ("/v1/webhook/test", json!({"webhook_id": id})),
        (
            "/v1/webhook/resend",
            json!({"webhook_id": id, "event_id": archived["event_id"]}),
        ),
        (
            "/v1/webhook/recover",
            json!({"webhook_id": id, "since": "2026-01-01T00:00:00Z"}),
        ),
    ] {
        assert_eq!(
            field_of(&app.post(path, &body).await, "NOT_FOUND"),
            "webhook_id",
            "{path}"
        );
    }
    let (storefront, _) = app.storefront_key().await;
    for path in ["/v1/webhook/test", "/v1/webhook/resend", "/v1/webhook/recover"] {
        let answer = app.post_as(path, &storefront, &json!({"webhook_id": id})).await;
        assert_error(&answer, 403, "ERROR_TYPE_UNAUTHORIZED", "FORBIDDEN");
    }
}

/// A test event: the keys of an event with no location, signed as every delivery, whatever
/// types the endpoint takes; recorded in the log with trigger `test`, in no feed, never retried,
/// and sent to a disabled endpoint too.
#[tokio::test]
async fn a_test_event_is_signed_recorded_in_no_feed_and_never_retried() {
    let app = webhook_app().await;
    let receiver = Receiver::start().await;
    let (id, secret) = app
        .webhook(&format!("{}/ok", receiver.base), json!(["location.approved"]))
        .await;
    let attempts_before = counter(&app, "webhook_attempts_total{outcome=\"delivered\"}").await;
    let (status, text) = app.post_text("/v1/webhook/test", &json!({"webhook_id": id})).await;
    assert_eq!(status, 200, "{text}");
    let answer: Value = serde_json::from_str(&text).unwrap();
    let delivery = &answer["delivery"];
    let inner = text.strip_prefix(r#"{"delivery":"#).unwrap().strip_suffix('}').unwrap();
    assert_eq!(
        keys_in_order(inner),
        [
            "event_id",
            "sequence",
            "attempt",
            "attempted_at",
            "outcome",
            "http_status",
            "error",
            "duration_ms",
            "trigger"
        ]
    );
    assert_eq!(delivery["trigger"], "test");
    assert_eq!(delivery["outcome"], "delivered");
    assert_eq!(delivery["http_status"], 204);
    assert_eq!(delivery["sequence"], Value::Null);
    assert_eq!(delivery["attempt"], 1);
    assert!(counter(&app, "webhook_attempts_total{outcome=\"delivered\"}").await >= attempts_before + 1.0);
    let got = receiver.at("ok");
    assert_eq!(got.len(), 1, "answered when the attempt had ended");
    assert!(signed_by(&got[0], &secret));
    assert_eq!(got[0].headers["webhook-id"], delivery["event_id"].as_str().unwrap());
    let event: Value = serde_json::from_str(&got[0].body).unwrap();
    assert_eq!(keys_in_order(&got[0].body), EVENT_KEYS);
    assert_eq!(event["type"], "webhook.test");
    assert_eq!(event["event_id"], delivery["event_id"]);
    for key in [
        "sequence",
        "location_id",
        "merchant_location_id",
        "version",
        "status",
        "previous_status",
    ] {
        assert_eq!(event[key], Value::Null, "{key}");
    }
    assert!(events(&app).await.is_empty(), "a test event is in no feed");
    let log = app.attempts(&id).await;
    assert_eq!(log.len(), 1);
    assert_eq!(&log[0], delivery, "the log records it as answered");

    // A failed test (to a receiver that answers 500) is not retried and changes nothing.
    let (down, _) = app.webhook(&format!("{}/down", receiver.base), Value::Null).await;
    let answer = app.post("/v1/webhook/test", &json!({"webhook_id": down})).await;
    assert_eq!(answer.status, 200);
    assert_eq!(answer.body["delivery"]["outcome"], "failed");
    assert_eq!(answer.body["delivery"]["http_status"], 500);
    assert_eq!(answer.body["delivery"]["error"], "answered 500 Internal Server Error");
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(receiver.at("down").len(), 1, "never retried");
    assert_eq!(app.attempts(&down).await.len(), 1);

    // A test to an endpoint that answers 410 leaves it enabled; one to a disabled endpoint goes.
    let (gone, _) = app.webhook(&format!("{}/gone", receiver.base), Value::Null).await;
    let answer = app.post("/v1/webhook/test", &json!({"webhook_id": gone})).await;
    assert_eq!(answer.body["delivery"]["http_status"], 410);
    assert_eq!(app.webhook_of(&gone).await["status"], "ENABLED");
    app.create(vec![warehouse(1)]).await;
    wait_until("the 410 of a delivery disables it", || async {
        app.webhook_of(&gone).await["status"] == "DISABLED"
    })
    .await;
    let answer = app.post("/v1/webhook/test", &json!({"webhook_id": gone})).await;
    assert_eq!(answer.status, 200);
    assert_eq!(receiver.at("gone").len(), 3);
    assert_eq!(app.webhook_of(&gone).await["disabled_reason"], "gone");
}

/// A resend to a disabled endpoint is made and leaves it disabled; its attempt number follows the
/// event's earlier attempts; the log answers it beside the automatic ones, newest first, and its
/// filter finds each kind.
#[tokio::test]
async fn a_resend_goes_to_a_disabled_endpoint_and_the_log_filters_it() {
    let app = webhook_app().await;
    let receiver = Receiver::start().await;
    let (id, secret) = app
        .webhook(&format!("{}/ok-then-gone", receiver.base), Value::Null)
        .await;
    app.create(vec![warehouse(1)]).await;
    receiver.wait_for("ok-then-gone", 1).await;
    app.create(vec![warehouse(2)]).await;
    wait_until("the 410 disables it", || async {
        app.webhook_of(&id).await["status"] == "DISABLED"
    })
    .await;
    let events = event_ids(&events(&app).await);
    let answer = app
        .post("/v1/webhook/resend", &json!({"webhook_id": id, "event_id": events[0]}))
        .await;
    assert_eq!(answer.status, 200, "{:#}", answer.body);
    let resent = &answer.body["delivery"];
    assert_eq!(resent["trigger"], "resend");
    assert_eq!(resent["attempt"], 2, "one more than the event's attempts so far");
    assert_eq!(resent["sequence"], 1);
    assert_eq!(resent["outcome"], "failed", "the receiver answers 410 now");
    assert_eq!(resent["http_status"], 410);
    let webhook = app.webhook_of(&id).await;
    assert_eq!(
        (webhook["status"].as_str(), webhook["disabled_reason"].as_str()),
        (Some("DISABLED"), Some("gone"))
    );
    let got = receiver.at("ok-then-gone");
    assert_eq!(got.len(), 3);
    assert_eq!(got[0].body, got[2].body, "the same bytes as the first attempt");
    assert!(signed_by(&got[2], &secret));

    let log = app.attempts(&id).await;
    let seen: Vec<(String, String)> = log
        .iter()
        .map(|a| {
            (
                a["event_id"].as_str().unwrap().to_owned(),
                a["trigger"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            (events[0].clone(), "resend".to_owned()),
            (events[1].clone(), "automatic".to_owned()),
            (events[0].clone(), "automatic".to_owned())
        ],
        "newest first"
    );
    let page = |filter: Value, cursor: Value| {
        let app = &app;
        let id = id.clone();
        async move {
            app.post(
                "/v1/webhook/deliveries",
                &json!({"webhook_id": id, "filter": filter, "pagination": {"limit": 1, "cursor": cursor}}),
            )
            .await
        }
    };
    let failed = page(json!({"outcome": "failed"}), Value::Null).await;
    assert_eq!(failed.status, 200, "{:#}", failed.body);
    assert_eq!(failed.body["deliveries"][0]["trigger"], "resend");
    let cursor = failed.body["pagination"]["next_cursor"].clone();
    assert!(cursor.is_string());
    let next = page(json!({"outcome": "failed"}), cursor.clone()).await;
    assert_eq!(next.body["deliveries"][0]["event_id"], events[1].as_str());
    assert_eq!(next.body["pagination"]["has_next"], false);
    let other = page(json!({"outcome": "delivered"}), cursor).await;
    assert_error(&other, 400, "ERROR_TYPE_BAD_REQUEST", "INVALID_CURSOR");
    let of_event = page(json!({"event_id": events[0], "outcome": null}), Value::Null).await;
    assert_eq!(of_event.body["deliveries"].as_array().unwrap().len(), 1);
    let cursor = of_event.body["pagination"]["next_cursor"].clone();
    let rest = page(json!({"event_id": events[0], "outcome": null}), cursor).await;
    assert_eq!(rest.body["deliveries"][0]["trigger"], "automatic");
    assert_eq!(rest.body["deliveries"][0]["outcome"], "delivered");
    let delivered = page(json!({"outcome": "delivered", "event_id": events[1]}), Value::Null).await;
    assert_eq!(delivered.body["deliveries"], json!([]));
}

/// A delivered resend settles its event: the retry it had pending is not made. A failed resend
/// (500, or 410) schedules nothing and disables nothing.
#[tokio::test]
async fn a_delivered_resend_cancels_the_retry_and_a_failed_one_changes_nothing() {
    let app = app_with_schedule("2s,2s").await;
    let receiver = Receiver::start().await;
    let (id, _) = app.webhook(&format!("{}/fail-once", receiver.base), Value::Null).await;
    app.create(vec![warehouse(1)]).await;
    receiver.wait_for("fail-once", 1).await;
    wait_until("the failure recorded", || async { app.attempts(&id).await.len() == 1 }).await;
    let event = event_ids(&events(&app).await).remove(0);
    let answer = app
        .post("/v1/webhook/resend", &json!({"webhook_id": id, "event_id": event}))
        .await;
    assert_eq!(answer.body["delivery"]["outcome"], "delivered", "{:#}", answer.body);
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(
        receiver.at("fail-once").len(),
        2,
        "the retry due 2 s later was not made"
    );
    assert_eq!(app.attempts(&id).await.len(), 2);

    // To a receiver that always fails: the resend's failure schedules nothing.
    let (down, _) = app.webhook(&format!("{}/down", receiver.base), Value::Null).await;
    app.create(vec![warehouse(2)]).await;
    wait_until("given up after the schedule", || async {
        app.attempts(&down).await.len() == 3
    })
    .await;
    let event = event_ids(&events(&app).await).remove(1);
    let answer = app
        .post("/v1/webhook/resend", &json!({"webhook_id": down, "event_id": event}))
        .await;
    assert_eq!(answer.body["delivery"]["attempt"], 4);
    assert_eq!(answer.body["delivery"]["outcome"], "failed");
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(receiver.at("down").len(), 4, "no retry of a failed resend");

    // To a receiver that answers 410: the endpoint stays enabled.
    let (gone, _) = app
        .webhook(&format!("{}/ok-then-gone", receiver.base), Value::Null)
        .await;
    app.create(vec![warehouse(3)]).await;
    receiver.wait_for("ok-then-gone", 1).await;
    let event = event_ids(&events(&app).await).remove(2);
    let answer = app
        .post("/v1/webhook/resend", &json!({"webhook_id": gone, "event_id": event}))
        .await;
    assert_eq!(answer.body["delivery"]["http_status"], 410);
    let webhook = app.webhook_of(&gone).await;
    assert_eq!(webhook["status"], "ENABLED");
    assert_eq!(webhook["disabled_reason"], Value::Null);
}

/// A resend delivered ahead of its event's window (the window held meanwhile by a claim of an
/// instance that does not exist): once the claim lapses, the window skips the event, sending the
/// others only. A delivered resend settles its event.
#[tokio::test]
async fn a_resend_ahead_of_the_window_is_not_sent_again_by_it() {
    let app = webhook_app().await;
    let receiver = Receiver::start().await;
    let (id, _) = app.webhook(&format!("{}/ok", receiver.base), Value::Null).await;
    let far = storefront::store::now_ms() + 3_600_000;
    execute_sql(
        app.db_url(),
        &format!("UPDATE webhooks SET claim_until = {far}, claim_owner = 'elsewhere' WHERE webhook_id = '{id}'"),
    )
    .await;
    app.create(vec![warehouse(1), warehouse(2), warehouse(3)]).await;
    let events = event_ids(&events(&app).await);
    let answer = app
        .post("/v1/webhook/resend", &json!({"webhook_id": id, "event_id": events[1]}))
        .await;
    assert_eq!(answer.body["delivery"]["outcome"], "delivered", "{:#}", answer.body);
    assert_eq!(answer.body["delivery"]["attempt"], 1);
    execute_sql(
        app.db_url(),
        &format!("UPDATE webhooks SET claim_until = 0, claim_owner = NULL WHERE webhook_id = '{id}'"),
    )
    .await;
    receiver.wait_for("ok", 3).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let sent = receiver.ids_at("ok");
    assert_eq!(sent.len(), 3, "{sent:?}");
    assert!(sent.values().all(|n| *n == 1), "the resent event once: {sent:?}");
    let log = app.attempts(&id).await;
    assert_eq!(log.len(), 3);
    assert_eq!(log.iter().filter(|a| a["trigger"] == "resend").count(), 1);
}

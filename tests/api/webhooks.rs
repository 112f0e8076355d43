//! Webhooks (CONTRACT §18.3) through the real server, with receivers in the test: the request
//! rules, signed deliveries equal to the feed's events, retries, 410, redirects, a hanging
//! endpoint beside a healthy one, rotation, disabling, and only public addresses.

use std::time::Duration;

use serde_json::{Value, json};
use storefront::app::Settings;
use storefront::domain::webhook::RetrySchedule;
use storefront::rate_limit::Rate;
use storefront::webhooks::WebhookSettings;
use storefront::webhooks::address::Reach;

use crate::helpers::*;

#[tokio::test]
async fn every_webhook_request_rule_has_its_code_and_field() {
    let app = webhook_app().await;
    let strict = TestApp::spawn().await;
    let long = format!("https://hooks.example.com/{}", "a".repeat(2048));
    let bad = [
        (json!({}), "url"),
        (json!({"url": 5}), "url"),
        (json!({"url": "hooks.example.com/in"}), "url"),
        (json!({"url": "http://hooks.example.com/in"}), "url"),
        (json!({"url": "https://user:pw@hooks.example.com/"}), "url"),
        (json!({"url": "https://hooks.example.com/#f"}), "url"),
        (json!({"url": "https://hooks.example.com:0/in"}), "url"),
        (json!({ "url": long }), "url"),
        (json!({"url": "https://localhost.example/", "types": []}), "types"),
        (
            json!({"url": "https://localhost.example/", "types": ["location.moved"]}),
            "types",
        ),
        (
            json!({"url": "https://localhost.example/", "types": "location.created"}),
            "types",
        ),
        (json!({"url": "https://localhost.example/", "secret": "mine"}), "secret"),
    ];
    for (body, field) in bad {
        let answer = strict.post("/v1/webhook/create", &body).await;
        let details = assert_error(&answer, 400, "ERROR_TYPE_BAD_REQUEST", "INVALID_REQUEST");
        assert_eq!(details["field"], field, "{body}");
    }
    // Only public addresses, as literals too (unless the operator allows private ones).
    for url in [
        "https://127.0.0.1/",
        "https://[::1]/",
        "https://169.254.169.254/latest/meta-data",
        "https://[::ffff:127.0.0.1]/",
        "https://[2002:7f00:1::]/",
        "https://10.0.0.8/",
    ] {
        let answer = strict.post("/v1/webhook/create", &json!({ "url": url })).await;
        let details = assert_error(&answer, 400, "ERROR_TYPE_BAD_REQUEST", "INVALID_REQUEST");
        assert_eq!(details["field"], "url", "{url}");
        // The message says who can allow it, and how.
        let message = answer.body["message"].as_str().unwrap();
        assert!(message.contains("--webhook-allow-private"), "{message}");
    }
    let answer = strict
        .post("/v1/webhook/create", &json!({"url": "http://hooks.example.com/"}))
        .await;
    assert_error(&answer, 400, "ERROR_TYPE_BAD_REQUEST", "INVALID_REQUEST");
    let message = answer.body["message"].as_str().unwrap();
    assert!(message.contains("--webhook-allow-http"), "{message}");

    // Ten endpoints; the 11th is too many; a deleted one no longer counts, a disabled one does.
    let mut ids = Vec::new();
    for n in 0..10 {
        ids.push(
            app.webhook(&format!("https://hooks{n}.example.com/in"), Value::Null)
                .await
                .0,
        );
    }
    let answer = app
        .post("/v1/webhook/create", &json!({"url": "https://eleven.example.com/"}))
        .await;
    assert_eq!(
        assert_error(&answer, 400, "ERROR_TYPE_BAD_REQUEST", "TOO_MANY_ITEMS")["field"],
        "url"
    );
    let deleted = app.post("/v1/webhook/delete", &json!({"webhook_id": ids[3]})).await;
    assert_eq!(deleted.status, 200);
    assert_eq!(deleted.body["webhook"]["url"], "https://hooks3.example.com/in");
    let list = app.post("/v1/webhook/list", &json!({})).await;
    let listed: Vec<&Value> = list.body["webhooks"].as_array().unwrap().iter().collect();
    assert_eq!(listed.len(), 9, "oldest first, without the deleted one");
    assert_eq!(listed[0]["webhook_id"], ids[0]);
    assert!(listed.iter().all(|w| w.get("secret").is_none()));
    app.webhook(
        "https://again.example.com/",
        json!(["location.created", "location.created"]),
    )
    .await;
    let list = app.post("/v1/webhook/list", &json!({})).await;
    assert_eq!(
        list.body["webhooks"][9]["types"],
        json!(["location.created"]),
        "a repeated type counts once"
    );

    // Naming an endpoint.
    let other = app.merchant_key("other").await;
    for path in ["delete", "enable", "rotate_secret", "deliveries"] {
        let path = format!("/v1/webhook/{path}");
        for (body, code) in [
            (json!({}), "INVALID_REQUEST"),
            (json!({"webhook_id": 7}), "INVALID_REQUEST"),
            (json!({"webhook_id": "no-such-webhook"}), "NOT_FOUND"),
            (
                json!({"webhook_id": ids[3]}),
                if path.ends_with("deliveries") { "" } else { "NOT_FOUND" },
            ),
        ] {
            if code.is_empty() {
                continue;
            }
            let answer = app.post(&path, &body).await;
            let details = assert_error(&answer, 400, "ERROR_TYPE_BAD_REQUEST", code);
            assert_eq!(details["field"], "webhook_id", "{path} {body}");
        }
        let answer = app.post_as(&path, &other, &json!({"webhook_id": ids[0]})).await;
        let details = assert_error(&answer, 400, "ERROR_TYPE_BAD_REQUEST", "NOT_FOUND");
        assert_eq!(details["field"], "webhook_id", "another merchant's endpoint: {path}");
    }
    let answer = app.post("/v1/webhook/list", &json!({"all": true})).await;
    assert_eq!(
        assert_error(&answer, 400, "ERROR_TYPE_BAD_REQUEST", "INVALID_REQUEST")["field"],
        "all"
    );
    let (storefront, _) = app.storefront_key().await;
    let answer = app.post_as("/v1/webhook/list", &storefront, &json!({})).await;
    assert_error(&answer, 403, "ERROR_TYPE_UNAUTHORIZED", "FORBIDDEN");
}

/// One signed delivery per event, the body the feed's own bytes, the headers of Standard Webhooks,
/// each attempt listed newest first; a filtered endpoint gets only its types.
#[tokio::test]
async fn each_event_is_delivered_once_signed_as_the_feed_reads_it() {
    let app = webhook_app().await;
    let receiver = Receiver::start().await;
    let (all, secret) = app.webhook(&format!("{}/ok", receiver.base), Value::Null).await;
    let (archived, _) = app
        .webhook(&format!("{}/archived", receiver.base), json!(["location.archived"]))
        .await;
    app.create(vec![warehouse(1), warehouse(2), warehouse(3)]).await;
    app.post(
        "/v1/location/archive",
        &json!({"locations": [{"merchant_location_id": "wh-2"}]}),
    )
    .await;
    let got = receiver.wait_for("ok", 4).await;
    let feed = app.feed_events().await;
    assert_eq!(feed.len(), 4);
    let mut bodies: Vec<String> = got.iter().map(|g| g.body.clone()).collect();
    bodies.sort();
    let mut expected = feed.clone();
    expected.sort();
    assert_eq!(bodies, expected, "each event once, the feed's own bytes");
    for g in &got {
        let event: Value = serde_json::from_str(&g.body).unwrap();
        assert_eq!(g.headers["webhook-id"], event["event_id"].as_str().unwrap());
        assert_eq!(g.headers["content-type"], "application/json");
        let ts: i64 = g.headers["webhook-timestamp"].to_str().unwrap().parse().unwrap();
        assert!((ts - storefront::store::now_ms() / 1000).abs() < 300);
        assert!(signed_by(g, &secret), "{:?}", g.headers);
    }
    let only = receiver.wait_for("archived", 1).await;
    assert_eq!(
        serde_json::from_str::<Value>(&only[0].body).unwrap()["type"],
        "location.archived"
    );
    wait_until("the attempts are recorded", || async {
        app.attempts(&all).await.len() == 4
    })
    .await;
    let attempts = app.attempts(&all).await;
    for a in &attempts {
        let keys: Vec<&String> = a.as_object().unwrap().keys().collect();
        assert_eq!(keys.len(), 9, "{a:#}");
        assert_eq!(a["trigger"], "automatic");
        assert_eq!(a["outcome"], "delivered");
        assert_eq!(a["attempt"], 1);
        assert_eq!(a["http_status"], 204);
        assert_eq!(a["error"], Value::Null);
    }
    let page = app
        .post(
            "/v1/webhook/deliveries",
            &json!({"webhook_id": all, "pagination": {"limit": 3}}),
        )
        .await;
    assert_eq!(page.body["pagination"]["has_next"], true);
    let cursor = page.body["pagination"]["next_cursor"].clone();
    let rest = app
        .post(
            "/v1/webhook/deliveries",
            &json!({"webhook_id": all, "pagination": {"limit": 3, "cursor": cursor}}),
        )
        .await;
    assert_eq!(rest.body["deliveries"].as_array().unwrap().len(), 1);
    assert_eq!(
        rest.body["pagination"]["next_cursor"],
        Value::Null,
        "null on the last page"
    );
    let wrong = app
        .post(
            "/v1/webhook/deliveries",
            &json!({"webhook_id": archived, "pagination": {"limit": 3, "cursor": cursor}}),
        )
        .await;
    assert_error(&wrong, 400, "ERROR_TYPE_BAD_REQUEST", "INVALID_CURSOR");
}

impl TestApp {
    /// Every event's JSON as the feed answers it, in order.
    async fn feed_events(&self) -> Vec<String> {
        #[derive(serde::Deserialize)]
        struct Page<'a> {
            #[serde(borrow)]
            events: Vec<&'a serde_json::value::RawValue>,
        }
        let (_, text) = self
            .post_text("/v1/location/events", &json!({"pagination": {"limit": 1000}}))
            .await;
        let page: Page = serde_json::from_str(&text).unwrap();
        page.events.iter().map(|e| e.get().to_owned()).collect()
    }
}

/// A receiver that fails, then recovers: retried on the schedule until delivered; a 410 disables
/// its endpoint at once; a redirect is not followed; enabling again sends what comes next.
#[tokio::test]
async fn failures_are_retried_a_410_disables_and_redirects_are_not_followed() {
    let app = webhook_app().await;
    let receiver = Receiver::start().await;
    let (flaky, _) = app.webhook(&format!("{}/flaky", receiver.base), Value::Null).await;
    let (gone, _) = app.webhook(&format!("{}/gone", receiver.base), Value::Null).await;
    let (redirect, _) = app.webhook(&format!("{}/redirect", receiver.base), Value::Null).await;
    app.create(vec![warehouse(1)]).await;
    let got = receiver.wait_for("flaky", 3).await;
    assert!(
        got.iter()
            .all(|g| g.body == got[0].body && g.headers["webhook-id"] == got[0].headers["webhook-id"])
    );
    wait_until("the flaky endpoint's three attempts are recorded", || async {
        app.attempts(&flaky).await.len() == 3
    })
    .await;
    let attempts = app.attempts(&flaky).await;
    let summary: Vec<(i64, &str, i64)> = attempts
        .iter()
        .map(|a| {
            (
                a["attempt"].as_i64().unwrap(),
                a["outcome"].as_str().unwrap(),
                a["http_status"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(summary, [(3, "delivered", 204), (2, "failed", 503), (1, "failed", 503)]);
    assert!(attempts[1]["error"].as_str().unwrap().contains("503"));

    wait_until("the 410 disables its endpoint", || async {
        app.webhook_of(&gone).await["status"] == "DISABLED"
    })
    .await;
    assert_eq!(app.webhook_of(&gone).await["disabled_reason"], "gone");
    assert_eq!(app.attempts(&gone).await.len(), 1, "a 410 is not tried again");

    wait_until("the redirect is tried three times and given up", || async {
        app.attempts(&redirect).await.len() == 4
    })
    .await;
    let attempts = app.attempts(&redirect).await;
    assert!(
        attempts
            .iter()
            .all(|a| a["outcome"] == "failed" && a["http_status"] == 302)
    );
    assert!(attempts[0]["error"].as_str().unwrap().contains("redirect"));
    assert!(receiver.at("ok").is_empty(), "the redirect's target was never called");

    // Created while disabled: not sent after enabling; created after: sent.
    app.create(vec![warehouse(2)]).await;
    let enabled = app.post("/v1/webhook/enable", &json!({"webhook_id": gone})).await;
    assert_eq!(enabled.body["webhook"]["status"], "ENABLED");
    assert_eq!(enabled.body["webhook"]["disabled_reason"], Value::Null);
    app.create(vec![warehouse(3)]).await;
    let got = receiver.wait_for("gone", 2).await;
    let event: Value = serde_json::from_str(&got[1].body).unwrap();
    assert_eq!(event["merchant_location_id"], "wh-3");
}

/// A hanging endpoint (past 15 s) beside a healthy one: the healthy one's events arrive while the
/// other hangs; the hanging attempt fails as "no answer".
#[tokio::test]
async fn a_hanging_endpoint_delays_no_other() {
    let app = webhook_app().await;
    let receiver = Receiver::start().await;
    let (hang, _) = app.webhook(&format!("{}/hang", receiver.base), Value::Null).await;
    app.webhook(&format!("{}/ok", receiver.base), Value::Null).await;
    for n in 0..20 {
        app.create(vec![warehouse(n)]).await;
    }
    receiver.wait_for("ok", 20).await;
    wait_until("a hanging attempt ends as failed", || async {
        !app.attempts(&hang).await.is_empty()
    })
    .await;
    let attempt = &app.attempts(&hang).await[0];
    assert_eq!(attempt["outcome"], "failed");
    assert_eq!(attempt["http_status"], Value::Null);
    assert!(
        attempt["error"].as_str().unwrap().contains("no answer within 15 s"),
        "{attempt:#}"
    );
    assert!(attempt["duration_ms"].as_i64().unwrap() >= 15_000);
}

/// Rotation: for a while every delivery carries two signatures, the new secret's and the old one's.
#[tokio::test]
async fn a_rotated_secret_signs_beside_the_old_one() {
    let app = webhook_app().await;
    let receiver = Receiver::start().await;
    let (id, old) = app.webhook(&format!("{}/ok", receiver.base), Value::Null).await;
    let rotated = app.post("/v1/webhook/rotate_secret", &json!({"webhook_id": id})).await;
    assert_eq!(rotated.status, 200, "{:#}", rotated.body);
    let new = rotated.body["secret"].as_str().unwrap().to_owned();
    assert!(new.starts_with("whsec_") && new != old);
    app.create(vec![warehouse(1)]).await;
    let got = receiver.wait_for("ok", 1).await;
    assert_eq!(
        got[0].headers["webhook-signature"].to_str().unwrap().split(' ').count(),
        2
    );
    assert!(signed_by(&got[0], &new) && signed_by(&got[0], &old));
}

/// An endpoint where nothing listens: the attempt's error says so in words (no connection, the
/// address, refused), not in the HTTP library's words.
#[tokio::test]
async fn a_refused_connection_is_said_in_words() {
    let app = webhook_app().await;
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let (id, _) = app.webhook(&format!("http://127.0.0.1:{port}/none"), Value::Null).await;
    app.create(vec![warehouse(1)]).await;
    wait_until("the attempt fails", || async { !app.attempts(&id).await.is_empty() }).await;
    let attempt = &app.attempts(&id).await[0];
    assert_eq!(attempt["outcome"], "failed");
    assert_eq!(
        attempt["error"],
        format!(
            "no connection: 127.0.0.1:{port} refused the connection (nothing listens on that port, or a \
             firewall refuses it)"
        ),
        "{attempt:#}"
    );
}

/// Only public addresses at every attempt: a name that resolves to loopback is refused when the
/// attempt is made (and says why), without a connection.
#[tokio::test]
async fn a_name_that_resolves_to_a_private_address_is_not_called() {
    let app = TestApp::spawn_with_settings(Settings {
        rate: Rate::Off,
        webhooks: WebhookSettings {
            attempt_timeout: std::time::Duration::from_secs(15),
            retry: RetrySchedule::parse("100ms").unwrap(),
            reach: Reach {
                allow_http: true,
                allow_private: false,
            },
            ..WebhookSettings::default()
        },
        ..Settings::default()
    })
    .await;
    let receiver = Receiver::start().await;
    let port = receiver.base.rsplit(':').next().unwrap().to_owned();
    let (id, _) = app.webhook(&format!("http://localhost:{port}/ok"), Value::Null).await;
    app.create(vec![warehouse(1)]).await;
    wait_until("the attempt is refused", || async {
        !app.attempts(&id).await.is_empty()
    })
    .await;
    let attempt = &app.attempts(&id).await[0];
    assert_eq!(attempt["outcome"], "failed");
    let error = attempt["error"].as_str().unwrap();
    assert!(
        error.starts_with("refused as a private address: localhost resolves to ") && error.contains("loopback"),
        "{attempt:#}"
    );
    assert!(receiver.at("ok").is_empty(), "no connection was made");
}

/// An endpoint none of whose attempts succeeded for `--webhook-disable-after` is disabled.
#[tokio::test]
async fn an_endpoint_failing_for_long_is_disabled() {
    let app = TestApp::spawn_with_settings(Settings {
        rate: Rate::Off,
        webhooks: WebhookSettings {
            attempt_timeout: std::time::Duration::from_secs(15),
            retry: RetrySchedule::parse("300ms,300ms,300ms,300ms,300ms,300ms,300ms,300ms").unwrap(),
            disable_after: Duration::from_secs(1),
            reach: Reach {
                allow_http: true,
                allow_private: true,
            },
        },
        ..Settings::default()
    })
    .await;
    let receiver = Receiver::start().await;
    let (id, _) = app.webhook(&format!("{}/down", receiver.base), Value::Null).await;
    app.create(vec![warehouse(1)]).await;
    wait_until("the failing endpoint is disabled", || async {
        app.webhook_of(&id).await["disabled_reason"] == "failing"
    })
    .await;
    assert_eq!(app.webhook_of(&id).await["status"], "DISABLED");
    let before = receiver.at("down").len();
    // A healthy endpoint beside it: once it has the next event, the disabled one would have had
    // its attempt too.
    app.webhook(&format!("{}/ok", receiver.base), Value::Null).await;
    app.create(vec![warehouse(2)]).await;
    receiver.wait_for("ok", 1).await;
    assert_eq!(
        receiver.at("down").len(),
        before,
        "a disabled endpoint gets no more attempts"
    );
}

/// Retention drops an event's retry rows with the event: a retry whose event is no longer kept
/// could never be attempted, and would be pending for ever.
#[tokio::test]
async fn retention_drops_the_retries_of_the_events_it_drops() {
    let mut settings = webhook_settings();
    settings.webhooks.retry = RetrySchedule::parse("1h").unwrap();
    let app = TestApp::spawn_with_settings(settings).await;
    let receiver = Receiver::start().await;
    let (id, _) = app.webhook(&format!("{}/down", receiver.base), Value::Null).await;
    app.create(vec![warehouse(1), warehouse(2)]).await;
    receiver.wait_for("down", 2).await;
    let webhooks = app.store.webhooks();
    wait_until("two retries pending, an hour away", || async {
        app.attempts(&id).await.len() == 2 && webhooks.pending().await.unwrap() == 2
    })
    .await;
    while app.store.prune_events(storefront::store::now_ms() + 1).await.unwrap() > 0 {}
    assert_eq!(
        webhooks.pending().await.unwrap(),
        0,
        "the pruned events' retries are gone"
    );
}

//! Deciding ACTIVE or QUARANTINE through changes (CONTRACT §10.4): the neighbour named, ties,
//! a neighbour archived or moved deciding the others again, an operator's approval.

use serde_json::{Value, json};

use crate::changes::{ARCHIVE, RESTORE, UPDATE, one_error, wh};
use crate::helpers::*;

/// The neighbour a record's issue names (null when it has none).
fn named(record: &Value) -> Value {
    let Some(message) = record["issue"]["message"].as_str() else {
        return Value::Null;
    };
    let id = message
        .split("location ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next());
    json!(id)
}

#[tokio::test]
async fn deciding_active_or_quarantine() {
    let app = TestApp::spawn().await;
    // A: active. Q: 40 m north of A, quarantined by it. L: far away, created after both.
    // E: far away, created first.
    let ids = app
        .created(vec![wh("e", 5000.0), wh("a", 0.0), wh("q", 40.0), wh("l", 3000.0)])
        .await;
    let (e, a, q) = (&ids[0], &ids[1], &ids[2]);
    assert_eq!(app.record("q").await["status"], "QUARANTINE");
    assert_eq!(named(&app.record("q").await), json!(a));

    // Near an ACTIVE one: quarantined by it, and the result says so.
    let results = app.change(UPDATE, vec![wh("l", -30.0)]).await;
    assert_eq!(results[0]["status"], "QUARANTINE", "{:#}", results[0]);
    assert_eq!(
        one_error(&results[0]),
        (
            "locations[0].latitude".to_owned(),
            "STOREFRONT_RULE_VIOLATION".to_owned()
        )
    );
    assert_eq!(named(&app.record("l").await), json!(a));
    // Near only an older QUARANTINE one (Q, 90 m from A): quarantined by it.
    let results = app.change(UPDATE, vec![wh("l", 80.0)]).await;
    assert_eq!(results[0]["status"], "QUARANTINE");
    assert_eq!(named(&app.record("l").await), json!(q));
    // E is older than Q: a newer QUARANTINE one does not count.
    let results = app.change(UPDATE, vec![wh("e", 80.0)]).await;
    assert_eq!(results[0]["status"], "ACTIVE", "{:#}", results[0]);
    assert_eq!(results[0]["errors"], json!([]));
    assert_eq!(app.record("e").await["issue"], Value::Null);
    let _ = e;
    // Moving without leaving the neighbour: decided again, same answer; a content change that
    // does not move it keeps status and issue.
    let results = app
        .change(UPDATE, vec![with(wh("q", 40.0), "/name", Some(json!("Q2")))])
        .await;
    assert_eq!(results[0]["status"], "QUARANTINE");
    assert_eq!(results[0]["errors"], json!([]), "not decided by this item");
}

#[tokio::test]
async fn on_a_tie_the_location_created_first_is_named() {
    let app = TestApp::spawn().await;
    let ids = app
        .created(vec![wh("south", -20.0), wh("north", 20.0), wh("x", 5000.0)])
        .await;
    let results = app.change(UPDATE, vec![wh("x", 0.0)]).await;
    assert_eq!(results[0]["status"], "QUARANTINE");
    assert_eq!(named(&app.record("x").await), json!(ids[0]));
}

#[tokio::test]
async fn archiving_or_moving_a_location_decides_the_ones_it_quarantined_again() {
    let app = TestApp::spawn().await;
    // B is quarantined by A; C by D (42 m), the nearer of D and B (48 m).
    let ids = app
        .created(vec![wh("a", 0.0), wh("d", 120.0), wh("b", 30.0), wh("c", 78.0)])
        .await;
    let (a, d) = (&ids[0], &ids[1]);
    assert_eq!(named(&app.record("b").await), json!(a));
    assert_eq!(named(&app.record("c").await), json!(d));
    let c_before = app.record("c").await;
    // Move A away: B is decided again: C is within 50 m but QUARANTINE and newer, so B is ACTIVE
    // (one version higher); C's issue named D, untouched.
    let results = app.change(UPDATE, vec![wh("a", 10_000.0)]).await;
    assert_eq!(results[0]["status"], "ACTIVE");
    let b = app.record("b").await;
    assert_eq!(
        (b["status"].clone(), b["issue"].clone(), b["version"].clone()),
        (json!("ACTIVE"), Value::Null, json!(2))
    );
    assert_eq!(app.record("c").await, c_before);
    // Archive D: C is decided again; B, now active, quarantines it.
    let results = app.change(ARCHIVE, vec![json!({"location_id": d})]).await;
    assert_eq!(results[0]["status"], "ARCHIVED");
    let c = app.record("c").await;
    assert_eq!(c["status"], "QUARANTINE");
    assert_eq!(named(&c), json!(ids[2]));
    assert_eq!(c["version"], 2);
    // Archive B too: C is alone, ACTIVE.
    app.change(ARCHIVE, vec![json!({"merchant_location_id": "b"})]).await;
    let c = app.record("c").await;
    assert_eq!((c["status"].clone(), c["version"].clone()), (json!("ACTIVE"), json!(3)));
    // Restore D: decided by §10.4; C is ACTIVE 42 m away: D is QUARANTINE, by C.
    let results = app.change(RESTORE, vec![json!({"location_id": d})]).await;
    assert_eq!(results[0]["status"], "QUARANTINE");
    assert_eq!(one_error(&results[0]).1, "STOREFRONT_RULE_VIOLATION");
    assert_eq!(named(&app.record("d").await), json!(ids[3]));
}

#[tokio::test]
async fn an_approved_location_stays_active_until_it_moves() {
    let app = TestApp::spawn().await;
    let ids = app.created(vec![wh("a", 0.0), wh("q", 30.0)]).await;
    assert_eq!(
        app.store.approve_location(&ids[1]).await.unwrap(),
        storefront::store::Approval::Approved { version: 2 }
    );
    assert_eq!(
        app.store.approve_location(&ids[1]).await.unwrap(),
        storefront::store::Approval::NotQuarantined(storefront::domain::location::Status::Active)
    );
    assert_eq!(
        app.store.approve_location("nope").await.unwrap(),
        storefront::store::Approval::NotFound
    );
    let q = app.record("q").await;
    assert_eq!(
        (q["status"].clone(), q["issue"].clone(), q["version"].clone()),
        (json!("ACTIVE"), Value::Null, json!(2))
    );
    // A change that does not move it, an archive and a restore: still ACTIVE.
    let results = app
        .change(UPDATE, vec![with(wh("q", 30.0), "/name", Some(json!("Q")))])
        .await;
    assert_eq!(results[0]["status"], "ACTIVE");
    app.change(ARCHIVE, vec![json!({"merchant_location_id": "q"})]).await;
    let results = app.change(RESTORE, vec![json!({"merchant_location_id": "q"})]).await;
    assert_eq!(results[0]["status"], "ACTIVE", "{:#}", results[0]);
    // Moved (still near A): decided again.
    let results = app.change(UPDATE, vec![wh("q", 35.0)]).await;
    assert_eq!(results[0]["status"], "QUARANTINE");
    assert_eq!(named(&app.record("q").await), json!(ids[0]));
}

//! The operator's CLI (CONTRACT §22): merchants and keys listed, and the commands that only read or
//! review refusing a SQLite file that does not exist.

use serde_json::Value;

use crate::helpers::*;

/// The operator's listings (CONTRACT §22): merchants oldest first, a merchant's keys with their
/// scope and revocation and never a key itself, as text and as JSON lines; an unknown merchant is
/// exit 1.
#[tokio::test]
async fn merchants_and_keys_are_listed_for_the_operator() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("ops.db");
    let first = merchant_create(&db, "First shop");
    let second = merchant_create(&db, "Second shop");
    let out = storefront(&db).args(["merchant", "list", "--json"]).output().unwrap();
    assert!(out.status.success());
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(
        stdout.starts_with(r#"{"merchant_id":""#),
        "keys in the contract's order: {stdout}"
    );
    assert!(
        stdout
            .lines()
            .all(|l| l.contains(r#"","name":""#) && l.contains(r#"","created_at":""#))
    );
    let lines: Vec<Value> = stdout.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["merchant_id"], first["merchant_id"]);
    assert_eq!(lines[0]["name"], "First shop");
    assert_eq!(lines[1]["merchant_id"], second["merchant_id"]);
    assert_eq!(lines[0].as_object().unwrap().len(), 3);
    assert!(lines[0]["created_at"].as_str().unwrap().ends_with('Z'));
    let text = storefront(&db).args(["merchant", "list"]).output().unwrap();
    assert!(String::from_utf8(text.stdout).unwrap().contains("2 merchant(s)"));

    let id = first["merchant_id"].as_str().unwrap();
    let issued = storefront(&db)
        .args(["key", "issue", "--merchant", id, "--scope", "storefront", "--json"])
        .output()
        .unwrap();
    let issued: Value = serde_json::from_slice(&issued.stdout).unwrap();
    let revoked = first["key_id"].as_str().unwrap();
    assert!(
        storefront(&db)
            .args(["key", "revoke", revoked])
            .status()
            .unwrap()
            .success()
    );
    let out = storefront(&db)
        .args(["key", "list", "--merchant", id, "--json"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(!stdout.contains("sf_"), "never a key itself: {stdout}");
    let lines: Vec<Value> = stdout.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["key_id"], revoked);
    assert_eq!(lines[0]["scope"], "full");
    assert!(lines[0]["revoked_at"].is_string());
    assert_eq!(lines[1]["key_id"], issued["key_id"]);
    assert_eq!(lines[1]["scope"], "storefront");
    assert_eq!(lines[1]["revoked_at"], Value::Null);
    assert_eq!(lines[1].as_object().unwrap().len(), 4);
    assert!(
        stdout
            .lines()
            .all(|l| l.starts_with(r#"{"key_id":""#) && l.contains(r#"","scope":""#)),
        "keys in the contract's order: {stdout}"
    );

    let unknown = storefront(&db)
        .args(["key", "list", "--merchant", "no-such-merchant"])
        .output()
        .unwrap();
    assert_eq!(unknown.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("no merchant with id no-such-merchant"));
}

/// The commands that only read or review refuse a SQLite file that does not exist (exit 1, its
/// path named) and create nothing; `categories export` still creates the database.
#[test]
fn read_and_review_commands_refuse_a_missing_database_and_create_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("missing.db");
    for args in [
        &["merchant", "list"][..],
        &["key", "list", "--merchant", "m"],
        &["key", "revoke", "k"],
        &["locations", "quarantined"],
        &["locations", "approve", "l"],
    ] {
        let out = storefront(&db).args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(&db.display().to_string()), "{args:?}: {stderr}");
        assert!(!db.exists(), "{args:?} created the database");
    }
    assert!(
        storefront(&db)
            .args(["categories", "export"])
            .status()
            .unwrap()
            .success()
    );
    assert!(db.exists());
}

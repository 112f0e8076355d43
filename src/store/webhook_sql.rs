//! The SQL of a merchant's endpoints, written once for both engines (`mark`: `?` for SQLite, `$`
//! for PostgreSQL, before each parameter's number): how many count towards the merchant's
//! endpoints, adding one, and its changes (delete, enable, a new secret). Each engine runs them in
//! one transaction that takes turns with the merchant's other writes.

use super::sql_text::marked;

/// The merchant's endpoints not deleted (parameter: the merchant), which count towards
/// `MAX_WEBHOOKS` whether enabled or not.
pub fn count_live(mark: char) -> String {
    marked(
        "SELECT count(*) FROM webhooks WHERE merchant_pk = $1 AND deleted_at IS NULL",
        mark,
    )
}

/// A new endpoint (parameters: id, merchant, URL, type bits, status, secret, created at). Only the
/// events appended from then on are sent to it: it starts where the merchant's log stands.
pub fn insert(mark: char) -> String {
    marked(
        "INSERT INTO webhooks (webhook_id, merchant_pk, url, types, status, secret, created_at, \
         delivered_through, claimed_through, created_through) SELECT $1, $2, $3, $4, $5, $6, $7, l, l, l FROM \
         (SELECT coalesce(max(last_sequence), 0) AS l FROM event_logs WHERE merchant_pk = $2) AS log",
        mark,
    )
}

/// Deletes an endpoint (parameters: id, now): it no longer counts, and no instance's claim of it
/// stands.
pub fn delete(mark: char) -> String {
    marked(
        "UPDATE webhooks SET deleted_at = $2, claim_until = 0, claim_owner = NULL WHERE webhook_id = $1",
        mark,
    )
}

/// A deleted endpoint's retries (parameter: id): none is made.
pub fn drop_retries(mark: char) -> String {
    marked("DELETE FROM deliveries WHERE webhook_id = $1", mark)
}

/// Enables an endpoint (parameters: id, merchant). What was appended while it was disabled is not
/// sent (the feed has it, a recovery sends it): it goes on from where the merchant's log stands.
pub fn enable(mark: char) -> String {
    marked(
        "UPDATE webhooks SET status = 'ENABLED', disabled_reason = NULL, failing_since = NULL, \
         delivered_through = (SELECT coalesce(max(last_sequence), 0) FROM event_logs WHERE merchant_pk = $2), \
         claimed_through = (SELECT coalesce(max(last_sequence), 0) FROM event_logs WHERE merchant_pk = $2), \
         claim_until = 0, claim_owner = NULL WHERE webhook_id = $1",
        mark,
    )
}

/// A new secret (parameters: id, the new secret, until when the old one signs beside it).
pub fn rotate(mark: char) -> String {
    marked(
        "UPDATE webhooks SET old_secret = secret, old_secret_until = $3, secret = $2 WHERE webhook_id = $1",
        mark,
    )
}

//! The SQL of resends, tests and recoveries, written once for both engines (`mark`: `?` or `$`).
//!
//! A recovery's statements:
//! the events of one batch that a recovery takes, counted, and made retry rows where the endpoint
//! has settled them. The parameters, in order: the merchant (1), the batch's sequences from (2)
//! and before (3), the times from (4) and before (5), the endpoint's type bits (6) and id (7),
//! its `delivered_through` (8), and when the rows are due (9).

use super::event_rows::EVENT_COLUMNS;
use super::sql_text::marked;

/// The events of a batch a recovery takes: of the merchant, in the batch, appended in the
/// window, of a type the endpoint takes, not delivered to it already (`delivery_attempts_by_event`).
fn taken(mark: char) -> String {
    format!(
        "FROM events e WHERE e.merchant_pk = {mark}1 AND e.sequence >= {mark}2 AND e.sequence < {mark}3 \
         AND e.appended_at >= {mark}4 AND e.appended_at < {mark}5 AND ((CAST({mark}6 AS bigint) >> e.type) & 1) = 1 \
         AND NOT EXISTS (SELECT 1 FROM delivery_attempts a WHERE a.webhook_id = {mark}7 \
         AND a.event_id = e.event_id AND a.outcome = 'delivered')"
    )
}

/// How many events of the batch the recovery takes (parameters 1 to 7).
pub fn count(mark: char) -> String {
    format!("SELECT count(*) {}", taken(mark))
}

/// Retry rows, due at once with their attempts counted from 0, of the events the recovery takes
/// that the endpoint has settled (through its `delivered_through`; the later ones its windows
/// send). A row already there starts its schedule again, unless an attempt of it is being made
/// (its claim holds past `now`: that attempt is the one made at once).
pub fn insert(mark: char, now: &str) -> String {
    format!(
        "INSERT INTO deliveries (webhook_id, sequence, merchant_pk, attempts, next_attempt_at, appended_at) \
         SELECT {mark}7, e.sequence, e.merchant_pk, 0, {mark}9, e.appended_at {} AND e.sequence <= {mark}8 \
         ON CONFLICT (webhook_id, sequence) DO UPDATE SET attempts = 0, next_attempt_at = excluded.next_attempt_at \
         WHERE deliveries.claim_until < {now}",
        taken(mark)
    )
}

/// How many retry rows of the batch an attempt holds at this moment (their claims hold past
/// `now`): the insert leaves them as they are, and they are taken all the same. Its parameters are
/// the first five of the insert's and then the endpoint's id (6): a statement names every
/// parameter it is given. A retry row is only ever made of an event of a type the endpoint takes,
/// and is dropped once the event is delivered.
pub fn claimed(mark: char, now: &str) -> String {
    format!(
        "SELECT count(*) FROM deliveries WHERE webhook_id = {mark}6 AND merchant_pk = {mark}1 \
         AND sequence >= {mark}2 AND sequence < {mark}3 AND appended_at >= {mark}4 AND appended_at < {mark}5 \
         AND claim_until >= {now}"
    )
}

/// One event's `appended_at` by its sequence: a bisection's probe (parameters: merchant, sequence).
pub fn probe(mark: char) -> String {
    format!("SELECT appended_at FROM events WHERE merchant_pk = {mark}1 AND sequence = {mark}2")
}

/// An event of the merchant by its id (parameters: merchant, event id), its columns read by
/// `stored_event`.
pub fn event_by_id(mark: char) -> String {
    marked(
        &format!("SELECT {EVENT_COLUMNS} FROM events e WHERE e.merchant_pk = $1 AND e.event_id = $2"),
        mark,
    )
}

/// How many attempts of an event were made to an endpoint (parameters: endpoint, event id).
pub fn attempts_of(mark: char) -> String {
    marked(
        "SELECT count(*) FROM delivery_attempts WHERE webhook_id = $1 AND event_id = $2",
        mark,
    )
}

/// An attempt made by hand (parameters: endpoint, event id, sequence, attempt, attempted at,
/// outcome, HTTP status, error, duration, what made it); answers its id.
pub fn record_attempt(mark: char) -> String {
    marked(
        "INSERT INTO delivery_attempts (webhook_id, event_id, sequence, attempt, attempted_at, outcome, \
         http_status, error, duration_ms, made_by) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING id",
        mark,
    )
}

/// A delivered resend settles its event (parameters: endpoint, sequence): its retry row goes...
pub fn drop_retry(mark: char) -> String {
    marked("DELETE FROM deliveries WHERE webhook_id = $1 AND sequence = $2", mark)
}

/// ...and a window that reaches it finds it delivered (parameters: endpoint, sequence).
pub fn resent_through(mark: char) -> String {
    marked(
        "UPDATE webhooks SET resent_through = CASE WHEN resent_through > $2 THEN resent_through ELSE $2 END \
         WHERE webhook_id = $1",
        mark,
    )
}

//! The SQL of a merchant's endpoints, written once for both engines (`mark`: `?` for SQLite, `$`
//! for PostgreSQL, before each parameter's number): how many count towards the merchant's
//! endpoints, adding one, and its changes (delete, enable, a new secret). Each engine runs them in
//! one transaction that takes turns with the merchant's other writes. And claiming windows: the
//! statements, and the loop over the endpoints the chooser picks, each engine giving its steps.

use super::error::StoreError;
use super::event_rows::{ClaimedEndpoint, ENDPOINT_COLUMNS, EVENT_COLUMNS, StoredEvent, delivered_column};
use super::sql_text::marked;
use super::webhook_api::{Candidate, ClaimRequest, Claimed, Window, choose_windows, window_size};

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

/// The endpoints that may have a window to claim: enabled, not held by a claim, with events past
/// what they settled; the failing ones last. Parameters from `first`: the instance's now where the
/// engine passes it, then the most rows read. `now` is the database's clock or a parameter;
/// `skip` excludes the endpoints in a list (PostgreSQL) or nothing (SQLite skips them as it reads);
/// `of` only the endpoints of some merchants (through the endpoints' index by merchant), or
/// nothing; `lock` what the engine adds to hold the rows against other instances.
pub fn window_endpoints(now: &str, limit: &str, skip: &str, of: &str, lock: &str) -> String {
    format!(
        "SELECT {ENDPOINT_COLUMNS}, w.delivered_through, l.last_sequence, w.resent_through FROM webhooks w \
         JOIN event_logs l ON l.merchant_pk = w.merchant_pk \
         WHERE w.status = 'ENABLED' AND w.deleted_at IS NULL AND w.claim_until < {now} \
         AND l.last_sequence > w.delivered_through{skip}{of} ORDER BY w.failing_since IS NOT NULL LIMIT {limit}{lock}"
    )
}

/// A window's events (parameters: merchant, after, most, endpoint, resent through), each with
/// whether it was delivered to the endpoint already.
pub fn window_events(mark: char) -> String {
    format!(
        "SELECT {EVENT_COLUMNS}, {} FROM events e WHERE e.merchant_pk = {mark}1 AND e.sequence > {mark}2 \
         ORDER BY e.sequence LIMIT {mark}3",
        delivered_column(mark, 4)
    )
}

/// The endpoints that have retry rows, as the rows `ids(webhook_id)` of a `WITH` (the last one
/// null), one probe of the rows' index apiece (each the least id past the one before): a claim of
/// retries looks at each one's first row due, so that what it reads grows with the endpoints that
/// have retries, never with their backlogs.
pub const ENDPOINT_IDS: &str = "WITH RECURSIVE ids(webhook_id) AS (\
     SELECT (SELECT min(webhook_id) FROM deliveries) \
     UNION ALL SELECT (SELECT min(d.webhook_id) FROM deliveries d WHERE d.webhook_id > ids.webhook_id) \
     FROM ids WHERE ids.webhook_id IS NOT NULL)";

/// The retry rows (`d`) of `endpoint` that a claim may take: due by `due_by` (the instance's
/// clock), held by no claim at `claims_by` (the claims' clock). Read in `next_attempt_at` order,
/// through the rows' index by endpoint and time.
pub fn retries_due(endpoint: &str, due_by: &str, claims_by: &str) -> String {
    format!("d.webhook_id = {endpoint} AND d.next_attempt_at <= {due_by} AND d.claim_until < {claims_by}")
}

/// What the endpoints with retry rows offer a claim: each enabled one with a row it may take
/// (`retries_due`), its merchant, whether it is failing, and when that row fell due, the earliest
/// first. One probe of the rows' index apiece, whatever the backlogs. `skip` excludes endpoints
/// (a condition on `w`, or nothing).
pub fn retry_offers(due_by: &str, claims_by: &str, skip: &str) -> String {
    format!(
        "{ENDPOINT_IDS} SELECT webhook_id, merchant_pk, failing FROM (\
         SELECT w.webhook_id, w.merchant_pk, w.failing_since IS NOT NULL AS failing, \
         (SELECT d.next_attempt_at FROM deliveries d WHERE {} ORDER BY d.next_attempt_at LIMIT 1) AS first_due \
         FROM ids JOIN webhooks w ON w.webhook_id = ids.webhook_id \
         WHERE w.status = 'ENABLED' AND w.deleted_at IS NULL{skip}) o \
         WHERE o.first_due IS NOT NULL ORDER BY o.first_due, o.webhook_id",
        retries_due("w.webhook_id", due_by, claims_by)
    )
}

/// An endpoint's window claimed (parameters: endpoint, through, owner; `until` the claim's end,
/// the database's clock plus a hold or a parameter).
pub fn claim_window(mark: char, until: &str) -> String {
    format!(
        "UPDATE webhooks SET claimed_through = {mark}2, claim_until = {until}, claim_owner = {mark}3 \
         WHERE webhook_id = {mark}1"
    )
}

/// An endpoint that may have a window, as read: it, where it settled through, where its
/// merchant's log stands, and how far resends settled it.
pub struct WindowCandidate {
    pub endpoint: ClaimedEndpoint,
    pub delivered_through: i64,
    pub last_sequence: i64,
    pub resent_through: i64,
}

/// What claiming windows reads and writes, in each engine's transaction.
#[allow(async_fn_in_trait)]
pub trait WindowSteps {
    /// The endpoints that may have a window (`window_endpoints`), none of `req.skip`, of
    /// `req.merchants` when it lists some; and whether the read stopped at its bound.
    async fn endpoints(&mut self, req: &ClaimRequest<'_>) -> Result<(Vec<WindowCandidate>, bool), StoreError>;
    /// A window's events (`window_events`).
    async fn events(&mut self, candidate: &WindowCandidate, size: i64) -> Result<Vec<(StoredEvent, bool)>, StoreError>;
    /// Claims the window (`claim_window`).
    async fn claim(&mut self, window: &Window, req: &ClaimRequest<'_>) -> Result<(), StoreError>;
}

/// The endpoints a claim's retries skip: those the request skips, and those whose window it just
/// claimed (their places are taken: no retry of them is attempted beside their window).
pub fn skip_after_windows(skip: &[String], windows: &[Window]) -> Vec<String> {
    skip.iter()
        .cloned()
        .chain(windows.iter().map(|w| w.webhook_id.clone()))
        .collect()
}

/// Claims the windows of the endpoints the chooser picks among those that have one, `req.windows`
/// at most: each the endpoint's next events (fewer while it is failing), held by `req.owner`.
/// Sets the claim's `unclaimed` and `more`.
pub async fn claim_windows<S: WindowSteps>(
    steps: &mut S,
    req: &ClaimRequest<'_>,
    claimed: &mut Claimed,
) -> Result<(), StoreError> {
    let (found, more) = steps.endpoints(req).await?;
    claimed.more = more;
    let candidates: Vec<Candidate> = found.iter().map(|c| c.endpoint.candidate()).collect();
    let chosen = choose_windows(req.chooser.as_ref(), &candidates, req.windows);
    for (i, candidate) in found.iter().enumerate() {
        if !chosen.contains(&i) {
            claimed.unclaimed.push(candidate.endpoint.merchant_pk);
        }
    }
    for i in chosen {
        let candidate = &found[i];
        let size = window_size(candidate.endpoint.failing_since_ms.is_some());
        let events = steps.events(candidate, size).await?;
        let window = candidate
            .endpoint
            .window(&events, candidate.last_sequence, req.now_ms)?;
        steps.claim(&window, req).await?;
        claimed.windows.push(window);
    }
    Ok(())
}

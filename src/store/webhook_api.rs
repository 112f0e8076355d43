//! What the store keeps of webhooks, behind a trait of its own beside `Store`:
//! the endpoints, what is still to be delivered, and the attempts made. The rules (who may, when to
//! retry, when to disable) are the callers'; this is only what is stored and how it is claimed.
//!
//! **What is pending** costs a create nothing beyond its events: each endpoint keeps the sequence
//! through which its merchant's events are settled (`delivered_through`: delivered, given up, or
//! waiting for a retry), so every event after it is pending for it, stored by the very transaction
//! that stored the event. An instance claims a *window* of an endpoint's next events (its claim
//! expires, and is then taken over), attempts them, and settles the window in one transaction:
//! the failed ones become retry rows (`deliveries`), and `delivered_through` moves past the window.

use std::time::Duration;

use async_trait::async_trait;

use super::error::StoreError;
use crate::domain::webhook::{Attempt, DisabledReason, Outcome, Webhook};
use crate::secret::Secret;

/// A new endpoint, with its secret.
#[derive(Clone, Debug)]
pub struct NewWebhook {
    pub webhook: Webhook,
    pub secret: Secret,
}

/// A change to an endpoint.
#[derive(Clone, Debug)]
pub enum WebhookChange {
    /// Deleted: nothing more is delivered to it, and it no longer counts.
    Delete,
    /// `ENABLED` again; what was appended meanwhile is not sent.
    Enable,
    /// A new secret; the old one signs too until `old_until_ms`.
    Rotate { secret: Secret, old_until_ms: i64 },
}

/// The secrets an endpoint signs with at `now_ms`: its own, and the old one while a rotation
/// lasts (the rule of both engines: each reads the three columns and asks this).
pub fn signing_secrets(secret: String, old: Option<String>, old_until_ms: Option<i64>, now_ms: i64) -> Vec<Secret> {
    let mut secrets = vec![Secret::new(secret)];
    if let (Some(old), Some(until)) = (old, old_until_ms)
        && until > now_ms
    {
        secrets.push(Secret::new(old));
    }
    secrets
}

/// A delivery claimed for an attempt: the endpoint's address and secrets, and the event.
#[derive(Clone, Debug)]
pub struct Due {
    pub webhook_id: String,
    pub merchant_pk: i64,
    pub url: String,
    /// The secret, and the old one while a rotation lasts.
    pub secrets: Vec<Secret>,
    /// When its first attempt since its last delivered one failed (none: it is not failing).
    pub failing_since_ms: Option<i64>,
    pub sequence: i64,
    /// Attempts made so far.
    pub attempts: i64,
    /// When its event was committed.
    pub appended_at_ms: i64,
    pub event_id: String,
    pub body: String,
}

/// An endpoint's next events, claimed by one instance: those of its merchant's events after its
/// `delivered_through` and through `through` that are of its types (`dues`; maybe none).
#[derive(Clone, Debug)]
pub struct Window {
    pub webhook_id: String,
    pub merchant_pk: i64,
    pub through: i64,
    pub dues: Vec<Due>,
}

/// What one claim took: windows of fresh events, and retries due; and what it saw of the rest.
#[derive(Clone, Debug, Default)]
pub struct Claimed {
    pub windows: Vec<Window>,
    pub retries: Vec<Due>,
    /// The merchants of endpoints with fresh events that were found but not claimed (the
    /// chooser gave them no place, or another instance took them first).
    pub unclaimed: Vec<i64>,
    /// Whether the look for fresh events stopped at its bound: more endpoints may have some.
    pub more: bool,
    /// Whether any endpoint offered a retry due (taken or not, for want of room): more may be.
    pub retries_offered: bool,
}

/// An endpoint with work to claim (fresh events, or retries due), as the store offers it to the
/// scheduler that chooses whom to serve.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Candidate {
    pub webhook_id: String,
    pub merchant_pk: i64,
    /// Its attempts have been failing (since its last delivered one).
    pub failing: bool,
}

/// Chooses among the candidates, in the store's order, at most `most` to claim now: for each,
/// how many attempts of it may run at once (0: not claimed). The places are taken as it
/// chooses; the caller gives back those of candidates the store did not claim after all.
pub trait Chooser: Send + Sync {
    fn choose(&self, candidates: &[Candidate], most: usize) -> Vec<usize>;
}

/// Most retry rows of one endpoint claimed at once, for each attempt of it that may run at once.
pub const RETRIES_PER_PLACE: usize = 4;

/// The endpoints the chooser picks among `candidates` (in the store's order), at most `most`:
/// their indexes, in that order.
pub fn choose_windows(chooser: &dyn Chooser, candidates: &[Candidate], most: usize) -> Vec<usize> {
    let granted = chooser.choose(candidates, most);
    (0..candidates.len())
        .filter(|&i| granted.get(i).is_some_and(|&n| n > 0))
        .collect()
}

/// How many retry rows each endpoint among `offered` (those with retries due, the earliest due
/// first) may have claimed now: `RETRIES_PER_PLACE` for each place the chooser gives it, `most`
/// at most (0: not chosen). A claim reads only the chosen endpoints' rows, that many each at most.
pub fn retry_room(chooser: &dyn Chooser, offered: &[Candidate], most: usize) -> Vec<usize> {
    chooser
        .choose(offered, most)
        .into_iter()
        .map(|places| (places * RETRIES_PER_PLACE).min(most))
        .collect()
}

/// Which of the rows read to claim, given how many were read due for each endpoint (its first
/// ones, within its room): one row of each endpoint in turn, every endpoint's first before any
/// endpoint's second, `most` in all. How many of each endpoint's first rows to claim.
pub fn take_retries(read: &[usize], most: usize) -> Vec<usize> {
    let mut taken = vec![0; read.len()];
    let mut left = most;
    for round in 0..read.iter().copied().max().unwrap_or(0) {
        for (took, _) in taken.iter_mut().zip(read).filter(|&(_, &n)| n > round) {
            if left == 0 {
                return taken;
            }
            *took += 1;
            left -= 1;
        }
    }
    taken
}

/// What to claim, for whom.
#[derive(Clone, Copy)]
pub struct ClaimRequest<'a> {
    /// The instance claiming (a random token of its worker): it alone settles what it claims.
    pub owner: &'a str,
    /// The instance's clock: which retries are due, which secrets sign.
    pub now_ms: i64,
    /// How long the claim holds unless extended (PostgreSQL: on the database's clock).
    pub hold: Duration,
    /// Most endpoints whose fresh events to claim (a window each).
    pub windows: usize,
    /// Most retries to claim.
    pub retries: usize,
    /// Endpoints not to claim (this instance has attempts of theirs in flight).
    pub skip: &'a [String],
    /// Whose endpoints' fresh events to look for: every merchant's (`None`), or only these
    /// merchants' (a look through their endpoints alone, whatever the number of others).
    pub merchants: Option<&'a [i64]>,
    /// Who is served among the endpoints with work.
    pub chooser: &'a std::sync::Arc<dyn Chooser>,
}

impl ClaimRequest<'_> {
    /// Whether the claim looks for fresh events at all: windows asked for, of any merchant or of
    /// some listed.
    pub fn looks_for_windows(&self) -> bool {
        self.windows > 0 && self.merchants.is_none_or(|m| !m.is_empty())
    }

    /// Whether the claim asks for anything: one that does not needs no connection, and on SQLite
    /// no turn of the writer.
    pub fn asks(&self) -> bool {
        self.looks_for_windows() || self.retries > 0
    }
}

/// A page of an endpoint's attempts: the merchant's endpoint, below which attempt, how many, of
/// which outcome and event.
#[derive(Clone, Debug)]
pub struct AttemptsQuery {
    pub merchant_pk: i64,
    pub webhook_id: String,
    pub before: Option<i64>,
    pub limit: usize,
    pub filter: AttemptFilter,
}

/// The deliveries log's filter: an outcome, an event (none: any).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct AttemptFilter {
    pub outcome: Option<Outcome>,
    pub event_id: Option<String>,
}

/// The claims an owner holds, to extend by `hold`.
#[derive(Clone, Copy, Debug)]
pub struct Held<'a> {
    pub owner: &'a str,
    pub hold: Duration,
    pub windows: &'a [String],
    pub retries: &'a [(String, i64)],
}

/// Claims an owner no longer holds.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Lost {
    pub windows: Vec<String>,
    pub retries: Vec<(String, i64)>,
}

/// What one claim's attempts were: a window's (settled through the last event it attempted), or
/// retries.
#[derive(Clone, Debug, PartialEq)]
pub enum Source {
    Window {
        webhook_id: String,
        /// Where the claim ran to (`claimed_through`): the window is settled only while it is.
        claimed_through: i64,
        /// Where the endpoint's `delivered_through` moves: `claimed_through` when every due was
        /// attempted, else the last one attempted (the rest are claimed again).
        settled_through: Option<i64>,
    },
    Retries,
}

/// What an instance did with a claim: its attempts, and what they were.
#[derive(Clone, Debug)]
pub struct Settlement {
    pub source: Source,
    pub attempts: Vec<Settled>,
}

/// An attempt's result, as the worker saw it, for the settle plan.
#[derive(Clone, Debug)]
pub struct Settled {
    pub webhook_id: String,
    pub merchant_pk: i64,
    pub appended_at_ms: i64,
    /// The event's place in its merchant's log.
    pub sequence: i64,
    /// The endpoint's `failing_since` when the delivery was claimed.
    pub failing_since_ms: Option<i64>,
    pub attempt: Attempt,
    /// A 429's or 503's `Retry-After`.
    pub retry_after: Option<Duration>,
    /// When the attempt ended.
    pub ended_at_ms: i64,
    /// This attempt's jitter of the schedule, in -1..1.
    pub jitter: f64,
}

/// What becomes of an endpoint's failing clock (`failing_since`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Failing {
    /// Not failing: an attempt was delivered, and none failed after it.
    Clear,
    /// Failing since this time, unless it already was (no attempt was delivered).
    SinceUnlessSet(i64),
    /// Failing since this time: the first failure after a delivery.
    Since(i64),
}

/// A delivery to be tried again.
#[derive(Clone, Debug, PartialEq)]
pub struct Retry {
    pub webhook_id: String,
    pub sequence: i64,
    pub merchant_pk: i64,
    /// Attempts made so far.
    pub attempts: i64,
    pub at_ms: i64,
    pub appended_at_ms: i64,
}

/// What a batch of attempts writes.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SettlePlan {
    /// Every attempt, by endpoint, in the order made.
    pub attempts: Vec<(String, Attempt)>,
    /// A window's failed events, to be tried again: stored only while the window's claim stands
    /// (`claimed_through`) and the endpoint is enabled.
    pub new_retries: Vec<(Retry, i64)>,
    /// Retry rows tried again later (while the owner holds them).
    pub rescheduled: Vec<Retry>,
    /// Retry rows delivered or given up: deleted (while the owner holds them).
    pub done: Vec<(String, i64)>,
    /// Each endpoint's failing clock.
    pub failing: Vec<(String, Failing)>,
    /// Endpoints disabled, and why: their pending deliveries are dropped.
    pub disable: Vec<(String, DisabledReason)>,
    /// Windows settled: the endpoint, its `claimed_through`, and where `delivered_through` moves
    /// (none: nowhere; the claim is only released).
    pub windows: Vec<(String, i64, Option<i64>)>,
}

/// Most fresh events in one window, and in a window of an endpoint whose last attempt failed: its
/// attempts may each take the 15 s of a receiver that does not answer, and a window must end well
/// within its claim (eight at once: one round).
pub const WINDOW: usize = 64;
pub const FAILING_WINDOW: usize = 8;

/// The window size for an endpoint that is failing (or not).
pub fn window_size(failing: bool) -> i64 {
    if failing { FAILING_WINDOW as i64 } else { WINDOW as i64 }
}

/// Most old attempts dropped by one call of `prune_attempts` (it is called again while it drops
/// as many: one short transaction each, never a long one that holds the writer).
pub const PRUNE_BATCH: i64 = 1000;

#[async_trait]
pub trait WebhookStore: Send + Sync {
    /// Stores a new endpoint of the merchant; `None` when it has `MAX_WEBHOOKS` already.
    async fn create_webhook(&self, merchant_pk: i64, new: NewWebhook) -> Result<Option<Webhook>, StoreError>;

    /// The merchant's endpoints that are not deleted, oldest first.
    async fn list_webhooks(&self, merchant_pk: i64) -> Result<Vec<Webhook>, StoreError>;

    /// Changes the merchant's endpoint; the endpoint after the change (as it was, for a delete),
    /// or `None` when the merchant has no such endpoint.
    async fn change_webhook(
        &self,
        merchant_pk: i64,
        webhook_id: &str,
        change: WebhookChange,
    ) -> Result<Option<Webhook>, StoreError>;

    /// Up to `limit + 1` of the endpoint's attempts with an `id` below `before`, newest first;
    /// `None` when the merchant has no such endpoint (deleted ones included: their attempts are
    /// kept).
    async fn attempts(&self, page: AttemptsQuery) -> Result<Option<Vec<Attempt>>, StoreError>;

    /// Claims for `owner`, for `hold` (no other instance attempts them before then), windows of
    /// up to `WINDOW` fresh events of enabled endpoints, and retries due of enabled endpoints, as
    /// `request` says.
    async fn claim(&self, request: ClaimRequest<'_>) -> Result<Claimed, StoreError>;

    /// Holds `held.owner`'s claims of these windows (by endpoint) and retries (by endpoint and
    /// sequence) for `held.hold` from now: its attempts of them are still running. Answers the
    /// claims it no longer holds (taken over, or the endpoint deleted or disabled meanwhile).
    async fn extend(&self, held: Held<'_>) -> Result<Lost, StoreError>;

    /// Writes a settle plan in one transaction: what `owner`'s claims came to. Deliveries and
    /// windows are changed only where `owner` still holds their claim.
    async fn settle(&self, owner: &str, plan: SettlePlan) -> Result<(), StoreError>;

    /// How many deliveries are pending (an endpoint's fresh events counted whatever their type).
    async fn pending(&self) -> Result<u64, StoreError>;

    /// Drops up to `PRUNE_BATCH` attempts made before `cutoff_ms` (retention, as events); how many.
    async fn prune_attempts(&self, cutoff_ms: i64) -> Result<usize, StoreError>;
}

/// The rows to claim of those read for each endpoint (its first ones, within its room), as
/// `take_retries` takes them, endpoint by endpoint.
pub fn take_rows<T>(read: Vec<Vec<T>>, most: usize) -> Vec<T> {
    let counts: Vec<usize> = read.iter().map(Vec::len).collect();
    read.into_iter()
        .zip(take_retries(&counts, most))
        .flat_map(|(rows, n)| rows.into_iter().take(n))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Grants the places it was made with, candidate by candidate.
    struct Grants(Vec<usize>);

    impl Chooser for Grants {
        fn choose(&self, candidates: &[Candidate], _: usize) -> Vec<usize> {
            (0..candidates.len())
                .map(|i| self.0.get(i).copied().unwrap_or(0))
                .collect()
        }
    }

    fn offered(n: usize) -> Vec<Candidate> {
        (0..n)
            .map(|i| Candidate {
                webhook_id: format!("w{i}"),
                merchant_pk: i as i64,
                failing: false,
            })
            .collect()
    }

    #[test]
    fn an_endpoint_s_room_is_four_rows_a_place_and_never_more_than_the_claim_takes() {
        assert_eq!(retry_room(&Grants(vec![8, 0, 1]), &offered(3), 64), vec![32, 0, 4]);
        assert_eq!(retry_room(&Grants(vec![8, 0, 1]), &offered(3), 10), vec![10, 0, 4]);
    }

    #[test]
    fn rows_are_taken_one_of_each_endpoint_in_turn() {
        // Two endpoints with full rooms of rows due before the third's one row: all three are
        // served, the first one more than the second as it comes first.
        assert_eq!(take_retries(&[32, 32, 1], 64), vec![32, 31, 1]);
        assert_eq!(take_retries(&[2, 0, 5], 4), vec![2, 0, 2]);
        assert_eq!(take_retries(&[3, 1], 64), vec![3, 1]);
        assert_eq!(take_retries(&[], 64), Vec::<usize>::new());
        assert_eq!(take_retries(&[5, 5], 0), vec![0, 0]);
    }
}

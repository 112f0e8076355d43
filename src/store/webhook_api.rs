//! What the store keeps of webhooks (CONTRACT §18.3), behind a trait of its own beside `Store`:
//! the endpoints, what is still to be delivered, and the attempts made. The rules (who may, when to
//! retry, when to disable) are the callers'; this is only what is stored and how it is claimed.
//!
//! **What is pending** costs a create nothing beyond its events: each endpoint keeps the sequence
//! through which its merchant's events are settled (`delivered_through`: delivered, given up, or
//! waiting for a retry), so every event after it is pending for it, stored by the very transaction
//! that stored the event. An instance claims a *window* of an endpoint's next events (its claim
//! expires, and is then taken over), attempts them, and settles the window in one transaction:
//! the failed ones become retry rows (`deliveries`), and `delivered_through` moves past the window.

use async_trait::async_trait;

use super::error::StoreError;
use crate::domain::webhook::{Attempt, DisabledReason, Webhook};

/// A new endpoint, with its secret.
#[derive(Clone, Debug)]
pub struct NewWebhook {
    pub webhook: Webhook,
    pub secret: String,
}

/// A change to an endpoint.
#[derive(Clone, Debug)]
pub enum WebhookChange {
    /// Deleted: nothing more is delivered to it, and it no longer counts.
    Delete,
    /// `ENABLED` again; what was appended meanwhile is not sent.
    Enable,
    /// A new secret; the old one signs too until `old_until_ms`.
    Rotate { secret: String, old_until_ms: i64 },
}

/// A delivery claimed for an attempt: the endpoint's address and secrets, and the event.
#[derive(Clone, Debug)]
pub struct Due {
    pub webhook_id: String,
    pub merchant_pk: i64,
    pub url: String,
    /// The secret, and the old one while a rotation lasts.
    pub secrets: Vec<String>,
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
    pub through: i64,
    pub dues: Vec<Due>,
}

/// What one claim took: windows of fresh events, and retries due.
#[derive(Clone, Debug, Default)]
pub struct Claimed {
    pub windows: Vec<Window>,
    pub retries: Vec<Due>,
}

/// What an instance did with a claim: its attempts, and the window they were (none: retries).
#[derive(Clone, Debug)]
pub struct Settlement {
    pub attempts: Vec<Settled>,
    /// The endpoint and the window's `through`: its `delivered_through` moves there (if the claim
    /// still stands).
    pub window: Option<(String, i64)>,
}

/// What becomes of a delivery after an attempt.
#[derive(Clone, Debug, PartialEq)]
pub enum Next {
    /// Delivered, or given up: it is no longer pending.
    Done,
    /// Tried again at this time (Unix ms).
    RetryAt(i64),
    /// The endpoint is disabled, and none of its deliveries is pending any more.
    Disable(DisabledReason),
}

/// An attempt's result, to be recorded.
#[derive(Clone, Debug)]
pub struct Settled {
    pub webhook_id: String,
    pub merchant_pk: i64,
    pub appended_at_ms: i64,
    pub attempt: Attempt,
    pub next: Next,
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
    async fn attempts(
        &self,
        merchant_pk: i64,
        webhook_id: &str,
        before: Option<i64>,
        limit: usize,
    ) -> Result<Option<Vec<Attempt>>, StoreError>;

    /// Claims, until `until_ms` (no other instance attempts them before then), windows of up to
    /// `WINDOW` fresh events of up to `windows` endpoints, and up to `retries` retries due at
    /// `now_ms`, none of the endpoints in `skip`.
    async fn claim(
        &self,
        now_ms: i64,
        until_ms: i64,
        windows: usize,
        retries: usize,
        skip: &[String],
    ) -> Result<Claimed, StoreError>;

    /// Records what instances did with their claims, in one transaction.
    async fn settle(&self, settled: Vec<Settlement>) -> Result<(), StoreError>;

    /// How many deliveries are pending (an endpoint's fresh events counted whatever their type).
    async fn pending(&self) -> Result<u64, StoreError>;

    /// Drops attempts made before `cutoff_ms` (retention, as events); how many.
    async fn prune_attempts(&self, cutoff_ms: i64) -> Result<usize, StoreError>;
}

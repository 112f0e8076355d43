//! What the store keeps of webhooks (CONTRACT §18.3), behind a trait of its own beside `Store`:
//! the endpoints, the deliveries still to make (written with their events, `group`'s outbox rule),
//! and the attempts made. The rules (who may, when to retry, when to disable) are the callers';
//! this is only what is stored and how it is claimed.

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
    pub attempt: Attempt,
    pub next: Next,
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

    /// Claims up to `limit` deliveries due at `now_ms` (none of the endpoints in `skip`) until
    /// `until_ms`: no other instance attempts them before then.
    async fn claim(&self, now_ms: i64, until_ms: i64, limit: usize, skip: &[String]) -> Result<Vec<Due>, StoreError>;

    /// Gives claims back unattempted.
    async fn release(&self, claims: &[(String, i64)]) -> Result<(), StoreError>;

    /// Records attempts and what becomes of their deliveries, in one transaction.
    async fn settle(&self, settled: Vec<Settled>) -> Result<(), StoreError>;

    /// How many deliveries are pending.
    async fn pending(&self) -> Result<u64, StoreError>;

    /// Drops attempts made before `cutoff_ms` (retention, as events); how many.
    async fn prune_attempts(&self, cutoff_ms: i64) -> Result<usize, StoreError>;
}

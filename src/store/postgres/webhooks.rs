//! Webhook SQL (CONTRACT §18.3): the endpoints, their pending deliveries and their attempts.
//! Several instances claim deliveries at once: a claim takes rows no other transaction holds
//! (`FOR UPDATE SKIP LOCKED`) and marks them until `claim_until`, so each attempt is made by one
//! instance, and a dead instance's claims are taken over once they expire.

use async_trait::async_trait;
use deadpool_postgres::{GenericClient, Pool};
use tokio_postgres::Row;

use super::sql::lock_merchant;
use crate::domain::event::{EventType, EventTypes, event_id_of};
use crate::domain::webhook::{Attempt, DisabledReason, MAX_WEBHOOKS, Outcome, Webhook, WebhookStatus};
use crate::store::api::{StoreError, stored_word};
use crate::store::webhook_api::{Due, NewWebhook, Next, Settled, WebhookChange, WebhookStore};

pub(super) struct PgWebhooks {
    pub(super) pool: Pool,
}

const WEBHOOK: &str = "webhook_id, url, types, status, disabled_reason, created_at";

fn webhook(r: &Row) -> Result<Webhook, StoreError> {
    Ok(Webhook {
        webhook_id: r.get(0),
        url: r.get(1),
        types: r.get::<_, Option<i32>>(2).map(|bits| {
            EventType::ALL
                .iter()
                .copied()
                .filter(|t| bits & (1 << t.code()) != 0)
                .collect()
        }),
        status: stored_word(r.get(3), "status", WebhookStatus::from_wire)?,
        disabled_reason: r.get::<_, Option<&str>>(4).and_then(DisabledReason::from_wire),
        created_at_ms: r.get(5),
    })
}

fn bits(types: Option<EventTypes>) -> Option<i32> {
    types.map(|t| i32::from(t.bits()))
}

async fn find(c: &impl GenericClient, merchant_pk: i64, webhook_id: &str) -> Result<Option<Webhook>, StoreError> {
    c.query_opt(
        &format!("SELECT {WEBHOOK} FROM webhooks WHERE webhook_id = $1 AND merchant_pk = $2 AND deleted_at IS NULL"),
        &[&webhook_id, &merchant_pk],
    )
    .await?
    .as_ref()
    .map(webhook)
    .transpose()
}

fn attempt_of(r: &Row) -> Result<Attempt, StoreError> {
    Ok(Attempt {
        id: r.get(0),
        event_id: r.get(1),
        sequence: r.get(2),
        attempt: i64::from(r.get::<_, i32>(3)),
        attempted_at_ms: r.get(4),
        outcome: stored_word(r.get(5), "outcome", Outcome::from_wire)?,
        http_status: r.get::<_, Option<i32>>(6).map(i64::from),
        error: r.get(7),
        duration_ms: r.get(8),
    })
}

#[async_trait]
impl WebhookStore for PgWebhooks {
    async fn create_webhook(&self, merchant_pk: i64, new: NewWebhook) -> Result<Option<Webhook>, StoreError> {
        let mut client = self.pool.get().await?;
        let tx = client.transaction().await?;
        // The count and the insert take turns with the merchant's other writes.
        lock_merchant(&tx, merchant_pk).await?;
        let count: i64 = tx
            .query_one(
                "SELECT count(*) FROM webhooks WHERE merchant_pk = $1 AND deleted_at IS NULL",
                &[&merchant_pk],
            )
            .await?
            .get(0);
        if count >= MAX_WEBHOOKS as i64 {
            return Ok(None);
        }
        let w = &new.webhook;
        tx.execute(
            "INSERT INTO webhooks (webhook_id, merchant_pk, url, types, status, secret, created_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7)",
            &[
                &w.webhook_id,
                &merchant_pk,
                &w.url,
                &bits(w.types),
                &w.status.as_str(),
                &new.secret,
                &w.created_at_ms,
            ],
        )
        .await?;
        tx.commit().await?;
        Ok(Some(new.webhook))
    }

    async fn list_webhooks(&self, merchant_pk: i64) -> Result<Vec<Webhook>, StoreError> {
        let client = self.pool.get().await?;
        client
            .query(
                &format!(
                    "SELECT {WEBHOOK} FROM webhooks WHERE merchant_pk = $1 AND deleted_at IS NULL \
                     ORDER BY created_at, webhook_id"
                ),
                &[&merchant_pk],
            )
            .await?
            .iter()
            .map(webhook)
            .collect()
    }

    async fn change_webhook(
        &self,
        merchant_pk: i64,
        webhook_id: &str,
        change: WebhookChange,
    ) -> Result<Option<Webhook>, StoreError> {
        let mut client = self.pool.get().await?;
        let tx = client.transaction().await?;
        lock_merchant(&tx, merchant_pk).await?;
        let Some(before) = find(&tx, merchant_pk, webhook_id).await? else {
            return Ok(None);
        };
        match change {
            WebhookChange::Delete => {
                tx.execute(
                    "UPDATE webhooks SET deleted_at = $2 WHERE webhook_id = $1",
                    &[&webhook_id, &crate::store::api::now_ms()],
                )
                .await?;
                tx.execute("DELETE FROM deliveries WHERE webhook_id = $1", &[&webhook_id])
                    .await?;
                tx.commit().await?;
                return Ok(Some(before));
            }
            WebhookChange::Enable => {
                tx.execute(
                    "UPDATE webhooks SET status = 'ENABLED', disabled_reason = NULL, failing_since = NULL \
                     WHERE webhook_id = $1",
                    &[&webhook_id],
                )
                .await?;
            }
            WebhookChange::Rotate { secret, old_until_ms } => {
                tx.execute(
                    "UPDATE webhooks SET old_secret = secret, old_secret_until = $3, secret = $2 WHERE webhook_id = $1",
                    &[&webhook_id, &secret, &old_until_ms],
                )
                .await?;
            }
        }
        let after = find(&tx, merchant_pk, webhook_id).await?;
        tx.commit().await?;
        Ok(after)
    }

    async fn attempts(
        &self,
        merchant_pk: i64,
        webhook_id: &str,
        before: Option<i64>,
        limit: usize,
    ) -> Result<Option<Vec<Attempt>>, StoreError> {
        let client = self.pool.get().await?;
        let known = client
            .query_opt(
                "SELECT 1 FROM webhooks WHERE webhook_id = $1 AND merchant_pk = $2",
                &[&webhook_id, &merchant_pk],
            )
            .await?;
        if known.is_none() {
            return Ok(None);
        }
        let rows = client
            .query(
                "SELECT id, event_id, sequence, attempt, attempted_at, outcome, http_status, error, duration_ms \
                 FROM delivery_attempts WHERE webhook_id = $1 AND id < $2 ORDER BY id DESC LIMIT $3",
                &[&webhook_id, &before.unwrap_or(i64::MAX), &(limit as i64 + 1)],
            )
            .await?;
        rows.iter().map(attempt_of).collect::<Result<Vec<_>, _>>().map(Some)
    }

    async fn claim(&self, now_ms: i64, until_ms: i64, limit: usize, skip: &[String]) -> Result<Vec<Due>, StoreError> {
        let client = self.pool.get().await?;
        let rows = client
            .query(
                "WITH due AS (SELECT webhook_id, sequence FROM deliveries \
                   WHERE next_attempt_at <= $1 AND claim_until < $1 AND NOT (webhook_id = ANY($4)) \
                   ORDER BY next_attempt_at LIMIT $3 FOR UPDATE SKIP LOCKED), \
                 claimed AS (UPDATE deliveries d SET claim_until = $2 FROM due \
                   WHERE d.webhook_id = due.webhook_id AND d.sequence = due.sequence \
                   RETURNING d.webhook_id, d.sequence, d.merchant_pk, d.attempts, d.appended_at) \
                 SELECT c.webhook_id, w.url, w.secret, CASE WHEN w.old_secret_until > $1 THEN w.old_secret END, \
                   w.failing_since, c.sequence, c.attempts, c.appended_at, e.body \
                 FROM claimed c JOIN webhooks w ON w.webhook_id = c.webhook_id \
                 JOIN events e ON e.merchant_pk = c.merchant_pk AND e.sequence = c.sequence",
                &[&now_ms, &until_ms, &(limit as i64), &skip],
            )
            .await?;
        Ok(rows
            .iter()
            .map(|r| {
                let mut secrets = vec![r.get::<_, String>(2)];
                secrets.extend(r.get::<_, Option<String>>(3));
                let body: String = r.get(8);
                Due {
                    webhook_id: r.get(0),
                    url: r.get(1),
                    secrets,
                    failing_since_ms: r.get(4),
                    sequence: r.get(5),
                    attempts: i64::from(r.get::<_, i32>(6)),
                    appended_at_ms: r.get(7),
                    event_id: event_id_of(&body),
                    body,
                }
            })
            .collect())
    }

    async fn release(&self, claims: &[(String, i64)]) -> Result<(), StoreError> {
        let client = self.pool.get().await?;
        let ids: Vec<&str> = claims.iter().map(|c| c.0.as_str()).collect();
        let sequences: Vec<i64> = claims.iter().map(|c| c.1).collect();
        client
            .execute(
                "UPDATE deliveries d SET claim_until = 0 FROM UNNEST($1::text[], $2::int8[]) AS u(w, s) \
                 WHERE d.webhook_id = u.w AND d.sequence = u.s",
                &[&ids, &sequences],
            )
            .await?;
        Ok(())
    }

    async fn settle(&self, settled: Vec<Settled>) -> Result<(), StoreError> {
        let mut client = self.pool.get().await?;
        let tx = client.transaction().await?;
        // The attempts, and the deliveries done or retried, each one statement for the batch.
        let ids: Vec<&str> = settled.iter().map(|s| s.webhook_id.as_str()).collect();
        let events: Vec<&str> = settled.iter().map(|s| s.attempt.event_id.as_str()).collect();
        let sequences: Vec<i64> = settled.iter().map(|s| s.attempt.sequence).collect();
        let attempts: Vec<i32> = settled
            .iter()
            .map(|s| i32::try_from(s.attempt.attempt).unwrap_or(i32::MAX))
            .collect();
        let at: Vec<i64> = settled.iter().map(|s| s.attempt.attempted_at_ms).collect();
        let outcomes: Vec<&str> = settled.iter().map(|s| s.attempt.outcome.as_str()).collect();
        let statuses: Vec<Option<i32>> = settled
            .iter()
            .map(|s| s.attempt.http_status.and_then(|h| i32::try_from(h).ok()))
            .collect();
        let errors: Vec<Option<&str>> = settled.iter().map(|s| s.attempt.error.as_deref()).collect();
        let durations: Vec<i64> = settled.iter().map(|s| s.attempt.duration_ms).collect();
        tx.execute(
            "INSERT INTO delivery_attempts (webhook_id, event_id, sequence, attempt, attempted_at, outcome, \
             http_status, error, duration_ms) SELECT * FROM UNNEST($1::text[], $2::text[], $3::int8[], $4::int4[], \
             $5::int8[], $6::text[], $7::int4[], $8::text[], $9::int8[])",
            &[
                &ids, &events, &sequences, &attempts, &at, &outcomes, &statuses, &errors, &durations,
            ],
        )
        .await?;
        let pick = |want: &dyn Fn(&Next) -> bool| -> (Vec<&str>, Vec<i64>) {
            settled
                .iter()
                .filter(|s| want(&s.next))
                .map(|s| (s.webhook_id.as_str(), s.attempt.sequence))
                .unzip()
        };
        let (done_ids, done_sequences) = pick(&|n| *n == Next::Done);
        tx.execute(
            "DELETE FROM deliveries d USING UNNEST($1::text[], $2::int8[]) AS u(w, s) \
             WHERE d.webhook_id = u.w AND d.sequence = u.s",
            &[&done_ids, &done_sequences],
        )
        .await?;
        let retried: Vec<&Settled> = settled.iter().filter(|s| matches!(s.next, Next::RetryAt(_))).collect();
        let retry_ids: Vec<&str> = retried.iter().map(|s| s.webhook_id.as_str()).collect();
        let retry_sequences: Vec<i64> = retried.iter().map(|s| s.attempt.sequence).collect();
        let retry_attempts: Vec<i32> = retried
            .iter()
            .map(|s| i32::try_from(s.attempt.attempt).unwrap_or(i32::MAX))
            .collect();
        let retry_at: Vec<i64> = retried
            .iter()
            .map(|s| match s.next {
                Next::RetryAt(at) => at,
                _ => 0,
            })
            .collect();
        tx.execute(
            "UPDATE deliveries d SET attempts = u.a, next_attempt_at = u.n, claim_until = 0 \
             FROM UNNEST($1::text[], $2::int8[], $3::int4[], $4::int8[]) AS u(w, s, a, n) \
             WHERE d.webhook_id = u.w AND d.sequence = u.s",
            &[&retry_ids, &retry_sequences, &retry_attempts, &retry_at],
        )
        .await?;
        // Each endpoint's failing time, from its last attempt in the batch.
        let mut last: std::collections::HashMap<&str, &Settled> = std::collections::HashMap::new();
        for s in &settled {
            last.insert(s.webhook_id.as_str(), s);
        }
        for (webhook_id, s) in last {
            let failing = match s.attempt.outcome {
                Outcome::Delivered => {
                    "UPDATE webhooks SET failing_since = NULL WHERE webhook_id = $1 AND $2::int8 IS NOT NULL"
                }
                Outcome::Failed => {
                    "UPDATE webhooks SET failing_since = coalesce(failing_since, $2) WHERE webhook_id = $1"
                }
            };
            tx.execute(failing, &[&webhook_id, &s.attempt.attempted_at_ms]).await?;
        }
        for s in &settled {
            if let Next::Disable(reason) = &s.next {
                tx.execute(
                    "UPDATE webhooks SET status = 'DISABLED', disabled_reason = $2 WHERE webhook_id = $1",
                    &[&s.webhook_id, &reason.as_str()],
                )
                .await?;
                tx.execute("DELETE FROM deliveries WHERE webhook_id = $1", &[&s.webhook_id])
                    .await?;
            }
        }
        tx.commit().await?;
        Ok(())
    }

    async fn pending(&self) -> Result<u64, StoreError> {
        let client = self.pool.get().await?;
        let n: i64 = client.query_one("SELECT count(*) FROM deliveries", &[]).await?.get(0);
        Ok(u64::try_from(n).unwrap_or(0))
    }

    async fn prune_attempts(&self, cutoff_ms: i64) -> Result<usize, StoreError> {
        let client = self.pool.get().await?;
        let n = client
            .execute(
                "DELETE FROM delivery_attempts WHERE id IN \
                 (SELECT id FROM delivery_attempts WHERE attempted_at < $1 ORDER BY id LIMIT 1000)",
                &[&cutoff_ms],
            )
            .await?;
        Ok(usize::try_from(n).unwrap_or(0))
    }
}

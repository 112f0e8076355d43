//! Webhook SQL (CONTRACT §18.3): the endpoints, their pending deliveries and their attempts.
//! Several instances claim deliveries at once: a claim takes rows no other transaction holds
//! (`FOR UPDATE SKIP LOCKED`) and marks them until `claim_until`, so each attempt is made by one
//! instance, and a dead instance's claims are taken over once they expire.

use async_trait::async_trait;
use deadpool_postgres::{GenericClient, Pool};
use tokio_postgres::Row;

use super::events::{EVENT_COLUMNS, rendered};
use super::sql::lock_merchant;
use crate::domain::event::EventTypes;
use crate::domain::webhook::{Attempt, DisabledReason, MAX_WEBHOOKS, Outcome, Webhook, WebhookStatus};
use crate::store::api::{StoreError, stored_word};
use crate::store::webhook_api::{
    Claimed, Due, NewWebhook, Next, Settled, Settlement, WebhookChange, WebhookStore, Window, window_size,
};

pub(super) struct PgWebhooks {
    pub(super) pool: Pool,
}

const WEBHOOK: &str = "webhook_id, url, types, status, disabled_reason, created_at";

fn webhook(r: &Row) -> Result<Webhook, StoreError> {
    Ok(Webhook {
        webhook_id: r.get(0),
        url: r.get(1),
        types: r
            .get::<_, Option<i32>>(2)
            .map(|bits| EventTypes::from_bits(i64::from(bits))),
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

/// The secrets an endpoint signs with now: its own, and the old one while a rotation lasts.
fn secrets(r: &Row, secret: usize, old: usize) -> Vec<String> {
    let mut secrets = vec![r.get::<_, String>(secret)];
    secrets.extend(r.get::<_, Option<String>>(old));
    secrets
}

/// Windows of the next events of up to `n` endpoints that have fresh ones and no claim standing;
/// an endpoint another instance is claiming at this moment is skipped.
async fn claim_windows(
    tx: &impl GenericClient,
    now_ms: i64,
    until_ms: i64,
    n: usize,
    skip: &[String],
) -> Result<Vec<Window>, StoreError> {
    let endpoints = tx
        .query(
            "SELECT w.webhook_id, w.url, w.secret, CASE WHEN w.old_secret_until > $1 THEN w.old_secret END, \
             w.failing_since, w.merchant_pk, w.delivered_through, l.last_sequence, w.types FROM webhooks w \
             JOIN event_logs l ON l.merchant_pk = w.merchant_pk \
             WHERE w.status = 'ENABLED' AND w.deleted_at IS NULL AND w.claim_until < $1 \
             AND l.last_sequence > w.delivered_through AND NOT (w.webhook_id = ANY($3)) \
             LIMIT $2 FOR UPDATE OF w SKIP LOCKED",
            &[&now_ms, &(n as i64), &skip],
        )
        .await?;
    let mut windows = Vec::new();
    for e in &endpoints {
        let id: String = e.get(0);
        let (merchant_pk, after, last): (i64, i64, i64) = (e.get(5), e.get(6), e.get(7));
        let types: Option<i32> = e.get(8);
        let failing: Option<i64> = e.get(4);
        let rows = tx
            .query(
                &format!(
                    "SELECT {EVENT_COLUMNS} FROM events e WHERE e.merchant_pk = $1 AND e.sequence > $2 \
                     ORDER BY e.sequence LIMIT $3"
                ),
                &[&merchant_pk, &after, &window_size(failing.is_some())],
            )
            .await?;
        // Events dropped by retention before they were sent: the window runs to the log's end.
        let through = rows.last().map_or(last, |r| r.get(0));
        let mut dues = Vec::with_capacity(rows.len());
        for r in &rows {
            let (sequence, code, appended_at_ms, event_id, body) = rendered(r, 0)?;
            if types.is_none_or(|bits| EventTypes::from_bits(i64::from(bits)).has_code(code)) {
                dues.push(Due {
                    webhook_id: id.clone(),
                    merchant_pk,
                    url: e.get(1),
                    secrets: secrets(e, 2, 3),
                    failing_since_ms: e.get(4),
                    sequence,
                    attempts: 0,
                    appended_at_ms,
                    event_id,
                    body,
                });
            }
        }
        tx.execute(
            "UPDATE webhooks SET claimed_through = $2, claim_until = $3 WHERE webhook_id = $1",
            &[&id, &through, &until_ms],
        )
        .await?;
        windows.push(Window {
            webhook_id: id,
            through,
            dues,
        });
    }
    Ok(windows)
}

/// Up to `n` retries due, none of the endpoints in `skip`.
async fn claim_retries(
    client: &impl GenericClient,
    now_ms: i64,
    until_ms: i64,
    n: usize,
    skip: &[String],
) -> Result<Vec<Due>, StoreError> {
    let sql = format!(
        "WITH due AS (SELECT webhook_id, sequence FROM deliveries \
               WHERE next_attempt_at <= $1 AND claim_until < $1 AND NOT (webhook_id = ANY($4)) \
               ORDER BY next_attempt_at LIMIT $3 FOR UPDATE SKIP LOCKED), \
             claimed AS (UPDATE deliveries d SET claim_until = $2 FROM due \
               WHERE d.webhook_id = due.webhook_id AND d.sequence = due.sequence \
               RETURNING d.webhook_id, d.sequence, d.merchant_pk, d.attempts, d.appended_at) \
             SELECT c.webhook_id, w.url, w.secret, CASE WHEN w.old_secret_until > $1 THEN w.old_secret END, \
               w.failing_since, c.attempts, c.merchant_pk, {EVENT_COLUMNS} \
             FROM claimed c JOIN webhooks w ON w.webhook_id = c.webhook_id \
             JOIN events e ON e.merchant_pk = c.merchant_pk AND e.sequence = c.sequence"
    );
    let rows = client.query(&sql, &[&now_ms, &until_ms, &(n as i64), &skip]).await?;
    rows.iter()
        .map(|r| {
            let (sequence, _, appended_at_ms, event_id, body) = rendered(r, 7)?;
            Ok(Due {
                webhook_id: r.get(0),
                merchant_pk: r.get(6),
                url: r.get(1),
                secrets: secrets(r, 2, 3),
                failing_since_ms: r.get(4),
                sequence,
                attempts: i64::from(r.get::<_, i32>(5)),
                appended_at_ms,
                event_id,
                body,
            })
        })
        .collect()
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
        // Only the events appended from now on are sent to it (the merchant's lock holds its writes).
        tx.execute(
            "INSERT INTO webhooks (webhook_id, merchant_pk, url, types, status, secret, created_at, \
             delivered_through, claimed_through) SELECT $1, $2, $3, $4, $5, $6, $7, l, l FROM \
             (SELECT coalesce(max(last_sequence), 0) AS l FROM event_logs WHERE merchant_pk = $2) AS log",
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
                // What was appended while it was disabled is not sent (the feed has it).
                tx.execute(
                    "UPDATE webhooks SET status = 'ENABLED', disabled_reason = NULL, failing_since = NULL, \
                     delivered_through = l, claimed_through = l, claim_until = 0 FROM \
                     (SELECT coalesce(max(last_sequence), 0) AS l FROM event_logs WHERE merchant_pk = $2) AS log \
                     WHERE webhook_id = $1",
                    &[&webhook_id, &merchant_pk],
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

    async fn claim(
        &self,
        now_ms: i64,
        until_ms: i64,
        windows: usize,
        retries: usize,
        skip: &[String],
    ) -> Result<Claimed, StoreError> {
        let mut client = self.pool.get().await?;
        let mut claimed = Claimed::default();
        if windows > 0 {
            let tx = client.transaction().await?;
            claimed.windows = claim_windows(&tx, now_ms, until_ms, windows, skip).await?;
            tx.commit().await?;
        }
        if retries > 0 {
            claimed.retries = claim_retries(&client, now_ms, until_ms, retries, skip).await?;
        }
        Ok(claimed)
    }

    async fn settle(&self, settled: Vec<Settlement>) -> Result<(), StoreError> {
        let mut client = self.pool.get().await?;
        let tx = client.transaction().await?;
        let windows: Vec<(String, i64)> = settled.iter().filter_map(|s| s.window.clone()).collect();
        let settled: Vec<Settled> = settled.into_iter().flat_map(|s| s.attempts).collect();
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
        let (done_ids, done_sequences): (Vec<&str>, Vec<i64>) = settled
            .iter()
            .filter(|s| s.next == Next::Done)
            .map(|s| (s.webhook_id.as_str(), s.attempt.sequence))
            .unzip();
        tx.execute(
            "DELETE FROM deliveries d USING UNNEST($1::text[], $2::int8[]) AS u(w, s) \
             WHERE d.webhook_id = u.w AND d.sequence = u.s",
            &[&done_ids, &done_sequences],
        )
        .await?;
        let retried: Vec<(&Settled, i64)> = settled
            .iter()
            .filter_map(|s| match s.next {
                Next::RetryAt(at) => Some((s, at)),
                _ => None,
            })
            .collect();
        let retry_ids: Vec<&str> = retried.iter().map(|(s, _)| s.webhook_id.as_str()).collect();
        let retry_sequences: Vec<i64> = retried.iter().map(|(s, _)| s.attempt.sequence).collect();
        let retry_merchants: Vec<i64> = retried.iter().map(|(s, _)| s.merchant_pk).collect();
        let retry_attempts: Vec<i32> = retried
            .iter()
            .map(|(s, _)| i32::try_from(s.attempt.attempt).unwrap_or(i32::MAX))
            .collect();
        let retry_at: Vec<i64> = retried.iter().map(|(_, at)| *at).collect();
        let retry_appended: Vec<i64> = retried.iter().map(|(s, _)| s.appended_at_ms).collect();
        tx.execute(
            "INSERT INTO deliveries (webhook_id, sequence, merchant_pk, attempts, next_attempt_at, appended_at) \
             SELECT * FROM UNNEST($1::text[], $2::int8[], $3::int8[], $4::int4[], $5::int8[], $6::int8[]) \
             ON CONFLICT (webhook_id, sequence) DO UPDATE SET attempts = excluded.attempts, \
             next_attempt_at = excluded.next_attempt_at, claim_until = 0",
            &[
                &retry_ids,
                &retry_sequences,
                &retry_merchants,
                &retry_attempts,
                &retry_at,
                &retry_appended,
            ],
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
        for (webhook_id, through) in &windows {
            tx.execute(
                "UPDATE webhooks SET delivered_through = $2, claim_until = 0 \
                 WHERE webhook_id = $1 AND claimed_through = $2 AND delivered_through < $2",
                &[webhook_id, through],
            )
            .await?;
        }
        tx.commit().await?;
        Ok(())
    }

    async fn pending(&self) -> Result<u64, StoreError> {
        let client = self.pool.get().await?;
        let n: i64 = client
            .query_one(
                "SELECT (SELECT count(*) FROM deliveries) + (SELECT coalesce(sum(l.last_sequence - w.delivered_through), 0) \
                 FROM webhooks w JOIN event_logs l ON l.merchant_pk = w.merchant_pk \
                 WHERE w.status = 'ENABLED' AND w.deleted_at IS NULL)::int8",
                &[],
            )
            .await?
            .get(0);
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

//! Getting deliveries back on SQLite: the reads of a resend and a test on the read
//! connections, the record of an attempt made by hand and a recovery each in one transaction of
//! the writer (a recovery's statements a batch of sequences each).

use async_trait::async_trait;
use futures_util::FutureExt;
use rusqlite::{Connection, OptionalExtension, params};

use super::events::{bounds, stored_event};
use super::webhooks::SqliteWebhooks;
use super::writer::write;
use crate::domain::event::{EventTypes, LogBounds};
use crate::domain::webhook::Attempt;
use crate::store::api::StoreError;
use crate::store::event_rows::{ClaimedEndpoint, ENDPOINT_COLUMNS, ENDPOINT_WIDTH};
use crate::store::redelivery_api::{
    Bisect, RecoverBatch, RecoverSteps, Recovered, Recovery, RedeliveryStore, Resendable, Target, recover_batches,
    recovery_bounds, settles_its_event,
};

/// The parameter mark of the SQL written once for both engines.
const M: char = '?';
use crate::store::redelivery_sql;
use crate::store::webhook_api::signing_secrets;

/// The merchant's endpoint that is not deleted, and where its merchant's log stood when it was
/// created.
fn endpoint(c: &Connection, merchant_pk: i64, webhook_id: &str) -> Result<Option<(ClaimedEndpoint, i64)>, StoreError> {
    Ok(c.prepare_cached(&format!(
        "SELECT {ENDPOINT_COLUMNS}, w.created_through FROM webhooks w \
             WHERE w.webhook_id = ?1 AND w.merchant_pk = ?2 AND w.deleted_at IS NULL"
    ))?
    .query_row(params![webhook_id, merchant_pk], |r| {
        Ok((ClaimedEndpoint::read(r)?, r.get(ENDPOINT_WIDTH)?))
    })
    .optional()?)
}

/// Runs a bisection of the merchant's log to its end.
fn bisect(tx: &Connection, merchant_pk: i64, mut b: Bisect) -> Result<i64, StoreError> {
    let mut probe = tx.prepare_cached(&redelivery_sql::probe('?'))?;
    while let Some(sequence) = b.probe() {
        let at: Option<i64> = probe
            .query_row(params![merchant_pk, sequence], |r| r.get(0))
            .optional()?;
        b.answer(at);
    }
    Ok(b.found())
}

#[async_trait]
impl RedeliveryStore for SqliteWebhooks {
    async fn test_target(&self, merchant_pk: i64, webhook_id: &str, now_ms: i64) -> Result<Option<Target>, StoreError> {
        let webhook_id = webhook_id.to_owned();
        self.readers
            .read(move |c| {
                Ok(endpoint(c, merchant_pk, &webhook_id)?.map(|(e, _)| Target {
                    webhook_id: e.webhook_id,
                    url: e.url,
                    secrets: signing_secrets(e.secret, e.old_secret, e.old_secret_until, now_ms),
                }))
            })
            .await
    }

    async fn resendable(
        &self,
        merchant_pk: i64,
        webhook_id: &str,
        event_id: &str,
        now_ms: i64,
    ) -> Result<Resendable, StoreError> {
        let (webhook_id, event_id) = (webhook_id.to_owned(), event_id.to_owned());
        self.readers
            .snapshot(move |c| {
                let Some((endpoint, created_through)) = endpoint(c, merchant_pk, &webhook_id)? else {
                    return Ok(Resendable::NoWebhook);
                };
                let event = c
                    .prepare_cached(&redelivery_sql::event_by_id(M))?
                    .query_row(params![merchant_pk, event_id], |r| stored_event(r, 0))
                    .optional()?;
                let Some(event) = event.filter(|e| endpoint.was_to_receive(e, created_through)) else {
                    return Ok(Resendable::NoEvent);
                };
                let attempts: i64 = c
                    .prepare_cached(&redelivery_sql::attempts_of(M))?
                    .query_row(params![webhook_id, event_id], |r| r.get(0))?;
                Ok(Resendable::Due(endpoint.due(&event, attempts, now_ms)?))
            })
            .await
    }

    async fn record_by_hand(&self, webhook_id: &str, attempt: Attempt) -> Result<Attempt, StoreError> {
        let webhook_id = webhook_id.to_owned();
        write(&self.jobs, move |tx| {
            let id: i64 = tx.prepare_cached(&redelivery_sql::record_attempt(M))?.query_row(
                params![
                    webhook_id,
                    attempt.event_id,
                    attempt.sequence,
                    attempt.attempt,
                    attempt.attempted_at_ms,
                    attempt.outcome.as_str(),
                    attempt.http_status,
                    attempt.error,
                    attempt.duration_ms,
                    attempt.trigger.as_str()
                ],
                |r| r.get(0),
            )?;
            if settles_its_event(&attempt) {
                tx.prepare_cached(&redelivery_sql::drop_retry(M))?
                    .execute(params![webhook_id, attempt.sequence])?;
                tx.prepare_cached(&redelivery_sql::resent_through(M))?
                    .execute(params![webhook_id, attempt.sequence])?;
            }
            Ok(Attempt { id, ..attempt })
        })
        .await
    }

    async fn recover(&self, recovery: Recovery) -> Result<Recovered, StoreError> {
        let _turn = self.heavy.turn_by(recovery.merchant_pk, recovery.deadline).await?;
        write(&self.jobs, move |tx| {
            let Some((endpoint, created_through)) = endpoint(tx, recovery.merchant_pk, &recovery.webhook_id)? else {
                return Ok(Recovered::NoWebhook);
            };
            let (enabled, delivered_through): (bool, i64) = tx
                .prepare_cached("SELECT status = 'ENABLED', delivered_through FROM webhooks WHERE webhook_id = ?1")?
                .query_row([&recovery.webhook_id], |r| Ok((r.get(0)?, r.get(1)?)))?;
            if !enabled {
                return Ok(Recovered::Disabled);
            }
            // A log's first append makes its row, so a last sequence of 0 is a merchant with no event.
            let LogBounds {
                last,
                pruned_through: pruned,
            } = bounds(tx, recovery.merchant_pk)?;
            if last == 0 {
                return Ok(Recovered::Pending(0));
            }
            let (from, to) = recovery_bounds(&recovery, created_through.max(pruned) + 1, last + 1);
            let (from, to) = (
                bisect(tx, recovery.merchant_pk, from)?,
                bisect(tx, recovery.merchant_pk, to)?,
            );
            let mut steps = Steps {
                count: tx.prepare_cached(&redelivery_sql::count('?'))?,
                insert: tx.prepare_cached(&redelivery_sql::insert('?', "?9"))?,
                claimed: tx.prepare_cached(&redelivery_sql::claimed('?', "?7"))?,
                batch: Batch {
                    recovery: &recovery,
                    types: endpoint.types.unwrap_or(i64::from(EventTypes::ALL.bits())),
                    delivered_through,
                },
            };
            // Every step is done on this connection when it returns: the future is ready at once.
            let recovered = recover_batches(&mut steps, &recovery, (from, to), delivered_through)
                .now_or_never()
                .unwrap_or_else(|| {
                    Err(StoreError::Backend(
                        "a recovery's step waited on this connection".into(),
                    ))
                })?;
            Ok(Recovered::Pending(recovered))
        })
        .await
    }
}

/// A recovery's statements on this connection.
struct Steps<'a> {
    count: rusqlite::CachedStatement<'a>,
    insert: rusqlite::CachedStatement<'a>,
    claimed: rusqlite::CachedStatement<'a>,
    batch: Batch<'a>,
}

/// What every batch's statements are given besides its sequences.
struct Batch<'a> {
    recovery: &'a Recovery,
    types: i64,
    delivered_through: i64,
}

impl Batch<'_> {
    /// The batch's nine parameters in the insert's order (the count takes the first seven).
    fn taken<'p>(&'p self, b: &'p RecoverBatch) -> [&'p dyn rusqlite::ToSql; 9] {
        let r = self.recovery;
        [
            &r.merchant_pk,
            &b.from,
            &b.before,
            &r.since_ms,
            &r.until_ms,
            &self.types,
            &r.webhook_id,
            &self.delivered_through,
            &r.now_ms,
        ]
    }
}

impl RecoverSteps for Steps<'_> {
    async fn count(&mut self, b: RecoverBatch) -> Result<i64, StoreError> {
        Ok(self.count.query_row(&self.batch.taken(&b)[..7], |row| row.get(0))?)
    }

    async fn insert(&mut self, b: RecoverBatch) -> Result<i64, StoreError> {
        let made = self.insert.execute(&self.batch.taken(&b)[..])?;
        Ok(i64::try_from(made).unwrap_or(i64::MAX))
    }

    async fn claimed(&mut self, b: RecoverBatch) -> Result<i64, StoreError> {
        let p = self.batch.taken(&b);
        Ok(self
            .claimed
            .query_row([p[0], p[1], p[2], p[3], p[4], p[6], p[8]], |row| row.get(0))?)
    }
}

//! Getting deliveries back on PostgreSQL: the reads of a resend and a test, the
//! record of an attempt made by hand, and a recovery in one transaction that holds the endpoint's
//! row (not the merchant's lock: its writes go on meanwhile), a statement per batch of sequences.

use async_trait::async_trait;
use deadpool_postgres::GenericClient;

use super::events::{bounds, stored_event};
use super::webhooks::{DB_NOW, PgWebhooks};
use crate::domain::event::{EventTypes, LogBounds};
use crate::domain::ids;
use crate::domain::webhook::Attempt;
use crate::store::api::StoreError;
use crate::store::event_rows::{ClaimedEndpoint, ENDPOINT_COLUMNS, ENDPOINT_WIDTH};
use crate::store::redelivery_api::{
    Bisect, RecoverBatch, RecoverSteps, Recovered, Recovery, RedeliveryStore, Resendable, Target, recover_batches,
    recovery_bounds, settles_its_event,
};

/// The parameter mark of the SQL written once for both engines.
const M: char = '$';
use crate::store::redelivery_sql;
use crate::store::webhook_api::signing_secrets;

/// The merchant's endpoint that is not deleted: its columns, where its merchant's log stood when
/// it was created, whether it is enabled and its `delivered_through` (`lock`: held until the
/// transaction ends).
async fn endpoint(
    c: &impl GenericClient,
    merchant_pk: i64,
    webhook_id: &str,
    lock: bool,
) -> Result<Option<(ClaimedEndpoint, i64, bool, i64)>, StoreError> {
    if !ids::may_name(webhook_id) {
        return Ok(None);
    }
    let sql = format!(
        "SELECT {ENDPOINT_COLUMNS}, w.created_through, w.status = 'ENABLED', w.delivered_through FROM webhooks w \
         WHERE w.webhook_id = $1 AND w.merchant_pk = $2 AND w.deleted_at IS NULL{}",
        if lock { " FOR UPDATE" } else { "" }
    );
    let Some(r) = c.query_opt(&sql, &[&webhook_id, &merchant_pk]).await? else {
        return Ok(None);
    };
    Ok(Some((
        ClaimedEndpoint::read(&r)?,
        r.try_get(ENDPOINT_WIDTH)?,
        r.try_get(ENDPOINT_WIDTH + 1)?,
        r.try_get(ENDPOINT_WIDTH + 2)?,
    )))
}

/// Runs a bisection of the merchant's log to its end.
async fn bisect(c: &impl GenericClient, merchant_pk: i64, mut b: Bisect) -> Result<i64, StoreError> {
    let probe = c.prepare(&redelivery_sql::probe('$')).await?;
    while let Some(sequence) = b.probe() {
        let at: Option<i64> = c
            .query_opt(&probe, &[&merchant_pk, &sequence])
            .await?
            .map(|r| r.try_get(0))
            .transpose()?;
        b.answer(at);
    }
    Ok(b.found())
}

#[async_trait]
impl RedeliveryStore for PgWebhooks {
    async fn test_target(&self, merchant_pk: i64, webhook_id: &str, now_ms: i64) -> Result<Option<Target>, StoreError> {
        let client = self.pool.get().await?;
        Ok(endpoint(&client, merchant_pk, webhook_id, false)
            .await?
            .map(|(e, ..)| Target {
                webhook_id: e.webhook_id,
                url: e.url,
                secrets: signing_secrets(e.secret, e.old_secret, e.old_secret_until, now_ms),
            }))
    }

    async fn resendable(
        &self,
        merchant_pk: i64,
        webhook_id: &str,
        event_id: &str,
        now_ms: i64,
    ) -> Result<Resendable, StoreError> {
        let client = self.pool.get().await?;
        let Some((endpoint, created_through, ..)) = endpoint(&client, merchant_pk, webhook_id, false).await? else {
            return Ok(Resendable::NoWebhook);
        };
        if !ids::may_name(event_id) {
            return Ok(Resendable::NoEvent);
        }
        let event = client
            .query_opt(&redelivery_sql::event_by_id(M), &[&merchant_pk, &event_id])
            .await?
            .map(|r| stored_event(&r, 0))
            .transpose()?;
        let Some(event) = event.filter(|e| endpoint.was_to_receive(e, created_through)) else {
            return Ok(Resendable::NoEvent);
        };
        let attempts: i64 = client
            .query_one(&redelivery_sql::attempts_of(M), &[&webhook_id, &event_id])
            .await?
            .try_get(0)?;
        Ok(Resendable::Due(endpoint.due(&event, attempts, now_ms)?))
    }

    async fn record_by_hand(&self, webhook_id: &str, attempt: Attempt) -> Result<Attempt, StoreError> {
        let mut client = self.pool.get().await?;
        let tx = client.transaction().await?;
        let number = i32::try_from(attempt.attempt).unwrap_or(i32::MAX);
        let status = attempt.http_status.and_then(|s| i32::try_from(s).ok());
        let id: i64 = tx
            .query_one(
                &redelivery_sql::record_attempt(M),
                &[
                    &webhook_id,
                    &attempt.event_id,
                    &attempt.sequence,
                    &number,
                    &attempt.attempted_at_ms,
                    &attempt.outcome.as_str(),
                    &status,
                    &attempt.error,
                    &attempt.duration_ms,
                    &attempt.trigger.as_str(),
                ],
            )
            .await?
            .try_get(0)?;
        if settles_its_event(&attempt) {
            tx.execute(&redelivery_sql::drop_retry(M), &[&webhook_id, &attempt.sequence])
                .await?;
            tx.execute(&redelivery_sql::resent_through(M), &[&webhook_id, &attempt.sequence])
                .await?;
        }
        tx.commit().await?;
        Ok(Attempt { id, ..attempt })
    }

    async fn recover(&self, recovery: Recovery) -> Result<Recovered, StoreError> {
        let _turn = self.heavy.turn_by(recovery.merchant_pk, recovery.deadline).await?;
        let mut client = self.pool.get().await?;
        let tx = client.transaction().await?;
        let Some((endpoint, created_through, enabled, delivered_through)) =
            endpoint(&tx, recovery.merchant_pk, &recovery.webhook_id, true).await?
        else {
            return Ok(Recovered::NoWebhook);
        };
        if !enabled {
            return Ok(Recovered::Disabled);
        }
        // A log's first append makes its row, so a last sequence of 0 is a merchant with no event.
        let LogBounds {
            last,
            pruned_through: pruned,
        } = bounds(&tx, recovery.merchant_pk).await?;
        if last == 0 {
            return Ok(Recovered::Pending(0));
        }
        let (from, to) = recovery_bounds(&recovery, created_through.max(pruned) + 1, last + 1);
        let (from, to) = (
            bisect(&tx, recovery.merchant_pk, from).await?,
            bisect(&tx, recovery.merchant_pk, to).await?,
        );
        let mut steps = Steps {
            count: tx.prepare(&redelivery_sql::count('$')).await?,
            insert: tx.prepare(&redelivery_sql::insert('$', DB_NOW)).await?,
            claimed: tx.prepare(&redelivery_sql::claimed('$', DB_NOW)).await?,
            tx: &tx,
            batch: Batch {
                recovery: &recovery,
                types: endpoint.types.unwrap_or(i64::from(EventTypes::ALL.bits())),
                delivered_through,
            },
        };
        let recovered = recover_batches(&mut steps, &recovery, (from, to), delivered_through).await?;
        tx.commit().await?;
        Ok(Recovered::Pending(recovered))
    }
}

/// A recovery's statements in its transaction.
struct Steps<'a, C> {
    count: tokio_postgres::Statement,
    insert: tokio_postgres::Statement,
    claimed: tokio_postgres::Statement,
    tx: &'a C,
    batch: Batch<'a>,
}

/// What every batch's statements are given besides its sequences.
struct Batch<'a> {
    recovery: &'a Recovery,
    types: i64,
    delivered_through: i64,
}

type Param<'p> = &'p (dyn tokio_postgres::types::ToSql + Sync);

impl Batch<'_> {
    /// The batch's nine parameters in the insert's order (the count takes the first seven).
    fn taken<'p>(&'p self, b: &'p RecoverBatch) -> [Param<'p>; 9] {
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

impl<C: GenericClient + Sync> RecoverSteps for Steps<'_, C> {
    async fn count(&mut self, b: RecoverBatch) -> Result<i64, StoreError> {
        Ok(self
            .tx
            .query_one(&self.count, &self.batch.taken(&b)[..7])
            .await?
            .try_get(0)?)
    }

    async fn insert(&mut self, b: RecoverBatch) -> Result<i64, StoreError> {
        let made = self.tx.execute(&self.insert, &self.batch.taken(&b)).await?;
        Ok(i64::try_from(made).unwrap_or(i64::MAX))
    }

    async fn claimed(&mut self, b: RecoverBatch) -> Result<i64, StoreError> {
        let p = self.batch.taken(&b);
        Ok(self
            .tx
            .query_one(&self.claimed, &[p[0], p[1], p[2], p[3], p[4], p[6]])
            .await?
            .try_get(0)?)
    }
}

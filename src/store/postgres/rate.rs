//! The shared rate budgets' ledger: one statement a take, a give-back or a
//! heartbeat, each on a pooled connection, prepared once per connection.

use async_trait::async_trait;
use deadpool_postgres::Pool;

use super::sql;
use crate::rate_limit::Quota;
use crate::rate_limit::shared::{Ledger, LedgerDown, Taken};
use crate::store::api::StoreError;

/// The database as the ledger of the budgets every instance on it shares.
pub(super) struct PgLedger(Pool);

impl PgLedger {
    pub(super) fn new(pool: Pool) -> Self {
        PgLedger(pool)
    }
}

#[async_trait]
impl Ledger for PgLedger {
    async fn take(&self, policy: &'static str, key: i64, want: u32, quota: Quota) -> Result<Taken, LedgerDown> {
        let (granted, left) = take(&self.0, policy, key, want, quota.per_sec, quota.burst)
            .await
            .map_err(|e| down(&e))?;
        Ok(Taken { granted, left })
    }

    async fn give_back(&self, policy: &'static str, key: i64, units: u32, quota: Quota) -> Result<(), LedgerDown> {
        give_back(&self.0, policy, key, units, quota.burst)
            .await
            .map_err(|e| down(&e))
    }

    async fn heartbeat(&self, instance: &str) -> Result<u32, LedgerDown> {
        heartbeat(&self.0, instance).await.map_err(|e| down(&e))
    }
}

/// The store's error with its causes, for the log line of an unreachable ledger.
fn down(e: &StoreError) -> LedgerDown {
    LedgerDown(e.chain())
}

/// Refills the bucket to the database's clock, grants `min(want, whole units)`, and keeps what is
/// left; a bucket first used starts full.
const TAKE: &str = "INSERT INTO rate_budgets AS b (policy, key, units, at, granted) \
     VALUES ($1, $2, $5::float8 - LEAST($3::float8, $5::float8), extract(epoch FROM statement_timestamp()), LEAST($3::float8, $5::float8)::int) \
     ON CONFLICT (policy, key) DO UPDATE SET \
       granted = LEAST($3::float8, floor(LEAST($5::float8, b.units + $4::float8 * GREATEST(0, excluded.at - b.at))))::int, \
       units = LEAST($5::float8, b.units + $4::float8 * GREATEST(0, excluded.at - b.at)) \
             - LEAST($3::float8, floor(LEAST($5::float8, b.units + $4::float8 * GREATEST(0, excluded.at - b.at)))), \
       at = GREATEST(b.at, excluded.at) \
     RETURNING granted, units";

const GIVE_BACK: &str =
    "UPDATE rate_budgets SET units = LEAST($4::float8, units + $3::float8) WHERE policy = $1 AND key = $2";

/// Marks the instance alive, forgets instances silent for 30 s, and counts those seen within 3 s
/// (the statement's own row is not visible to its count: it is added).
const HEARTBEAT: &str = "WITH beat AS ( \
       INSERT INTO rate_instances (instance, seen_at) VALUES ($1, extract(epoch FROM statement_timestamp())) \
       ON CONFLICT (instance) DO UPDATE SET seen_at = excluded.seen_at), \
     gone AS (DELETE FROM rate_instances WHERE seen_at < extract(epoch FROM statement_timestamp()) - 30) \
     SELECT count(*) FROM rate_instances \
     WHERE instance <> $1 AND seen_at >= extract(epoch FROM statement_timestamp()) - 3";

async fn take(
    pool: &Pool,
    policy: &str,
    key: i64,
    want: u32,
    per_sec: f64,
    burst: u32,
) -> Result<(u32, f64), StoreError> {
    let client = pool.get().await?;
    let rows = sql::query(
        &client,
        TAKE,
        &[&policy, &key, &f64::from(want), &per_sec, &f64::from(burst)],
    )
    .await?;
    let row = rows.first().ok_or(StoreError::Unavailable)?;
    let granted: i32 = row.try_get(0)?;
    Ok((u32::try_from(granted).unwrap_or(0), row.try_get(1)?))
}

async fn give_back(pool: &Pool, policy: &str, key: i64, units: u32, burst: u32) -> Result<(), StoreError> {
    let client = pool.get().await?;
    sql::execute(
        &client,
        GIVE_BACK,
        &[&policy, &key, &f64::from(units), &f64::from(burst)],
    )
    .await?;
    Ok(())
}

async fn heartbeat(pool: &Pool, instance: &str) -> Result<u32, StoreError> {
    let client = pool.get().await?;
    let rows = sql::query(&client, HEARTBEAT, &[&instance]).await?;
    let others: i64 = rows.first().map(|row| row.try_get(0)).transpose()?.unwrap_or(0);
    Ok(u32::try_from(others).unwrap_or(u32::MAX - 1) + 1)
}

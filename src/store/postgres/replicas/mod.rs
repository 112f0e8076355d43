//! Buyers' reads on hot standbys: a pool per replica, a watcher that measures how
//! far each is behind (`lag`), and the choice of one for a read.
//!
//! **Watching.** Every [`TICK`] the watcher reads the primary's WAL flush position, then each
//! replica's replay position (all at once, each within [`CHECK_WAIT`]), and decides from the two
//! whether the replica is within `--replica-max-lag`. A replica that does not answer, or answers an
//! error, is out; it is asked again after 1 s, then 2, 4 and 8 s while it stays silent.
//!
//! **Reading.** A read goes to the next usable replica in turn. A replica that fails it (an error,
//! or no answer within [`READ_WAIT`] in all) is taken out at once and the read goes to another, or
//! to the primary: a buyer never gets an error, nor waits a second, because of a replica.

mod lag;

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use deadpool_postgres::Pool;
use futures_util::future::join_all;

use crate::store::api::StoreError;
use lag::{Lag, Samples};

/// How often the watcher checks.
const TICK: Duration = Duration::from_millis(250);
/// How long a check waits for an answer.
pub(super) const CHECK_WAIT: Duration = Duration::from_millis(500);
/// How long a read waits for replicas in all before it goes to the primary.
pub(super) const READ_WAIT: Duration = Duration::from_millis(600);
/// How long a new connection to a replica may take.
pub(super) const CONNECT_WAIT: Duration = Duration::from_millis(500);
/// The longest pause between checks of a replica that does not answer.
const MAX_BACKOFF: Duration = Duration::from_secs(8);

/// The replicas of one primary.
pub(super) struct Replicas {
    replicas: Vec<Replica>,
    next: AtomicUsize,
    max_lag: Duration,
}

/// One replica: its pool and what the last check or read found.
struct Replica {
    /// Its position in `--read-replica`, as `replica_lag_seconds` names it.
    name: String,
    pool: Pool,
    health: Mutex<Health>,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Health {
    /// Not checked yet.
    Unknown,
    /// Answered, this far behind.
    Answered(Lag),
    /// Did not answer (or is not a standby): not asked again before `retry_at`.
    Silent { retry_at: Instant, backoff: Duration },
}

impl Replicas {
    /// `pools` in the order of `--read-replica`.
    pub(super) fn new(pools: Vec<Pool>, max_lag: Duration) -> Replicas {
        let replicas = pools
            .into_iter()
            .enumerate()
            .map(|(i, pool)| {
                let replica = Replica {
                    name: i.to_string(),
                    pool,
                    health: Mutex::new(Health::Unknown),
                };
                // Shown from the start, as not known to be within the bound: no read goes to it yet.
                replica.show(None);
                replica
            })
            .collect();
        Replicas {
            replicas,
            next: AtomicUsize::new(0),
            max_lag,
        }
    }

    /// Runs `read` on a usable replica, the next in turn, or on another when it fails; `None` when
    /// none is usable or none answered within [`READ_WAIT`] (the caller reads on the primary).
    pub(super) async fn read<'a, T, F, Fut>(&'a self, read: F) -> Option<T>
    where
        F: Fn(&'a Pool) -> Fut,
        Fut: Future<Output = Result<T, StoreError>>,
    {
        let deadline = tokio::time::Instant::now() + READ_WAIT;
        let first = self.next.fetch_add(1, Ordering::Relaxed);
        let n = self.replicas.len();
        for replica in (0..n).map(|k| &self.replicas[(first + k) % n]) {
            if !replica.usable(self.max_lag) {
                continue;
            }
            match tokio::time::timeout_at(deadline, read(&replica.pool)).await {
                Ok(Ok(value)) => return Some(value),
                Ok(Err(e)) => {
                    tracing::warn!(replica = %replica.name, error = %e.chain(), "a read on a replica failed; reading elsewhere");
                    replica.silent(Instant::now());
                }
                Err(_) => {
                    tracing::warn!(replica = %replica.name, "a replica did not answer a read within {READ_WAIT:?}; reading elsewhere");
                    replica.silent(Instant::now());
                    return None;
                }
            }
        }
        None
    }

    /// Closes the replicas' pools.
    pub(super) fn close(&self) {
        self.replicas.iter().for_each(|r| r.pool.close());
    }

    /// Checks every replica every [`TICK`] until the primary's pool is closed, sampling the
    /// primary on a connection of its own (`own`).
    pub(super) async fn watch(&self, primary: Pool, own: Pool) {
        // Samples for longer than the bound, so a replica past it is known to be; the newest older
        // than two ticks no longer says the replica is 0 behind.
        let mut samples = Samples::new(self.max_lag + Duration::from_secs(2), 2 * TICK);
        let mut tick = tokio::time::interval(TICK);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            if primary.is_closed() {
                own.close();
                return;
            }
            let asked = Instant::now();
            if let Ok(Ok(flushed)) = tokio::time::timeout(CHECK_WAIT, flush_position(&own)).await {
                samples.push(asked, flushed);
            }
            join_all(self.replicas.iter().map(|r| r.check(&samples, self.max_lag))).await;
        }
    }
}

impl Replica {
    fn health(&self) -> std::sync::MutexGuard<'_, Health> {
        self.health.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn usable(&self, max_lag: Duration) -> bool {
        matches!(*self.health(), Health::Answered(lag) if lag.within(max_lag))
    }

    /// It did not answer: out until its next check, which backs off while it stays silent.
    fn silent(&self, now: Instant) {
        let mut health = self.health();
        let backoff = match *health {
            Health::Silent { backoff, .. } => (backoff * 2).min(MAX_BACKOFF),
            _ => Duration::from_secs(1),
        };
        if !matches!(*health, Health::Silent { .. }) {
            tracing::warn!(replica = %self.name, "a replica does not answer: reads go elsewhere until it does");
        }
        *health = Health::Silent {
            retry_at: now + backoff,
            backoff,
        };
        self.show(None);
    }

    /// `replica_lag_seconds`: how far behind it is, or +Inf while it is not known (not checked yet,
    /// silent, or checked before the primary's first sample).
    fn show(&self, lag: Option<Lag>) {
        let seconds = lag.map_or(f64::INFINITY, Lag::seconds);
        metrics::gauge!("replica_lag_seconds", "replica" => self.name.clone()).set(seconds);
    }

    async fn check(&self, samples: &Samples, max_lag: Duration) {
        if matches!(*self.health(), Health::Silent { retry_at, .. } if Instant::now() < retry_at) {
            return;
        }
        let answer = tokio::time::timeout(CHECK_WAIT, replay_position(&self.pool)).await;
        let now = Instant::now();
        let lag = match answer {
            Ok(Ok(Some(replayed))) => samples.lag(replayed, now),
            Ok(Ok(None)) => {
                tracing::warn!(replica = %self.name, "a --read-replica is not a standby (not in recovery): not used");
                return self.silent(now);
            }
            Ok(Err(e)) => {
                tracing::debug!(replica = %self.name, error = %e.chain(), "replica check failed");
                return self.silent(now);
            }
            Err(_) => return self.silent(now),
        };
        let Some(lag) = lag else { return self.show(None) };
        let mut health = self.health();
        let was = match *health {
            Health::Answered(was) => Some(was.within(max_lag)),
            _ => None,
        };
        match (was, lag) {
            (Some(false) | None, lag) if lag.within(max_lag) => {
                tracing::info!(replica = %self.name, lag_s = lag.seconds(), "a replica is within the lag bound: reads go to it");
            }
            // Not yet known to be within (one check after the start): not worth a warning.
            (None, Lag::AtLeast(_)) => {}
            (Some(true) | None, lag) if !lag.within(max_lag) => {
                tracing::warn!(replica = %self.name, lag_s = lag.seconds(), "a replica is behind the lag bound: reads go elsewhere until it catches up");
            }
            _ => {}
        }
        *health = Health::Answered(lag);
        drop(health);
        self.show(Some(lag));
    }
}

/// The primary's WAL flush position, in bytes.
async fn flush_position(pool: &Pool) -> Result<u64, StoreError> {
    let client = pool.get().await?;
    let row = client
        .query_one("SELECT (pg_current_wal_flush_lsn() - '0/0'::pg_lsn)::int8", &[])
        .await?;
    Ok(row.try_get::<_, i64>(0)?.unsigned_abs())
}

/// A standby's replay position, in bytes (0 before it replayed anything); `None` when it is not
/// in recovery.
async fn replay_position(pool: &Pool) -> Result<Option<u64>, StoreError> {
    let client = pool.get().await?;
    let row = client
        .query_one(
            "SELECT pg_is_in_recovery(), COALESCE((pg_last_wal_replay_lsn() - '0/0'::pg_lsn)::int8, 0)",
            &[],
        )
        .await?;
    let in_recovery: bool = row.try_get(0)?;
    Ok(if in_recovery {
        Some(row.try_get::<_, i64>(1)?.unsigned_abs())
    } else {
        None
    })
}

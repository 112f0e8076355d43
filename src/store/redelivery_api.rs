//! Getting deliveries back, behind a trait of its own beside `WebhookStore`: what a
//! resend and a test are sent to, how their attempts are recorded, and a recovery stored in one
//! transaction. Who may, and the attempt itself, are the callers'.
//!
//! **A recovery** makes a retry row (`deliveries`) of each event it recovers that the endpoint
//! has already settled (delivered_through is past it), due at once with its attempts counted
//! from 0; an event after `delivered_through` is still pending (its window sends it) and is only
//! counted, as is a retry row being attempted at this moment. The events are read in batches of
//! `RECOVER_BATCH` sequences, within bounds found by bisecting the log on `appended_at`: a
//! recovery of the last hour costs the last hour's events, not the log's.

use std::time::Duration;

use async_trait::async_trait;

use super::error::StoreError;
use super::webhook_api::Due;
use crate::domain::webhook::{Attempt, Outcome, Trigger};
use crate::secret::Secret;

/// Where a test event is sent, and how it is signed.
#[derive(Clone, Debug)]
pub struct Target {
    pub webhook_id: String,
    pub url: String,
    pub secrets: Vec<Secret>,
}

/// What a resend finds.
#[derive(Clone, Debug)]
pub enum Resendable {
    /// The merchant has no such endpoint (or it was deleted).
    NoWebhook,
    /// The endpoint was not to receive such an event (another merchant's, pruned, of a type it
    /// does not take, appended before it was created, or no event at all).
    NoEvent,
    /// The event to send, with the attempts made of it so far.
    Due(Due),
}

/// A recovery: the merchant's endpoint, and the events appended in `since_ms..until_ms`.
#[derive(Clone, Debug)]
pub struct Recovery {
    pub merchant_pk: i64,
    pub webhook_id: String,
    pub since_ms: i64,
    pub until_ms: i64,
    /// When the recovered deliveries are due (now).
    pub now_ms: i64,
    /// The request's deadline: a recovery not committed by then stores nothing (a
    /// 500 has stored nothing, then or later). Checked before each batch and before the commit.
    pub deadline: std::time::Instant,
}

impl Recovery {
    /// `DeadlinePassed` once the request's deadline has passed.
    pub fn in_time(&self) -> Result<(), StoreError> {
        if std::time::Instant::now() >= self.deadline {
            Err(StoreError::DeadlinePassed)
        } else {
            Ok(())
        }
    }
}

/// What a recovery came to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Recovered {
    NoWebhook,
    /// The endpoint is disabled: nothing was recovered.
    Disabled,
    /// How many events are now pending for the endpoint (stored before this is answered).
    Pending(u64),
}

/// How many sequences one statement of a recovery reads: each is short, and a recovery of
/// 100,000 events is fifty of them in its one transaction.
pub const RECOVER_BATCH: i64 = 2000;

/// How far `appended_at` may run behind the log's order: an event's time is taken by its
/// request before the transaction that numbers it commits, and no request lives this long.
pub const APPENDED_SKEW: Duration = Duration::from_secs(600);

/// A search of a merchant's log for the first sequence appended at or after a time, in a log
/// whose times rise with its sequences (within `APPENDED_SKEW`): each engine answers the probes
/// (`probe`, then `answer` with that event's `appended_at`, or none when it is gone).
#[derive(Clone, Copy, Debug)]
pub struct Bisect {
    lo: i64,
    hi: i64,
    at_ms: i64,
}

impl Bisect {
    /// The first sequence in `lo..=hi` appended at or after `at_ms` (`hi` when none is).
    pub fn new(lo: i64, hi: i64, at_ms: i64) -> Self {
        Bisect {
            lo,
            hi: hi.max(lo),
            at_ms,
        }
    }

    /// The sequence to read next, or none when the search is over.
    pub fn probe(&self) -> Option<i64> {
        (self.lo < self.hi).then(|| self.lo + (self.hi - self.lo) / 2)
    }

    /// The probed event's `appended_at` (none: pruned meanwhile, so before any kept).
    pub fn answer(&mut self, appended_at: Option<i64>) {
        let Some(mid) = self.probe() else { return };
        match appended_at {
            Some(at) if at >= self.at_ms => self.hi = mid,
            _ => self.lo = mid + 1,
        }
    }

    /// Where the search ended.
    pub fn found(&self) -> i64 {
        self.lo
    }
}

/// The bisections of a recovery: where its scan of the log starts (a margin before `since`),
/// and where it ends (a margin after `until`).
pub fn recovery_bounds(recovery: &Recovery, lo: i64, hi: i64) -> (Bisect, Bisect) {
    let skew = crate::clock::millis(APPENDED_SKEW);
    (
        Bisect::new(lo, hi, recovery.since_ms.saturating_sub(skew)),
        Bisect::new(lo, hi, recovery.until_ms.saturating_add(skew)),
    )
}

/// Whether an attempt made by hand settles its event for the endpoint: a delivered resend does
/// (no retry of it is made, and a window that reaches it finds it delivered); a test has no event.
pub fn settles_its_event(attempt: &Attempt) -> bool {
    attempt.trigger == Trigger::Resend && attempt.outcome == Outcome::Delivered
}

/// One batch of a recovery: the sequences `from..before`.
#[derive(Clone, Copy, Debug)]
pub struct RecoverBatch {
    pub from: i64,
    pub before: i64,
}

/// A recovery's statements on one batch, as each engine runs them in its transaction.
#[allow(async_fn_in_trait)]
pub trait RecoverSteps {
    /// How many events of the batch the recovery takes.
    async fn count(&mut self, batch: RecoverBatch) -> Result<i64, StoreError>;
    /// The retry rows it makes, or starts again, of those the endpoint has settled: how many.
    async fn insert(&mut self, batch: RecoverBatch) -> Result<i64, StoreError>;
    /// How many of the batch's retry rows an attempt holds at this moment (the insert leaves
    /// them as they are).
    async fn claimed(&mut self, batch: RecoverBatch) -> Result<i64, StoreError>;
}

/// Walks a recovery's sequences `from..to` in batches, within its deadline: how many events are
/// pending for the endpoint after it. A batch the endpoint has settled whole (through
/// `delivered_through`) is read once: the rows the insert made or started again, and those an
/// attempt holds. Another is counted, and its settled part inserted after.
pub async fn recover_batches<S: RecoverSteps>(
    steps: &mut S,
    recovery: &Recovery,
    (from, to): (i64, i64),
    delivered_through: i64,
) -> Result<u64, StoreError> {
    let mut recovered = 0;
    let mut start = from;
    while start < to {
        recovery.in_time()?;
        let batch = RecoverBatch {
            from: start,
            before: (start + RECOVER_BATCH).min(to),
        };
        recovered += if batch.before - 1 <= delivered_through {
            steps.insert(batch).await? + steps.claimed(batch).await?
        } else {
            let n = steps.count(batch).await?;
            if n > 0 && batch.from <= delivered_through {
                steps.insert(batch).await?;
            }
            n
        };
        start = batch.before;
    }
    recovery.in_time()?;
    Ok(u64::try_from(recovered).unwrap_or(0))
}

#[async_trait]
pub trait RedeliveryStore: Send + Sync {
    /// The merchant's endpoint (enabled or disabled, not deleted), as a test is sent to it.
    async fn test_target(&self, merchant_pk: i64, webhook_id: &str, now_ms: i64) -> Result<Option<Target>, StoreError>;

    /// The event `event_id` as a resend sends it to the merchant's endpoint `webhook_id`.
    async fn resendable(
        &self,
        merchant_pk: i64,
        webhook_id: &str,
        event_id: &str,
        now_ms: i64,
    ) -> Result<Resendable, StoreError>;

    /// Records an attempt made by hand (a resend or a test) in the endpoint's log; a resend that
    /// delivered settles its event (its retry row, if any, is dropped). Answers it with its id.
    async fn record_by_hand(&self, webhook_id: &str, attempt: Attempt) -> Result<Attempt, StoreError>;

    /// Stores a recovery in one transaction.
    async fn recover(&self, recovery: Recovery) -> Result<Recovered, StoreError>;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn search(times: &[i64], at: i64) -> i64 {
        // Sequences 1..=n, times[i] the appended_at of sequence i + 1; `hi` one past the end.
        let mut b = Bisect::new(1, times.len() as i64 + 1, at);
        while let Some(p) = b.probe() {
            b.answer(times.get((p - 1) as usize).copied());
        }
        b.found()
    }

    #[test]
    fn bisect_finds_the_first_sequence_at_or_after_a_time() {
        let times = [10, 20, 20, 30, 40];
        assert_eq!(search(&times, 5), 1);
        assert_eq!(search(&times, 20), 2);
        assert_eq!(search(&times, 21), 4);
        assert_eq!(search(&times, 40), 5);
        assert_eq!(search(&times, 41), 6, "none: one past the end");
        assert_eq!(search(&[], 1), 1);
    }

    #[test]
    fn a_recovery_scans_a_margin_either_side() {
        let r = Recovery {
            merchant_pk: 1,
            webhook_id: "w".into(),
            since_ms: 1_000_000,
            until_ms: 2_000_000,
            now_ms: 0,
            deadline: std::time::Instant::now(),
        };
        let (from, to) = recovery_bounds(&r, 1, 100);
        assert_eq!(from.at_ms, 1_000_000 - 600_000);
        assert_eq!(to.at_ms, 2_600_000);
    }
}

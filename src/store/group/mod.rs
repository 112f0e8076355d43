//! What both engines' group commits share: requests of one writer (SQLite's writer thread, or one
//! PostgreSQL merchant) that queue up while a commit is in flight are written in one transaction,
//! each in a savepoint of its own, and each answered only after that transaction committed.
//!
//! **The deadline rule** (a 500 has stored nothing, then or later), one for both
//! engines, in [`GroupDeadline`]: a group's deadline is the earliest deadline of the requests
//! written into it. A request is not begun after its own deadline; a group whose deadline passes
//! while it writes is rolled back whole and every request in it answered `DeadlinePassed` (500),
//! so no group ever commits a request whose answer may already have gone out as 500 (the request's
//! time cap is `STORE_MARGIN` after its deadline); and a group commits what it has before
//! beginning one more request once less than `COMMIT_RESERVE` is left, so that one late request
//! does not take the earlier ones with it. Each engine also stops its statements at the group's
//! deadline, re-armed before every request (SQLite's progress handler, PostgreSQL's
//! `statement_timeout` and `lock_timeout`): a request that joins with an earlier deadline than the
//! group's first brings the bound forward.
//!
//! The loop that applies the rule is written once, in [`driver`], generic over what an engine
//! supplies (begin, a savepoint armed with the deadline, the write, the events' append, commit);
//! a request's write waiting for it is one model for both engines, [`Queued`].
//!
//! **After a commit** (one step, the driver's, for both engines): the events appended are counted
//! (`events_appended_total`) and their merchants' waiting feeds woken on this instance
//! ([`after_commit`]). PostgreSQL's `NOTIFY`, which wakes the other instances, is sent inside the
//! transaction with the events' append: PostgreSQL delivers it only when the transaction commits,
//! so it is after the commit by the server's own rule, at no extra round trip.
//!
//! **The outbox rule**, also the driver's: a request's write returns the changes
//! it made ([`Written`]), and their events are appended to the merchant's log in the request's
//! own savepoint, after its write and only when it is kept: the change and its event are stored
//! together or not at all, and nothing is appended for `validate_only` or a failed write.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::oneshot;

use super::error::StoreError;
use super::event_signal::EventSignal;
use crate::domain::event::Change;
use crate::domain::location::Persist;

pub(crate) mod driver;

/// Most request writes committed together. Not the machine's to size: a group is one transaction
/// under its merchant's lock (64 requests of up to 200 items, some 13,000 rows), whose length its
/// deadline and the merchant's other writers wait on, whatever the cores; past it the next group
/// takes the rest.
pub const MAX_GROUP: usize = 64;

/// How long an operator's change (the CLI's approval) may wait for its merchant's group: it has
/// no request's deadline of its own.
pub const OPERATOR_DEADLINE: Duration = Duration::from_secs(30);

/// A group commits what it has rather than begin another request with less than this left.
pub const COMMIT_RESERVE: Duration = Duration::from_secs(1);

/// The earliest deadline among the requests written into a group (see the module's notes).
#[derive(Clone, Copy, Debug, Default)]
pub struct GroupDeadline(Option<Instant>);

impl GroupDeadline {
    /// A request with `deadline` is written into the group.
    pub fn include(&mut self, deadline: Instant) {
        self.0 = Some(self.0.map_or(deadline, |d| d.min(deadline)));
    }

    /// The group's deadline once a request with `deadline` is written into it.
    pub fn with(mut self, deadline: Instant) -> Instant {
        self.include(deadline);
        self.0.unwrap_or(deadline)
    }

    pub fn at(&self) -> Option<Instant> {
        self.0
    }

    /// The deadline passed: the group must be rolled back, not committed.
    pub fn missed(&self) -> bool {
        self.0.is_some_and(|d| Instant::now() > d)
    }

    /// Too little is left to begin another request: commit what the group has first.
    pub fn nearly_due(&self) -> bool {
        self.0.is_some_and(|d| Instant::now() + COMMIT_RESERVE > d)
    }

    /// How long is left (zero when it passed; `None` when no request is in the group).
    pub fn left(&self) -> Option<Duration> {
        self.0.map(|d| d.saturating_duration_since(Instant::now()))
    }
}

/// Where a request waits for its write's result.
pub type Reply<T> = oneshot::Sender<Result<T, StoreError>>;

/// What a request's write returns: its answer, and the locations it changed (their events go into
/// its merchant's log, see the outbox rule above).
pub struct Written<T> {
    pub value: T,
    pub changes: Vec<Change>,
}

impl<T> Written<T> {
    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> Written<U> {
        Written {
            value: f(self.value),
            changes: self.changes,
        }
    }
}

/// A request's write waiting for its group, the one model of both engines: its merchant, its
/// deadline, whether its work is kept, the engine's work `W`, and where to answer what the work
/// returns (`T`).
pub struct Queued<W, T> {
    merchant_pk: i64,
    deadline: Instant,
    persist: Persist,
    reply: Reply<T>,
    work: Option<W>,
    result: Option<Result<T, StoreError>>,
    changes: Vec<Change>,
}

impl<W, T> Queued<W, T> {
    /// A write of the merchant `merchant_pk` answered through `reply`, not to begin after
    /// `deadline`.
    pub fn new(merchant_pk: i64, deadline: Instant, persist: Persist, work: W, reply: Reply<T>) -> Self {
        Queued {
            merchant_pk,
            deadline,
            persist,
            reply,
            work: Some(work),
            result: None,
            changes: Vec::new(),
        }
    }

    /// The work, to be done once (`None` when it was taken).
    pub fn take_work(&mut self) -> Option<W> {
        self.work.take()
    }

    /// What the work returned; whether it succeeded.
    pub fn done(&mut self, result: Result<Written<T>, StoreError>) -> bool {
        let ok = result.is_ok();
        self.result = Some(result.map(|written| {
            self.changes = written.changes;
            written.value
        }));
        ok
    }
}

/// What the driver needs of a request's write, whatever the engine's work is.
pub trait Pending {
    /// When its write must be done by.
    fn deadline(&self) -> Instant;
    /// Its caller stopped waiting, or its deadline passed: it must not begin.
    fn abandoned(&self) -> bool;
    /// Whether its work is kept: a `validate_only` request's is rolled back.
    fn persist(&self) -> Persist;
    /// Its work is lost or was not begun: it answers `e`.
    fn fail(&mut self, e: StoreError);
    /// Its merchant, and the locations its work changed (none before it was done).
    fn changes(&self) -> (i64, &[Change]);
    /// Answers: its result when the group committed, else the commit's error.
    fn finish(self, committed: Result<(), StoreError>);
}

impl<W, T> Pending for Queued<W, T> {
    fn deadline(&self) -> Instant {
        self.deadline
    }

    fn abandoned(&self) -> bool {
        self.reply.is_closed() || Instant::now() > self.deadline
    }

    fn persist(&self) -> Persist {
        self.persist
    }

    fn fail(&mut self, e: StoreError) {
        self.result = Some(Err(e));
        self.changes.clear();
    }

    fn changes(&self) -> (i64, &[Change]) {
        (self.merchant_pk, &self.changes)
    }

    fn finish(self, committed: Result<(), StoreError>) {
        let result = self.result.unwrap_or(Err(StoreError::DeadlinePassed));
        let _ = self.reply.send(committed.and(result));
    }
}

/// What follows every commit of a group, once for both engines: each event appended is counted,
/// and each merchant that has new events has its waiting feeds woken (once per group).
/// `committed`: each kept request's merchant and changes.
pub fn after_commit<'a>(signal: &EventSignal, committed: impl Iterator<Item = (i64, &'a [Change])>) {
    let mut rung: Vec<i64> = Vec::new();
    for (merchant_pk, changes) in committed {
        for change in changes {
            metrics::counter!("events_appended_total", "type" => change.kind.as_str()).increment(1);
        }
        if !changes.is_empty() && !rung.contains(&merchant_pk) {
            signal.ring(merchant_pk);
            rung.push(merchant_pk);
        }
    }
}

/// Test hook (a failpoint, in debug builds only): how long the next request's write stalls inside
/// its transaction, in milliseconds (0: none), so that a test can make a write overrun its
/// deadline on either engine.
#[derive(Debug, Default)]
pub struct WriteDelay(std::sync::atomic::AtomicU64);

impl WriteDelay {
    pub fn set(&self, by: Duration) {
        let ms = crate::clock::millis_u64(by);
        self.0.store(ms, std::sync::atomic::Ordering::SeqCst);
    }

    /// The delay to apply now (once), in debug builds when a test asked for one; `None` otherwise,
    /// and always in release builds. `None` is no wait at all: a zero-length tokio sleep still
    /// waits for the timer's next millisecond tick, and PostgreSQL's group paid that for every
    /// request under the merchant's lock (1.5 ms each, a create on PostgreSQL 0.9 of `4d58f1f`'s).
    pub fn take(&self) -> Option<Duration> {
        if !cfg!(debug_assertions) {
            return None;
        }
        match self.0.swap(0, std::sync::atomic::Ordering::SeqCst) {
            0 => None,
            ms => Some(Duration::from_millis(ms)),
        }
    }
}

/// One error reported to every request of a group that failed to commit.
#[derive(Debug, Clone)]
pub struct SharedError(Arc<dyn std::error::Error + Send + Sync>);

impl SharedError {
    pub fn new(e: impl std::error::Error + Send + Sync + 'static) -> Self {
        SharedError(Arc::new(e))
    }

    /// The error for one more request.
    pub fn to_store(&self) -> StoreError {
        StoreError::backend(self.clone())
    }
}

impl std::fmt::Display for SharedError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for SharedError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_group_s_deadline_is_its_earliest_request_s() {
        let mut group = GroupDeadline::default();
        assert!(!group.missed() && !group.nearly_due() && group.left().is_none());
        let now = Instant::now();
        group.include(now + Duration::from_secs(20));
        group.include(now + Duration::from_secs(10));
        group.include(now + Duration::from_secs(30));
        assert_eq!(group.at(), Some(now + Duration::from_secs(10)));
        assert!(!group.missed() && !group.nearly_due());
        group.include(now + Duration::from_millis(500));
        assert!(group.nearly_due() && !group.missed());
        group.include(now.checked_sub(Duration::from_millis(1)).unwrap_or(now));
        assert!(group.missed());
        assert_eq!(group.left(), Some(Duration::ZERO));
    }

    /// No stall unless a test asked for one, and then once: a stall of zero would still wait for
    /// the timer's next tick under the merchant's lock.
    #[test]
    fn a_write_delay_is_none_unless_asked_and_then_once() {
        let delay = WriteDelay::default();
        assert_eq!(delay.take(), None);
        delay.set(Duration::ZERO);
        assert_eq!(delay.take(), None);
        delay.set(Duration::from_millis(30));
        assert_eq!(delay.take(), Some(Duration::from_millis(30)));
        assert_eq!(delay.take(), None);
    }
}

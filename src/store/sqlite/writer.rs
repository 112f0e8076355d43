//! The writer thread: every write of the store, one at a time. Request writes (create, update,
//! archive, restore) that queue up while a commit is in flight are committed together (*group
//! commit*): one `BEGIN IMMEDIATE … COMMIT`, one fsync, many requests, each inside its own
//! savepoint so that a failure of one request rolls back only that request. Every request is
//! answered only after the commit that holds it returned, so with `synchronous=FULL` an answered
//! write is on disk. Being the only writer also serialises every decision (retry, conflict,
//! quarantine, versions) with the writes it depends on.
//!
//! A group keeps the deadline rule of `store::group` (a group past its deadline is rolled back
//! whole, never committed): SQLite's progress handler interrupts any statement still running at
//! the group's deadline, so an overrunning request cannot hold the writer, and every merchant's
//! writes behind it, for long.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

use rusqlite::{Connection, TransactionBehavior};
use tokio::sync::mpsc;

use crate::domain::location::Persist;
use crate::store::api::StoreError;
use crate::store::group::{GroupDeadline, MAX_GROUP, SharedError, Waiting, WriteDelay};

pub(super) enum Job {
    /// A request's write, committed in a group.
    Grouped(Box<dyn GroupWrite>),
    /// Any other write, run alone in its own transaction by the closure.
    Run(Box<dyn FnOnce(&mut Connection) + Send>),
}

/// What the writer thread shares with the rest of the store.
#[derive(Debug, Default)]
pub(super) struct WriterHealth {
    /// The last group failed to commit (disk full, read-only, I/O error): `ping` then proves
    /// writes work again before it reports ready.
    pub(super) write_failed: AtomicBool,
    /// Test hook: when non-zero, the insert that brings it to 1 fails (see `fail_after_inserts`).
    pub(super) failpoint: AtomicU64,
    /// Test hook: the next request's write stalls this long inside its transaction.
    pub(super) delay: WriteDelay,
}

/// When the statements of the group being written must stop: SQLite's progress handler reads it
/// every `PROGRESS_STEPS` virtual-machine steps (a few microseconds).
struct Interrupt {
    base: Instant,
    /// Milliseconds after `base`; `u64::MAX`: none.
    at_ms: AtomicU64,
}

const PROGRESS_STEPS: std::ffi::c_int = 10_000;

impl Interrupt {
    fn new() -> Arc<Self> {
        Arc::new(Interrupt {
            base: Instant::now(),
            at_ms: AtomicU64::new(u64::MAX),
        })
    }

    fn set(&self, deadline: GroupDeadline) {
        let ms = deadline.at().map_or(u64::MAX, |at| {
            u64::try_from(at.saturating_duration_since(self.base).as_millis()).unwrap_or(u64::MAX)
        });
        self.at_ms.store(ms, Ordering::Relaxed);
    }

    fn due(&self) -> bool {
        let at = self.at_ms.load(Ordering::Relaxed);
        at != u64::MAX && u64::try_from(self.base.elapsed().as_millis()).unwrap_or(u64::MAX) > at
    }
}

/// A request's write waiting for the writer: its work, run inside the group's transaction, and
/// its reply, sent once the group committed.
pub(super) trait GroupWrite: Send {
    /// Its caller stopped waiting, or its deadline passed: it must not begin.
    fn abandoned(&self) -> bool;
    /// When its write must be done by.
    fn deadline(&self) -> Instant;
    /// Does the work (in a savepoint of its own); whether it succeeded.
    fn write(&mut self, tx: &Connection, health: &WriterHealth) -> bool;
    /// Whether its work is kept: a `validate_only` request's is rolled back (CONTRACT §14).
    fn persist(&self) -> Persist;
    /// Its work is lost (its savepoint could not be taken or released): it answers `e`.
    fn fail(&mut self, e: StoreError);
    /// Answers: its result when the group committed, else the commit's error.
    fn finish(self: Box<Self>, committed: Result<(), StoreError>);
}

/// The one `GroupWrite`: a closure and the reply for what it returns.
pub(super) struct Queued<T> {
    waiting: Waiting<T>,
    persist: Persist,
    work: Option<Work<T>>,
    result: Option<Result<T, StoreError>>,
}

type Work<T> = Box<dyn FnOnce(&Connection, &WriterHealth) -> Result<T, StoreError> + Send>;

impl<T: Send + 'static> Queued<T> {
    pub(super) fn job(
        waiting: Waiting<T>,
        persist: Persist,
        work: impl FnOnce(&Connection, &WriterHealth) -> Result<T, StoreError> + Send + 'static,
    ) -> Job {
        Job::Grouped(Box::new(Queued {
            waiting,
            persist,
            work: Some(Box::new(work)),
            result: None,
        }))
    }
}

impl<T: Send + 'static> GroupWrite for Queued<T> {
    fn abandoned(&self) -> bool {
        self.waiting.abandoned()
    }

    fn deadline(&self) -> Instant {
        self.waiting.deadline
    }

    fn write(&mut self, tx: &Connection, health: &WriterHealth) -> bool {
        let result = match self.work.take() {
            Some(work) => work(tx, health),
            None => Err(StoreError::Unavailable),
        };
        let ok = result.is_ok();
        self.result = Some(result);
        ok
    }

    fn persist(&self) -> Persist {
        self.persist
    }

    fn fail(&mut self, e: StoreError) {
        self.result = Some(Err(e));
    }

    fn finish(self: Box<Self>, committed: Result<(), StoreError>) {
        let result = self.result.unwrap_or(Err(StoreError::DeadlinePassed));
        self.waiting.finish(result, committed);
    }
}

pub(super) fn writer_loop(mut conn: Connection, mut jobs: mpsc::Receiver<Job>, health: &WriterHealth) {
    let interrupt = Interrupt::new();
    let handler = Arc::clone(&interrupt);
    if let Err(e) = conn.progress_handler(PROGRESS_STEPS, Some(move || handler.due())) {
        tracing::warn!(error = %e, "could not install the writer's progress handler");
    }
    let mut next = None;
    loop {
        let Some(job) = next.take().or_else(|| jobs.blocking_recv()) else {
            // Closed: fold the WAL into the database file, so that after a clean stop the file is
            // complete on its own (copies and backups of it alone lose nothing).
            if let Err(e) = conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE)") {
                tracing::warn!(error = %e, "WAL checkpoint at close failed");
            }
            return;
        };
        match job {
            Job::Run(f) => {
                // A panic drops the job's reply sender, which its caller sees as `Unavailable`.
                let _ = std::panic::catch_unwind(AssertUnwindSafe(|| f(&mut conn)));
            }
            Job::Grouped(job) => {
                let mut group = vec![job];
                while group.len() < MAX_GROUP {
                    match jobs.try_recv() {
                        Ok(Job::Grouped(job)) => group.push(job),
                        Ok(other) => {
                            next = Some(other);
                            break;
                        }
                        Err(_) => break,
                    }
                }
                let _ = std::panic::catch_unwind(AssertUnwindSafe(|| {
                    let mut jobs = group.into_iter().peekable();
                    while jobs.peek().is_some() {
                        commit_group(&mut conn, &mut jobs, health, &interrupt);
                    }
                }));
                interrupt.set(GroupDeadline::default());
            }
        }
    }
}

/// Writes requests of `jobs` in one transaction, each in its own savepoint, until they run out or
/// the group's deadline is near (`store::group`), and answers each only after the commit; a group
/// whose deadline passed is rolled back whole, its requests answered `DeadlinePassed`.
fn commit_group(
    conn: &mut Connection,
    jobs: &mut impl Iterator<Item = Box<dyn GroupWrite>>,
    health: &WriterHealth,
    interrupt: &Interrupt,
) {
    let mut tx = match conn.transaction_with_behavior(TransactionBehavior::Immediate) {
        Ok(tx) => tx,
        Err(e) => {
            health.write_failed.store(true, Ordering::SeqCst);
            let e = SharedError::new(e);
            for job in jobs {
                job.finish(Err(e.to_store()));
            }
            return;
        }
    };
    let mut deadline = GroupDeadline::default();
    let mut written = Vec::new();
    let mut all_ok = true;
    while !deadline.nearly_due() {
        let Some(mut job) = jobs.next() else { break };
        if job.abandoned() {
            job.finish(Err(StoreError::DeadlinePassed));
            continue;
        }
        deadline.include(job.deadline());
        interrupt.set(deadline);
        let ok = match tx.savepoint() {
            Ok(sp) => {
                // A failed write's savepoint is dropped, which rolls back what it did; so is a
                // `validate_only` request's, which succeeded.
                let ok = job.write(&sp, health);
                std::thread::sleep(health.delay.take());
                if job.persist().commits() {
                    ok && sp.commit().map_err(|e| job.fail(e.into())).is_ok()
                } else {
                    ok
                }
            }
            Err(e) => {
                job.fail(e.into());
                false
            }
        };
        written.push(job);
        if deadline.missed() {
            break;
        }
        if !ok {
            all_ok = false;
            health.write_failed.store(true, Ordering::SeqCst);
        }
    }
    if deadline.missed() {
        // Dropping the transaction rolls it back: nothing of the group is stored.
        drop(tx);
        for job in written {
            job.finish(Err(StoreError::DeadlinePassed));
        }
        return;
    }
    match tx.commit() {
        Ok(()) => {
            if all_ok {
                health.write_failed.store(false, Ordering::SeqCst);
            }
            for job in written {
                job.finish(Ok(()));
            }
        }
        Err(e) => {
            health.write_failed.store(true, Ordering::SeqCst);
            let e = SharedError::new(e);
            for job in written {
                job.finish(Err(e.to_store()));
            }
        }
    }
}

/// The test failpoint of `fail_after_inserts`: fails the insert that brings it to 1. Compiled
/// into debug builds (the tests') only: a release build's insert path has no failpoint.
#[cfg(not(debug_assertions))]
#[inline(always)]
pub(super) fn fire(_failpoint: &AtomicU64) -> Result<(), StoreError> {
    Ok(())
}

/// The test failpoint of `fail_after_inserts`: fails the insert that brings it to 1. Compiled
/// into debug builds (the tests') only: a release build's insert path has no failpoint.
#[cfg(debug_assertions)]
pub(super) fn fire(failpoint: &AtomicU64) -> Result<(), StoreError> {
    let armed = failpoint.load(Ordering::SeqCst);
    if armed == 1 {
        failpoint.store(0, Ordering::SeqCst);
        return Err(StoreError::Backend(
            "injected failure (failpoint): database or disk is full".into(),
        ));
    } else if armed > 1 {
        failpoint.store(armed - 1, Ordering::SeqCst);
    }
    Ok(())
}

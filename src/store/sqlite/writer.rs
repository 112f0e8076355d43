//! The writer thread: every write of the store, one at a time. Request writes (create, update,
//! archive, restore) that queue up while a commit is in flight are committed together (*group
//! commit*): one `BEGIN IMMEDIATE … COMMIT`, one fsync, many requests, each inside its own
//! savepoint so that a failure of one request rolls back only that request. Every request is
//! answered only after the commit that holds it returned, so with `synchronous=FULL` an answered
//! write is on disk. Being the only writer also serialises every decision (retry, conflict,
//! quarantine, versions) with the writes it depends on.

use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use rusqlite::{Connection, TransactionBehavior};
use tokio::sync::mpsc;

use crate::store::api::StoreError;
use crate::store::group::{MAX_GROUP, SharedError, Waiting};

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
}

/// A request's write waiting for the writer: its work, run inside the group's transaction, and
/// its reply, sent once the group committed.
pub(super) trait GroupWrite: Send {
    /// Its caller stopped waiting, or its deadline passed: it must not begin.
    fn abandoned(&self) -> bool;
    /// Does the work (in a savepoint of its own); whether it succeeded.
    fn write(&mut self, tx: &Connection, health: &WriterHealth) -> bool;
    /// Its work is lost (its savepoint could not be taken or released): it answers `e`.
    fn fail(&mut self, e: StoreError);
    /// Answers: its result when the group committed, else the commit's error.
    fn finish(self: Box<Self>, committed: Result<(), StoreError>);
}

/// The one `GroupWrite`: a closure and the reply for what it returns.
pub(super) struct Queued<T> {
    waiting: Waiting<T>,
    work: Option<Work<T>>,
    result: Option<Result<T, StoreError>>,
}

type Work<T> = Box<dyn FnOnce(&Connection, &WriterHealth) -> Result<T, StoreError> + Send>;

impl<T: Send + 'static> Queued<T> {
    pub(super) fn job(
        waiting: Waiting<T>,
        work: impl FnOnce(&Connection, &WriterHealth) -> Result<T, StoreError> + Send + 'static,
    ) -> Job {
        Job::Grouped(Box::new(Queued {
            waiting,
            work: Some(Box::new(work)),
            result: None,
        }))
    }
}

impl<T: Send + 'static> GroupWrite for Queued<T> {
    fn abandoned(&self) -> bool {
        self.waiting.abandoned()
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

    fn fail(&mut self, e: StoreError) {
        self.result = Some(Err(e));
    }

    fn finish(self: Box<Self>, committed: Result<(), StoreError>) {
        let result = self.result.unwrap_or(Err(StoreError::DeadlinePassed));
        self.waiting.finish(result, committed);
    }
}

pub(super) fn writer_loop(mut conn: Connection, mut jobs: mpsc::Receiver<Job>, health: &WriterHealth) {
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
                let _ = std::panic::catch_unwind(AssertUnwindSafe(|| commit_group(&mut conn, group, health)));
            }
        }
    }
}

/// Writes several requests in one transaction, each in its own savepoint, and answers each only
/// after the commit.
fn commit_group(conn: &mut Connection, group: Vec<Box<dyn GroupWrite>>, health: &WriterHealth) {
    let mut tx = match conn.transaction_with_behavior(TransactionBehavior::Immediate) {
        Ok(tx) => tx,
        Err(e) => {
            health.write_failed.store(true, Ordering::SeqCst);
            let e = SharedError::new(e);
            for job in group {
                job.finish(Err(e.to_store()));
            }
            return;
        }
    };
    let mut written = Vec::with_capacity(group.len());
    let mut all_ok = true;
    for mut job in group {
        if job.abandoned() {
            job.finish(Err(StoreError::DeadlinePassed));
            continue;
        }
        let ok = match tx.savepoint() {
            Ok(sp) => {
                // A failed write's savepoint is dropped, which rolls back what it did.
                job.write(&sp, health) && sp.commit().map_err(|e| job.fail(e.into())).is_ok()
            }
            Err(e) => {
                job.fail(e.into());
                false
            }
        };
        if !ok {
            all_ok = false;
            health.write_failed.store(true, Ordering::SeqCst);
        }
        written.push(job);
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

//! The writer thread: every write of the store, one at a time. Request writes (create, update,
//! archive, restore) that queue up while a commit is in flight are committed together (*group
//! commit*): one `BEGIN IMMEDIATE … COMMIT`, one fsync, many requests, each inside its own
//! savepoint so that a failure of one request rolls back only that request. Every request is
//! answered only after the commit that holds it returned, so with `synchronous=FULL` an answered
//! write is on disk. Being the only writer also serialises every decision (retry, conflict,
//! quarantine, versions) with the writes it depends on.
//!
//! The group's loop is `store::group::driver`'s, which keeps the deadline rule (a group past its
//! deadline is rolled back whole, never committed); here are its steps on this connection.
//! SQLite's progress handler interrupts any statement still running at the group's deadline,
//! re-armed before each request, so an overrunning request cannot hold the writer, and every
//! merchant's writes behind it, for long.

use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use rusqlite::{Connection, TransactionBehavior};
use tokio::sync::{mpsc, oneshot};

use crate::domain::event::Change;
use crate::domain::location::Persist;
use crate::store::api::StoreError;
use crate::store::event_signal::EventSignal;
use crate::store::group::driver::{self, CommitFailed, Ended, Engine};
use crate::store::group::{MAX_GROUP, Pending, Queued, Reply, SharedError, WriteDelay, Written};

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

    fn set(&self, deadline: Option<Instant>) {
        let ms = deadline.map_or(u64::MAX, |at| {
            crate::clock::millis_u64(at.saturating_duration_since(self.base))
        });
        self.at_ms.store(ms, Ordering::Relaxed);
    }

    fn due(&self) -> bool {
        let at = self.at_ms.load(Ordering::Relaxed);
        at != u64::MAX && crate::clock::millis_u64(self.base.elapsed()) > at
    }
}

/// The work of a request's write, run inside the group's transaction on the writer thread.
pub(super) type Work<T> = Box<dyn FnOnce(&Connection, &WriterHealth) -> Result<Written<T>, StoreError> + Send>;

/// A request's write waiting for the writer, whatever its work returns (the queue holds many
/// kinds): the one `Queued` model of `store::group`, with its work run on this connection.
pub(super) trait GroupWrite: Send {
    fn pending(&self) -> &dyn PendingInfo;
    fn pending_mut(&mut self) -> &mut dyn PendingInfo;
    /// Does the work; whether it succeeded.
    fn write(&mut self, conn: &Connection, health: &WriterHealth) -> bool;
    fn finish_boxed(self: Box<Self>, committed: Result<(), StoreError>);
}

/// `Pending`'s questions, asked of a job behind a box.
pub(super) trait PendingInfo {
    fn deadline(&self) -> Instant;
    fn abandoned(&self) -> bool;
    fn persist(&self) -> Persist;
    fn fail(&mut self, e: StoreError);
    fn changes(&self) -> (i64, &[Change]);
}

impl<P: Pending> PendingInfo for P {
    fn deadline(&self) -> Instant {
        Pending::deadline(self)
    }
    fn abandoned(&self) -> bool {
        Pending::abandoned(self)
    }
    fn persist(&self) -> Persist {
        Pending::persist(self)
    }
    fn fail(&mut self, e: StoreError) {
        Pending::fail(self, e);
    }
    fn changes(&self) -> (i64, &[Change]) {
        Pending::changes(self)
    }
}

impl<T: Send + 'static> GroupWrite for Queued<Work<T>, T> {
    fn pending(&self) -> &dyn PendingInfo {
        self
    }

    fn pending_mut(&mut self) -> &mut dyn PendingInfo {
        self
    }

    fn write(&mut self, conn: &Connection, health: &WriterHealth) -> bool {
        let result = match self.take_work() {
            Some(work) => work(conn, health),
            None => Err(StoreError::Unavailable),
        };
        self.done(result)
    }

    fn finish_boxed(self: Box<Self>, committed: Result<(), StoreError>) {
        Pending::finish(*self, committed);
    }
}

impl Pending for Box<dyn GroupWrite> {
    fn deadline(&self) -> Instant {
        self.pending().deadline()
    }
    fn abandoned(&self) -> bool {
        self.pending().abandoned()
    }
    fn persist(&self) -> Persist {
        self.pending().persist()
    }
    fn fail(&mut self, e: StoreError) {
        self.pending_mut().fail(e);
    }
    fn changes(&self) -> (i64, &[Change]) {
        self.pending().changes()
    }
    fn finish(self, committed: Result<(), StoreError>) {
        self.finish_boxed(committed);
    }
}

/// A request's write for the writer: the merchant's `work` in the next group, answered through
/// `reply`.
pub(super) fn grouped<T: Send + 'static>(
    merchant_pk: i64,
    deadline: Instant,
    persist: Persist,
    work: Work<T>,
    reply: Reply<T>,
) -> Job {
    Job::Grouped(Box::new(Queued::new(merchant_pk, deadline, persist, work, reply)))
}

/// The group commit's steps on the writer's connection (`store::group::driver`). A group that
/// ends early (a panic) leaves no transaction open: dropping the engine rolls it back.
struct Sqlite<'c> {
    conn: &'c Connection,
    health: &'c WriterHealth,
    interrupt: &'c Interrupt,
    in_tx: bool,
}

impl Sqlite<'_> {
    fn run(&self, sql: &str) -> Result<(), SharedError> {
        self.conn.execute_batch(sql).map_err(SharedError::new)
    }
}

impl Engine for Sqlite<'_> {
    type Job = Box<dyn GroupWrite>;

    async fn begin(&mut self) -> Result<(), SharedError> {
        self.run("BEGIN IMMEDIATE")?;
        self.in_tx = true;
        Ok(())
    }

    async fn savepoint(&mut self, deadline: Instant) -> Result<(), SharedError> {
        self.interrupt.set(Some(deadline));
        self.run("SAVEPOINT request")
    }

    async fn write(&mut self, job: &mut Self::Job) -> bool {
        job.write(self.conn, self.health)
    }

    async fn append(&mut self, merchant_pk: i64, changes: &[Change]) -> Result<(), StoreError> {
        super::events::append(self.conn, merchant_pk, changes)
    }

    async fn end_savepoint(&mut self, keep: bool) -> Result<(), SharedError> {
        if keep {
            self.run("RELEASE request")
        } else {
            self.run("ROLLBACK TO request; RELEASE request")
        }
    }

    async fn commit(&mut self) -> Result<(), CommitFailed> {
        let committed = self.run("COMMIT").map_err(CommitFailed::Refused);
        if committed.is_err() {
            self.rollback().await;
        }
        self.in_tx = false;
        committed
    }

    async fn rollback(&mut self) {
        if self.in_tx
            && !self.conn.is_autocommit()
            && let Err(e) = self.run("ROLLBACK")
        {
            tracing::warn!(error = %e, "rolling back a group failed");
        }
        self.in_tx = false;
    }

    async fn stall(&mut self) {
        if let Some(delay) = self.health.delay.take() {
            std::thread::sleep(delay);
        }
    }
}

impl Drop for Sqlite<'_> {
    fn drop(&mut self) {
        if !self.conn.is_autocommit() {
            let _ = self.conn.execute_batch("ROLLBACK");
        }
    }
}

pub(super) fn writer_loop(
    mut conn: Connection,
    mut jobs: mpsc::Receiver<Job>,
    health: &WriterHealth,
    signal: &EventSignal,
) {
    let interrupt = Interrupt::new();
    let handler = Arc::clone(&interrupt);
    if let Err(e) = conn.progress_handler(PROGRESS_STEPS, Some(move || handler.due())) {
        tracing::warn!(error = %e, "could not install the writer's progress handler");
    }
    // The driver is async (PostgreSQL's steps are); here every step is done when it returns, so
    // a runtime of this thread alone runs it.
    let runtime = match tokio::runtime::Builder::new_current_thread().build() {
        Ok(runtime) => runtime,
        Err(e) => {
            tracing::error!(error = %e, "the writer could not start");
            return;
        }
    };
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
                let mut engine = Sqlite {
                    conn: &conn,
                    health,
                    interrupt: &interrupt,
                    in_tx: false,
                };
                let ended = std::panic::catch_unwind(AssertUnwindSafe(|| {
                    runtime.block_on(driver::write_all(&mut engine, group, signal))
                }));
                drop(engine);
                match ended {
                    Ok(Some(Ended::Healthy)) => health.write_failed.store(false, Ordering::SeqCst),
                    Ok(Some(Ended::Failed)) | Err(_) => health.write_failed.store(true, Ordering::SeqCst),
                    Ok(Some(Ended::RolledBack) | None) => {}
                }
                interrupt.set(None);
            }
        }
    }
}

/// The writer thread's queue (closed at `close`).
pub(super) type Jobs = Arc<Mutex<Option<mpsc::Sender<Job>>>>;

pub(super) fn sender(jobs: &Jobs) -> Result<mpsc::Sender<Job>, StoreError> {
    jobs.lock()
        .map_err(|_| StoreError::Unavailable)?
        .clone()
        .ok_or(StoreError::Unavailable)
}

/// Runs `f` on the writer thread, in a transaction of its own.
pub(super) async fn write<T: Send + 'static>(
    jobs: &Jobs,
    f: impl FnOnce(&rusqlite::Transaction<'_>) -> Result<T, StoreError> + Send + 'static,
) -> Result<T, StoreError> {
    let (reply, answer) = oneshot::channel();
    let job = Job::Run(Box::new(move |conn: &mut Connection| {
        let result = (|| {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let value = f(&tx)?;
            tx.commit()?;
            Ok(value)
        })();
        let _ = reply.send(result);
    }));
    sender(jobs)?.send(job).await.map_err(|_| StoreError::Unavailable)?;
    answer.await.map_err(|_| StoreError::Unavailable)?
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

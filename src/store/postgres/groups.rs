//! Group commit per merchant: a merchant's create and change requests queue in order, and a
//! task of that merchant's writes them, those that arrived while its last transaction was
//! committing together: one transaction, one advisory lock on the merchant (across every
//! instance), one commit and one fsync for the group, each request in a savepoint of its own so
//! that a failed request rolls back only itself (as the SQLite writer does for all merchants).
//! Every request is answered after the commit that holds it. Within the transaction a request
//! sees what the requests before it wrote, so retries, conflicts and the quarantine check decide
//! exactly as they would one transaction each, in the order the requests were queued.
//!
//! The group's loop is `store::group::driver`'s, which keeps the deadline rule; here are its steps
//! on one connection: `statement_timeout` and `lock_timeout` re-armed before each request to end
//! at the group's deadline, and a commit whose connection broke (no answer from the server) is
//! `OutcomeUnknown` (503), never a plain failure: the server may have committed it.

use std::collections::hash_map::Entry;
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use deadpool_postgres::{Object, Pool};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, oneshot};

use super::changes::{approve_in_tx, change_in_tx};
use super::locations::create_in_tx;
use super::sql::GENERIC_PLANS;
use crate::domain::event::Change;
use crate::domain::location::Persist;
use crate::domain::location::batch::{NewLocation, Outcome};
use crate::domain::location::change::{ChangePlan, Decision};
use crate::store::api::{Approval, StoreError};
use crate::store::event_signal::EventSignal;
use crate::store::group::driver::{self, CommitFailed, Engine};
use crate::store::group::{MAX_GROUP, Queued, SharedError, WriteDelay};

/// The longest a group waits for a writer's seat: as long as it would wait for a connection.
const WRITER_WAIT: Duration = Duration::from_secs(5);

/// What a request asks of its merchant's group.
enum Work {
    Create(Vec<NewLocation>),
    Change(ChangePlan),
    /// An operator's approval of this location.
    Approve(String),
}

/// What the group answers it.
enum Answer {
    Created(Vec<Outcome>),
    Changed(Decision),
    Approved(Approval),
}

/// A request's write, queued for its merchant's next group (`store::group`'s one model).
type Job = Queued<Work, Answer>;

/// The queues of the merchants whose writes are in flight: a merchant has an entry exactly while
/// a task of its own is writing its groups.
type Queues = Arc<Mutex<HashMap<i64, VecDeque<Job>>>>;

pub(super) struct MerchantGroups {
    pool: Pool,
    /// The connections the groups may hold at once (`store::Pools::pg_writers`): however many
    /// merchants write, the rest of the pool is left to reads.
    writers: Arc<Semaphore>,
    queues: Queues,
    /// Woken after each commit that appended events (`store::group::after_commit`).
    signal: Arc<EventSignal>,
    /// Test hook: the next request's write stalls this long inside its transaction.
    pub(super) delay: Arc<WriteDelay>,
}

impl MerchantGroups {
    pub(super) fn new(pool: Pool, writers: usize, signal: Arc<EventSignal>) -> Self {
        MerchantGroups {
            pool,
            writers: Arc::new(Semaphore::new(writers.max(1))),
            queues: Arc::default(),
            signal,
            delay: Arc::default(),
        }
    }

    /// Creates `items` in the merchant's next group (or decides them there and rolls back); their
    /// outcomes once committed.
    pub(super) async fn create(
        &self,
        merchant_pk: i64,
        items: Vec<NewLocation>,
        persist: Persist,
        deadline: Instant,
    ) -> Result<Vec<Outcome>, StoreError> {
        match self.write(merchant_pk, Work::Create(items), persist, deadline).await? {
            Answer::Created(outcomes) => Ok(outcomes),
            _ => Err(StoreError::Unavailable),
        }
    }

    /// Decides and writes `plan` in the merchant's next group (or decides it there and rolls
    /// back); the decision once committed.
    pub(super) async fn change(
        &self,
        merchant_pk: i64,
        plan: ChangePlan,
        persist: Persist,
        deadline: Instant,
    ) -> Result<Decision, StoreError> {
        match self.write(merchant_pk, Work::Change(plan), persist, deadline).await? {
            Answer::Changed(decision) => Ok(decision),
            _ => Err(StoreError::Unavailable),
        }
    }

    /// An operator's approval of `location_id`, a location of the merchant, in the merchant's
    /// next group like every other change (its event appended and its feeds woken there).
    pub(super) async fn approve(&self, merchant_pk: i64, location_id: &str) -> Result<Approval, StoreError> {
        let deadline = Instant::now() + crate::store::group::OPERATOR_DEADLINE;
        let work = Work::Approve(location_id.to_owned());
        match self.write(merchant_pk, work, Persist::Commit, deadline).await? {
            Answer::Approved(approval) => Ok(approval),
            _ => Err(StoreError::Unavailable),
        }
    }

    async fn write(
        &self,
        merchant_pk: i64,
        work: Work,
        persist: Persist,
        deadline: Instant,
    ) -> Result<Answer, StoreError> {
        let (reply, answer) = oneshot::channel();
        self.queue(merchant_pk, Queued::new(merchant_pk, deadline, persist, work, reply));
        answer.await.map_err(|_| StoreError::Unavailable)?
    }

    /// Queues `job` behind the merchant's others, starting the merchant's task if none runs. The
    /// task is not the request's: a request that stops waiting does not stop its group.
    fn queue(&self, merchant_pk: i64, job: Job) {
        let start = match lock(&self.queues).entry(merchant_pk) {
            Entry::Occupied(mut queue) => {
                queue.get_mut().push_back(job);
                false
            }
            Entry::Vacant(entry) => {
                entry.insert(VecDeque::from([job]));
                true
            }
        };
        if start {
            tokio::spawn(write_groups(
                (self.pool.clone(), Arc::clone(&self.writers)),
                Arc::clone(&self.queues),
                merchant_pk,
                Arc::clone(&self.delay),
                Arc::clone(&self.signal),
            ));
        }
    }
}

fn lock(queues: &Queues) -> std::sync::MutexGuard<'_, HashMap<i64, VecDeque<Job>>> {
    // The lock guards only pushes and drains, which cannot panic half-way.
    queues.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Should the merchant's task end early (a panic), its entry goes with it: the requests queued
/// are answered `Unavailable` (their replies dropped) and the next request starts a new task.
struct Running {
    queues: Queues,
    merchant_pk: i64,
    ended: bool,
}

impl Drop for Running {
    fn drop(&mut self) {
        if !self.ended {
            lock(&self.queues).remove(&self.merchant_pk);
        }
    }
}

/// The merchant's task: writes groups of its queue until the queue is empty.
async fn write_groups(
    (pool, writers): (Pool, Arc<Semaphore>),
    queues: Queues,
    merchant_pk: i64,
    delay: Arc<WriteDelay>,
    signal: Arc<EventSignal>,
) {
    let mut running = Running {
        queues,
        merchant_pk,
        ended: false,
    };
    loop {
        let group: Vec<Job> = {
            let mut queues = lock(&running.queues);
            let Some(queue) = queues.get_mut(&merchant_pk) else {
                running.ended = true;
                return;
            };
            if queue.is_empty() {
                queues.remove(&merchant_pk);
                running.ended = true;
                return;
            }
            let n = queue.len().min(MAX_GROUP);
            queue.drain(..n).collect()
        };
        let mut engine = Merchant {
            pool: &pool,
            writers: &writers,
            seat: None,
            merchant_pk,
            delay: &delay,
            client: None,
            owed: String::new(),
            lock_owed: false,
            plans_owed: false,
            open: false,
        };
        driver::write_all(&mut engine, group, &signal).await;
    }
}

/// The group commit's steps for one merchant (`store::group::driver`). Round trips are few: the
/// transaction's start, the merchant's lock and each request's deadline and savepoint go in one
/// batch before its work, and a savepoint's end is owed to the next batch (or the commit).
struct Merchant<'a> {
    pool: &'a Pool,
    writers: &'a Arc<Semaphore>,
    /// The writers' seat the connection is held under, with it.
    seat: Option<OwnedSemaphorePermit>,
    merchant_pk: i64,
    delay: &'a WriteDelay,
    client: Option<Object>,
    /// Statements owed before the next batch: the transaction's start, a savepoint's end.
    owed: String,
    /// The merchant's lock is still to be taken in this transaction.
    lock_owed: bool,
    /// The plan cache mode is still to be set in this transaction.
    plans_owed: bool,
    /// A transaction was begun on the connection and not yet ended.
    open: bool,
}

impl Merchant<'_> {
    fn client(&self) -> Result<&Object, SharedError> {
        self.client
            .as_ref()
            .ok_or_else(|| SharedError::new(std::io::Error::other("no connection")))
    }

    /// Sends what is owed and then `sql`, in one round trip.
    async fn send(&mut self, sql: &str) -> Result<(), tokio_postgres::Error> {
        let batch = std::mem::take(&mut self.owed) + sql;
        self.open |= batch.starts_with("BEGIN");
        match self.client.as_ref() {
            Some(client) => client.batch_execute(&batch).await,
            None => Ok(()),
        }
    }

    /// The connection leaves the pool for good (closed): it may be inside a transaction, or broken.
    fn discard(&mut self) {
        if let Some(client) = self.client.take() {
            drop(Object::take(client));
        }
        self.seat = None;
    }
}

impl Engine for Merchant<'_> {
    type Job = Job;

    async fn begin(&mut self) -> Result<(), SharedError> {
        if self.client.is_none() {
            if self.seat.is_none() {
                let seat = tokio::time::timeout(WRITER_WAIT, Arc::clone(self.writers).acquire_owned()).await;
                let seat = seat.map_err(SharedError::new)?.map_err(SharedError::new)?;
                self.seat = Some(seat);
            }
            self.client = Some(self.pool.get().await.map_err(SharedError::new)?);
        }
        // Sent with the first request's savepoint, after its deadline is armed.
        self.owed = "BEGIN;".to_owned();
        self.lock_owed = true;
        self.plans_owed = true;
        Ok(())
    }

    async fn savepoint(&mut self, deadline: Instant) -> Result<(), SharedError> {
        let left = deadline.saturating_duration_since(Instant::now()).as_millis().max(1);
        let lock = if std::mem::take(&mut self.lock_owed) {
            // The merchant's writes take turns across every instance (see the module's notes).
            format!("SELECT pg_advisory_xact_lock({});", self.merchant_pk)
        } else {
            String::new()
        };
        // The write path's prepared statements keep their generic plans (see `GENERIC_PLANS`).
        let plans = if std::mem::take(&mut self.plans_owed) {
            GENERIC_PLANS
        } else {
            ""
        };
        let sql = format!(
            "SET LOCAL statement_timeout = {left}; SET LOCAL lock_timeout = {left}; {plans}{lock}SAVEPOINT request"
        );
        self.send(&sql).await.map_err(SharedError::new)
    }

    async fn write(&mut self, job: &mut Job) -> bool {
        let client = match self.client() {
            Ok(client) => client,
            Err(e) => return job.done(Err(e.to_store())),
        };
        let result = match job.take_work() {
            Some(Work::Create(items)) => create_in_tx(client, self.merchant_pk, &items)
                .await
                .map(|w| w.map(Answer::Created)),
            Some(Work::Change(plan)) => change_in_tx(client, self.merchant_pk, plan)
                .await
                .map(|w| w.map(Answer::Changed)),
            Some(Work::Approve(location_id)) => approve_in_tx(client, self.merchant_pk, &location_id)
                .await
                .map(|w| w.map(Answer::Approved)),
            None => Err(StoreError::Unavailable),
        };
        job.done(result)
    }

    async fn append(&mut self, merchant_pk: i64, changes: &[Change]) -> Result<(), StoreError> {
        let client = self.client().map_err(|e| e.to_store())?;
        super::events::append(client, merchant_pk, changes).await
    }

    async fn end_savepoint(&mut self, keep: bool) -> Result<(), SharedError> {
        self.owed.push_str(if keep {
            "RELEASE SAVEPOINT request;"
        } else {
            "ROLLBACK TO SAVEPOINT request; RELEASE SAVEPOINT request;"
        });
        Ok(())
    }

    async fn commit(&mut self) -> Result<(), CommitFailed> {
        let committed = self.send("COMMIT").await;
        self.open = false;
        match committed {
            Ok(()) => Ok(()),
            Err(e) => {
                // No answer from the server (the connection broke): it may have committed.
                let unknown = e.code().is_none();
                self.discard();
                let e = SharedError::new(e);
                Err(if unknown {
                    CommitFailed::Unknown(e)
                } else {
                    CommitFailed::Refused(e)
                })
            }
        }
    }

    async fn rollback(&mut self) {
        self.owed.clear();
        self.lock_owed = false;
        self.plans_owed = false;
        if self.open && self.send("ROLLBACK").await.is_err() {
            self.discard();
        }
        self.open = false;
    }

    async fn stall(&mut self) {
        if let Some(delay) = self.delay.take() {
            tokio::time::sleep(delay).await;
        }
    }
}

impl Drop for Merchant<'_> {
    /// A group that ended early (a panic) may have left its transaction open: its connection is
    /// closed rather than handed to another request.
    fn drop(&mut self) {
        if self.open {
            self.discard();
        }
    }
}

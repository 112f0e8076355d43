//! Group commit per merchant: a merchant's create and change requests queue in order, and a
//! task of that merchant's writes them, those that arrived while its last transaction was
//! committing together: one transaction, one advisory lock on the merchant (across every
//! instance), one commit and one fsync for the group, each request in a savepoint of its own so
//! that a failed request rolls back only itself (as the SQLite writer does for all merchants).
//! Every request is answered after the commit that holds it. Within the transaction a request
//! sees what the requests before it wrote, so retries, conflicts and the quarantine check decide
//! exactly as they would one transaction each, in the order the requests were queued.
//!
//! A group keeps the deadline rule of `store::group`: its transaction's `statement_timeout` and
//! `lock_timeout` end at the group's deadline, a group whose deadline passed is rolled back whole,
//! and a commit whose connection broke (no answer from the server) is `OutcomeUnknown` (503),
//! never a plain failure: the server may have committed it.

use std::collections::hash_map::Entry;
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use deadpool_postgres::{Pool, Transaction};
use tokio::sync::oneshot;

use super::changes::change_in_tx;
use super::locations::create_in_tx;
use crate::domain::location::Persist;
use crate::domain::location::batch::{NewLocation, Outcome};
use crate::domain::location::change::{ChangePlan, Decision};
use crate::store::api::StoreError;
use crate::store::group::{GroupDeadline, MAX_GROUP, SharedError, Waiting, WriteDelay};

/// A request's write, queued for its merchant's next group.
enum Job {
    Create(Vec<NewLocation>, Persist, Waiting<Vec<Outcome>>),
    Change(ChangePlan, Persist, Waiting<Decision>),
}

/// A job done inside the group's transaction, waiting for its commit.
enum Done {
    Created(Waiting<Vec<Outcome>>, Result<Vec<Outcome>, StoreError>),
    Changed(Waiting<Decision>, Result<Decision, StoreError>),
}

impl Job {
    fn abandoned(&self) -> bool {
        match self {
            Job::Create(_, _, waiting) => waiting.abandoned(),
            Job::Change(_, _, waiting) => waiting.abandoned(),
        }
    }

    fn deadline(&self) -> Instant {
        match self {
            Job::Create(_, _, waiting) => waiting.deadline,
            Job::Change(_, _, waiting) => waiting.deadline,
        }
    }

    /// Answers `e` without writing anything.
    fn fail(self, e: StoreError) {
        self.done_with(e).finish(Ok(()));
    }

    /// Writes the job in a savepoint of `tx`: released when it succeeded and is to be kept, else
    /// rolled back (a `validate_only` request decides in it and keeps nothing, CONTRACT §14). An error of the savepoint itself leaves `tx` unusable: returned as is.
    async fn write(
        self,
        tx: &mut Transaction<'_>,
        merchant_pk: i64,
        delay: &WriteDelay,
    ) -> Result<Done, (Done, tokio_postgres::Error)> {
        let savepoint = match tx.transaction().await {
            Ok(savepoint) => savepoint,
            Err(e) => return Err((self.done_with(StoreError::Unavailable), e)),
        };
        let (done, persist) = match self {
            Job::Create(items, persist, waiting) => {
                let result = create_in_tx(&savepoint, merchant_pk, &items).await;
                (Done::Created(waiting, result), persist)
            }
            Job::Change(plan, persist, waiting) => {
                let result = change_in_tx(&savepoint, merchant_pk, plan).await;
                (Done::Changed(waiting, result), persist)
            }
        };
        tokio::time::sleep(delay.take()).await;
        let ended = if done.succeeded() && persist.commits() {
            savepoint.commit().await
        } else {
            savepoint.rollback().await
        };
        match ended {
            Ok(()) => Ok(done),
            Err(e) => Err((done, e)),
        }
    }

    /// The job, not written, with `e` for its result.
    fn done_with(self, e: StoreError) -> Done {
        match self {
            Job::Create(_, _, waiting) => Done::Created(waiting, Err(e)),
            Job::Change(_, _, waiting) => Done::Changed(waiting, Err(e)),
        }
    }
}

impl Done {
    fn succeeded(&self) -> bool {
        match self {
            Done::Created(_, result) => result.is_ok(),
            Done::Changed(_, result) => result.is_ok(),
        }
    }

    /// Answers: its result when the group committed, else the commit's error.
    fn finish(self, committed: Result<(), StoreError>) {
        match self {
            Done::Created(waiting, result) => waiting.finish(result, committed),
            Done::Changed(waiting, result) => waiting.finish(result, committed),
        }
    }
}

/// The queues of the merchants whose writes are in flight: a merchant has an entry exactly while
/// a task of its own is writing its groups.
type Queues = Arc<Mutex<HashMap<i64, VecDeque<Job>>>>;

pub(super) struct MerchantGroups {
    pool: Pool,
    queues: Queues,
    /// Test hook: the next request's write stalls this long inside its transaction.
    pub(super) delay: Arc<WriteDelay>,
}

impl MerchantGroups {
    pub(super) fn new(pool: Pool) -> Self {
        MerchantGroups {
            pool,
            queues: Arc::default(),
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
        let (reply, answer) = oneshot::channel();
        self.queue(merchant_pk, Job::Create(items, persist, Waiting::new(deadline, reply)));
        answer.await.map_err(|_| StoreError::Unavailable)?
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
        let (reply, answer) = oneshot::channel();
        self.queue(merchant_pk, Job::Change(plan, persist, Waiting::new(deadline, reply)));
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
                self.pool.clone(),
                Arc::clone(&self.queues),
                merchant_pk,
                Arc::clone(&self.delay),
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
async fn write_groups(pool: Pool, queues: Queues, merchant_pk: i64, delay: Arc<WriteDelay>) {
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
        let mut group = group.into_iter().peekable();
        while group.peek().is_some() {
            commit_group(&pool, merchant_pk, &mut group, &delay).await;
        }
    }
}

/// Writes jobs of `jobs` in one transaction under the merchant's lock, until they run out or the
/// group's deadline is near, and answers each (see the module's notes).
async fn commit_group(pool: &Pool, merchant_pk: i64, jobs: &mut impl Iterator<Item = Job>, delay: &WriteDelay) {
    let mut client = match pool.get().await {
        Ok(client) => client,
        Err(e) => return fail_all(jobs.collect(), Vec::new(), SharedError::new(e)),
    };
    let mut tx = match client.transaction().await {
        Ok(tx) => tx,
        Err(e) => return fail_all(jobs.collect(), Vec::new(), SharedError::new(e)),
    };
    let mut deadline = GroupDeadline::default();
    let mut done = Vec::new();
    while !deadline.nearly_due() {
        let Some(job) = jobs.next() else { break };
        if job.abandoned() {
            job.fail(StoreError::DeadlinePassed);
            continue;
        }
        if deadline.at().is_none() {
            // The first job sets the group's deadline; later ones (queued after it) only end later.
            deadline.include(job.deadline());
            let left = deadline.left().unwrap_or_default().as_millis().max(1);
            let timeouts = format!("SET LOCAL statement_timeout = {left}; SET LOCAL lock_timeout = {left}");
            if let Err(e) = tx.batch_execute(&timeouts).await {
                return fail_all(std::iter::once(job).chain(jobs).collect(), done, SharedError::new(e));
            }
            // The merchant's writes take turns across every instance (see the module's notes).
            if let Err(e) = super::sql::lock_merchant(&tx, merchant_pk).await {
                return fail_all(std::iter::once(job).chain(jobs).collect(), done, SharedError::new(e));
            }
        }
        deadline.include(job.deadline());
        match job.write(&mut tx, merchant_pk, delay).await {
            Ok(written) => done.push(written),
            Err((written, e)) => {
                // The transaction is lost with the savepoint: nothing of the group is stored.
                done.push(written);
                // The jobs not begun go into the next transaction.
                return fail_all(Vec::new(), done, SharedError::new(e));
            }
        }
        if deadline.missed() {
            break;
        }
    }
    if deadline.missed() {
        // Dropping the transaction rolls it back: nothing of the group is stored.
        drop(tx);
        for written in done {
            written.finish(Err(StoreError::DeadlinePassed));
        }
        return;
    }
    let committed = tx.commit().await.map_err(|e| {
        // No answer from the server (the connection broke): it may have committed.
        let unknown = e.code().is_none();
        (unknown, SharedError::new(e))
    });
    for written in done {
        written.finish(match &committed {
            Ok(()) => Ok(()),
            Err((true, e)) => Err(StoreError::OutcomeUnknown(Box::new(e.clone()))),
            Err((false, e)) => Err(e.to_store()),
        });
    }
}

/// Answers every job, begun or not, with `e`: their transaction did not commit.
fn fail_all(queued: Vec<Job>, done: Vec<Done>, e: SharedError) {
    for job in queued {
        job.fail(e.to_store());
    }
    for written in done {
        written.finish(Err(e.to_store()));
    }
}

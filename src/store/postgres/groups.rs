//! Group commit per merchant: a merchant's create and change requests queue in order, and a
//! task of that merchant's writes them, those that arrived while its last transaction was
//! committing together: one transaction, one advisory lock on the merchant (across every
//! instance), one commit and one fsync for the group, each request in a savepoint of its own so
//! that a failed request rolls back only itself (as the SQLite writer does for all merchants).
//! Every request is answered after the commit that holds it. Within the transaction a request
//! sees what the requests before it wrote, so retries, conflicts and the quarantine check decide
//! exactly as they would one transaction each, in the order the requests were queued.

use std::collections::hash_map::Entry;
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use deadpool_postgres::{Pool, Transaction};
use tokio::sync::oneshot;

use super::changes::change_in_tx;
use super::locations::create_in_tx;
use crate::domain::location::batch::{NewLocation, Outcome};
use crate::domain::location::change::{ChangePlan, Decision};
use crate::store::api::StoreError;
use crate::store::group::{MAX_GROUP, SharedError, Waiting};

/// A request's write, queued for its merchant's next group.
enum Job {
    Create(Vec<NewLocation>, Waiting<Vec<Outcome>>),
    Change(ChangePlan, Waiting<Decision>),
}

/// A job done inside the group's transaction, waiting for its commit.
enum Done {
    Created(Waiting<Vec<Outcome>>, Result<Vec<Outcome>, StoreError>),
    Changed(Waiting<Decision>, Result<Decision, StoreError>),
}

impl Job {
    fn abandoned(&self) -> bool {
        match self {
            Job::Create(_, waiting) => waiting.abandoned(),
            Job::Change(_, waiting) => waiting.abandoned(),
        }
    }

    /// Answers `e` without writing anything.
    fn fail(self, e: StoreError) {
        self.done_with(e).finish(Ok(()));
    }

    /// Writes the job in a savepoint of `tx`: released when it succeeded before its deadline,
    /// else rolled back. An error of the savepoint itself leaves `tx` unusable: returned as is.
    async fn write(self, tx: &mut Transaction<'_>, merchant_pk: i64) -> Result<Done, (Done, tokio_postgres::Error)> {
        let savepoint = match tx.transaction().await {
            Ok(savepoint) => savepoint,
            Err(e) => return Err((self.done_with(StoreError::Unavailable), e)),
        };
        let done = match self {
            Job::Create(items, waiting) => {
                let result = create_in_tx(&savepoint, merchant_pk, &items).await;
                Done::Created(waiting, result)
            }
            Job::Change(plan, waiting) => {
                let result = change_in_tx(&savepoint, merchant_pk, plan).await;
                Done::Changed(waiting, result)
            }
        }
        .unless_late();
        let ended = if done.succeeded() {
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
            Job::Create(_, waiting) => Done::Created(waiting, Err(e)),
            Job::Change(_, waiting) => Done::Changed(waiting, Err(e)),
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

    /// `DeadlinePassed` in place of a result finished after the deadline.
    fn unless_late(self) -> Done {
        let late = |deadline: Instant| Instant::now() > deadline;
        match self {
            Done::Created(w, Ok(_)) if late(w.deadline) => Done::Created(w, Err(StoreError::DeadlinePassed)),
            Done::Changed(w, Ok(_)) if late(w.deadline) => Done::Changed(w, Err(StoreError::DeadlinePassed)),
            done => done,
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
}

impl MerchantGroups {
    pub(super) fn new(pool: Pool) -> Self {
        MerchantGroups {
            pool,
            queues: Arc::default(),
        }
    }

    /// Creates `items` in the merchant's next group; their outcomes once committed.
    pub(super) async fn create(
        &self,
        merchant_pk: i64,
        items: Vec<NewLocation>,
        deadline: Instant,
    ) -> Result<Vec<Outcome>, StoreError> {
        let (reply, answer) = oneshot::channel();
        self.queue(merchant_pk, Job::Create(items, Waiting::new(deadline, reply)));
        answer.await.map_err(|_| StoreError::Unavailable)?
    }

    /// Decides and writes `plan` in the merchant's next group; the decision once committed.
    pub(super) async fn change(
        &self,
        merchant_pk: i64,
        plan: ChangePlan,
        deadline: Instant,
    ) -> Result<Decision, StoreError> {
        let (reply, answer) = oneshot::channel();
        self.queue(merchant_pk, Job::Change(plan, Waiting::new(deadline, reply)));
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
            tokio::spawn(write_groups(self.pool.clone(), Arc::clone(&self.queues), merchant_pk));
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
async fn write_groups(pool: Pool, queues: Queues, merchant_pk: i64) {
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
        commit_group(&pool, merchant_pk, group).await;
    }
}

/// Writes one group in one transaction under the merchant's lock and answers every job.
async fn commit_group(pool: &Pool, merchant_pk: i64, group: Vec<Job>) {
    let mut client = match pool.get().await {
        Ok(client) => client,
        Err(e) => return fail_all(group, Vec::new(), SharedError::new(e)),
    };
    let mut tx = match client.transaction().await {
        Ok(tx) => tx,
        Err(e) => return fail_all(group, Vec::new(), SharedError::new(e)),
    };
    // The merchant's writes take turns across every instance (see the module's notes).
    if let Err(e) = super::sql::lock_merchant(&tx, merchant_pk).await {
        return fail_all(group, Vec::new(), SharedError::new(e));
    }
    let mut done = Vec::with_capacity(group.len());
    let mut jobs = group.into_iter();
    while let Some(job) = jobs.next() {
        if job.abandoned() {
            job.fail(StoreError::DeadlinePassed);
            continue;
        }
        match job.write(&mut tx, merchant_pk).await {
            Ok(written) => done.push(written),
            Err((written, e)) => {
                // The transaction is lost with the savepoint: nothing of the group is stored.
                done.push(written);
                return fail_all(jobs.collect(), done, SharedError::new(e));
            }
        }
    }
    let committed = tx.commit().await.map_err(SharedError::new);
    for written in done {
        written.finish(committed.as_ref().map(|_| ()).map_err(SharedError::to_store));
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

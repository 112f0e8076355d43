//! What both engines' group commits share: requests of one writer (SQLite's writer thread, or one
//! PostgreSQL merchant) that queue up while a commit is in flight are written in one transaction,
//! each in a savepoint of its own, and each answered only after that transaction committed.

use std::sync::Arc;
use std::time::Instant;

use tokio::sync::oneshot;

use super::api::StoreError;

/// Most request writes committed together.
pub const MAX_GROUP: usize = 64;

/// Where a request waits for its write's result.
pub type Reply<T> = oneshot::Sender<Result<T, StoreError>>;

/// A request's write waiting for its group: its deadline and where to answer.
pub struct Waiting<T> {
    pub deadline: Instant,
    reply: Reply<T>,
}

impl<T> Waiting<T> {
    /// A write answered through `reply`, not to begin after `deadline`.
    pub fn new(deadline: Instant, reply: Reply<T>) -> Self {
        Waiting { deadline, reply }
    }

    /// Its caller stopped waiting, or its deadline passed: it must not begin.
    pub fn abandoned(&self) -> bool {
        self.reply.is_closed() || Instant::now() > self.deadline
    }

    /// Answers: `result` when the group committed, else the commit's error.
    pub fn finish(self, result: Result<T, StoreError>, committed: Result<(), StoreError>) {
        let _ = self.reply.send(committed.and(result));
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

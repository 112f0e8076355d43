//! WAL checkpoints off the writer's path.
//!
//! SQLite folds the WAL back into the database file when a commit leaves it over its
//! auto-checkpoint size, inside that commit, on the one writer thread: under a create load that
//! was about a sixth of the writer's time, during which no request could commit. A thread of its
//! own, with its own connection, runs a `PASSIVE` checkpoint every `EVERY` instead (it never
//! waits for the writer nor blocks it), and the writer's own auto-checkpoint stays only as a
//! backstop at a larger size, should this thread fall behind. Durability does not depend on it:
//! a commit is durable once its WAL frames are synced.

use std::path::Path;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::Duration;

use rusqlite::Connection;

use super::schema::configure;
use crate::store::api::StoreError;

/// How often the WAL is checkpointed.
const EVERY: Duration = Duration::from_millis(100);

pub(super) struct Checkpointer {
    stop: mpsc::Sender<()>,
    thread: JoinHandle<()>,
}

impl Checkpointer {
    pub(super) fn spawn(path: &Path) -> Result<Checkpointer, StoreError> {
        let conn = Connection::open(path)?;
        configure(&conn)?;
        let (stop, stopped) = mpsc::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("sqlite-checkpoint".into())
            .spawn(move || {
                while let Err(RecvTimeoutError::Timeout) = stopped.recv_timeout(EVERY) {
                    if let Err(e) = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(())) {
                        tracing::warn!(error = %e, "WAL checkpoint failed; the writer's own backstop remains");
                    }
                }
            })
            .map_err(StoreError::backend)?;
        Ok(Checkpointer { stop, thread })
    }

    /// Stops the thread (the writer checkpoints the rest when it closes).
    pub(super) fn stop(self) {
        let _ = self.stop.send(());
        let _ = self.thread.join();
    }
}

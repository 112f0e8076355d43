//! Read-only connections on blocking threads; WAL lets them run beside the writer.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use rusqlite::{Connection, OpenFlags};
use tokio::sync::Semaphore;

use super::schema::configure;
use crate::store::api::StoreError;

/// The largest part of the file a read connection maps: SQLite's own ceiling
/// (`SQLITE_MAX_MMAP_SIZE`, just under 2 GiB). Address space only; the pages are the file's.
const MMAP_BYTES: i64 = 0x7fff_0000;
/// Read-only connections on blocking threads, at most `size` (`store::Pools`: sized to the
/// machine's cores): a read waits for a free one (asynchronously) rather than opening a
/// connection it would then close (a million-location file's map torn down with it).
pub(super) struct ReadPool {
    path: PathBuf,
    idle: Mutex<Vec<Connection>>,
    reading: Arc<Semaphore>,
    size: usize,
}

impl ReadPool {
    pub(super) fn new(path: PathBuf, size: usize) -> ReadPool {
        let size = size.max(1);
        ReadPool {
            path,
            idle: Mutex::new(Vec::new()),
            reading: Arc::new(Semaphore::new(size)),
            size,
        }
    }

    /// The database file's path.
    pub(super) fn path(&self) -> &std::path::Path {
        &self.path
    }

    /// Drops the idle connections.
    pub(super) fn close(&self) {
        if let Ok(mut idle) = self.idle.lock() {
            idle.clear();
        }
    }

    pub(super) async fn read<T: Send + 'static>(
        self: &Arc<Self>,
        f: impl FnOnce(&Connection) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let pool = Arc::clone(self);
        let permit = Arc::clone(&self.reading)
            .acquire_owned()
            .await
            .map_err(StoreError::backend)?;
        tokio::task::spawn_blocking(move || {
            let _permit = permit;
            let conn = pool.take()?;
            let result = f(&conn);
            pool.give_back(conn);
            result
        })
        .await
        .map_err(StoreError::backend)?
    }

    /// `read` inside one read transaction: every statement of `f` sees one state of the database.
    /// Its `BEGIN` and `COMMIT` are cached statements, not parsed again for every read.
    pub(super) async fn snapshot<T: Send + 'static>(
        self: &Arc<Self>,
        f: impl FnOnce(&Connection) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        self.read(move |conn| {
            conn.prepare_cached("BEGIN")?.execute([])?;
            let result = f(conn);
            // A read transaction changes nothing: ending it is all that is left to do, whether
            // `f` succeeded or not.
            let ended = match conn.is_autocommit() {
                true => Ok(0),
                false => conn.prepare_cached("COMMIT").and_then(|mut commit| commit.execute([])),
            };
            let value = result?;
            ended?;
            Ok(value)
        })
        .await
    }

    fn take(&self) -> Result<Connection, StoreError> {
        if let Some(conn) = self.idle.lock().ok().and_then(|mut idle| idle.pop()) {
            return Ok(conn);
        }
        let conn = Connection::open_with_flags(
            &self.path,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        configure(&conn)?;
        // Pages are read through a memory map, not a read() each: a page of a large merchant's
        // locations touches tens of them.
        conn.pragma_update(None, "mmap_size", MMAP_BYTES)?;
        Ok(conn)
    }

    /// Keeps `conn` for the next read, unless it is left inside a transaction (a failed end).
    fn give_back(&self, conn: Connection) {
        if conn.is_autocommit()
            && let Ok(mut idle) = self.idle.lock()
            && idle.len() < self.size
        {
            idle.push(conn);
        }
    }
}

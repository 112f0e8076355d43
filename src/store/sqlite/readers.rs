//! Read-only connections on blocking threads; WAL lets them run beside the writer.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use rusqlite::{Connection, OpenFlags};

use super::schema::BUSY_TIMEOUT;
use crate::store::api::StoreError;

/// The largest part of the file a read connection maps.
const MMAP_BYTES: i64 = 1 << 30;
/// Most idle read connections kept.
const IDLE_READERS: usize = 8;

/// Read-only connections on blocking threads.
pub(super) struct ReadPool {
    path: PathBuf,
    idle: Mutex<Vec<Connection>>,
}

impl ReadPool {
    pub(super) fn new(path: PathBuf) -> ReadPool {
        ReadPool {
            path,
            idle: Mutex::new(Vec::new()),
        }
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
        tokio::task::spawn_blocking(move || {
            let conn = pool.take()?;
            let result = f(&conn);
            pool.give_back(conn);
            result
        })
        .await
        .map_err(StoreError::backend)?
    }

    fn take(&self) -> Result<Connection, StoreError> {
        if let Some(conn) = self.idle.lock().ok().and_then(|mut idle| idle.pop()) {
            return Ok(conn);
        }
        let conn = Connection::open_with_flags(
            &self.path,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        conn.busy_timeout(BUSY_TIMEOUT)?;
        // Pages are read through a memory map, not a read() each: a page of a large merchant's
        // locations touches tens of them. (Address space only; the pages are the file's.)
        conn.pragma_update(None, "mmap_size", MMAP_BYTES)?;
        Ok(conn)
    }

    fn give_back(&self, conn: Connection) {
        if let Ok(mut idle) = self.idle.lock()
            && idle.len() < IDLE_READERS
        {
            idle.push(conn);
        }
    }
}

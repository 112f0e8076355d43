//! The database's version, and what was read at one: a value read at a version still current is
//! what a read now would give, since nothing has been committed since, by any process.
//!
//! The version changes whenever any connection (the writer thread, a CLI process revoking a key)
//! commits. It is read, in order of preference:
//! - from the WAL-index header, the first bytes of the `-shm` file, with one `pread` and no lock:
//!   SQLite rewrites it at every commit of every process (its `iChange` counter goes up by one,
//!   with the frame count and checksums), and every process sharing the database maps that very
//!   file (on Linux a `pread` sees what they wrote there). The header is kept twice; while a
//!   commit is writing it the copies differ, and then this source gives no answer. The server's
//!   own connections keep the `-shm` file in place for as long as it runs.
//! - else from `PRAGMA data_version` on a connection of its own (a read transaction: shared-memory
//!   locks, a few µs).
//!
//! A version must be read *before* the read whose result it labels: a commit after it then
//! makes the result stale at the next use; it never hides a change.

use std::borrow::Borrow;
use std::collections::HashMap;
use std::fs::File;
use std::hash::Hash;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use rusqlite::{Connection, OpenFlags};

/// Where the database's version is read.
pub(super) struct DbVersion {
    shm: Option<File>,
    watch: Mutex<Option<Connection>>,
    path: PathBuf,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Version {
    /// One copy of the 48-byte WAL-index header.
    WalIndex([u8; WAL_INDEX_HEADER]),
    DataVersion(i64),
}

const WAL_INDEX_HEADER: usize = 48;

impl DbVersion {
    pub(super) fn new(path: &Path) -> DbVersion {
        let mut shm = path.as_os_str().to_owned();
        shm.push("-shm");
        DbVersion {
            shm: File::open(shm).ok(),
            watch: Mutex::new(None),
            path: path.to_path_buf(),
        }
    }

    /// The version now; `None` when neither source answers.
    pub(super) fn now(&self) -> Option<Version> {
        self.wal_index().or_else(|| self.data_version())
    }

    fn wal_index(&self) -> Option<Version> {
        let mut both = [0u8; 2 * WAL_INDEX_HEADER];
        self.shm.as_ref()?.read_exact_at(&mut both, 0).ok()?;
        let (first, second) = both.split_at(WAL_INDEX_HEADER);
        // `isInit` (byte 12) is set once the header is valid.
        if first != second || first[12] != 1 {
            return None;
        }
        first.try_into().ok().map(Version::WalIndex)
    }

    fn data_version(&self) -> Option<Version> {
        let mut watch = self.watch.lock().ok()?;
        if watch.is_none() {
            let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
            *watch = Connection::open_with_flags(&self.path, flags).ok();
        }
        let version = watch
            .as_ref()?
            .prepare_cached("PRAGMA data_version")
            .and_then(|mut stmt| stmt.query_row([], |r| r.get(0)));
        if version.is_err() {
            // Reopen next time: the file may be unreachable for now.
            *watch = None;
        }
        version.ok().map(Version::DataVersion)
    }
}

/// Values by name, each with the version it was read at; at most `max` of them (a full map
/// starts again empty).
pub(super) struct AtVersion<K, T> {
    entries: Mutex<HashMap<K, (Version, T)>>,
    max: usize,
}

impl<K: Eq + Hash, T: Clone> AtVersion<K, T> {
    pub(super) fn new(max: usize) -> Self {
        AtVersion {
            entries: Mutex::new(HashMap::new()),
            max,
        }
    }

    /// The value of `name` read at `version`, if that is the one kept.
    pub(super) fn get<Q: Eq + Hash + ?Sized>(&self, name: &Q, version: Version) -> Option<T>
    where
        K: Borrow<Q>,
    {
        let entries = self.entries.lock().ok()?;
        entries
            .get(name)
            .filter(|(v, _)| *v == version)
            .map(|(_, value)| value.clone())
    }

    /// Keeps `value` of `name`, read at `version`.
    pub(super) fn put(&self, name: K, version: Version, value: T) {
        if let Ok(mut entries) = self.entries.lock() {
            if entries.len() >= self.max {
                entries.clear();
            }
            entries.insert(name, (version, value));
        }
    }
}

//! Verified API keys, cached while the database has not changed (see [`KeyCache`]).

use std::collections::HashMap;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use rusqlite::{Connection, OpenFlags};

use crate::store::api::{KeyRow, KeyScope, MerchantRef, MerchantRow, StoreError, StoredKey};
use rusqlite::OptionalExtension;

/// Verified API keys, each with the version of the database it was read at.
///
/// The version changes whenever any connection (the writer thread, a CLI process revoking a key)
/// commits. A key is served from here only while the version it was read at is still current, so
/// a revocation is seen by the next request; under write load entries simply go stale and keys
/// are looked up again. Only found keys are kept, at most `MAX_CACHED_KEYS` of them, so unknown
/// keys cannot grow it.
///
/// The version is read, in order of preference:
/// - from the WAL-index header, the first bytes of the `-shm` file, with one `pread` and no lock:
///   SQLite rewrites it at every commit of every process (its `iChange` counter goes up by one,
///   with the frame count and checksums), and every process sharing the database maps that very
///   file (on Linux a `pread` sees what they wrote there). The header is kept twice; while a
///   commit is writing it the copies differ, and then this source gives no answer. The server's
///   own connections keep the `-shm` file in place for as long as it runs.
/// - else from `PRAGMA data_version` on a connection of its own (a read transaction: shared-memory
///   locks, a few µs).
pub(super) struct KeyCache {
    shm: Option<File>,
    watch: Mutex<Option<Connection>>,
    path: PathBuf,
    entries: Mutex<HashMap<String, (Version, StoredKey)>>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Version {
    /// One copy of the 48-byte WAL-index header.
    WalIndex([u8; WAL_INDEX_HEADER]),
    DataVersion(i64),
}

const WAL_INDEX_HEADER: usize = 48;
const MAX_CACHED_KEYS: usize = 10_000;

impl KeyCache {
    pub(super) fn new(path: &Path) -> KeyCache {
        let mut shm = path.as_os_str().to_owned();
        shm.push("-shm");
        KeyCache {
            shm: File::open(shm).ok(),
            watch: Mutex::new(None),
            path: path.to_path_buf(),
            entries: Mutex::new(HashMap::new()),
        }
    }

    pub(super) fn version(&self) -> Option<Version> {
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

    pub(super) fn get(&self, key_id: &str, version: Version) -> Option<StoredKey> {
        let entries = self.entries.lock().ok()?;
        entries
            .get(key_id)
            .filter(|(v, _)| *v == version)
            .map(|(_, key)| key.clone())
    }

    pub(super) fn put(&self, key_id: &str, version: Version, key: StoredKey) {
        if let Ok(mut entries) = self.entries.lock() {
            if entries.len() >= MAX_CACHED_KEYS {
                entries.clear();
            }
            entries.insert(key_id.to_owned(), (version, key));
        }
    }
}

/// Every merchant, oldest first.
/// The unrevoked key with this id.
pub(super) fn lookup(c: &Connection, key_id: &str) -> Result<Option<StoredKey>, StoreError> {
    let row = c
        .prepare_cached(
            "SELECT m.pk, m.id, k.secret_hash, k.scope FROM api_keys k \
             JOIN merchants m ON m.pk = k.merchant_pk WHERE k.key_id = ?1 AND k.revoked_at IS NULL",
        )?
        .query_row([key_id], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get::<_, Vec<u8>>(2)?, r.get::<_, String>(3)?))
        })
        .optional()?;
    Ok(row.and_then(|(pk, id, hash, scope)| {
        Some(StoredKey {
            merchant: MerchantRef { pk, id },
            scope: KeyScope::from_stored(&scope),
            secret_hash: hash.try_into().ok()?,
        })
    }))
}

pub(super) fn merchants(conn: &rusqlite::Connection) -> Result<Vec<MerchantRow>, StoreError> {
    let mut stmt = conn.prepare_cached("SELECT id, name, created_at FROM merchants ORDER BY created_at, pk")?;
    let rows = stmt.query_map([], |r| {
        Ok(MerchantRow {
            merchant_id: r.get(0)?,
            name: r.get(1)?,
            created_at_ms: r.get(2)?,
        })
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// The merchant's keys, oldest first; `None` when there is no such merchant.
pub(super) fn keys_of(conn: &rusqlite::Connection, merchant_id: &str) -> Result<Option<Vec<KeyRow>>, StoreError> {
    let pk: Option<i64> = conn
        .prepare_cached("SELECT pk FROM merchants WHERE id = ?1")?
        .query_row([merchant_id], |r| r.get(0))
        .optional()?;
    let Some(pk) = pk else { return Ok(None) };
    let mut stmt = conn.prepare_cached(
        "SELECT key_id, scope, created_at, revoked_at FROM api_keys WHERE merchant_pk = ?1 ORDER BY created_at, key_id",
    )?;
    let rows = stmt.query_map([pk], |r| {
        Ok(KeyRow {
            key_id: r.get(0)?,
            scope: KeyScope::from_stored(&r.get::<_, String>(1)?),
            created_at_ms: r.get(2)?,
            revoked_at_ms: r.get(3)?,
        })
    })?;
    Ok(Some(rows.collect::<Result<_, _>>()?))
}

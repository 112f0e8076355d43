//! Verified API keys, cached while the database has not changed (see [`KeyCache`]).

use std::collections::HashMap;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use rusqlite::{Connection, OpenFlags, OptionalExtension, Transaction, params};

use crate::store::api::{KeyRow, KeyScope, MerchantKey, NewKey, StoreError, StoredKey};
use crate::store::key_sql;

/// Verified API keys, each with the version of the database it was read at.
///
/// The version changes whenever any connection (the writer thread, a CLI process revoking a key)
/// commits. A key is served from here only while the version it was read at is still current, so
/// a revocation is seen by the next request; under write load entries simply go stale and keys
/// are looked up again. Only found keys are kept, at most `MAX_CACHED_KEYS` of them, so unknown
/// keys cannot grow it. Whether a key names a web origin is kept the same way (a browser's origin
/// is asked about at each of its requests), at most `MAX_CACHED_KEYS` origins.
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
    /// Whether a key names a web origin, for origins browsers sent (found or not, as many).
    origins: Mutex<HashMap<String, (Version, bool)>>,
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
            origins: Mutex::new(HashMap::new()),
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
        remember(&self.entries, key_id, version, key);
    }

    pub(super) fn origin(&self, origin: &str, version: Version) -> Option<bool> {
        let origins = self.origins.lock().ok()?;
        origins
            .get(origin)
            .filter(|(v, _)| *v == version)
            .map(|(_, named)| *named)
    }

    pub(super) fn put_origin(&self, origin: &str, version: Version, named: bool) {
        remember(&self.origins, origin, version, named);
    }
}

/// Keeps `value` under `name` read at `version`; a full map starts again empty.
fn remember<T>(map: &Mutex<HashMap<String, (Version, T)>>, name: &str, version: Version, value: T) {
    if let Ok(mut entries) = map.lock() {
        if entries.len() >= MAX_CACHED_KEYS {
            entries.clear();
        }
        entries.insert(name.to_owned(), (version, value));
    }
}

/// The unrevoked key with this id.
pub(super) fn lookup(c: &Connection, key_id: &str) -> Result<Option<StoredKey>, StoreError> {
    let mut stmt = c.prepare_cached(&key_sql::lookup('?'))?;
    let mut rows = stmt.query([key_id])?;
    match rows.next()? {
        Some(row) => key_sql::read_stored(row),
        None => Ok(None),
    }
}

/// The merchant's keys, oldest first; `None` when there is no such merchant.
pub(super) fn keys_of(conn: &Connection, merchant_id: &str) -> Result<Option<Vec<KeyRow>>, StoreError> {
    let pk: Option<i64> = conn
        .prepare_cached("SELECT pk FROM merchants WHERE id = ?1")?
        .query_row([merchant_id], |r| r.get(0))
        .optional()?;
    let Some(pk) = pk else { return Ok(None) };
    read_keys(conn, &key_sql::all_of('?'), params![pk]).map(Some)
}

/// The keys a statement reads.
fn read_keys(conn: &Connection, sql: &str, params: impl rusqlite::Params) -> Result<Vec<KeyRow>, StoreError> {
    let mut stmt = conn.prepare_cached(sql)?;
    let mut rows = stmt.query(params)?;
    let mut keys = Vec::new();
    while let Some(row) = rows.next()? {
        keys.push(key_sql::read_key(row)?);
    }
    Ok(keys)
}

/// A page of the merchant's keys after `after` (created at, id), oldest first.
pub(super) fn page(
    conn: &Connection,
    merchant_pk: i64,
    after: Option<(i64, String)>,
    limit: usize,
) -> Result<Vec<KeyRow>, StoreError> {
    let (at, id) = after.unwrap_or((i64::MIN, String::new()));
    read_keys(conn, &key_sql::page('?'), params![merchant_pk, at, id, limit as i64])
}

/// Stores a key, unless its merchant has `storefront_below` storefront keys not revoked.
pub(super) fn insert(tx: &Transaction, key: &NewKey, now_ms: i64) -> Result<Option<KeyRow>, StoreError> {
    let pk: Option<i64> = tx
        .query_row("SELECT pk FROM merchants WHERE id = ?1", [&key.merchant_id], |r| {
            r.get(0)
        })
        .optional()?;
    let pk = pk.ok_or_else(|| StoreError::NotFound(format!("merchant {}", key.merchant_id)))?;
    if let Some(below) = key.storefront_below {
        let live: i64 = tx.query_row(&key_sql::live_storefront_keys('?'), [pk], |r| r.get(0))?;
        if live.unsigned_abs() >= below as u64 {
            return Ok(None);
        }
    }
    tx.execute(
        &key_sql::insert('?'),
        params![
            key.key_id,
            pk,
            &key.secret_hash[..],
            now_ms,
            key.scope.as_str(),
            key.label,
            key_sql::stored_origins(key.allowed_origins.as_deref()),
        ],
    )?;
    for origin in key.allowed_origins.iter().flatten() {
        tx.execute(&key_sql::insert_origin('?'), params![origin, key.key_id])?;
    }
    read_keys(tx, &key_sql::get('?'), [&key.key_id]).map(|keys| keys.into_iter().next())
}

/// Revokes a key of any merchant (the operator's); `false` when no unrevoked key has that id.
pub(super) fn revoke(tx: &Transaction, key_id: &str, now_ms: i64) -> Result<bool, StoreError> {
    let changed = tx.execute(&key_sql::revoke('?'), params![key_id, now_ms])?;
    tx.execute(&key_sql::drop_origins('?'), [key_id])?;
    Ok(changed == 1)
}

/// Revokes the merchant's storefront key with this id.
pub(super) fn revoke_of(
    tx: &Transaction,
    merchant_pk: i64,
    key_id: &str,
    now_ms: i64,
) -> Result<MerchantKey, StoreError> {
    let read = |tx: &Transaction| read_keys(tx, &key_sql::get_of('?'), params![merchant_pk, key_id]);
    let Some(key) = read(tx)?.into_iter().next() else {
        return Ok(MerchantKey::NotFound);
    };
    if key.scope == KeyScope::Full {
        return Ok(MerchantKey::Full);
    }
    if key.revoked_at_ms.is_some() {
        return Ok(MerchantKey::Revoked(key));
    }
    revoke(tx, key_id, now_ms)?;
    let key = read(tx)?
        .into_iter()
        .next()
        .ok_or_else(|| StoreError::NotFound(format!("key {key_id}")))?;
    Ok(MerchantKey::Revoked(key))
}

/// Whether a key not revoked names the origin.
pub(super) fn origin_named(conn: &Connection, origin: &str) -> Result<bool, StoreError> {
    Ok(conn
        .prepare_cached(&key_sql::origin_named('?'))?
        .query_row([origin], |r| r.get(0))?)
}

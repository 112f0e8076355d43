//! Verified API keys, cached while the database has not changed (see [`KeyCache`]).

use std::sync::Arc;

use rusqlite::{Connection, OptionalExtension, Transaction, params};

/// The version a key was read at, as [`KeyCache`] takes and gives it.
pub(super) use super::version::Version;
use super::version::{AtVersion, DbVersion};

use crate::store::api::{KeyRow, KeyScope, MerchantKey, NewKey, StoreError, StoredKey};
use crate::store::key_sql;

/// Verified API keys, each with the version of the database it was read at
/// ([`DbVersion`]).
///
/// A key is served from here only while the version it was read at is still current, so a
/// revocation (by the writer thread, or a CLI process) is seen by the next request; under write
/// load entries simply go stale and keys are looked up again. Only found keys are kept, at most
/// `MAX_CACHED_KEYS` of them, so unknown keys cannot grow it. Whether a key names a web origin is
/// kept the same way (a browser's origin is asked about at each of its requests), at most
/// `MAX_CACHED_KEYS` origins.
pub(super) struct KeyCache {
    version: Arc<DbVersion>,
    entries: AtVersion<String, StoredKey>,
    /// Whether a key names a web origin, for origins browsers sent (found or not, as many).
    origins: AtVersion<String, bool>,
}

const MAX_CACHED_KEYS: usize = 10_000;

impl KeyCache {
    pub(super) fn new(version: Arc<DbVersion>) -> KeyCache {
        KeyCache {
            version,
            entries: AtVersion::new(MAX_CACHED_KEYS),
            origins: AtVersion::new(MAX_CACHED_KEYS),
        }
    }

    pub(super) fn version(&self) -> Option<Version> {
        self.version.now()
    }

    pub(super) fn get(&self, key_id: &str, version: Version) -> Option<StoredKey> {
        self.entries.get(key_id, version)
    }

    pub(super) fn put(&self, key_id: &str, version: Version, key: StoredKey) {
        self.entries.put(key_id.to_owned(), version, key);
    }

    pub(super) fn origin(&self, origin: &str, version: Version) -> Option<bool> {
        self.origins.get(origin, version)
    }

    pub(super) fn put_origin(&self, origin: &str, version: Version, named: bool) {
        self.origins.put(origin.to_owned(), version, named);
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

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::super::SqliteStore;
    use super::super::schema::BUSY_TIMEOUT;
    use super::*;
    use crate::store::api::Store;

    /// What the CLI does from another process: its own connection, its own commit.
    fn revoke_elsewhere(db: &Path, key_id: &str) {
        let conn = Connection::open(db).unwrap();
        conn.busy_timeout(BUSY_TIMEOUT).unwrap();
        let changed = conn
            .execute(
                "UPDATE api_keys SET revoked_at = 1 WHERE key_id = ?1 AND revoked_at IS NULL",
                [key_id],
            )
            .unwrap();
        assert_eq!(changed, 1);
    }

    #[tokio::test]
    async fn a_key_revoked_by_another_connection_is_refused_by_the_next_lookup() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("keys.db");
        let store = SqliteStore::open(&db).await.unwrap();
        // The lock-free source is the one in use.
        assert!(matches!(store.keys.version(), Some(Version::WalIndex(_))));
        let merchant = crate::auth::create_merchant(&store, "m").await.unwrap();
        for round in 0..20 {
            let issued = crate::auth::issue_key(&store, &merchant.merchant_id, crate::store::api::KeyScope::Full)
                .await
                .unwrap();
            // Twice: the second answer comes from the cache.
            for _ in 0..2 {
                assert!(store.find_key(&issued.key_id).await.unwrap().is_some(), "round {round}");
            }
            let version = store.keys.version();
            assert!(store.keys.get(&issued.key_id, version.unwrap()).is_some(), "cached");
            revoke_elsewhere(&db, &issued.key_id);
            assert_ne!(store.keys.version(), version, "a commit elsewhere changes the version");
            assert!(store.find_key(&issued.key_id).await.unwrap().is_none(), "round {round}");
        }
        store.close().await;
    }
}

//! The SQL of API keys and how their rows are read, written once for both engines (`mark`: `?` for
//! SQLite, `$` for PostgreSQL, before each parameter's number). A key's allowed origins are stored
//! as a JSON array; `key_origins` repeats those of the keys not revoked, one row each, so that a
//! browser's origin is found by one index lookup.

use super::api::{KeyRow, KeyScope, MerchantRef, StoredKey};
use super::error::StoreError;
use super::event_rows::Columns;
use super::sql_text::marked;

/// A key's columns, in [`read_key`]'s order.
pub const KEY_COLUMNS: &str = "key_id, scope, label, allowed_origins, created_at, revoked_at";

/// [`KEY_COLUMNS`] read from the first column on.
pub fn read_key<R: Columns>(r: &R) -> Result<KeyRow, StoreError>
where
    StoreError: From<R::Error>,
{
    Ok(KeyRow {
        key_id: r.text(0)?,
        scope: KeyScope::from_stored(&r.text(1)?),
        label: r.opt_text(2)?,
        allowed_origins: origins(r.opt_text(3)?)?,
        created_at_ms: r.int(4)?,
        revoked_at_ms: r.opt_int(5)?,
    })
}

/// The stored JSON array of a key's origins.
fn origins(stored: Option<String>) -> Result<Option<Vec<String>>, StoreError> {
    stored
        .map(|text| serde_json::from_str(&text).map_err(|_| StoreError::corrupt("allowed_origins", &text)))
        .transpose()
}

/// A key's origins as they are stored.
pub fn stored_origins(origins: Option<&[String]>) -> Option<String> {
    origins.map(|o| serde_json::Value::from(o.to_vec()).to_string())
}

/// The columns [`read_stored`] reads (the key as `k`, its merchant as `m`).
pub fn lookup(mark: char) -> String {
    marked(
        "SELECT m.pk, m.id, k.secret_hash, k.scope, k.allowed_origins FROM api_keys k \
         JOIN merchants m ON m.pk = k.merchant_pk WHERE k.key_id = $1 AND k.revoked_at IS NULL",
        mark,
    )
}

/// A row of [`lookup`]; `None` for a hash of another length (never stored by this service).
pub fn read_stored<R: Columns>(r: &R) -> Result<Option<StoredKey>, StoreError>
where
    StoreError: From<R::Error>,
{
    let Ok(secret_hash) = r.bytes(2)?.try_into() else {
        return Ok(None);
    };
    Ok(Some(StoredKey {
        merchant: MerchantRef {
            pk: r.int(0)?,
            id: r.text(1)?,
        },
        scope: KeyScope::from_stored(&r.text(3)?),
        secret_hash,
        allowed_origins: origins(r.opt_text(4)?)?,
    }))
}

/// The merchant (1)'s storefront keys not revoked.
pub fn live_storefront_keys(mark: char) -> String {
    marked(
        "SELECT count(*) FROM api_keys WHERE merchant_pk = $1 AND scope = 'storefront' AND revoked_at IS NULL",
        mark,
    )
}

/// Stores a key (parameters: id, merchant's key, secret hash, created_at, scope, label, origins).
pub fn insert(mark: char) -> String {
    marked(
        "INSERT INTO api_keys (key_id, merchant_pk, secret_hash, created_at, scope, label, allowed_origins) \
         VALUES ($1, $2, $3, $4, $5, $6, $7)",
        mark,
    )
}

/// Records that the key (2) names the origin (1).
pub fn insert_origin(mark: char) -> String {
    marked(
        "INSERT INTO key_origins (origin, key_id) VALUES ($1, $2) ON CONFLICT DO NOTHING",
        mark,
    )
}

/// The key (1), of any merchant.
pub fn get(mark: char) -> String {
    marked(&format!("SELECT {KEY_COLUMNS} FROM api_keys WHERE key_id = $1"), mark)
}

/// The merchant (1)'s key (2).
pub fn get_of(mark: char) -> String {
    marked(
        &format!("SELECT {KEY_COLUMNS} FROM api_keys WHERE merchant_pk = $1 AND key_id = $2"),
        mark,
    )
}

/// The merchant (1)'s keys after the one created at (2) with the id (3), oldest first, at most (4).
pub fn page(mark: char) -> String {
    marked(
        &format!(
            "SELECT {KEY_COLUMNS} FROM api_keys WHERE merchant_pk = $1 AND (created_at, key_id) > ($2, $3) \
             ORDER BY created_at, key_id LIMIT $4"
        ),
        mark,
    )
}

/// The merchant (1)'s keys, oldest first.
pub fn all_of(mark: char) -> String {
    marked(
        &format!("SELECT {KEY_COLUMNS} FROM api_keys WHERE merchant_pk = $1 ORDER BY created_at, key_id"),
        mark,
    )
}

/// Revokes the key (1) at (2), if it is not revoked.
pub fn revoke(mark: char) -> String {
    marked(
        "UPDATE api_keys SET revoked_at = $2 WHERE key_id = $1 AND revoked_at IS NULL",
        mark,
    )
}

/// Forgets the origins of the key (1), revoked.
pub fn drop_origins(mark: char) -> String {
    marked("DELETE FROM key_origins WHERE key_id = $1", mark)
}

/// Whether a key not revoked names the origin (1).
pub fn origin_named(mark: char) -> String {
    marked("SELECT EXISTS (SELECT 1 FROM key_origins WHERE origin = $1)", mark)
}

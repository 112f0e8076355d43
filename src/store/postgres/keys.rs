//! The merchants' keys: the operator's and the merchant's own, looked up at every request (the
//! SQL itself is `key_sql`'s, shared with SQLite).

use deadpool_postgres::{GenericClient, Pool};

use crate::domain::ids;
use crate::store::api::{KeyRow, KeyScope, MerchantKey, NewKey, StoreError, StoredKey, now_ms};
use crate::store::key_sql;

/// The unrevoked key with this id.
pub(super) async fn lookup(pool: &Pool, key_id: &str) -> Result<Option<StoredKey>, StoreError> {
    let client = pool.get().await?;
    let stmt = client.prepare_cached(&key_sql::lookup('$')).await?;
    match client.query_opt(&stmt, &[&key_id]).await? {
        Some(row) => key_sql::read_stored(&row),
        None => Ok(None),
    }
}

/// The keys a statement reads.
async fn read_keys(
    client: &impl GenericClient,
    sql: &str,
    params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
) -> Result<Vec<KeyRow>, StoreError> {
    let stmt = client.prepare_cached(sql).await?;
    client
        .query(&stmt, params)
        .await?
        .iter()
        .map(key_sql::read_key)
        .collect()
}

/// The merchant's keys, oldest first; `None` when there is no such merchant.
pub(super) async fn keys_of(pool: &Pool, merchant_id: &str) -> Result<Option<Vec<KeyRow>>, StoreError> {
    let client = pool.get().await?;
    let Some(merchant) = client
        .query_opt("SELECT pk FROM merchants WHERE id = $1", &[&merchant_id])
        .await?
    else {
        return Ok(None);
    };
    let pk: i64 = merchant.try_get(0)?;
    read_keys(&client, &key_sql::all_of('$'), &[&pk]).await.map(Some)
}

/// A page of the merchant's keys after `after` (created at, id), oldest first.
pub(super) async fn page(
    pool: &Pool,
    merchant_pk: i64,
    after: Option<(i64, String)>,
    limit: usize,
) -> Result<Vec<KeyRow>, StoreError> {
    let client = pool.get().await?;
    let (at, id) = after.unwrap_or((i64::MIN, String::new()));
    read_keys(&client, &key_sql::page('$'), &[&merchant_pk, &at, &id, &(limit as i64)]).await
}

/// Stores a key, unless its merchant has `storefront_below` storefront keys not revoked. The
/// merchant's row is locked first, so that two requests of one merchant count one after the other.
pub(super) async fn insert(pool: &Pool, key: NewKey) -> Result<Option<KeyRow>, StoreError> {
    let mut client = pool.get().await?;
    let tx = client.transaction().await?;
    let pk: i64 = tx
        .query_opt(
            "SELECT pk FROM merchants WHERE id = $1 FOR NO KEY UPDATE",
            &[&key.merchant_id],
        )
        .await?
        .ok_or_else(|| StoreError::NotFound(format!("merchant {}", key.merchant_id)))?
        .try_get(0)?;
    if let Some(below) = key.storefront_below {
        let live: i64 = tx
            .query_one(&key_sql::live_storefront_keys('$'), &[&pk])
            .await?
            .try_get(0)?;
        if live.unsigned_abs() >= below as u64 {
            return Ok(None);
        }
    }
    tx.execute(
        &key_sql::insert('$'),
        &[
            &key.key_id,
            &pk,
            &&key.secret_hash[..],
            &now_ms(),
            &key.scope.as_str(),
            &key.label,
            &key_sql::stored_origins(key.allowed_origins.as_deref()),
        ],
    )
    .await?;
    for origin in key.allowed_origins.iter().flatten() {
        tx.execute(&key_sql::insert_origin('$'), &[origin, &key.key_id]).await?;
    }
    let stored = read_keys(&tx, &key_sql::get('$'), &[&key.key_id]).await?;
    tx.commit().await?;
    Ok(stored.into_iter().next())
}

/// Revokes a key of any merchant (the operator's); `false` when no unrevoked key has that id.
pub(super) async fn revoke(pool: &Pool, key_id: &str) -> Result<bool, StoreError> {
    let mut client = pool.get().await?;
    let tx = client.transaction().await?;
    let changed = revoke_in(&tx, key_id).await?;
    tx.commit().await?;
    Ok(changed)
}

async fn revoke_in(tx: &impl GenericClient, key_id: &str) -> Result<bool, StoreError> {
    let changed = tx.execute(&key_sql::revoke('$'), &[&key_id, &now_ms()]).await?;
    tx.execute(&key_sql::drop_origins('$'), &[&key_id]).await?;
    Ok(changed == 1)
}

/// Revokes the merchant's storefront key with this id.
pub(super) async fn revoke_of(pool: &Pool, merchant_pk: i64, key_id: &str) -> Result<MerchantKey, StoreError> {
    if !ids::may_name(key_id) {
        return Ok(MerchantKey::NotFound);
    }
    let mut client = pool.get().await?;
    let tx = client.transaction().await?;
    let get = key_sql::get_of('$');
    let Some(key) = read_keys(&tx, &get, &[&merchant_pk, &key_id]).await?.into_iter().next() else {
        return Ok(MerchantKey::NotFound);
    };
    if key.scope == KeyScope::Full {
        return Ok(MerchantKey::Full);
    }
    if key.revoked_at_ms.is_some() {
        return Ok(MerchantKey::Revoked(key));
    }
    revoke_in(&tx, key_id).await?;
    let key = read_keys(&tx, &get, &[&merchant_pk, &key_id])
        .await?
        .into_iter()
        .next()
        .ok_or_else(|| StoreError::NotFound(format!("key {key_id}")))?;
    tx.commit().await?;
    Ok(MerchantKey::Revoked(key))
}

/// Whether a key not revoked names the origin.
pub(super) async fn origin_named(pool: &Pool, origin: &str) -> Result<bool, StoreError> {
    let client = pool.get().await?;
    let stmt = client.prepare_cached(&key_sql::origin_named('$')).await?;
    Ok(client.query_one(&stmt, &[&origin]).await?.try_get(0)?)
}

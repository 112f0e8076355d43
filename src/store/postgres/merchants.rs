//! The operator's listings (CONTRACT §22): merchants, and a merchant's keys (never a secret).

use deadpool_postgres::Pool;

use crate::store::api::{KeyRow, KeyScope, MerchantRow, StoreError};

pub(super) async fn list_merchants(pool: &Pool) -> Result<Vec<MerchantRow>, StoreError> {
    let client = pool.get().await?;
    let rows = client
        .query(
            "SELECT id, name, created_at FROM merchants ORDER BY created_at, pk",
            &[],
        )
        .await?;
    Ok(rows
        .iter()
        .map(|r| MerchantRow {
            merchant_id: r.get(0),
            name: r.get(1),
            created_at_ms: r.get(2),
        })
        .collect())
}

pub(super) async fn list_keys(pool: &Pool, merchant_id: &str) -> Result<Option<Vec<KeyRow>>, StoreError> {
    let client = pool.get().await?;
    let Some(merchant) = client
        .query_opt("SELECT pk FROM merchants WHERE id = $1", &[&merchant_id])
        .await?
    else {
        return Ok(None);
    };
    let pk: i64 = merchant.get(0);
    let rows = client
        .query(
            "SELECT key_id, scope, created_at, revoked_at FROM api_keys WHERE merchant_pk = $1 \
                 ORDER BY created_at, key_id",
            &[&pk],
        )
        .await?;
    Ok(Some(
        rows.iter()
            .map(|r| KeyRow {
                key_id: r.get(0),
                scope: KeyScope::from_stored(r.get(1)),
                created_at_ms: r.get(2),
                revoked_at_ms: r.get(3),
            })
            .collect(),
    ))
}

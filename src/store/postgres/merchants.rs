//! Merchants: adding one, counting them, the operator's list (`store::merchant_sql`).

use deadpool_postgres::Pool;

use crate::store::api::{MerchantRef, MerchantRow, StoreError, now_ms};
use crate::store::merchant_sql;

pub(super) async fn create(pool: &Pool, name: &str) -> Result<MerchantRef, StoreError> {
    let client = pool.get().await?;
    let id = uuid::Uuid::now_v7().to_string();
    let row = client
        .query_one(&merchant_sql::insert('$'), &[&id, &name, &now_ms()])
        .await?;
    Ok(MerchantRef {
        pk: row.try_get(0)?,
        id,
    })
}

pub(super) async fn count(pool: &Pool) -> Result<u64, StoreError> {
    let client = pool.get().await?;
    let n: i64 = client.query_one(merchant_sql::COUNT, &[]).await?.try_get(0)?;
    Ok(n.unsigned_abs())
}

pub(super) async fn list(pool: &Pool) -> Result<Vec<MerchantRow>, StoreError> {
    let client = pool.get().await?;
    client
        .query(merchant_sql::LIST, &[])
        .await?
        .iter()
        .map(merchant_sql::read_merchant)
        .collect()
}

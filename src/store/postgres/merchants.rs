//! The operator's list of merchants.

use deadpool_postgres::Pool;

use crate::store::api::{MerchantRow, StoreError};

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

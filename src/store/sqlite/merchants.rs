//! Merchants: adding one, counting them, the operator's list (`store::merchant_sql`).

use rusqlite::{Connection, params};

use crate::store::api::{MerchantRef, MerchantRow, StoreError, now_ms};
use crate::store::merchant_sql;

pub(super) fn create(tx: &Connection, name: &str) -> Result<MerchantRef, StoreError> {
    let id = uuid::Uuid::now_v7().to_string();
    let pk = tx
        .prepare_cached(&merchant_sql::insert('?'))?
        .query_row(params![id, name, now_ms()], |r| r.get(0))?;
    Ok(MerchantRef { pk, id })
}

pub(super) fn count(c: &Connection) -> Result<u64, StoreError> {
    let n: i64 = c.prepare_cached(merchant_sql::COUNT)?.query_row([], |r| r.get(0))?;
    Ok(n.unsigned_abs())
}

pub(super) fn list(c: &Connection) -> Result<Vec<MerchantRow>, StoreError> {
    let mut stmt = c.prepare_cached(merchant_sql::LIST)?;
    let mut rows = stmt.query([])?;
    let mut merchants = Vec::new();
    while let Some(row) = rows.next()? {
        merchants.push(merchant_sql::read_merchant(row)?);
    }
    Ok(merchants)
}

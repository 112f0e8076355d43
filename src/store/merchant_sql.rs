//! The SQL of merchants, written once for both engines (`mark`: `?` for SQLite, `$` for
//! PostgreSQL): adding one, counting them, and the operator's list, oldest first.

use super::api::{MerchantRow, StoreError};
use super::event_rows::Columns;
use super::sql_text::marked;

/// A new merchant (parameters: id, name, created at); answers its key.
pub fn insert(mark: char) -> String {
    marked(
        "INSERT INTO merchants (id, name, created_at) VALUES ($1, $2, $3) RETURNING pk",
        mark,
    )
}

/// How many merchants there are.
pub const COUNT: &str = "SELECT count(*) FROM merchants";

/// Every merchant, oldest first, read by [`read_merchant`].
pub const LIST: &str = "SELECT id, name, created_at FROM merchants ORDER BY created_at, pk";

/// A row of [`LIST`].
pub fn read_merchant<R: Columns>(r: &R) -> Result<MerchantRow, StoreError>
where
    StoreError: From<R::Error>,
{
    Ok(MerchantRow {
        merchant_id: r.text(0)?,
        name: r.text(1)?,
        created_at_ms: r.int(2)?,
    })
}

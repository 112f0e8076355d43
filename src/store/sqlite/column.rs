//! Reading back what the store wrote, column by column, where a plain `get` is not enough.

use crate::store::api::StoreError;

/// Column `i` of `r`: a word the service stores, read back through `parse`; a word it never writes
/// is an error that names it (as `StoreError::corrupt`).
pub(super) fn word<T>(
    r: &rusqlite::Row<'_>,
    i: usize,
    what: &str,
    parse: impl Fn(&str) -> Option<T>,
) -> rusqlite::Result<T> {
    let stored = r.get_ref(i)?.as_str()?;
    parse(stored).ok_or_else(|| {
        let corrupt = StoreError::corrupt(what, stored);
        rusqlite::Error::FromSqlConversionFailure(i, rusqlite::types::Type::Text, Box::new(corrupt))
    })
}

//! The text filter of the location list: `search_text` (each location's folded name and id) in a
//! GIN index of three-character pieces beside the merchant's key. A text of three characters or
//! more is looked up in the index; a shorter one has no piece to look up, and the planner reads the
//! merchant's rows in `seq` order until the page is full.

use deadpool_postgres::GenericClient;

use crate::domain::location::TypeSet;
use crate::domain::location::listing::{Candidate, LocationFilter};
use crate::store::api::{StoreError, stored_status as status};
use crate::store::migrate;

/// Rows looked at a step.
const STEP: i64 = 256;

/// `text` as a `LIKE` pattern matching any text that contains it.
fn containing(text: &str) -> String {
    let mut pattern = String::with_capacity(text.len() + 2);
    pattern.push('%');
    for c in text.chars() {
        if matches!(c, '%' | '_' | '\\') {
            pattern.push('\\');
        }
        pattern.push(c);
    }
    pattern.push('%');
    pattern
}

/// The `seq`s of a page of the merchant's locations matching `filter`, whose `text` is set (its
/// other conditions, ids included, are checked on each location the index finds), and whether
/// more follow.
pub(super) async fn matching(
    tx: &impl GenericClient,
    merchant_pk: i64,
    filter: &LocationFilter,
    after: Option<i64>,
    limit: usize,
) -> Result<(Vec<i64>, bool), StoreError> {
    let pattern = containing(filter.text.as_deref().unwrap_or_default());
    let stmt = tx
        .prepare_cached(
            "SELECT seq, location_id, merchant_location_id, status, types FROM locations \
             WHERE merchant_pk = $1 AND search_text LIKE $2 AND seq > $3 ORDER BY seq LIMIT $4",
        )
        .await?;
    let mut seqs = Vec::with_capacity(limit + 1);
    let mut from = after.unwrap_or(0);
    'walk: loop {
        let rows = tx.query(&stmt, &[&merchant_pk, &pattern, &from, &STEP]).await?;
        for row in &rows {
            let candidate = Candidate {
                seq: row.try_get(0)?,
                location_id: row.try_get(1)?,
                merchant_location_id: row.try_get(2)?,
                status: status(row.try_get(3)?)?,
                types: TypeSet::from_bits(i64::from(row.try_get::<_, i32>(4)?)),
            };
            if filter.accepts(&candidate) {
                seqs.push(candidate.seq);
                if seqs.len() > limit {
                    break 'walk;
                }
            }
        }
        match rows.last() {
            Some(last) if rows.len() as i64 == STEP => from = last.try_get(0)?,
            _ => break,
        }
    }
    let has_next = seqs.len() > limit;
    seqs.truncate(limit);
    Ok((seqs, has_next))
}

/// The migration's step: every location's text.
pub(super) async fn fill(tx: &impl GenericClient) -> Result<(), StoreError> {
    let mut after = 0i64;
    loop {
        let rows = tx
            .query(
                "SELECT seq, merchant_location_id, body FROM locations WHERE seq > $1 ORDER BY seq LIMIT $2",
                &[&after, &migrate::UPGRADE_CHUNK],
            )
            .await?;
        let Some(last) = rows.last() else {
            return Ok(());
        };
        after = last.try_get(0)?;
        for row in &rows {
            let mlid: Option<String> = row.try_get(1)?;
            if let Some(text) = migrate::indexed_text(row.try_get(2)?, mlid.as_deref()) {
                tx.execute(
                    "UPDATE locations SET search_text = $2 WHERE seq = $1",
                    &[&row.try_get::<_, i64>(0)?, &text],
                )
                .await?;
            }
        }
    }
}

//! A buyer's search (CONTRACT §12) on PostgreSQL: the domain's walk, each ring one statement whose
//! key ranges are range scans of the index `locations_search` (the filter's flags and limits tested
//! on the index's included columns), then the page's records by `seq`, all in one snapshot.

use std::collections::HashMap;

use deadpool_postgres::Pool;

use super::locations::{RECORD, record_of, snapshot};
use super::sql::query;
use crate::domain::location::Status;
use crate::domain::location::search::{SearchPage, SearchQuery, Walk};
use crate::store::api::StoreError;

/// A ring's key ranges of the merchant's `ACTIVE` locations that pass the index test (the opening
/// hours read from the row as well when asked for), one index range scan per key range.
///
/// `OFFSET 0` keeps the subquery a subquery. Without it PostgreSQL pulls it up into a plain join,
/// and the generic plan of the prepared statement (which knows neither the merchant nor how many
/// ranges) scans every `ACTIVE` location of the merchant and tests each against every range,
/// rather than one index range scan a range.
fn ring_sql(hours: bool) -> String {
    let hours = if hours { ", hours" } else { "" };
    format!(
        "SELECT l.* FROM UNNEST($2::int8[], $3::int8[]) AS r(lo, hi) CROSS JOIN LATERAL \
         (SELECT seq, latitude, longitude{hours} FROM locations \
          WHERE merchant_pk = $1 AND status = $4 AND cell BETWEEN r.lo AND r.hi \
          AND (flags & $5) <> 0 AND (flags & $6) = $6 \
          AND fit_a >= $7 AND fit_b >= $8 AND fit_c >= $9 AND fit_w >= $10 OFFSET 0) l"
    )
}

/// One page of a search.
pub(super) async fn search(pool: &Pool, q: &SearchQuery) -> Result<SearchPage, StoreError> {
    let mut client = pool.get().await?;
    let tx = snapshot(&mut client).await?;
    let mut walk = Walk::new(q);
    let hours = walk.needs_hours();
    let sql = ring_sql(hours);
    let test = q.filter().index_test();
    while let Some(ranges) = walk.next_ring() {
        let (firsts, lasts): (Vec<i64>, Vec<i64>) = ranges.into_iter().unzip();
        let rows = query(
            &tx,
            &sql,
            &[
                &q.merchant_pk(),
                &firsts,
                &lasts,
                &Status::Active.as_str(),
                &test.any,
                &test.all,
                &test.fit[0],
                &test.fit[1],
                &test.fit[2],
                &test.fit[3],
            ],
        )
        .await?;
        for row in &rows {
            let opening: Option<&[u8]> = if hours { Some(row.try_get(3)?) } else { None };
            walk.consider(row.try_get(0)?, row.try_get(1)?, row.try_get(2)?, opening);
        }
    }
    let (hits, has_next) = walk.finish();
    let seqs: Vec<i64> = hits.iter().map(|h| h.seq).collect();
    let mut records = HashMap::with_capacity(seqs.len());
    if !seqs.is_empty() {
        let sql = format!("SELECT {RECORD} FROM locations WHERE seq = ANY($1)");
        for row in query(&tx, &sql, &[&seqs]).await? {
            let record = record_of(&row)?;
            records.insert(record.seq, record);
        }
    }
    tx.commit().await?;
    let mut page = SearchPage::new(hits.len());
    for hit in hits {
        if let Some(record) = records.get(&hit.seq) {
            page.push(hit, record.as_ref());
        }
    }
    page.has_next = has_next;
    Ok(page)
}

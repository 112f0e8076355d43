//! A buyer's search on PostgreSQL: the domain's walk, each ring one statement whose
//! key ranges are range scans of the index `locations_search` (the filter's flags and limits tested
//! on the index's included columns), then the page's records by `seq`, all in one snapshot. The
//! snapshot's `BEGIN` travels with the first ring's statement and its `COMMIT` with the records':
//! a search of one ring is two round trips, not four. And what the search index in memory reads.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock};

use async_trait::async_trait;
use deadpool_postgres::{GenericClient, Object, Pool};

use super::events::bounds;
use super::locations::{RECORD, record_of};
use super::shared_reads::SharedLookups;
use super::snapshot::{BEGIN, Pipelined, begun_with, commit, committed_after, snapshot};
use super::sql::{GENERIC_PLANS, query};
use crate::domain::location::Status;
use crate::domain::location::record::StoredRecord;
use crate::domain::location::search::{Hit, SearchPage, SearchQuery, Walk};
use crate::store::api::{ReadFrom, ReadOn, StoreError};
use crate::store::search_api::{self, Changes, Counted, Entries, Fits, Records, SearchSource};

const M: char = '$';

/// A ring's key ranges of the merchant's `ACTIVE` locations that pass the index test (the opening
/// hours read from the row as well when asked for), one index range scan per key range.
///
/// `OFFSET 0` keeps the subquery a subquery. Without it PostgreSQL pulls it up into a plain join,
/// and the generic plan of the prepared statement (which knows neither the merchant nor how many
/// ranges) scans every `ACTIVE` location of the merchant and tests each against every range,
/// rather than one index range scan a range.
fn ring_sql(hours: bool, hides_types: bool) -> String {
    let hours = if hours { ", hours" } else { "" };
    // A search that hides no type tests a constant, once.
    let visible = if hides_types {
        "(flags & $11) <> 0"
    } else {
        "$11::int8 <> 0"
    };
    format!(
        "SELECT l.* FROM UNNEST($2::int8[], $3::int8[]) AS r(lo, hi) CROSS JOIN LATERAL \
         (SELECT seq, latitude, longitude{hours} FROM locations \
          WHERE merchant_pk = $1 AND status = $4 AND cell BETWEEN r.lo AND r.hi \
          AND (flags & $5) <> 0 AND (flags & $6) = $6 AND {visible} \
          AND fit_a >= $7 AND fit_b >= $8 AND fit_c >= $9 AND fit_w >= $10 OFFSET 0) l"
    )
}

/// One page of a search.
pub(super) async fn search(pool: &Pool, q: &SearchQuery) -> Result<SearchPage, StoreError> {
    let snapshot = Pipelined::get(pool).await?;
    let page = page(snapshot.client()?, q).await?;
    snapshot.ended();
    Ok(page)
}

/// The walk and the records, in one snapshot begun with the first statement.
async fn page(client: &Object, q: &SearchQuery) -> Result<SearchPage, StoreError> {
    let mut walk = Walk::new(q);
    let hours = walk.needs_hours();
    let test = q.filter().index_test();
    let sql = ring_sql(hours, test.hides_types());
    // Begun with `GENERIC_PLANS`: a ring's statement is written for its generic plan (`OFFSET 0`),
    // and PostgreSQL planned it again for each search's values (0.08 ms a search,
    // `pg_stat_statements.track_planning`). Planning every search cost more than a third of its
    // time at a million locations.
    let begin = format!("{BEGIN}{GENERIC_PLANS}");
    let mut begun = false;
    while let Some(ring) = walk.next_ring() {
        let (firsts, lasts): (Vec<i64>, Vec<i64>) = ring.ranges().into_iter().unzip();
        let status = Status::Active.as_str();
        let params: [&(dyn tokio_postgres::types::ToSql + Sync); 11] = [
            &q.merchant_pk(),
            &firsts,
            &lasts,
            &status,
            &test.any,
            &test.all,
            &test.fit[0],
            &test.fit[1],
            &test.fit[2],
            &test.fit[3],
            &test.visible,
        ];
        let ring = query(client, &sql, &params);
        let rows = if begun {
            ring.await?
        } else {
            begun = true;
            begun_with(client, &begin, ring).await?
        };
        for row in &rows {
            let opening: Option<&[u8]> = if hours { Some(row.try_get(3)?) } else { None };
            walk.consider(row.try_get(0)?, row.try_get(1)?, row.try_get(2)?, opening);
        }
    }
    let (hits, has_next) = walk.finish();
    let seqs: Vec<i64> = hits.iter().map(|h| h.seq).collect();
    let sql = format!("SELECT {RECORD} FROM locations WHERE seq = ANY($1)");
    let rows = match (seqs.is_empty(), begun) {
        (true, false) => Vec::new(),
        (true, true) => {
            commit(client).await?;
            Vec::new()
        }
        (false, _) => committed_after(client, &sql, &[&seqs]).await?,
    };
    page_of(hits, has_next, &rows)
}

/// The page of `hits` from the rows of their records (in any order).
fn page_of(hits: Vec<Hit>, has_next: bool, rows: &[tokio_postgres::Row]) -> Result<SearchPage, StoreError> {
    let mut records = HashMap::with_capacity(rows.len());
    for row in rows {
        let record = record_of(row)?;
        records.insert(record.seq, record);
    }
    let mut page = SearchPage::new(hits.len());
    for hit in hits {
        if let Some(record) = records.get(&hit.seq) {
            page.push(hit, record.as_ref());
        }
    }
    page.has_next = has_next;
    Ok(page)
}

/// What the search index in memory reads: on the primary, a page's records on a replica too.
pub(super) struct PgSearch {
    pub(super) pool: Pool,
    pub(super) replicas: Option<Arc<super::replicas::Replicas>>,
    /// Where each merchant's log stands, read once for the searches that ask at the same time.
    pub(super) heads: SharedLookups<i64, i64>,
}

/// The records `seqs` and where the merchant's log stands, read by one statement on `pool`: a
/// statement is its own snapshot, so no transaction is begun and ended around it, and the read
/// is one round trip. Each row carries the log's sequence; with none of `seqs` found, the one row
/// has no record. With none asked, [`records_on`] reads the log's row alone.
static RECORDS: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT {RECORD}, head.last AS log_head FROM \
         (SELECT COALESCE((SELECT last_sequence FROM event_logs WHERE merchant_pk = $1), 0) AS last) head \
         LEFT JOIN locations ON seq = ANY($2)"
    )
});

async fn records_on(pool: &Pool, merchant_pk: i64, seqs: &[i64]) -> Result<(i64, Vec<StoredRecord>), StoreError> {
    let client = pool.get().await?;
    if seqs.is_empty() {
        // Its own statement, one row of one table: the records' join, asked for no record, would
        // still cost the database a plan of two tables and a row of every record column.
        return Ok((bounds(&client, merchant_pk).await?.last, Vec::new()));
    }
    let rows = query(&client, &RECORDS, &[&merchant_pk, &seqs]).await?;
    let mut head = 0;
    let mut records = Vec::with_capacity(rows.len());
    for row in &rows {
        head = row.try_get("log_head")?;
        if row.try_get::<_, Option<i64>>(0)?.is_some() {
            records.push(record_of(row)?);
        }
    }
    Ok((head, records))
}

#[async_trait]
impl SearchSource for PgSearch {
    async fn entries(&self, merchant_pk: i64, fits: Fits) -> Result<Counted, StoreError> {
        let mut client = self.pool.get().await?;
        let tx = snapshot(&mut client).await?;
        let counted = query(&tx, &search_api::active_count(M), &[&merchant_pk]).await?;
        let count: i64 = counted.first().map_or(Ok(0), |r| r.try_get(0))?;
        let count = match search_api::within(count, fits) {
            Ok(count) => count,
            Err(beyond) => return Ok(Counted::Beyond(beyond)),
        };
        let through = bounds(&tx, merchant_pk).await?.last;
        // Each row is made an entry as it arrives, rather than every row being held first; the
        // vector is sized to the count read in this snapshot.
        let statement = tx.prepare_cached(&search_api::entries(M)).await?;
        let rows = tx.query_raw(&statement, [&merchant_pk]).await?;
        futures_util::pin_mut!(rows);
        let mut entries = Vec::with_capacity(count);
        while let Some(row) = futures_util::TryStreamExt::try_next(&mut rows).await? {
            entries.push(search_api::read_entry(&row, 0)?);
        }
        tx.commit().await?;
        Ok(Counted::Read(Entries { through, entries }))
    }

    async fn changes(&self, merchant_pk: i64, after: i64, limit: usize) -> Result<Changes, StoreError> {
        let mut client = self.pool.get().await?;
        let tx = snapshot(&mut client).await?;
        let take = limit as i64;
        let sql = search_api::changes(M);
        let params: [&(dyn tokio_postgres::types::ToSql + Sync); 3] = [&merchant_pk, &after, &take];
        let (head, rows) = tokio::try_join!(bounds(&tx, merchant_pk), query(&tx, &sql, &params))?;
        tx.commit().await?;
        let rows = rows
            .iter()
            .map(search_api::read_changed)
            .collect::<Result<Vec<_>, _>>()?;
        Ok(search_api::changes_of(head, after, rows, limit))
    }

    async fn records(&self, merchant_pk: i64, seqs: Vec<i64>, from: ReadFrom) -> Result<Records, StoreError> {
        let on_replica = match (from, &self.replicas) {
            (ReadFrom::Replica, Some(replicas)) => replicas.read(|pool| records_on(pool, merchant_pk, &seqs)).await,
            _ => None,
        };
        let (head, rows, on) = match on_replica {
            Some((head, rows)) => (head, rows, ReadOn::Replica),
            // Every search whose records are all kept asks only where the log stands: those asking
            // at once share a read begun after they came, so each still reads its own writes.
            None if seqs.is_empty() => {
                let read = || async { Ok(records_on(&self.pool, merchant_pk, &[]).await?.0) };
                (self.heads.get(&merchant_pk, read).await?, Vec::new(), ReadOn::Primary)
            }
            None => {
                let (head, rows) = records_on(&self.pool, merchant_pk, &seqs).await?;
                (head, rows, ReadOn::Primary)
            }
        };
        let json = rows
            .into_iter()
            .map(|record| {
                let mut out = Vec::with_capacity(1024);
                record.as_ref().write_json(&mut out);
                (record.seq, out)
            })
            .collect();
        Ok(Records {
            head,
            json,
            on: Some(on),
        })
    }
}

//! A buyer's search on SQLite: the domain's walk, each ring's key ranges read from
//! the index `locations_search` (one range scan each, the filter's flags and limits tested inside
//! the index), then the page's records by `seq`; and what the search index in memory reads.

use std::sync::Arc;

use async_trait::async_trait;
use rusqlite::{Connection, params};

use super::events::bounds;
use super::locations::{RECORD, record_ref};
use super::readers::ReadPool;
use super::version::{AtVersion, DbVersion};
use crate::domain::location::Status;
use crate::domain::location::record::RecordRef;
use crate::domain::location::search::{SearchPage, SearchQuery, Walk};
use crate::store::api::{ReadFrom, ReadOn, StoreError};
use crate::store::search_api::{self, Changes, Counted, Entries, Fits, Records, SearchSource};

const M: char = '?';

/// One key range of the merchant's `ACTIVE` locations that pass the index test: every column from
/// the index (covering), or the opening hours from the row as well.
fn range_sql(hours: bool, hides_types: bool) -> String {
    // A search that hides no type tests a constant: SQLite evaluates it once, not per entry.
    let visible = if hides_types { "(flags & ?11) <> 0" } else { "?11 <> 0" };
    format!(
        "SELECT seq, latitude, longitude{} FROM locations INDEXED BY locations_search \
         WHERE merchant_pk = ?1 AND status = ?2 AND cell BETWEEN ?3 AND ?4 \
         AND (flags & ?5) <> 0 AND (flags & ?6) = ?6 AND {visible} \
         AND fit_a >= ?7 AND fit_b >= ?8 AND fit_c >= ?9 AND fit_w >= ?10",
        if hours { ", hours" } else { "" }
    )
}

/// One page of a search, read in the caller's transaction.
pub(super) fn search(tx: &Connection, query: &SearchQuery) -> Result<SearchPage, StoreError> {
    let mut walk = Walk::new(query);
    let hours = walk.needs_hours();
    let test = query.filter().index_test();
    let mut range = tx.prepare_cached(&range_sql(hours, test.hides_types()))?;
    while let Some(ring) = walk.next_ring() {
        for (first, last) in ring.ranges() {
            let mut rows = range.query(params![
                query.merchant_pk(),
                Status::Active.as_str(),
                first,
                last,
                test.any,
                test.all,
                test.fit[0],
                test.fit[1],
                test.fit[2],
                test.fit[3],
                test.visible,
            ])?;
            while let Some(row) = rows.next()? {
                let opening = match hours {
                    true => Some(row.get_ref(3)?.as_blob()?),
                    false => None,
                };
                walk.consider(row.get(0)?, row.get(1)?, row.get(2)?, opening);
            }
        }
    }
    let (hits, has_next) = walk.finish();
    let mut page = SearchPage::new(hits.len());
    each_record(tx, hits, |hit| hit.seq, |hit, record| page.push(hit, record))?;
    page.has_next = has_next;
    Ok(page)
}

/// Each of `items`' records (by the `seq` each names, those that exist), in the caller's
/// transaction.
fn each_record<T>(
    tx: &Connection,
    items: Vec<T>,
    seq: impl Fn(&T) -> i64,
    mut take: impl FnMut(T, RecordRef<'_>),
) -> Result<(), StoreError> {
    let mut by_seq = tx.prepare_cached(&format!("SELECT {RECORD} FROM locations WHERE seq = ?1"))?;
    for item in items {
        let mut rows = by_seq.query([seq(&item)])?;
        if let Some(row) = rows.next()? {
            take(item, record_ref(row)?);
        }
    }
    Ok(())
}

/// What the search index in memory reads, on the read connections.
pub(super) struct SqliteSearch {
    pub(super) readers: Arc<ReadPool>,
    pub(super) version: Arc<DbVersion>,
    /// Where each merchant's log stood, at a version of the database: while that version is
    /// current, a search from memory whose records are all kept reads nothing.
    pub(super) heads: AtVersion<i64, i64>,
}

/// Most merchants whose log's place is kept.
pub(super) const HEADS_KEPT: usize = 10_000;

#[async_trait]
impl SearchSource for SqliteSearch {
    async fn entries(&self, merchant_pk: i64, fits: Fits) -> Result<Counted, StoreError> {
        self.readers
            .snapshot(move |tx| {
                let count: i64 = tx
                    .prepare_cached(&search_api::active_count(M))?
                    .query_row([merchant_pk], |r| r.get(0))?;
                let count = match search_api::within(count, fits) {
                    Ok(count) => count,
                    Err(beyond) => return Ok(Counted::Beyond(beyond)),
                };
                let through = bounds(tx, merchant_pk)?.last;
                let mut statement = tx.prepare_cached(&search_api::entries(M))?;
                // The vector is sized to the count read in this snapshot.
                let mut entries = Vec::with_capacity(count);
                for entry in statement.query_map([merchant_pk], |r| Ok(search_api::read_entry(r, 0)))? {
                    entries.push(entry??);
                }
                Ok(Counted::Read(Entries { through, entries }))
            })
            .await
    }

    async fn changes(&self, merchant_pk: i64, after: i64, limit: usize) -> Result<Changes, StoreError> {
        self.readers
            .snapshot(move |tx| {
                let head = bounds(tx, merchant_pk)?;
                let mut statement = tx.prepare_cached(&search_api::changes(M))?;
                let rows = statement
                    .query_map(params![merchant_pk, after, limit as i64], |r| {
                        Ok(search_api::read_changed(r))
                    })?
                    .map(|row| row?)
                    .collect::<Result<Vec<_>, StoreError>>()?;
                Ok(search_api::changes_of(head, after, rows, limit))
            })
            .await
    }

    async fn records(&self, merchant_pk: i64, seqs: Vec<i64>, _: ReadFrom) -> Result<Records, StoreError> {
        // Read before the log is: a commit after it makes what is read stale at the next search.
        let version = self.version.now();
        if seqs.is_empty() {
            let kept = version.and_then(|v| self.heads.get(&merchant_pk, v));
            let (head, on) = match kept {
                Some(head) => (head, None),
                None => {
                    // One statement is its own snapshot: no transaction to begin and end.
                    let head = self.readers.read(move |conn| bounds(conn, merchant_pk)).await?.last;
                    if let Some(version) = version {
                        self.heads.put(merchant_pk, version, head);
                    }
                    (head, Some(ReadOn::Primary))
                }
            };
            return Ok(Records {
                head,
                json: Vec::new(),
                on,
            });
        }
        let read = self
            .readers
            .snapshot(move |tx| {
                let head = bounds(tx, merchant_pk)?.last;
                let mut json = Vec::with_capacity(seqs.len());
                each_record(
                    tx,
                    seqs,
                    |seq| *seq,
                    |seq, record| {
                        let mut out = Vec::with_capacity(1024);
                        record.write_json(&mut out);
                        json.push((seq, out));
                    },
                )?;
                Ok(Records {
                    head,
                    json,
                    on: Some(ReadOn::Primary),
                })
            })
            .await?;
        if let Some(version) = version {
            self.heads.put(merchant_pk, version, read.head);
        }
        Ok(read)
    }
}

//! Location SQL: the create decision's reads and writes, the counts, the neighbour search (on the
//! search index), and the list's pages.

use std::collections::HashMap;
use std::sync::atomic::AtomicU64;

use rusqlite::{Connection, OptionalExtension, params};

use super::writer::fire;
use crate::domain::cells;
use crate::domain::geo::Neighbour;
use crate::domain::location::batch::{self, NewLocation, Outcome, Stored};
use crate::domain::location::listing::{self, Candidate, Group, LocationFilter, LocationPage, LocationQuery};
use crate::domain::location::record::{RecordRef, StoredRecord};
use crate::domain::location::search::key::SearchKey;
use crate::domain::location::{Status, TypeSet, text};
use crate::store::api::{StoreError, now_ms};
use crate::store::group::Written;

/// One create request inside the group's transaction: fetch what the domain's decision needs (the
/// stored rows with the items' `merchant_location_id`s, the live neighbours of each new item),
/// let `batch::decide` decide, write what it decided.
pub(super) fn create_in_tx(
    tx: &Connection,
    merchant_pk: i64,
    items: &[NewLocation],
    failpoint: &AtomicU64,
) -> Result<Written<Vec<Outcome>>, StoreError> {
    let mut stored = HashMap::new();
    let mut by_id = tx.prepare_cached(
        "SELECT location_id, status, body FROM locations WHERE merchant_pk = ?1 AND merchant_location_id = ?2",
    )?;
    for mlid in items.iter().filter_map(|i| i.location.merchant_location_id.as_deref()) {
        let row = by_id
            .query_row(params![merchant_pk, mlid], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?, r.get::<_, String>(2)?))
            })
            .optional()?;
        if let Some((location_id, status, canonical)) = row {
            let status = Status::from_wire(&status).ok_or_else(|| StoreError::corrupt("status", &status))?;
            stored.insert(
                mlid.to_owned(),
                Stored {
                    location_id,
                    status,
                    canonical,
                },
            );
        }
    }
    let mut nearby = batch::searched(items, &stored);
    for near in nearby.iter_mut().filter(|near| !near.ranges.is_empty()) {
        near.stored = neighbours_in(tx, merchant_pk, &near.ranges)?;
    }

    let (outcomes, inserts) = batch::decide(items, &stored, nearby, || uuid::Uuid::now_v7().to_string());
    let now = now_ms();
    let mut insert = tx.prepare_cached(
        "INSERT INTO locations (location_id, merchant_pk, merchant_location_id, status, types, \
         latitude, longitude, body, created_at, updated_at, quarantined_by, \
         cell, flags, fit_a, fit_b, fit_c, fit_w, hours) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)",
    )?;
    for new in &inserts {
        fire(failpoint)?;
        let item = &items[new.item];
        let location = &item.location;
        let key = SearchKey::of(location);
        insert.execute(params![
            new.location_id,
            merchant_pk,
            location.merchant_location_id,
            new.status.as_str(),
            location.location_types.bits(),
            location.latitude,
            location.longitude,
            item.canonical,
            now,
            new.quarantined_by,
            key.cell,
            key.flags,
            key.fit[0],
            key.fit[1],
            key.fit[2],
            key.fit[3],
            key.hours,
        ])?;
        let text = text::indexed(&location.name, location.merchant_location_id.as_deref());
        super::text::index(tx, tx.last_insert_rowid(), merchant_pk, &text)?;
    }
    let counted = listing::tally(
        inserts
            .iter()
            .map(|new| (new.status, items[new.item].location.location_types, 1)),
    );
    count(tx, merchant_pk, &counted)?;
    Ok(Written {
        value: outcomes,
        changes: inserts.iter().map(|new| new.change(items, now)).collect(),
    })
}

/// Sets the search index's columns of the location `seq` (the migration's step).
pub(super) fn write_search_key(tx: &Connection, seq: i64, key: &SearchKey) -> Result<(), StoreError> {
    tx.prepare_cached(
        "UPDATE locations SET cell = ?2, flags = ?3, fit_a = ?4, fit_b = ?5, fit_c = ?6, fit_w = ?7, hours = ?8 \
         WHERE seq = ?1",
    )?
    .execute(params![
        seq, key.cell, key.flags, key.fit[0], key.fit[1], key.fit[2], key.fit[3], key.hours
    ])?;
    Ok(())
}

/// Adds `changes` to the merchant's group counts.
pub(super) fn count(tx: &Connection, merchant_pk: i64, changes: &[(Status, TypeSet, i64)]) -> Result<(), StoreError> {
    let mut upsert = tx.prepare_cached(
        "INSERT INTO location_counts (merchant_pk, status, types, n) VALUES (?1, ?2, ?3, ?4) \
         ON CONFLICT (merchant_pk, status, types) DO UPDATE SET n = n + excluded.n",
    )?;
    for (status, types, n) in changes {
        upsert.execute(params![merchant_pk, status.as_str(), types.bits(), n])?;
    }
    Ok(())
}

/// The merchant's live locations in the cells around a point that hold every one within the
/// quarantine radius (index `locations_search`: one range scan per status and key range).
pub(super) fn neighbours(
    conn: &Connection,
    merchant_pk: i64,
    latitude: f64,
    longitude: f64,
) -> Result<Vec<Neighbour>, StoreError> {
    neighbours_in(conn, merchant_pk, &cells::neighbour_ranges(latitude, longitude))
}

/// The merchant's live locations in these key ranges of the search index.
fn neighbours_in(conn: &Connection, merchant_pk: i64, ranges: &[(i64, i64)]) -> Result<Vec<Neighbour>, StoreError> {
    let mut stmt = conn.prepare_cached(
        "SELECT location_id, latitude, longitude, types, seq FROM locations INDEXED BY locations_search \
         WHERE merchant_pk = ?1 AND status = ?2 AND cell BETWEEN ?3 AND ?4",
    )?;
    let mut found = Vec::new();
    for &(first, last) in ranges {
        for status in Status::LIVE {
            let rows = stmt.query_map(params![merchant_pk, status.as_str(), first, last], |r| {
                Ok(Neighbour {
                    location_id: r.get(0)?,
                    latitude: r.get(1)?,
                    longitude: r.get(2)?,
                    types: TypeSet::from_bits(r.get(3)?),
                    seq: r.get(4)?,
                    status,
                })
            })?;
            for row in rows {
                found.push(row?);
            }
        }
    }
    Ok(found)
}

/// The merchant's locations named by the filter's shorter id list.
pub(super) fn candidates(
    tx: &Connection,
    merchant_pk: i64,
    filter: &LocationFilter,
) -> Result<Vec<Candidate>, StoreError> {
    let Some((by_location_id, ids)) = filter.lookup() else {
        return Ok(Vec::new());
    };
    let mut stmt = tx.prepare_cached(if by_location_id {
        "SELECT seq, location_id, merchant_location_id, status, types FROM locations \
         WHERE location_id = ?2 AND merchant_pk = ?1"
    } else {
        "SELECT seq, location_id, merchant_location_id, status, types FROM locations \
         WHERE merchant_pk = ?1 AND merchant_location_id = ?2"
    })?;
    let mut found = Vec::new();
    for id in ids {
        let row = stmt
            .query_row(params![merchant_pk, id], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get::<_, String>(3)?, r.get(4)?))
            })
            .optional()?;
        if let Some((seq, location_id, merchant_location_id, status, types)) = row {
            found.push(Candidate {
                seq,
                location_id,
                merchant_location_id,
                status: Status::from_wire(&status).ok_or_else(|| StoreError::corrupt("status", &status))?,
                types: TypeSet::from_bits(types),
            });
        }
    }
    Ok(found)
}

/// The columns of a stored record, as `record` reads them.
pub(super) const RECORD: &str =
    "seq, location_id, merchant_location_id, status, quarantined_by, version, created_at, updated_at, body";

fn record(r: &rusqlite::Row<'_>) -> Result<StoredRecord, StoreError> {
    let status: String = r.get(3)?;
    Ok(StoredRecord {
        seq: r.get(0)?,
        location_id: r.get(1)?,
        merchant_location_id: r.get(2)?,
        status: Status::from_wire(&status).ok_or_else(|| StoreError::corrupt("status", &status))?,
        quarantined_by: r.get(4)?,
        version: r.get(5)?,
        created_at: r.get(6)?,
        updated_at: r.get(7)?,
        body: r.get(8)?,
    })
}

/// A row of `RECORD`'s columns, borrowed: written into a page without copying its text.
pub(super) fn record_ref<'r>(row: &'r rusqlite::Row<'_>) -> Result<RecordRef<'r>, StoreError> {
    let status: &str = row.get_ref(3)?.as_str()?;
    Ok(RecordRef {
        location_id: row.get_ref(1)?.as_str()?,
        merchant_location_id: row.get_ref(2)?.as_str_or_null()?,
        status: Status::from_wire(status).ok_or_else(|| StoreError::corrupt("status", status))?,
        quarantined_by: row.get_ref(4)?.as_str_or_null()?,
        version: row.get(5)?,
        created_at: row.get(6)?,
        updated_at: row.get(7)?,
        body: row.get_ref(8)?.as_bytes()?,
    })
}

/// One group's records after a `seq`, in creation order: bound to (merchant, status, types, seq).
pub(super) fn group_page_sql() -> String {
    format!(
        "SELECT {RECORD} FROM locations WHERE merchant_pk = ?1 AND status = ?2 AND types = ?3 AND seq > ?4 \
         ORDER BY seq"
    )
}

/// A page without id lists: the exact total from the merchant's group counts, and the records
/// merged from one range of the index `(merchant, status, types, seq)` per matching group, each
/// read from the cursor on, one record ahead at most.
/// A page of the location list, in the read transaction `tx`: by text, by ids, or by the
/// merchant's groups.
pub(super) fn list(tx: &Connection, query: LocationQuery) -> Result<LocationPage, StoreError> {
    let LocationQuery {
        merchant_pk,
        filter,
        after,
        limit,
    } = query;
    if filter.text.is_some() {
        let (seqs, has_next) = super::text::matching(tx, merchant_pk, &filter, after, limit)?;
        Ok(LocationPage::of(&records(tx, &seqs)?, has_next, None))
    } else if filter.by_ids() {
        let candidates = candidates(tx, merchant_pk, &filter)?;
        let keys = filter.page_of_candidates(candidates, after, limit);
        Ok(LocationPage::of(
            &records(tx, &keys.seqs)?,
            keys.has_next,
            Some(keys.total),
        ))
    } else {
        page_by_groups(tx, merchant_pk, &filter, after, limit)
    }
}

pub(super) fn page_by_groups(
    tx: &Connection,
    merchant_pk: i64,
    filter: &LocationFilter,
    after: Option<i64>,
    limit: usize,
) -> Result<LocationPage, StoreError> {
    let mut counts = Vec::new();
    let mut stmt = tx.prepare_cached("SELECT status, types, n FROM location_counts WHERE merchant_pk = ?1")?;
    let rows = stmt.query_map([merchant_pk], |r| {
        Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?, r.get::<_, i64>(2)?))
    })?;
    for row in rows {
        let (status, types, n) = row?;
        counts.push(Group {
            status: Status::from_wire(&status).ok_or_else(|| StoreError::corrupt("status", &status))?,
            types: TypeSet::from_bits(types),
            count: n.unsigned_abs(),
        });
    }
    let (groups, total) = filter.groups(counts);
    let sql = group_page_sql();
    let params = |g: &Group| (merchant_pk, g.status.as_str(), g.types.bits(), after.unwrap_or(0));
    if let [group] = groups.as_slice() {
        // One group (the common case): its rows are the page, written as they are read, with no
        // copy of any text.
        let mut page = LocationPage::new(limit, Some(total));
        let mut stmt = tx.prepare_cached(&sql)?;
        let mut rows = stmt.query(params(group))?;
        while let Some(row) = rows.next()? {
            if page.count == limit {
                page.has_next = true;
                break;
            }
            page.push(row.get(0)?, record_ref(row)?);
        }
        return Ok(page);
    }
    let mut statements = Vec::with_capacity(groups.len());
    for _ in &groups {
        statements.push(tx.prepare_cached(&sql)?);
    }
    let mut ranges = Vec::with_capacity(groups.len());
    for (stmt, group) in statements.iter_mut().zip(&groups) {
        ranges.push(stmt.query(params(group))?);
    }
    let sources = ranges
        .iter_mut()
        .map(|rows| move || rows.next()?.map(record).transpose())
        .collect();
    let (records, has_next) = listing::merge_records(sources, limit)?;
    Ok(LocationPage::of(&records, has_next, Some(total)))
}

/// The records with these `seq`s, in this order.
pub(super) fn records(tx: &Connection, seqs: &[i64]) -> Result<Vec<StoredRecord>, StoreError> {
    let mut stmt = tx.prepare_cached(&format!("SELECT {RECORD} FROM locations WHERE seq = ?1"))?;
    let mut records = Vec::with_capacity(seqs.len());
    for &seq in seqs {
        let mut rows = stmt.query([seq])?;
        if let Some(row) = rows.next()? {
            records.push(record(row)?);
        }
    }
    Ok(records)
}

#[cfg(test)]
mod tests {
    use rusqlite::StatementStatus;

    use super::super::{locations, schema};
    use super::*;

    #[test]
    fn a_cached_statement_is_not_prepared_again_for_other_values() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("plans.db");
        drop(schema::open_writer(&db).unwrap());
        let conn = Connection::open(&db).unwrap();
        schema::configure(&conn).unwrap();
        let sql = locations::group_page_sql();
        // The first page's 0 and the later pages' larger `seq`s, as a walk binds them.
        for after in [0_i64, 7, 0, 1_000_000, 1] {
            let mut stmt = conn.prepare_cached(&sql).unwrap();
            let mut rows = stmt.query(rusqlite::params![1, "ACTIVE", 1, after]).unwrap();
            assert!(rows.next().unwrap().is_none());
        }
        let stmt = conn.prepare_cached(&sql).unwrap();
        assert_eq!(stmt.get_status(StatementStatus::RePrepare), 0);
    }
}

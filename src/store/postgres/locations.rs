//! Location SQL: the create decision's reads and writes, the counts, the neighbour search, the
//! list's pages, and migration 3's step.

use std::collections::HashMap;

use deadpool_postgres::{GenericClient, Object, Pool};
use tokio_postgres::Statement;

use crate::domain::cells;
use crate::domain::geo::{self, Neighbour};
use crate::domain::location::batch::{self, Neighbourhood, NewLocation, Outcome, Stored};
use crate::domain::location::listing::{self, Candidate, Group, LocationFilter, LocationPage, LocationQuery};
use crate::domain::location::record::StoredRecord;
use crate::domain::location::search::key::SearchKey;
use crate::domain::location::{Status, TypeSet, text};
use crate::store::api::stored_status as status;
use crate::store::api::{StoreError, now_ms};
use crate::store::group::Written;
use crate::store::migrate;

use super::snapshot::{BEGIN, Pipelined, begun_with, commit, committed_after};
use super::sql::{CUSTOM_PLANS, Params, by_names, execute, query};

/// The merchant's live locations near one point (see `neighbours_of`).
pub(super) async fn neighbours(
    client: &impl GenericClient,
    merchant_pk: i64,
    latitude: f64,
    longitude: f64,
) -> Result<Vec<Neighbour>, StoreError> {
    let ranges = [cells::neighbour_ranges(latitude, longitude)];
    Ok(neighbours_of(client, merchant_pk, &ranges)
        .await?
        .pop()
        .unwrap_or_default())
}

/// The merchant's live locations in each point's key ranges (`cells::neighbour_ranges`: the cells
/// that hold every one within the quarantine radius), in the points' order: one statement for all
/// the points (one range scan of `locations_search` per key range of each point, the status tested
/// on the index entry: migration 9), not a round trip and a statement each (a create of 200 new
/// locations would ask hundreds of queries). `OFFSET 0` keeps the subquery a nested loop of index
/// scans, one per range: pulled up into a join, the planner (its statistics stale after a burst of
/// inserts) hashes all the merchant's rows instead.
pub(super) async fn neighbours_of(
    client: &impl GenericClient,
    merchant_pk: i64,
    points: &[impl AsRef<[(i64, i64)]>],
) -> Result<Vec<Vec<Neighbour>>, StoreError> {
    let mut found = vec![Vec::new(); points.len()];
    if points.is_empty() {
        return Ok(found);
    }
    let (mut point, mut firsts, mut lasts) = (Vec::new(), Vec::new(), Vec::new());
    for (i, ranges) in points.iter().enumerate() {
        for &(first, last) in ranges.as_ref() {
            point.push(i32::try_from(i).unwrap_or(i32::MAX));
            firsts.push(first);
            lasts.push(last);
        }
    }
    if point.is_empty() {
        return Ok(found);
    }
    let live = Status::LIVE.map(Status::as_str);
    let rows = query(
        client,
        "SELECT b.i, l.location_id, l.latitude, l.longitude, l.types, l.seq, l.status \
         FROM UNNEST($2::int4[], $3::int8[], $4::int8[]) AS b(i, lo, hi) \
         CROSS JOIN LATERAL (SELECT location_id, latitude, longitude, types, seq, status FROM locations \
          WHERE merchant_pk = $1 AND cell BETWEEN b.lo AND b.hi AND status = ANY($5) OFFSET 0) l",
        &[&merchant_pk, &point, &firsts, &lasts, &&live[..]],
    )
    .await?;
    for row in rows {
        let i = usize::try_from(row.try_get::<_, i32>(0)?).unwrap_or(usize::MAX);
        let neighbour = Neighbour {
            location_id: row.try_get(1)?,
            latitude: row.try_get(2)?,
            longitude: row.try_get(3)?,
            types: TypeSet::from_bits(i64::from(row.try_get::<_, i32>(4)?)),
            seq: row.try_get(5)?,
            status: status(row.try_get(6)?)?,
        };
        if let Some(near) = found.get_mut(i) {
            near.push(neighbour);
        }
    }
    Ok(found)
}

/// Every location's `seq` and stored body, a chunk at a time in `seq` order (the migrations'
/// steps written in Rust).
#[derive(Default)]
struct BodyChunks {
    after: i64,
}

impl BodyChunks {
    /// The next chunk; `None` at the end.
    async fn next(&mut self, tx: &impl GenericClient) -> Result<Option<Vec<(i64, String)>>, StoreError> {
        let rows = tx
            .query(
                "SELECT seq, body FROM locations WHERE seq > $1 ORDER BY seq LIMIT $2",
                &[&self.after, &migrate::UPGRADE_CHUNK],
            )
            .await?;
        let chunk: Vec<(i64, String)> = rows
            .iter()
            .map(|r| Ok((r.try_get(0)?, r.try_get(1)?)))
            .collect::<Result<_, StoreError>>()?;
        let Some(&(last, _)) = chunk.last() else {
            return Ok(None);
        };
        self.after = last;
        Ok(Some(chunk))
    }
}

/// Migration 3's step (see the SQLite store's `upgrade_records`).
pub(super) async fn upgrade_records(tx: &impl GenericClient) -> Result<(), StoreError> {
    let mut chunks = BodyChunks::default();
    while let Some(rows) = chunks.next(tx).await? {
        for (seq, body) in rows {
            if let Some(body) = migrate::upgraded_body(&body) {
                tx.execute("UPDATE locations SET body = $2 WHERE seq = $1", &[&seq, &body])
                    .await?;
            }
        }
    }
    Ok(())
}

/// Migration 3's second step (see the SQLite store's `name_quarantining_neighbours`), once every
/// migration is applied: it searches on the index of migration 5.
pub(super) async fn name_quarantining_neighbours(tx: &impl GenericClient) -> Result<(), StoreError> {
    let quarantined = tx
        .query(
            "SELECT seq, merchant_pk, latitude, longitude, types FROM locations \
             WHERE status = $1 AND quarantined_by IS NULL",
            &[&Status::Quarantine.as_str()],
        )
        .await?;
    for row in quarantined {
        let (seq, merchant_pk, latitude, longitude): (i64, i64, f64, f64) =
            (row.try_get(0)?, row.try_get(1)?, row.try_get(2)?, row.try_get(3)?);
        let types = TypeSet::from_bits(i64::from(row.try_get::<_, i32>(4)?));
        let candidates = neighbours(tx, merchant_pk, latitude, longitude).await?;
        if let Some(by) = geo::quarantining_neighbour(seq, latitude, longitude, types, candidates) {
            tx.execute(
                "UPDATE locations SET quarantined_by = $2 WHERE seq = $1",
                &[&seq, &by.location_id],
            )
            .await?;
        }
    }
    Ok(())
}

/// The search migration's step (see the SQLite store's `fill_search`).
pub(super) async fn fill_search(tx: &impl GenericClient) -> Result<(), StoreError> {
    let mut chunks = BodyChunks::default();
    while let Some(rows) = chunks.next(tx).await? {
        for (seq, body) in rows {
            if let Some(key) = migrate::search_key(&body) {
                let [a, b, c, w] = key.fit;
                tx.execute(
                    "UPDATE locations SET cell = $2, flags = $3, fit_a = $4, fit_b = $5, fit_c = $6, fit_w = $7, \
                     hours = $8 WHERE seq = $1",
                    &[&seq, &key.cell, &key.flags, &a, &b, &c, &w, &key.hours],
                )
                .await?;
            }
        }
    }
    Ok(())
}

/// Adds `changes` to the merchant's group counts.
pub(super) async fn count(
    tx: &impl GenericClient,
    merchant_pk: i64,
    changes: &[(Status, TypeSet, i64)],
) -> Result<(), StoreError> {
    if changes.is_empty() {
        return Ok(());
    }
    let statuses: Vec<&str> = changes.iter().map(|(s, _, _)| s.as_str()).collect();
    let types: Vec<i32> = changes
        .iter()
        .map(|(_, t, _)| i32::try_from(t.bits()).unwrap_or(0))
        .collect();
    let deltas: Vec<i64> = changes.iter().map(|(_, _, n)| *n).collect();
    execute(
        tx,
        "INSERT INTO location_counts (merchant_pk, status, types, n) \
         SELECT $1, s, t, n FROM UNNEST($2::text[], $3::int4[], $4::int8[]) AS u(s, t, n) \
         ON CONFLICT (merchant_pk, status, types) DO UPDATE SET n = location_counts.n + excluded.n",
        &[&merchant_pk, &statuses, &types, &deltas],
    )
    .await?;
    Ok(())
}

/// The merchant's locations named by the filter's shorter id list, one probe of an index a name
/// ([`by_names`]: a prepared statement's plan made for few locations stays one probe a name).
pub(super) async fn candidates(
    tx: &impl GenericClient,
    merchant_pk: i64,
    filter: &LocationFilter,
) -> Result<Vec<Candidate>, StoreError> {
    let Some((by_location_id, ids)) = filter.lookup() else {
        return Ok(Vec::new());
    };
    let column = if by_location_id {
        "location_id"
    } else {
        "merchant_location_id"
    };
    let sql = by_names(CANDIDATE, column, "$2");
    let rows = query(tx, &sql, &[&merchant_pk, &ids]).await?;
    rows.iter().map(super::sql::named_of).collect()
}

/// The columns of a location found by id, as `named_of` reads them.
const CANDIDATE: &str = "seq, location_id, merchant_location_id, status, types";

/// The columns of a stored record, as `record_of` reads them.
pub(super) const RECORD: &str =
    "seq, location_id, merchant_location_id, status, quarantined_by, version, created_at, updated_at, body";

pub(super) fn record_of(r: &tokio_postgres::Row) -> Result<StoredRecord, StoreError> {
    Ok(StoredRecord {
        seq: r.try_get(0)?,
        location_id: r.try_get(1)?,
        merchant_location_id: r.try_get(2)?,
        status: status(r.try_get(3)?)?,
        quarantined_by: r.try_get(4)?,
        version: r.try_get(5)?,
        created_at: r.try_get(6)?,
        updated_at: r.try_get(7)?,
        body: r.try_get(8)?,
    })
}

/// The merchant's group counts: a location list's exact total, and the groups its page scans.
async fn group_counts(tx: &impl GenericClient, merchant_pk: i64) -> Result<Vec<Group>, StoreError> {
    query(
        tx,
        "SELECT status, types, n FROM location_counts WHERE merchant_pk = $1",
        &[&merchant_pk],
    )
    .await?
    .iter()
    .map(|r| {
        Ok(Group {
            status: status(r.try_get(0)?)?,
            types: TypeSet::from_bits(i64::from(r.try_get::<_, i32>(1)?)),
            count: r.try_get::<_, i64>(2)?.unsigned_abs(),
        })
    })
    .collect()
}

/// A page without id lists or text: the records merged from one range of the index `(merchant,
/// status, types, seq)` per group the filter admits (a LATERAL subquery each, [`group_ranges`]),
/// with the exact `total` of those groups. Read as the last statement of `tx`'s snapshot, which
/// it ends.
async fn page_by_groups(
    tx: &Object,
    merchant_pk: i64,
    (groups, total): (Vec<Group>, u64),
    after: Option<i64>,
    limit: usize,
) -> Result<LocationPage, StoreError> {
    if groups.is_empty() {
        commit(tx).await?;
        return Ok(LocationPage::new(0, Some(total)));
    }
    let statuses: Vec<&str> = groups.iter().map(|g| g.status.as_str()).collect();
    let types: Vec<i32> = groups
        .iter()
        .map(|g| i32::try_from(g.types.bits()).unwrap_or(0))
        .collect();
    let sql = match groups.as_slice() {
        // One group (the common case): its range is the page, its records read as it is walked.
        [_] => group_ranges(RECORD),
        // Several: each range yields a page of seqs from the index alone, and only the merged
        // page's records are read, not a page of records from every group.
        _ => format!(
            "SELECT {RECORD} FROM locations WHERE seq = ANY(ARRAY({})) ORDER BY seq",
            group_ranges("seq")
        ),
    };
    let params: Params<'_> = &[
        &merchant_pk,
        &statuses,
        &types,
        &after.unwrap_or(0),
        &(limit as i64 + 1),
    ];
    let mut records = committed_after(tx, &sql, params)
        .await?
        .iter()
        .map(record_of)
        .collect::<Result<Vec<_>, _>>()?;
    let has_next = records.len() > limit;
    records.truncate(limit);
    Ok(LocationPage::of(&records, has_next, Some(total)))
}

/// The first `$5` rows of `columns` after seq `$4` merged from the ranges of merchant `$1`'s
/// groups (statuses `$2`, type sets `$3`), in seq order.
fn group_ranges(columns: &str) -> String {
    format!(
        "SELECT l.* FROM UNNEST($2::text[], $3::int4[]) AS g(s, t) CROSS JOIN LATERAL \
         (SELECT {columns} FROM locations WHERE merchant_pk = $1 AND status = g.s AND types = g.t \
          AND seq > $4 ORDER BY seq LIMIT $5) l ORDER BY l.seq LIMIT $5"
    )
}

/// The records with these `seq`s, in this order, read as the last statement of `tx`'s snapshot,
/// which it ends.
async fn records(tx: &Object, seqs: &[i64]) -> Result<Vec<StoredRecord>, StoreError> {
    if seqs.is_empty() {
        commit(tx).await?;
        return Ok(Vec::new());
    }
    let sql = format!("SELECT {RECORD} FROM locations WHERE seq = ANY($1) ORDER BY seq");
    let rows = committed_after(tx, &sql, &[&seqs]).await?;
    rows.iter().map(record_of).collect()
}

/// One create request inside its group's transaction (see `groups`): fetch what the domain's
/// decision needs (the stored rows with the items' `merchant_location_id`s, the live neighbours
/// of each new item), let `batch::decide` decide, write what it decided.
pub(super) async fn create_in_tx(
    tx: &impl GenericClient,
    merchant_pk: i64,
    items: &[NewLocation],
) -> Result<Written<Vec<Outcome>>, StoreError> {
    let ids: Vec<&str> = items
        .iter()
        .filter_map(|i| i.location.merchant_location_id.as_deref())
        .collect();
    let mut stored = HashMap::new();
    if !ids.is_empty() {
        for row in query(
            tx,
            &by_names(STORED, "merchant_location_id", "$2"),
            &[&merchant_pk, &ids],
        )
        .await?
        {
            let (name, found) = stored_of(&row, 0)?;
            stored.insert(name, found);
        }
    }
    create_known(tx, merchant_pk, items, &stored).await
}

/// The columns a stored location is read back by name with, for [`stored_of`].
pub(super) const STORED: &str = "merchant_location_id, location_id, status, body";

/// The `merchant_location_id` and the stored location of a row whose columns from `at` on are
/// [`STORED`]'s.
pub(super) fn stored_of(row: &tokio_postgres::Row, at: usize) -> Result<(String, Stored), StoreError> {
    let status_text: &str = row.try_get(at + 2)?;
    Ok((
        row.try_get(at)?,
        Stored {
            location_id: row.try_get(at + 1)?,
            status: status(status_text)?,
            canonical: row.try_get(at + 3)?,
        },
    ))
}

/// [`create_in_tx`] with what is stored under the items' names read already (in this transaction,
/// under the merchant's lock): `stored` holds at least every item's `merchant_location_id` found.
pub(super) async fn create_known(
    tx: &impl GenericClient,
    merchant_pk: i64,
    items: &[NewLocation],
    stored: &HashMap<String, Stored>,
) -> Result<Written<Vec<Outcome>>, StoreError> {
    if items.is_empty() {
        return Ok(Written {
            value: Vec::new(),
            changes: Vec::new(),
        });
    }
    let nearby = nearby(tx, merchant_pk, items, stored).await?;
    let (written, inserts) = decide(items, stored, nearby);
    let statement = prepare_insert(tx).await?;
    insert_new(tx, &statement, merchant_pk, items, &inserts).await?;
    Ok(written)
}

/// The neighbourhoods `batch::decide` needs: none for items that are retries, the stored live
/// neighbours of the rest, searched in one statement.
pub(super) async fn nearby(
    tx: &impl GenericClient,
    merchant_pk: i64,
    items: &[NewLocation],
    stored: &HashMap<String, Stored>,
) -> Result<Vec<Neighbourhood>, StoreError> {
    let mut nearby = batch::searched(items, stored);
    let ranges: Vec<&[(i64, i64)]> = nearby.iter().map(|near| near.ranges.as_slice()).collect();
    let found = neighbours_of(tx, merchant_pk, &ranges).await?;
    for (near, found) in nearby.iter_mut().zip(found) {
        near.stored = found;
    }
    Ok(nearby)
}

/// The rows a create decided to insert, and its time.
pub(super) struct Inserts {
    rows: Vec<batch::ToInsert>,
    now: i64,
}

impl Inserts {
    pub(super) fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }
}

/// A create decided (`batch::decide`), nothing written yet: each item's outcome and its changes,
/// and the rows for [`insert_new`].
pub(super) fn decide(
    items: &[NewLocation],
    stored: &HashMap<String, Stored>,
    nearby: Vec<Neighbourhood>,
) -> (Written<Vec<Outcome>>, Inserts) {
    let (outcomes, rows) = batch::decide(items, stored, nearby, || uuid::Uuid::now_v7().to_string());
    let now = now_ms();
    let written = Written {
        value: outcomes,
        changes: rows.iter().map(|new| new.change(items, now)).collect(),
    };
    (written, Inserts { rows, now })
}

const INSERT: &str = "INSERT INTO locations (location_id, merchant_pk, merchant_location_id, status, types, latitude, \
     longitude, body, created_at, updated_at, quarantined_by, cell, flags, fit_a, fit_b, fit_c, fit_w, hours, \
     search_text) \
     SELECT l, $2, m, s, t, la, lo, bo, $9, $9, q, c, f, fa, fb, fc, fw, h, st \
     FROM UNNEST($1::text[], $3::text[], $4::text[], $5::int4[], $6::float8[], $7::float8[], $8::text[], \
     $10::text[], $11::int8[], $12::int8[], $13::float8[], $14::float8[], $15::float8[], $16::float8[], \
     $17::bytea[], $18::text[]) AS u(l, m, s, t, la, lo, bo, q, c, f, fa, fb, fc, fw, h, st)";

/// The statement [`insert_new`] runs, prepared on `tx`'s connection (at once when it was before).
pub(super) async fn prepare_insert(tx: &impl GenericClient) -> Result<Statement, StoreError> {
    Ok(tx.prepare_cached(INSERT).await?)
}

/// Writes the rows `inserts` of `items` decided, and the merchant's counts, with `statement` from
/// [`prepare_insert`]: the insert is sent at the first poll, so a statement polled after it (the
/// next batch's reads of an import) runs after it.
pub(super) async fn insert_new(
    tx: &impl GenericClient,
    statement: &Statement,
    merchant_pk: i64,
    items: &[NewLocation],
    inserts: &Inserts,
) -> Result<(), StoreError> {
    let (inserts, now) = (&inserts.rows, inserts.now);
    if inserts.is_empty() {
        return Ok(());
    }
    let location_ids: Vec<&str> = inserts.iter().map(|i| i.location_id.as_str()).collect();
    let statuses: Vec<&str> = inserts.iter().map(|i| i.status.as_str()).collect();
    let new = |i: &batch::ToInsert| &items[i.item];
    let mlids: Vec<Option<&str>> = inserts
        .iter()
        .map(|i| new(i).location.merchant_location_id.as_deref())
        .collect();
    let types: Vec<i32> = inserts
        .iter()
        .map(|i| i32::try_from(new(i).location.location_types.bits()).unwrap_or(0))
        .collect();
    let lats: Vec<f64> = inserts.iter().map(|i| new(i).location.latitude).collect();
    let lons: Vec<f64> = inserts.iter().map(|i| new(i).location.longitude).collect();
    let bodies: Vec<&str> = inserts.iter().map(|i| new(i).canonical.as_str()).collect();
    let by: Vec<Option<&str>> = inserts.iter().map(|i| i.quarantined_by.as_deref()).collect();
    let keys: Vec<SearchKey> = inserts.iter().map(|i| SearchKey::of(&new(i).location)).collect();
    let cells: Vec<i64> = keys.iter().map(|k| k.cell).collect();
    let flags: Vec<i64> = keys.iter().map(|k| k.flags).collect();
    let fit = |n: usize| keys.iter().map(|k| k.fit[n]).collect::<Vec<f64>>();
    let (fit_a, fit_b, fit_c, fit_w) = (fit(0), fit(1), fit(2), fit(3));
    let hours: Vec<&[u8]> = keys.iter().map(|k| k.hours.as_slice()).collect();
    let texts: Vec<String> = inserts
        .iter()
        .map(|i| text::indexed(&new(i).location.name, new(i).location.merchant_location_id.as_deref()))
        .collect();
    let counted = listing::tally(inserts.iter().map(|i| (i.status, new(i).location.location_types, 1)));
    let params: Params<'_> = &[
        &location_ids,
        &merchant_pk,
        &mlids,
        &statuses,
        &types,
        &lats,
        &lons,
        &bodies,
        &now,
        &by,
        &cells,
        &flags,
        &fit_a,
        &fit_b,
        &fit_c,
        &fit_w,
        &hours,
        &texts,
    ];
    // Sent together: the counts' update does not wait for the insert's answer.
    tokio::try_join!(
        async { Ok::<_, StoreError>(tx.execute(statement, params).await?) },
        count(tx, merchant_pk, &counted)
    )?;
    Ok(())
}

pub(super) async fn list_locations(pool: &Pool, query: LocationQuery) -> Result<LocationPage, StoreError> {
    let LocationQuery {
        merchant_pk,
        filter,
        after,
        limit,
    } = &query;
    let (merchant_pk, after, limit) = (*merchant_pk, *after, *limit);
    // One snapshot: the total, the page and its records see one state. It is begun with the
    // first statement and committed with the last, in their round trips.
    let begin = format!("{BEGIN}{CUSTOM_PLANS}");
    let snapshot = Pipelined::get(pool).await?;
    let tx = snapshot.client()?;
    let page = if filter.text.is_some() {
        let matching = super::text::matching(tx, merchant_pk, filter, after, limit);
        let (seqs, has_next) = begun_with(tx, &begin, matching).await?;
        LocationPage::of(&records(tx, &seqs).await?, has_next, None)
    } else if filter.by_ids() {
        let candidates = begun_with(tx, &begin, candidates(tx, merchant_pk, filter)).await?;
        let keys = filter.page_of_candidates(candidates, after, limit);
        LocationPage::of(&records(tx, &keys.seqs).await?, keys.has_next, Some(keys.total))
    } else {
        let counts = begun_with(tx, &begin, group_counts(tx, merchant_pk)).await?;
        page_by_groups(tx, merchant_pk, filter.groups(counts), after, limit).await?
    };
    snapshot.ended();
    Ok(page)
}

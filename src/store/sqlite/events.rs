//! Event SQL: appending a request's events to its merchant's log inside its
//! transaction, reading a page of the feed, and retention's pruning.

use rusqlite::{Connection, OptionalExtension, params};

use crate::domain::event::{
    self, Change, EventPage, EventQuery, EventType, LogBounds, PRUNE_BATCH, merge_pages, new_event_id,
};
use crate::store::api::StoreError;
use crate::store::event_rows::{Columns, EVENT_COLUMNS, StoredEvent, drop_pruned_retries};

/// Appends the events of `changes` after the merchant's last (the writer is the only writer: its
/// order is the commit order).
pub(super) fn append(tx: &Connection, merchant_pk: i64, changes: &[Change]) -> Result<(), StoreError> {
    let n = changes.len() as i64;
    let last: i64 = tx
        .prepare_cached(
            "INSERT INTO event_logs (merchant_pk, last_sequence) VALUES (?1, ?2) \
             ON CONFLICT (merchant_pk) DO UPDATE SET last_sequence = last_sequence + ?2 \
             RETURNING last_sequence",
        )?
        .query_row(params![merchant_pk, n], |r| r.get(0))?;
    let mut insert = tx.prepare_cached(
        "INSERT INTO events (merchant_pk, sequence, type, appended_at, event_id, location_id, merchant_location_id, \
         version, status, previous_status) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
    )?;
    for (c, sequence) in changes.iter().zip(last - n + 1..) {
        insert.execute(params![
            merchant_pk,
            sequence,
            c.kind.code(),
            c.at_ms,
            new_event_id(),
            c.location_id,
            c.merchant_location_id,
            c.version,
            c.status.as_str(),
            c.previous_status.map(|s| s.as_str()),
        ])?;
    }
    // Nothing more for webhooks: each endpoint's events after its `delivered_through` are pending.
    Ok(())
}

/// An event read with [`EVENT_COLUMNS`] from column `at` on.
pub(super) fn stored_event(r: &rusqlite::Row<'_>, at: usize) -> rusqlite::Result<StoredEvent> {
    StoredEvent::read(r, at)
}

impl Columns for rusqlite::Row<'_> {
    type Error = rusqlite::Error;
    fn int(&self, i: usize) -> rusqlite::Result<i64> {
        self.get(i)
    }
    fn opt_int(&self, i: usize) -> rusqlite::Result<Option<i64>> {
        self.get(i)
    }
    fn text(&self, i: usize) -> rusqlite::Result<String> {
        self.get(i)
    }
    fn opt_text(&self, i: usize) -> rusqlite::Result<Option<String>> {
        self.get(i)
    }
    fn flag(&self, i: usize) -> rusqlite::Result<bool> {
        self.get(i)
    }
    fn bytes(&self, i: usize) -> rusqlite::Result<Vec<u8>> {
        self.get(i)
    }
    fn real(&self, i: usize) -> rusqlite::Result<f64> {
        self.get(i)
    }
}

/// Where the merchant's log stands.
pub(super) fn bounds(conn: &Connection, merchant_pk: i64) -> Result<LogBounds, StoreError> {
    Ok(conn
        .prepare_cached("SELECT last_sequence, pruned_through FROM event_logs WHERE merchant_pk = ?1")?
        .query_row([merchant_pk], |r| {
            Ok(LogBounds {
                last: r.get(0)?,
                pruned_through: r.get(1)?,
            })
        })
        .optional()?
        .unwrap_or_default())
}

/// One page of the feed (run inside one read transaction): every type from the log's own order,
/// a filter's types each from their index, merged.
pub(super) fn page(conn: &Connection, query: &EventQuery) -> Result<EventPage, StoreError> {
    let bounds = bounds(conn, query.merchant_pk)?;
    let take = query.limit as i64 + 1;
    let read = |sql: &str, params: &[&dyn rusqlite::ToSql]| -> Result<Vec<(i64, String)>, StoreError> {
        let mut stmt = conn.prepare_cached(sql)?;
        let rows = stmt.query_map(params, |r| stored_event(r, 0))?;
        rows.map(|row| {
            let stored = row?;
            Ok((stored.sequence, stored.render()?))
        })
        .collect()
    };
    let pages = if query.types.is_all() {
        vec![read(
            &format!(
                "SELECT {EVENT_COLUMNS} FROM events e WHERE e.merchant_pk = ?1 AND e.sequence > ?2 \
                 ORDER BY e.sequence LIMIT ?3"
            ),
            &[&query.merchant_pk, &query.after, &take],
        )?]
    } else {
        query
            .types
            .types()
            .map(|t: EventType| {
                read(
                    &format!(
                        "SELECT {EVENT_COLUMNS} FROM events e WHERE e.merchant_pk = ?1 AND e.type = ?4 \
                         AND e.sequence > ?2 ORDER BY e.sequence LIMIT ?3"
                    ),
                    &[&query.merchant_pk, &query.after, &take, &t.code()],
                )
            })
            .collect::<Result<_, _>>()?
    };
    let (events, has_next) = merge_pages(pages, query.limit);
    Ok(EventPage {
        events,
        has_next,
        bounds,
    })
}

/// Drops up to `PRUNE_BATCH` events of one merchant appended before `cutoff_ms`, oldest first;
/// how many. Each call is one short transaction of the writer.
pub(super) fn prune(tx: &Connection, cutoff_ms: i64) -> Result<usize, StoreError> {
    // The merchant whose oldest kept event is the oldest of all is pruned first.
    let oldest: Option<(i64, i64)> = tx
        .prepare_cached(
            "SELECT l.merchant_pk, l.pruned_through FROM event_logs l \
             WHERE l.pruned_through < l.last_sequence AND (SELECT appended_at FROM events e \
             WHERE e.merchant_pk = l.merchant_pk AND e.sequence > l.pruned_through ORDER BY e.sequence LIMIT 1) < ?1 \
             LIMIT 1",
        )?
        .query_row([cutoff_ms], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?;
    let Some((merchant_pk, pruned)) = oldest else {
        return Ok(0);
    };
    let rows: Vec<(i64, i64)> = tx
        .prepare_cached(
            "SELECT sequence, appended_at FROM events WHERE merchant_pk = ?1 AND sequence > ?2 \
             ORDER BY sequence LIMIT ?3",
        )?
        .query_map(params![merchant_pk, pruned, PRUNE_BATCH as i64], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })?
        .collect::<Result<_, _>>()?;
    let Some(through) = event::prunable_through(&rows, cutoff_ms) else {
        return Ok(0);
    };
    let dropped = tx
        .prepare_cached("DELETE FROM events WHERE merchant_pk = ?1 AND sequence > ?2 AND sequence <= ?3")?
        .execute(params![merchant_pk, pruned, through])?;
    tx.prepare_cached(&drop_pruned_retries('?'))?
        .execute(params![merchant_pk, pruned, through])?;
    tx.prepare_cached("UPDATE event_logs SET pruned_through = ?2 WHERE merchant_pk = ?1")?
        .execute(params![merchant_pk, through])?;
    Ok(dropped.max(1))
}

//! Change SQL: what a change request's decision reads, and writing what it
//! decided; the operators' quarantine review.

use std::collections::HashSet;

use rusqlite::{Connection, OptionalExtension, Row, params};

use super::locations::{count, neighbours};
use crate::domain::location::change::{ChangePlan, Current, Decision, Write};
use crate::domain::location::{Status, TypeSet};
use crate::store::api::{Approval, QuarantinedLocation, StoreError, now_ms};
use crate::store::group::Written;

const CURRENT: &str = "seq, location_id, merchant_location_id, status, types, latitude, longitude, version, \
                       quarantined_by, approved, body";

fn current(r: &Row<'_>) -> rusqlite::Result<Current> {
    Ok(Current {
        seq: r.get(0)?,
        location_id: r.get(1)?,
        merchant_location_id: r.get(2)?,
        status: super::column::word(r, 3, "status", Status::from_wire)?,
        types: TypeSet::from_bits(r.get(4)?),
        latitude: r.get(5)?,
        longitude: r.get(6)?,
        version: r.get(7)?,
        quarantined_by: r.get(8)?,
        approved: r.get(9)?,
        body: r.get(10)?,
    })
}

/// One change request inside the group's transaction.
pub(super) fn change_in_tx(
    tx: &Connection,
    merchant_pk: i64,
    plan: ChangePlan,
) -> Result<Written<Decision>, StoreError> {
    let mut seen = HashSet::new();
    let mut targets = Vec::new();
    let (by_id, by_merchant_id) = plan.lookups();
    for (ids, sql) in [
        (
            by_id,
            format!("SELECT {CURRENT} FROM locations WHERE location_id = ?2 AND merchant_pk = ?1"),
        ),
        (
            by_merchant_id,
            format!("SELECT {CURRENT} FROM locations WHERE merchant_pk = ?1 AND merchant_location_id = ?2"),
        ),
    ] {
        let mut stmt = tx.prepare_cached(&sql)?;
        for id in ids {
            if let Some(row) = stmt.query_row(params![merchant_pk, id], current).optional()?
                && seen.insert(row.seq)
            {
                targets.push(row);
            }
        }
    }
    let mut dependents = Vec::new();
    let mut stmt = tx.prepare_cached(&format!(
        "SELECT {CURRENT} FROM locations WHERE merchant_pk = ?1 AND quarantined_by = ?2 AND status = ?3"
    ))?;
    for target in &targets {
        let rows = stmt.query_map(
            params![merchant_pk, target.location_id, Status::Quarantine.as_str()],
            current,
        )?;
        for row in rows {
            let row = row?;
            if seen.insert(row.seq) {
                dependents.push(row);
            }
        }
    }
    let mut nearby = Vec::new();
    for (latitude, longitude) in plan.probes(&targets, &dependents) {
        nearby.extend(neighbours(tx, merchant_pk, latitude, longitude)?);
    }
    let decision = plan.decide(targets, dependents, nearby);
    let now = now_ms();
    for write in &decision.writes {
        write_change(tx, write, now)?;
    }
    count(tx, merchant_pk, &decision.counts)?;
    Ok(Written {
        changes: decision.changes(now),
        value: decision,
    })
}

fn write_change(tx: &Connection, w: &Write, now: i64) -> Result<(), StoreError> {
    let content = w.content.as_ref();
    tx.prepare_cached(
        "UPDATE locations SET status = ?2, quarantined_by = ?3, version = ?4, approved = ?5, updated_at = ?6, \
         body = coalesce(?7, body), latitude = coalesce(?8, latitude), longitude = coalesce(?9, longitude), \
         cell = coalesce(?10, cell), flags = coalesce(?11, flags), fit_a = coalesce(?12, fit_a), \
         fit_b = coalesce(?13, fit_b), fit_c = coalesce(?14, fit_c), fit_w = coalesce(?15, fit_w), \
         hours = coalesce(?16, hours) WHERE seq = ?1",
    )?
    .execute(params![
        w.seq,
        w.status.as_str(),
        w.quarantined_by,
        w.version,
        w.approved,
        now,
        content.map(|c| &c.body),
        content.map(|c| c.latitude),
        content.map(|c| c.longitude),
        content.map(|c| c.search.cell),
        content.map(|c| c.search.flags),
        content.map(|c| c.search.fit[0]),
        content.map(|c| c.search.fit[1]),
        content.map(|c| c.search.fit[2]),
        content.map(|c| c.search.fit[3]),
        content.map(|c| &c.search.hours),
    ])?;
    if let Some(content) = content {
        super::text::reindex(tx, w.seq, &content.text)?;
    }
    Ok(())
}

/// Every `QUARANTINE` location, in creation order.
pub(super) fn quarantined(conn: &Connection) -> Result<Vec<QuarantinedLocation>, StoreError> {
    let mut stmt = conn.prepare(
        "SELECT l.location_id, m.id, l.merchant_location_id, l.body, l.quarantined_by \
         FROM locations l JOIN merchants m ON m.pk = l.merchant_pk WHERE l.status = ?1 ORDER BY l.seq",
    )?;
    let rows = stmt.query_map([Status::Quarantine.as_str()], |r| {
        Ok(QuarantinedLocation {
            location_id: r.get(0)?,
            merchant_id: r.get(1)?,
            merchant_location_id: r.get(2)?,
            name: crate::domain::location::change::stored_name(&r.get::<_, String>(3)?),
            neighbour_location_id: r.get(4)?,
        })
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// The merchant of a location (to queue an operator's approval in its group); `None`: no such
/// location.
pub(super) fn merchant_of(conn: &Connection, location_id: &str) -> Result<Option<i64>, StoreError> {
    Ok(conn
        .prepare_cached("SELECT merchant_pk FROM locations WHERE location_id = ?1")?
        .query_row([location_id], |r| r.get(0))
        .optional()?)
}

/// An operator's approval, in the merchant's group (its event appended by the group, as every
/// change's).
pub(super) fn approve(tx: &Connection, merchant_pk: i64, location_id: &str) -> Result<Written<Approval>, StoreError> {
    let location = tx
        .query_row(
            &format!("SELECT {CURRENT} FROM locations WHERE location_id = ?1 AND merchant_pk = ?2"),
            params![location_id, merchant_pk],
            current,
        )
        .optional()?;
    let Some(location) = location else {
        return Ok(Written {
            value: Approval::NotFound,
            changes: Vec::new(),
        });
    };
    let Some(write) = crate::domain::location::change::approval(&location) else {
        return Ok(Written {
            value: Approval::NotQuarantined(location.status),
            changes: Vec::new(),
        });
    };
    let now = now_ms();
    write_change(tx, &write, now)?;
    count(
        tx,
        merchant_pk,
        &[(location.status, location.types, -1), (write.status, location.types, 1)],
    )?;
    Ok(Written {
        value: Approval::Approved { version: write.version },
        changes: vec![write.change(now)],
    })
}

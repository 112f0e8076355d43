//! Change SQL: what a change request's decision reads, writing what it decided,
//! and the operators' quarantine review.

use deadpool_postgres::{GenericClient, Pool};

use super::locations::{count, neighbours_of};
use super::sql::{by_names, execute, query};
use crate::domain::cells;
use crate::domain::location::Status;
use crate::domain::location::change::{self, ChangePlan, Current, Decision, Write};
use crate::domain::location::listing::Candidate;
use crate::domain::location::search::key::SearchKey;
use crate::store::api::{Approval, QuarantinedLocation, StoreError, now_ms};
use crate::store::group::Written;

pub(super) const CURRENT: &str = "seq, location_id, merchant_location_id, status, types, latitude, longitude, version, \
                       quarantined_by, approved, body";

pub(super) fn current_of(r: &tokio_postgres::Row) -> Result<Current, StoreError> {
    let Candidate {
        seq,
        location_id,
        merchant_location_id,
        status,
        types,
    } = super::sql::named_of(r)?;
    Ok(Current {
        seq,
        location_id,
        merchant_location_id,
        status,
        types,
        latitude: r.try_get(5)?,
        longitude: r.try_get(6)?,
        version: r.try_get(7)?,
        quarantined_by: r.try_get(8)?,
        approved: r.try_get(9)?,
        body: r.try_get(10)?,
    })
}

/// Writes what a change decided, in one statement.
pub(super) async fn write_changes(tx: &impl GenericClient, writes: &[Write], now: i64) -> Result<(), StoreError> {
    if writes.is_empty() {
        return Ok(());
    }
    let seqs: Vec<i64> = writes.iter().map(|w| w.seq).collect();
    let statuses: Vec<&str> = writes.iter().map(|w| w.status.as_str()).collect();
    let by: Vec<Option<&str>> = writes.iter().map(|w| w.quarantined_by.as_deref()).collect();
    let versions: Vec<i64> = writes.iter().map(|w| w.version).collect();
    let approved: Vec<bool> = writes.iter().map(|w| w.approved).collect();
    let bodies: Vec<Option<&str>> = writes
        .iter()
        .map(|w| w.content.as_ref().map(|c| c.body.as_str()))
        .collect();
    let lats: Vec<Option<f64>> = writes.iter().map(|w| w.content.as_ref().map(|c| c.latitude)).collect();
    let lons: Vec<Option<f64>> = writes.iter().map(|w| w.content.as_ref().map(|c| c.longitude)).collect();
    fn key(w: &Write) -> Option<&SearchKey> {
        w.content.as_ref().map(|c| &c.search)
    }
    let cells: Vec<Option<i64>> = writes.iter().map(|w| key(w).map(|k| k.cell)).collect();
    let flags: Vec<Option<i64>> = writes.iter().map(|w| key(w).map(|k| k.flags)).collect();
    let fit = |n: usize| {
        writes
            .iter()
            .map(|w| key(w).map(|k| k.fit[n]))
            .collect::<Vec<Option<f64>>>()
    };
    let (fit_a, fit_b, fit_c, fit_w) = (fit(0), fit(1), fit(2), fit(3));
    let hours: Vec<Option<&[u8]>> = writes.iter().map(|w| key(w).map(|k| k.hours.as_slice())).collect();
    let texts: Vec<Option<&str>> = writes
        .iter()
        .map(|w| w.content.as_ref().map(|c| c.text.as_str()))
        .collect();
    execute(
        tx,
        "UPDATE locations l SET status = u.s, quarantined_by = u.q, version = u.v, approved = u.a, updated_at = $1, \
         body = COALESCE(u.b, l.body), latitude = COALESCE(u.la, l.latitude), \
         longitude = COALESCE(u.lo, l.longitude), cell = COALESCE(u.c, l.cell), flags = COALESCE(u.f, l.flags), fit_a = COALESCE(u.fa, l.fit_a), \
         fit_b = COALESCE(u.fb, l.fit_b), fit_c = COALESCE(u.fc, l.fit_c), fit_w = COALESCE(u.fw, l.fit_w), \
         hours = COALESCE(u.h, l.hours), search_text = COALESCE(u.st, l.search_text) \
         FROM UNNEST($2::int8[], $3::text[], $4::text[], $5::int8[], $6::bool[], $7::text[], $8::float8[], \
         $9::float8[], $10::int8[], $11::int8[], $12::float8[], $13::float8[], $14::float8[], \
         $15::float8[], $16::bytea[], $17::text[]) AS u(seq, s, q, v, a, b, la, lo, c, f, fa, fb, fc, fw, h, st) \
         WHERE l.seq = u.seq",
        &[
            &now, &seqs, &statuses, &by, &versions, &approved, &bodies, &lats, &lons, &cells, &flags, &fit_a,
            &fit_b, &fit_c, &fit_w, &hours, &texts,
        ],
    )
    .await?;
    Ok(())
}

pub(super) async fn change_in_tx(
    tx: &impl GenericClient,
    merchant_pk: i64,
    plan: ChangePlan,
) -> Result<Written<Decision>, StoreError> {
    let (by_id, by_merchant_id) = plan.lookups();
    // A location named both ways is read once.
    let targets = query(
        tx,
        &format!(
            "({}) UNION ({})",
            by_names(CURRENT, "location_id", "$2"),
            by_names(CURRENT, "merchant_location_id", "$3")
        ),
        &[&merchant_pk, &by_id, &by_merchant_id],
    )
    .await?
    .iter()
    .map(current_of)
    .collect::<Result<Vec<_>, _>>()?;
    let target_ids: Vec<&str> = targets.iter().map(|t| t.location_id.as_str()).collect();
    let dependents = query(
        tx,
        &format!(
            "SELECT {CURRENT} FROM locations WHERE merchant_pk = $1 AND quarantined_by = ANY($2) \
                 AND status = $3 AND NOT (location_id = ANY($2))"
        ),
        &[&merchant_pk, &target_ids, &Status::Quarantine.as_str()],
    )
    .await?
    .iter()
    .map(current_of)
    .collect::<Result<Vec<_>, _>>()?;
    let probes: Vec<Vec<(i64, i64)>> = plan
        .probes(&targets, &dependents)
        .into_iter()
        .map(|(latitude, longitude)| cells::neighbour_ranges(latitude, longitude))
        .collect();
    let nearby = neighbours_of(tx, merchant_pk, &probes)
        .await?
        .into_iter()
        .flatten()
        .collect();
    let decision = plan.decide(targets, dependents, nearby);
    let now = now_ms();
    write_changes(tx, &decision.writes, now).await?;
    count(tx, merchant_pk, &decision.counts).await?;
    Ok(Written {
        changes: decision.changes(now),
        value: decision,
    })
}

pub(super) async fn quarantined_locations(pool: &Pool) -> Result<Vec<QuarantinedLocation>, StoreError> {
    let client = pool.get().await?;
    let rows = client
        .query(
            "SELECT l.location_id, m.id, l.merchant_location_id, l.body, l.quarantined_by \
             FROM locations l JOIN merchants m ON m.pk = l.merchant_pk WHERE l.status = $1 ORDER BY l.seq",
            &[&Status::Quarantine.as_str()],
        )
        .await?;
    rows.iter()
        .map(|r| {
            Ok(QuarantinedLocation {
                location_id: r.try_get(0)?,
                merchant_id: r.try_get(1)?,
                merchant_location_id: r.try_get(2)?,
                name: change::stored_name(r.try_get(3)?),
                neighbour_location_id: r.try_get(4)?,
            })
        })
        .collect()
}

/// The merchant of a location (to queue an operator's approval in its group); `None`: no such
/// location.
pub(super) async fn merchant_of(pool: &Pool, location_id: &str) -> Result<Option<i64>, StoreError> {
    let client = pool.get().await?;
    Ok(client
        .query_opt(
            "SELECT merchant_pk FROM locations WHERE location_id = $1",
            &[&location_id],
        )
        .await?
        .map(|r| r.try_get(0))
        .transpose()?)
}

/// An operator's approval, in the merchant's group (its event appended by the group, as every
/// change's).
pub(super) async fn approve_in_tx(
    tx: &impl GenericClient,
    merchant_pk: i64,
    location_id: &str,
) -> Result<Written<Approval>, StoreError> {
    let Some(row) = tx
        .query_opt(
            &format!("SELECT {CURRENT} FROM locations WHERE location_id = $1 AND merchant_pk = $2"),
            &[&location_id, &merchant_pk],
        )
        .await?
    else {
        return Ok(Written {
            value: Approval::NotFound,
            changes: Vec::new(),
        });
    };
    let location = current_of(&row)?;
    let Some(write) = change::approval(&location) else {
        return Ok(Written {
            value: Approval::NotQuarantined(location.status),
            changes: Vec::new(),
        });
    };
    let now = now_ms();
    write_changes(tx, std::slice::from_ref(&write), now).await?;
    count(
        tx,
        merchant_pk,
        &[(location.status, location.types, -1), (write.status, location.types, 1)],
    )
    .await?;
    Ok(Written {
        value: Approval::Approved { version: write.version },
        changes: vec![write.change(now)],
    })
}

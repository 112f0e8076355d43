//! One batch of an import inside an open transaction on SQLite: the store's create and change as
//! the batch's steps, the rows' outcomes and the import's progress stored, the claim's fence. The
//! writer's import jobs and a dry run's scratch database both use it.

use std::sync::atomic::AtomicU64;

use futures_util::FutureExt;
use rusqlite::{Connection, OptionalExtension, Row as SqlRow, params};

use super::{changes, locations};
use crate::client::outcome::{Known, RowReport, Stored};
use crate::domain::event::Change;
use crate::domain::location::Persist;
use crate::domain::location::batch::{NewLocation, Outcome};
use crate::domain::location::change::{ChangePlan, Decision};
use crate::store::api::StoreError;
use crate::store::group::Written;
use crate::store::import_apply::{RowBatch, TxSteps, apply_rows, stored_rows};
use crate::store::import_sql as sql;

const M: char = '?';

/// The store's create and change in the writer's open transaction.
struct Steps<'c> {
    tx: &'c Connection,
    merchant_pk: i64,
    failpoint: &'c AtomicU64,
}

impl TxSteps for Steps<'_> {
    async fn stored(&mut self, mlids: &[&str], ids: &[&str]) -> Result<Known, StoreError> {
        let mut known = Known::default();
        let mut by_name = self.tx.prepare_cached(
            "SELECT location_id, version, status FROM locations WHERE merchant_pk = ?1 AND merchant_location_id = ?2",
        )?;
        let stored = |r: &SqlRow<'_>| {
            Ok(Stored {
                location_id: r.get(0)?,
                version: r.get::<_, i64>(1)?.try_into().unwrap_or(0),
                archived: r.get_ref(2)?.as_str()? == "ARCHIVED",
            })
        };
        for mlid in mlids {
            if let Some(s) = by_name.query_row(params![self.merchant_pk, mlid], stored).optional()? {
                known.by_mlid.insert((*mlid).to_owned(), s);
            }
        }
        let mut by_id = self.tx.prepare_cached(
            "SELECT location_id, version, status FROM locations WHERE merchant_pk = ?1 AND location_id = ?2",
        )?;
        for id in ids {
            if let Some(s) = by_id.query_row(params![self.merchant_pk, id], stored).optional()? {
                known.by_id.insert((*id).to_owned(), s);
            }
        }
        Ok(known)
    }

    async fn create(&mut self, items: Vec<NewLocation>, _rows: &[usize]) -> Result<Written<Vec<Outcome>>, StoreError> {
        locations::create_in_tx(self.tx, self.merchant_pk, &items, self.failpoint)
    }

    async fn change(&mut self, plan: ChangePlan) -> Result<Written<Decision>, StoreError> {
        changes::change_in_tx(self.tx, self.merchant_pk, plan)
    }
}

/// Applies `rows` in the open transaction `tx`. Every step on this connection is done when it
/// returns, so the batch's future is ready at its first poll.
pub(super) fn apply_now(
    tx: &Connection,
    claim: (i64, &AtomicU64),
    rows: RowBatch,
    update: bool,
    persist: Persist,
) -> Result<(Vec<RowReport>, Vec<Change>), StoreError> {
    let mut steps = Steps {
        tx,
        merchant_pk: claim.0,
        failpoint: claim.1,
    };
    apply_rows(&mut steps, rows, update, persist)
        .now_or_never()
        .unwrap_or_else(|| Err(StoreError::Backend("a batch's write waited on this connection".into())))
}

/// Stores the reports of the rows from `first` on, and the import's progress; `for_archive`: the
/// import archives the locations its rows do not name.
pub(super) fn save(
    tx: &Connection,
    (import_pk, for_archive): (i64, bool),
    first: i64,
    reports: &[RowReport],
) -> Result<Vec<String>, StoreError> {
    let (rows, counts) = stored_rows(reports);
    let mut insert = tx.prepare_cached(&sql::insert_row(M))?;
    for (k, r) in rows.iter().enumerate() {
        insert.execute(params![
            import_pk,
            first + k as i64,
            r.row,
            r.merchant_location_id.as_deref(),
            r.location_id.as_deref(),
            r.outcome,
            r.errors,
            for_archive
        ])?;
    }
    tx.prepare_cached(&sql::progress(M))?.execute(params![
        import_pk,
        rows.len() as i64,
        counts.created,
        counts.updated,
        counts.unchanged,
        counts.quarantined,
        counts.failed
    ])?;
    Ok(rows.iter().map(|r| r.outcome.to_owned()).collect())
}

pub(super) fn fence(tx: &Connection, claim: &(i64, String), first: i64) -> Result<bool, StoreError> {
    Ok(tx
        .prepare_cached(&sql::fence(M))?
        .execute(params![claim.0, claim.1, first])?
        == 1)
}

//! A dry run on SQLite, beside the writer rather than on it: the merchant's locations as they are
//! now are copied into a scratch database of the same schema (one read transaction of the live
//! file: a consistent snapshot), and the file's batches are applied there one after another, each
//! row seeing the rows before it, exactly as a real run would apply them. Nothing is written to the
//! live file but the rows' outcomes and the import's progress, a batch at a time through the
//! writer, so a long dry run never holds the writer that every merchant's writes wait for.

use std::path::Path;
use std::sync::atomic::AtomicU64;

use rusqlite::{Connection, params};
use tokio::sync::mpsc;

use super::import_batch::{apply_now, fence, save};
use super::schema::{configure, migrate};
use super::writer::{Jobs, write};
use crate::domain::location::Persist;
use crate::store::api::StoreError;
use crate::store::import_api::{Applied, Claim, RowBatch};
use crate::store::import_sql as sql;

/// The merchant's rows a scratch database needs: the merchant, its locations and their counts.
const COPIED: [&str; 3] = [
    "INSERT INTO main.merchants SELECT * FROM live.merchants WHERE pk = ?1",
    "INSERT INTO main.locations SELECT * FROM live.locations WHERE merchant_pk = ?1",
    "INSERT INTO main.location_counts SELECT * FROM live.location_counts WHERE merchant_pk = ?1",
];

/// A scratch database in `dir` holding the merchant's locations of the file at `live` now.
fn scratch(dir: &Path, live: &Path, merchant_pk: i64) -> Result<Connection, StoreError> {
    let mut conn = Connection::open(dir.join("dry-run.db"))?;
    configure(&conn)?;
    // Thrown away at the end: nothing here needs to survive a crash. It holds one merchant's rows
    // and the import's rows without their import, so its keys are not checked.
    conn.execute_batch(
        "PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; PRAGMA temp_store = MEMORY; PRAGMA foreign_keys = OFF",
    )?;
    migrate(&mut conn)?;
    let live = format!("file:{}?mode=ro", live.display());
    conn.execute("ATTACH DATABASE ?1 AS live", [live])?;
    let tx = conn.transaction()?;
    for copy in COPIED {
        tx.execute(copy, [merchant_pk])?;
    }
    tx.commit()?;
    conn.execute_batch("DETACH DATABASE live")?;
    Ok(conn)
}

/// Runs the dry run of `claim` over the batches from `rows`; on the blocking thread it is given.
pub(super) fn run(
    live: &Path,
    jobs: &Jobs,
    claim: &Claim,
    mut rows: mpsc::Receiver<RowBatch>,
    handle: &tokio::runtime::Handle,
) -> Result<Applied, StoreError> {
    let dir = tempfile::tempdir().map_err(StoreError::backend)?;
    let conn = scratch(dir.path(), live, claim.merchant_pk)?;
    let no_failpoint = AtomicU64::new(0);
    let held = (claim.import_pk, claim.owner.clone());
    let for_archive = claim.options.archive_missing;
    let mut words = Vec::new();
    while let Some(batch) = rows.blocking_recv() {
        let (reports, _) = apply_now(
            &conn,
            (claim.merchant_pk, &no_failpoint),
            batch,
            claim.options.update,
            Persist::ValidateOnly,
        )?;
        // The scratch database keeps the rows too: `archive_missing` counts what they do not name.
        save(&conn, (claim.import_pk, for_archive), words.len() as i64, &reports)?;
        let (first, held) = (words.len() as i64, held.clone());
        let stored = handle.block_on(write(jobs, move |tx| {
            if !fence(tx, &held, first)? {
                return Ok(None);
            }
            save(tx, (held.0, for_archive), first, &reports).map(Some)
        }))?;
        match stored {
            Some(done) => words.extend(done),
            None => return Ok(Applied::Lost),
        }
    }
    if claim.options.archive_missing {
        let would: i64 = conn
            .prepare(&sql::unnamed_count('?'))?
            .query_row(params![claim.merchant_pk, 0, claim.import_pk], |r| r.get(0))?;
        let import_pk = claim.import_pk;
        handle.block_on(write(jobs, move |tx| {
            tx.prepare_cached(&sql::archive_progress('?'))?
                .execute(params![import_pk, would, 0])?;
            Ok(())
        }))?;
    }
    Ok(Applied::Done(words))
}

//! Opening the write connection, and the migrations (SQL files, then steps written in Rust).

use std::path::Path;
use std::time::Duration;

use rusqlite::config::DbConfig;
use rusqlite::{Connection, TransactionBehavior, params};

use super::locations::neighbours;
use crate::domain::geo;
use crate::domain::location::{Status, TypeSet};
use crate::store::api::StoreError;
use crate::store::migrate;

/// How long a connection waits for another process's write to finish.
pub(super) const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// The writer's own auto-checkpoint, as a WAL size: a backstop only, should the checkpoint thread
/// (`checkpoint`) fall behind.
const BACKSTOP_BYTES: i64 = 64 * 1024 * 1024;

/// The page size of a new database file: 16 KiB, not SQLite's 4 KiB. A location's row is 1–3 KB:
/// a 4 KiB page holds one or two, so a create's 200 rows dirty some 150 table pages besides the
/// indexes', each a WAL frame and a checkpoint copy; 16 KiB pages write far fewer (BENCHMARKS.md
/// has the figures). A file keeps the page size it was created with: an existing database is not
/// converted.
pub(super) const PAGE_SIZE: i64 = 16 * 1024;

const MIGRATIONS: &[&str] = &[
    include_str!("../../../migrations/sqlite/0001_init.sql"),
    include_str!("../../../migrations/sqlite/0002_categories.sql"),
    include_str!("../../../migrations/sqlite/0003_location_records.sql"),
    include_str!("../../../migrations/sqlite/0004_search.sql"),
    include_str!("../../../migrations/sqlite/0005_key_scope.sql"),
    include_str!("../../../migrations/sqlite/0006_drop_band.sql"),
    include_str!("../../../migrations/sqlite/0007_events.sql"),
    include_str!("../../../migrations/sqlite/0008_compact_events.sql"),
    include_str!("../../../migrations/sqlite/0009_claim_owner.sql"),
    include_str!("../../../migrations/sqlite/0010_redelivery.sql"),
    include_str!("../../../migrations/sqlite/0011_resent_through.sql"),
    include_str!("../../../migrations/sqlite/0012_imports.sql"),
    include_str!("../../../migrations/sqlite/0013_key_origins.sql"),
    include_str!("../../../migrations/sqlite/0014_location_text.sql"),
    include_str!("../../../migrations/sqlite/0015_import_files.sql"),
    include_str!("../../../migrations/sqlite/0016_import_rows_lighter.sql"),
    include_str!("../../../migrations/sqlite/0017_deliveries_due_by_endpoint.sql"),
];
/// The migration after which `fill_search` runs.
const SEARCH_MIGRATION: i64 = 4;
/// The migration after which every location is written into the text index.
const TEXT_MIGRATION: i64 = 14;

/// What every connection, writer or reader, is opened with.
///
/// The query planner's stability guarantee keeps a prepared statement's plan whatever values are
/// bound: without it SQLite marks statements whose plan could depend on a bound value (a range
/// on `seq`, an `IN` list) for re-preparing, and the statement cache's clearing of the bindings
/// then re-prepares them on every use (a large share of a location page's CPU). Our plans come from the
/// indexes alone.
pub(super) fn configure(conn: &Connection) -> Result<(), StoreError> {
    conn.busy_timeout(BUSY_TIMEOUT)?;
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)?;
    Ok(())
}

pub(super) fn open_writer(path: &Path) -> Result<Connection, StoreError> {
    let mut conn = Connection::open(path)?;
    configure(&conn)?;
    // Before the file's first write; a no-op on an existing database.
    conn.pragma_update(None, "page_size", PAGE_SIZE)?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "synchronous", "FULL")?;
    conn.pragma_update(None, "foreign_keys", "ON")?;
    // A group of create requests touches a few MiB of pages: with SQLite's default 2 MiB cache it
    // spills them to the WAL in the middle of the transaction. The savepoint of each request
    // journals the pages it changes; keep that journal in memory rather than in a temp file.
    conn.pragma_update(None, "cache_size", -12 * 1024)?;
    conn.pragma_update(None, "temp_store", "MEMORY")?;
    // Checkpoints run on a thread of their own (see `checkpoint`).
    let page_size: i64 = conn.pragma_query_value(None, "page_size", |r| r.get(0))?;
    conn.pragma_update(None, "wal_autocheckpoint", BACKSTOP_BYTES / page_size.max(512))?;
    migrate(&mut conn)?;
    // One server a file: any claim on a webhook delivery is a process's that is gone, and its
    // deliveries are attempted again now rather than when the claims would expire.
    conn.execute_batch(
        "UPDATE deliveries SET claim_until = 0 WHERE claim_until > 0; \
         UPDATE webhooks SET claim_until = 0, claimed_through = delivered_through WHERE claim_until > 0",
    )?;
    Ok(conn)
}

/// Applies the embedded migrations not yet applied, tracked in `PRAGMA user_version`.
pub(super) fn migrate(conn: &mut Connection) -> Result<(), StoreError> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let applied: i64 = tx.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    crate::store::migrate::refuse_newer(applied, MIGRATIONS.len())?;
    let mut name_neighbours = false;
    for (version, sql) in (1_i64..).zip(MIGRATIONS).skip(usize::try_from(applied).unwrap_or(0)) {
        tx.execute_batch(sql)?;
        if version == migrate::RECORD_MIGRATION as i64 {
            upgrade_records(&tx)?;
            name_neighbours = true;
        }
        if version == SEARCH_MIGRATION {
            fill_search(&tx)?;
        }
        if version == TEXT_MIGRATION {
            super::text::fill(&tx)?;
        }
        tx.pragma_update(None, "user_version", version)?;
    }
    // Migration 3's second step searches neighbours, on the index migration 4 made: it runs
    // once every migration is applied, in the same transaction.
    if name_neighbours {
        name_quarantining_neighbours(&tx)?;
    }
    tx.commit()?;
    Ok(())
}

/// Hands every location's `seq` and stored body to `each`, a chunk of rows at a time, in `seq`
/// order (the migrations' steps written in Rust).
fn each_body(tx: &Connection, mut each: impl FnMut(i64, String) -> Result<(), StoreError>) -> Result<(), StoreError> {
    let mut after = 0i64;
    loop {
        let rows: Vec<(i64, String)> = tx
            .prepare("SELECT seq, body FROM locations WHERE seq > ?1 ORDER BY seq LIMIT ?2")?
            .query_map(params![after, migrate::UPGRADE_CHUNK], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<Result<_, _>>()?;
        let Some(&(last, _)) = rows.last() else {
            return Ok(());
        };
        after = last;
        for (seq, body) in rows {
            each(seq, body)?;
        }
    }
}

/// Migration 4's step: the search index's columns of every location, from its record.
fn fill_search(tx: &Connection) -> Result<(), StoreError> {
    each_body(tx, |seq, body| match migrate::search_key(&body) {
        Some(key) => super::locations::write_search_key(tx, seq, &key),
        None => Ok(()),
    })
}

/// Migration 3's step: every body rewritten to the record's content.
fn upgrade_records(tx: &Connection) -> Result<(), StoreError> {
    each_body(tx, |seq, body| {
        if let Some(body) = migrate::upgraded_body(&body) {
            tx.execute("UPDATE locations SET body = ?2 WHERE seq = ?1", params![seq, body])?;
        }
        Ok(())
    })
}

/// Migration 3's second step: the neighbour named of every `QUARANTINE` location stored before
/// locations named it.
fn name_quarantining_neighbours(tx: &Connection) -> Result<(), StoreError> {
    let quarantined: Vec<(i64, i64, f64, f64, i64)> = tx
        .prepare(
            "SELECT seq, merchant_pk, latitude, longitude, types FROM locations \
             WHERE status = ?1 AND quarantined_by IS NULL",
        )?
        .query_map([Status::Quarantine.as_str()], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
        })?
        .collect::<Result<_, _>>()?;
    for (seq, merchant_pk, latitude, longitude, types) in quarantined {
        let candidates = neighbours(tx, merchant_pk, latitude, longitude)?;
        let by = geo::quarantining_neighbour(seq, latitude, longitude, TypeSet::from_bits(types), candidates);
        if let Some(by) = by {
            tx.execute(
                "UPDATE locations SET quarantined_by = ?2 WHERE seq = ?1",
                params![seq, by.location_id],
            )?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::schema;
    use super::*;

    #[test]
    fn a_new_database_has_large_pages_and_an_existing_one_keeps_its_own() {
        let page_size = |db: &Path| -> i64 {
            let conn = Connection::open(db).unwrap();
            conn.pragma_query_value(None, "page_size", |r| r.get(0)).unwrap()
        };
        let dir = tempfile::tempdir().unwrap();
        let new = dir.path().join("new.db");
        drop(schema::open_writer(&new).unwrap());
        assert_eq!(page_size(&new), schema::PAGE_SIZE);

        let old = dir.path().join("old.db");
        let conn = Connection::open(&old).unwrap();
        conn.execute_batch("PRAGMA page_size = 4096; CREATE TABLE earlier (x INTEGER);")
            .unwrap();
        drop(conn);
        let conn = schema::open_writer(&old).unwrap();
        let autocheckpoint: i64 = conn
            .pragma_query_value(None, "wal_autocheckpoint", |r| r.get(0))
            .unwrap();
        drop(conn);
        assert_eq!(page_size(&old), 4096);
        // The backstop is a WAL size, whatever the page size.
        assert_eq!(autocheckpoint, 16 * 1024);
    }
}

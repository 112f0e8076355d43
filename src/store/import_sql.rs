//! The SQL of imports and how their rows are read, written once for both engines (`mark`: `?` for
//! SQLite, `$` for PostgreSQL, before each parameter's number). What only one engine needs
//! (PostgreSQL's row locks, its array parameters) is in that engine's module.

use super::api::stored_word;
use super::error::StoreError;
use super::event_rows::Columns;
use super::import_api::Claim;
use super::sql_text::marked;
use crate::domain::import::{Counts, Import, ImportError, ImportOptions, ImportRow, ImportStatus};

/// [`IMPORT_COLUMNS`] read from column `at` on.
pub fn read_import<R: Columns>(r: &R, at: usize) -> Result<Import, StoreError>
where
    StoreError: From<R::Error>,
{
    let code = r.opt_text(at + 15)?;
    let message = r.opt_text(at + 16)?;
    Ok(Import {
        import_id: r.text(at)?,
        file_name: r.text(at + 1)?,
        status: stored_word(&r.text(at + 2)?, "import status", ImportStatus::from_wire)?,
        options: ImportOptions {
            update: r.flag(at + 3)?,
            archive_missing: r.flag(at + 4)?,
            dry_run: r.flag(at + 5)?,
            sheet: r.opt_text(at + 6)?,
        },
        rows_total: r.opt_int(at + 7)?,
        rows_done: r.int(at + 8)?,
        counts: Counts {
            created: r.int(at + 9)?,
            updated: r.int(at + 10)?,
            unchanged: r.int(at + 11)?,
            quarantined: r.int(at + 12)?,
            archived: r.int(at + 13)?,
            failed: r.int(at + 14)?,
        },
        error: code.map(|code| ImportError {
            code,
            message: message.unwrap_or_default(),
        }),
        created_at_ms: r.int(at + 17)?,
        started_at_ms: r.opt_int(at + 18)?,
        finished_at_ms: r.opt_int(at + 19)?,
    })
}

/// [`CLAIM_COLUMNS`], claimed by `owner`.
pub fn read_claim<R: Columns>(r: &R, owner: &str) -> Result<Claim, StoreError>
where
    StoreError: From<R::Error>,
{
    Ok(Claim {
        import_pk: r.int(0)?,
        merchant_pk: r.int(1)?,
        import_id: r.text(2)?,
        file_name: r.text(3)?,
        content: r.bytes(4)?,
        options: ImportOptions {
            sheet: r.opt_text(5)?,
            update: r.flag(6)?,
            archive_missing: r.flag(7)?,
            dry_run: r.flag(8)?,
        },
        rows_total: r.opt_int(9)?,
        rows_done: r.int(10)?,
        owner: owner.to_owned(),
    })
}

/// A row of [`rows`].
pub fn read_row<R: Columns>(r: &R) -> Result<ImportRow, StoreError>
where
    StoreError: From<R::Error>,
{
    Ok(ImportRow {
        ordinal: r.int(0)?,
        row: r.int(1)?,
        merchant_location_id: r.opt_text(2)?,
        location_id: r.opt_text(3)?,
        outcome: r.text(4)?,
        errors: r.text(5)?,
    })
}

/// An import's columns as the merchant reads it, in `Import`'s order.
pub const IMPORT_COLUMNS: &str = "import_id, file_name, status, do_update, archive_missing, dry_run, sheet, rows_total, \
     rows_done, created, updated, unchanged, quarantined, archived, failed, error_code, error_message, created_at, \
     started_at, finished_at";

/// A claimed import's columns, in `Claim`'s order (its file from `import_files`).
pub const CLAIM_COLUMNS: &str = "import_pk, merchant_pk, import_id, file_name, \
     (SELECT f.content FROM import_files f WHERE f.import_pk = imports.import_pk), sheet, do_update, archive_missing, \
     dry_run, rows_total, rows_done";

/// Stores a new import (parameters: id, merchant, file name, sheet, update, archive_missing,
/// dry_run, created_at, the most active imports) unless the merchant has that many queued or
/// running. Its file goes in with [`insert_file`], in the same transaction.
pub fn insert(mark: char) -> String {
    marked(
        "INSERT INTO imports (import_id, merchant_pk, file_name, sheet, do_update, archive_missing, dry_run, \
         status, created_at) SELECT $1, $2, $3, $4, $5, $6, $7, 'QUEUED', $8 \
         WHERE (SELECT count(*) FROM imports WHERE merchant_pk = $2 AND status IN ('QUEUED', 'RUNNING')) < $9",
        mark,
    )
}

/// The file (2) of the import with the id (1). A row of its own: the import's row is rewritten by
/// every batch's progress, and would otherwise carry the whole file into each batch's write.
pub fn insert_file(mark: char) -> String {
    marked(
        "INSERT INTO import_files (import_pk, content) SELECT import_pk, $2 FROM imports WHERE import_id = $1",
        mark,
    )
}

/// The file of the import (1): dropped when the import ends.
pub fn drop_file(mark: char) -> String {
    marked("DELETE FROM import_files WHERE import_pk = $1", mark)
}

/// The merchant's (1) import with the id (2).
pub fn get(mark: char) -> String {
    marked(
        &format!("SELECT {IMPORT_COLUMNS} FROM imports WHERE merchant_pk = $1 AND import_id = $2"),
        mark,
    )
}

/// The merchant's (1) imports before the key (2), newest first, at most (3).
pub fn list(mark: char) -> String {
    marked(
        &format!(
            "SELECT import_pk, {IMPORT_COLUMNS} FROM imports WHERE merchant_pk = $1 AND import_pk < $2 \
             ORDER BY import_pk DESC LIMIT $3"
        ),
        mark,
    )
}

/// The key of the merchant's (1) import with the id (2).
pub fn key(mark: char) -> String {
    marked(
        "SELECT import_pk FROM imports WHERE merchant_pk = $1 AND import_id = $2",
        mark,
    )
}

/// The import's (1) rows after the ordinal (2), at most (3); only the failed ones when `failed`.
pub fn rows(mark: char, failed: bool) -> String {
    marked(
        &format!(
            "SELECT ordinal, file_row, merchant_location_id, location_id, outcome, errors FROM import_rows \
             WHERE import_pk = $1 AND ordinal > $2{} ORDER BY ordinal LIMIT $3",
            if failed { " AND outcome = 'failed'" } else { "" }
        ),
        mark,
    )
}

/// Claims the oldest import to run for the owner (1) until (3), at (2); `lock` is what the
/// engine adds to the choice so that two instances never choose the same one.
pub fn claim(mark: char, lock: &str) -> String {
    marked(
        &format!(
            "UPDATE imports SET owner = $1, claim_until = $3, status = 'RUNNING', started_at = COALESCE(started_at, $2) \
             WHERE claim_until < $2 AND import_pk = (SELECT import_pk FROM imports \
             WHERE status IN ('QUEUED', 'RUNNING') AND claim_until < $2 ORDER BY import_pk LIMIT 1{lock}) \
             RETURNING {CLAIM_COLUMNS}"
        ),
        mark,
    )
}

/// Whether an import is waiting for a runner at (1): the question a claim asks first.
pub fn claimable(mark: char) -> String {
    marked(
        "SELECT 1 FROM imports WHERE status IN ('QUEUED', 'RUNNING') AND claim_until < $1 LIMIT 1",
        mark,
    )
}

/// The condition that the owner (2) still holds the running import (1).
const HELD: &str = "import_pk = $1 AND owner = $2 AND status = 'RUNNING'";

/// Extends the claim of the owner (2) on the import (1) until (3).
pub fn extend(mark: char) -> String {
    marked(&format!("UPDATE imports SET claim_until = $3 WHERE {HELD}"), mark)
}

/// The import (1), held by (2), has (3) rows.
pub fn set_total(mark: char) -> String {
    marked(&format!("UPDATE imports SET rows_total = $3 WHERE {HELD}"), mark)
}

/// The batch's fence: the import (1) is held by (2) and has (3) rows done (the batch starts
/// there). Locks the import's row until the transaction ends, on an engine with row locks.
pub fn fence(mark: char) -> String {
    marked(
        &format!("UPDATE imports SET rows_done = rows_done WHERE {HELD} AND rows_done = $3"),
        mark,
    )
}

/// The batch's progress on the import (1): rows (2), created (3), updated (4), unchanged (5),
/// quarantined (6), failed (7).
pub fn progress(mark: char) -> String {
    marked(
        "UPDATE imports SET rows_done = rows_done + $2, created = created + $3, updated = updated + $4, \
         unchanged = unchanged + $5, quarantined = quarantined + $6, failed = failed + $7 WHERE import_pk = $1",
        mark,
    )
}

/// One row's outcome (import, ordinal, row, merchant_location_id, location_id, outcome, errors,
/// whether the import archives what its file does not name).
pub fn insert_row(mark: char) -> String {
    marked(
        "INSERT INTO import_rows (import_pk, ordinal, file_row, merchant_location_id, location_id, outcome, errors, \
         for_archive) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
        mark,
    )
}

/// `archive_missing`'s fence: the import (1) is held by (2); where it stands (the last
/// location it looked at). Locks the import's row until the transaction ends, on an engine with
/// row locks.
pub fn archive_fence(mark: char) -> String {
    marked(
        &format!("UPDATE imports SET archive_after = archive_after WHERE {HELD} RETURNING archive_after"),
        mark,
    )
}

/// The condition that a location `l` is named by no row of the import (3).
/// (An import that archives writes its rows `for_archive`, which its indexes by name hold.)
const UNNAMED: &str = "NOT EXISTS (SELECT 1 FROM import_rows r WHERE r.import_pk = $3 AND r.for_archive \
     AND r.location_id = l.location_id) \
     AND (l.merchant_location_id IS NULL OR NOT EXISTS (SELECT 1 FROM import_rows r WHERE r.import_pk = $3 \
     AND r.for_archive AND r.merchant_location_id = l.merchant_location_id))";

/// The merchant's (1) next locations after the seq (2) that are not archived, at most (4), each
/// with whether the import (3) named it.
pub fn archive_candidates(mark: char) -> String {
    marked(
        &format!(
            "SELECT l.seq, l.location_id, {UNNAMED} FROM locations l \
             WHERE l.merchant_pk = $1 AND l.seq > $2 AND l.status <> 'ARCHIVED' ORDER BY l.seq LIMIT $4"
        ),
        mark,
    )
}

/// How many of the merchant's (1) locations after the seq (2) that are not archived the import
/// (3) did not name (a dry run's count).
pub fn unnamed_count(mark: char) -> String {
    marked(
        &format!(
            "SELECT count(*) FROM locations l WHERE l.merchant_pk = $1 AND l.seq > $2 AND l.status <> 'ARCHIVED' \
             AND {UNNAMED}"
        ),
        mark,
    )
}

/// `archive_missing`'s step on the import (1): (2) more archived, looked at up to (3).
pub fn archive_progress(mark: char) -> String {
    marked(
        "UPDATE imports SET archived = archived + $2, archive_after = $3 WHERE import_pk = $1",
        mark,
    )
}

/// Ends the import (1) held by (2): status (3), error code (4) and message (5), at (6). Its file
/// is dropped with it ([`drop_file`]).
pub fn finish(mark: char) -> String {
    marked(
        &format!(
            "UPDATE imports SET status = $3, error_code = $4, error_message = $5, finished_at = $6, owner = NULL \
             WHERE {HELD}"
        ),
        mark,
    )
}

/// An import that ended before (1).
pub fn ended_before(mark: char) -> String {
    marked(
        "SELECT import_pk FROM imports WHERE finished_at IS NOT NULL AND finished_at < $1 LIMIT 1",
        mark,
    )
}

/// The import's (1) rows, then the import.
pub fn drop_rows(mark: char) -> String {
    marked("DELETE FROM import_rows WHERE import_pk = $1", mark)
}

pub fn drop_import(mark: char) -> String {
    marked("DELETE FROM imports WHERE import_pk = $1", mark)
}

//! A merchant's file handed to the service: what an import is, where it stands and what its rows
//! came to, and the rules about its size and count that need no storage.

use crate::wire_enum;

wire_enum! {
    /// Where an import stands.
    pub enum ImportStatus {
        Queued => "QUEUED",
        Running => "RUNNING",
        Succeeded => "SUCCEEDED",
        Failed => "FAILED",
    }
}

/// The largest file an import takes, decoded.
pub const MAX_FILE_BYTES: usize = 6 * 1024 * 1024;
/// The most rows a file may have; more end the import `FAILED` with nothing applied.
pub const MAX_ROWS: u64 = 100_000;
/// The most imports a merchant may have queued or running at once.
pub const MAX_ACTIVE: i64 = 2;
/// How long an ended import and its rows are kept.
pub const KEPT_FOR_MS: i64 = 7 * 24 * 3600 * 1000;
/// The rows applied in one transaction, at most.
pub const BATCH_ROWS: usize = 200;

/// How many rows ended each way, and how many locations `archive_missing` archived.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub created: i64,
    pub updated: i64,
    pub unchanged: i64,
    pub quarantined: i64,
    pub archived: i64,
    pub failed: i64,
}

impl Counts {
    /// Counts one more row that ended with `outcome` (the report's word).
    pub fn add(&mut self, outcome: &str) {
        match outcome {
            "created" => self.created += 1,
            "updated" => self.updated += 1,
            "unchanged" => self.unchanged += 1,
            "quarantined" => self.quarantined += 1,
            _ => self.failed += 1,
        }
    }
}

/// What the merchant asked, beside the file.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ImportOptions {
    pub update: bool,
    pub archive_missing: bool,
    pub dry_run: bool,
    /// A workbook's sheet (default: the first).
    pub sheet: Option<String>,
}

/// Why an import failed: a code and a sentence.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImportError {
    pub code: String,
    pub message: String,
}

/// An import as the merchant reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Import {
    pub import_id: String,
    pub file_name: String,
    pub status: ImportStatus,
    pub options: ImportOptions,
    pub rows_total: Option<i64>,
    pub rows_done: i64,
    pub counts: Counts,
    pub error: Option<ImportError>,
    pub created_at_ms: i64,
    pub started_at_ms: Option<i64>,
    pub finished_at_ms: Option<i64>,
}

/// One row's outcome as stored and read back: `errors` is the JSON array of its errors.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImportRow {
    pub ordinal: i64,
    pub row: i64,
    pub merchant_location_id: Option<String>,
    pub location_id: Option<String>,
    pub outcome: String,
    pub errors: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_counted_by_outcome_and_anything_else_failed() {
        let mut counts = Counts::default();
        for outcome in ["created", "created", "updated", "unchanged", "quarantined", "failed", "unknown"] {
            counts.add(outcome);
        }
        let expected = Counts {
            created: 2,
            updated: 1,
            unchanged: 1,
            quarantined: 1,
            archived: 0,
            failed: 2,
        };
        assert_eq!(counts, expected);
    }
}

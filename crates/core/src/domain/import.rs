//! A merchant's file handed to the service: what an import is, where it stands and what its rows
//! came to, and the rules about its size and count that need no storage.

use serde::Serialize;
use serde::ser::{SerializeStruct, Serializer};

use super::wire::timestamp_text;
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

impl Serialize for Counts {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut c = s.serialize_struct("Counts", 6)?;
        c.serialize_field("created", &self.created)?;
        c.serialize_field("updated", &self.updated)?;
        c.serialize_field("unchanged", &self.unchanged)?;
        c.serialize_field("quarantined", &self.quarantined)?;
        c.serialize_field("archived", &self.archived)?;
        c.serialize_field("failed", &self.failed)?;
        c.end()
    }
}

impl Serialize for ImportError {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut e = s.serialize_struct("ImportError", 2)?;
        e.serialize_field("code", &self.code)?;
        e.serialize_field("message", &self.message)?;
        e.end()
    }
}

/// A time as the API writes it, or `null`.
fn time(ms: Option<i64>) -> Option<String> {
    ms.map(timestamp_text)
}

impl Serialize for Import {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut i = s.serialize_struct("Import", 13)?;
        i.serialize_field("import_id", &self.import_id)?;
        i.serialize_field("file_name", &self.file_name)?;
        i.serialize_field("status", &self.status)?;
        i.serialize_field("dry_run", &self.options.dry_run)?;
        i.serialize_field("update", &self.options.update)?;
        i.serialize_field("archive_missing", &self.options.archive_missing)?;
        i.serialize_field("rows_total", &self.rows_total)?;
        i.serialize_field("rows_done", &self.rows_done)?;
        i.serialize_field("counts", &self.counts)?;
        i.serialize_field("error", &self.error)?;
        i.serialize_field("created_at", &time(Some(self.created_at_ms)))?;
        i.serialize_field("started_at", &time(self.started_at_ms))?;
        i.serialize_field("finished_at", &time(self.finished_at_ms))?;
        i.end()
    }
}

impl Serialize for ImportRow {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let errors: Option<&serde_json::value::RawValue> = serde_json::from_str(&self.errors).ok();
        let mut r = s.serialize_struct("ImportRow", 5)?;
        r.serialize_field("row", &self.row)?;
        r.serialize_field("merchant_location_id", &self.merchant_location_id)?;
        r.serialize_field("location_id", &self.location_id)?;
        r.serialize_field("outcome", &self.outcome)?;
        r.serialize_field("errors", &errors)?;
        r.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_counted_by_outcome_and_anything_else_failed() {
        let mut counts = Counts::default();
        for outcome in [
            "created",
            "created",
            "updated",
            "unchanged",
            "quarantined",
            "failed",
            "unknown",
        ] {
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

    #[test]
    fn an_import_is_written_with_its_keys_in_order_and_times_as_the_api_writes_them() {
        let import = Import {
            import_id: "i".into(),
            file_name: "f.csv".into(),
            status: ImportStatus::Failed,
            options: ImportOptions::default(),
            rows_total: None,
            rows_done: 0,
            counts: Counts::default(),
            error: Some(ImportError {
                code: "INVALID_FILE".into(),
                message: "line 2: m".into(),
            }),
            created_at_ms: 0,
            started_at_ms: Some(1),
            finished_at_ms: None,
        };
        assert_eq!(
            serde_json::to_string(&import).unwrap(),
            r#"{"import_id":"i","file_name":"f.csv","status":"FAILED","dry_run":false,"update":false,"archive_missing":false,"rows_total":null,"rows_done":0,"counts":{"created":0,"updated":0,"unchanged":0,"quarantined":0,"archived":0,"failed":0},"error":{"code":"INVALID_FILE","message":"line 2: m"},"created_at":"1970-01-01T00:00:00.000Z","started_at":"1970-01-01T00:00:00.001Z","finished_at":null}"#
        );
    }
}

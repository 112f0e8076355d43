//! The shapes of the import operations in the OpenAPI document (the answers are written by the
//! domain's `Serialize`; these describe them).

#![allow(dead_code)]

use serde::Deserialize;
use utoipa::ToSchema;

use super::schemas::PaginationRequest;

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ImportCreateRequest {
    /// The file's name: its extension says its format (`.csv`, `.xlsx`, `.jsonl` or `.ndjson`,
    /// `.json`, in any case), as `locations push` reads it; on one line (no control characters).
    #[schema(
        pattern = r"^[^\u0000-\u001F\u007F-\u009F]*[^/\u0000-\u001F\u007F-\u009F]\.([cC][sS][vV]|[xX][lL][sS][xX]|[jJ][sS][oO][nN][lL]?|[nN][dD][jJ][sS][oO][nN])$"
    )]
    file_name: String,
    /// The file's bytes in standard base64 (with its padding), at most 6 MiB once decoded (8 MiB
    /// of base64); not empty.
    #[schema(pattern = r"^([A-Za-z0-9+/]{4})*([A-Za-z0-9+/]{4}|[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{2}==)$")]
    content_base64: String,
    /// A row whose location is stored with other content updates it (by `location_id` when the
    /// row has one, else by `merchant_location_id`). Absent or null: false.
    update: Option<bool>,
    /// Afterwards, archive every stored location that no row names. Needs `update` (true alone is
    /// refused at `archive_missing`).
    archive_missing: Option<bool>,
    /// Store nothing and append no event: each row's outcome is what a real run would have now,
    /// each row seeing the file's earlier rows.
    dry_run: Option<bool>,
    /// A workbook's sheet (default: the first); no control characters.
    #[schema(pattern = r"^[^\u0000-\u001F\u007F-\u009F]*$")]
    sheet: Option<String>,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ImportIdRequest {
    import_id: String,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ImportsRequest {
    /// `limit` 1..1000 (default 100).
    pagination: Option<PaginationRequest>,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ImportRowsRequest {
    import_id: String,
    /// Only the failed rows; null or absent: every row. A cursor is bound to the filter it was
    /// issued with.
    filter: Option<ImportRowsFilter>,
    /// `limit` 1..1000 (default 100).
    pagination: Option<PaginationRequest>,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ImportRowsFilter {
    /// `"failed"`, or null: every row.
    #[schema(value_type = Option<String>, pattern = "^failed$")]
    outcome: Option<String>,
}

#[derive(ToSchema)]
#[schema(as = ImportStatus)]
pub enum ImportStatusSchema {
    #[schema(rename = "QUEUED")]
    Queued,
    #[schema(rename = "RUNNING")]
    Running,
    #[schema(rename = "SUCCEEDED")]
    Succeeded,
    #[schema(rename = "FAILED")]
    Failed,
}

/// How many rows ended each way; `archived`: the locations `archive_missing` archived (in a dry
/// run, would archive).
#[derive(ToSchema)]
pub struct ImportCounts {
    created: i64,
    updated: i64,
    unchanged: i64,
    quarantined: i64,
    archived: i64,
    failed: i64,
}

/// Why an import failed: `INVALID_FILE` (a file push refuses; the message names the line, cell or
/// column) or `TOO_MANY_ITEMS` (more than 100,000 rows). Nothing of the file was applied.
#[derive(ToSchema)]
pub struct ImportErrorObject {
    code: String,
    message: String,
}

/// An import. `SUCCEEDED`: every row has its outcome, failed rows included.
#[derive(ToSchema)]
pub struct ImportObject {
    import_id: String,
    file_name: String,
    status: ImportStatusSchema,
    dry_run: bool,
    update: bool,
    archive_missing: bool,
    /// The file's rows; null until the file was read.
    rows_total: Option<i64>,
    /// The rows that have their outcome (grows at least once a second while running).
    rows_done: i64,
    counts: ImportCounts,
    /// Null unless `FAILED`.
    error: Option<ImportErrorObject>,
    #[schema(format = DateTime)]
    created_at: String,
    #[schema(format = DateTime)]
    started_at: Option<String>,
    #[schema(format = DateTime)]
    finished_at: Option<String>,
}

/// An error of a row: `field` is the CSV or sheet column, or the JSON key path; empty when the
/// error is the row's, not a field's.
#[derive(ToSchema)]
pub struct RowErrorObject {
    field: String,
    code: String,
    message: String,
}

/// One row of the file and how it ended, as `locations push` reports it.
#[derive(ToSchema)]
pub struct ImportRowObject {
    /// The sheet's row, the CSV or JSON Lines line (1-based), or the JSON array's index (0-based).
    row: i64,
    merchant_location_id: Option<String>,
    location_id: Option<String>,
    #[schema(pattern = "^(created|updated|unchanged|quarantined|failed)$")]
    outcome: String,
    errors: Vec<RowErrorObject>,
}

//! What is stored of imports, and what crosses the storage boundary for them. An import's rows are
//! applied in batches, a few in one transaction with their rows' outcomes and the import's
//! progress, fenced by the runner that claimed it: a batch of a runner that lost its claim stores nothing,
//! so no row is applied twice whatever kill or restart comes between.

use async_trait::async_trait;
use tokio::sync::mpsc;

use super::error::StoreError;
pub use super::import_apply::RowBatch;
use crate::domain::import::{Import, ImportError, ImportOptions, ImportRow};

/// A new import, stored `QUEUED` with its file.
#[derive(Clone, Debug)]
pub struct NewImport {
    pub merchant_pk: i64,
    pub import_id: String,
    pub file_name: String,
    pub content: Vec<u8>,
    pub options: ImportOptions,
    pub created_at_ms: i64,
}

/// An import a runner holds: what it needs to go on where the last run stopped.
#[derive(Clone, Debug)]
pub struct Claim {
    pub import_pk: i64,
    pub merchant_pk: i64,
    pub import_id: String,
    pub file_name: String,
    pub content: Vec<u8>,
    pub options: ImportOptions,
    pub rows_total: Option<i64>,
    /// The file's rows applied so far (in file order).
    pub rows_done: i64,
    /// The runner's token: every write of the run checks it still holds the import.
    pub owner: String,
}

/// Batches of a real run, written in one transaction: the rows after the first `first` of the
/// file, each batch applied as one chunk (at most `BATCH_ROWS` rows naming different locations).
pub struct Batch<'a> {
    pub claim: &'a Claim,
    pub first: i64,
    pub batches: Vec<RowBatch>,
}

/// What a batch did.
#[derive(Debug, PartialEq, Eq)]
pub enum Applied {
    /// Stored: the rows' outcomes (their report words), in order.
    Done(Vec<String>),
    /// The runner no longer holds the import (or the batch was applied before): nothing stored.
    Lost,
}

/// What a step of `archive_missing` did.
#[derive(Debug, PartialEq, Eq)]
pub enum Archived {
    /// This many archived; more may follow.
    Some(i64),
    /// Every missing location was looked at.
    Done,
    Lost,
}

#[async_trait]
pub trait ImportStore: Send + Sync {
    /// Stores `import` `QUEUED` with its file, unless the merchant already has `MAX_ACTIVE`
    /// queued or running (`None`, nothing stored); decided in the insert's own transaction.
    async fn create_import(&self, import: NewImport) -> Result<Option<Import>, StoreError>;

    /// The merchant's import with this id.
    async fn get_import(&self, merchant_pk: i64, import_id: &str) -> Result<Option<Import>, StoreError>;

    /// Up to `limit` of the merchant's imports, newest first, created before `before` (an import's
    /// internal key) when given; each with its key, for the next page's cursor.
    async fn list_imports(
        &self,
        merchant_pk: i64,
        before: Option<i64>,
        limit: usize,
    ) -> Result<Vec<(i64, Import)>, StoreError>;

    /// Up to `limit` rows of the merchant's import `import_id`, in file order after the `after`-th
    /// (`-1`: from the first), only the failed ones when `failed_only`; `None` when the merchant has
    /// no such import.
    async fn import_rows(
        &self,
        merchant_pk: i64,
        import_id: &str,
        failed_only: bool,
        after: i64,
        limit: usize,
    ) -> Result<Option<Vec<ImportRow>>, StoreError>;

    /// Claims the oldest import that is queued, or running with no claim standing, for `owner`
    /// until `until_ms` (it becomes `RUNNING`).
    async fn claim_import(&self, owner: &str, now_ms: i64, until_ms: i64) -> Result<Option<Claim>, StoreError>;

    /// Extends `owner`'s claim; `false` when it no longer holds the import.
    async fn extend_import(&self, import_pk: i64, owner: &str, until_ms: i64) -> Result<bool, StoreError>;

    /// The file was read whole: it has `rows_total` rows.
    async fn set_rows_total(&self, claim: &Claim, rows_total: i64) -> Result<bool, StoreError>;

    /// Applies batches of a real run in one transaction (see the module's notes), in the merchant's
    /// turn at heavy work.
    async fn apply_batch(&self, batch: Batch<'_>) -> Result<Applied, StoreError>;

    /// One step of `archive_missing`: up to a batch of the merchant's locations that are not
    /// archived and that no row of the import named, archived in one transaction with the count.
    async fn archive_missing_step(&self, claim: &Claim) -> Result<Archived, StoreError>;

    /// A dry run, whole: the batches from `rows` applied in one transaction, in the merchant's turn
    /// at heavy work, then rolled back; the rows' outcomes (and with `archive_missing` how many
    /// would be archived) stored and the import `SUCCEEDED`.
    async fn dry_run(&self, claim: &Claim, rows: mpsc::Receiver<RowBatch>) -> Result<Applied, StoreError>;

    /// Ends the import: `SUCCEEDED` (`error` `None`) or `FAILED`; its file is no longer kept.
    async fn finish_import(&self, claim: &Claim, error: Option<ImportError>, now_ms: i64) -> Result<bool, StoreError>;

    /// Drops one import that ended before `cutoff_ms`, with its rows; how many (0 or 1).
    async fn prune_imports(&self, cutoff_ms: i64) -> Result<usize, StoreError>;
}

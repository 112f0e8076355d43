//! Imports on SQLite: the statements of `store::import_sql` on the read connections and the
//! writer. A batch is one job of the writer (its own transaction, between other merchants'
//! groups), in the merchant's turn at heavy work; a dry run is `dry_run`'s, beside the writer.

use std::sync::Arc;

use async_trait::async_trait;
use rusqlite::{OptionalExtension, params};
use tokio::sync::mpsc;

use super::import_batch::{apply_now, fence, save};
use super::readers::ReadPool;
use super::writer::{Jobs, WriterHealth, write};
use super::{changes, events};
use crate::domain::import::{BATCH_ROWS, Import, ImportError, ImportRow, ImportStatus, MAX_ACTIVE};
use crate::domain::location::Persist;
use crate::store::api::StoreError;
use crate::store::event_signal::EventSignal;
use crate::store::group::after_commit;
use crate::store::heavy::HeavyWork;
use crate::store::import_api::{Applied, Archived, Batch, Claim, ImportStore, NewImport, RowBatch};
use crate::store::import_apply;
use crate::store::import_sql as sql;

const M: char = '?';

pub(super) struct SqliteImports {
    pub(super) jobs: Jobs,
    pub(super) readers: Arc<ReadPool>,
    pub(super) heavy: Arc<HeavyWork>,
    pub(super) health: Arc<WriterHealth>,
    pub(super) signal: Arc<EventSignal>,
}

#[async_trait]
impl ImportStore for SqliteImports {
    async fn create_import(&self, import: NewImport) -> Result<Option<Import>, StoreError> {
        write(&self.jobs, move |tx| {
            let o = &import.options;
            let inserted = tx.prepare_cached(&sql::insert(M))?.execute(params![
                import.import_id,
                import.merchant_pk,
                import.file_name,
                o.sheet,
                o.update,
                o.archive_missing,
                o.dry_run,
                import.created_at_ms,
                MAX_ACTIVE
            ])?;
            if inserted == 0 {
                return Ok(None);
            }
            tx.prepare_cached(&sql::insert_file(M))?
                .execute(params![import.import_id, import.content])?;
            let found = tx
                .prepare_cached(&sql::get(M))?
                .query_row(params![import.merchant_pk, import.import_id], |r| {
                    Ok(sql::read_import(r, 0))
                })??;
            Ok(Some(found))
        })
        .await
    }

    async fn get_import(&self, merchant_pk: i64, import_id: &str) -> Result<Option<Import>, StoreError> {
        let import_id = import_id.to_owned();
        self.readers
            .read(move |c| {
                c.prepare_cached(&sql::get(M))?
                    .query_row(params![merchant_pk, import_id], |r| Ok(sql::read_import(r, 0)))
                    .optional()?
                    .transpose()
            })
            .await
    }

    async fn list_imports(
        &self,
        merchant_pk: i64,
        before: Option<i64>,
        limit: usize,
    ) -> Result<Vec<(i64, Import)>, StoreError> {
        self.readers
            .read(move |c| {
                let mut statement = c.prepare_cached(&sql::list(M))?;
                let rows = statement
                    .query_map(params![merchant_pk, before.unwrap_or(i64::MAX), limit as i64], |r| {
                        Ok((r.get::<_, i64>(0)?, sql::read_import(r, 1)))
                    })?;
                rows.map(|row| {
                    let (key, import) = row?;
                    Ok((key, import?))
                })
                .collect()
            })
            .await
    }

    async fn import_rows(
        &self,
        merchant_pk: i64,
        import_id: &str,
        failed_only: bool,
        after: i64,
        limit: usize,
    ) -> Result<Option<Vec<ImportRow>>, StoreError> {
        let import_id = import_id.to_owned();
        self.readers
            .snapshot(move |tx| {
                let Some(import_pk) = tx
                    .prepare_cached(&sql::key(M))?
                    .query_row(params![merchant_pk, import_id], |r| r.get::<_, i64>(0))
                    .optional()?
                else {
                    return Ok(None);
                };
                let mut statement = tx.prepare_cached(&sql::rows(M, failed_only))?;
                let rows = statement.query_map(params![import_pk, after, limit as i64], |r| Ok(sql::read_row(r)))?;
                let rows = rows.map(|row| row?).collect::<Result<Vec<_>, StoreError>>()?;
                Ok(Some(rows))
            })
            .await
    }

    async fn claim_import(&self, owner: &str, now_ms: i64, until_ms: i64) -> Result<Option<Claim>, StoreError> {
        // Asked every second: an instance with nothing to run reads, and never takes the writer.
        let waiting = self
            .readers
            .read(move |c| {
                Ok(c.prepare_cached(&sql::claimable(M))?
                    .query_row([now_ms], |_| Ok(()))
                    .optional()?
                    .is_some())
            })
            .await?;
        if !waiting {
            return Ok(None);
        }
        let owner = owner.to_owned();
        write(&self.jobs, move |tx| {
            tx.prepare_cached(&sql::claim(M, ""))?
                .query_row(params![owner, now_ms, until_ms], |r| Ok(sql::read_claim(r, &owner)))
                .optional()?
                .transpose()
        })
        .await
    }

    async fn extend_import(&self, import_pk: i64, owner: &str, until_ms: i64) -> Result<bool, StoreError> {
        let owner = owner.to_owned();
        write(&self.jobs, move |tx| {
            Ok(tx
                .prepare_cached(&sql::extend(M))?
                .execute(params![import_pk, owner, until_ms])?
                == 1)
        })
        .await
    }

    async fn set_rows_total(&self, claim: &Claim, rows_total: i64) -> Result<bool, StoreError> {
        let held = (claim.import_pk, claim.owner.clone());
        write(&self.jobs, move |tx| {
            Ok(tx
                .prepare_cached(&sql::set_total(M))?
                .execute(params![held.0, held.1, rows_total])?
                == 1)
        })
        .await
    }

    async fn apply_batch(&self, batch: Batch<'_>) -> Result<Applied, StoreError> {
        let claim = batch.claim;
        let _turn = self.heavy.turn(claim.merchant_pk).await?;
        let held = (claim.import_pk, claim.owner.clone());
        let (merchant_pk, update, first, batches) =
            (claim.merchant_pk, claim.options.update, batch.first, batch.batches);
        let for_archive = claim.options.archive_missing;
        let health = Arc::clone(&self.health);
        let done = write(&self.jobs, move |tx| {
            if !fence(tx, &held, first)? {
                return Ok(None);
            }
            let (mut words, mut changes) = (Vec::new(), Vec::new());
            for rows in batches {
                let (reports, changed) =
                    apply_now(tx, (merchant_pk, &health.failpoint), rows, update, Persist::Commit)?;
                if !changed.is_empty() {
                    events::append(tx, merchant_pk, &changed)?;
                }
                words.extend(save(tx, (held.0, for_archive), first + words.len() as i64, &reports)?);
                changes.extend(changed);
            }
            Ok(Some((words, changes)))
        })
        .await?;
        Ok(match done {
            Some((words, changes)) => {
                after_commit(&self.signal, std::iter::once((merchant_pk, changes.as_slice())));
                Applied::Done(words)
            }
            None => Applied::Lost,
        })
    }

    async fn archive_missing_step(&self, claim: &Claim) -> Result<Archived, StoreError> {
        let _turn = self.heavy.turn(claim.merchant_pk).await?;
        let held = (claim.import_pk, claim.owner.clone());
        let merchant_pk = claim.merchant_pk;
        let (done, changes) = write(&self.jobs, move |tx| {
            let Some(after) = tx
                .prepare_cached(&sql::archive_fence(M))?
                .query_row(params![held.0, held.1], |r| r.get::<_, i64>(0))
                .optional()?
            else {
                return Ok((Archived::Lost, Vec::new()));
            };
            let mut statement = tx.prepare_cached(&sql::archive_candidates(M))?;
            let candidates = statement
                .query_map(params![merchant_pk, after, held.0, BATCH_ROWS as i64], |r| {
                    Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?, r.get::<_, bool>(2)?))
                })?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            let Some(last) = candidates.last().map(|c| c.0) else {
                return Ok((Archived::Done, Vec::new()));
            };
            let missing: Vec<String> = candidates.into_iter().filter(|c| c.2).map(|c| c.1).collect();
            let (mut archived, mut changes) = (0, Vec::new());
            if !missing.is_empty() {
                let written = changes::change_in_tx(tx, merchant_pk, import_apply::archive_plan(&missing))?;
                archived = import_apply::archived(&written.value);
                changes = written.changes;
                if !changes.is_empty() {
                    events::append(tx, merchant_pk, &changes)?;
                }
            }
            tx.prepare_cached(&sql::archive_progress(M))?
                .execute(params![held.0, archived, last])?;
            Ok((Archived::Some(archived), changes))
        })
        .await?;
        after_commit(&self.signal, std::iter::once((merchant_pk, changes.as_slice())));
        Ok(done)
    }

    async fn dry_run(&self, claim: &Claim, rows: mpsc::Receiver<RowBatch>) -> Result<Applied, StoreError> {
        let live = self.readers.path().to_owned();
        let (jobs, claim, handle) = (Arc::clone(&self.jobs), claim.clone(), tokio::runtime::Handle::current());
        tokio::task::spawn_blocking(move || super::dry_run::run(&live, &jobs, &claim, rows, &handle))
            .await
            .map_err(StoreError::backend)?
    }

    async fn finish_import(&self, claim: &Claim, error: Option<ImportError>, now_ms: i64) -> Result<bool, StoreError> {
        let held = (claim.import_pk, claim.owner.clone());
        write(&self.jobs, move |tx| {
            let status = if error.is_some() {
                ImportStatus::Failed
            } else {
                ImportStatus::Succeeded
            };
            let (code, message) = error.map(|e| (e.code, e.message)).unzip();
            let ended = tx.prepare_cached(&sql::finish(M))?.execute(params![
                held.0,
                held.1,
                status.as_str(),
                code,
                message,
                now_ms
            ])?;
            if ended == 1 {
                tx.prepare_cached(&sql::drop_file(M))?.execute([held.0])?;
            }
            Ok(ended == 1)
        })
        .await
    }

    async fn prune_imports(&self, cutoff_ms: i64) -> Result<usize, StoreError> {
        write(&self.jobs, move |tx| {
            let Some(import_pk) = tx
                .prepare_cached(&sql::ended_before(M))?
                .query_row([cutoff_ms], |r| r.get::<_, i64>(0))
                .optional()?
            else {
                return Ok(0);
            };
            tx.prepare_cached(&sql::drop_rows(M))?.execute([import_pk])?;
            tx.prepare_cached(&sql::drop_file(M))?.execute([import_pk])?;
            tx.prepare_cached(&sql::drop_import(M))?.execute([import_pk])?;
            Ok(1)
        })
        .await
    }
}

//! Imports on PostgreSQL: the statements of `store::import_sql` on the pool. A batch is one
//! transaction on a connection of the merchant's turn at heavy work, under the merchant's lock
//! (its writes through the API take turns with it, across every instance), on generic plans as the
//! API's writes are (a custom plan of the neighbour search, made from the statistics of a table
//! growing under the import, read several times the index entries; the statements that weigh an
//! import's own rows are planned as PostgreSQL chooses, for the rows there are); a dry run is one
//! transaction for the whole file, rolled back at the end, its rows' outcomes stored a batch at a
//! time on another connection.

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use deadpool_postgres::{GenericClient, Pool};
use tokio::sync::mpsc;

use super::sql::{LOCK_MERCHANT, Params, by_names, custom_plans, execute, generic_plans, lock_merchant, query};
use super::{changes, events, locations};
use crate::client::apply;
use crate::client::outcome::{Known, RowReport, Stored};
use crate::domain::geo::Neighbour;
use crate::domain::ids;
use crate::domain::import::{BATCH_ROWS, Import, ImportError, ImportRow, ImportStatus, MAX_ACTIVE};
use crate::domain::location::Persist;
use crate::domain::location::batch::{self, Neighbourhood, NewLocation, Outcome};
use crate::domain::location::change::{ChangePlan, Decision};
use crate::store::api::StoreError;
use crate::store::event_signal::EventSignal;
use crate::store::group::{Written, after_commit};
use crate::store::heavy::HeavyWork;
use crate::store::import_api::{Applied, Archived, Batch, Claim, ImportStore, NewImport};
use crate::store::import_apply::{self, RowBatch, TxSteps, apply_rows, stored_rows};
use crate::store::import_sql as sql;

const M: char = '$';

pub(super) struct PgImports {
    pub(super) pool: Pool,
    pub(super) heavy: Arc<HeavyWork>,
    pub(super) signal: Arc<EventSignal>,
}

/// The store's create and change in the batch's open transaction, with what is stored under the
/// batch's names read ahead in it (the names the rows are read back by are the batch's).
struct Steps<'c, C> {
    tx: &'c C,
    merchant_pk: i64,
    ahead: Ahead,
    /// The batch's new locations, decided and not written yet: sent with the statements that end
    /// the batch, or before the batch's next statement.
    unsent: Option<(Vec<NewLocation>, locations::Inserts)>,
}

impl<'c, C: GenericClient + Sync> Steps<'c, C> {
    fn new(tx: &'c C, merchant_pk: i64, ahead: Ahead) -> Self {
        Steps {
            tx,
            merchant_pk,
            ahead,
            unsent: None,
        }
    }

    /// Writes the new locations not written yet.
    async fn flush(&mut self) -> Result<(), StoreError> {
        if let Some((items, inserts)) = self.unsent.take() {
            let statement = locations::prepare_insert(self.tx).await?;
            locations::insert_new(self.tx, &statement, self.merchant_pk, &items, &inserts).await?;
        }
        Ok(())
    }
}

/// What is stored under a batch's names, read in its transaction before the batch is applied (on
/// the connection, behind the statements that end the batch before it): what the rows' outcomes
/// are decided by, and, for the store's create, the bodies of the locations found by
/// `merchant_location_id` and the live neighbours of the rows' new locations.
#[derive(Default)]
struct Ahead {
    known: Known,
    bodies: HashMap<String, batch::Stored>,
    /// By the batch's row: the stored live locations within the quarantine radius of the row's
    /// new location, for the rows validated as new locations (when they were read ahead).
    near: Vec<Option<Vec<Neighbour>>>,
}

impl Ahead {
    /// The neighbourhoods of `items` (the new locations of the batch's `rows`) as
    /// `locations::nearby` finds them, when every one that needs its neighbours had them read.
    fn nearby(&mut self, items: &[NewLocation], rows: &[usize]) -> Option<Vec<Neighbourhood>> {
        let mut nearby = batch::searched(items, &self.bodies);
        for (near, &row) in nearby.iter_mut().zip(rows) {
            if !near.ranges.is_empty() {
                near.stored = self.near.get_mut(row)?.take()?;
            }
        }
        Some(nearby)
    }
}

/// Reads what is stored under the names of `rows` (one statement by `merchant_location_id`, and
/// when updating one by `location_id`), and, with `near`, the stored live neighbours of the rows'
/// new locations (one statement): sent together.
async fn read_ahead(
    tx: &impl GenericClient,
    merchant_pk: i64,
    rows: &RowBatch,
    (update, near): (bool, bool),
) -> Result<Ahead, StoreError> {
    let (mlids, ids) = apply::names(&rows.rows, update);
    let by_name = async {
        if mlids.is_empty() {
            return Ok(Vec::new());
        }
        let columns = format!("{}, version", locations::STORED);
        query(
            tx,
            &by_names(&columns, "merchant_location_id", "$2"),
            &[&merchant_pk, &mlids],
        )
        .await
    };
    let by_id = async {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let sql = by_names("location_id, version, status", "location_id", "$2");
        query(tx, &sql, &[&merchant_pk, &ids]).await
    };
    let creatable: Vec<(usize, &[(i64, i64)])> = match near {
        true => rows.creatable().map(|(i, new)| (i, new.neighbour_ranges())).collect(),
        false => Vec::new(),
    };
    let neighbours = async {
        let points: Vec<&[(i64, i64)]> = creatable.iter().map(|(_, ranges)| *ranges).collect();
        locations::neighbours_of(tx, merchant_pk, &points).await
    };
    let (by_name, by_id, neighbours) = tokio::try_join!(by_name, by_id, neighbours)?;
    let mut ahead = Ahead {
        near: vec![None; rows.len()],
        ..Ahead::default()
    };
    for ((row, _), found) in creatable.iter().zip(neighbours) {
        ahead.near[*row] = Some(found);
    }
    for r in &by_name {
        let (mlid, found) = locations::stored_of(r, 0)?;
        let stored = as_stored(&found.location_id, r.try_get(4)?, r.try_get(2)?);
        ahead.known.by_mlid.insert(mlid.clone(), stored);
        ahead.bodies.insert(mlid, found);
    }
    for r in &by_id {
        let stored = as_stored(&r.try_get::<_, String>(0)?, r.try_get(1)?, r.try_get(2)?);
        ahead.known.by_id.insert(stored.location_id.clone(), stored);
    }
    Ok(ahead)
}

fn as_stored(location_id: &str, version: i64, status: &str) -> Stored {
    Stored {
        location_id: location_id.to_owned(),
        version: version.try_into().unwrap_or(0),
        archived: status == "ARCHIVED",
    }
}

impl<C: GenericClient + Sync> TxSteps for Steps<'_, C> {
    async fn stored(&mut self, _mlids: &[&str], _ids: &[&str]) -> Result<Known, StoreError> {
        Ok(std::mem::take(&mut self.ahead.known))
    }

    async fn create(&mut self, items: Vec<NewLocation>, rows: &[usize]) -> Result<Written<Vec<Outcome>>, StoreError> {
        self.flush().await?;
        let nearby = match self.ahead.nearby(&items, rows) {
            Some(nearby) => nearby,
            None => locations::nearby(self.tx, self.merchant_pk, &items, &self.ahead.bodies).await?,
        };
        let (written, inserts) = locations::decide(&items, &self.ahead.bodies, nearby);
        self.unsent = Some((items, inserts));
        Ok(written)
    }

    async fn change(&mut self, plan: ChangePlan) -> Result<Written<Decision>, StoreError> {
        self.flush().await?;
        changes::change_in_tx(self.tx, self.merchant_pk, plan).await
    }
}

/// Stores the reports of the rows from `first` on (one statement), and the import's progress;
/// `for_archive`: the import archives the locations its rows do not name.
async fn save(
    tx: &impl GenericClient,
    (import_pk, for_archive): (i64, bool),
    first: i64,
    reports: &[RowReport],
) -> Result<Vec<String>, StoreError> {
    let (rows, counts) = stored_rows(reports);
    let ordinals: Vec<i64> = (0..rows.len() as i64).map(|k| first + k).collect();
    let file_rows: Vec<i64> = rows.iter().map(|r| r.row).collect();
    let names: Vec<Option<&str>> = rows.iter().map(|r| r.merchant_location_id.as_deref()).collect();
    let ids: Vec<Option<&str>> = rows.iter().map(|r| r.location_id.as_deref()).collect();
    let outcomes: Vec<&str> = rows.iter().map(|r| r.outcome).collect();
    let errors: Vec<&str> = rows.iter().map(|r| r.errors.as_str()).collect();
    let insert_params: Params<'_> = &[
        &import_pk,
        &ordinals,
        &file_rows,
        &names,
        &ids,
        &outcomes,
        &errors,
        &for_archive,
    ];
    let insert = execute(
        tx,
        "INSERT INTO import_rows (import_pk, ordinal, file_row, merchant_location_id, location_id, outcome, errors, \
         for_archive) \
         SELECT $1, u.*, $8 FROM UNNEST($2::bigint[], $3::bigint[], $4::text[], $5::text[], $6::text[], $7::text[]) AS u",
        insert_params,
    );
    let n = rows.len() as i64;
    let progress_params: Params<'_> = &[
        &import_pk,
        &n,
        &counts.created,
        &counts.updated,
        &counts.unchanged,
        &counts.quarantined,
        &counts.failed,
    ];
    // Sent together: neither waits for the other's answer.
    let progress = sql::progress(M);
    tokio::try_join!(insert, execute(tx, &progress, progress_params))?;
    Ok(rows.iter().map(|r| r.outcome.to_owned()).collect())
}

async fn fence(tx: &impl GenericClient, claim: &Claim, first: i64) -> Result<bool, StoreError> {
    Ok(execute(tx, &sql::fence(M), &[&claim.import_pk, &claim.owner, &first]).await? == 1)
}

#[async_trait]
impl ImportStore for PgImports {
    async fn create_import(&self, import: NewImport) -> Result<Option<Import>, StoreError> {
        let mut client = self.pool.get().await?;
        let tx = client.transaction().await?;
        // Two creates of one merchant take turns, so that neither counts before the other stored.
        execute(
            &tx,
            "SELECT 1 FROM merchants WHERE pk = $1 FOR UPDATE",
            &[&import.merchant_pk],
        )
        .await?;
        let o = &import.options;
        let inserted = execute(
            &tx,
            &sql::insert(M),
            &[
                &import.import_id,
                &import.merchant_pk,
                &import.file_name,
                &o.sheet,
                &o.update,
                &o.archive_missing,
                &o.dry_run,
                &import.created_at_ms,
                &MAX_ACTIVE,
            ],
        )
        .await?;
        if inserted == 0 {
            return Ok(None);
        }
        execute(&tx, &sql::insert_file(M), &[&import.import_id, &import.content]).await?;
        let found = query(&tx, &sql::get(M), &[&import.merchant_pk, &import.import_id]).await?;
        let import = found.first().map(|r| sql::read_import(r, 0)).transpose()?;
        tx.commit().await?;
        Ok(import)
    }

    async fn get_import(&self, merchant_pk: i64, import_id: &str) -> Result<Option<Import>, StoreError> {
        if !ids::may_name(import_id) {
            return Ok(None);
        }
        let client = self.pool.get().await?;
        let found = query(&client, &sql::get(M), &[&merchant_pk, &import_id]).await?;
        found.first().map(|r| sql::read_import(r, 0)).transpose()
    }

    async fn list_imports(
        &self,
        merchant_pk: i64,
        before: Option<i64>,
        limit: usize,
    ) -> Result<Vec<(i64, Import)>, StoreError> {
        let client = self.pool.get().await?;
        let (before, limit) = (before.unwrap_or(i64::MAX), limit as i64);
        let rows = query(&client, &sql::list(M), &[&merchant_pk, &before, &limit]).await?;
        rows.iter()
            .map(|r| Ok((r.try_get(0)?, sql::read_import(r, 1)?)))
            .collect()
    }

    async fn import_rows(
        &self,
        merchant_pk: i64,
        import_id: &str,
        failed_only: bool,
        after: i64,
        limit: usize,
    ) -> Result<Option<Vec<ImportRow>>, StoreError> {
        if !ids::may_name(import_id) {
            return Ok(None);
        }
        let client = self.pool.get().await?;
        let Some(key) = query(&client, &sql::key(M), &[&merchant_pk, &import_id])
            .await?
            .first()
            .map(|r| r.try_get::<_, i64>(0))
            .transpose()?
        else {
            return Ok(None);
        };
        let limit = limit as i64;
        let rows = query(&client, &sql::rows(M, failed_only), &[&key, &after, &limit]).await?;
        let rows = rows.iter().map(sql::read_row).collect::<Result<Vec<_>, StoreError>>()?;
        Ok(Some(rows))
    }

    async fn claim_import(&self, owner: &str, now_ms: i64, until_ms: i64) -> Result<Option<Claim>, StoreError> {
        let client = self.pool.get().await?;
        let found = query(
            &client,
            &sql::claim(M, " FOR UPDATE SKIP LOCKED"),
            &[&owner, &now_ms, &until_ms],
        )
        .await?;
        found.first().map(|r| sql::read_claim(r, owner)).transpose()
    }

    async fn extend_import(&self, import_pk: i64, owner: &str, until_ms: i64) -> Result<bool, StoreError> {
        let client = self.pool.get().await?;
        Ok(execute(&client, &sql::extend(M), &[&import_pk, &owner, &until_ms]).await? == 1)
    }

    async fn set_rows_total(&self, claim: &Claim, rows_total: i64) -> Result<bool, StoreError> {
        let client = self.pool.get().await?;
        Ok(execute(
            &client,
            &sql::set_total(M),
            &[&claim.import_pk, &claim.owner, &rows_total],
        )
        .await?
            == 1)
    }

    async fn apply_batch(&self, batch: Batch<'_>) -> Result<Applied, StoreError> {
        let claim = batch.claim;
        let update = claim.options.update;
        let _turn = self.heavy.turn(claim.merchant_pk).await?;
        let mut client = self.pool.get().await?;
        let tx = client.transaction().await?;
        // Statements sent together run in the order sent, each seeing the writes before it, and
        // the transaction waits for one answer where it waited for several. A statement is sent
        // at its future's first poll only when it was prepared on the connection before, so the
        // statements a later one must follow are prepared first. The transaction's first
        // statements go together, the first batch's reads behind the merchant's lock; then each
        // batch's new locations, its events, its rows' outcomes and the progress go with the
        // next batch's reads behind them.
        let lock = tx.prepare_cached(LOCK_MERCHANT).await?;
        let mut batches = batch.batches.into_iter().peekable();
        // A batch's neighbours are read ahead while the batches create locations (a batch whose
        // rows are stored already would read them for nothing).
        let mut near = true;
        let first_read = async {
            match batches.peek() {
                Some(rows) => read_ahead(&tx, claim.merchant_pk, rows, (update, near)).await,
                None => Ok(Ahead::default()),
            }
        };
        let (held, (), _, mut ahead) = tokio::try_join!(
            fence(&tx, claim, batch.first),
            generic_plans(&tx),
            async { Ok::<_, StoreError>(tx.execute(&lock, &[&claim.merchant_pk]).await?) },
            first_read
        )?;
        if !held {
            return Ok(Applied::Lost);
        }
        let (mut words, mut changes) = (Vec::new(), Vec::new());
        while let Some(rows) = batches.next() {
            let mut steps = Steps::new(&tx, claim.merchant_pk, ahead);
            let (reports, changed) = apply_rows(&mut steps, rows, update, Persist::Commit).await?;
            let unsent = steps.unsent.take();
            near = unsent.as_ref().is_some_and(|(_, inserts)| !inserts.is_empty());
            let statement = match unsent {
                Some(_) => Some(locations::prepare_insert(&tx).await?),
                None => None,
            };
            let inserted = async {
                match (&unsent, &statement) {
                    (Some((items, inserts)), Some(statement)) => {
                        locations::insert_new(&tx, statement, claim.merchant_pk, items, inserts).await
                    }
                    _ => Ok(()),
                }
            };
            let first = batch.first + words.len() as i64;
            let appended = async {
                match changed.is_empty() {
                    true => Ok(()),
                    false => events::append(&tx, claim.merchant_pk, &changed).await,
                }
            };
            let saved = save(&tx, (claim.import_pk, claim.options.archive_missing), first, &reports);
            let next = async {
                match batches.peek() {
                    Some(rows) => read_ahead(&tx, claim.merchant_pk, rows, (update, near)).await,
                    None => Ok(Ahead::default()),
                }
            };
            let ((), (), saved, next) = tokio::try_join!(inserted, appended, saved, next)?;
            words.extend(saved);
            ahead = next;
            changes.extend(changed);
        }
        tx.commit().await?;
        after_commit(&self.signal, std::iter::once((claim.merchant_pk, changes.as_slice())));
        Ok(Applied::Done(words))
    }

    async fn archive_missing_step(&self, claim: &Claim) -> Result<Archived, StoreError> {
        let _turn = self.heavy.turn(claim.merchant_pk).await?;
        let mut client = self.pool.get().await?;
        let tx = client.transaction().await?;
        let Some(after) = query(&tx, &sql::archive_fence(M), &[&claim.import_pk, &claim.owner])
            .await?
            .first()
            .map(|r| r.try_get::<_, i64>(0))
            .transpose()?
        else {
            return Ok(Archived::Lost);
        };
        lock_merchant(&tx, claim.merchant_pk).await?;
        let limit = BATCH_ROWS as i64;
        let candidates = query(
            &tx,
            &sql::archive_candidates(M),
            &[&claim.merchant_pk, &after, &claim.import_pk, &limit],
        )
        .await?;
        let Some(last) = candidates.last().map(|r| r.try_get::<_, i64>(0)).transpose()? else {
            return Ok(Archived::Done);
        };
        let mut missing: Vec<String> = Vec::new();
        for r in &candidates {
            if r.try_get::<_, bool>(2)? {
                missing.push(r.try_get(1)?);
            }
        }
        let (mut archived, mut changes) = (0, Vec::new());
        if !missing.is_empty() {
            let written = changes::change_in_tx(&tx, claim.merchant_pk, import_apply::archive_plan(&missing)).await?;
            archived = import_apply::archived(&written.value);
            changes = written.changes;
            if !changes.is_empty() {
                events::append(&tx, claim.merchant_pk, &changes).await?;
            }
        }
        execute(&tx, &sql::archive_progress(M), &[&claim.import_pk, &archived, &last]).await?;
        tx.commit().await?;
        after_commit(&self.signal, std::iter::once((claim.merchant_pk, changes.as_slice())));
        Ok(Archived::Some(archived))
    }

    async fn dry_run(&self, claim: &Claim, mut rows: mpsc::Receiver<RowBatch>) -> Result<Applied, StoreError> {
        // The batches' transaction is rolled back at the end; it takes no merchant's lock, so the
        // merchant's own writes go on beside it (only a write of a location it touched waits).
        let mut client = self.pool.get().await?;
        let tx = client.transaction().await?;
        generic_plans(&tx).await?;
        let mut words = Vec::new();
        while let Some(batch) = rows.recv().await {
            let ahead = read_ahead(&tx, claim.merchant_pk, &batch, (claim.options.update, true)).await?;
            let mut steps = Steps::new(&tx, claim.merchant_pk, ahead);
            let (reports, _) = apply_rows(&mut steps, batch, claim.options.update, Persist::ValidateOnly).await?;
            // Written before the next batch is read, which sees them.
            steps.flush().await?;
            let first = words.len() as i64;
            // Committed at once: the batches' transaction reads them back when `archive_missing`
            // counts the locations no row names.
            let mut progress = self.pool.get().await?;
            let stored = progress.transaction().await?;
            if !fence(&stored, claim, first).await? {
                return Ok(Applied::Lost);
            }
            words.extend(
                save(
                    &stored,
                    (claim.import_pk, claim.options.archive_missing),
                    first,
                    &reports,
                )
                .await?,
            );
            stored.commit().await?;
        }
        if claim.options.archive_missing {
            // Its count is planned for the rows the run stored, as `archive_missing`'s steps are.
            custom_plans(&tx).await?;
            let zero = 0i64;
            let would: i64 = query(
                &tx,
                &sql::unnamed_count(M),
                &[&claim.merchant_pk, &zero, &claim.import_pk],
            )
            .await?
            .first()
            .map(|r| r.try_get(0))
            .transpose()?
            .unwrap_or(0);
            let progress = self.pool.get().await?;
            execute(&progress, &sql::archive_progress(M), &[&claim.import_pk, &would, &zero]).await?;
        }
        tx.rollback().await?;
        Ok(Applied::Done(words))
    }

    async fn finish_import(&self, claim: &Claim, error: Option<ImportError>, now_ms: i64) -> Result<bool, StoreError> {
        let mut client = self.pool.get().await?;
        let tx = client.transaction().await?;
        let status = if error.is_some() {
            ImportStatus::Failed
        } else {
            ImportStatus::Succeeded
        };
        let (code, message) = error.map(|e| (e.code, e.message)).unzip();
        let ended = execute(
            &tx,
            &sql::finish(M),
            &[
                &claim.import_pk,
                &claim.owner,
                &status.as_str(),
                &code,
                &message,
                &now_ms,
            ],
        )
        .await?;
        if ended == 1 {
            execute(&tx, &sql::drop_file(M), &[&claim.import_pk]).await?;
        }
        tx.commit().await?;
        Ok(ended == 1)
    }

    async fn prune_imports(&self, cutoff_ms: i64) -> Result<usize, StoreError> {
        let mut client = self.pool.get().await?;
        let tx = client.transaction().await?;
        let Some(key) = query(&tx, &sql::ended_before(M), &[&cutoff_ms])
            .await?
            .first()
            .map(|r| r.try_get::<_, i64>(0))
            .transpose()?
        else {
            return Ok(0);
        };
        execute(&tx, &sql::drop_rows(M), &[&key]).await?;
        execute(&tx, &sql::drop_file(M), &[&key]).await?;
        execute(&tx, &sql::drop_import(M), &[&key]).await?;
        tx.commit().await?;
        Ok(1)
    }
}

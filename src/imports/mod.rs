//! Merchants' files handed to the service (`/v1/import/*`), run in the background: the runner
//! claims an import (in the name of a random token of its own, for a while it keeps extending, as
//! the delivery worker claims), reads its file whole as push reads it, then applies its rows in
//! batches, each batch stored with its rows' outcomes and the import's progress in one
//! transaction fenced by the claim (`store::import_api`). A run that is killed, or loses its
//! claim, stops; whoever claims the import next goes on at the next batch.

mod batches;

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{Notify, mpsc};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::client::table::rows::{Format, ReadOptions, check_bytes};
use crate::domain::import::{ImportError, KEPT_FOR_MS, MAX_ROWS};
use crate::store::api::millis;
use crate::store::import_api::{Applied, Archived, Batch, Claim, ImportStore, RowBatch};
use crate::store::now_ms;

/// How long a claim holds unless extended; a killed instance's import is taken up again after it.
pub const CLAIM_FOR: Duration = Duration::from_secs(10);
/// How often a run extends its claim.
const EXTEND_EVERY: Duration = Duration::from_secs(3);
/// How often the runner looks for imports it was not woken for (another instance's, a killed
/// run's).
const LOOK_EVERY: Duration = Duration::from_secs(1);
/// Imports this instance runs at once. Their batches take the merchants' turns at heavy work, so
/// more would only wait there.
const AT_ONCE: usize = 4;
/// Most batches written in one transaction, as the API's group commit joins requests: each batch is
/// still applied whole with its rows' outcomes and the import's progress, and a commit that fails
/// stores none of them. Four were measured to bring an import level with push on both engines
/// (whose four requests in flight share commits the same way); one commit a batch spent a third of
/// an import's time waiting for the disk.
const BATCHES_PER_WRITE: usize = 4;
/// How often ended imports past their keeping are looked for.
const PRUNE_EVERY: Duration = Duration::from_secs(60);

/// Runs imports until `stop` is cancelled; `wake` is rung when one is created here.
pub async fn run(store: Arc<dyn ImportStore>, wake: Arc<Notify>, stop: CancellationToken) {
    let token = crate::secret::random::<12>().unwrap_or_default();
    let owner: String = token.iter().map(|b| format!("{b:02x}")).collect();
    let mut running: JoinSet<()> = JoinSet::new();
    // The first look for imports past their keeping is at the start.
    let mut last_prune: Option<tokio::time::Instant> = None;
    loop {
        while running.try_join_next().is_some() {}
        while running.len() < AT_ONCE && !stop.is_cancelled() {
            let now = now_ms();
            let until = now + millis(CLAIM_FOR);
            match store.claim_import(&owner, now, until).await {
                Ok(Some(claim)) => {
                    let (store, stop) = (Arc::clone(&store), stop.clone());
                    running.spawn(async move { run_one(store, claim, stop).await });
                }
                Ok(None) => break,
                Err(e) => {
                    tracing::warn!(error = %crate::errors::ErrorChain(&e), "claiming an import failed; trying again");
                    break;
                }
            }
        }
        if last_prune.is_none_or(|at| at.elapsed() >= PRUNE_EVERY) {
            last_prune = Some(tokio::time::Instant::now());
            prune(store.as_ref()).await;
        }
        tokio::select! {
            () = stop.cancelled() => break,
            () = wake.notified() => {}
            () = tokio::time::sleep(LOOK_EVERY) => {}
            Some(_) = running.join_next(), if !running.is_empty() => {}
        }
    }
    // Runs in progress stop at their next batch; their claims lapse and the next start goes on.
    while running.join_next().await.is_some() {}
}

/// Drops the imports that ended more than their keeping ago, one at a time.
async fn prune(store: &dyn ImportStore) {
    let cutoff = now_ms().saturating_sub(KEPT_FOR_MS);
    loop {
        match store.prune_imports(cutoff).await {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) => {
                tracing::warn!(error = %crate::errors::ErrorChain(&e), "dropping old imports failed; trying again later");
                break;
            }
        }
    }
}

/// One claimed import, from where it stands to its end (or until the claim is lost or the runner
/// stops).
async fn run_one(store: Arc<dyn ImportStore>, claim: Claim, stop: CancellationToken) {
    let lost = stop.child_token();
    let extender = tokio::spawn(extend(
        Arc::clone(&store),
        claim.import_pk,
        claim.owner.clone(),
        lost.clone(),
    ));
    let import_id = claim.import_id.clone();
    match run_claimed(store.as_ref(), claim, &lost).await {
        Ok(()) => {}
        Err(e) => tracing::warn!(
            import_id,
            error = %crate::errors::ErrorChain(&e),
            "an import stopped; it goes on once claimed again"
        ),
    }
    lost.cancel();
    let _ = extender.await;
}

/// Extends the claim until `lost` is cancelled; cancels it when the claim is no longer held.
async fn extend(store: Arc<dyn ImportStore>, import_pk: i64, owner: String, lost: CancellationToken) {
    loop {
        tokio::select! {
            () = lost.cancelled() => return,
            () = tokio::time::sleep(EXTEND_EVERY) => {}
        }
        let until = now_ms() + millis(CLAIM_FOR);
        match store.extend_import(import_pk, &owner, until).await {
            Ok(true) => {}
            Ok(false) => {
                lost.cancel();
                return;
            }
            // The claim holds a while yet: the next extension may succeed.
            Err(e) => tracing::warn!(error = %crate::errors::ErrorChain(&e), "extending an import's claim failed"),
        }
    }
}

async fn run_claimed(
    store: &dyn ImportStore,
    mut claim: Claim,
    lost: &CancellationToken,
) -> Result<(), crate::store::StoreError> {
    let Some(format) = Format::of_path(std::path::Path::new(&claim.file_name)) else {
        return fail(
            store,
            &claim,
            "INVALID_FILE",
            "the file's name has no extension an import reads".into(),
        )
        .await;
    };
    let options = ReadOptions {
        sheet: claim.options.sheet.clone(),
        ..ReadOptions::default()
    };
    // One copy of the file (up to 6 MiB), shared by the check and the batches' pass.
    let content = Arc::new(std::mem::take(&mut claim.content));
    if claim.rows_total.is_none() {
        let read = {
            let (content, options) = (Arc::clone(&content), options.clone());
            tokio::task::spawn_blocking(move || check_bytes(&content, format, &options))
        };
        match read.await.map_err(crate::store::StoreError::backend)? {
            Err(unreadable) => return fail(store, &claim, "INVALID_FILE", unreadable.0).await,
            Ok(rows) if rows > MAX_ROWS => {
                let message = format!("the file has {rows} rows; an import takes at most {MAX_ROWS}");
                return fail(store, &claim, "TOO_MANY_ITEMS", message).await;
            }
            Ok(rows) => {
                let rows = i64::try_from(rows).unwrap_or(i64::MAX);
                if !store.set_rows_total(&claim, rows).await? {
                    return Ok(());
                }
                claim.rows_total = Some(rows);
            }
        }
    }
    let (tx, mut rx) = mpsc::channel(2 * BATCHES_PER_WRITE);
    let skip = u64::try_from(claim.rows_done).unwrap_or(0);
    let update = claim.options.update;
    let reader = tokio::task::spawn_blocking(move || batches::send(&content, format, &options, skip, update, &tx));
    if claim.options.dry_run {
        let applied = store.dry_run(&claim, rx).await;
        let _ = reader.await;
        match applied? {
            Applied::Done(outcomes) => count_rows(&outcomes),
            Applied::Lost => return Ok(()),
        }
    } else {
        let mut first = claim.rows_done;
        while let Some(batches) = ready_batches(&mut rx).await {
            if lost.is_cancelled() {
                return Ok(());
            }
            let n: i64 = batches.iter().map(|rows| rows.len() as i64).sum();
            // Batches the store could not write stored nothing (or, when their commit's answer was
            // lost, everything, and the fence stops a second try): the run stops, and whoever
            // claims the import next goes on from what is stored.
            match store
                .apply_batch(Batch {
                    claim: &claim,
                    first,
                    batches,
                })
                .await?
            {
                Applied::Done(outcomes) => count_rows(&outcomes),
                Applied::Lost => return Ok(()),
            }
            first += n;
        }
        let _ = reader.await;
        if claim.options.archive_missing {
            loop {
                if lost.is_cancelled() {
                    return Ok(());
                }
                match store.archive_missing_step(&claim).await? {
                    Archived::Some(_) => {}
                    Archived::Done => break,
                    Archived::Lost => return Ok(()),
                }
            }
        }
    }
    if store.finish_import(&claim, None, now_ms()).await? {
        metrics::counter!("imports_total", "status" => "SUCCEEDED").increment(1);
    }
    Ok(())
}

/// The next batch, and those read already behind it, up to `BATCHES_PER_WRITE`: one transaction
/// (one commit, one flush to disk) for several, while the file is read ahead. `None` at the end.
async fn ready_batches(rx: &mut mpsc::Receiver<RowBatch>) -> Option<Vec<RowBatch>> {
    let mut batches = vec![rx.recv().await?];
    while batches.len() < BATCHES_PER_WRITE {
        match rx.try_recv() {
            Ok(rows) => batches.push(rows),
            Err(_) => break,
        }
    }
    Some(batches)
}

async fn fail(
    store: &dyn ImportStore,
    claim: &Claim,
    code: &str,
    message: String,
) -> Result<(), crate::store::StoreError> {
    let error = ImportError {
        code: code.to_owned(),
        message,
    };
    if store.finish_import(claim, Some(error), now_ms()).await? {
        metrics::counter!("imports_total", "status" => "FAILED").increment(1);
    }
    Ok(())
}

fn count_rows(outcomes: &[String]) {
    for outcome in outcomes {
        metrics::counter!("import_rows_total", "outcome" => outcome.clone()).increment(1);
    }
}

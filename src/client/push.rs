//! `storefront locations push FILE` (CONTRACT §11): a file of locations into the service, every
//! row stored exactly once, with progress and a report.
//!
//! The file is read twice, never held: a first pass checks it whole (exit 2 before anything is
//! sent), the second streams its rows into chunks of at most 200 (and well under the body limit).
//! A chunk never holds two rows that name the same location, and a row waits until every chunk in
//! flight that names its location has its outcome, so rows of one location never pass each other;
//! up to `--concurrency` chunks are in flight.
//!
//! A chunk is one small conversation: read back what is stored under its rows' names (so that the
//! outcome of a create that is answered by the retry rule is `unchanged`, and of an update that
//! changed nothing too), then create what is new, then, with `--update`, update what differs. The
//! service decides everything else: the CLI converts cells and maps errors back to them, no more.
//! A create whose outcome is unknown (a timeout, a cut connection) is sent again only for rows with
//! a `merchant_location_id`, which the retry rule makes safe; the others end `unknown`.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::anyhow;
use clap::Args;
use serde_json::{Value, json};
use tokio::task::JoinSet;

use super::api::{Api, Backoff, ClientArgs, Failed};
use super::report::{Outcome, Progress, ReportFile, RowError, RowReport, Tally};
use super::rows::{self, Format, Row};
use super::send::{AnswerError, Sent, send};
use super::{Exit, format_of, walk};
use crate::domain::location::schema::limits::ITEMS_PER_REQUEST;

#[derive(Args, Debug)]
pub struct PushArgs {
    /// JSON Lines (.jsonl, .ndjson), a JSON array (.json) or CSV (.csv) of locations.
    pub file: PathBuf,
    /// A row whose location is stored with other content updates it (by `location_id` when the row
    /// has one, else by `merchant_location_id`) instead of failing with CONFLICT.
    #[arg(long)]
    pub update: bool,
    /// Afterwards, archive every stored location that no row names: the service then holds exactly
    /// the file. Needs --update.
    #[arg(long, requires = "update")]
    pub archive_missing: bool,
    /// Requests in flight at once.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub concurrency: u32,
    /// Times a request is sent again after a server error, a timeout or a cut connection.
    #[arg(long, default_value_t = 5)]
    pub retries: u32,
    /// Write one record per row here: CSV when the name ends in .csv, JSON Lines otherwise.
    #[arg(long)]
    pub report: Option<PathBuf>,
    /// The file's format (default: by its extension).
    #[arg(long, value_enum)]
    pub format: Option<Format>,
    #[command(flatten)]
    pub client: ClientArgs,
}

/// A chunk's body stays under this, well within the service's 8 MiB (a row alone may exceed it:
/// it is sent alone, and the service answers it).
const CHUNK_BYTES: usize = 4 * 1024 * 1024;

/// What every chunk's task needs.
struct Context {
    api: Api,
    update: bool,
    retries: u32,
}

/// A stored location, as the chunk found it before sending.
#[derive(Clone, Debug)]
struct Stored {
    location_id: String,
    version: u64,
    archived: bool,
}

pub async fn run(args: PushArgs) -> ExitCode {
    match push(args).await {
        Ok(code) => code,
        Err(exit) => exit.report(Some("nothing was sent")),
    }
}

async fn push(args: PushArgs) -> Result<ExitCode, Exit> {
    let format = format_of(&args.file, args.format).map_err(Exit::NothingSent)?;
    let path = args.file.clone();
    let checked = tokio::task::spawn_blocking(move || rows::check(&path, format))
        .await
        .map_err(|e| Exit::NothingSent(anyhow!(e)))?;
    let total = checked.map_err(|e| Exit::NothingSent(anyhow!("{}: {e}", args.file.display())))?;
    let api = Api::new(&args.client).map_err(Exit::NothingSent)?;
    super::probe(&api, args.retries).await.map_err(Exit::NothingSent)?;
    let mut report = match &args.report {
        Some(path) => Some(ReportFile::create(path).map_err(Exit::NothingSent)?),
        None => None,
    };

    let context = Arc::new(Context {
        api,
        update: args.update,
        retries: args.retries,
    });
    let progress = Progress::start(total);
    // Rows cross from the reading thread in batches: one wake-up per batch, not per row.
    let (tx, mut rx) = tokio::sync::mpsc::channel::<Vec<Row>>(4);
    let path = args.file.clone();
    let reader = tokio::task::spawn_blocking(move || {
        let mut batch = Vec::with_capacity(ITEMS_PER_REQUEST);
        rows::scan(&path, format, |row| {
            batch.push(row);
            batch.len() < ITEMS_PER_REQUEST || tx.blocking_send(std::mem::take(&mut batch)).is_ok()
        })?;
        let _ = tx.blocking_send(batch);
        Ok::<(), rows::Unreadable>(())
    });

    let mut flow = Flow {
        context: Arc::clone(&context),
        concurrency: args.concurrency as usize,
        in_flight: JoinSet::new(),
        busy: HashMap::new(),
        finished: BTreeMap::new(),
        next_seq: 0,
        next_write: 0,
        tally: Tally::default(),
        named_ids: HashSet::new(),
        named_mlids: HashSet::new(),
        report: report.as_mut(),
        progress: &progress,
        track_names: args.archive_missing,
    };
    let mut chunk: Vec<Row> = Vec::new();
    let mut chunk_keys: HashSet<String> = HashSet::new();
    let mut chunk_bytes = 0usize;
    let mut pending = Vec::new().into_iter();
    while let Some(row) = next_row(&mut rx, &mut pending).await {
        let keys = keys_of(&row);
        let full = chunk.len() >= ITEMS_PER_REQUEST || chunk_bytes + row.size() > CHUNK_BYTES;
        if !chunk.is_empty() && (full || keys.iter().any(|k| chunk_keys.contains(k))) {
            flow.dispatch(std::mem::take(&mut chunk), chunk_keys.drain().collect())
                .await?;
            chunk_bytes = 0;
        }
        while keys.iter().any(|k| flow.busy.contains_key(k)) {
            flow.complete_one().await?;
        }
        chunk_bytes += row.size();
        chunk_keys.extend(keys);
        chunk.push(row);
    }
    if !chunk.is_empty() {
        flow.dispatch(chunk, chunk_keys.into_iter().collect()).await?;
    }
    while !flow.in_flight.is_empty() {
        flow.complete_one().await?;
    }
    let read = reader.await.map_err(|e| Exit::Failed(anyhow!(e)))?;
    let (tally, named_ids, named_mlids) = (flow.tally.clone(), flow.named_ids, flow.named_mlids);
    progress.finish();
    if let Some(report) = report {
        report.finish().map_err(Exit::Failed)?;
    }
    let mut bad = tally.get(Outcome::Failed) + tally.get(Outcome::Unknown) > 0;
    let mut summary = tally.summary();
    if let Err(e) = read {
        summary.push_str(&format!("; the file could not be read to its end: {e}"));
        bad = true;
    }
    if args.archive_missing {
        if tally.get(Outcome::Unknown) > 0 {
            summary.push_str("; --archive-missing skipped: some rows' outcome is unknown");
        } else {
            match archive_missing(&context, &named_ids, &named_mlids).await {
                Ok(archived) => summary.push_str(&format!("; {archived} archived")),
                Err(e) => {
                    summary.push_str(&format!("; --archive-missing failed: {e}"));
                    bad = true;
                }
            }
        }
    }
    let _ = writeln!(std::io::stdout(), "{summary}");
    Ok(if bad { ExitCode::FAILURE } else { ExitCode::SUCCESS })
}

/// The next row of the file, from the batch at hand or the next one.
async fn next_row(rx: &mut tokio::sync::mpsc::Receiver<Vec<Row>>, batch: &mut std::vec::IntoIter<Row>) -> Option<Row> {
    loop {
        if let Some(row) = batch.next() {
            return Some(row);
        }
        *batch = rx.recv().await?.into_iter();
    }
}

/// The names that order rows: a row waits for every earlier row with one of its names.
fn keys_of(row: &Row) -> Vec<String> {
    let mut keys = Vec::with_capacity(2);
    if let Some(mlid) = &row.merchant_location_id {
        keys.push(format!("m:{mlid}"));
    }
    if let Some(id) = row.location_id_str() {
        keys.push(format!("i:{id}"));
    }
    keys
}

/// The chunks in flight and the rows' outcomes, written in file order.
struct Flow<'a> {
    context: Arc<Context>,
    concurrency: usize,
    in_flight: JoinSet<(u64, Vec<RowReport>, Vec<String>)>,
    /// The names held by chunks in flight.
    busy: HashMap<String, u64>,
    /// Outcomes of chunks that finished before an earlier one.
    finished: BTreeMap<u64, Vec<RowReport>>,
    next_seq: u64,
    next_write: u64,
    tally: Tally,
    named_ids: HashSet<String>,
    named_mlids: HashSet<String>,
    report: Option<&'a mut ReportFile>,
    progress: &'a Progress,
    track_names: bool,
}

impl Flow<'_> {
    /// Sends `chunk` (whose rows' names are `keys`) once fewer than `concurrency` are in flight.
    async fn dispatch(&mut self, chunk: Vec<Row>, keys: Vec<String>) -> Result<(), Exit> {
        while self.in_flight.len() >= self.concurrency {
            self.complete_one().await?;
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        for key in &keys {
            self.busy.insert(key.clone(), seq);
        }
        let context = Arc::clone(&self.context);
        self.in_flight
            .spawn(async move { (seq, push_chunk(&context, chunk).await, keys) });
        Ok(())
    }

    async fn complete_one(&mut self) -> Result<(), Exit> {
        let Some(joined) = self.in_flight.join_next().await else {
            return Ok(());
        };
        let (seq, reports, keys) = joined.map_err(|e| Exit::Failed(anyhow!("a chunk's task failed: {e}")))?;
        for key in keys {
            self.busy.remove(&key);
        }
        self.progress.advance(reports.len() as u64);
        self.finished.insert(seq, reports);
        while let Some(reports) = self.finished.remove(&self.next_write) {
            self.next_write += 1;
            for report in reports {
                self.tally.add(report.outcome);
                if self.track_names {
                    self.named_ids.extend(report.location_id.clone());
                    self.named_mlids.extend(report.merchant_location_id.clone());
                }
                if let Some(file) = self.report.as_deref_mut() {
                    file.write(&report).map_err(Exit::Failed)?;
                }
            }
        }
        Ok(())
    }
}

/// How a sent row ended: its outcome, its location's id when known, its errors.
type Ended = (Outcome, Option<String>, Vec<RowError>);

/// Where a row goes.
enum Route {
    Done(Outcome, Vec<RowError>),
    Create,
    /// Update, naming the location by `location_id` (else by `merchant_location_id`).
    Update {
        by_id: bool,
    },
}

/// One chunk, start to end: its rows' outcomes in row order.
async fn push_chunk(context: &Context, rows: Vec<Row>) -> Vec<RowReport> {
    let (by_mlid, by_id) = match stored(context, &rows).await {
        Ok(found) => found,
        Err(e) => {
            let error = RowError::new("", "NOT_SENT", format!("reading the stored locations failed: {e}"));
            return rows
                .iter()
                .map(|row| report(row, Outcome::Failed, None, vec![error.clone()]))
                .collect();
        }
    };
    let prior = |row: &Row, by_id_route: bool| -> Option<&Stored> {
        if by_id_route {
            row.location_id_str().and_then(|id| by_id.get(id))
        } else {
            row.merchant_location_id.as_ref().and_then(|m| by_mlid.get(m))
        }
    };
    let mut routes: Vec<Route> = rows
        .iter()
        .map(|row| {
            if row.archived {
                Route::Done(Outcome::Unchanged, Vec::new())
            } else if row.location_id.is_some() && context.update {
                Route::Update { by_id: true }
            } else if row.location_id.is_some() && row.merchant_location_id.is_none() {
                let message = "the row has a location_id and no merchant_location_id: pass --update to update the \
                               location it names";
                Route::Done(Outcome::Failed, vec![RowError::new("location_id", "NOT_SENT", message)])
            } else if context.update && prior(row, false).is_some_and(|s| !s.archived) {
                Route::Update { by_id: false }
            } else {
                Route::Create
            }
        })
        .collect();
    let mut results: Vec<Option<Ended>> = (0..rows.len()).map(|_| None).collect();

    let creates: Vec<(usize, Cow<'_, str>)> = routes
        .iter()
        .enumerate()
        .filter(|(_, r)| matches!(r, Route::Create))
        .map(|(i, _)| (i, Cow::Borrowed(rows[i].item.as_str())))
        .collect();
    for (i, sent) in send(&context.api, context.retries, "/v1/location/create", creates, |i| {
        rows[i].merchant_location_id.is_some()
    })
    .await
    {
        let row = &rows[i];
        results[i] = Some(match sent {
            Sent::Result(result) => {
                let location_id = Some(result.location_id.as_str()).filter(|s| !s.is_empty());
                let errors = row_errors(row, &result.errors);
                match location_id {
                    Some(id) => {
                        let outcome = if prior(row, false).is_some() {
                            Outcome::Unchanged
                        } else if result.status == "QUARANTINE" {
                            Outcome::Quarantined
                        } else {
                            Outcome::Created
                        };
                        (outcome, Some(id.to_owned()), errors)
                    }
                    None if context.update && is_taken(&result.errors) => {
                        routes[i] = Route::Update { by_id: false };
                        continue;
                    }
                    None => (Outcome::Failed, None, errors),
                }
            }
            Sent::Unknown(why) => (Outcome::Unknown, None, vec![RowError::new("", "UNKNOWN", why)]),
            Sent::Failed(error) => (Outcome::Failed, None, vec![error]),
        });
    }

    let updates: Vec<(usize, Cow<'_, str>)> = routes
        .iter()
        .enumerate()
        .filter_map(|(i, r)| match r {
            Route::Update { by_id } => Some((i, Cow::Owned(update_item(&rows[i], *by_id)))),
            _ => None,
        })
        .collect();
    for (i, sent) in send(&context.api, context.retries, "/v1/location/update", updates, |_| true).await {
        let row = &rows[i];
        let by_id_route = matches!(routes[i], Route::Update { by_id: true });
        results[i] = Some(match sent {
            Sent::Result(result) if result.status != "FAILED" => {
                let version = result.version.unwrap_or(0);
                let outcome = if prior(row, by_id_route).is_some_and(|s| s.version >= version) {
                    Outcome::Unchanged
                } else if result.status == "QUARANTINE" {
                    Outcome::Quarantined
                } else {
                    Outcome::Updated
                };
                (
                    outcome,
                    Some(result.location_id).filter(|id| !id.is_empty()),
                    row_errors(row, &result.errors),
                )
            }
            Sent::Result(result) => (Outcome::Failed, None, row_errors(row, &result.errors)),
            Sent::Unknown(why) => (Outcome::Unknown, None, vec![RowError::new("", "UNKNOWN", why)]),
            Sent::Failed(error) => (Outcome::Failed, None, vec![error]),
        });
    }

    rows.iter()
        .zip(routes)
        .zip(results)
        .map(|((row, route), result)| {
            let (outcome, id, errors) = match (route, result) {
                (_, Some(result)) => result,
                (Route::Done(outcome, errors), None) => (outcome, None, errors),
                // Every sent row has a result; a row without one is reported as not sent.
                (_, None) => (Outcome::Failed, None, vec![RowError::new("", "NOT_SENT", "not sent")]),
            };
            let id = id.or_else(|| prior(row, row.location_id.is_some()).map(|s| s.location_id.clone()));
            report(row, outcome, id, errors)
        })
        .collect()
}

fn report(row: &Row, outcome: Outcome, location_id: Option<String>, errors: Vec<RowError>) -> RowReport {
    RowReport {
        row: row.row,
        merchant_location_id: row.merchant_location_id.clone(),
        location_id: location_id.or_else(|| row.location_id_str().map(str::to_owned)),
        outcome,
        errors,
    }
}

/// The create answered that the `merchant_location_id` is taken by other content, and nothing else.
fn is_taken(errors: &[AnswerError]) -> bool {
    matches!(errors, [e] if e.code == "CONFLICT" && e.field.ends_with("].merchant_location_id"))
}

/// An update item: the row's content, naming its location, with the row's version as the one it
/// expects (CONTRACT §10.1). The keys are written in front of the row's own (which has neither).
fn update_item(row: &Row, by_id: bool) -> String {
    let mut keys = String::new();
    if by_id && let Some(id) = &row.location_id {
        keys.push_str(&format!("\"location_id\":{id},"));
    }
    if let Some(version) = &row.version {
        keys.push_str(&format!("\"expected_version\":{version},"));
    }
    match row.item.strip_prefix('{') {
        Some(_) if keys.is_empty() => row.item.clone(),
        Some("}") => format!("{{{}}}", keys.trim_end_matches(',')),
        Some(rest) => format!("{{{keys}{rest}"),
        None => row.item.clone(),
    }
}

/// The service's errors of an item, named after the row's fields.
fn row_errors(row: &Row, errors: &[AnswerError]) -> Vec<RowError> {
    errors
        .iter()
        .map(|e| {
            // `locations[i].limits.weight` → `limits.weight`.
            let path = match e.field.strip_prefix("locations[").and_then(|p| p.split_once(']')) {
                Some((_, rest)) => rest.trim_start_matches('.'),
                None => &e.field,
            };
            row.error_at(path, &e.code, &e.message)
        })
        .collect()
}

/// What is stored under the chunk's names: by `merchant_location_id`, and (with `--update`) by
/// `location_id`.
async fn stored(context: &Context, rows: &[Row]) -> Result<(HashMap<String, Stored>, HashMap<String, Stored>), Failed> {
    let mlids: Vec<&str> = rows.iter().filter_map(|r| r.merchant_location_id.as_deref()).collect();
    let ids: Vec<&str> = if context.update {
        rows.iter().filter_map(Row::location_id_str).collect()
    } else {
        Vec::new()
    };
    let mut by_mlid = HashMap::new();
    let mut by_id = HashMap::new();
    for (key, names) in [("merchant_location_ids", mlids), ("location_ids", ids)] {
        if names.is_empty() {
            continue;
        }
        let filter = json!({ key: names });
        walk(&context.api, &filter, context.retries, |raw| {
            let record: Value = serde_json::from_str(raw.get()).unwrap_or_default();
            let stored = Stored {
                location_id: record["location_id"].as_str().unwrap_or_default().to_owned(),
                version: record["version"].as_u64().unwrap_or(0),
                archived: record["status"] == "ARCHIVED",
            };
            if key == "location_ids" {
                by_id.insert(stored.location_id.clone(), stored);
            } else if let Some(mlid) = record["merchant_location_id"].as_str() {
                by_mlid.insert(mlid.to_owned(), stored);
            }
            Ok(())
        })
        .await?;
    }
    Ok((by_mlid, by_id))
}

/// Archives every stored location that is not archived and that no row named.
async fn archive_missing(
    context: &Context,
    named_ids: &HashSet<String>,
    named_mlids: &HashSet<String>,
) -> Result<u64, Failed> {
    let mut missing: Vec<String> = Vec::new();
    walk(&context.api, &Value::Null, context.retries, |raw| {
        let record: Value = serde_json::from_str(raw.get()).unwrap_or_default();
        let id = record["location_id"].as_str().unwrap_or_default();
        let named = named_ids.contains(id)
            || record["merchant_location_id"]
                .as_str()
                .is_some_and(|m| named_mlids.contains(m));
        if record["status"] != "ARCHIVED" && !named {
            missing.push(id.to_owned());
        }
        Ok(())
    })
    .await?;
    let mut archived = 0;
    for ids in missing.chunks(ITEMS_PER_REQUEST) {
        let items: Vec<Value> = ids.iter().map(|id| json!({ "location_id": id })).collect();
        let mut backoff = Backoff::new(context.retries);
        let answer = context
            .api
            .call("/v1/location/archive", &json!({ "locations": items }), &mut backoff)
            .await?;
        let answer: Value = serde_json::from_slice(&answer).unwrap_or_default();
        let results = answer["locations"].as_array().map(Vec::as_slice).unwrap_or_default();
        archived += results.iter().filter(|r| r["status"] == "ARCHIVED").count() as u64;
    }
    Ok(archived)
}

//! `storefront locations push FILE`: a file of locations into the service, every
//! row stored exactly once, with progress and a report.
//!
//! The file is read twice, never held: a first pass checks it whole (exit 2 before anything is
//! sent), the second streams its rows into chunks of at most 200 (and well under the body limit).
//! A chunk never holds two rows that name the same location, and a row waits until every chunk in
//! flight that names its location has its outcome, so rows of one location never pass each other;
//! up to `--concurrency` chunks are in flight.
//!
//! A chunk is one small conversation with the service (`chunk`). A create whose outcome is unknown (a timeout, a cut connection) is sent again only for rows with
//! a `merchant_location_id`, which the retry rule makes safe; the others end `unknown`.

mod chunk;
mod missing;
mod report;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::anyhow;
use clap::Args;
use tokio::task::JoinSet;

use super::file::csv_dialect::{self, CsvOptions};
use super::service::api::{Api, ClientArgs};
use super::service::send::Context;
use super::table::rows::{Format, ReadOptions, Row, Source, Unreadable};
use super::{Exit, format_of};
use crate::client::apply::keys_of;
use crate::client::outcome::{Outcome, RowReport};
use crate::domain::location::schema::limits::ITEMS_PER_REQUEST;
use chunk::push_chunk;
use missing::archive_missing;
use report::{FirstFailures, Progress, ReportFile, Tally};

#[derive(Args, Debug)]
pub struct PushArgs {
    /// JSON Lines (.jsonl, .ndjson), a JSON array (.json), CSV (.csv) or a workbook (.xlsx) of
    /// locations.
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
    /// A workbook's sheet to read (default: the first).
    #[arg(long)]
    pub sheet: Option<String>,
    /// A CSV file's delimiter: `,`, `;` or `tab` (default: the one its header line uses).
    #[arg(long, value_parser = csv_dialect::parse_delimiter)]
    pub delimiter: Option<u8>,
    /// A CSV file's encoding, as a WHATWG label (`windows-1251`, `koi8-r`, …). Default: the one its
    /// byte order mark says, else UTF-8 when it is valid UTF-8, else detected.
    #[arg(long, value_parser = csv_dialect::parse_encoding)]
    pub encoding: Option<&'static encoding_rs::Encoding>,
    /// Report what the push would do, row by row, and store nothing: every request is sent with
    /// `validate_only`, and --archive-missing only counts what it would archive. Each chunk is
    /// decided against what is stored, not against the earlier rows of the file.
    #[arg(long)]
    pub dry_run: bool,
    #[command(flatten)]
    pub client: ClientArgs,
}

/// A chunk's body stays under this, well within the service's 8 MiB (a row alone may exceed it:
/// it is sent alone, and the service answers it).
const CHUNK_BYTES: usize = 4 * 1024 * 1024;

pub async fn run(args: PushArgs) -> ExitCode {
    match push(args).await {
        Ok(code) => code,
        Err(exit) => exit.report(Some("nothing was sent")),
    }
}

async fn push(args: PushArgs) -> Result<ExitCode, Exit> {
    let format = format_of(&args.file, args.format).map_err(Exit::NothingSent)?;
    let options = ReadOptions {
        csv: CsvOptions {
            delimiter: args.delimiter,
            encoding: args.encoding,
        },
        sheet: args.sheet.clone(),
    };
    let path = args.file.clone();
    let checked = tokio::task::spawn_blocking(move || {
        let source = Source::open(&path, format, &options)?;
        Ok::<_, Unreadable>((source.check()?, source))
    })
    .await
    .map_err(|e| Exit::NothingSent(anyhow!(e)))?;
    let (total, source) = checked.map_err(|e| Exit::NothingSent(anyhow!("{}: {e}", args.file.display())))?;
    let note = source.note();
    let api = Api::new(&args.client).map_err(Exit::NothingSent)?;
    super::service::probe(&api, args.retries)
        .await
        .map_err(Exit::NothingSent)?;
    let mut report = match &args.report {
        Some(path) => Some(ReportFile::create(path).map_err(Exit::NothingSent)?),
        None => None,
    };

    let context = Arc::new(Context {
        api,
        update: args.update,
        retries: args.retries,
        dry_run: args.dry_run,
    });
    let progress = Progress::start(total);
    // Rows cross from the reading thread in batches: one wake-up per batch, not per row.
    let (tx, mut rx) = tokio::sync::mpsc::channel::<Vec<Row>>(4);
    let reader = tokio::task::spawn_blocking(move || {
        let mut batch = Vec::with_capacity(ITEMS_PER_REQUEST);
        source.scan(|row| {
            batch.push(row);
            batch.len() < ITEMS_PER_REQUEST || tx.blocking_send(std::mem::take(&mut batch)).is_ok()
        })?;
        let _ = tx.blocking_send(batch);
        Ok::<(), Unreadable>(())
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
        failures: FirstFailures::default(),
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
    let failures = flow.failures;
    progress.finish();
    if let Some(report) = report {
        report.finish().map_err(Exit::Failed)?;
    }
    let mut bad = tally.get(Outcome::Failed) + tally.get(Outcome::Unknown) > 0;
    let mut summary = tally.summary();
    if args.dry_run {
        summary.insert_str(0, "dry run, nothing stored: ");
    }
    if let Some(note) = note {
        summary.push_str(&format!("; {note}"));
    }
    if let Err(e) = read {
        summary.push_str(&format!("; the file could not be read to its end: {e}"));
        bad = true;
    }
    if args.archive_missing {
        if tally.get(Outcome::Unknown) > 0 {
            summary.push_str("; --archive-missing skipped: some rows' outcome is unknown");
        } else {
            match archive_missing(&context, &named_ids, &named_mlids).await {
                Ok(archived) if args.dry_run => summary.push_str(&format!("; {archived} would be archived")),
                Ok(archived) => summary.push_str(&format!("; {archived} archived")),
                Err(e) => {
                    summary.push_str(&format!("; --archive-missing failed: {e}"));
                    bad = true;
                }
            }
        }
    }
    let _ = writeln!(std::io::stdout(), "{summary}");
    for line in failures.lines(args.report.as_deref()) {
        let _ = writeln!(std::io::stderr(), "{line}");
    }
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
    failures: FirstFailures,
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
                self.failures.add(&report);
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

//! What `push` says about every row: the outcomes, the `--report` file (CSV or JSON
//! Lines), the progress while it runs, and the summary line.

use crate::client::outcome::{Outcome, RowReport};
use std::fs::File;
use std::io::{BufWriter, IsTerminal, Write};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context;

/// The first rows that failed (or whose outcome is unknown), said after the summary so that a push
/// without `--report` still says which rows and why; the rest are counted.
#[derive(Default)]
pub struct FirstFailures {
    lines: Vec<String>,
    rows: u64,
}

impl FirstFailures {
    /// How many failed rows are shown.
    const SHOWN: u64 = 5;

    pub fn add(&mut self, report: &RowReport) {
        if !matches!(report.outcome, Outcome::Failed | Outcome::Unknown) {
            return;
        }
        self.rows += 1;
        if self.rows > Self::SHOWN {
            return;
        }
        if report.errors.is_empty() {
            self.lines
                .push(format!("row {}: {}", report.row, report.outcome.as_str()));
        }
        for e in &report.errors {
            let column = if e.field.is_empty() { "(row)" } else { &e.field };
            self.lines.push(format!(
                "row {}, column {column}: {}: {}",
                report.row, e.code, e.message
            ));
        }
    }

    /// The lines to print: each shown row's errors, then how many more rows failed.
    pub fn lines(&self, report: Option<&Path>) -> Vec<String> {
        let mut lines = self.lines.clone();
        if self.rows > Self::SHOWN {
            let every = report.map_or_else(
                || "--report FILE lists every row".to_owned(),
                |p| format!("{} lists every row", p.display()),
            );
            lines.push(format!("… and {} more failed row(s); {every}", self.rows - Self::SHOWN));
        }
        lines
    }
}

/// The `--report` file.
pub enum ReportFile {
    Csv(Box<csv::Writer<File>>),
    Jsonl(BufWriter<File>),
}

impl ReportFile {
    /// Creates the file; CSV when its name ends in `.csv`, JSON Lines otherwise.
    pub fn create(path: &Path) -> anyhow::Result<ReportFile> {
        let file = File::create(path).with_context(|| format!("cannot write the report {}", path.display()))?;
        let csv = path.extension().is_some_and(|e| e.eq_ignore_ascii_case("csv"));
        Ok(if csv {
            let mut writer = csv::Writer::from_writer(file);
            writer.write_record(["row", "merchant_location_id", "location_id", "outcome", "errors"])?;
            ReportFile::Csv(Box::new(writer))
        } else {
            ReportFile::Jsonl(BufWriter::new(file))
        })
    }

    pub fn write(&mut self, report: &RowReport) -> anyhow::Result<()> {
        match self {
            ReportFile::Csv(writer) => {
                let errors: Vec<String> = report
                    .errors
                    .iter()
                    .map(|e| match e.field.as_str() {
                        "" => format!("{}: {}", e.code, e.message),
                        field => format!("{field} {}: {}", e.code, e.message),
                    })
                    .collect();
                writer.write_record([
                    report.row.to_string().as_str(),
                    report.merchant_location_id.as_deref().unwrap_or(""),
                    report.location_id.as_deref().unwrap_or(""),
                    report.outcome.as_str(),
                    errors.join("; ").as_str(),
                ])?;
            }
            ReportFile::Jsonl(writer) => {
                serde_json::to_writer(&mut *writer, report)?;
                writer.write_all(b"\n")?;
            }
        }
        Ok(())
    }

    pub fn finish(self) -> anyhow::Result<()> {
        match self {
            ReportFile::Csv(mut writer) => writer.flush()?,
            ReportFile::Jsonl(mut writer) => writer.flush()?,
        }
        Ok(())
    }
}

/// The count of each outcome.
#[derive(Clone, Debug, Default)]
pub struct Tally([u64; 6]);

impl Tally {
    pub fn add(&mut self, outcome: Outcome) {
        self.0[outcome as usize] += 1;
    }

    pub fn get(&self, outcome: Outcome) -> u64 {
        self.0[outcome as usize]
    }

    pub fn rows(&self) -> u64 {
        self.0.iter().sum()
    }

    /// `12 rows: 10 created, 1 unchanged, 0 updated, 0 quarantined, 1 failed, 0 unknown`.
    pub fn summary(&self) -> String {
        let counts: Vec<String> = Outcome::ALL
            .iter()
            .map(|o| format!("{} {}", self.get(*o), o.as_str()))
            .collect();
        format!("{} rows: {}", self.rows(), counts.join(", "))
    }
}

/// Progress on stderr: a bar on a terminal, otherwise a line every 10 s.
pub struct Progress {
    done: Arc<AtomicU64>,
    bar: Option<indicatif::ProgressBar>,
    ticker: Option<tokio::task::JoinHandle<()>>,
}

const PROGRESS_EVERY: Duration = Duration::from_secs(10);

impl Progress {
    pub fn start(total: u64) -> Progress {
        let done = Arc::new(AtomicU64::new(0));
        if std::io::stderr().is_terminal() {
            let bar = indicatif::ProgressBar::new(total);
            let style =
                indicatif::ProgressStyle::with_template("{bar:40.cyan/blue} {pos}/{len} rows  {per_sec}  {eta} left")
                    .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar());
            bar.set_style(style);
            bar.enable_steady_tick(Duration::from_millis(200));
            return Progress {
                done,
                bar: Some(bar),
                ticker: None,
            };
        }
        let counter = Arc::clone(&done);
        let started = Instant::now();
        let ticker = tokio::spawn(async move {
            let mut every = tokio::time::interval(PROGRESS_EVERY);
            every.tick().await;
            loop {
                every.tick().await;
                let n = counter.load(Ordering::Relaxed);
                let rate = n as f64 / started.elapsed().as_secs_f64().max(0.001);
                let _ = writeln!(std::io::stderr(), "push: {n}/{total} rows ({rate:.0} rows/s)");
            }
        });
        Progress {
            done,
            bar: None,
            ticker: Some(ticker),
        }
    }

    pub fn advance(&self, rows: u64) {
        self.done.fetch_add(rows, Ordering::Relaxed);
        if let Some(bar) = &self.bar {
            bar.inc(rows);
        }
    }

    pub fn finish(self) {
        if let Some(bar) = self.bar {
            bar.finish_and_clear();
        }
        if let Some(ticker) = self.ticker {
            ticker.abort();
        }
    }
}

#[cfg(test)]
mod first_failures_tests {
    use super::*;
    use crate::client::table::RowError;

    fn failed(row: u64) -> RowReport {
        RowReport {
            row,
            merchant_location_id: None,
            location_id: None,
            outcome: Outcome::Failed,
            errors: vec![RowError::new("name", "REQUIRED", "name is required")],
        }
    }

    #[test]
    fn the_first_five_failed_rows_are_said_and_the_rest_counted() {
        let mut f = FirstFailures::default();
        let mut created = failed(1);
        created.outcome = Outcome::Created;
        f.add(&created);
        for row in 2..=9 {
            f.add(&failed(row));
        }
        let lines = f.lines(None);
        assert_eq!(lines.len(), 6);
        assert_eq!(lines[0], "row 2, column name: REQUIRED: name is required");
        assert_eq!(lines[5], "… and 3 more failed row(s); --report FILE lists every row");
        assert!(FirstFailures::default().lines(None).is_empty());
    }
}

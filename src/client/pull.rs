//! `storefront locations pull`: every record of the merchant (`--status`,
//! `--type`) as JSON Lines, a JSON array, or CSV or a workbook in the layout `push` reads, so that a pulled file pushed back
//! changes nothing. JSON records are written as the service wrote them (its key order), never
//! re-encoded. With `--output`, the file appears only when the walk is complete.

use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, anyhow};
use clap::Args;
use serde_json::Value;
use serde_json::value::RawValue;

use super::Exit;
use super::file::workbook::SheetWriter;
use super::service::api::{Api, ClientArgs, Failed};
use super::service::{probe, walk};
use super::table::rows::Format;
use super::table::{layout, write_cells};

#[derive(Args, Debug)]
pub struct PullArgs {
    /// Only locations with this status: ACTIVE, QUARANTINE or ARCHIVED.
    #[arg(long)]
    pub status: Option<String>,
    /// Only locations with this type (WAREHOUSE, PICKUP_POINT, CLICK_AND_COLLECT); repeat it for
    /// locations with any of several.
    #[arg(long = "type")]
    pub types: Vec<String>,
    /// The output format (default: by --output's extension, else jsonl).
    #[arg(long, value_enum)]
    pub format: Option<Format>,
    /// Write here instead of standard output.
    #[arg(long)]
    pub output: Option<PathBuf>,
    /// Times a page is asked for again after a server error, a timeout or a cut connection.
    #[arg(long, default_value_t = 5)]
    pub retries: u32,
    #[command(flatten)]
    pub client: ClientArgs,
}

pub async fn run(args: PullArgs) -> ExitCode {
    match pull(args).await {
        Ok(count) => {
            let _ = writeln!(std::io::stderr(), "pulled {count} locations");
            ExitCode::SUCCESS
        }
        Err(exit) => exit.report(None),
    }
}

async fn pull(args: PullArgs) -> Result<u64, Exit> {
    let format = args
        .format
        .or_else(|| args.output.as_deref().and_then(Format::of_path))
        .unwrap_or(Format::Jsonl);
    let api = Api::new(&args.client).map_err(Exit::NothingSent)?;
    probe(&api, args.retries).await.map_err(Exit::NothingSent)?;
    let mut filter = serde_json::Map::new();
    if let Some(status) = &args.status {
        filter.insert("status".to_owned(), Value::from(status.as_str()));
    }
    if !args.types.is_empty() {
        filter.insert("location_types".to_owned(), Value::from(args.types.clone()));
    }
    let filter = Value::Object(filter);

    // With --output, a temporary file beside it, renamed over it at the end.
    let (sink, partial): (Box<dyn Write + Send>, Option<(tempfile::NamedTempFile, PathBuf)>) = match &args.output {
        None => (Box::new(std::io::stdout()), None),
        Some(path) => {
            let dir = path
                .parent()
                .filter(|p| !p.as_os_str().is_empty())
                .unwrap_or(".".as_ref());
            let temp = tempfile::NamedTempFile::new_in(dir)
                .with_context(|| format!("cannot write {}", path.display()))
                .map_err(Exit::NothingSent)?;
            let file = temp.reopen().map_err(|e| Exit::NothingSent(e.into()))?;
            (Box::new(file) as Box<dyn Write + Send>, Some((temp, path.clone())))
        }
    };
    let mut out = Output::new(BufWriter::with_capacity(256 * 1024, sink), format).map_err(Exit::Failed)?;
    let mut count = 0u64;
    let walked = walk(&api, &filter, args.retries, |record| {
        count += 1;
        out.record(record)
            .map_err(|e| Failed::GaveUp(format!("writing the output: {e}")))
    })
    .await;
    match walked {
        Ok(()) => {}
        Err(Failed::Refused(e)) if e.status == 400 => {
            return Err(Exit::NothingSent(anyhow!(
                "the service refused the filter ({}: {})",
                e.code,
                e.message
            )));
        }
        Err(e) => return Err(Exit::Failed(anyhow!("the list did not complete: {e}"))),
    }
    out.finish().map_err(Exit::Failed)?;
    if let Some((temp, path)) = partial {
        temp.persist(&path)
            .with_context(|| format!("cannot write {}", path.display()))
            .map_err(Exit::Failed)?;
    }
    Ok(count)
}

/// Records written in a format.
enum Output<W: Write + Send> {
    Lines(W),
    Array {
        writer: W,
        empty: bool,
    },
    Csv(Box<csv::Writer<W>>),
    /// Written to `W` when complete (a workbook is a zip archive).
    Xlsx(Box<SheetWriter>, W),
}

impl<W: Write + Send> Output<W> {
    fn new(mut writer: W, format: Format) -> anyhow::Result<Output<W>> {
        Ok(match format {
            Format::Jsonl => Output::Lines(writer),
            Format::Json => {
                writer.write_all(b"[")?;
                Output::Array { writer, empty: true }
            }
            Format::Csv => {
                let mut csv = csv::Writer::from_writer(writer);
                csv.write_record(layout::pulled_columns().iter().map(|c| c.name))?;
                Output::Csv(Box::new(csv))
            }
            Format::Xlsx => {
                let header: Vec<&str> = layout::pulled_columns().iter().map(|c| c.name).collect();
                Output::Xlsx(Box::new(SheetWriter::new(&header)?), writer)
            }
        })
    }

    fn record(&mut self, record: &RawValue) -> anyhow::Result<()> {
        match self {
            Output::Lines(writer) => {
                writer.write_all(record.get().as_bytes())?;
                writer.write_all(b"\n")?;
            }
            Output::Array { writer, empty } => {
                writer.write_all(if *empty { b"\n" } else { b",\n" })?;
                writer.write_all(record.get().as_bytes())?;
                *empty = false;
            }
            Output::Csv(csv) => {
                let value: Value = serde_json::from_str(record.get())?;
                for cell in &write_cells::record_cells(&value) {
                    csv.write_field(write_cells::csv_text(cell).as_bytes())?;
                }
                csv.write_record(None::<&[u8]>)?;
            }
            Output::Xlsx(sheet, _) => {
                let value: Value = serde_json::from_str(record.get())?;
                sheet.row(&write_cells::record_cells(&value))?;
            }
        }
        Ok(())
    }

    fn finish(self) -> anyhow::Result<()> {
        match self {
            Output::Lines(mut writer) => writer.flush()?,
            Output::Array { mut writer, empty } => {
                writer.write_all(if empty { b"]\n" } else { b"\n]\n" })?;
                writer.flush()?;
            }
            Output::Csv(mut csv) => csv.flush()?,
            Output::Xlsx(sheet, mut writer) => {
                sheet.finish(&mut writer)?;
                writer.flush()?;
            }
        }
        Ok(())
    }
}

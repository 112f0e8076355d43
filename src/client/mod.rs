//! The merchant's side (CONTRACT §11): `storefront locations push` and `pull` talk to a running
//! service over HTTP exactly as a merchant's integration would. Nothing here validates a location:
//! the service stays the one place of every rule, and this module only converts files to requests
//! and answers back to rows.

pub mod api;
pub mod cells;
pub mod chunk;
pub mod csv_dialect;
mod csv_rows;
mod json_rows;
pub mod layout;
pub mod missing;
pub mod pull;
pub mod push;
pub mod read_cells;
pub mod report;
pub mod rows;
pub mod send;
pub mod workbook;
pub mod write_cells;

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use anyhow::anyhow;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Value, json};

use api::{Api, Attempt, Backoff, Failed};
use rows::Format;

/// How a command that did not finish ends.
#[derive(Debug)]
pub enum Exit {
    /// Nothing was sent (misuse, an unreadable file, the service unreachable or refusing the key):
    /// exit 2.
    NothingSent(anyhow::Error),
    /// Something went wrong after sending began: exit 1.
    Failed(anyhow::Error),
}

impl Exit {
    /// Prints the error (and, when nothing was sent, `nothing_sent` after it) and returns the
    /// process's exit code: 2 when nothing was sent, else 1.
    fn report(self, nothing_sent: Option<&str>) -> ExitCode {
        let mut stderr = std::io::stderr();
        match self {
            Exit::NothingSent(e) => {
                let _ = writeln!(stderr, "error: {e:#}");
                if let Some(note) = nothing_sent {
                    let _ = writeln!(stderr, "{note}");
                }
                ExitCode::from(2)
            }
            Exit::Failed(e) => {
                let _ = writeln!(stderr, "error: {e:#}");
                ExitCode::FAILURE
            }
        }
    }
}

/// The format named by `--format`, else by the file's extension.
fn format_of(path: &Path, explicit: Option<Format>) -> anyhow::Result<Format> {
    explicit.or_else(|| Format::of_path(path)).ok_or_else(|| {
        anyhow!(
            "cannot tell the format of {} from its name: use .jsonl, .ndjson, .json or .csv, or --format",
            path.display()
        )
    })
}

/// Checks that the service answers and takes the key, before anything is sent. A refused
/// connection is final (nothing listens there); a 429 is waited out and a server error retried.
async fn probe(api: &Api, retries: u32) -> anyhow::Result<()> {
    let body = json!({ "pagination": { "limit": 1 } });
    let mut backoff = Backoff::new(retries);
    loop {
        match api.attempt("/v1/location/list", &body).await {
            Attempt::Answered(_) => return Ok(()),
            Attempt::Wait(wait) => {
                if !backoff.wait_out(wait).await {
                    return Err(anyhow!("the service keeps refusing: {}", backoff.rate_limited()));
                }
            }
            Attempt::Refused(e) if e.status == 401 => {
                return Err(anyhow!("the service refused the API key ({}: {})", e.code, e.message));
            }
            Attempt::Refused(e) => {
                return Err(anyhow!(
                    "the service refused the request ({} {}: {})",
                    e.status,
                    e.code,
                    e.message
                ));
            }
            Attempt::NotStored(why) if why.starts_with("cannot connect") => {
                return Err(anyhow!("the service cannot be reached: {why}"));
            }
            Attempt::NotStored(why) | Attempt::Unknown(why) => {
                if !backoff.pause().await {
                    return Err(anyhow!("the service cannot be reached: {why}"));
                }
            }
        }
    }
}

#[derive(Deserialize)]
struct Page<'a> {
    #[serde(borrow)]
    locations: Vec<&'a RawValue>,
    pagination: Pagination,
}

#[derive(Deserialize)]
struct Pagination {
    has_next: bool,
    next_cursor: Option<String>,
}

/// Walks `/v1/location/list` under `filter` from the first page to the last, 1000 records a page,
/// handing each record, as the service wrote it, to `each`.
async fn walk(
    api: &Api,
    filter: &Value,
    retries: u32,
    mut each: impl FnMut(&RawValue) -> Result<(), Failed>,
) -> Result<(), Failed> {
    let mut cursor: Option<String> = None;
    loop {
        let body = json!({ "filter": filter, "pagination": { "limit": 1000, "cursor": cursor } });
        let mut backoff = Backoff::new(retries);
        let bytes = api.call("/v1/location/list", &body, &mut backoff).await?;
        let page: Page<'_> =
            serde_json::from_slice(&bytes).map_err(|e| Failed::GaveUp(format!("a list page that is not one: {e}")))?;
        for record in page.locations {
            each(record)?;
        }
        match page.pagination.next_cursor {
            Some(next) if page.pagination.has_next => cursor = Some(next),
            _ => return Ok(()),
        }
    }
}

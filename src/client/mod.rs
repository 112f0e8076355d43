//! The merchant's side: `storefront locations push` and `pull` talk to a running
//! service over HTTP exactly as a merchant's integration would. Nothing here validates a location:
//! the service stays the one place of every rule, and this module only converts files to requests
//! and answers back to rows.

//!
//! Its layers, each using only those below it:
//! - `file`: files as programs write them (one cell of any file, CSV dialects and records, JSON
//!   rows, workbooks); nothing of locations;
//! - `table`: the layout of a location's row (columns, a row's cells into an item and a record
//!   into cells, the rows of a file, a row's error);
//! - `outcome`: where a row goes and how it ends, given what is stored and what the service
//!   answered (pure), and `apply`: a chunk of rows applied in those steps, by whoever applies it
//!   (push over HTTP, the service's import inside a transaction);
//! - `service`: the service over HTTP (one attempt and its outcome, sending a chunk's items,
//!   checking the service answers, walking the stored list);
//! - `push` and `pull`: the commands.

pub mod apply;
pub mod outcome;
pub(crate) mod pull;
pub(crate) mod push;
pub(crate) mod service;

// Files and rows, read and written without the service, are in crates/core.
pub use storefront_core::client::{file, table};

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use anyhow::anyhow;

use table::rows::Format;

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

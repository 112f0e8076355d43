use std::io::Write;
use std::process::ExitCode;

use clap::Parser;
use storefront::cli::{self, Cli};
use storefront::telemetry;

/// jemalloc, with its background threads purging freed pages, so that memory a burst of large
/// requests took goes back to the system once they are answered (glibc's malloc keeps it).
#[cfg(feature = "jemalloc")]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

#[tokio::main]
async fn main() -> ExitCode {
    // Without background threads jemalloc purges only when it allocates: an idle server would keep
    // what a burst left. Failing to start them only costs that.
    #[cfg(feature = "jemalloc")]
    let _ = tikv_jemalloc_ctl::background_thread::write(true);
    let cli = Cli::parse();
    let _logs = telemetry::init(cli.log_format);
    match cli::run(cli).await {
        Ok(code) => code,
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

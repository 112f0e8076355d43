use std::io::Write;
use std::process::ExitCode;

use clap::Parser;
use storefront::cli::{self, Cli};
use storefront::telemetry;

#[tokio::main]
async fn main() -> ExitCode {
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

//! Logging: `tracing` to stderr, pretty on a terminal, one JSON object per line otherwise.

use std::io::IsTerminal;

use tracing_subscriber::EnvFilter;

use crate::config::LogFormat;

/// Installs the global subscriber. `RUST_LOG` overrides the default level (`info`).
pub fn init(format: Option<LogFormat>) {
    let format = format.unwrap_or(if std::io::stderr().is_terminal() {
        LogFormat::Pretty
    } else {
        LogFormat::Json
    });
    let filter = || EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = || tracing_subscriber::fmt().with_writer(std::io::stderr);
    // `log_internal_errors(false)`: when stderr is gone (a closed pipe), tracing-subscriber would
    // report the failed write with `eprintln!`, which panics; a server must outlive its log reader.
    let _ = match format {
        LogFormat::Pretty => builder()
            .compact()
            .with_env_filter(filter())
            .log_internal_errors(false)
            .try_init(),
        LogFormat::Json => builder()
            .json()
            .flatten_event(true)
            .with_current_span(true)
            .with_span_list(false)
            .with_env_filter(filter())
            .log_internal_errors(false)
            .try_init(),
    };
}

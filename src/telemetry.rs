//! Logging: `tracing` to stderr, pretty on a terminal, one JSON object per line otherwise.

use std::io::IsTerminal;
use std::sync::OnceLock;

use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};

use tracing_subscriber::EnvFilter;

use crate::config::LogFormat;

/// Installs the global subscriber. `RUST_LOG` overrides the default level (`info`). Lines are
/// written by a background thread (`tracing-appender`), off the requests' path, in batches (it
/// flushes its buffer each time its queue runs empty); keep the
/// returned guard alive until exit, so the last lines are flushed.
pub fn init(format: Option<LogFormat>) -> tracing_appender::non_blocking::WorkerGuard {
    let format = format.unwrap_or(if std::io::stderr().is_terminal() {
        LogFormat::Pretty
    } else {
        LogFormat::Json
    });
    let filter = || EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let (writer, guard) = tracing_appender::non_blocking::NonBlockingBuilder::default()
        // Never drop a line: when the buffer is full, the logging thread waits.
        .lossy(false)
        .finish(std::io::BufWriter::with_capacity(64 * 1024, std::io::stderr()));
    let builder = || tracing_subscriber::fmt().with_writer(writer.clone());
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
            .with_current_span(false)
            .with_span_list(false)
            .with_env_filter(filter())
            .log_internal_errors(false)
            .try_init(),
    };
    guard
}

/// Bucket bounds of `http_request_duration_seconds`, from 100 µs to 30 s.
const DURATION_BUCKETS: &[f64] = &[
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
];

/// The process's Prometheus recorder, installed on first use (`None` if another recorder was
/// installed first, in which case `/metrics` says so).
pub fn metrics() -> Option<&'static PrometheusHandle> {
    static HANDLE: OnceLock<Option<PrometheusHandle>> = OnceLock::new();
    HANDLE
        .get_or_init(|| {
            PrometheusBuilder::new()
                .set_buckets_for_metric(Matcher::Full("http_request_duration_seconds".into()), DURATION_BUCKETS)
                .ok()?
                .install_recorder()
                .ok()
        })
        .as_ref()
}

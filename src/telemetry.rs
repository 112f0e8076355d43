//! Logging: `tracing` to stderr, pretty on a terminal, one JSON object per line otherwise.

use std::io::{IsTerminal, Write};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::Duration;

use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};

use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::MakeWriter;

use crate::config::LogFormat;

/// Installs the global subscriber. `RUST_LOG` overrides the default level (`info`). Lines go to
/// stderr through a [`LogSink`]; keep the returned sink alive until exit, so the last lines are
/// written.
pub fn init(format: Option<LogFormat>) -> LogSink {
    let format = format.unwrap_or(if std::io::stderr().is_terminal() {
        LogFormat::Pretty
    } else {
        LogFormat::Json
    });
    let filter = || EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let sink = LogSink::start(std::io::stderr());
    let builder = || tracing_subscriber::fmt().with_writer(sink.writer());
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
    sink
}

/// A batch is written once it holds this many bytes...
const FLUSH_AT: usize = 64 * 1024;
/// ...or once its first line is this old.
const FLUSH_EVERY: Duration = Duration::from_millis(50);
/// Past this many unwritten bytes (stderr is slower than the lines come), loggers wait for the
/// writer instead of a line being dropped.
const MAX_PENDING: usize = 4 * 1024 * 1024;

/// Where log lines go: appended whole to a shared buffer (one short lock, no thread woken per
/// line) and written out in batches by a background thread, off the requests' path. A line is
/// written at most [`FLUSH_EVERY`] after it is logged, and no line is ever dropped; dropping the
/// sink writes what is left and stops the thread.
pub struct LogSink {
    shared: Arc<Shared>,
    thread: Option<std::thread::JoinHandle<()>>,
}

struct Shared {
    pending: Mutex<Pending>,
    /// Where batches go; loggers write to it themselves once the sink is closing.
    out: Mutex<Box<dyn Write + Send>>,
    /// Signalled when a batch starts (the buffer was empty), when it reaches `FLUSH_AT` and on close.
    wake: Condvar,
    /// Signalled when the writer has taken the buffer (loggers waiting at `MAX_PENDING`).
    taken: Condvar,
}

#[derive(Default)]
struct Pending {
    lines: Vec<u8>,
    closing: bool,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Pending> {
        self.pending.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn out(&self) -> MutexGuard<'_, Box<dyn Write + Send>> {
        self.out.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl LogSink {
    /// Starts the background writer on `out`.
    pub fn start(out: impl Write + Send + 'static) -> LogSink {
        let shared = Arc::new(Shared {
            pending: Mutex::new(Pending::default()),
            out: Mutex::new(Box::new(out)),
            wake: Condvar::new(),
            taken: Condvar::new(),
        });
        let thread = std::thread::Builder::new()
            .name("log-writer".into())
            .spawn({
                let shared = Arc::clone(&shared);
                move || write_batches(&shared)
            })
            .ok();
        if thread.is_none() {
            // No thread: loggers write their lines themselves (see `SinkWriter::write`).
            shared.lock().closing = true;
        }
        LogSink { shared, thread }
    }

    /// What the subscriber writes through.
    pub fn writer(&self) -> SinkWriter {
        SinkWriter(Arc::clone(&self.shared))
    }
}

impl Drop for LogSink {
    fn drop(&mut self) {
        self.shared.lock().closing = true;
        self.shared.wake.notify_all();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn write_batches(shared: &Shared) {
    let mut batch = Vec::new();
    loop {
        let (mut out, closing) = {
            let mut pending = shared.lock();
            while pending.lines.is_empty() && !pending.closing {
                pending = shared.wake.wait(pending).unwrap_or_else(PoisonError::into_inner);
            }
            if !pending.closing && pending.lines.len() < FLUSH_AT {
                pending = shared
                    .wake
                    .wait_timeout(pending, FLUSH_EVERY)
                    .unwrap_or_else(PoisonError::into_inner)
                    .0;
            }
            std::mem::swap(&mut pending.lines, &mut batch);
            // `out` is taken before `pending` is let go: a logger that finds the sink closing
            // writes its line after this batch, not before it.
            (shared.out(), pending.closing)
        };
        shared.taken.notify_all();
        // A failed write (stderr closed) loses those lines, never the server.
        let _ = out.write_all(&batch).and_then(|()| out.flush());
        drop(out);
        batch.clear();
        batch.shrink_to(FLUSH_AT * 2);
        if closing && shared.lock().lines.is_empty() {
            return;
        }
    }
}

/// The subscriber's handle on a [`LogSink`]: each `write` is one whole formatted line.
#[derive(Clone)]
pub struct SinkWriter(Arc<Shared>);

impl Write for SinkWriter {
    fn write(&mut self, line: &[u8]) -> std::io::Result<usize> {
        let shared = &self.0;
        let mut pending = shared.lock();
        while pending.lines.len() >= MAX_PENDING && !pending.closing {
            pending = shared.taken.wait(pending).unwrap_or_else(PoisonError::into_inner);
        }
        if pending.closing {
            // The writer is gone or going: this line is written here, after what it had.
            let mut out = shared.out();
            drop(pending);
            return out.write_all(line).and_then(|()| out.flush()).map(|()| line.len());
        }
        let was_empty = pending.lines.is_empty();
        pending.lines.extend_from_slice(line);
        let full = pending.lines.len() >= FLUSH_AT;
        drop(pending);
        if was_empty || full {
            shared.wake.notify_one();
        }
        Ok(line.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> MakeWriter<'a> for SinkWriter {
    type Writer = SinkWriter;

    fn make_writer(&'a self) -> SinkWriter {
        self.clone()
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A `Write` whose bytes the test can read while the sink holds it.
    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .extend_from_slice(bytes);
            Ok(bytes.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl Shared {
        fn text(&self) -> String {
            String::from_utf8_lossy(&self.0.lock().unwrap_or_else(PoisonError::into_inner)).into_owned()
        }
    }

    #[test]
    fn every_line_from_every_thread_is_written_whole_and_in_each_threads_order() {
        let out = Shared::default();
        let sink = LogSink::start(out.clone());
        std::thread::scope(|s| {
            for t in 0..4 {
                let mut writer = sink.writer();
                s.spawn(move || {
                    for i in 0..20_000 {
                        // Each line is one write, as the subscriber does it.
                        writer.write_all(format!("t{t} line {i} {}\n", "x".repeat(i % 300)).as_bytes())?;
                    }
                    Ok::<(), std::io::Error>(())
                });
            }
        });
        drop(sink);
        let text = out.text();
        let mut next = [0usize; 4];
        for line in text.lines() {
            let mut words = line.split(' ');
            let t: usize = words.next().and_then(|w| w[1..].parse().ok()).unwrap_or(99);
            assert_eq!(words.next(), Some("line"), "a torn line: {line:?}");
            let i: usize = words.next().and_then(|w| w.parse().ok()).unwrap_or(usize::MAX);
            assert_eq!(words.next().map(str::len), Some(i % 300), "a torn line: {line:?}");
            assert_eq!(i, next[t], "thread {t}'s lines out of order");
            next[t] += 1;
        }
        assert_eq!(next, [20_000; 4]);
    }

    #[test]
    fn a_lone_line_is_written_without_waiting_for_more() {
        let out = Shared::default();
        let sink = LogSink::start(out.clone());
        sink.writer().write_all(b"only line\n").ok();
        let since = std::time::Instant::now();
        while out.text().is_empty() && since.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(out.text(), "only line\n");
        drop(sink);
    }

    #[test]
    fn a_line_logged_after_the_sink_closed_is_still_written_after_the_rest() {
        let out = Shared::default();
        let sink = LogSink::start(out.clone());
        let mut late = sink.writer();
        sink.writer().write_all(b"first\n").ok();
        drop(sink);
        late.write_all(b"late\n").ok();
        assert_eq!(out.text(), "first\nlate\n");
    }
}

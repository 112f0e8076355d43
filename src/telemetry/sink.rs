//! The batching sink: log lines written by a thread of their own, off the request path.

use std::io::Write;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tracing_subscriber::fmt::MakeWriter;

/// A batch is written once it holds this many bytes...
pub(super) const FLUSH_AT: usize = 64 * 1024;
/// ...or once its first line is this old.
pub(super) const FLUSH_EVERY: Duration = Duration::from_millis(50);
/// Past this many unwritten bytes (stderr is slower than the lines come, or blocked), a line is
/// dropped and counted in `log_lines_dropped_total` rather than a request waiting for the log.
pub(super) const MAX_PENDING: usize = 4 * 1024 * 1024;

/// Lines dropped since the process started (also the metric `log_lines_dropped_total`).
pub static DROPPED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Where log lines go: appended whole to a shared buffer (one short lock, no thread woken per
/// line) and written out in batches by a background thread, off the requests' path. A line is
/// written at most [`FLUSH_EVERY`] after it is logged, unless [`MAX_PENDING`] bytes are already
/// waiting: then it is dropped and counted, so that logging never blocks a request. Dropping the
/// sink writes what is left and stops the thread.
pub struct LogSink {
    shared: Arc<Shared>,
    thread: Option<std::thread::JoinHandle<()>>,
}

pub(super) struct Shared {
    pending: Mutex<Pending>,
    /// Where batches go; loggers write to it themselves once the sink is closing.
    out: Mutex<Box<dyn Write + Send>>,
    /// Signalled when a batch starts (the buffer was empty), when it reaches `FLUSH_AT` and on close.
    wake: Condvar,
}

#[derive(Default)]
pub(super) struct Pending {
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

pub(super) fn write_batches(shared: &Shared) {
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

impl SinkWriter {
    /// Appends one whole line.
    pub(super) fn append(&self, line: &[u8]) {
        // Only the sink's own `out` can fail, and only once the sink is closing; the line is then lost,
        // never the server.
        let _ = self.write_line(line);
    }

    fn write_line(&self, line: &[u8]) -> std::io::Result<usize> {
        let shared = &self.0;
        let mut pending = shared.lock();
        if pending.lines.len() >= MAX_PENDING && !pending.closing {
            drop(pending);
            DROPPED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            metrics::counter!("log_lines_dropped_total").increment(1);
            return Ok(line.len());
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
}

impl Write for SinkWriter {
    fn write(&mut self, line: &[u8]) -> std::io::Result<usize> {
        self.write_line(line)
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

#[cfg(test)]
mod tests {
    use std::sync::atomic::Ordering;

    use super::*;

    /// An output that blocks until told to go on.
    struct Blocked(Arc<(Mutex<bool>, Condvar)>);

    impl Write for Blocked {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            let (open, cv) = &*self.0;
            let mut open = open.lock().unwrap_or_else(PoisonError::into_inner);
            while !*open {
                open = cv.wait(open).unwrap_or_else(PoisonError::into_inner);
            }
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_blocked_output_never_blocks_a_logger_lines_past_the_buffer_are_dropped_and_counted() {
        let gate = Arc::new((Mutex::new(false), Condvar::new()));
        let sink = LogSink::start(Blocked(Arc::clone(&gate)));
        let writer = sink.writer();
        let line = vec![b'x'; 1024];
        let before = DROPPED.load(Ordering::Relaxed);
        // Twice the buffer: the first batch is taken by the (blocked) writer, the buffer fills,
        // and the rest is dropped; none of this waits.
        for _ in 0..(3 * MAX_PENDING / line.len()) {
            writer.append(&line);
        }
        assert!(DROPPED.load(Ordering::Relaxed) - before >= (MAX_PENDING / line.len()) as u64 / 2);
        *gate.0.lock().unwrap_or_else(PoisonError::into_inner) = true;
        gate.1.notify_all();
        drop(sink);
    }
}

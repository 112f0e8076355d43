//! Logging: `tracing` to stderr, pretty on a terminal, one JSON object per line otherwise.

use std::cell::RefCell;
use std::fmt::{self, Write as _};
use std::io::{IsTerminal, Write};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::Duration;

use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};

use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::format::{self, FormatEvent, FormatFields};
use tracing_subscriber::fmt::{FmtContext, MakeWriter};
use tracing_subscriber::registry::LookupSpan;

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
            .log_internal_errors(false)
            .event_format(JsonLines)
            .with_env_filter(filter())
            .try_init()
            .map(|()| {
                let _ = JSON_LINES.set(sink.writer());
            }),
    };
    sink
}

/// Where JSON lines go once `init` has installed the JSON format: [`Access::log`] writes there
/// itself.
static JSON_LINES: OnceLock<SinkWriter> = OnceLock::new();

/// The access log's line for one answered request: `storefront::access` at INFO, message `served`.
pub struct Access<'a> {
    pub method: &'a str,
    /// The path template matched, or `unmatched`.
    pub route: &'a str,
    pub status: u16,
    pub latency: Duration,
    pub request_id: &'a str,
    /// Empty when no merchant was authenticated.
    pub merchant_id: &'a str,
}

impl Access<'_> {
    /// Logs the line, when `RUST_LOG` lets `storefront::access` through at INFO. In JSON it is
    /// written straight into the sink, in the shape [`JsonLines`] gives every event, without
    /// tracing's field visitor: it is the one line written for every request, and through the
    /// visitor it cost a fifth of a list request's CPU.
    pub fn log(&self) {
        if !tracing::enabled!(target: "storefront::access", tracing::Level::INFO) {
            return;
        }
        match JSON_LINES.get() {
            Some(sink) => sink.append(self.json_line(std::time::SystemTime::now()).as_bytes()),
            None => tracing::info!(
                target: "storefront::access",
                method = self.method,
                route = self.route,
                status = self.status,
                latency_ms = self.latency.as_secs_f64() * 1000.0,
                request_id = self.request_id,
                merchant_id = self.merchant_id,
                "served"
            ),
        }
    }

    fn json_line(&self, at: std::time::SystemTime) -> String {
        let mut line = String::with_capacity(384);
        // Writing into a `String` does not fail.
        let _ = self.write_json(&mut line, at);
        line
    }

    fn write_json(&self, w: &mut String, at: std::time::SystemTime) -> fmt::Result {
        w.push_str("{\"timestamp\":\"");
        write_timestamp(w, at)?;
        w.push_str("\",\"level\":\"INFO\",\"message\":\"served\",\"method\":");
        json_str(w, self.method)?;
        w.push_str(",\"route\":");
        json_str(w, self.route)?;
        write!(w, ",\"status\":{},\"latency_ms\":", self.status)?;
        // Milliseconds to the nanosecond, without floating point.
        let nanos = self.latency.as_nanos();
        write!(w, "{}.{:06}", nanos / 1_000_000, nanos % 1_000_000)?;
        w.push_str(",\"request_id\":");
        json_str(w, self.request_id)?;
        w.push_str(",\"merchant_id\":");
        json_str(w, self.merchant_id)?;
        w.push_str(",\"target\":\"storefront::access\"}\n");
        Ok(())
    }
}

/// One JSON object per event and line: `timestamp` (RFC 3339, UTC, µs), `level`, the event's
/// fields (`message` first) at the top level, then `target`; the shape of tracing-subscriber's
/// flattened JSON, written straight into the line buffer: no intermediate map, no allocation.
struct JsonLines;

impl<S, N> FormatEvent<S, N> for JsonLines
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(&self, _: &FmtContext<'_, S, N>, mut w: format::Writer<'_>, event: &Event<'_>) -> fmt::Result {
        w.write_str("{\"timestamp\":\"")?;
        write_timestamp(&mut w, std::time::SystemTime::now())?;
        w.write_str("\",\"level\":\"")?;
        w.write_str(event.metadata().level().as_str())?;
        w.write_char('"')?;
        let mut fields = JsonFields {
            w: &mut w,
            result: Ok(()),
        };
        event.record(&mut fields);
        fields.result?;
        w.write_str(",\"target\":")?;
        json_str(&mut w, event.metadata().target())?;
        w.write_str("}\n")
    }
}

/// Writes each field as `,"name":value`.
struct JsonFields<'a, 'w> {
    w: &'a mut format::Writer<'w>,
    result: fmt::Result,
}

impl JsonFields<'_, '_> {
    fn field(&mut self, field: &Field, value: impl FnOnce(&mut format::Writer<'_>) -> fmt::Result) {
        if self.result.is_ok() {
            self.result = (|| {
                self.w.write_char(',')?;
                json_str(self.w, field.name())?;
                self.w.write_char(':')?;
                value(self.w)
            })();
        }
    }
}

impl Visit for JsonFields<'_, '_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.field(field, |w| json_str(w, value));
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.field(field, |w| write!(w, "{value}"));
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.field(field, |w| write!(w, "{value}"));
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        self.field(field, |w| write!(w, "{value}"));
    }

    fn record_f64(&mut self, field: &Field, value: f64) {
        // JSON has no NaN or infinity.
        self.field(field, |w| {
            if value.is_finite() {
                write!(w, "{value}")
            } else {
                w.write_str("null")
            }
        });
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.field(field, |w| {
            w.write_char('"')?;
            write!(JsonEscaped(&mut *w), "{value:?}")?;
            w.write_char('"')
        });
    }
}

/// `at` in RFC 3339, UTC, to the microsecond: `2026-11-21T14:07:07.784157Z`. The date and the
/// time of day change once a second, so each thread formats them once a second; a line then
/// costs six digits.
fn write_timestamp(w: &mut impl fmt::Write, at: std::time::SystemTime) -> fmt::Result {
    thread_local! {
        static SECOND: RefCell<(Option<u64>, String)> = const { RefCell::new((None, String::new())) };
    }
    let since_epoch = at.duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    let second = since_epoch.as_secs();
    SECOND.with_borrow_mut(|(formatted, prefix)| {
        if *formatted != Some(second) {
            let t = time::OffsetDateTime::from(at);
            prefix.clear();
            write!(
                prefix,
                "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.",
                t.year(),
                u8::from(t.month()),
                t.day(),
                t.hour(),
                t.minute(),
                t.second()
            )?;
            *formatted = Some(second);
        }
        w.write_str(prefix)
    })?;
    let mut micros = since_epoch.subsec_micros();
    let mut digits = [b'0'; 6];
    for digit in digits.iter_mut().rev() {
        *digit = b'0' + (micros % 10) as u8;
        micros /= 10;
    }
    digits.iter().try_for_each(|&d| w.write_char(char::from(d)))?;
    w.write_char('Z')
}

fn json_str(w: &mut impl fmt::Write, s: &str) -> fmt::Result {
    w.write_char('"')?;
    JsonEscaped(&mut *w).write_str(s)?;
    w.write_char('"')
}

/// A `fmt::Write` that escapes what passes through it for the inside of a JSON string.
struct JsonEscaped<W>(W);

impl<W: fmt::Write> fmt::Write for JsonEscaped<W> {
    fn write_str(&mut self, mut s: &str) -> fmt::Result {
        // Everything to escape is ASCII, so each byte escaped is a whole character and the runs
        // between them are whole UTF-8; the runs are found by table, a byte at a time.
        while let Some(at) = s.bytes().position(|b| ESCAPED[usize::from(b)]) {
            let (run, rest) = s.split_at(at);
            self.0.write_str(run)?;
            let b = rest.as_bytes()[0];
            match b {
                b'"' => self.0.write_str("\\\"")?,
                b'\\' => self.0.write_str("\\\\")?,
                b'\n' => self.0.write_str("\\n")?,
                b'\r' => self.0.write_str("\\r")?,
                b'\t' => self.0.write_str("\\t")?,
                _ => write!(self.0, "\\u{b:04x}")?,
            }
            s = &rest[1..];
        }
        self.0.write_str(s)
    }
}

/// The bytes a JSON string cannot hold as they are: `"`, `\\` and the controls below U+0020.
const ESCAPED: [bool; 256] = {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 0x20 {
        table[b] = true;
        b += 1;
    }
    table[b'"' as usize] = true;
    table[b'\\' as usize] = true;
    table
};

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

impl SinkWriter {
    /// Appends one whole line.
    fn append(&self, line: &[u8]) {
        // Only the sink's own `out` can fail, and only once the sink is closing; the line is then lost,
        // never the server.
        let _ = self.write_line(line);
    }

    fn write_line(&self, line: &[u8]) -> std::io::Result<usize> {
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

    /// What `log` writes through a subscriber formatting with [`JsonLines`].
    fn json_lines_of(log: impl FnOnce()) -> String {
        let out = Shared::default();
        let subscriber = tracing_subscriber::fmt()
            .event_format(JsonLines)
            .with_writer({
                let out = out.clone();
                move || out.clone()
            })
            .finish();
        tracing::subscriber::with_default(subscriber, log);
        out.text()
    }

    #[test]
    fn timestamps_are_rfc3339_in_utc_to_the_microsecond_from_one_second_to_the_next() {
        let at =
            |secs: u64, micros: u64| std::time::UNIX_EPOCH + Duration::from_secs(secs) + Duration::from_micros(micros);
        let text = |t| {
            let mut s = String::new();
            write_timestamp(&mut s, t).unwrap();
            s
        };
        assert_eq!(text(at(1_795_789_627, 42)), "2026-11-27T14:27:07.000042Z");
        assert_eq!(text(at(1_795_789_627, 999_999)), "2026-11-27T14:27:07.999999Z");
        assert_eq!(text(at(1_795_789_628, 0)), "2026-11-27T14:27:08.000000Z");
        assert_eq!(text(at(951_782_400, 123_456)), "2000-02-29T00:00:00.123456Z");
        assert_eq!(text(at(1_795_789_627, 7)), "2026-11-27T14:27:07.000007Z");
    }

    #[test]
    fn the_access_line_written_straight_is_the_line_tracing_would_write() {
        let access = Access {
            method: "POST",
            route: "/v1/categories/list",
            status: 200,
            latency: Duration::from_nanos(2_417_568),
            request_id: "a client's \"id\"\twith\u{1}controls, é and \\",
            merchant_id: "01a1fe4e-1308-7249-bb05-0ba17e94836f",
        };
        // Unit tests install no JSON sink, so this line goes through tracing and `JsonLines`.
        let traced = json_lines_of(|| access.log());
        let at = std::time::UNIX_EPOCH + Duration::from_secs(1_795_789_627);
        let straight = access.json_line(at);
        assert!(traced.ends_with('\n') && straight.ends_with('\n'), "{traced}{straight}");
        assert_eq!((traced.lines().count(), straight.lines().count()), (1, 1));
        let keys = |line: &str| -> Vec<String> {
            let object: serde_json_borrow::Value = serde_json::from_str(line).unwrap();
            object.as_object().unwrap().iter().map(|(k, _)| k.to_owned()).collect()
        };
        assert_eq!(keys(&straight), keys(&traced));
        let (mut straight, mut traced): (serde_json::Value, serde_json::Value) = (
            serde_json::from_str(&straight).unwrap(),
            serde_json::from_str(&traced).unwrap(),
        );
        assert_eq!(straight["timestamp"], "2026-11-27T14:27:07.000000Z");
        assert_eq!(straight["latency_ms"].as_f64(), Some(2.417568));
        assert!((traced["latency_ms"].as_f64().unwrap() - 2.417568).abs() < 1e-9);
        assert_eq!(straight["request_id"], access.request_id);
        for line in [&mut straight, &mut traced] {
            let object = line.as_object_mut().unwrap();
            object.remove("timestamp");
            object.remove("latency_ms");
        }
        assert_eq!(straight, traced);
    }

    #[test]
    fn json_lines_carry_every_field_escaped_in_the_flattened_shape() {
        let text = json_lines_of(|| {
            let tricky = "a \"quote\", a \\ backslash,\na newline, a \u{1} control, é and 🦀";
            tracing::info!(target: "storefront::access", method = %"POST", status = 200u16, latency_ms = 0.25,
                           ratio = f64::NAN, ok = true, delta = -3i64, note = tricky, "served");
            tracing::warn!(error = ?Some("x\"y"), "went \"wrong\"");
        });
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2, "{text}");
        let first: serde_json::Value = serde_json::from_str(lines[0]).unwrap();
        let order = [
            "timestamp",
            "level",
            "message",
            "method",
            "status",
            "latency_ms",
            "ratio",
            "ok",
            "delta",
            "note",
            "target",
        ];
        assert_eq!(first.as_object().unwrap().len(), order.len());
        let at: Vec<usize> = order
            .iter()
            .map(|k| lines[0].find(&format!("\"{k}\":")).unwrap())
            .collect();
        assert!(at.is_sorted(), "keys out of order: {}", lines[0]);
        let timestamp = first["timestamp"].as_str().unwrap();
        // RFC 3339 in UTC with microseconds: 2026-11-21T14:07:07.784157Z
        let shape: String = timestamp
            .chars()
            .map(|c| if c.is_ascii_digit() { '9' } else { c })
            .collect();
        assert_eq!(shape, "9999-99-99T99:99:99.999999Z");
        assert_eq!(first["level"], "INFO");
        assert_eq!(first["message"], "served");
        assert_eq!(first["method"], "POST");
        assert_eq!(first["status"], 200);
        assert_eq!(first["latency_ms"], 0.25);
        assert_eq!(first["ratio"], serde_json::Value::Null);
        assert_eq!(first["ok"], true);
        assert_eq!(first["delta"], -3);
        assert_eq!(
            first["note"],
            "a \"quote\", a \\ backslash,\na newline, a \u{1} control, é and 🦀"
        );
        assert_eq!(first["target"], "storefront::access");
        let second: serde_json::Value = serde_json::from_str(lines[1]).unwrap();
        assert_eq!(second["level"], "WARN");
        assert_eq!(second["message"], "went \"wrong\"");
        assert_eq!(second["error"], "Some(\"x\\\"y\")");
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

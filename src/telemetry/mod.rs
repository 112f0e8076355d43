//! Logging: `tracing` to stderr, pretty on a terminal, one JSON object per line otherwise.

mod access;
mod json;
mod metrics;
mod sink;

use std::io::IsTerminal;

use tracing_subscriber::EnvFilter;

pub use access::Access;
use json::JsonLines;
pub use metrics::metrics;
pub use sink::{LogSink, SinkWriter};

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
                let _ = access::JSON_LINES.set(sink.writer());
            }),
    };
    sink
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::sync::{Arc, Mutex, PoisonError};
    use std::time::Duration;

    use super::json::write_timestamp;
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
            client: Some([127, 0, 0, 2].into()),
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
        assert_eq!(straight["client"], "127.0.0.2");
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
        // Fewer bytes in all than the sink holds unwritten before it drops lines: however slowly
        // its thread runs on a loaded machine, every line must come out.
        const LINES: usize = 5_000;
        std::thread::scope(|s| {
            for t in 0..4 {
                let mut writer = sink.writer();
                s.spawn(move || {
                    for i in 0..LINES {
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
        assert_eq!(next, [LINES; 4]);
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

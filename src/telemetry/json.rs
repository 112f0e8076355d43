//! The JSON line format of every log event: one flat object per line, strings escaped by table.

use std::cell::RefCell;
use std::fmt::{self, Write as _};

use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_subscriber::fmt::FmtContext;
use tracing_subscriber::fmt::format::{self, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;

/// One JSON object per event and line: `timestamp` (RFC 3339, UTC, µs), `level`, the event's
/// fields (`message` first) at the top level, then `target`; the shape of tracing-subscriber's
/// flattened JSON, written straight into the line buffer: no intermediate map, no allocation.
pub(super) struct JsonLines;

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
pub(super) struct JsonFields<'a, 'w> {
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
pub(super) fn write_timestamp(w: &mut impl fmt::Write, at: std::time::SystemTime) -> fmt::Result {
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

pub(super) fn json_str(w: &mut impl fmt::Write, s: &str) -> fmt::Result {
    w.write_char('"')?;
    JsonEscaped(&mut *w).write_str(s)?;
    w.write_char('"')
}

/// A `fmt::Write` that escapes what passes through it for the inside of a JSON string.
pub(super) struct JsonEscaped<W>(W);

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
pub(super) const ESCAPED: [bool; 256] = {
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

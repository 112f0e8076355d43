//! The access log's line, written straight into the JSON sink when there is one.

use std::fmt::{self, Write as _};
use std::net::IpAddr;
use std::time::Duration;

use std::sync::OnceLock;

use super::json::{json_str, write_timestamp};
use super::sink::SinkWriter;

/// The access log's line for one answered request: `storefront::access` at INFO, message `served`.
/// Where JSON lines go once `init` has installed the JSON format: [`Access::log`] writes there
/// itself.
pub(super) static JSON_LINES: OnceLock<SinkWriter> = OnceLock::new();

pub struct Access<'a> {
    pub method: &'a str,
    /// The path template matched, or `unmatched`.
    pub route: &'a str,
    pub status: u16,
    pub latency: Duration,
    pub request_id: &'a str,
    /// Empty when no merchant was authenticated.
    pub merchant_id: &'a str,
    /// The peer address of the connection (401s and 429s are logged with it).
    pub client: Option<IpAddr>,
}

/// An address as the access line shows it: empty when unknown.
struct Shown(Option<IpAddr>);

impl fmt::Display for Shown {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(ip) => write!(f, "{ip}"),
            None => Ok(()),
        }
    }
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
                client = %Shown(self.client),
                "served"
            ),
        }
    }

    pub(super) fn json_line(&self, at: std::time::SystemTime) -> String {
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
        // An address needs no escaping.
        write!(w, ",\"client\":\"{}\"", Shown(self.client))?;
        w.push_str(",\"target\":\"storefront::access\"}\n");
        Ok(())
    }
}

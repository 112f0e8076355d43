//! Webhooks: a merchant's endpoints, their delivery attempts, and the rules of
//! retrying: the schedule, its jitter, `Retry-After`, giving up, disabling.

use std::time::Duration;

use serde::ser::SerializeStruct;
use serde::{Serialize, Serializer};

use super::event::{EventType, EventTypes};
use super::wire::timestamp;
use crate::wire_enum;

/// Most endpoints a merchant has (deleted ones do not count; disabled ones do).
pub const MAX_WEBHOOKS: usize = 10;

/// Longest endpoint URL, in characters.
pub const MAX_URL_CHARS: usize = 2048;

/// Most attempts of one endpoint in flight on one instance (the schedule's and those made by
/// hand together): a receiver is not sent more at once than a small server takes.
pub const PER_ENDPOINT: usize = 8;

/// How long an attempt waits for the receiver's answer.
pub const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(15);

/// How much of a receiver's answer is read (and discarded).
pub const MAX_ANSWER_BYTES: usize = 64 * 1024;

/// How long the old secret still signs after a rotation.
pub const ROTATION_OVERLAP: Duration = Duration::from_secs(24 * 3600);

wire_enum! {
    /// Whether an endpoint gets deliveries.
    pub enum WebhookStatus {
        Enabled => "ENABLED",
        Disabled => "DISABLED",
    }
}

wire_enum! {
    /// Why an endpoint was disabled: it answered 410 (`gone`), or none of its attempts succeeded
    /// for `--webhook-disable-after` (`failing`).
    pub enum DisabledReason {
        Gone => "gone",
        Failing => "failing",
    }
}

wire_enum! {
    /// How an attempt ended.
    pub enum Outcome {
        Delivered => "delivered",
        Failed => "failed",
    }
}

wire_enum! {
    /// What made an attempt: the schedule (a recovery's attempts included), a
    /// person's resend, or a test.
    pub enum Trigger {
        Automatic => "automatic",
        Resend => "resend",
        Test => "test",
    }
}

/// An endpoint as the API shows it (never its secret).
#[derive(Clone, Debug, PartialEq)]
pub struct Webhook {
    pub webhook_id: String,
    pub url: String,
    /// `None`: every type.
    pub types: Option<EventTypes>,
    pub status: WebhookStatus,
    pub disabled_reason: Option<DisabledReason>,
    pub created_at_ms: i64,
}

impl Serialize for Webhook {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let types: Option<Vec<EventType>> = self.types.map(|t| t.types().collect());
        let created = timestamp(self.created_at_ms);
        let mut w = s.serialize_struct("Webhook", 6)?;
        w.serialize_field("webhook_id", &self.webhook_id)?;
        w.serialize_field("url", &self.url)?;
        w.serialize_field("types", &types)?;
        w.serialize_field("status", &self.status)?;
        w.serialize_field("disabled_reason", &self.disabled_reason)?;
        w.serialize_field("created_at", std::str::from_utf8(&created).unwrap_or_default())?;
        w.end()
    }
}

/// One delivery attempt, as `POST /v1/webhook/deliveries` answers it.
#[derive(Clone, Debug, PartialEq)]
pub struct Attempt {
    /// Its place in the endpoint's attempts (newest first by it).
    pub id: i64,
    pub event_id: String,
    /// The event's place in its merchant's log (none for a test event, which has none).
    pub sequence: Option<i64>,
    pub attempt: i64,
    pub attempted_at_ms: i64,
    pub outcome: Outcome,
    pub http_status: Option<i64>,
    pub error: Option<String>,
    pub duration_ms: i64,
    pub trigger: Trigger,
}

impl Serialize for Attempt {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let at = timestamp(self.attempted_at_ms);
        let mut a = s.serialize_struct("Attempt", 9)?;
        a.serialize_field("event_id", &self.event_id)?;
        a.serialize_field("sequence", &self.sequence)?;
        a.serialize_field("attempt", &self.attempt)?;
        a.serialize_field("attempted_at", std::str::from_utf8(&at).unwrap_or_default())?;
        a.serialize_field("outcome", &self.outcome)?;
        a.serialize_field("http_status", &self.http_status)?;
        a.serialize_field("error", &self.error)?;
        a.serialize_field("duration_ms", &self.duration_ms)?;
        a.serialize_field("trigger", &self.trigger)?;
        a.end()
    }
}

/// The delays between attempts: after the n-th failed attempt, the n-th delay; past the last,
/// the event is given up for that endpoint.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RetrySchedule(pub Vec<Duration>);

impl Default for RetrySchedule {
    /// 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 14 h, 20 h, 24 h.
    fn default() -> Self {
        let secs = [5, 300, 1800, 7200, 18_000, 36_000, 50_400, 72_000, 86_400];
        RetrySchedule(secs.iter().map(|s| Duration::from_secs(*s)).collect())
    }
}

impl RetrySchedule {
    /// `1s,2s,4s`: each a number followed by `ms`, `s`, `m`, `h` or `d`.
    pub fn parse(text: &str) -> Result<Self, String> {
        let delays = text
            .split(',')
            .map(|d| parse_duration(d.trim()).ok_or_else(|| format!("{d:?} is not a delay such as 5s, 5m or 2h")))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(RetrySchedule(delays))
    }

    /// When to try again after `attempts` failed attempts: the schedule's delay, `jitter` (in
    /// -1..1) times 10 % of it added, and at least `retry_after` (a receiver's `Retry-After`,
    /// capped at the schedule's longest delay: a receiver cannot push a retry past it); `None`
    /// once the schedule is spent.
    pub fn next(&self, attempts: usize, retry_after: Option<Duration>, jitter: f64) -> Option<Duration> {
        let delay = *self.0.get(attempts.checked_sub(1)?)?;
        let jittered = delay.mul_f64((1.0 + 0.1 * jitter.clamp(-1.0, 1.0)).max(0.0));
        let longest = self.0.iter().max().copied().unwrap_or_default();
        Some(retry_after.map_or(jittered, |r| jittered.max(r.min(longest))))
    }
}

/// A duration written as a number and a unit (`ms`, `s`, `m`, `h`, `d`), as the options take it.
pub fn parse_duration(text: &str) -> Option<Duration> {
    let split = text.find(|c: char| !c.is_ascii_digit())?;
    let (n, unit) = text.split_at(split);
    let n: u64 = n.parse().ok()?;
    let ms = match unit {
        "ms" => 1,
        "s" => 1000,
        "m" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        _ => return None,
    };
    n.checked_mul(ms).map(Duration::from_millis)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_schedule_is_the_contract_s_with_ten_percent_jitter_and_retry_after() {
        let s = RetrySchedule::default();
        assert_eq!(s.next(1, None, 0.0), Some(Duration::from_secs(5)));
        assert_eq!(s.next(2, None, 1.0), Some(Duration::from_secs(330)));
        assert_eq!(s.next(2, None, -1.0), Some(Duration::from_secs(270)));
        assert_eq!(s.next(9, None, 0.0), Some(Duration::from_secs(86_400)));
        assert_eq!(s.next(10, None, 0.0), None, "given up after the ninth retry");
        assert_eq!(
            s.next(1, Some(Duration::from_secs(60)), 0.0),
            Some(Duration::from_secs(60))
        );
        assert_eq!(
            s.next(2, Some(Duration::from_secs(60)), 0.0),
            Some(Duration::from_secs(300))
        );
        assert_eq!(s.next(0, None, 0.0), None);
        assert_eq!(
            s.next(1, Some(Duration::from_secs(86_400 * 30)), 0.0),
            Some(Duration::from_secs(86_400)),
            "a Retry-After is capped at the schedule's longest delay"
        );
    }

    #[test]
    fn schedules_and_durations_parse() {
        assert_eq!(
            RetrySchedule::parse("1s, 2s,500ms"),
            Ok(RetrySchedule(vec![
                Duration::from_secs(1),
                Duration::from_secs(2),
                Duration::from_millis(500)
            ]))
        );
        assert!(RetrySchedule::parse("1s,,2s").is_err());
        assert!(RetrySchedule::parse("1x").is_err());
        assert_eq!(parse_duration("5d"), Some(Duration::from_secs(5 * 86_400)));
        assert_eq!(parse_duration("30s"), Some(Duration::from_secs(30)));
        assert_eq!(parse_duration("s"), None);
        assert_eq!(parse_duration("5"), None);
    }

    #[test]
    fn a_webhook_reads_as_the_contract_s_object() {
        let w = Webhook {
            webhook_id: "wh".into(),
            url: "https://example.com/h".into(),
            types: Some([EventType::Archived].into_iter().collect()),
            status: WebhookStatus::Disabled,
            disabled_reason: Some(DisabledReason::Gone),
            created_at_ms: 0,
        };
        assert_eq!(
            serde_json::to_string(&w).unwrap_or_default(),
            r#"{"webhook_id":"wh","url":"https://example.com/h","types":["location.archived"],"status":"DISABLED","disabled_reason":"gone","created_at":"1970-01-01T00:00:00.000Z"}"#
        );
    }
}

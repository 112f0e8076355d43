//! How deliveries are made (`--webhook-*`), and the clock and jitter the worker is given.

use std::time::Duration;

use super::address::Reach;
use crate::domain::webhook::{ATTEMPT_TIMEOUT, RetrySchedule};

/// How deliveries are made (`--webhook-*`).
#[derive(Clone, Debug)]
pub struct WebhookSettings {
    pub retry: RetrySchedule,
    /// An endpoint whose attempts all failed for this long is disabled.
    pub disable_after: Duration,
    /// How long a receiver has to answer (`ATTEMPT_TIMEOUT` at most).
    pub attempt_timeout: Duration,
    pub reach: Reach,
}

impl Default for WebhookSettings {
    fn default() -> Self {
        WebhookSettings {
            retry: RetrySchedule::default(),
            disable_after: Duration::from_secs(5 * 86_400),
            attempt_timeout: ATTEMPT_TIMEOUT,
            reach: Reach::default(),
        }
    }
}

/// The time, in Unix milliseconds: the system's (`SystemClock`), or a test's fake.
pub trait Clock: Send + Sync + 'static {
    fn now_ms(&self) -> i64;
}

/// The system's clock.
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> i64 {
        crate::clock::now_ms()
    }
}

/// A random number in -1..1, for the schedule's jitter.
pub(super) fn jitter() -> f64 {
    let bytes = crate::secret::random::<8>().unwrap_or_default();
    (u64::from_le_bytes(bytes) as f64 / u64::MAX as f64) * 2.0 - 1.0
}

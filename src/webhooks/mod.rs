//! Delivering events to the merchants' endpoints (CONTRACT §18.3): signed (`sign`), only to
//! public addresses (`address`), one HTTP attempt at a time (`send`), by the worker (`worker`),
//! whose results become a settle plan (`crate::store::settle_plan`) written in batches.
//!
//! The worker claims windows of endpoints' fresh events and retries due, in the name of a random
//! token of its own: the claims expire unless it extends them, so with several instances each
//! attempt is made by one, and a dead instance's are taken over. At most `PER_ENDPOINT` attempts
//! of one endpoint and `PER_INSTANCE` in all are in flight here: a slow or dead endpoint holds its
//! own places only, and no request's.

pub mod address;
pub mod send;
pub mod sign;
pub mod worker;

use std::time::Duration;

use async_trait::async_trait;

use self::address::Reach;
use self::send::{Delivery, Sent};
use crate::domain::webhook::RetrySchedule;

pub use self::worker::deliver;

/// How deliveries are made (`--webhook-*`).
#[derive(Clone, Debug)]
pub struct WebhookSettings {
    pub retry: RetrySchedule,
    /// An endpoint whose attempts all failed for this long is disabled.
    pub disable_after: Duration,
    pub reach: Reach,
}

impl Default for WebhookSettings {
    fn default() -> Self {
        WebhookSettings {
            retry: RetrySchedule::default(),
            disable_after: Duration::from_secs(5 * 86_400),
            reach: Reach::default(),
        }
    }
}

/// How an attempt is made: over HTTP (`send::Sender`), or by a test's fake.
#[async_trait]
pub trait Transport: Send + Sync + 'static {
    async fn send(&self, delivery: Delivery<'_>, reach: Reach) -> Sent;
}

/// The time, in Unix milliseconds: the system's (`SystemClock`), or a test's fake.
pub trait Clock: Send + Sync + 'static {
    fn now_ms(&self) -> i64;
}

/// The system's clock.
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> i64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
    }
}

/// A random number in -1..1, for the schedule's jitter.
fn jitter() -> f64 {
    let bytes = crate::secret::random::<8>().unwrap_or_default();
    (u64::from_le_bytes(bytes) as f64 / u64::MAX as f64) * 2.0 - 1.0
}

//! Time as the service counts it: Unix time in milliseconds, and durations in whole
//! milliseconds, written once for every module (the stores, the server, the webhooks, the client).

use std::time::Duration;

/// A duration in whole milliseconds, at most `i64::MAX / 2`: a time in milliseconds plus it never
/// overflows.
pub fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).map_or(i64::MAX / 2, |ms| ms.min(i64::MAX / 2))
}

/// A duration in whole milliseconds as an unsigned count, `u64::MAX` past it.
pub fn millis_u64(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// Unix time in milliseconds.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

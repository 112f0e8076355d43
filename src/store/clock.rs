//! Durations as the stores count them, below every other module of `store` (the trait's module and
//! the webhook and redelivery modules beside it all use it).

/// A duration in whole milliseconds, at most `i64::MAX / 2`: a time in milliseconds plus it never
/// overflows.
pub fn millis(d: std::time::Duration) -> i64 {
    i64::try_from(d.as_millis()).map_or(i64::MAX / 2, |ms| ms.min(i64::MAX / 2))
}

//! This instance's own budgets: a keyed GCRA limiter from `governor` per policy.

use std::hash::Hash;
use std::num::NonZeroU32;
use std::time::Duration;

use governor::clock::{Clock, MonotonicClock};
use governor::middleware::StateInformationMiddleware;
use governor::state::keyed::DashMapStateStore;
use governor::{Quota as GovernorQuota, RateLimiter};

use super::quota::{Headers, Quota, Rate, Refusal};

/// The limiter's clock is the standard library's monotonic one, not governor's default (`quanta`,
/// read from the CPU's TSC): on a virtual machine whose cores' TSCs disagree, a check made on
/// another core can see time jump and refuse with `RATE_LIMITED` far below the budget (a known
/// failure of TSC clocks under virtualisation).
type Keyed<K> = RateLimiter<K, DashMapStateStore<K>, MonotonicClock, StateInformationMiddleware>;

/// One budget per key (a merchant, a client address), named `policy` in the headers.
pub struct RateLimits<K: Hash + Eq + Clone = i64> {
    limiter: Option<Keyed<K>>,
    policy: &'static str,
    /// What the headers say of the budget (a limiter's exact period aside).
    quota: Quota,
}

impl<K: Hash + Eq + Clone> RateLimits<K> {
    pub fn new(policy: &'static str, rate: Rate, burst: u32) -> Self {
        let limiter = match rate {
            Rate::Off => None,
            Rate::PerSecond(n) => Some(GovernorQuota::per_second(n)),
            Rate::PerMinute(n) => Some(GovernorQuota::per_minute(n)),
        };
        let quota = Quota::of(rate, burst).unwrap_or(Quota {
            per_sec: 1.0,
            burst: burst.max(1),
        });
        Self::of(policy, limiter, quota)
    }

    /// A budget of `quota.per_sec` units a second (a fraction too), `quota.burst` at once.
    pub fn with_quota(policy: &'static str, quota: Quota) -> Self {
        let period = Duration::from_secs_f64(1.0 / quota.per_sec.max(1e-6));
        Self::of(policy, GovernorQuota::with_period(period), quota)
    }

    /// The limiter of `limiter` (none: limiting off) allowing `quota.burst` at once.
    fn of(policy: &'static str, limiter: Option<GovernorQuota>, quota: Quota) -> Self {
        let burst = NonZeroU32::new(quota.burst.max(1)).unwrap_or(NonZeroU32::MIN);
        RateLimits {
            limiter: limiter.map(|q| {
                RateLimiter::dashmap_with_clock(q.allow_burst(burst), MonotonicClock)
                    .with_middleware::<StateInformationMiddleware>()
            }),
            policy,
            quota: Quota {
                burst: burst.get(),
                ..quota
            },
        }
    }

    pub fn enabled(&self) -> bool {
        self.limiter.is_some()
    }

    fn headers(&self, left: u32, next_unit: Duration) -> Headers {
        Headers::of(self.policy, self.quota, left, next_unit)
    }

    /// Spends one unit of `key`'s budget, or refuses. `None` when limiting is off.
    pub fn check(&self, key: &K) -> Option<Result<Headers, Refusal>> {
        let limiter = self.limiter.as_ref()?;
        Some(match limiter.check_key(key) {
            Ok(snapshot) => {
                let left = snapshot.remaining_burst_capacity();
                let next_unit = if left >= self.quota.burst {
                    Duration::ZERO
                } else {
                    self.time_until(limiter, key, left + 1)
                };
                Ok(self.headers(left, next_unit))
            }
            Err(not_until) => Err(self.refusal(not_until.wait_time_from(limiter.clock().now()))),
        })
    }

    /// The refusal of a key with no unit left for `wait` more.
    pub fn refusal(&self, wait: Duration) -> Refusal {
        Refusal {
            retry_after: wait,
            headers: self.headers(0, wait),
        }
    }

    /// How long until `units` would conform, asked without spending any (a refused check does
    /// not change the limiter's state).
    fn time_until(&self, limiter: &Keyed<K>, key: &K, units: u32) -> Duration {
        let Some(n) = NonZeroU32::new(units) else {
            return Duration::ZERO;
        };
        match limiter.check_key_n(key, n) {
            Ok(Err(not_until)) => not_until.wait_time_from(limiter.clock().now()),
            // Conformed meanwhile (it was spent: a rare race with refill), or more than a burst.
            _ => Duration::ZERO,
        }
    }

    /// Forgets keys whose budget is full again.
    pub fn forget_idle(&self) {
        if let Some(limiter) = &self.limiter {
            limiter.retain_recent();
            limiter.shrink_to_fit();
        }
    }

    /// How many keys the limiter holds state for.
    pub fn tracked(&self) -> usize {
        self.limiter.as_ref().map_or(0, RateLimiter::len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn burst_then_refusal_with_exact_headers() {
        let limits = RateLimits::new(
            "merchant",
            Rate::PerMinute(NonZeroU32::new(6).unwrap_or(NonZeroU32::MIN)),
            3,
        );
        let first = limits.check(&1).and_then(Result::ok);
        let first = first.unwrap_or_else(|| Headers {
            policy: String::new(),
            state: String::new(),
        });
        assert_eq!(first.policy, "\"merchant\";q=3;w=30");
        assert!(first.state.starts_with("\"merchant\";r=2;t="), "{}", first.state);
        let t: u64 = first.state.rsplit('=').next().and_then(|t| t.parse().ok()).unwrap_or(0);
        assert!((1..=10).contains(&t), "one unit every 10 s: {t}");
        assert!(matches!(limits.check(&1), Some(Ok(_))));
        assert!(matches!(limits.check(&1), Some(Ok(_))));
        match limits.check(&1) {
            Some(Err(refusal)) => {
                assert!(refusal.retry_after > Duration::from_secs(9) && refusal.retry_after <= Duration::from_secs(10));
                assert_eq!(refusal.headers.state, "\"merchant\";r=0;t=10");
            }
            other => panic!("expected a refusal, got {other:?}"),
        }
        assert!(
            matches!(limits.check(&2), Some(Ok(_))),
            "another merchant is unaffected"
        );
        assert_eq!(RateLimits::<i64>::new("merchant", Rate::Off, 10).check(&1), None);
    }
}

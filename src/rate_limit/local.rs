//! This instance's own budgets: a keyed GCRA limiter per policy.
//!
//! Written here rather than taken from `governor`: an answer's `RateLimit` header says how long
//! until one more unit, and governor can tell that only by a check of `r + 1` units, which spends
//! them all when a unit came in between (a busy machine): the merchant's whole burst gone, its next
//! requests refused within budget. Here that wait is read from the state the check just wrote.

use std::hash::Hash;
use std::time::{Duration, Instant};

use dashmap::DashMap;

use super::quota::{Headers, Quota, Rate, Refusal};

/// One budget per key (a merchant, a client address), named `policy` in the headers.
pub struct RateLimits<K: Hash + Eq + Clone = i64> {
    limiter: Option<Gcra<K>>,
    policy: &'static str,
    /// What the headers say of the budget (the limiter's exact period aside).
    quota: Quota,
}

/// The generic cell rate algorithm: a key's state is the time its next unit is due (`tat`, in
/// nanoseconds since `start`); `n` units conform at `now` when `tat + (n - 1)·t - tau <= now`.
struct Gcra<K: Hash + Eq> {
    /// Nanoseconds between two units.
    t: u64,
    /// How far ahead of now a key may be: the burst's other units, `(burst - 1)·t`.
    tau: u64,
    burst: u32,
    start: Instant,
    tats: DashMap<K, u64>,
}

/// What one check decided.
#[derive(Debug, PartialEq, Eq)]
enum Verdict {
    /// Spent: `left` units remain, one more in `next_unit`.
    Spent { left: u32, next_unit: Duration },
    /// Refused: the next unit conforms in `wait`.
    Refused { wait: Duration },
}

impl<K: Hash + Eq + Clone> Gcra<K> {
    fn new(period: Duration, burst: u32) -> Self {
        let t = u64::try_from(period.as_nanos()).unwrap_or(u64::MAX).max(1);
        let burst = burst.max(1);
        Gcra {
            t,
            tau: t.saturating_mul(u64::from(burst - 1)),
            burst,
            start: Instant::now(),
            tats: DashMap::new(),
        }
    }

    /// Read from the standard library's monotonic clock, not the CPU's TSC: on a virtual machine
    /// whose cores' TSCs disagree, a check made on another core could see time jump back and refuse
    /// far below the budget.
    fn now(&self) -> u64 {
        u64::try_from(self.start.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    /// Spends one unit of `key` at `now`, or refuses; the state changes only when it spends.
    fn check_at(&self, key: &K, now: u64) -> Verdict {
        let mut tat = self.tats.entry(key.clone()).or_insert(now);
        let earliest = tat.saturating_sub(self.tau);
        if now < earliest {
            return Verdict::Refused {
                wait: Duration::from_nanos(earliest - now),
            };
        }
        let next = (*tat).max(now).saturating_add(self.t);
        *tat = next;
        let room = now.saturating_add(self.tau).saturating_add(self.t).saturating_sub(next);
        let left = u32::try_from(room / self.t).unwrap_or(u32::MAX).min(self.burst);
        let next_unit = if left >= self.burst {
            Duration::ZERO
        } else {
            // `left + 1` units conform once `next + left·t - tau` is reached.
            let due = next
                .saturating_add(self.t.saturating_mul(u64::from(left)))
                .saturating_sub(self.tau);
            Duration::from_nanos(due.saturating_sub(now))
        };
        Verdict::Spent { left, next_unit }
    }

    /// Forgets keys whose budget is full again (their state is that of a key never seen).
    fn forget_full(&self, now: u64) {
        self.tats.retain(|_, tat| *tat > now);
        self.tats.shrink_to_fit();
    }
}

impl<K: Hash + Eq + Clone> RateLimits<K> {
    pub fn new(policy: &'static str, rate: Rate, burst: u32) -> Self {
        let period = match rate {
            Rate::Off => None,
            Rate::PerSecond(n) => Some(Duration::from_secs(1) / n.get()),
            Rate::PerMinute(n) => Some(Duration::from_secs(60) / n.get()),
        };
        let quota = Quota::of(rate, burst).unwrap_or(Quota {
            per_sec: 1.0,
            burst: burst.max(1),
        });
        Self::of(policy, period, quota)
    }

    /// A budget of `quota.per_sec` units a second (a fraction too), `quota.burst` at once.
    pub fn with_quota(policy: &'static str, quota: Quota) -> Self {
        let period = Duration::from_secs_f64(1.0 / quota.per_sec.max(1e-6));
        Self::of(policy, Some(period), quota)
    }

    /// The limiter of one unit a `period` (none: limiting off) allowing `quota.burst` at once.
    fn of(policy: &'static str, period: Option<Duration>, quota: Quota) -> Self {
        let burst = quota.burst.max(1);
        RateLimits {
            limiter: period.map(|period| Gcra::new(period, burst)),
            policy,
            quota: Quota { burst, ..quota },
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
        Some(self.answer(limiter.check_at(key, limiter.now())))
    }

    fn answer(&self, verdict: Verdict) -> Result<Headers, Refusal> {
        match verdict {
            Verdict::Spent { left, next_unit } => Ok(self.headers(left, next_unit)),
            Verdict::Refused { wait } => Err(self.refusal(wait)),
        }
    }

    /// The refusal of a key with no unit left for `wait` more.
    pub fn refusal(&self, wait: Duration) -> Refusal {
        Refusal {
            retry_after: wait,
            headers: self.headers(0, wait),
        }
    }

    /// Forgets keys whose budget is full again.
    pub fn forget_idle(&self) {
        if let Some(limiter) = &self.limiter {
            limiter.forget_full(limiter.now());
        }
    }

    /// How many keys the limiter holds state for.
    pub fn tracked(&self) -> usize {
        self.limiter.as_ref().map_or(0, |limiter| limiter.tats.len())
    }
}

#[cfg(test)]
mod tests {
    use std::num::NonZeroU32;

    use super::*;

    const SECOND: u64 = 1_000_000_000;

    #[test]
    fn each_check_spends_one_unit_and_says_exactly_when_the_next_comes() {
        // Six a minute, three at once: a unit every 10 s.
        let gcra = Gcra::new(Duration::from_secs(10), 3);
        let spent = |left, next_unit: u64| Verdict::Spent {
            left,
            next_unit: Duration::from_nanos(next_unit),
        };
        assert_eq!(gcra.check_at(&1, 0), spent(2, 10 * SECOND));
        // 4 s later: 0.4 of a unit back, so one left and the next in 6 s.
        assert_eq!(gcra.check_at(&1, 4 * SECOND), spent(1, 6 * SECOND));
        assert_eq!(gcra.check_at(&1, 4 * SECOND), spent(0, 6 * SECOND));
        let refused = Verdict::Refused {
            wait: Duration::from_nanos(6 * SECOND),
        };
        assert_eq!(gcra.check_at(&1, 4 * SECOND), refused, "a refusal spends nothing");
        assert_eq!(gcra.check_at(&1, 4 * SECOND), refused);
        assert_eq!(gcra.check_at(&1, 10 * SECOND), spent(0, 10 * SECOND));
        // The whole burst back after 30 s without a request: full, so no next unit to wait for.
        assert_eq!(gcra.check_at(&1, 100 * SECOND), spent(2, 10 * SECOND));
        assert_eq!(gcra.check_at(&2, 0), spent(2, 10 * SECOND), "another key is unaffected");
        let one = Gcra::new(Duration::from_secs(10), 1);
        assert_eq!(one.check_at(&1, 0), spent(0, 10 * SECOND));
    }

    #[test]
    fn a_unit_coming_between_two_checks_never_costs_the_burst() {
        // 500 a second, 1000 at once: units come every 2 ms, checks every 0.7 ms, crossing
        // each moment a unit comes; a check must leave the rest of the burst whatever its moment.
        let gcra = Gcra::new(Duration::from_millis(2), 1000);
        let step = 700_000;
        for n in 0..1400u64 {
            // n + 1 units spent, n·0.7/2 of them back.
            let expected = 999 + n * step / 2_000_000 - n;
            match gcra.check_at(&7, n * step) {
                Verdict::Spent { left, .. } => assert_eq!(u64::from(left), expected, "check {n}"),
                refused => panic!("check {n} refused within the budget: {refused:?}"),
            }
        }
    }

    #[test]
    fn keys_whose_budget_is_full_again_are_forgotten() {
        let limits = RateLimits::new("merchant", Rate::PerSecond(NonZeroU32::MIN), 2);
        assert!(matches!(limits.check(&1), Some(Ok(_))));
        assert_eq!(limits.tracked(), 1);
        limits.forget_idle();
        assert_eq!(limits.tracked(), 1, "its unit is not back yet");
        let gcra = Gcra::new(Duration::from_secs(1), 2);
        gcra.check_at(&1, 0);
        gcra.forget_full(SECOND - 1);
        assert_eq!(gcra.tats.len(), 1);
        gcra.forget_full(SECOND);
        assert_eq!(gcra.tats.len(), 0);
    }

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

//! What a budget is and what its answers say: the rate as configured (`Rate`), a budget's size
//! (`Quota`), the headers of an answer and a refusal, shared by the local and the shared budgets.

use std::num::NonZeroU32;
use std::str::FromStr;
use std::time::Duration;

/// `--rate-limit`: `N/s`, `N/min`, or `0` (off).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rate {
    Off,
    PerSecond(NonZeroU32),
    PerMinute(NonZeroU32),
}

impl Rate {
    /// Units a second; `None` when off.
    pub fn per_sec(self) -> Option<f64> {
        match self {
            Rate::Off => None,
            Rate::PerSecond(n) => Some(f64::from(n.get())),
            Rate::PerMinute(n) => Some(f64::from(n.get()) / 60.0),
        }
    }
}

impl FromStr for Rate {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let s = s.trim();
        if s == "0" {
            return Ok(Rate::Off);
        }
        let bad = || format!("rate {s:?}: write N/s or N/min (N a positive integer), or 0 to disable");
        let (n, unit) = s.split_once('/').ok_or_else(bad)?;
        let n: u32 = n.trim().parse().map_err(|_| bad())?;
        match (NonZeroU32::new(n), unit.trim()) {
            (None, _) => Ok(Rate::Off),
            (Some(n), "s" | "sec" | "second") => Ok(Rate::PerSecond(n)),
            (Some(n), "min" | "m" | "minute") => Ok(Rate::PerMinute(n)),
            _ => Err(bad()),
        }
    }
}

/// The answer's rate-limit headers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Headers {
    pub policy: String,
    pub state: String,
}

impl Headers {
    /// `RateLimit-Policy` of the budget `policy` of `quota`: the same whatever the budget's mode.
    pub fn policy_of(policy: &str, quota: Quota) -> String {
        format!("\"{policy}\";q={};w={}", quota.burst, quota.refill_secs())
    }

    /// The headers of `policy` of `quota` with `left` units, the next in `next_unit`.
    pub fn of(policy: &str, quota: Quota, left: u32, next_unit: Duration) -> Headers {
        Headers {
            policy: Headers::policy_of(policy, quota),
            state: format!("\"{policy}\";r={left};t={}", ceil_secs(next_unit)),
        }
    }
}

/// A refused request: how long to wait, and the headers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    pub retry_after: Duration,
    pub headers: Headers,
}

/// A budget's size: `per_sec` units a second, at most `burst` at once.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Quota {
    pub per_sec: f64,
    pub burst: u32,
}

impl Quota {
    /// The quota of `rate` (`None`: off) with `burst` at once.
    pub fn of(rate: Rate, burst: u32) -> Option<Quota> {
        rate.per_sec().map(|per_sec| Quota {
            per_sec,
            burst: burst.max(1),
        })
    }

    /// Seconds to refill the whole burst from empty (the policy's `w`), rounded up.
    pub fn refill_secs(self) -> u64 {
        ceil_secs(Duration::from_secs_f64(f64::from(self.burst) / self.per_sec.max(1e-9)))
    }
}

/// Whole seconds, rounded up (the headers' unit).
pub(super) fn ceil_secs(d: Duration) -> u64 {
    d.as_nanos().div_ceil(1_000_000_000) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_parse() {
        assert_eq!(
            "50/s".parse(),
            Ok(Rate::PerSecond(NonZeroU32::new(50).unwrap_or(NonZeroU32::MIN)))
        );
        assert_eq!(
            "3/min".parse(),
            Ok(Rate::PerMinute(NonZeroU32::new(3).unwrap_or(NonZeroU32::MIN)))
        );
        assert_eq!("0".parse(), Ok(Rate::Off));
        for bad in ["50", "x/s", "5/hour", "-1/s", ""] {
            assert!(bad.parse::<Rate>().is_err(), "{bad}");
        }
    }

    #[test]
    fn the_policy_says_the_burst_and_the_seconds_to_refill_it() {
        let per = |rate: &str, burst| Quota::of(rate.parse().unwrap_or(Rate::Off), burst);
        let policy = |q: Option<Quota>| q.map(|q| Headers::policy_of("merchant", q));
        assert_eq!(policy(per("50/s", 100)).as_deref(), Some("\"merchant\";q=100;w=2"));
        assert_eq!(policy(per("3/min", 3)).as_deref(), Some("\"merchant\";q=3;w=60"));
        assert_eq!(policy(per("7/s", 10)).as_deref(), Some("\"merchant\";q=10;w=2"));
        assert_eq!(per("0", 10), None);
    }
}

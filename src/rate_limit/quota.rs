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
}

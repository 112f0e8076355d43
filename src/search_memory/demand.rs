//! How often each merchant was searched lately: counts that halve every [`HALF_LIFE`], so that
//! searches of a while ago weigh less than searches of now, and a merchant no longer searched
//! counts for nothing after a few minutes.

use std::collections::HashMap;
use std::time::{Duration, Instant};

pub(super) const HALF_LIFE: Duration = Duration::from_secs(10);

#[derive(Debug, Default)]
pub(super) struct Demand {
    counts: HashMap<i64, u32>,
    /// When the counts were last halved (the first search starts the clock).
    halved_at: Option<Instant>,
}

impl Demand {
    pub(super) fn searched(&mut self, merchant_pk: i64) {
        let count = self.counts.entry(merchant_pk).or_default();
        *count = count.saturating_add(1);
    }

    /// The merchant's searches lately, halved once for every [`HALF_LIFE`] since they were made
    /// (as of the last `age`).
    pub(super) fn of(&self, merchant_pk: i64) -> u64 {
        self.counts.get(&merchant_pk).copied().map_or(0, u64::from)
    }

    /// Halves every count once for each [`HALF_LIFE`] passed by `now`, forgetting those that reach
    /// nothing.
    pub(super) fn age(&mut self, now: Instant) {
        let Some(at) = self.halved_at else {
            self.halved_at = Some(now);
            return;
        };
        let halvings = now.saturating_duration_since(at).as_nanos() / HALF_LIFE.as_nanos();
        if halvings == 0 {
            return;
        }
        let halvings = u32::try_from(halvings).unwrap_or(u32::MAX);
        let shift = halvings.min(u32::BITS);
        self.counts.retain(|_, count| {
            *count = count.checked_shr(shift).unwrap_or(0);
            *count > 0
        });
        // The next halving comes a half-life after the last one due, not after this look.
        let due = HALF_LIFE.checked_mul(halvings).and_then(|since| at.checked_add(since));
        self.halved_at = Some(due.map_or(now, |due| due.min(now)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_halve_for_each_half_life_passed_and_those_that_reach_nothing_are_forgotten() {
        let start = Instant::now();
        let mut demand = Demand::default();
        demand.age(start);
        for _ in 0..40 {
            demand.searched(1);
        }
        demand.searched(2);
        demand.age(start + HALF_LIFE / 2);
        assert_eq!((demand.of(1), demand.of(2)), (40, 1), "not yet a half-life");
        demand.age(start + HALF_LIFE);
        assert_eq!((demand.of(1), demand.of(2)), (20, 0));
        assert!(!demand.counts.contains_key(&2), "a count of nothing is forgotten");
        demand.age(start + HALF_LIFE * 3);
        assert_eq!(demand.of(1), 5, "two half-lives at once halve twice");
        demand.age(start + HALF_LIFE * 7 / 2);
        assert_eq!(demand.of(1), 5, "half a half-life since the last halving");
        demand.age(start + HALF_LIFE * 9 / 2);
        assert_eq!(demand.of(1), 2);
        demand.age(start + HALF_LIFE * 5);
        assert_eq!(
            demand.of(1),
            1,
            "a half-life since the last halving due, not since the last look"
        );
        demand.age(start + HALF_LIFE * 1000);
        assert_eq!(demand.of(1), 0);
        assert!(demand.counts.is_empty());
        assert_eq!(demand.of(3), 0, "never searched");
    }
}

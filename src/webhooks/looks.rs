//! Whose endpoints the delivery worker looks at for fresh events at each turn. A look at every
//! merchant reads every endpoint, so it is made at least once every `look_every` (it finds what
//! no signal reaches: another instance's settlements, a lapsed claim) and whenever asked for;
//! between, a turn looks only at the merchants that rang, those whose claims this worker just
//! settled (their next windows), and those it found with work it did not claim, through the
//! endpoints' index by merchant. A turn that stops at its bound is followed by the same look.
//! A look at all costs what the endpoints number: the periodic one waits `ALL_SHARE` times as long
//! as the last took (a minute at most), so that it holds up the turns for a bounded share of the
//! time however many endpoints there are (a look asked for, or after a failure, is made at once).
//! Likewise a turn claims retries only when some may be due (`Looks::retries`).

use std::collections::HashSet;
use std::time::Duration;

use crate::store::event_signal::Rung;

/// The periodic look at all waits at least this many times as long as the last one took.
pub const ALL_SHARE: i64 = 50;
/// ... and at most this long (ms): one look slowed by a passing stall does not put off the next
/// for long.
pub const ALL_AT_LEAST_EVERY_MS: i64 = 60_000;

/// One turn's look.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Look {
    All,
    Merchants(Vec<i64>),
}

impl Look {
    /// The merchants to look at, none meaning all of them.
    pub fn merchants(&self) -> Option<&[i64]> {
        match self {
            Look::All => None,
            Look::Merchants(m) => Some(m),
        }
    }
}

/// The merchants the next turn looks at, and when every merchant was last looked at.
#[derive(Debug)]
pub struct Looks {
    look_every_ms: i64,
    /// When the last look at all was made (worker's clock, ms); none yet.
    last_all_ms: Option<i64>,
    /// How long the last look at all took (ms).
    all_took_ms: i64,
    /// The next look is at all (the last one stopped at its bound).
    all_next: bool,
    /// Merchants to look at next, from what the turns found.
    carried: HashSet<i64>,
    /// Merchants to look at next, from settlements made meanwhile.
    settled: HashSet<i64>,
    /// When retries were last claimed (worker's clock, ms); none yet.
    last_retries_ms: Option<i64>,
    /// The last claim of retries was offered some: more may be due.
    retries_next: bool,
}

impl Looks {
    pub fn new(look_every: Duration) -> Looks {
        Looks {
            look_every_ms: i64::try_from(look_every.as_millis()).unwrap_or(i64::MAX),
            last_all_ms: None,
            all_took_ms: 0,
            all_next: false,
            carried: HashSet::new(),
            settled: HashSet::new(),
            last_retries_ms: None,
            retries_next: false,
        }
    }

    /// Whether the turn starting at `now_ms` with `look` claims retries: with a look at all, when
    /// a retry this worker scheduled is due (`own_due`), after a claim of retries that was
    /// offered some (taken or not, for want of room), and at least once every `look_every`
    /// (another instance's). Between, a turn claims only fresh events: offering the retries costs
    /// a probe for every endpoint that has any, due or not, so an outage of many endpoints would
    /// otherwise cost every turn as much.
    pub fn retries(&mut self, look: &Look, own_due: bool, now_ms: i64) -> bool {
        let due = self
            .last_retries_ms
            .is_none_or(|at| now_ms.saturating_sub(at) >= self.look_every_ms);
        if *look == Look::All || own_due || self.retries_next || due {
            self.last_retries_ms = Some(now_ms);
            self.retries_next = false;
            return true;
        }
        false
    }

    /// A claim of retries was offered some (`offered`), or none.
    pub fn retries_offered(&mut self, offered: bool) {
        self.retries_next = offered;
    }

    /// A retry this worker scheduled came due when no place was free, or retries it attempted
    /// were settled (their endpoints free again): the next turn claims retries.
    pub fn retries_owed(&mut self) {
        self.retries_next = true;
    }

    /// The look of the turn starting at `now_ms`, given the merchants that rang since the last.
    pub fn next(&mut self, rung: Rung, now_ms: i64) -> Look {
        let every = self
            .look_every_ms
            .max(self.all_took_ms.saturating_mul(ALL_SHARE).min(ALL_AT_LEAST_EVERY_MS));
        let due = self.last_all_ms.is_none_or(|at| now_ms.saturating_sub(at) >= every);
        let mut merchants = std::mem::take(&mut self.carried);
        merchants.extend(rung.merchants);
        merchants.extend(self.settled.drain());
        if rung.all || self.all_next || due {
            self.all_next = false;
            self.last_all_ms = Some(now_ms);
            return Look::All;
        }
        Look::Merchants(merchants.into_iter().collect())
    }

    /// What the turn found besides what it claimed: merchants with fresh events it did not claim
    /// are looked at again, and a look that stopped at its bound is made again.
    pub fn found(&mut self, look: Look, unclaimed: &[i64], more: bool) {
        self.carried.extend(unclaimed);
        if more {
            match look {
                Look::All => self.all_next = true,
                Look::Merchants(m) => self.carried.extend(m),
            }
        }
    }

    /// A look at all took `took_ms`: the periodic one waits in proportion.
    pub fn took_all(&mut self, took_ms: i64) {
        self.all_took_ms = took_ms.max(0);
    }

    /// The turn failed: the next one looks at all.
    pub fn failed(&mut self) {
        self.all_next = true;
    }

    /// A claim of the merchant's endpoint was settled: its next window may be claimed now.
    pub fn settled(&mut self, merchant_pk: i64) {
        self.settled.insert(merchant_pk);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rung(merchants: &[i64], all: bool) -> Rung {
        Rung {
            merchants: merchants.iter().copied().collect(),
            all,
        }
    }

    fn sorted(look: Look) -> Look {
        match look {
            Look::Merchants(mut m) => {
                m.sort_unstable();
                Look::Merchants(m)
            }
            all => all,
        }
    }

    #[test]
    fn every_merchant_is_looked_at_first_then_once_a_period_and_between_those_that_rang() {
        let mut looks = Looks::new(Duration::from_secs(1));
        assert_eq!(looks.next(rung(&[1], false), 0), Look::All);
        looks.found(Look::All, &[], false);
        assert_eq!(
            sorted(looks.next(rung(&[3, 2], false), 100)),
            Look::Merchants(vec![2, 3])
        );
        looks.found(Look::Merchants(vec![2, 3]), &[], false);
        assert_eq!(
            looks.next(rung(&[], false), 200),
            Look::Merchants(vec![]),
            "nothing rang: none"
        );
        assert_eq!(looks.next(rung(&[], true), 300), Look::All, "asked for all");
        assert_eq!(looks.next(rung(&[4], false), 1_299), Look::Merchants(vec![4]));
        assert_eq!(
            looks.next(rung(&[], false), 1_300),
            Look::All,
            "a period after the last look at all"
        );
    }

    #[test]
    fn the_periodic_look_at_all_waits_in_proportion_to_what_the_last_took() {
        let mut looks = Looks::new(Duration::from_secs(1));
        assert_eq!(looks.next(rung(&[], false), 0), Look::All);
        looks.took_all(100);
        looks.found(Look::All, &[], false);
        assert_eq!(looks.next(rung(&[1], false), 1_000), Look::Merchants(vec![1]));
        assert_eq!(looks.next(rung(&[], false), 4_999), Look::Merchants(vec![]));
        assert_eq!(looks.next(rung(&[], false), 5_000), Look::All, "fifty times 100 ms");
        looks.took_all(2);
        looks.found(Look::All, &[], false);
        assert_eq!(looks.next(rung(&[], false), 5_999), Look::Merchants(vec![]));
        assert_eq!(
            looks.next(rung(&[], false), 6_000),
            Look::All,
            "never less than the period"
        );
        looks.took_all(10_000);
        looks.found(Look::All, &[], false);
        assert_eq!(looks.next(rung(&[], false), 65_999), Look::Merchants(vec![]));
        assert_eq!(looks.next(rung(&[], false), 66_000), Look::All, "a minute at most");
        looks.took_all(100);
        assert_eq!(looks.next(rung(&[], true), 66_001), Look::All, "asked for: at once");
        looks.failed();
        assert_eq!(
            looks.next(rung(&[], false), 66_002),
            Look::All,
            "after a failure: at once"
        );
    }

    #[test]
    fn retries_are_claimed_with_a_look_at_all_when_due_while_some_are_offered_and_once_a_period() {
        let mut looks = Looks::new(Duration::from_secs(1));
        let some = Look::Merchants(vec![1]);
        assert!(looks.retries(&some, false, 0), "the first turn");
        looks.retries_offered(false);
        assert!(!looks.retries(&some, false, 100), "a ring's turn: fresh events only");
        assert!(looks.retries(&Look::All, false, 200), "with a look at all");
        looks.retries_offered(false);
        assert!(looks.retries(&some, true, 300), "a retry this worker scheduled is due");
        looks.retries_offered(true);
        assert!(looks.retries(&some, false, 301), "the last claim was offered some");
        looks.retries_offered(false);
        assert!(!looks.retries(&some, false, 1_300));
        assert!(looks.retries(&some, false, 1_301), "a period after the last");
        looks.retries_offered(false);
        looks.retries_owed();
        assert!(looks.retries(&some, false, 1_302), "due when no place was free");
    }

    #[test]
    fn work_left_unclaimed_settlements_and_a_look_stopped_at_its_bound_are_looked_at_again() {
        let mut looks = Looks::new(Duration::from_secs(60));
        assert_eq!(looks.next(rung(&[], false), 0), Look::All);
        looks.found(Look::All, &[7], false);
        looks.settled(8);
        assert_eq!(sorted(looks.next(rung(&[], false), 1)), Look::Merchants(vec![7, 8]));
        looks.found(Look::Merchants(vec![7, 8]), &[], true);
        assert_eq!(sorted(looks.next(rung(&[9], false), 2)), Look::Merchants(vec![7, 8, 9]));
        looks.found(Look::Merchants(vec![7, 8, 9]), &[], false);
        assert_eq!(looks.next(rung(&[], false), 3), Look::Merchants(vec![]));
        looks.found(Look::Merchants(vec![]), &[], false);
        looks.failed();
        assert_eq!(looks.next(rung(&[], false), 4), Look::All, "after a failed turn");
        looks.found(Look::All, &[], true);
        assert_eq!(
            looks.next(rung(&[], false), 5),
            Look::All,
            "a look at all stopped at its bound"
        );
    }
}

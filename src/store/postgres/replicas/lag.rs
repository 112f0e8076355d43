//! How far a replica is behind: the time since the primary committed the oldest
//! change the replica has not replayed, measured on positions in the write-ahead log, with no clock
//! but this instance's.
//!
//! Every check first reads the primary's WAL flush position `F` at a moment `t` (the time the
//! question was sent), and keeps the samples `(t, F)` of the last `keep`. Everything committed
//! before `t` lies at or before `F` (a commit is flushed before it returns). Then the replica's
//! replay position `R`:
//! - `R ≥ F` of the newest sample: everything committed before the check is replayed: 0.
//! - else the newest sample with `F ≤ R`: the oldest change not replayed lies after its `F`, so it
//!   was committed after its `t`, and the replica is at most `now − t` behind. An upper bound,
//!   never an underestimate, within one check's interval of the truth.
//! - no sample has `F ≤ R`: it is behind everything remembered, at least `now − t` of the oldest.
//!
//! A primary with nothing to write keeps `F` still, so a replica that replayed it all is 0 behind
//! however long ago the last change was. But when the primary's samples stop (it does not answer
//! in time), a replica that replayed the last sample is not known to be 0 behind: the primary may
//! have moved on since. Once the newest sample is older than `stale`, such a replica is at most
//! `now − t` of that sample behind, a figure that grows while the samples stay away.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// What a check found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lag {
    /// Behind by at most this.
    AtMost(Duration),
    /// Behind everything the samples remember: by at least this.
    AtLeast(Duration),
}

impl Lag {
    /// Whether a replica this far behind may serve reads bounded by `max`.
    pub fn within(self, max: Duration) -> bool {
        matches!(self, Lag::AtMost(d) if d <= max)
    }

    /// The figure `replica_lag_seconds` shows.
    pub fn seconds(self) -> f64 {
        match self {
            Lag::AtMost(d) | Lag::AtLeast(d) => d.as_secs_f64(),
        }
    }
}

/// The primary's flush positions, oldest first.
pub struct Samples {
    samples: VecDeque<(Instant, u64)>,
    keep: Duration,
    stale: Duration,
}

impl Samples {
    /// Samples of the last `keep` (more than the lag bound, so that a replica past it is known to
    /// be past it); the newest older than `stale` no longer vouches for a replica at 0.
    pub fn new(keep: Duration, stale: Duration) -> Samples {
        Samples {
            samples: VecDeque::new(),
            keep,
            stale,
        }
    }

    /// The primary was at `flushed` when asked at `at`.
    pub fn push(&mut self, at: Instant, flushed: u64) {
        // A position never moves back; should it seem to (a primary restored from a backup), the
        // older samples no longer describe it.
        if self.samples.back().is_some_and(|&(_, f)| f > flushed) {
            self.samples.clear();
        }
        self.samples.push_back((at, flushed));
        // The newest sample older than `keep` stays: it still bounds a replica just past it.
        while self.samples.len() > 1
            && self
                .samples
                .get(1)
                .is_some_and(|&(t, _)| at.duration_since(t) >= self.keep)
        {
            self.samples.pop_front();
        }
    }

    /// How far behind a replica that has replayed up to `replayed` is at `now`; `None` before the
    /// first sample.
    pub fn lag(&self, replayed: u64, now: Instant) -> Option<Lag> {
        let &(at, newest) = self.samples.back()?;
        if replayed >= newest {
            let age = now.saturating_duration_since(at);
            return Some(Lag::AtMost(if age > self.stale { age } else { Duration::ZERO }));
        }
        let replayed_through = self.samples.partition_point(|&(_, f)| f <= replayed);
        Some(match replayed_through.checked_sub(1) {
            Some(i) => Lag::AtMost(now.saturating_duration_since(self.samples[i].0)),
            None => Lag::AtLeast(now.saturating_duration_since(self.samples[0].0)),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn a_replica_is_behind_by_the_time_since_the_newest_position_it_replayed() {
        let t0 = Instant::now();
        let mut s = Samples::new(ms(10_000), ms(500));
        assert_eq!(s.lag(0, t0), None);
        s.push(t0, 100);
        s.push(t0 + ms(250), 200);
        s.push(t0 + ms(500), 300);
        let now = t0 + ms(600);
        assert_eq!(
            s.lag(300, now),
            Some(Lag::AtMost(Duration::ZERO)),
            "replayed everything"
        );
        assert_eq!(s.lag(400, now), Some(Lag::AtMost(Duration::ZERO)));
        assert_eq!(
            s.lag(299, now),
            Some(Lag::AtMost(ms(350))),
            "replayed through the 250 ms sample"
        );
        assert_eq!(s.lag(200, now), Some(Lag::AtMost(ms(350))));
        assert_eq!(s.lag(150, now), Some(Lag::AtMost(ms(600))));
        assert_eq!(
            s.lag(99, now),
            Some(Lag::AtLeast(ms(600))),
            "behind all that is remembered"
        );
    }

    #[test]
    fn an_idle_primary_leaves_a_replayed_replica_0_behind() {
        let t0 = Instant::now();
        let mut s = Samples::new(ms(5_000), ms(500));
        for k in 0..100 {
            s.push(t0 + ms(250 * k), 4_096);
        }
        let now = t0 + ms(25_000);
        assert_eq!(s.lag(4_096, now), Some(Lag::AtMost(Duration::ZERO)));
        assert!(s.lag(4_096, now).is_some_and(|l| l.within(ms(1))));
    }

    #[test]
    fn a_paused_replica_falls_behind_from_the_first_change_it_missed() {
        let t0 = Instant::now();
        let mut s = Samples::new(ms(5_000), ms(500));
        // Replay paused at position 1000; the primary writes from t0 + 1 s on.
        for k in 0..=40 {
            let flushed = if k < 4 { 1_000 } else { 1_000 + 10 * k };
            s.push(t0 + ms(250 * k), flushed);
        }
        let now = t0 + ms(10_000);
        // Only the samples of the last 5 s (and the one just before them) are kept: the replica
        // is behind all of them, by at least 5 s.
        let lag = s.lag(1_000, now).unwrap();
        assert!(matches!(lag, Lag::AtLeast(d) if d >= ms(5_000)), "{lag:?}");
        assert!(!lag.within(ms(5_000)));
        // Two seconds after the pause it was, at most, 2.25 s behind: within a 5 s bound.
        let mut early = Samples::new(ms(5_000), ms(500));
        for k in 0..=12 {
            let flushed = if k < 4 { 1_000 } else { 1_000 + 10 * k };
            early.push(t0 + ms(250 * k), flushed);
        }
        assert_eq!(early.lag(1_000, t0 + ms(3_000)), Some(Lag::AtMost(ms(2_250))));
    }

    /// The primary's samples stop (its connection stalls under load) while it goes on writing: a
    /// replica that replayed the last sample is shown further behind as time passes, never 0.
    #[test]
    fn with_the_primary_s_samples_stalled_the_lag_grows_and_never_reads_0() {
        let t0 = Instant::now();
        let mut s = Samples::new(ms(5_000), ms(500));
        for k in 0..=4 {
            s.push(t0 + ms(250 * k), 1_000 + k);
        }
        let last = t0 + ms(1_000);
        assert_eq!(
            s.lag(1_004, last + ms(250)),
            Some(Lag::AtMost(Duration::ZERO)),
            "fresh: 0"
        );
        let mut shown = Vec::new();
        for after in [600, 1_000, 3_000, 6_000] {
            let lag = s.lag(1_004, last + ms(after)).unwrap();
            assert_eq!(lag, Lag::AtMost(ms(after)));
            shown.push(lag.seconds());
        }
        assert!(shown.windows(2).all(|w| w[0] < w[1]), "{shown:?}");
        assert!(!s.lag(1_004, last + ms(6_000)).unwrap().within(ms(5_000)));
    }

    #[test]
    fn a_position_that_moves_back_starts_the_samples_again() {
        let t0 = Instant::now();
        let mut s = Samples::new(ms(5_000), ms(500));
        s.push(t0, 500);
        s.push(t0 + ms(250), 50);
        assert_eq!(s.lag(40, t0 + ms(300)), Some(Lag::AtLeast(ms(50))));
    }

    #[test]
    fn a_replica_unknown_to_be_within_the_bound_is_not() {
        assert!(Lag::AtMost(ms(5_000)).within(ms(5_000)));
        assert!(!Lag::AtMost(ms(5_001)).within(ms(5_000)));
        assert!(
            !Lag::AtLeast(ms(1)).within(ms(5_000)),
            "a lower bound says nothing of the upper"
        );
    }
}

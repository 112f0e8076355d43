//! What the gate remembers of presented keys and of the clients presenting them (made-up
//! keys included), so that a flood of made-up keys costs memory lookups, not database reads,
//! and cannot starve the service:
//! - **unknown keys**: a key the store did not know (or knew revoked) is answered 401 from memory
//!   for a minute after its lookup;
//! - **valid keys**: a key served within the last minute is known valid, and passes an address's
//!   exhausted 401 budget (it is still looked up, so a revocation is seen at the next request);
//! - **the 401 budget** of a client address: every 401 spends a unit; once none is left the
//!   address is answered 429 (`"unauthenticated"`) without any lookup until it has one again.
//!
//! Keys are remembered by their SHA-256 (a header can be kilobytes long), each set bounded by
//! `MAX_REMEMBERED`: when full, expired entries go, then (a flood of fresh keys, itself bounded
//! by the 401 budget) everything.

use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use dashmap::DashMap;
use sha2::{Digest, Sha256};

use crate::rate_limit::{Rate, RateLimits, Refusal};

/// How long a key's verdict is remembered.
pub const REMEMBERED_FOR: Duration = Duration::from_secs(60);
/// How stale a valid key's time may get before serving it again records it anew.
const VALID_REFRESH: Duration = Duration::from_secs(10);
/// Most keys remembered in each set.
const MAX_REMEMBERED: usize = 65_536;

type Digested = [u8; 32];

/// Verdicts about keys and the 401 budgets of client addresses.
pub struct KeyVerdicts {
    unknown: DashMap<Digested, Instant>,
    valid: DashMap<Digested, Instant>,
    failures: RateLimits<IpAddr>,
    /// Addresses whose 401 budget ran out, until when.
    exhausted: DashMap<IpAddr, Instant>,
    /// Whether `exhausted` may hold an address: most of the time none is, and then a request
    /// looks nothing up.
    any_exhausted: AtomicBool,
}

/// A presented key, digested once.
pub struct Presented(Digested);

impl Presented {
    pub fn new(token: &str) -> Self {
        Presented(Sha256::digest(token.as_bytes()).into())
    }
}

impl KeyVerdicts {
    pub fn new(rate: Rate, burst: u32) -> Self {
        KeyVerdicts {
            unknown: DashMap::new(),
            valid: DashMap::new(),
            failures: RateLimits::new("unauthenticated", rate, burst),
            exhausted: DashMap::new(),
            any_exhausted: AtomicBool::new(false),
        }
    }

    /// The refusal for `client` when its 401 budget is spent and `key` is not known valid.
    pub fn refusal(&self, client: IpAddr, key: Option<&Presented>) -> Option<Refusal> {
        if !self.any_exhausted.load(Ordering::Relaxed) {
            return None;
        }
        let until = *self.exhausted.get(&client)?;
        let now = Instant::now();
        if until <= now {
            self.exhausted.remove_if(&client, |_, until| *until <= now);
            return None;
        }
        if key.is_some_and(|key| self.is_valid(key)) {
            return None;
        }
        Some(self.failures.refusal(until - now))
    }

    /// The key was looked up within the last minute and was not found (or revoked).
    pub fn is_unknown(&self, key: &Presented) -> bool {
        fresh(&self.unknown, &key.0)
    }

    /// Served within the last minute (its time is refreshed every `VALID_REFRESH` at most, so
    /// that serving a key is a read: a minute and that much).
    fn is_valid(&self, key: &Presented) -> bool {
        self.valid
            .get(&key.0)
            .is_some_and(|at| at.elapsed() < REMEMBERED_FOR + VALID_REFRESH)
    }

    pub fn remember_unknown(&self, key: &Presented) {
        remember(&self.unknown, key.0);
    }

    pub fn remember_valid(&self, key: &Presented) {
        // Most requests present a key served moments ago: a read, not a write, then.
        let fresh = self.valid.get(&key.0).is_some_and(|at| at.elapsed() < VALID_REFRESH);
        if !fresh {
            remember(&self.valid, key.0);
        }
    }

    /// Spends a unit of `client`'s 401 budget; the refusal (429) when none is left.
    pub fn spend_failure(&self, client: IpAddr) -> Result<(), Refusal> {
        match self.failures.check(&client) {
            None | Some(Ok(_)) => Ok(()),
            Some(Err(refusal)) => {
                self.exhausted.insert(client, Instant::now() + refusal.retry_after);
                self.any_exhausted.store(true, Ordering::Relaxed);
                Err(refusal)
            }
        }
    }

    /// Drops what has expired (periodic upkeep).
    pub fn forget_expired(&self) {
        let now = Instant::now();
        let horizon = now.checked_sub(REMEMBERED_FOR).unwrap_or(now);
        self.unknown.retain(|_, at| *at > horizon);
        let valid_horizon = horizon.checked_sub(VALID_REFRESH).unwrap_or(horizon);
        self.valid.retain(|_, at| *at > valid_horizon);
        self.exhausted.retain(|_, until| *until > now);
        if self.exhausted.is_empty() {
            self.any_exhausted.store(false, Ordering::Relaxed);
            // An address exhausted meanwhile is seen at its next refusal, which sets it again.
        }
        self.failures.forget_idle();
    }
}

fn fresh(set: &DashMap<Digested, Instant>, key: &Digested) -> bool {
    set.get(key).is_some_and(|at| at.elapsed() < REMEMBERED_FOR)
}

fn remember(set: &DashMap<Digested, Instant>, key: Digested) {
    if set.len() >= MAX_REMEMBERED && !set.contains_key(&key) {
        set.retain(|_, at| at.elapsed() < REMEMBERED_FOR);
        if set.len() >= MAX_REMEMBERED {
            set.clear();
        }
    }
    set.insert(key, Instant::now());
}

#[cfg(test)]
mod tests {
    use std::num::NonZeroU32;

    use super::*;

    #[test]
    fn an_exhausted_address_is_refused_but_a_known_valid_key_passes() {
        let verdicts = KeyVerdicts::new(Rate::PerMinute(NonZeroU32::MIN), 2);
        let attacker: IpAddr = [127, 0, 0, 2].into();
        let other: IpAddr = [127, 0, 0, 3].into();
        let made_up = Presented::new("sf_made_up");
        let valid = Presented::new("sf_valid");
        verdicts.remember_valid(&valid);
        assert!(verdicts.refusal(attacker, Some(&made_up)).is_none());
        assert!(verdicts.spend_failure(attacker).is_ok());
        assert!(verdicts.spend_failure(attacker).is_ok());
        let refused = verdicts.spend_failure(attacker).err();
        assert!(refused.is_some_and(|r| r.headers.policy == "\"unauthenticated\";q=2;w=120"));
        assert!(verdicts.refusal(attacker, Some(&made_up)).is_some());
        assert!(verdicts.refusal(attacker, None).is_some());
        assert!(
            verdicts.refusal(attacker, Some(&valid)).is_none(),
            "a key served lately passes"
        );
        assert!(
            verdicts.refusal(other, Some(&made_up)).is_none(),
            "another address has its own budget"
        );
    }

    #[test]
    fn unknown_keys_are_remembered_and_the_sets_stay_bounded() {
        let verdicts = KeyVerdicts::new(Rate::Off, 1);
        let key = Presented::new("sf_x");
        assert!(!verdicts.is_unknown(&key));
        verdicts.remember_unknown(&key);
        assert!(verdicts.is_unknown(&key));
        for i in 0..MAX_REMEMBERED + 10 {
            verdicts.remember_unknown(&Presented::new(&i.to_string()));
        }
        assert!(verdicts.unknown.len() <= MAX_REMEMBERED);
        assert!(
            verdicts.spend_failure([127, 0, 0, 2].into()).is_ok(),
            "0 disables the budget"
        );
    }
}

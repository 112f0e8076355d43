//! A rate budget that every instance on one database shares.
//!
//! The budget itself is a token bucket kept by the [`Ledger`] (the store: one row per policy and
//! merchant, refilled by the database's clock). An instance never asks it per request: it takes up
//! to `hold = ⌈burst ÷ 10⌉` units at once with one statement and spends them locally, so what an
//! instance admits has always been taken from the bucket first. Several instances can therefore
//! only admit *less* than the bucket allows, by at most the units they hold unspent — the margin
//! `m = n × ⌈burst ÷ 10⌉` — and an instance that dies strands at most its `hold`, which the
//! bucket refills within `hold ÷ rate` seconds. Units held by an instance whose merchant went
//! quiet are given back after [`IDLE`].
//!
//! A bucket found empty is not asked again before it has a unit (`empty_until`), so refused
//! requests cost no round trip either. While the ledger cannot be reached (a take fails or takes
//! longer than [`TAKE_WAIT`]), each instance limits on its own share of the budget, `rate ÷ n`
//! and `burst ÷ n` for the `n` instances last seen alive, until a heartbeat reaches it again:
//! fail static, never open.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex as SyncMutex, PoisonError};
use std::time::{Duration, Instant};

use arc_swap::ArcSwap;
use async_trait::async_trait;
use dashmap::DashMap;
use tokio::sync::Mutex;

use super::local::RateLimits;
use super::quota::{Headers, Quota, Refusal};

/// How long a request waits for a take before its instance limits on its own share.
pub const TAKE_WAIT: Duration = Duration::from_millis(250);
/// How long a failed ledger is left alone before requests try it again (heartbeats try sooner).
const DOWN_FOR: Duration = Duration::from_secs(1);
/// Units held this long unspent go back to the shared budget.
pub const IDLE: Duration = Duration::from_secs(1);
/// A merchant's state is dropped after this long without a request (and nothing held).
const FORGET: Duration = Duration::from_secs(60);

/// What a take got: `granted` units, and the units the shared budget has left after it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Taken {
    pub granted: u32,
    pub left: f64,
}

/// The ledger could not be reached or failed.
#[derive(Debug, thiserror::Error)]
#[error("the shared rate budget is unreachable: {0}")]
pub struct LedgerDown(pub String);

/// Where the shared budgets live (the store, behind its trait).
#[async_trait]
pub trait Ledger: Send + Sync {
    /// Takes up to `want` whole units of the budget `(policy, key)`.
    async fn take(&self, policy: &'static str, key: i64, want: u32, quota: Quota) -> Result<Taken, LedgerDown>;
    /// Gives `units` taken earlier back (never past `quota.burst`).
    async fn give_back(&self, policy: &'static str, key: i64, units: u32, quota: Quota) -> Result<(), LedgerDown>;
    /// Records that `instance` is alive; answers how many instances are.
    async fn heartbeat(&self, instance: &str) -> Result<u32, LedgerDown>;
}

/// The instances sharing the budgets: how many were last seen alive, and whether the ledger is
/// down (one per process, shared by its budgets).
pub struct Peers {
    alive: AtomicU32,
    down_until: SyncMutex<Option<Instant>>,
}

impl Default for Peers {
    fn default() -> Self {
        Peers {
            alive: AtomicU32::new(1),
            down_until: SyncMutex::new(None),
        }
    }
}

impl Peers {
    pub fn alive(&self) -> u32 {
        self.alive.load(Ordering::Relaxed).max(1)
    }

    /// A heartbeat reached the ledger: `alive` instances. (A failed take's pause runs its
    /// course: the database may answer heartbeats and still not the budgets.)
    pub fn seen(&self, alive: u32) {
        self.alive.store(alive.max(1), Ordering::Relaxed);
    }

    fn mark_down(&self, now: Instant) {
        let mut down = self.down_until.lock().unwrap_or_else(PoisonError::into_inner);
        if down.is_none_or(|until| now >= until) {
            tracing::warn!("the shared rate budget is unreachable; limiting on this instance's share until it is back");
        }
        *down = Some(now + DOWN_FOR);
    }

    fn is_down(&self, now: Instant) -> bool {
        self.down_until
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_some_and(|until| now < until)
    }
}

/// What an instance holds of one merchant's budget.
struct Held {
    /// Units taken from the shared budget, not yet spent.
    lease: u32,
    /// The shared budget's units after the last take, and when.
    left: f64,
    left_at: Instant,
    /// The shared budget was empty: no take before this.
    empty_until: Option<Instant>,
    used_at: Instant,
}

/// The local share used while the ledger is down, for the number of instances it was made for.
struct Share {
    instances: u32,
    limits: RateLimits<i64>,
}

/// One policy's budgets (the merchants' or their storefront keys'), shared through a ledger.
pub struct SharedBudget {
    policy: &'static str,
    quota: Quota,
    hold: u32,
    ledger: Arc<dyn Ledger>,
    peers: Arc<Peers>,
    keys: DashMap<i64, Arc<Mutex<Held>>>,
    share: ArcSwap<Share>,
}

impl SharedBudget {
    pub fn new(policy: &'static str, quota: Quota, ledger: Arc<dyn Ledger>, peers: Arc<Peers>) -> Self {
        let share = Share {
            instances: 1,
            limits: RateLimits::with_quota(policy, quota),
        };
        SharedBudget {
            policy,
            hold: quota.burst.div_ceil(10).max(1),
            quota,
            ledger,
            peers,
            keys: DashMap::new(),
            share: ArcSwap::from_pointee(share),
        }
    }

    /// Spends one unit of `key`'s budget, or refuses. Bounded by [`TAKE_WAIT`] as a whole, the
    /// wait for the merchant's turn included: past it, the instance's own share decides.
    pub async fn check(&self, key: i64) -> Result<Headers, Refusal> {
        let now = Instant::now();
        let bound = now + TAKE_WAIT;
        let cell = Arc::clone(&self.keys.entry(key).or_insert_with(|| {
            Arc::new(Mutex::new(Held {
                lease: 0,
                left: f64::from(self.quota.burst),
                left_at: now,
                empty_until: None,
                used_at: now,
            }))
        }));
        let Ok(mut held) = tokio::time::timeout_at(bound.into(), cell.lock()).await else {
            // Another request of the merchant is still taking: the ledger is slow.
            self.peers.mark_down(now);
            return self.on_own_share(key);
        };
        held.used_at = now;
        if held.lease == 0 {
            if let Some(until) = held.empty_until.filter(|until| now < *until) {
                return Err(self.refusal(until - now));
            }
            if self.peers.is_down(now) {
                return self.on_own_share(key);
            }
            match tokio::time::timeout_at(bound.into(), self.ledger.take(self.policy, key, self.hold, self.quota)).await
            {
                Ok(Ok(taken)) => {
                    let now = Instant::now();
                    held.left = taken.left;
                    held.left_at = now;
                    if taken.granted == 0 {
                        let wait = Duration::from_secs_f64(((1.0 - taken.left) / self.quota.per_sec).max(0.001));
                        held.empty_until = Some(now + wait);
                        return Err(self.refusal(wait));
                    }
                    held.empty_until = None;
                    held.lease = taken.granted;
                }
                Ok(Err(e)) => {
                    tracing::warn!(error = %e, "taking from the shared rate budget failed");
                    self.peers.mark_down(now);
                    return self.on_own_share(key);
                }
                Err(_) => {
                    self.peers.mark_down(now);
                    return self.on_own_share(key);
                }
            }
        }
        held.lease -= 1;
        Ok(self.headers(&held, Instant::now()))
    }

    /// While the ledger is down: this instance's share of the budget, `rate ÷ n`, `burst ÷ n`.
    /// The policy it answers is the budget's, not the share's: a client sees one policy.
    fn on_own_share(&self, key: i64) -> Result<Headers, Refusal> {
        metrics::counter!("rate_limit_local_share_total", "policy" => self.policy).increment(1);
        let instances = self.peers.alive();
        if self.share.load().instances != instances {
            let n = f64::from(instances);
            let quota = Quota {
                per_sec: self.quota.per_sec / n,
                burst: self.quota.burst.div_ceil(instances).max(1),
            };
            self.share.store(Arc::new(Share {
                instances,
                limits: RateLimits::with_quota(self.policy, quota),
            }));
        }
        let policy = Headers::policy_of(self.policy, self.quota);
        match self.share.load().limits.check(&key) {
            Some(Ok(headers)) => Ok(Headers { policy, ..headers }),
            Some(Err(refusal)) => Err(Refusal {
                headers: Headers {
                    policy,
                    ..refusal.headers
                },
                ..refusal
            }),
            None => Ok(self.headers_of(self.quota.burst, Duration::ZERO)),
        }
    }

    /// The shared budget as this instance knows it: what it had left at the last take, refilled
    /// since, plus what this instance holds.
    fn headers(&self, held: &Held, now: Instant) -> Headers {
        let burst = f64::from(self.quota.burst);
        let refilled = (held.left + self.quota.per_sec * now.duration_since(held.left_at).as_secs_f64()).min(burst);
        let left = (refilled.floor() + f64::from(held.lease)).min(burst) as u32;
        let next = if left >= self.quota.burst {
            Duration::ZERO
        } else {
            Duration::from_secs_f64((1.0 - refilled.fract()) / self.quota.per_sec)
        };
        self.headers_of(left, next)
    }

    fn headers_of(&self, left: u32, next_unit: Duration) -> Headers {
        Headers::of(self.policy, self.quota, left, next_unit)
    }

    fn refusal(&self, wait: Duration) -> Refusal {
        Refusal {
            retry_after: wait,
            headers: self.headers_of(0, wait),
        }
    }

    /// Gives back what is held for merchants idle for [`IDLE`], and forgets those idle for long.
    /// The units are taken out under the merchant's lock and given back outside it, each within
    /// [`TAKE_WAIT`]: a slow ledger delays no request. Units whose giving back failed are not
    /// held again (it may have gone through): the bucket refills them within `hold ÷ rate`.
    pub async fn settle(&self) {
        let now = Instant::now();
        let cells: Vec<(i64, Arc<Mutex<Held>>)> = self
            .keys
            .iter()
            .map(|entry| (*entry.key(), Arc::clone(entry.value())))
            .collect();
        for (key, cell) in cells {
            let units = {
                let Ok(mut held) = cell.try_lock() else { continue };
                let idle = now.saturating_duration_since(held.used_at);
                if held.lease == 0 && idle >= FORGET {
                    drop(held);
                    self.keys.remove_if(&key, |_, c| Arc::strong_count(c) <= 2);
                    continue;
                }
                if held.lease == 0 || idle < IDLE || self.peers.is_down(now) {
                    continue;
                }
                std::mem::take(&mut held.lease)
            };
            let given = tokio::time::timeout(TAKE_WAIT, self.ledger.give_back(self.policy, key, units, self.quota));
            if !matches!(given.await, Ok(Ok(()))) {
                tracing::warn!(
                    policy = self.policy,
                    units,
                    "giving idle units back to the shared rate budget failed"
                );
                self.peers.mark_down(Instant::now());
            }
        }
        self.share.load().limits.forget_idle();
    }

    /// Units this instance holds of `key`'s budget (for tests and metrics).
    pub fn held(&self, key: i64) -> u32 {
        self.keys
            .get(&key)
            .and_then(|cell| cell.try_lock().ok().map(|held| held.lease))
            .unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;

    /// A bucket in memory, with a clock the test moves, that can be made unreachable.
    struct Bucket {
        state: SyncMutex<(f64, f64)>,
        clock: SyncMutex<f64>,
        down: AtomicBool,
        takes: AtomicU32,
    }

    impl Bucket {
        fn new(burst: u32) -> Arc<Self> {
            Arc::new(Bucket {
                state: SyncMutex::new((f64::from(burst), 0.0)),
                clock: SyncMutex::new(0.0),
                down: AtomicBool::new(false),
                takes: AtomicU32::new(0),
            })
        }

        fn advance(&self, secs: f64) {
            *self.clock.lock().unwrap_or_else(PoisonError::into_inner) += secs;
        }
    }

    #[async_trait]
    impl Ledger for Bucket {
        async fn take(&self, _: &'static str, _: i64, want: u32, quota: Quota) -> Result<Taken, LedgerDown> {
            if self.down.load(Ordering::SeqCst) {
                return Err(LedgerDown("down".into()));
            }
            self.takes.fetch_add(1, Ordering::SeqCst);
            let now = *self.clock.lock().unwrap_or_else(PoisonError::into_inner);
            let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
            let units = (state.0 + quota.per_sec * (now - state.1)).min(f64::from(quota.burst));
            let granted = f64::from(want).min(units.floor());
            *state = (units - granted, now);
            Ok(Taken {
                granted: granted as u32,
                left: units - granted,
            })
        }

        async fn give_back(&self, _: &'static str, _: i64, units: u32, quota: Quota) -> Result<(), LedgerDown> {
            let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
            state.0 = (state.0 + f64::from(units)).min(f64::from(quota.burst));
            Ok(())
        }

        async fn heartbeat(&self, _: &str) -> Result<u32, LedgerDown> {
            Ok(1)
        }
    }

    const QUOTA: Quota = Quota {
        per_sec: 1.0,
        burst: 20,
    };

    #[tokio::test]
    async fn instances_admit_only_what_they_took_and_ask_once_a_hold() {
        let bucket = Bucket::new(QUOTA.burst);
        let peers = Arc::new(Peers::default());
        let a = SharedBudget::new("merchant", QUOTA, bucket.clone(), Arc::clone(&peers));
        let b = SharedBudget::new("merchant", QUOTA, bucket.clone(), peers);
        let mut admitted = 0;
        for i in 0..40 {
            let budget = if i % 3 == 0 { &a } else { &b };
            if budget.check(7).await.is_ok() {
                admitted += 1;
            }
        }
        assert_eq!(admitted, 20, "the burst, no more, however the requests are spread");
        assert_eq!(
            bucket.takes.load(Ordering::SeqCst),
            10 + 2,
            "a take a hold of 2 (and one finding it empty each)"
        );
        // Refusals are answered from memory until the bucket has a unit again.
        for _ in 0..10 {
            assert!(a.check(7).await.is_err());
        }
        assert_eq!(bucket.takes.load(Ordering::SeqCst), 12);
        bucket.advance(1.0);
        tokio::time::sleep(Duration::from_millis(1100)).await;
        assert!(a.check(7).await.is_ok(), "a unit a second");
    }

    #[tokio::test]
    async fn an_unreachable_ledger_limits_on_the_instance_share() {
        let bucket = Bucket::new(QUOTA.burst);
        let peers = Arc::new(Peers::default());
        peers.seen(4);
        let a = SharedBudget::new("merchant", QUOTA, bucket.clone(), Arc::clone(&peers));
        bucket.down.store(true, Ordering::SeqCst);
        let mut admitted = 0;
        for _ in 0..40 {
            if a.check(1).await.is_ok() {
                admitted += 1;
            }
        }
        assert_eq!(admitted, 5, "a quarter of the burst for one of four instances");
        bucket.down.store(false, Ordering::SeqCst);
        tokio::time::sleep(DOWN_FOR).await;
        assert!(a.check(1).await.is_ok(), "back on the shared budget");
        assert_eq!(a.held(1), 1, "holding the rest of its take");
    }

    #[tokio::test]
    async fn idle_holdings_go_back() {
        let bucket = Bucket::new(QUOTA.burst);
        let a = SharedBudget::new("merchant", QUOTA, bucket.clone(), Arc::new(Peers::default()));
        assert!(a.check(3).await.is_ok());
        assert_eq!(a.held(3), 1);
        tokio::time::sleep(IDLE + Duration::from_millis(50)).await;
        a.settle().await;
        assert_eq!(a.held(3), 0);
        assert!((bucket.state.lock().unwrap_or_else(PoisonError::into_inner).0 - 19.0).abs() < 1e-9);
    }
}

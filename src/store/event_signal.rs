//! Waking the feed requests that wait for a merchant's next event, telling the search indexes
//! held in memory that a merchant's log moved, and waking the delivery worker.
//!
//! A waiting request takes a place among its merchant's waiters (at most [`WAITERS_PER_MERCHANT`]
//! on this instance), then sleeps on the merchant's signal without a database connection. A commit
//! that appended events rings it: this instance's own writes at once, other instances' through
//! the store (PostgreSQL's `NOTIFY`, `Store::follow_events`). A waiter also looks again every
//! [`RECHECK`] on its own, so that a notice lost with a broken connection, or an operator's
//! approval from another process on a SQLite file, is seen within that time.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::Notify;

/// Most requests of one merchant waiting at once on one instance. A waiter holds no connection
/// and no core (a task and its socket): the bound is one merchant's share of the instance's
/// memory and in-flight places, not a measure of the machine.
pub const WAITERS_PER_MERCHANT: usize = 16;

/// How often a waiter looks again without a notice.
pub const RECHECK: Duration = Duration::from_millis(900);

/// Most merchants listed as rung for the delivery worker; past it, the worker looks at all.
pub const RUNG_MOST: usize = 1024;

/// The merchants whose logs moved since the delivery worker last asked, or all of them: a notice
/// may have been missed, deliveries came due without an event, or more rang than are listed.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Rung {
    pub merchants: HashSet<i64>,
    pub all: bool,
}

impl Rung {
    fn add(&mut self, merchant_pk: i64) {
        if self.all {
            return;
        }
        if self.merchants.len() >= RUNG_MOST {
            self.everyone();
        } else {
            self.merchants.insert(merchant_pk);
        }
    }

    fn everyone(&mut self) {
        self.all = true;
        self.merchants = HashSet::new();
    }
}

#[derive(Default)]
struct Waiting {
    notify: Arc<Notify>,
    count: usize,
}

/// The merchants whose feed requests wait, and the signal each waits on; for each merchant
/// whose log is followed without waiting (a search index held in memory), how many times it rang;
/// and the delivery worker's wake, with the merchants that rang since it last looked.
#[derive(Default)]
pub struct EventSignal {
    merchants: Mutex<HashMap<i64, Waiting>>,
    rings: Mutex<HashMap<i64, Arc<AtomicU64>>>,
    deliveries: Arc<Notify>,
    rung: Mutex<Rung>,
}

/// A waiter's place: given back when dropped.
pub struct Place {
    signal: Arc<EventSignal>,
    merchant_pk: i64,
    notify: Arc<Notify>,
}

impl Place {
    /// The signal to wait on (create its `notified()` before looking, so that no ring between the
    /// look and the wait is missed).
    pub fn notify(&self) -> &Notify {
        &self.notify
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        let mut merchants = self.signal.lock();
        if let Some(waiting) = merchants.get_mut(&self.merchant_pk) {
            waiting.count -= 1;
            if waiting.count == 0 {
                merchants.remove(&self.merchant_pk);
            }
        }
    }
}

impl EventSignal {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<i64, Waiting>> {
        lock(&self.merchants)
    }

    /// A place among the merchant's waiters, or `None` when it has `WAITERS_PER_MERCHANT` already.
    pub fn wait_place(self: &Arc<Self>, merchant_pk: i64) -> Option<Place> {
        let mut merchants = self.lock();
        let waiting = merchants.entry(merchant_pk).or_default();
        if waiting.count >= WAITERS_PER_MERCHANT {
            return None;
        }
        waiting.count += 1;
        Some(Place {
            signal: Arc::clone(self),
            merchant_pk,
            notify: Arc::clone(&waiting.notify),
        })
    }

    /// How many of the merchant's requests wait now.
    pub fn waiting(&self, merchant_pk: i64) -> usize {
        self.lock().get(&merchant_pk).map_or(0, |w| w.count)
    }

    /// The merchant's count of rings, from now on (the same count for every caller): a reader
    /// that finds it unchanged since it last looked at the log knows that no commit of this
    /// instance, and no notice from another, has moved the log since. A count is kept once asked
    /// for (a few dozen bytes for each merchant whose index was ever held).
    pub fn rings(&self, merchant_pk: i64) -> Arc<AtomicU64> {
        Arc::clone(lock(&self.rings).entry(merchant_pk).or_default())
    }

    /// What the delivery worker sleeps on when it found nothing due: rung by every ring, and by
    /// `deliveries_due`. A ring while the worker is busy is kept (one permit), so none is missed
    /// between its look and its sleep.
    pub fn deliveries(&self) -> Arc<Notify> {
        Arc::clone(&self.deliveries)
    }

    /// Deliveries may be due that no event brought (a recovery stored): the worker looks now, at
    /// every merchant.
    pub fn deliveries_due(&self) {
        lock(&self.rung).everyone();
        self.deliveries.notify_one();
    }

    /// The merchants that rang since the last call (or all), for the delivery worker to look at.
    pub fn take_rung(&self) -> Rung {
        std::mem::take(&mut *lock(&self.rung))
    }

    /// The merchant's log grew: its waiters look again, its count of rings moves on, and the
    /// delivery worker looks for its endpoints' new events.
    pub fn ring(&self, merchant_pk: i64) {
        lock(&self.rung).add(merchant_pk);
        self.deliveries.notify_one();
        if let Some(count) = lock(&self.rings).get(&merchant_pk) {
            count.fetch_add(1, Ordering::SeqCst);
        }
        if let Some(waiting) = self.lock().get(&merchant_pk) {
            waiting.notify.notify_waiters();
        }
    }

    /// Every waiter looks again, and every count moves on (notices may have been missed).
    pub fn ring_all(&self) {
        self.deliveries_due();
        for count in lock(&self.rings).values() {
            count.fetch_add(1, Ordering::SeqCst);
        }
        for waiting in self.lock().values() {
            waiting.notify.notify_waiters();
        }
    }
}

/// The maps are only looked up and added to under their locks, which cannot panic half-way.
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_merchant_has_at_most_sixteen_waiters_and_a_ring_wakes_them() {
        let signal = Arc::new(EventSignal::default());
        let places: Vec<Place> = (0..WAITERS_PER_MERCHANT).filter_map(|_| signal.wait_place(1)).collect();
        assert_eq!(places.len(), WAITERS_PER_MERCHANT);
        assert!(signal.wait_place(1).is_none());
        assert!(signal.wait_place(2).is_some(), "another merchant has places of its own");
        {
            let woken = places[0].notify().notified();
            tokio::pin!(woken);
            woken.as_mut().enable();
            signal.ring(1);
            tokio::time::timeout(Duration::from_secs(5), woken)
                .await
                .unwrap_or_else(|_| panic!("the ring did not wake the waiter"));
        }
        drop(places);
        assert!(signal.lock().is_empty(), "places are given back");
    }

    #[test]
    fn a_ring_moves_the_merchant_s_count_and_a_ring_of_all_moves_every_count() {
        let signal = EventSignal::default();
        let (one, two) = (signal.rings(1), signal.rings(2));
        assert!(Arc::ptr_eq(&one, &signal.rings(1)), "one count a merchant");
        signal.ring(1);
        signal.ring(3);
        assert_eq!((one.load(Ordering::SeqCst), two.load(Ordering::SeqCst)), (1, 0));
        signal.ring_all();
        assert_eq!((one.load(Ordering::SeqCst), two.load(Ordering::SeqCst)), (2, 1));
    }

    #[tokio::test]
    async fn a_ring_before_the_worker_sleeps_is_kept_for_it() {
        let signal = EventSignal::default();
        let wake = signal.deliveries();
        signal.ring(7);
        tokio::time::timeout(Duration::from_secs(5), wake.notified())
            .await
            .unwrap_or_else(|_| panic!("a merchant's ring did not wake the worker"));
        signal.ring_all();
        tokio::time::timeout(Duration::from_secs(5), wake.notified())
            .await
            .unwrap_or_else(|_| panic!("a ring of all did not wake the worker"));
        signal.deliveries_due();
        tokio::time::timeout(Duration::from_secs(5), wake.notified())
            .await
            .unwrap_or_else(|_| panic!("deliveries due did not wake the worker"));
    }

    #[test]
    fn the_worker_is_told_which_merchants_rang_or_to_look_at_all() {
        let signal = EventSignal::default();
        signal.ring(1);
        signal.ring(2);
        signal.ring(1);
        assert_eq!(
            signal.take_rung(),
            Rung {
                merchants: HashSet::from([1, 2]),
                all: false
            }
        );
        assert_eq!(signal.take_rung(), Rung::default(), "each ring is told once");
        signal.ring(3);
        signal.ring_all();
        signal.ring(4);
        assert_eq!(
            signal.take_rung(),
            Rung {
                merchants: HashSet::new(),
                all: true
            }
        );
        for m in 0..=RUNG_MOST as i64 {
            signal.ring(m);
        }
        assert!(signal.take_rung().all, "more than are listed: all");
    }
}

//! Reads of one name shared by the requests that ask for it at the same time: a key no lease
//! holds (`key_leases`), presented by every buyer of a shop at once when its lease lapses; where a
//! merchant's log stands, asked by every search of its full key (`search`).
//!
//! A request never takes the answer of a read that was already under way when it arrived: that
//! read may have begun before a write (a revocation, a new location) that was answered before the
//! request came. It waits for a read begun after it arrived, and every request that arrived while
//! one read was under way shares the next. So each request sees what a read of its own would have
//! seen, and under load a name is read about once a round trip, however many requests ask for it.
//! The request that is to read first lets the work already waiting on its thread run (requests
//! just received, on their way to the same question), again while each turn brings more requests
//! to wait, a few turns at most: those that ask meanwhile share its read, begun after them, instead
//! of the next one. An idle service does not wait for it.
//!
//! A read that fails (or whose request goes away) answers no one else: those that waited for it
//! read on their own (or, when it went away, the next one does for the others).

use std::borrow::Borrow;
use std::collections::HashMap;
use std::future::Future;
use std::hash::Hash;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio::sync::Notify;

use crate::store::api::StoreError;

/// Turns a lookup's leader gives the requests on their way at most, before it begins.
const GATHER_TURNS: usize = 4;

/// The lookups of each name under way, and the last one's answer.
pub(super) struct SharedLookups<V, K = String> {
    flights: Mutex<HashMap<K, Flight<V>>>,
}

struct Flight<V> {
    /// Lookups begun, and the one whose answer `answer` is.
    begun: u64,
    answered: u64,
    /// `None` when that lookup failed.
    answer: Option<V>,
    running: bool,
    /// Requests waiting for this name: the entry goes when none is left.
    waiting: usize,
    done: Arc<Notify>,
}

impl<V, K> Default for SharedLookups<V, K> {
    fn default() -> Self {
        SharedLookups {
            flights: Mutex::new(HashMap::new()),
        }
    }
}

impl<V: Clone, K: Eq + Hash> SharedLookups<V, K> {
    fn lock(&self) -> MutexGuard<'_, HashMap<K, Flight<V>>> {
        // Only counters and an answer are read and written under the lock, which cannot panic
        // half-way.
        self.flights.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// What `lookup` answers for `name`, from a lookup begun after this call (this one's own, or
    /// another request's begun meanwhile).
    pub(super) async fn get<Q, F, Fut>(&self, name: &Q, lookup: F) -> Result<V, StoreError>
    where
        K: Borrow<Q>,
        Q: Eq + Hash + ToOwned<Owned = K> + ?Sized,
        F: Fn() -> Fut,
        Fut: Future<Output = Result<V, StoreError>>,
    {
        let place = Place::enter(self, name);
        loop {
            let notified = place.done.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let step = {
                let mut flights = self.lock();
                match flights.get_mut(name) {
                    // The place keeps the entry while it waits.
                    None => Step::Own,
                    Some(flight) if flight.answered >= place.after => match &flight.answer {
                        Some(answer) => return Ok(answer.clone()),
                        None => Step::Own,
                    },
                    // The lookup under way when it came failed: rather than wait behind another
                    // (a database that fails may take its timeout again), it looks up itself.
                    Some(flight)
                        if flight.answer.is_none() && flight.answered + 1 == place.after && flight.answered > 0 =>
                    {
                        Step::Own
                    }
                    Some(flight) if flight.running => Step::Wait,
                    Some(flight) => {
                        flight.running = true;
                        Step::Lead
                    }
                }
            };
            match step {
                Step::Wait => notified.await,
                Step::Own => return lookup().await,
                Step::Lead => {
                    let mut leading = Leading {
                        lookups: self,
                        name,
                        number: 0,
                        ended: false,
                    };
                    self.gather(name).await;
                    leading.begin();
                    let answer = lookup().await;
                    leading.end(answer.as_ref().ok().cloned());
                    return answer;
                }
            }
        }
    }

    /// Lets the work already waiting on this thread run before a lookup begins, again while each
    /// turn brings more requests to wait for it (a burst still arriving), a few turns at most.
    async fn gather<Q>(&self, name: &Q)
    where
        K: Borrow<Q>,
        Q: Eq + Hash + ?Sized,
    {
        let mut waiting = self.waiting(name);
        for _ in 0..GATHER_TURNS {
            tokio::task::yield_now().await;
            let now = self.waiting(name);
            if now <= waiting {
                return;
            }
            waiting = now;
        }
    }

    fn waiting<Q>(&self, name: &Q) -> usize
    where
        K: Borrow<Q>,
        Q: Eq + Hash + ?Sized,
    {
        self.lock().get(name).map_or(0, |flight| flight.waiting)
    }
}

/// What a request does next.
enum Step {
    /// Waits for the lookup under way to end.
    Wait,
    /// Makes the next lookup, for itself and those waiting.
    Lead,
    /// Looks up for itself alone (the lookup it waited for, or the one under way when it came,
    /// failed).
    Own,
}

/// A request's place among those waiting for a name.
struct Place<'a, V: Clone, K: Eq + Hash + Borrow<Q>, Q: Eq + Hash + ?Sized> {
    lookups: &'a SharedLookups<V, K>,
    name: &'a Q,
    /// The lookups begun before it arrived: it takes the answer of a later one.
    after: u64,
    done: Arc<Notify>,
}

impl<'a, V: Clone, K: Eq + Hash + Borrow<Q>, Q: Eq + Hash + ToOwned<Owned = K> + ?Sized> Place<'a, V, K, Q> {
    fn enter(lookups: &'a SharedLookups<V, K>, name: &'a Q) -> Self {
        let mut flights = lookups.lock();
        let flight = flights.entry(name.to_owned()).or_insert_with(|| Flight {
            begun: 0,
            answered: 0,
            answer: None,
            running: false,
            waiting: 0,
            done: Arc::new(Notify::new()),
        });
        flight.waiting += 1;
        Place {
            lookups,
            name,
            after: flight.begun + 1,
            done: Arc::clone(&flight.done),
        }
    }
}

impl<V: Clone, K: Eq + Hash + Borrow<Q>, Q: Eq + Hash + ?Sized> Drop for Place<'_, V, K, Q> {
    fn drop(&mut self) {
        let mut flights = self.lookups.lock();
        if let Some(flight) = flights.get_mut(self.name) {
            flight.waiting -= 1;
            if flight.waiting == 0 && !flight.running {
                flights.remove(self.name);
            }
        }
    }
}

/// The lookup a request makes for those waiting: its answer is theirs when it ends; when the
/// request goes away first, the others look up again.
struct Leading<'a, V: Clone, K: Eq + Hash + Borrow<Q>, Q: Eq + Hash + ?Sized> {
    lookups: &'a SharedLookups<V, K>,
    name: &'a Q,
    number: u64,
    ended: bool,
}

impl<V: Clone, K: Eq + Hash + Borrow<Q>, Q: Eq + Hash + ?Sized> Leading<'_, V, K, Q> {
    /// Numbers the lookup about to begin: every request that came before this answers by it.
    fn begin(&mut self) {
        let mut flights = self.lookups.lock();
        // The leader's own place keeps the entry.
        if let Some(flight) = flights.get_mut(self.name) {
            flight.begun += 1;
            self.number = flight.begun;
        }
    }

    fn end(&mut self, answer: Option<V>) {
        self.ended = true;
        let mut flights = self.lookups.lock();
        if let Some(flight) = flights.get_mut(self.name) {
            flight.running = false;
            flight.answered = self.number;
            flight.answer = answer;
            flight.done.notify_waiters();
        }
    }
}

impl<V: Clone, K: Eq + Hash + Borrow<Q>, Q: Eq + Hash + ?Sized> Drop for Leading<'_, V, K, Q> {
    fn drop(&mut self) {
        if self.ended {
            return;
        }
        let mut flights = self.lookups.lock();
        if let Some(flight) = flights.get_mut(self.name) {
            flight.running = false;
            flight.done.notify_waiters();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::time::Duration;

    use super::*;

    // The tests that order their requests by timers run on a paused clock, which moves only when
    // every task waits: on a busy machine a later timer cannot fire in the same turn as an earlier one.

    /// A lookup that takes a while and answers how many lookups began before it.
    async fn counted(count: &AtomicU64) -> Result<u64, StoreError> {
        let n = count.fetch_add(1, Ordering::SeqCst);
        tokio::time::sleep(Duration::from_millis(20)).await;
        Ok(n)
    }

    #[tokio::test(start_paused = true)]
    async fn requests_arriving_during_a_lookup_share_the_next_one_begun_after_them() {
        let lookups = SharedLookups::<u64>::default();
        let count = AtomicU64::new(0);
        let first = lookups.get("k", || counted(&count));
        let later = async {
            tokio::time::sleep(Duration::from_millis(5)).await;
            futures_util::future::join_all((0..10).map(|_| lookups.get("k", || counted(&count)))).await
        };
        let (first, later) = tokio::join!(first, later);
        assert_eq!(first.unwrap(), 0);
        let later: Vec<u64> = later.into_iter().map(Result::unwrap).collect();
        assert_eq!(later, vec![1; 10], "none takes the lookup under way when it came");
        assert_eq!(count.load(Ordering::SeqCst), 2, "the ten shared one lookup");
        assert!(lookups.lock().is_empty(), "nothing kept once no one waits");
    }

    #[tokio::test]
    async fn requests_asking_while_the_first_gathers_share_its_lookup() {
        let lookups = SharedLookups::<u64>::default();
        let count = AtomicU64::new(0);
        let all = futures_util::future::join_all((0..10).map(|_| lookups.get("k", || counted(&count)))).await;
        let all: Vec<u64> = all.into_iter().map(Result::unwrap).collect();
        assert_eq!(all, vec![0; 10]);
        assert_eq!(
            count.load(Ordering::SeqCst),
            1,
            "the ten asked before the first read began"
        );
        assert!(lookups.lock().is_empty());
    }

    #[tokio::test]
    async fn a_burst_still_arriving_while_the_first_gathers_shares_its_lookup() {
        let lookups = SharedLookups::<u64>::default();
        let count = AtomicU64::new(0);
        // The first to ask is polled last in each round; the others ask one, two and three
        // rounds later, each while the number waiting is still growing.
        let ask = |rounds: usize| {
            let (lookups, count) = (&lookups, &count);
            async move {
                for _ in 0..rounds {
                    tokio::task::yield_now().await;
                }
                lookups.get("k", || counted(count)).await
            }
        };
        let all = futures_util::future::join_all([ask(1), ask(2), ask(3), ask(0)]).await;
        let all: Vec<u64> = all.into_iter().map(Result::unwrap).collect();
        assert_eq!(all, vec![0; 4], "each asked before the lookup began");
        assert_eq!(count.load(Ordering::SeqCst), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn a_failed_or_abandoned_lookup_makes_the_others_look_up_again() {
        let lookups = SharedLookups::<u64>::default();
        let count = AtomicU64::new(0);
        let failing = lookups.get("k", || async {
            count.fetch_add(1, Ordering::SeqCst);
            tokio::time::sleep(Duration::from_millis(20)).await;
            Err::<u64, _>(StoreError::Unavailable)
        });
        let after = async {
            tokio::time::sleep(Duration::from_millis(5)).await;
            tokio::join!(
                lookups.get("k", || counted(&count)),
                lookups.get("k", || counted(&count))
            )
        };
        let (failed, (one, two)) = tokio::join!(failing, after);
        assert!(failed.is_err());
        let mut after = [one.unwrap(), two.unwrap()];
        after.sort_unstable();
        assert_eq!(
            after,
            [1, 2],
            "each its own lookup once the one under way when they came failed"
        );

        // A request that goes away during its lookup: the one waiting on it looks up itself.
        let never = || async {
            count.fetch_add(1, Ordering::SeqCst);
            std::future::pending::<Result<u64, StoreError>>().await
        };
        let abandoned = tokio::time::timeout(Duration::from_millis(5), lookups.get("k", never));
        let waiting = async {
            tokio::time::sleep(Duration::from_millis(1)).await;
            lookups.get("k", || counted(&count)).await
        };
        let (abandoned, waited) = tokio::join!(abandoned, waiting);
        assert!(abandoned.is_err(), "timed out");
        assert_eq!(waited.unwrap(), 4);
        assert!(lookups.lock().is_empty());
    }
}

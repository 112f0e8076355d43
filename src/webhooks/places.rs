//! The bound on attempts in flight from this instance (CONTRACT §18.3: one endpoint never slows
//! another): at most `PER_ENDPOINT` to one endpoint and `PER_INSTANCE` in all. The worker takes a
//! window's places at once, or a retry's one; an attempt made by hand (a resend or a test,
//! CONTRACT §20) waits for a place of its own, so that a person's attempts and the schedule's
//! together never exceed the bound.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio::sync::Notify;
use tokio::time::Instant;

/// Most attempts of one endpoint in flight on one instance (a window's, or its retries', or
/// those made by hand): a receiver is not sent more at once than a small server takes, and a dead
/// one holds no more.
pub const PER_ENDPOINT: usize = 8;
/// Most attempts in flight on one instance: eight endpoints' worth. Each holds a connection and
/// a few KiB; the bound keeps a backlog from opening thousands of sockets at once. An attempt
/// waits on its receiver, not on a core (its CPU is one signature), so the bound is the network's
/// and the receivers', not derived from the machine's cores.
pub const PER_INSTANCE: usize = 64;

/// The places taken, by endpoint.
#[derive(Default)]
pub struct Places {
    taken: Mutex<HashMap<String, usize>>,
    freed: Notify,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Places {
    /// How many places are free, and the endpoints with any taken (the worker claims none of
    /// theirs: their places are in use).
    pub fn free_and_busy(&self) -> (usize, Vec<String>) {
        let taken = lock(&self.taken);
        let total: usize = taken.values().sum();
        (PER_INSTANCE.saturating_sub(total), taken.keys().cloned().collect())
    }

    /// Takes `n` places of `endpoint` (the worker's, for what it just claimed).
    pub fn take(&self, endpoint: &str, n: usize) {
        *lock(&self.taken).entry(endpoint.to_owned()).or_default() += n;
    }

    /// Gives back `n` places of `endpoint`, and wakes whoever waits for one.
    pub fn give_back(&self, endpoint: &str, n: usize) {
        let mut taken = lock(&self.taken);
        if let Some(held) = taken.get_mut(endpoint) {
            *held = held.saturating_sub(n);
            if *held == 0 {
                taken.remove(endpoint);
            }
        }
        drop(taken);
        self.freed.notify_waiters();
        self.freed.notify_one();
    }

    /// Resolves when places are given back (or soon after: a wake-up may be spurious).
    pub async fn freed(&self) {
        self.freed.notified().await;
    }

    /// One place of `endpoint` if the bound allows it now.
    fn try_take_one(&self, endpoint: &str) -> bool {
        let mut taken = lock(&self.taken);
        let total: usize = taken.values().sum();
        let mine = taken.get(endpoint).copied().unwrap_or(0);
        if total >= PER_INSTANCE || mine >= PER_ENDPOINT {
            return false;
        }
        *taken.entry(endpoint.to_owned()).or_default() += 1;
        true
    }

    /// One place of `endpoint` for an attempt made by hand, waiting until `until` at most for
    /// one to be given back; none when the bound held it off that long.
    pub async fn wait_for_one(self: &Arc<Self>, endpoint: &str, until: Instant) -> Option<Place> {
        loop {
            let freed = self.freed.notified();
            tokio::pin!(freed);
            freed.as_mut().enable();
            if self.try_take_one(endpoint) {
                return Some(Place {
                    places: Arc::clone(self),
                    endpoint: endpoint.to_owned(),
                });
            }
            if tokio::time::timeout_at(until, freed).await.is_err() {
                return None;
            }
        }
    }
}

/// A place taken by hand, given back when dropped.
pub struct Place {
    places: Arc<Places>,
    endpoint: String,
}

impl Drop for Place {
    fn drop(&mut self) {
        self.places.give_back(&self.endpoint, 1);
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[tokio::test]
    async fn an_attempt_by_hand_waits_for_a_place_of_its_endpoint() {
        let places = Arc::new(Places::default());
        places.take("a", PER_ENDPOINT);
        let soon = Instant::now() + Duration::from_millis(50);
        assert!(
            places.wait_for_one("a", soon).await.is_none(),
            "its endpoint's places are all taken"
        );
        let other = places.wait_for_one("b", soon).await;
        assert!(other.is_some(), "another endpoint's are not");
        let waiting = {
            let places = Arc::clone(&places);
            tokio::spawn(async move {
                places
                    .wait_for_one("a", Instant::now() + Duration::from_secs(30))
                    .await
                    .is_some()
            })
        };
        tokio::time::sleep(Duration::from_millis(20)).await;
        places.give_back("a", 1);
        assert!(waiting.await.unwrap_or(false), "woken when a place is given back");
        drop(other);
        let (free, busy) = places.free_and_busy();
        assert_eq!(
            free,
            PER_INSTANCE - (PER_ENDPOINT - 1),
            "the window's seven: the places by hand were given back"
        );
        assert_eq!(busy, vec!["a".to_owned()]);
    }
}

//! Turns at heavy work: a merchant's long transactions (a recovery of thousands of events, an
//! import's batches) run one at a time per merchant, and at most `at_once` of all merchants'
//! together, so that they never hold the writer or the pool's connections that another
//! merchant's one-row write needs.
//!
//! A merchant waits behind its own heavy work first; only then does it join the queue of all
//! merchants (a fair, first-come queue), where it has at most one place: the merchants with heavy
//! work take turns, and the one that sends eight recoveries at once waits for each of its own.
//! SQLite has one writer, so one heavy transaction at a time; PostgreSQL a few, fewer than the
//! connections left to the merchants' writes. The same turns pace other long work of one merchant
//! that others must not wait behind: lists filtered by text, and the builds of the search indexes
//! held in memory.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::{OwnedMutexGuard, OwnedSemaphorePermit, Semaphore};

use super::error::StoreError;

/// The turns of one store.
pub struct HeavyWork {
    all: Arc<Semaphore>,
    merchants: Mutex<HashMap<i64, Arc<tokio::sync::Mutex<()>>>>,
}

/// A turn: the merchant's and one of all, given back when dropped.
pub struct Turn {
    _all: OwnedSemaphorePermit,
    _mine: OwnedMutexGuard<()>,
}

impl HeavyWork {
    /// At most `at_once` heavy transactions at once (at least one).
    pub fn new(at_once: usize) -> Self {
        HeavyWork {
            all: Arc::new(Semaphore::new(at_once.max(1))),
            merchants: Mutex::default(),
        }
    }

    /// Waits for `merchant_pk`'s turn until `deadline` at most (`DeadlinePassed` then).
    pub async fn turn_by(&self, merchant_pk: i64, deadline: std::time::Instant) -> Result<Turn, StoreError> {
        tokio::time::timeout_at(deadline.into(), self.turn(merchant_pk))
            .await
            .map_err(|_| StoreError::DeadlinePassed)?
    }

    /// Waits for `merchant_pk`'s turn.
    pub async fn turn(&self, merchant_pk: i64) -> Result<Turn, StoreError> {
        let mine = {
            let mut merchants = self.merchants.lock().unwrap_or_else(PoisonError::into_inner);
            // Merchants with no heavy work waiting or running are forgotten.
            merchants.retain(|_, lock| Arc::strong_count(lock) > 1);
            Arc::clone(merchants.entry(merchant_pk).or_default())
        };
        let mine = mine.lock_owned().await;
        let all = Arc::clone(&self.all)
            .acquire_owned()
            .await
            .map_err(|_| StoreError::Unavailable)?;
        Ok(Turn { _all: all, _mine: mine })
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[tokio::test]
    async fn a_merchant_waits_for_its_own_heavy_work_and_others_take_their_turn_beside_it() {
        let heavy = Arc::new(HeavyWork::new(2));
        let first = heavy.turn(1).await.unwrap();
        let second_of_one = {
            let heavy = Arc::clone(&heavy);
            tokio::spawn(async move { heavy.turn(1).await.map(|_| ()) })
        };
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!second_of_one.is_finished(), "merchant 1's second waits for its first");
        let other = tokio::time::timeout(Duration::from_secs(5), heavy.turn(2)).await;
        assert!(other.is_ok(), "merchant 2 is not behind merchant 1's queue");
        drop(first);
        assert!(second_of_one.await.unwrap().is_ok());
    }

    #[tokio::test]
    async fn at_most_so_many_merchants_at_once() {
        let heavy = Arc::new(HeavyWork::new(1));
        let first = heavy.turn(1).await.unwrap();
        let waiting = tokio::time::timeout(Duration::from_millis(20), heavy.turn(2)).await;
        assert!(waiting.is_err(), "the one place is taken");
        drop(first);
        assert!(heavy.turn(2).await.is_ok());
    }
}

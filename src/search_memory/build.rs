//! Building a merchant's index: its entries read in one snapshot, then sorted off the threads that
//! answer requests; in turns. A build holds a read connection while it reads all of a merchant's
//! entries and a core while it sorts them, so builds of all merchants take turns, at most half the
//! cores at once, in the order they were asked for: after a start, when every merchant's first
//! search asks for its index at once, the rest of the read connections and of the cores stays
//! with the requests.

use crate::domain::location::search::memory::MemoryIndex;
use crate::store::api::StoreError;
use crate::store::heavy::HeavyWork;
use crate::store::search_api::{Counted, SearchSource};

/// The turns of the builds of one server's indexes.
pub(super) struct Builds {
    turns: HeavyWork,
}

impl Builds {
    /// At most `at_once` builds at once (at least one).
    pub(super) fn new(at_once: usize) -> Builds {
        Builds {
            turns: HeavyWork::new(at_once),
        }
    }

    /// Half this machine's cores, at least one.
    pub(super) fn for_this_machine() -> Builds {
        Builds::new(std::thread::available_parallelism().map_or(1, |n| n.get() / 2))
    }

    /// The merchant's index and the sequence of its log it is as of, built in its turn; only the
    /// count of its entries, none read, when `fits` refuses that many (the room is weighed when
    /// the turn comes, for the entries counted: indexes may have been held or dropped meanwhile).
    pub(super) async fn build(
        &self,
        source: &dyn SearchSource,
        merchant_pk: i64,
        fits: impl FnOnce(usize) -> bool + Send + 'static,
    ) -> Result<Built, StoreError> {
        let _turn = self.turns.turn(merchant_pk).await?;
        let entries = match source.entries(merchant_pk, Box::new(fits)).await? {
            Counted::Read(entries) => entries,
            Counted::Beyond(count) => return Ok(Built::Beyond(count)),
        };
        // Sorting a million entries takes a while: off the threads that answer requests.
        tokio::task::spawn_blocking(move || Built::Index(Box::new(MemoryIndex::of(entries.entries)), entries.through))
            .await
            .map_err(StoreError::backend)
    }
}

/// What a build made.
#[derive(Debug)]
pub(super) enum Built {
    /// The merchant's index, and the sequence of its log it is as of.
    Index(Box<MemoryIndex>, i64),
    /// Nothing: the merchant has this many `ACTIVE` locations, more than the room could hold.
    Beyond(usize),
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    use async_trait::async_trait;

    use super::*;
    use crate::store::reads::ReadFrom;
    use crate::store::search_api::{Changes, Entries, Fits, Records};

    /// A source whose reads of entries take a while, counting how many run at once; every
    /// merchant has one entry.
    #[derive(Default)]
    struct Slow {
        running: AtomicUsize,
        most: AtomicUsize,
        read: AtomicUsize,
    }

    #[async_trait]
    impl SearchSource for Slow {
        async fn entries(&self, merchant_pk: i64, fits: Fits) -> Result<Counted, StoreError> {
            if !fits(1) {
                return Ok(Counted::Beyond(1));
            }
            let now = self.running.fetch_add(1, Ordering::SeqCst) + 1;
            self.most.fetch_max(now, Ordering::SeqCst);
            tokio::time::sleep(Duration::from_millis(30)).await;
            self.running.fetch_sub(1, Ordering::SeqCst);
            self.read.fetch_add(1, Ordering::SeqCst);
            Ok(Counted::Read(Entries {
                through: merchant_pk,
                entries: Vec::new(),
            }))
        }

        async fn changes(&self, _: i64, _: i64, _: usize) -> Result<Changes, StoreError> {
            Err(StoreError::Unavailable)
        }

        async fn records(&self, _: i64, _: Vec<i64>, _: ReadFrom) -> Result<Records, StoreError> {
            Err(StoreError::Unavailable)
        }
    }

    async fn build_all(at_once: usize, merchants: i64) -> Arc<Slow> {
        let source = Arc::new(Slow::default());
        let builds = Arc::new(Builds::new(at_once));
        let tasks: Vec<_> = (1..=merchants)
            .map(|merchant_pk| {
                let (source, builds) = (Arc::clone(&source), Arc::clone(&builds));
                tokio::spawn(async move {
                    let built = builds.build(source.as_ref(), merchant_pk, |_| true).await;
                    built.map(|built| match built {
                        Built::Index(_, through) => Some(through),
                        Built::Beyond(_) => None,
                    })
                })
            })
            .collect();
        for (task, merchant_pk) in tasks.into_iter().zip(1..) {
            let built = task.await.unwrap().unwrap();
            assert_eq!(built, Some(merchant_pk), "each build is its own merchant's");
        }
        source
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn builds_of_many_merchants_take_turns_and_all_end() {
        for at_once in [1, 2] {
            let source = build_all(at_once, 6).await;
            assert_eq!(source.read.load(Ordering::SeqCst), 6);
            assert_eq!(source.most.load(Ordering::SeqCst), at_once, "{at_once} at once");
        }
    }

    #[tokio::test]
    async fn a_merchant_with_more_entries_than_the_room_can_hold_is_not_read() {
        let source = Slow::default();
        let builds = Builds::new(1);
        let built = builds.build(&source, 1, |count| count < 1).await.unwrap();
        assert!(matches!(built, Built::Beyond(1)), "{built:?}");
        assert_eq!(source.read.load(Ordering::SeqCst), 0);
        let built = builds.build(&source, 1, |count| count <= 1).await.unwrap();
        assert!(matches!(built, Built::Index(_, 1)), "{built:?}");
        assert_eq!(source.read.load(Ordering::SeqCst), 1);
    }
}

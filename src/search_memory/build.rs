//! Building a merchant's index: its entries read in one snapshot, then sorted off the threads that
//! answer requests; in turns. A build holds a read connection while it reads all of a merchant's
//! entries and a core while it sorts them, so builds of all merchants take turns, at most half the
//! cores at once, in the order they were asked for: after a start, when every merchant's first
//! search asks for its index at once, the rest of the read connections and of the cores stays
//! with the requests.

use crate::domain::location::search::memory::MemoryIndex;
use crate::store::api::StoreError;
use crate::store::heavy::HeavyWork;
use crate::store::search_api::SearchSource;

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

    /// The merchant's index and the sequence of its log it is as of, built in its turn; `None`,
    /// its entries never read, when they are more than an index within `bound` bytes can hold.
    pub(super) async fn build(
        &self,
        source: &dyn SearchSource,
        merchant_pk: i64,
        bound: usize,
    ) -> Result<Option<(MemoryIndex, i64)>, StoreError> {
        let _turn = self.turns.turn(merchant_pk).await?;
        let Some(entries) = source
            .entries(merchant_pk, bound / MemoryIndex::LEAST_BYTES_AN_ENTRY)
            .await?
        else {
            return Ok(None);
        };
        // Sorting a million entries takes a while: off the threads that answer requests.
        tokio::task::spawn_blocking(move || Some((MemoryIndex::of(entries.entries), entries.through)))
            .await
            .map_err(StoreError::backend)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    use async_trait::async_trait;

    use super::*;
    use crate::store::reads::ReadFrom;
    use crate::store::search_api::{Changes, Entries, Records};

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
        async fn entries(&self, merchant_pk: i64, at_most: usize) -> Result<Option<Entries>, StoreError> {
            if at_most < 1 {
                return Ok(None);
            }
            let now = self.running.fetch_add(1, Ordering::SeqCst) + 1;
            self.most.fetch_max(now, Ordering::SeqCst);
            tokio::time::sleep(Duration::from_millis(30)).await;
            self.running.fetch_sub(1, Ordering::SeqCst);
            self.read.fetch_add(1, Ordering::SeqCst);
            Ok(Some(Entries {
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
                    let built = builds.build(source.as_ref(), merchant_pk, 1 << 20).await;
                    built.map(|built| built.map(|(_, through)| through))
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
    async fn a_merchant_with_more_entries_than_the_bound_can_hold_is_not_read() {
        let source = Slow::default();
        let builds = Builds::new(1);
        let too_small = MemoryIndex::LEAST_BYTES_AN_ENTRY - 1;
        assert!(builds.build(&source, 1, too_small).await.unwrap().is_none());
        assert_eq!(source.read.load(Ordering::SeqCst), 0);
        let room = MemoryIndex::LEAST_BYTES_AN_ENTRY;
        assert!(builds.build(&source, 1, room).await.unwrap().is_some());
        assert_eq!(source.read.load(Ordering::SeqCst), 1);
    }
}

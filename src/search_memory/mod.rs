//! Buyers' searches answered from memory: each searched merchant's index of its `ACTIVE` locations
//! (`domain::location::search::memory`) held here, within a bound of memory, the least recently
//! searched merchants dropped first for a merchant searched more than they are (`held`).
//!
//! **Exact.** An index is as of a sequence of its merchant's event log. A search walks the index,
//! then reads the page's records and where the log stands in one snapshot; when the log has moved
//! past the index (a write on this instance or any other), the index first reads what the log says
//! changed since (each named location as it is now) and the search is made again. So a search
//! answers as of the snapshot its records were read in, whichever instance wrote, exactly as the
//! database's own walk would: the same entries, tested the same way, read by the same walk. When
//! retention has dropped events the index has not read, the merchant's index is built again.
//!
//! **Storefront keys without a read.** A storefront key's search may be served a little behind the
//! primary (from a replica, within a bound of lag); its page is answered from the index and the
//! records kept without reading the log at all while the index is known current (`fresh`): every
//! commit of this instance makes its merchant's next such search read first, before the commit's
//! request is answered, and so does a notice of another instance's.
//!
//! **Bounded.** A merchant not held is searched on the database as before, and its index is built
//! in the background when it fits the bound (`--search-memory`) and room is made for it; none is
//! built at start.

mod build;
mod demand;
mod fresh;
mod held;
mod slots;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use crate::domain::location::search::{Hit, SearchPage, SearchQuery};
use crate::store::api::{ReadFrom, ReadOn, Store, StoreError};
use crate::store::event_signal::EventSignal;
use crate::store::search_api::{Changes, SearchSource};
use build::{Builds, Built};
use held::{Held, Merchant};

/// Events read a step while an index catches up with its log.
const CHANGES_A_STEP: usize = 1000;
/// Times a search catches up before it answers from the database instead (a merchant writing
/// faster than its index can follow).
const TRIES: usize = 3;

/// The indexes held, and the store they follow.
pub struct SearchMemory {
    store: Arc<dyn Store>,
    source: Arc<dyn SearchSource>,
    signal: Arc<EventSignal>,
    held: Held,
    builds: Builds,
    counts: Counts,
}

#[derive(Default)]
struct Counts {
    from_memory: AtomicU64,
    from_database: AtomicU64,
    builds: AtomicU64,
    reads_from_memory: AtomicU64,
}

/// A page's records as a search found them kept.
enum Found {
    /// Every one, the page written from them under the merchant's lock.
    Written(SearchPage),
    /// Some: each hit's, when kept.
    Partly(Vec<Option<Arc<[u8]>>>),
}

/// What the indexes hold and have served, since the start.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SearchStats {
    pub bytes: usize,
    pub merchants: usize,
    pub builds: u64,
    /// Times a merchant was found larger than the bound (by its count of locations before its
    /// entries were read, once built, or grown since), its searches then left on the database for
    /// a while.
    pub too_large: u64,
    /// Builds refused room (by the merchant's count of locations before its entries were read,
    /// or once built): it would have dropped indexes searched lately about as often or more.
    pub no_room: u64,
    pub from_memory: u64,
    pub from_database: u64,
    /// Of the searches from memory, those that read the database (where the log stands, and
    /// records not kept): this instance's alone, where `/metrics` counts the process's.
    pub reads_from_memory: u64,
}

impl SearchMemory {
    /// Indexes within `bytes` of memory (0: every search is made on the database).
    pub fn new(store: Arc<dyn Store>, bytes: usize) -> Arc<SearchMemory> {
        Arc::new(SearchMemory {
            source: store.search_source(),
            signal: store.event_signal(),
            store,
            held: Held::new(bytes),
            builds: Builds::for_this_machine(),
            counts: Counts::default(),
        })
    }

    pub fn stats(&self) -> SearchStats {
        let size = self.held.size();
        SearchStats {
            bytes: size.bytes,
            merchants: size.merchants,
            builds: self.counts.builds.load(Ordering::Relaxed),
            too_large: size.too_large,
            no_room: size.no_room,
            from_memory: self.counts.from_memory.load(Ordering::Relaxed),
            from_database: self.counts.from_database.load(Ordering::Relaxed),
            reads_from_memory: self.counts.reads_from_memory.load(Ordering::Relaxed),
        }
    }

    /// One page of `query`, from the merchant's index when it is held, else from the database
    /// (`from` says where a storefront key's search may be read there).
    pub async fn search(self: &Arc<Self>, query: SearchQuery, from: ReadFrom) -> Result<SearchPage, StoreError> {
        let merchant_pk = query.merchant_pk();
        if let Some(merchant) = self.held.get(merchant_pk) {
            for _ in 0..TRIES {
                match self.try_memory(merchant_pk, &merchant, &query, from).await? {
                    Some(page) => {
                        metrics::counter!("searches_total", "served" => "memory").increment(1);
                        self.counts.from_memory.fetch_add(1, Ordering::Relaxed);
                        return Ok(page);
                    }
                    None if !self.catch_up(merchant_pk, &merchant).await? => {
                        self.held.drop_merchant(merchant_pk);
                        self.build_later(merchant_pk);
                        break;
                    }
                    None => {}
                }
            }
        } else {
            self.build_later(merchant_pk);
        }
        metrics::counter!("searches_total", "served" => "database").increment(1);
        self.counts.from_database.fetch_add(1, Ordering::Relaxed);
        self.store.search_locations(query, from).await
    }

    /// The page from the index, with its records as of the index's own sequence: `None` when the
    /// log has moved past the index (it catches up, and the search is made again). Records read
    /// lately are kept (a change drops them), so a search may read no more than where the log
    /// stands, and a storefront key's search nothing while the index is known current. A replica
    /// still behind the index is passed over for the primary.
    async fn try_memory(
        &self,
        merchant_pk: i64,
        merchant: &RwLock<Merchant>,
        query: &SearchQuery,
        from: ReadFrom,
    ) -> Result<Option<SearchPage>, StoreError> {
        let ((hits, has_next), through, found, rings, current) = {
            let m = held::read(merchant);
            // Counted before the walk: a ring after it sends the next search to the log.
            let rings = m.fresh.rings();
            let current = from == ReadFrom::Replica && m.fresh.current();
            let (hits, has_next) = m.index.search(query);
            let found = match m.records.page(&hits) {
                Some(page) => Found::Written(page),
                None => Found::Partly(hits.iter().map(|hit| m.records.get(hit.seq)).collect()),
            };
            ((hits, has_next), m.through, found, rings, current)
        };
        let missing: Vec<i64> = match &found {
            Found::Written(_) => Vec::new(),
            Found::Partly(kept) => hits
                .iter()
                .zip(kept)
                .filter(|(_, kept)| kept.is_none())
                .map(|(hit, _)| hit.seq)
                .collect(),
        };
        let fresh: HashMap<i64, Vec<u8>> = if current && missing.is_empty() {
            HashMap::new()
        } else {
            let mut read = self.source.records(merchant_pk, missing.clone(), from).await?;
            if read.head < through && read.on == Some(ReadOn::Replica) {
                read = self.source.records(merchant_pk, missing, ReadFrom::Primary).await?;
            }
            if read.head != through {
                return Ok(None);
            }
            if let Some(on) = read.on {
                on.count();
                self.counts.reads_from_memory.fetch_add(1, Ordering::Relaxed);
            }
            held::read(merchant).fresh.found_current(rings);
            read.json.into_iter().collect()
        };
        let mut page = match found {
            Found::Written(page) => page,
            Found::Partly(kept) => {
                let results: Vec<(Hit, &[u8])> = hits
                    .iter()
                    .zip(&kept)
                    .filter_map(|(hit, kept)| {
                        Some((
                            *hit,
                            kept.as_deref().or_else(|| fresh.get(&hit.seq).map(Vec::as_slice))?,
                        ))
                    })
                    .collect();
                SearchPage::of_records(&results)
            }
        };
        page.has_next = has_next;
        if !fresh.is_empty() {
            let bytes = {
                let mut m = held::write(merchant);
                // Read as of `through`: still current unless the index has moved on since.
                if m.through == through {
                    for (seq, json) in fresh {
                        m.keep_record(seq, json);
                    }
                }
                m.bytes()
            };
            self.held.resized(merchant_pk, bytes);
        }
        Ok(Some(page))
    }

    /// Reads what changed since the index's sequence, up to where the log stands; `false` when the
    /// log no longer holds it all.
    async fn catch_up(&self, merchant_pk: i64, merchant: &RwLock<Merchant>) -> Result<bool, StoreError> {
        loop {
            let after = held::read(merchant).through;
            let (through, changed, more) = match self.source.changes(merchant_pk, after, CHANGES_A_STEP).await? {
                Changes::Gap => return Ok(false),
                Changes::Read { through, changed, more } => (through, changed, more),
            };
            let bytes = {
                let mut m = held::write(merchant);
                // Another search caught up meanwhile: these changes may be older than its.
                if m.through != after {
                    return Ok(true);
                }
                for (seq, entry) in changed {
                    m.records.forget(seq);
                    match entry {
                        Some(entry) => m.index.upsert(entry),
                        None => m.index.remove(seq),
                    }
                }
                m.through = through;
                m.bytes()
            };
            self.held.resized(merchant_pk, bytes);
            if !more {
                return Ok(true);
            }
        }
    }

    /// Builds the merchant's index in the background, in its turn (`build`), unless it is being
    /// built or was found too large for the bound a short while ago.
    fn build_later(self: &Arc<Self>, merchant_pk: i64) {
        if !self.held.start_build(merchant_pk) {
            return;
        }
        let memory = Arc::clone(self);
        tokio::spawn(async move {
            let weighed = Arc::clone(&memory);
            let fits = move |count| weighed.held.fits(merchant_pk, count);
            match memory.builds.build(memory.source.as_ref(), merchant_pk, fits).await {
                Ok(Built::Index(index, through)) => {
                    metrics::counter!("search_memory_builds_total").increment(1);
                    memory.counts.builds.fetch_add(1, Ordering::Relaxed);
                    let rings = memory.signal.rings(merchant_pk);
                    memory.held.insert(merchant_pk, Merchant::new(*index, through, rings));
                }
                // More locations than the room could hold: none was read.
                Ok(Built::Beyond(count)) => memory.held.beyond_room(merchant_pk, count),
                Err(e) => {
                    tracing::warn!(merchant_pk, error = %e.chain(), "building a search index failed; searches stay on the database");
                    memory.held.build_failed(merchant_pk);
                }
            }
        });
    }
}

//! The merchants whose indexes are held, within the bound: each with its bytes and when it was last
//! searched; the least recently searched dropped first when another needs the room. A merchant
//! whose index alone passes the bound is not held, and not built again for a while.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::{Duration, Instant};

use super::fresh::Fresh;
use crate::domain::location::search::memory::MemoryIndex;
use crate::domain::location::search::{Hit, SearchPage};

/// One merchant's index, the sequence of its log it is as of, the records its searches read
/// lately (each as its JSON, current as of that sequence: a change drops it), and whether the
/// index was found current lately.
#[derive(Debug)]
pub(super) struct Merchant {
    pub(super) index: MemoryIndex,
    pub(super) through: i64,
    pub(super) records: Records,
    pub(super) fresh: Fresh,
}

impl Merchant {
    /// `rings`: the merchant's count of rings (`EventSignal::rings`).
    pub(super) fn new(index: MemoryIndex, through: i64, rings: Arc<AtomicU64>) -> Merchant {
        Merchant {
            index,
            through,
            records: Records::default(),
            fresh: Fresh::new(rings),
        }
    }

    pub(super) fn bytes(&self) -> usize {
        self.index.bytes() + self.records.bytes
    }

    /// Keeps a record read as of `through`, within the merchant's room for records: an eighth of
    /// its index's bytes (a location's entry is about 80 bytes, its record a few hundred: a large
    /// merchant keeps the records of its busiest few percent), and at least `RECORDS_AT_LEAST`.
    pub(super) fn keep_record(&mut self, seq: i64, json: Vec<u8>) {
        self.records.keep(seq, json, records_room(self.index.bytes()));
    }
}

fn records_room(index_bytes: usize) -> usize {
    (index_bytes / 8).max(RECORDS_AT_LEAST)
}

/// The bytes of records any merchant may keep, however small its index.
const RECORDS_AT_LEAST: usize = 4 << 20;

/// Records by seq, as their JSON.
#[derive(Debug, Default)]
pub(super) struct Records {
    json: HashMap<i64, Arc<[u8]>>,
    bytes: usize,
}

impl Records {
    pub(super) fn get(&self, seq: i64) -> Option<Arc<[u8]>> {
        self.json.get(&seq).cloned()
    }

    /// The page of `hits` when every one's record is kept, written from them where they are
    /// (none is shared out of the lock, so none is counted in and out).
    pub(super) fn page(&self, hits: &[Hit]) -> Option<SearchPage> {
        let results: Vec<(Hit, &[u8])> = hits
            .iter()
            .map(|hit| Some((*hit, &**self.json.get(&hit.seq)?)))
            .collect::<Option<_>>()?;
        Some(SearchPage::of_records(&results))
    }

    pub(super) fn forget(&mut self, seq: i64) {
        if let Some(json) = self.json.remove(&seq) {
            self.bytes -= Self::cost(&json);
        }
    }

    /// Keeps `json` as `seq`'s record; past `room` bytes, about half of those kept are let go,
    /// whichever the map's order (randomly seeded) comes to first: records read often are read
    /// again soon, and letting all go at once would send every search to the database together.
    pub(super) fn keep(&mut self, seq: i64, json: Vec<u8>, room: usize) {
        let json: Arc<[u8]> = json.into();
        if self.bytes + Self::cost(&json) > room {
            let mut to_free = self.bytes.saturating_sub(room / 2) + Self::cost(&json);
            self.json.retain(|_, kept| {
                if to_free == 0 {
                    return true;
                }
                to_free = to_free.saturating_sub(Self::cost(kept));
                false
            });
            self.bytes = self.json.values().map(|kept| Self::cost(kept)).sum();
        }
        self.bytes += Self::cost(&json);
        if let Some(was) = self.json.insert(seq, json) {
            self.bytes -= Self::cost(&was);
        }
    }

    /// A record's bytes with its slot and its allocation's counts.
    fn cost(json: &[u8]) -> usize {
        json.len() + 48
    }
}

/// How long a merchant found too large for the bound is searched on the database before its
/// index is tried again (it may have shrunk, or the bound been shared by fewer).
const TOO_LARGE_FOR: Duration = Duration::from_secs(600);

pub(super) fn read(m: &RwLock<Merchant>) -> RwLockReadGuard<'_, Merchant> {
    m.read().unwrap_or_else(PoisonError::into_inner)
}

pub(super) fn write(m: &RwLock<Merchant>) -> RwLockWriteGuard<'_, Merchant> {
    m.write().unwrap_or_else(PoisonError::into_inner)
}

pub(super) struct Held {
    bound: usize,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    merchants: HashMap<i64, Slot>,
    /// The held indexes' bytes, together.
    bytes: usize,
    building: HashSet<i64>,
    too_large: HashMap<i64, Instant>,
    /// How many times a merchant was found too large, since the start.
    found_too_large: u64,
    /// Counts searches: a slot's `used` is the count at its last.
    clock: u64,
}

struct Slot {
    merchant: Arc<RwLock<Merchant>>,
    bytes: usize,
    used: u64,
}

impl Held {
    pub(super) fn new(bound: usize) -> Held {
        Held {
            bound,
            state: Mutex::default(),
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The held indexes' bytes, how many merchants they are, and how many times a merchant was
    /// found larger than the bound.
    pub(super) fn size(&self) -> (usize, usize, u64) {
        let state = self.state();
        (state.bytes, state.merchants.len(), state.found_too_large)
    }

    /// The merchant's index, when held (and it is now the most recently searched).
    pub(super) fn get(&self, merchant_pk: i64) -> Option<Arc<RwLock<Merchant>>> {
        let mut state = self.state();
        state.clock += 1;
        let clock = state.clock;
        let slot = state.merchants.get_mut(&merchant_pk)?;
        slot.used = clock;
        Some(Arc::clone(&slot.merchant))
    }

    /// Whether to build the merchant's index now: not held, not being built, not found too large
    /// lately, and a bound to hold it in.
    pub(super) fn start_build(&self, merchant_pk: i64) -> bool {
        if self.bound == 0 {
            return false;
        }
        let mut state = self.state();
        if state.merchants.contains_key(&merchant_pk) || state.building.contains(&merchant_pk) {
            return false;
        }
        if state
            .too_large
            .get(&merchant_pk)
            .is_some_and(|at| at.elapsed() < TOO_LARGE_FOR)
        {
            return false;
        }
        state.too_large.remove(&merchant_pk);
        state.building.insert(merchant_pk)
    }

    /// The bytes the indexes are held within.
    pub(super) fn bound(&self) -> usize {
        self.bound
    }

    pub(super) fn build_failed(&self, merchant_pk: i64) {
        self.state().building.remove(&merchant_pk);
    }

    /// The merchant's index was not built, or is not held: it is larger than the bound. Its
    /// searches stay on the database for a while.
    pub(super) fn too_large(&self, merchant_pk: i64) {
        let mut state = self.state();
        state.building.remove(&merchant_pk);
        state.found_too_large(merchant_pk, self.bound);
    }

    /// Holds a built index, dropping the least recently searched others to make room; not held
    /// when it alone passes the bound.
    pub(super) fn insert(&self, merchant_pk: i64, merchant: Merchant) {
        let bytes = merchant.bytes();
        if bytes > self.bound {
            self.too_large(merchant_pk);
            return;
        }
        let mut state = self.state();
        state.building.remove(&merchant_pk);
        let clock = state.clock;
        state.bytes += bytes;
        state.merchants.insert(
            merchant_pk,
            Slot {
                merchant: Arc::new(RwLock::new(merchant)),
                bytes,
                used: clock,
            },
        );
        state.evict_beyond(self.bound, merchant_pk);
        state.show();
    }

    /// The merchant's index now takes `bytes` (it changed): others make room, or it goes when it
    /// alone passes the bound.
    pub(super) fn resized(&self, merchant_pk: i64, bytes: usize) {
        let mut state = self.state();
        let Some(slot) = state.merchants.get_mut(&merchant_pk) else {
            return;
        };
        let was = std::mem::replace(&mut slot.bytes, bytes);
        state.bytes = state.bytes - was + bytes;
        if bytes > self.bound {
            state.remove(merchant_pk);
            state.found_too_large(merchant_pk, self.bound);
        } else {
            state.evict_beyond(self.bound, merchant_pk);
        }
        state.show();
    }

    /// Drops the merchant's index (its log no longer holds what it would need to read).
    pub(super) fn drop_merchant(&self, merchant_pk: i64) {
        let mut state = self.state();
        state.remove(merchant_pk);
        state.show();
    }
}

impl State {
    fn found_too_large(&mut self, merchant_pk: i64, bound: usize) {
        tracing::info!(
            merchant_pk,
            bound,
            "a merchant's search index is larger than --search-memory: its searches stay on the database"
        );
        metrics::counter!("search_memory_too_large_total").increment(1);
        self.found_too_large += 1;
        self.too_large.insert(merchant_pk, Instant::now());
    }

    fn remove(&mut self, merchant_pk: i64) {
        if let Some(slot) = self.merchants.remove(&merchant_pk) {
            self.bytes -= slot.bytes;
        }
    }

    /// Drops the least recently searched merchants but `keep` until the bytes are within `bound`.
    fn evict_beyond(&mut self, bound: usize, keep: i64) {
        while self.bytes > bound {
            let oldest = self
                .merchants
                .iter()
                .filter(|(pk, _)| **pk != keep)
                .min_by_key(|(_, slot)| slot.used)
                .map(|(pk, _)| *pk);
            let Some(oldest) = oldest else { return };
            self.remove(oldest);
            metrics::counter!("search_memory_evictions_total").increment(1);
        }
    }

    fn show(&self) {
        metrics::gauge!("search_memory_bytes").set(self.bytes as f64);
        metrics::gauge!("search_memory_merchants").set(self.merchants.len() as f64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_kept_are_counted_dropped_on_a_change_and_half_let_go_past_their_room() {
        const ROOM: usize = 1 << 20;
        let mut records = Records::default();
        records.keep(1, vec![b'a'; 100], ROOM);
        records.keep(2, vec![b'b'; 100], ROOM);
        assert_eq!(records.bytes, 2 * (100 + 48));
        records.keep(2, vec![b'c'; 10], ROOM);
        assert_eq!(
            records.bytes,
            100 + 48 + 10 + 48,
            "a record kept again replaces the old"
        );
        records.forget(1);
        assert!(records.get(1).is_none());
        assert_eq!(records.get(2).as_deref(), Some(&[b'c'; 10][..]));
        assert_eq!(records.bytes, 10 + 48);
        for seq in 0..10_000 {
            records.keep(seq, vec![0; 1000], ROOM);
            assert!(records.bytes <= ROOM, "{}", records.bytes);
            assert!(records.get(seq).is_some(), "the record just read is kept");
        }
        let kept = records.json.len() * (1000 + 48);
        assert_eq!(records.bytes, kept);
        assert!(kept > ROOM / 3, "about half stays when the room is full: {kept}");
    }

    #[test]
    fn a_merchant_keeps_records_in_proportion_to_its_index_and_never_less_than_the_floor() {
        let mut small = Merchant::new(MemoryIndex::of(Vec::new()), 0, Arc::default());
        for seq in 0..8_000 {
            small.keep_record(seq, vec![0; 1000]);
        }
        assert!(small.records.bytes <= RECORDS_AT_LEAST);
        assert!(small.records.bytes > RECORDS_AT_LEAST / 3);
        assert_eq!(records_room(120 << 20), 15 << 20, "a million locations' index");
    }
}

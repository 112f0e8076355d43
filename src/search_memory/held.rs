//! The merchants whose indexes are held, within the bound: each with its bytes and when it was last
//! searched; the least recently searched dropped first when another needs the room. A merchant
//! whose index alone passes the bound is not held, and not built again for a while. An index that
//! needs others dropped is held only when its merchant was searched lately more than half again
//! as often as those it would drop together, and by two searches at least (`outweighs`): a merchant
//! searched once (a crawler going through every shop) takes the room of idle indexes only, and
//! merchants searched alike, more than the bound holds, do not take each other's room by turns,
//! each turn a build.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::{Duration, Instant};

use rustc_hash::FxHashMap;

use super::demand::Demand;
use super::fresh::Fresh;
use super::slots::Slots;
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

/// Whether `wanted` searches lately outweigh `with`, those of the indexes that would be dropped:
/// more than half again as many, and when those were searched at all, two more at least. Merchants
/// searched once or twice a while apart (each shop a crawler comes by) differ by a search either
/// way with the order it comes in; without the two, they took each other's room by turns more often.
fn outweighs(wanted: u64, with: u64) -> bool {
    let margin = if with == 0 { 0 } else { (with / 2).max(1) };
    wanted > with + margin
}

fn records_room(index_bytes: usize) -> usize {
    (index_bytes / 8).max(RECORDS_AT_LEAST)
}

/// The bytes of records any merchant may keep, however small its index.
const RECORDS_AT_LEAST: usize = 4 << 20;

/// Records by seq, as their JSON.
#[derive(Debug, Default)]
pub(super) struct Records {
    json: FxHashMap<i64, Arc<[u8]>>,
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
    /// whichever the map's order (by a hash of their seqs, not by when or how often each was read)
    /// comes to first: records read often are read again soon, and letting all go at once would
    /// send every search to the database together.
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

/// How long a merchant refused room is searched on the database before its searches lately are
/// weighed against the held indexes' again.
const ROOM_ASKED_EVERY: Duration = Duration::from_millis(250);

/// Every this many searches the counts of searches lately are aged (a look at the clock).
const AGE_EVERY: u64 = 256;

pub(super) fn read(m: &RwLock<Merchant>) -> RwLockReadGuard<'_, Merchant> {
    m.read().unwrap_or_else(PoisonError::into_inner)
}

pub(super) fn write(m: &RwLock<Merchant>) -> RwLockWriteGuard<'_, Merchant> {
    m.write().unwrap_or_else(PoisonError::into_inner)
}

/// What [`Held::size`] tells.
pub(super) struct Size {
    pub(super) bytes: usize,
    pub(super) merchants: usize,
    pub(super) too_large: u64,
    pub(super) no_room: u64,
}

pub(super) struct Held {
    bound: usize,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    slots: Slots<Arc<RwLock<Merchant>>>,
    building: HashSet<i64>,
    too_large: HashMap<i64, Instant>,
    /// How many times a merchant was found too large, since the start.
    found_too_large: u64,
    /// Every merchant's searches lately, held or not.
    demand: Demand,
    /// The bytes of each merchant's index when last built or held: what it would need again.
    sizes: HashMap<i64, usize>,
    /// When a merchant was last refused room.
    refused: HashMap<i64, Instant>,
    /// How many builds were refused room, since the start.
    no_room: u64,
    /// Counts searches: a slot is stamped with the count at its last.
    clock: u64,
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

    /// The held indexes' bytes, how many merchants they are, how many times a merchant was found
    /// larger than the bound, and how many builds were refused room.
    pub(super) fn size(&self) -> Size {
        let state = self.state();
        Size {
            bytes: state.slots.bytes(),
            merchants: state.slots.len(),
            too_large: state.found_too_large,
            no_room: state.no_room,
        }
    }

    /// The merchant's index, when held (and it is now the most recently searched); counts the
    /// search either way.
    pub(super) fn get(&self, merchant_pk: i64) -> Option<Arc<RwLock<Merchant>>> {
        if self.bound == 0 {
            return None;
        }
        let mut state = self.state();
        state.clock += 1;
        let clock = state.clock;
        state.demand.searched(merchant_pk);
        if clock.is_multiple_of(AGE_EVERY) {
            state.demand.age(Instant::now());
        }
        state.slots.stamp(merchant_pk, clock)
    }

    /// Whether to build the merchant's index now: not held, not being built, not found too large
    /// lately, a bound to hold it in, and, when its size is known from an earlier build, room
    /// for it (`has_room`).
    pub(super) fn start_build(&self, merchant_pk: i64) -> bool {
        if self.bound == 0 {
            return false;
        }
        let mut state = self.state();
        if state.slots.contains(merchant_pk) || state.building.contains(&merchant_pk) {
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
        if let Some(&bytes) = state.sizes.get(&merchant_pk) {
            if state
                .refused
                .get(&merchant_pk)
                .is_some_and(|at| at.elapsed() < ROOM_ASKED_EVERY)
            {
                return false;
            }
            if !state.has_room(merchant_pk, bytes, self.bound) {
                state.refused.insert(merchant_pk, Instant::now());
                return false;
            }
        }
        state.refused.remove(&merchant_pk);
        state.building.insert(merchant_pk)
    }

    /// Whether an index of `count` entries, at the fewest bytes an entry takes, fits in the
    /// merchant's room: beside the held indexes, and that of those it may drop (`State::room_for`).
    pub(super) fn fits(&self, merchant_pk: i64, count: usize) -> bool {
        let bytes = count.saturating_mul(MemoryIndex::LEAST_BYTES_AN_ENTRY);
        self.state().has_room(merchant_pk, bytes, self.bound)
    }

    /// A build found `count` `ACTIVE` locations, more than the merchant's room could hold, and
    /// read none: too large for the bound, or no room now (its size kept as the least it takes).
    pub(super) fn beyond_room(&self, merchant_pk: i64, count: usize) {
        let bytes = count.saturating_mul(MemoryIndex::LEAST_BYTES_AN_ENTRY);
        if bytes > self.bound {
            self.too_large(merchant_pk);
            return;
        }
        let mut state = self.state();
        state.building.remove(&merchant_pk);
        state.sizes.entry(merchant_pk).or_insert(bytes);
        state.refused_room(merchant_pk);
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
    /// when it alone passes the bound, or when there is no room for it (`has_room`).
    pub(super) fn insert(&self, merchant_pk: i64, merchant: Merchant) {
        let bytes = merchant.bytes();
        if bytes > self.bound {
            self.too_large(merchant_pk);
            return;
        }
        let mut state = self.state();
        state.building.remove(&merchant_pk);
        state.sizes.insert(merchant_pk, bytes);
        if !state.has_room(merchant_pk, bytes, self.bound) {
            state.refused_room(merchant_pk);
            return;
        }
        let clock = state.clock;
        state
            .slots
            .insert(merchant_pk, Arc::new(RwLock::new(merchant)), bytes, clock);
        state.evict_beyond(self.bound, merchant_pk);
        state.show();
    }

    /// The merchant's index now takes `bytes` (it changed): others make room, or it goes when it
    /// alone passes the bound.
    pub(super) fn resized(&self, merchant_pk: i64, bytes: usize) {
        let mut state = self.state();
        if !state.slots.resize(merchant_pk, bytes) {
            return;
        }
        state.sizes.insert(merchant_pk, bytes);
        if bytes > self.bound {
            state.slots.remove(merchant_pk);
            state.found_too_large(merchant_pk, self.bound);
        } else {
            state.evict_beyond(self.bound, merchant_pk);
        }
        state.show();
    }

    /// Drops the merchant's index (its log no longer holds what it would need to read).
    pub(super) fn drop_merchant(&self, merchant_pk: i64) {
        let mut state = self.state();
        state.slots.remove(merchant_pk);
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

    /// Whether `bytes` of the merchant's index fit in its room (`room_for`).
    fn has_room(&mut self, merchant_pk: i64, bytes: usize, bound: usize) -> bool {
        bytes <= self.room_for(merchant_pk, bound, bytes)
    }

    /// The room beside the held indexes, and that of the least recently searched others, in that
    /// order, for as long as the merchant's searches lately outweigh theirs together
    /// (`outweighs`); counted no further than `needed`.
    fn room_for(&mut self, merchant_pk: i64, bound: usize, needed: usize) -> usize {
        let mut room = bound.saturating_sub(self.slots.bytes());
        if room >= needed {
            return room;
        }
        self.demand.age(Instant::now());
        let wanted = self.demand.of(merchant_pk);
        let demand = &self.demand;
        let mut dropped = 0;
        self.slots.walk(merchant_pk, |pk, bytes| {
            let with = dropped + demand.of(pk);
            if !outweighs(wanted, with) {
                return false;
            }
            dropped = with;
            room += bytes;
            room < needed
        });
        room
    }

    fn refused_room(&mut self, merchant_pk: i64) {
        self.refused.insert(merchant_pk, Instant::now());
        self.no_room += 1;
        metrics::counter!("search_memory_no_room_total").increment(1);
    }

    /// Drops the least recently searched merchants but `keep` until the bytes are within `bound`.
    fn evict_beyond(&mut self, bound: usize, keep: i64) {
        while self.slots.bytes() > bound {
            let Some(oldest) = self.slots.first_but(keep) else {
                return;
            };
            self.slots.remove(oldest);
            metrics::counter!("search_memory_evictions_total").increment(1);
        }
    }

    fn show(&self) {
        metrics::gauge!("search_memory_bytes").set(self.slots.bytes() as f64);
        metrics::gauge!("search_memory_merchants").set(self.slots.len() as f64);
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

    /// A merchant whose index and records take `bytes` (within a few).
    fn merchant_of(bytes: usize) -> Merchant {
        let mut merchant = Merchant::new(MemoryIndex::of(Vec::new()), 0, Arc::default());
        let index = merchant.bytes();
        merchant.keep_record(0, vec![0; bytes - index - 48]);
        assert_eq!(merchant.bytes(), bytes);
        merchant
    }

    fn searched(held: &Held, merchant_pk: i64, times: usize) {
        for _ in 0..times {
            held.get(merchant_pk);
        }
    }

    fn held_pks(held: &Held) -> Vec<i64> {
        held.state().slots.merchants()
    }

    /// An index's bytes in these tests.
    const ONE: usize = 100_000;

    /// Room for two and a half indexes of `ONE` bytes, those of merchants 1 and 2 held, each
    /// searched 10 times.
    fn two_held() -> Held {
        let held = Held::new(ONE * 5 / 2);
        for pk in [1, 2] {
            searched(&held, pk, 10);
            assert!(held.start_build(pk));
            held.insert(pk, merchant_of(ONE));
        }
        held
    }

    #[test]
    fn an_index_that_needs_others_dropped_is_held_only_for_a_merchant_searched_half_again_as_often() {
        let held = two_held();
        assert_eq!(held_pks(&held), [1, 2]);
        // Searched as often as the least recently searched it would drop: built once, not held.
        searched(&held, 3, 10);
        assert!(held.start_build(3));
        held.insert(3, merchant_of(ONE));
        assert_eq!(held_pks(&held), [1, 2], "merchants searched alike keep their room");
        assert_eq!(held.size().no_room, 1);
        assert!(!held.start_build(3), "its size known, no room: not built again");
        searched(&held, 3, 5);
        std::thread::sleep(ROOM_ASKED_EVERY);
        assert!(
            !held.start_build(3),
            "15 searches: not more than half again the 10 of the one it drops"
        );
        searched(&held, 3, 1);
        std::thread::sleep(ROOM_ASKED_EVERY);
        assert!(held.start_build(3), "16 searches: room is made");
        held.insert(3, merchant_of(ONE));
        assert_eq!(held_pks(&held), [2, 3], "the least recently searched is dropped");
        assert!(held.size().bytes <= ONE * 5 / 2);
        assert_eq!(held.size().no_room, 1);
    }

    #[test]
    fn searches_outweigh_others_by_half_again_and_two_searches_at_least() {
        let cases = [
            (1, 0),
            (2, 1),
            (3, 1),
            (3, 2),
            (4, 2),
            (4, 3),
            (5, 3),
            (15, 10),
            (16, 10),
        ];
        let outweighed: Vec<bool> = cases.iter().map(|&(wanted, with)| outweighs(wanted, with)).collect();
        assert_eq!(
            outweighed,
            [true, false, true, false, true, false, true, false, true],
            "{cases:?}"
        );
    }

    #[test]
    fn an_index_fits_beside_the_others_or_takes_the_room_of_those_not_searched_whatever_its_searches() {
        let held = Held::new(ONE * 5 / 2);
        for pk in [1, 2] {
            assert!(held.start_build(pk), "room enough: built unsearched");
            held.insert(pk, merchant_of(ONE));
        }
        searched(&held, 3, 1);
        assert!(held.start_build(3));
        held.insert(3, merchant_of(ONE));
        assert_eq!(held_pks(&held), [2, 3], "one search outweighs none");
        searched(&held, 3, 100);
        searched(&held, 4, 1);
        assert!(held.start_build(4));
        held.insert(4, merchant_of(ONE * 2));
        assert_eq!(
            held_pks(&held),
            [2, 3],
            "room for it would drop 3's 100 searches for its 1"
        );
        assert_eq!(held.size().no_room, 1);
    }

    #[test]
    fn a_merchant_counted_beyond_its_room_keeps_that_count_as_its_size_and_waits_for_searches() {
        let held = two_held();
        searched(&held, 3, 10);
        let least = MemoryIndex::LEAST_BYTES_AN_ENTRY;
        assert!(
            held.fits(3, ONE / 2 / least) && !held.fits(3, ONE / 2 / least + 1),
            "the room beside only: 10 searches are not 15"
        );
        assert!(held.start_build(3));
        held.beyond_room(3, ONE / MemoryIndex::LEAST_BYTES_AN_ENTRY);
        let size = held.size();
        assert_eq!((size.no_room, size.too_large), (1, 0));
        assert_eq!(held_pks(&held), [1, 2]);
        assert!(!held.start_build(3), "no room for its count's bytes");
        searched(&held, 3, 6);
        assert!(
            held.fits(3, ONE * 3 / 2 / least) && !held.fits(3, ONE * 3 / 2 / least + 1),
            "16 searches outweigh the 10 of the least recently searched"
        );
        std::thread::sleep(ROOM_ASKED_EVERY);
        assert!(held.start_build(3));
        held.beyond_room(3, ONE * 3);
        assert_eq!(held.size().too_large, 1, "more than the bound holds");
    }
}

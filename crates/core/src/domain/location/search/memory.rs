//! One merchant's search index held in memory: the entries the stores' index holds of its `ACTIVE`
//! locations (cell, seq, coordinates, flags, sorted limits, opening hours), tested as the stores'
//! scans test them, so that a walk finds the same matches in either (through coverings of its
//! own, cheaper to make: `Ring::ranges_in_memory`) and a page is the same page.
//!
//! **Layout.** Most entries sit in vectors sorted by `(cell, seq)`, each field in one of its own:
//! cells and flags (8 bytes each), sorted limits (32 bytes) and the rest (seq, coordinates and
//! hours, 32 bytes); every 64th cell sits in a vector small enough for the cache to keep. A ring's
//! key range is found in that one and then among 64 cells, a few cache lines, and read as a run
//! of neighbours in memory: the flags of every entry in it, the rest only of those whose flags
//! pass. Opening hours are kept once for every set of equal hours (a chain's points mostly share
//! theirs). A change since the vectors were sorted goes to a small ordered map beside them, and
//! the seq it replaces or removes is marked dead; when the changes pass an eighth of the entries
//! (or [`MERGE_AT_LEAST`]) both are merged into new vectors, so a write costs a few map operations
//! and, amortised, a few entries' copying.

use std::collections::{BTreeMap, HashMap, HashSet};

use super::cache_lines::a_value_a_line;
use super::density::{Density, FlagCounts};
use super::kept_hours::Hours;
use super::key::SearchKey;
use super::query::{Hit, IndexTest, SearchQuery};
use super::walk::Walk;

/// The fewest changes that lead to a merge.
const MERGE_AT_LEAST: usize = 4096;
/// Entries of the sorted vector a fence stands for: a cell's place is found among the fences (a
/// small array the cache keeps), then among this many cells, instead of by a binary search over
/// the whole vector that misses the cache at nearly every step.
const BLOCK: usize = 64;

/// One `ACTIVE` location's entry, as a store reads it from its index or derives it from a record.
#[derive(Clone, Debug, PartialEq)]
pub struct IndexEntry {
    pub seq: i64,
    pub latitude: f64,
    pub longitude: f64,
    pub key: SearchKey,
}

/// An entry as the changes since the sort hold it (its cell beside it); its hours by where they
/// begin in [`Hours`].
#[derive(Clone, Copy, Debug)]
struct Packed {
    seq: i64,
    latitude: f64,
    longitude: f64,
    fit: [f64; 4],
    flags: i64,
    hours: u64,
}

impl Packed {
    fn passes(&self, test: &IndexTest) -> bool {
        flags_pass(self.flags, test) && fits_pass(&self.fit, test)
    }

    fn spot(&self) -> Spot {
        Spot {
            seq: self.seq,
            latitude: self.latitude,
            longitude: self.longitude,
            hours: self.hours,
        }
    }
}

fn flags_pass(flags: i64, test: &IndexTest) -> bool {
    flags & test.any != 0 && flags & test.visible != 0 && flags & test.all == test.all
}

fn fits_pass(fit: &[f64; 4], test: &IndexTest) -> bool {
    fit.iter().zip(test.fit).all(|(have, need)| *have >= need)
}

/// Each limit's least over `fits`, minus infinity where one is not a number (which passes no
/// test): whatever passes the least passes every one. Infinity when there is none.
fn least_fit(fits: &[[f64; 4]]) -> [f64; 4] {
    fits.iter().fold([f64::INFINITY; 4], |mut least, fit| {
        for (least, have) in least.iter_mut().zip(fit) {
            *least = if have.is_nan() {
                f64::NEG_INFINITY
            } else {
                least.min(*have)
            };
        }
        least
    })
}

/// What a scan reads of an entry whose flags and limits pass.
#[derive(Clone, Copy, Debug)]
struct Spot {
    seq: i64,
    latitude: f64,
    longitude: f64,
    hours: u64,
}

/// One merchant's index (see the module).
#[derive(Default, Debug)]
pub struct MemoryIndex {
    /// The cells of the entries sorted by `(cell, seq)`, and their other fields in that order.
    cells: Vec<i64>,
    flags: Vec<i64>,
    fits: Vec<[f64; 4]>,
    spots: Vec<Spot>,
    /// The least of each of `fits`' limits (minus infinity where one is not a number): when a
    /// test's limits are at most these, every sorted entry passes them and `fits` is not read.
    least_fit: [f64; 4],
    /// Every `BLOCK`-th of `cells`, from the first.
    fences: Vec<i64>,
    /// Seqs of the sorted entries replaced or removed since they were sorted.
    dead: HashSet<i64>,
    /// Entries added or replaced since, by `(cell, seq)`.
    added: BTreeMap<(i64, i64), Packed>,
    /// The cell of each entry of `added`, by seq.
    added_cells: HashMap<i64, i64>,
    hours: Hours,
    /// How densely the sorted entries lie, and how many have each flag: what sizes a walk's
    /// first ring.
    density: Density,
    flags_held: FlagCounts,
}

impl MemoryIndex {
    /// The fewest bytes an index holds for an entry, whatever its hours: its fields in the sorted
    /// vectors. More entries than a bound's bytes divided by this cannot be held within it.
    pub const LEAST_BYTES_AN_ENTRY: usize =
        2 * std::mem::size_of::<i64>() + std::mem::size_of::<[f64; 4]>() + std::mem::size_of::<Spot>();

    /// An index of `entries` (one per seq).
    pub fn of(entries: impl IntoIterator<Item = IndexEntry>) -> MemoryIndex {
        let mut index = MemoryIndex::default();
        let packed = entries.into_iter().map(|e| index.pack(e)).collect();
        index.set_sorted(packed);
        index
    }

    /// Sorts `entries` (each with its cell) into the vectors.
    fn set_sorted(&mut self, mut entries: Vec<(i64, Packed)>) {
        entries.sort_unstable_by_key(|(cell, p)| (*cell, p.seq));
        let n = entries.len();
        let (mut cells, mut flags, mut fits, mut spots) = (
            Vec::with_capacity(n),
            Vec::with_capacity(n),
            Vec::with_capacity(n),
            Vec::with_capacity(n),
        );
        for (cell, p) in entries {
            cells.push(cell);
            flags.push(p.flags);
            fits.push(p.fit);
            spots.push(p.spot());
        }
        self.fences = cells.iter().step_by(BLOCK).copied().collect();
        self.least_fit = least_fit(&fits);
        self.density = Density::of(&cells);
        self.flags_held = FlagCounts::of(&flags);
        (self.cells, self.flags, self.fits, self.spots) = (cells, flags, fits, spots);
    }

    /// The `i`-th sorted entry, and its cell.
    fn sorted(&self, i: usize) -> (i64, Packed) {
        let spot = self.spots[i];
        let packed = Packed {
            seq: spot.seq,
            latitude: spot.latitude,
            longitude: spot.longitude,
            fit: self.fits[i],
            flags: self.flags[i],
            hours: spot.hours,
        };
        (self.cells[i], packed)
    }

    /// The first place in the sorted entries whose cell is not `before` (a predicate true of the cells
    /// before some cell and false from it on), as `partition_point` finds it.
    fn place(&self, before: impl Fn(i64) -> bool) -> usize {
        // The first block whose first cell is not before: the place is in the block ahead of it.
        let block = self.fences.partition_point(|&cell| before(cell));
        let from = block.saturating_sub(1) * BLOCK;
        let to = (block * BLOCK).min(self.cells.len());
        let cells = &self.cells[from..to.max(from)];
        // Each of the block's cache lines is read before the binary search, the reads independent
        // of each other: the block is mostly out of the cache, and the search's steps, each waiting
        // on the one before, then find their lines on the way. (The place is the same without.)
        std::hint::black_box(a_value_a_line(cells));
        from + cells.partition_point(|&cell| before(cell))
    }

    /// The entry as held, and its cell.
    fn pack(&mut self, entry: IndexEntry) -> (i64, Packed) {
        let packed = Packed {
            seq: entry.seq,
            latitude: entry.latitude,
            longitude: entry.longitude,
            fit: entry.key.fit,
            flags: entry.key.flags,
            hours: self.hours.place(&entry.key.hours),
        };
        (entry.key.cell, packed)
    }

    /// The location `entry.seq` is `ACTIVE` with this entry (whatever it had before).
    pub fn upsert(&mut self, entry: IndexEntry) {
        let (cell, packed) = self.pack(entry);
        self.remove(packed.seq);
        self.added.insert((cell, packed.seq), packed);
        self.added_cells.insert(packed.seq, cell);
        self.merge_when_due();
    }

    /// The location `seq` is not `ACTIVE` (archived, disabled, quarantined) or is gone.
    pub fn remove(&mut self, seq: i64) {
        self.dead.insert(seq);
        if let Some(cell) = self.added_cells.remove(&seq) {
            self.added.remove(&(cell, seq));
        }
    }

    fn merge_when_due(&mut self) {
        if self.dead.len() + self.added.len() > MERGE_AT_LEAST.max(self.cells.len() / 8) {
            self.merge();
        }
    }

    /// One sorted vector again, holding only the hours its entries use.
    fn merge(&mut self) {
        let old = std::mem::take(&mut self.hours);
        let dead = std::mem::take(&mut self.dead);
        let added = std::mem::take(&mut self.added);
        self.added_cells.clear();
        let mut entries: Vec<(i64, Packed)> = (0..self.cells.len())
            .map(|i| self.sorted(i))
            .filter(|(_, p)| !dead.contains(&p.seq))
            .chain(added.into_iter().map(|((cell, _), p)| (cell, p)))
            .collect();
        for (_, p) in &mut entries {
            p.hours = self.hours.place(old.get(p.hours));
        }
        self.set_sorted(entries);
    }

    /// How many entries it holds (counted: for tests and reports, not for every search).
    pub fn len(&self) -> usize {
        self.cells.len() - self.sorted_dead() + self.added.len()
    }

    fn sorted_dead(&self) -> usize {
        // Every dead seq was sorted, in `added`, or in neither: count the sorted ones.
        if self.dead.is_empty() {
            return 0;
        }
        self.spots.iter().filter(|p| self.dead.contains(&p.seq)).count()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// What it holds on the heap, in bytes (the maps' slots and the hours included).
    pub fn bytes(&self) -> usize {
        let packed = std::mem::size_of::<Packed>();
        self.fits.capacity() * std::mem::size_of::<[f64; 4]>()
            + self.spots.capacity() * std::mem::size_of::<Spot>()
            + (self.cells.capacity() + self.flags.capacity() + self.fences.capacity()) * std::mem::size_of::<i64>()
            + self.dead.capacity() * (std::mem::size_of::<i64>() + 1)
            + self.added.len() * (packed + 2 * std::mem::size_of::<i64>() + 16)
            + self.added_cells.capacity() * (2 * std::mem::size_of::<i64>() + 1)
            + self.hours.bytes()
            + self.density.bytes()
    }

    /// Every entry with a cell in `first..=last` that passes `test`, as the stores' range scan
    /// gives it to [`Walk::consider`]: seq, coordinates and (when `hours`) its opening hours.
    pub fn scan<'s>(
        &'s self,
        (first, last): (i64, i64),
        test: &IndexTest,
        hours: bool,
        mut visit: impl FnMut(i64, f64, f64, &dyn Fn() -> Option<&'s [u8]>),
    ) {
        let from = self.place(|cell| cell < first);
        let to = self.place(|cell| cell <= last).max(from);
        // Only the flags of every entry are read; the limits of those they pass (unless every
        // entry's pass: a search for no parcel), and the rest of those both pass.
        let every_fit_passes = fits_pass(&self.least_fit, test);
        let passing = self.flags[from..to]
            .iter()
            .zip(&self.fits[from..to])
            .zip(&self.spots[from..to])
            .filter(|((flags, fit), _)| flags_pass(**flags, test) && (every_fit_passes || fits_pass(fit, test)))
            .map(|(_, spot)| *spot)
            .filter(|spot| self.dead.is_empty() || !self.dead.contains(&spot.seq));
        let added = self
            .added
            .range((first, i64::MIN)..=(last, i64::MAX))
            .map(|(_, p)| p)
            .filter(|p| p.passes(test))
            .map(Packed::spot);
        for spot in passing.chain(added) {
            let opening = || hours.then(|| self.hours.get(spot.hours));
            visit(spot.seq, spot.latitude, spot.longitude, &opening);
        }
    }

    /// How far from `query`'s point the index expects to hold a page and half again of entries
    /// that pass `test`'s flags, in metres, by the count of its sorted entries around the point
    /// and the share of them with those flags ([`FlagCounts::share_passing`]).
    fn reach_m(&self, query: &SearchQuery, test: &IndexTest) -> Option<f64> {
        let latitude = query.near().latitude();
        let count = self.density.count_around(latitude, query.near().longitude())?;
        let wanted = (query.limit() + 1) as f64 * 1.5 / self.flags_held.share_passing(test);
        self.density.reach_m(latitude, count, wanted)
    }

    /// A page of `query` from this index: its hits in order, and whether more follow.
    pub fn search(&self, query: &SearchQuery) -> (Vec<Hit>, bool) {
        self.walk(query).finish()
    }

    /// The walk of `query` over this index, every ring read.
    fn walk<'q>(&self, query: &'q SearchQuery) -> Walk<'q> {
        let mut walk = Walk::new(query);
        let test = query.filter().index_test();
        if let Some(metres) = self.reach_m(query, &test) {
            walk = walk.first_ring_reaching(metres);
        }
        let hours = walk.needs_hours();
        while let Some(ring) = walk.next_ring() {
            for range in ring.ranges_in_memory() {
                self.scan(range, &test, hours, |seq, latitude, longitude, opening| {
                    walk.consider_with(seq, latitude, longitude, opening)
                });
            }
        }
        walk
    }
}

#[cfg(test)]
#[path = "memory_tests.rs"]
mod tests;

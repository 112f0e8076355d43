//! The walk outward from the buyer (see the module above): which rings to read, what each entry
//! read means, when to stop.
//!
//! A ring is a range of whole `distance_m` values, `(inner, outer]`; its covering is computed for the
//! exact distances that round into it, `[inner + ½, outer + ½)`, with the covering's own margin.

use super::key;
use super::query::{Hit, MAX_RINGS, RING_CELLS, SearchQuery};
use crate::domain::cells::{cover, cover_by_edges};
use crate::domain::geo::Origin;

/// Key ranges per ring at most in an index held in memory: half a covering on disk's. Making a
/// covering of more cells costs more than reading the entries the tighter cells leave out.
const MEMORY_RING_CELLS: usize = 12;

/// The first ring's outer radius beyond where the walk starts, in metres.
const FIRST_RING_M: f64 = 100.0;

/// The points of one ring of a walk, around its centre: those at a distance `d` with
/// `inner ≤ d < outer` (the exact distances that round into the ring's whole metres), which the
/// key ranges of either covering hold.
#[derive(Clone, Copy, Debug)]
pub struct Ring {
    latitude: f64,
    longitude: f64,
    inner: f64,
    outer: f64,
}

impl Ring {
    /// Key ranges for an index on disk, where each range costs a descent of a B-tree: the fewest
    /// cells' worth of points, [`RING_CELLS`] ranges at most.
    pub fn ranges(&self) -> Vec<(i64, i64)> {
        cover(self.latitude, self.longitude, self.inner, self.outer, RING_CELLS)
    }

    /// Key ranges for an index in memory, where a range costs a few comparisons and reading an
    /// entry less than weighing a cell: [`MEMORY_RING_CELLS`] ranges at most, each cell weighed by
    /// its edges alone.
    pub fn ranges_in_memory(&self) -> Vec<(i64, i64)> {
        cover_by_edges(self.latitude, self.longitude, self.inner, self.outer, MEMORY_RING_CELLS)
    }
}

/// One search's walk: `next_ring` names the ring whose key ranges to read, `consider` takes every
/// index entry read from them, `finish` gives the page.
#[derive(Debug)]
pub struct Walk<'q> {
    query: &'q SearchQuery,
    /// `near`, whose distance to every candidate is measured.
    origin: Origin,
    /// Where the walk started: results have a `distance_m` above it.
    start: i64,
    inner: i64,
    outer: i64,
    rings: u32,
    /// How far the first ring reaches beyond the start, in metres.
    first_ring_m: f64,
    found: Vec<Hit>,
}

impl<'q> Walk<'q> {
    pub fn new(query: &'q SearchQuery) -> Walk<'q> {
        let start = query.last_seen().map_or(-1, |a| i64::from(a.distance_m) - 1);
        Walk {
            query,
            origin: Origin::new(query.near().latitude(), query.near().longitude()),
            start,
            inner: start,
            outer: start,
            rings: 0,
            first_ring_m: FIRST_RING_M,
            found: Vec::with_capacity(query.limit() + 1),
        }
    }

    /// The same walk, its first ring reaching `metres` beyond where it starts (where an index
    /// expects a page's matches, by how many entries it holds around the point) rather than the
    /// default: a walk that would have taken two rings takes one. Any reach gives the same page.
    pub fn first_ring_reaching(mut self, metres: f64) -> Walk<'q> {
        if metres.is_finite() && metres >= 1.0 {
            self.first_ring_m = metres;
        }
        self
    }

    /// Rings read so far.
    #[cfg(test)]
    pub(super) fn rings(&self) -> u32 {
        self.rings
    }

    /// Whether the index entries read must carry their opening hours.
    pub fn needs_hours(&self) -> bool {
        self.query.filter().open_at.is_some()
    }

    /// The next ring, or `None` when the page is decided.
    pub fn next_ring(&mut self) -> Option<Ring> {
        let radius = i64::from(self.query.radius().metres());
        if self.found.len() > self.query.limit() || self.outer >= radius || self.rings >= MAX_RINGS {
            return None;
        }
        self.inner = self.outer;
        self.outer = self.next_outer().clamp(self.outer + 1, radius);
        self.rings += 1;
        let near = self.query.near();
        Some(Ring {
            latitude: near.latitude(),
            longitude: near.longitude(),
            inner: self.inner as f64 + 0.5,
            outer: self.outer as f64 + 0.5,
        })
    }

    /// The next ring's outer radius: far enough, by the matches found over the area walked so far,
    /// to hold the page with half again as many to spare: from twice the area to sixteen times (when
    /// none was found).
    fn next_outer(&self) -> i64 {
        let start = self.start.max(0) as f64;
        if self.rings == 0 {
            return (start.powi(2) + self.first_ring_m.powi(2)).sqrt().ceil() as i64;
        }
        let walked = (self.outer as f64).powi(2) - start.powi(2);
        let growth = match self.found.len() {
            0 => 16.0,
            n => ((self.query.limit() + 1) as f64 / n as f64 * 1.5).clamp(2.0, 16.0),
        };
        (start.powi(2) + walked * growth).sqrt().ceil() as i64
    }

    /// An index entry read from the current ring's ranges (and passing the index's test):
    /// kept when it lies in the ring, after the cursor, and is open when asked (`hours` is read
    /// only when [`Walk::needs_hours`]).
    pub fn consider(&mut self, seq: i64, latitude: f64, longitude: f64, hours: Option<&[u8]>) {
        self.consider_with(seq, latitude, longitude, || hours);
    }

    /// [`Walk::consider`] with the entry's opening hours read only when they decide: an index in
    /// memory keeps them apart from the entries, and most entries read lie outside the ring.
    pub fn consider_with<'h>(
        &mut self,
        seq: i64,
        latitude: f64,
        longitude: f64,
        hours: impl FnOnce() -> Option<&'h [u8]>,
    ) {
        // Most entries read lie outside the ring (a ring's cells reach beyond both its edges),
        // and bounds without trigonometry tell most of them: a distance rounds into the ring when
        // it is at least `inner + ½` and below `outer + ½`.
        let (least, most) = self.origin.distance_bounds_m(latitude, longitude);
        if least >= self.outer as f64 + 0.5 || most < self.inner as f64 + 0.5 {
            return;
        }
        let distance = self.origin.rounded_distance_m(latitude, longitude);
        if !(distance > self.inner as f64 && distance <= self.outer as f64) {
            return;
        }
        let hit = Hit {
            distance_m: distance as u32,
            seq,
        };
        if self.query.last_seen().is_some_and(|after| hit <= after) {
            return;
        }
        if let Some(at) = self.query.filter().open_at
            && !hours().is_some_and(|h| key::hours::is_open(h, at.date, at.weekday, at.minute))
        {
            return;
        }
        self.found.push(hit);
    }

    /// The page's results in order, and whether more follow.
    pub fn finish(mut self) -> (Vec<Hit>, bool) {
        self.found.sort_unstable();
        let has_next = self.found.len() > self.query.limit();
        self.found.truncate(self.query.limit());
        (self.found, has_next)
    }
}

#[cfg(test)]
mod tests {
    use super::super::query::{Near, Radius, SearchFilter};
    use super::*;
    use crate::domain::cells::cell_key;
    use crate::domain::geo::haversine_m;
    use proptest::prelude::*;

    /// Runs a walk over `points` (seq, lat, lon) as a store would (or the index in memory, with
    /// its own coverings and, when given, its first ring's reach), counting the entries read.
    fn walk(
        query: &SearchQuery,
        points: &[(i64, f64, f64)],
        in_memory: bool,
        first_ring_m: Option<f64>,
    ) -> (Vec<Hit>, bool, usize) {
        let mut walk = Walk::new(query);
        if let Some(metres) = first_ring_m {
            walk = walk.first_ring_reaching(metres);
        }
        let mut read = 0;
        while let Some(ring) = walk.next_ring() {
            let ranges = if in_memory {
                ring.ranges_in_memory()
            } else {
                ring.ranges()
            };
            for (first, last) in ranges {
                for &(seq, lat, lon) in points {
                    if (first..=last).contains(&cell_key(lat, lon)) {
                        read += 1;
                        walk.consider(seq, lat, lon, None);
                    }
                }
            }
        }
        let (hits, has_next) = walk.finish();
        (hits, has_next, read)
    }

    fn brute(query: &SearchQuery, points: &[(i64, f64, f64)]) -> Vec<Hit> {
        let mut all: Vec<Hit> = points
            .iter()
            .map(|&(seq, lat, lon)| Hit {
                distance_m: haversine_m(query.near().latitude(), query.near().longitude(), lat, lon).round() as u32,
                seq,
            })
            .filter(|h| h.distance_m <= query.radius().metres())
            .filter(|h| query.last_seen().is_none_or(|a| *h > a))
            .collect();
        all.sort();
        all
    }

    fn query(lat: f64, lon: f64, radius_m: u32, limit: usize) -> SearchQuery {
        let near = Near::new(Some(lat), Some(lon)).unwrap_or_else(|_| unreachable!());
        let radius = Radius::new(f64::from(radius_m)).unwrap_or(Radius::DEFAULT);
        SearchQuery::new(1, near, radius, SearchFilter::default(), limit)
    }

    #[test]
    fn a_dense_page_reads_little() {
        // A 200 × 200 grid, 10 m apart: 40,000 points within 2 km.
        let points: Vec<(i64, f64, f64)> = (0..40_000)
            .map(|i| {
                (
                    i,
                    55.75 + (i / 200) as f64 * 0.00009,
                    37.61 + (i % 200) as f64 * 0.00016,
                )
            })
            .collect();
        let q = query(55.759, 37.626, 5000, 20);
        for in_memory in [false, true] {
            let (hits, has_next, read) = walk(&q, &points, in_memory, None);
            assert_eq!(hits, brute(&q, &points)[..20]);
            assert!(has_next);
            assert!(read < 1500, "read {read} of 40,000 entries for a page of 20");
        }
    }

    proptest! {
        /// Every page of every walk equals the brute-force answer, across the antimeridian too,
        /// wherever its first ring reaches.
        #[test]
        fn pages_equal_the_brute_force(
            lat in -89.0f64..89.0,
            lon in -180.0f64..180.0,
            offsets in prop::collection::vec((-0.05f64..0.05, -0.05f64..0.05), 0..120),
            radius_m in 1u32..8000,
            limit in 1usize..12,
            in_memory: bool,
            first_ring_m in prop::option::of(0.0f64..20_000.0),
        ) {
            let points: Vec<(i64, f64, f64)> = offsets
                .iter()
                .enumerate()
                .map(|(i, (dlat, dlon))| {
                    let lon = lon + dlon;
                    let lon = if lon >= 180.0 { lon - 360.0 } else if lon < -180.0 { lon + 360.0 } else { lon };
                    (i as i64 + 1, (lat + dlat).clamp(-90.0, 90.0), lon)
                })
                .collect();
            let mut q = query(lat, lon, radius_m, limit);
            let expected = brute(&q, &points);
            let mut got = Vec::new();
            loop {
                let (hits, has_next, _) = walk(&q, &points, in_memory, first_ring_m);
                got.extend(hits.iter().copied());
                prop_assert_eq!(has_next, got.len() < expected.len());
                if !has_next {
                    break;
                }
                q = q.after(hits.last().copied());
            }
            prop_assert_eq!(got, expected);
        }
    }
}

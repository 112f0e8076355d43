//! The spatial index key of a location, and the key ranges that cover a ring around a point
//! (a search costs what the locations near the buyer cost).
//!
//! **The key.** Latitude and longitude are each cut into 2^30 steps (about 2 cm) and the two step
//! numbers are interleaved bit by bit (a Z-order, or Morton, code): a quadtree over the
//! latitude/longitude rectangle of the world. Every quadtree cell, of any size, is then one
//! contiguous range of keys, so a store answers "the points in these cells" with one range scan of
//! an ordinary B-tree index per cell, on SQLite and PostgreSQL alike; the exact coordinates are
//! stored beside the key and decide.
//!
//! **The covering.** [`cover`] finds at most `max_cells` cells that together contain every point
//! of the ring `inner < distance ≤ outer` around a point: it starts from the whole world and splits
//! the coarsest cell that crosses the ring's edges while the budget allows, dropping cells that lie
//! wholly outside the outer circle or wholly inside the inner one. Its decisions use the exact least
//! and greatest great-circle distance from the point to a cell (see `rect`), with a metre of
//! margin, so it never drops a cell that holds a point of the ring, whatever the latitude, across
//! the 180th meridian and at the poles. Where the budget runs out the cells are larger than the
//! ring needs: more points are read and discarded, none is missed.

use std::collections::BTreeMap;

mod rect;

use rect::{MARGIN_M, Rect, Seen, settle};

use super::geo::{EARTH_RADIUS_M, Neighbour, QUARANTINE_RADIUS_M};

/// Bits per coordinate; a key has twice as many.
const BITS: u32 = 30;
const STEPS: f64 = (1u64 << BITS) as f64;

/// The index key of a point.
pub fn cell_key(latitude: f64, longitude: f64) -> i64 {
    let step = |value: f64, lowest: f64, span: f64| -> u64 {
        let s = ((value - lowest) / span * STEPS).floor();
        if s.is_nan() || s < 0.0 {
            0
        } else {
            (s as u64).min((1u64 << BITS) - 1)
        }
    };
    interleave(step(longitude, -180.0, 360.0), step(latitude, -90.0, 180.0)) as i64
}

/// Levels of the quadtree below the whole world, the last a key's own cell.
pub const LEVELS: u32 = BITS;

/// The keys of the cell of `level` (0, the world, to [`LEVELS`]) that holds `key`, as an
/// inclusive range.
pub fn cell_keys_at(key: i64, level: u32) -> (i64, i64) {
    let shift = 2 * (BITS - level.min(BITS));
    let first = ((key as u64) >> shift) << shift;
    (first as i64, (first + ((1u64 << shift) - 1)) as i64)
}

/// The area of a cell of `level` at `latitude`, in square metres, as if flat: its height along a
/// meridian times its width along that parallel.
pub fn cell_area_m2(level: u32, latitude: f64) -> f64 {
    let cells = (1u64 << level.min(BITS)) as f64;
    let (height, width) = ((180.0 / cells).to_radians(), (360.0 / cells).to_radians());
    EARTH_RADIUS_M.powi(2) * height * width * latitude.to_radians().cos().max(0.0)
}

/// `x` in the even bits, `y` in the odd bits.
fn interleave(x: u64, y: u64) -> u64 {
    spread(x) | (spread(y) << 1)
}

/// The low 32 bits of `v`, one every other bit.
fn spread(v: u64) -> u64 {
    let mut v = v & 0xffff_ffff;
    v = (v | (v << 16)) & 0x0000_ffff_0000_ffff;
    v = (v | (v << 8)) & 0x00ff_00ff_00ff_00ff;
    v = (v | (v << 4)) & 0x0f0f_0f0f_0f0f_0f0f;
    v = (v | (v << 2)) & 0x3333_3333_3333_3333;
    (v | (v << 1)) & 0x5555_5555_5555_5555
}

/// A quadtree cell: `level` halvings of the world in each direction, at column `x`, row `y`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Cell {
    level: u32,
    x: u64,
    y: u64,
}

impl Cell {
    const WORLD: Cell = Cell { level: 0, x: 0, y: 0 };

    fn children(self) -> [Cell; 4] {
        let (level, x, y) = (self.level + 1, self.x * 2, self.y * 2);
        [(0, 0), (1, 0), (0, 1), (1, 1)].map(|(dx, dy)| Cell {
            level,
            x: x + dx,
            y: y + dy,
        })
    }

    /// The keys of every point inside, as an inclusive range.
    fn keys(self) -> (i64, i64) {
        let first = interleave(self.x, self.y) << (2 * (BITS - self.level));
        cell_keys_at(first as i64, self.level)
    }

    fn rect(self) -> Rect {
        let cells = (1u64 << self.level) as f64;
        let (lat_step, lon_step) = (180.0 / cells, 360.0 / cells);
        Rect {
            south: -90.0 + self.y as f64 * lat_step,
            north: -90.0 + (self.y + 1) as f64 * lat_step,
            west: -180.0 + self.x as f64 * lon_step,
            east: -180.0 + (self.x + 1) as f64 * lon_step,
        }
    }
}

/// Key ranges per neighbour search at most: a 50 m disk is two to four cells of about 80 m. Each
/// range costs a descent of the index, so a few ranges a little wider beat many tight ones
/// (measured: fewer, wider ranges make PostgreSQL's neighbour statement of a create faster).
const NEIGHBOUR_CELLS: usize = 4;

/// The key ranges that hold every location within the quarantine radius of a point: the
/// neighbour search of create, update, restore and approval reads the same index
/// as a buyer's search.
pub fn neighbour_ranges(latitude: f64, longitude: f64) -> Vec<(i64, i64)> {
    cover(latitude, longitude, -1.0, QUARANTINE_RADIUS_M, NEIGHBOUR_CELLS)
}

/// Locations kept by their index key, so that those near a point are found by the very key ranges
/// a store reads ([`neighbour_ranges`]): one geometry for the 50 m rule, in memory (a batch's own
/// new locations, as neighbours of its later items) and in the stores.
#[derive(Debug, Default)]
pub struct Nearby {
    by_key: BTreeMap<i64, Vec<Neighbour>>,
}

impl Nearby {
    pub fn insert(&mut self, n: Neighbour) {
        self.by_key
            .entry(cell_key(n.latitude, n.longitude))
            .or_default()
            .push(n);
    }

    /// The locations in the cells around a point: every one within the radius, and a few more.
    pub fn around(&self, latitude: f64, longitude: f64) -> impl Iterator<Item = &Neighbour> {
        self.within(neighbour_ranges(latitude, longitude))
    }

    /// The locations in these key ranges (a point's [`neighbour_ranges`], computed once for the
    /// store's search and this one).
    pub fn within(&self, ranges: impl IntoIterator<Item = (i64, i64)>) -> impl Iterator<Item = &Neighbour> {
        ranges
            .into_iter()
            .flat_map(move |(first, last)| self.by_key.range(first..=last))
            .flat_map(|(_, at)| at)
    }
}

/// The cells a covering starts from: at most four cells of one level that together hold the
/// outer circle's bounding box (the finest level where the box spans at most two cells each way),
/// so that the walk down from the whole world is skipped; the world itself when the box crosses
/// the 180th meridian or reaches a pole.
fn start(latitude: f64, longitude: f64, outer: f64) -> Vec<Cell> {
    let d_lat = (outer / EARTH_RADIUS_M).to_degrees() * 1.01 + 1e-9;
    let (south, north) = (latitude - d_lat, latitude + d_lat);
    if south <= -89.0 || north >= 89.0 {
        return vec![Cell::WORLD];
    }
    let d_lon = d_lat / south.abs().max(north.abs()).to_radians().cos();
    let (west, east) = (longitude - d_lon, longitude + d_lon);
    if west < -180.0 || east >= 180.0 {
        return vec![Cell::WORLD];
    }
    let step = |value: f64, lowest: f64, span: f64| ((value - lowest) / span * STEPS).floor().max(0.0) as u64;
    let (x0, x1) = (step(west, -180.0, 360.0), step(east, -180.0, 360.0));
    let (y0, y1) = (step(south, -90.0, 180.0), step(north, -90.0, 180.0));
    let level = (0..=BITS)
        .rev()
        .find(|level| {
            let shift = BITS - level;
            (x1 >> shift) - (x0 >> shift) <= 1 && (y1 >> shift) - (y0 >> shift) <= 1
        })
        .unwrap_or(0);
    let shift = BITS - level;
    let mut cells = Vec::with_capacity(4);
    for x in (x0 >> shift)..=(x1 >> shift) {
        for y in (y0 >> shift)..=(y1 >> shift) {
            cells.push(Cell { level, x, y });
        }
    }
    cells
}

/// At most `max_cells` inclusive key ranges, sorted and not touching, whose cells hold every point
/// at a distance `d` from (`latitude`, `longitude`) with `inner < d ≤ outer` (metres; a negative
/// `inner` means the whole disk).
pub fn cover(latitude: f64, longitude: f64, inner: f64, outer: f64, max_cells: usize) -> Vec<(i64, i64)> {
    cover_by(latitude, longitude, (inner, outer), max_cells, Weigh::BoundsFirst)
}

/// [`cover`]'s ranges, each cell weighed by the bounds of its distances that its edges give
/// alone, never measured: a cell those bounds do not settle is split, or read whole when the
/// budget runs out, as one crossing an edge is. Nearly the same cells (the bounds are within a
/// metre of the distances at a buyer's scale) in a fraction of the time: for an index in memory,
/// where making the covering would otherwise cost more than reading the cells.
pub fn cover_by_edges(latitude: f64, longitude: f64, inner: f64, outer: f64, max_cells: usize) -> Vec<(i64, i64)> {
    cover_by(latitude, longitude, (inner, outer), max_cells, Weigh::Edges)
}

/// How a covering weighs a cell against the ring.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Weigh {
    /// By its exact least and greatest distances: what a test compares `BoundsFirst` with.
    #[cfg(test)]
    Exactly,
    /// By the bounds of those distances where they settle it as the distances would (each test
    /// on a bound implies the same test on the distance it bounds), else by the distances: the
    /// same covering as `Exactly`'s, made without most of the trigonometry.
    BoundsFirst,
    /// By the bounds its edges give alone (`Rect::edge_bounds`).
    Edges,
}

/// [`cover`] and [`cover_by_edges`], each cell weighed as `weigh` says (a test makes the
/// covering `Exactly` too).
fn cover_by(
    latitude: f64,
    longitude: f64,
    (inner, outer): (f64, f64),
    max_cells: usize,
    weigh: Weigh,
) -> Vec<(i64, i64)> {
    let from = Seen::new(latitude, longitude);
    let crosses = |cell: Cell| -> Option<bool> {
        let rect = cell.rect();
        match weigh {
            Weigh::Edges => {
                let (least, greatest) = rect.edge_bounds(&from);
                return decide(least, || greatest, (inner, outer));
            }
            Weigh::BoundsFirst => {
                if let Some(settled) = settle(rect.distance_bounds(&from), (inner, outer)) {
                    return settled;
                }
            }
            #[cfg(test)]
            Weigh::Exactly => {}
        }
        decide(
            rect.least_distance(&from),
            || rect.greatest_distance(&from),
            (inner, outer),
        )
    };
    let mut whole = Vec::new();
    // Cells crossing an edge, coarsest first (a level's cells are split before the next level's).
    let mut crossing = std::collections::VecDeque::new();
    let mut first = start(latitude, longitude, outer);
    if first.len() > max_cells {
        first = vec![Cell::WORLD];
    }
    for cell in first {
        match crosses(cell) {
            Some(true) => crossing.push_back(cell),
            Some(false) => whole.push(cell),
            None => {}
        }
    }
    while let Some(cell) = crossing.pop_front() {
        if cell.level == BITS {
            whole.push(cell);
            continue;
        }
        // Weighed into an array, not a vector: a split allocates nothing.
        let children = cell.children().map(|c| crosses(c).map(|crossing| (c, crossing)));
        let kept = children.iter().flatten().count();
        if whole.len() + crossing.len() + kept > max_cells.max(1) {
            // No budget to split it: read the whole cell (and, being coarsest, every other one).
            whole.push(cell);
            whole.extend(crossing.drain(..));
            break;
        }
        for (child, crosses_edge) in children.into_iter().flatten() {
            if crosses_edge {
                crossing.push_back(child);
            } else {
                whole.push(child);
            }
        }
    }
    merged(whole.into_iter().map(Cell::keys).collect())
}

/// What a cell whose least distance is `least` (or less) and greatest `greatest()` (or more) is to
/// the ring: `None` when it lies wholly outside, else whether it may cross an edge of the ring
/// (else it lies wholly within it).
fn decide(least: f64, greatest: impl FnOnce() -> f64, (inner, outer): (f64, f64)) -> Option<bool> {
    if least > outer + MARGIN_M {
        return None;
    }
    let greatest = greatest();
    if greatest < inner - MARGIN_M {
        return None;
    }
    Some(greatest > outer - MARGIN_M || least < inner + MARGIN_M)
}

/// The cells' key ranges sorted, those that touch made one.
fn merged(mut ranges: Vec<(i64, i64)>) -> Vec<(i64, i64)> {
    ranges.sort_unstable();
    let mut merged: Vec<(i64, i64)> = Vec::with_capacity(ranges.len());
    for (first, last) in ranges {
        match merged.last_mut() {
            Some(previous) if previous.1.checked_add(1) == Some(first) => previous.1 = last,
            _ => merged.push((first, last)),
        }
    }
    merged
}

#[cfg(test)]
mod tests {
    use super::rect::wrap;
    use super::*;
    use crate::domain::geo::haversine_m;
    use proptest::prelude::*;

    /// The point at `distance` metres from (`lat`, `lon`) towards `bearing` degrees.
    fn destination(lat: f64, lon: f64, bearing: f64, distance: f64) -> (f64, f64) {
        let (phi, lambda, theta) = (lat.to_radians(), lon.to_radians(), bearing.to_radians());
        let delta = distance / EARTH_RADIUS_M;
        let phi2 = (phi.sin() * delta.cos() + phi.cos() * delta.sin() * theta.cos()).asin();
        let lambda2 = lambda + (theta.sin() * delta.sin() * phi.cos()).atan2(delta.cos() - phi.sin() * phi2.sin());
        (phi2.to_degrees(), wrap(lambda2.to_degrees()))
    }

    fn covered(ranges: &[(i64, i64)], lat: f64, lon: f64) -> bool {
        let key = cell_key(lat, lon);
        ranges.iter().any(|(a, b)| (*a..=*b).contains(&key))
    }

    #[test]
    fn keys_order_the_quadrants() {
        assert_eq!(cell_key(-90.0, -180.0), 0);
        assert_eq!(cell_key(90.0, 180.0), (1i64 << 60) - 1);
        assert_eq!(Cell::WORLD.keys(), (0, (1i64 << 60) - 1));
        let [sw, se, nw, ne] = Cell::WORLD.children();
        assert!(covered(&[sw.keys()], -45.0, -90.0));
        assert!(covered(&[se.keys()], -45.0, 90.0));
        assert!(covered(&[nw.keys()], 45.0, -90.0));
        assert!(covered(&[ne.keys()], 45.0, 90.0));
    }

    #[test]
    fn a_covering_crosses_the_antimeridian_and_the_pole() {
        // Two points 3.9 km apart across the 180th meridian.
        let ranges = cover(80.0, 179.9, -1.0, 5000.0, 32);
        assert!(covered(&ranges, 80.0, -179.9));
        let ranges = cover(89.99, 10.0, -1.0, 5000.0, 32);
        assert!(covered(&ranges, 89.995, -170.0));
        assert!(covered(&ranges, 90.0, 0.0));
        assert!(!covered(&ranges, 80.0, 10.0));
    }

    #[test]
    fn a_ring_leaves_out_its_inside() {
        let ranges = cover(55.75, 37.61, 2000.0, 4000.0, 32);
        assert!(
            !covered(&ranges, 55.75, 37.61),
            "the centre is well inside the inner circle"
        );
        let (lat, lon) = destination(55.75, 37.61, 30.0, 3000.0);
        assert!(covered(&ranges, lat, lon));
        assert!(ranges.len() <= 32);
    }

    proptest! {
        /// Every location within the radius of a point is found around it, whatever the place.
        #[test]
        fn nearby_finds_every_location_within_the_radius(
            lat in -90.0f64..=90.0,
            lon in -180.0f64..180.0,
            bearing in 0.0f64..360.0,
            distance in 0.0f64..=50.0,
        ) {
            let (plat, plon) = destination(lat, lon, bearing, distance);
            prop_assume!(haversine_m(lat, lon, plat, plon) <= QUARANTINE_RADIUS_M);
            let mut nearby = Nearby::default();
            nearby.insert(Neighbour {
                location_id: "n".into(),
                latitude: plat,
                longitude: plon,
                types: crate::domain::location::TypeSet::default(),
                seq: 1,
                status: crate::domain::location::Status::Active,
            });
            let (far_lat, far_lon) = destination(lat, lon, bearing, 5_000.0);
            nearby.insert(Neighbour {
                location_id: "far".into(),
                latitude: far_lat,
                longitude: far_lon,
                types: crate::domain::location::TypeSet::default(),
                seq: 2,
                status: crate::domain::location::Status::Active,
            });
            let found: Vec<&str> = nearby.around(lat, lon).map(|n| n.location_id.as_str()).collect();
            prop_assert!(found.contains(&"n"), "{:?}", found);
            // "A few more": away from the poles the cells are narrow enough to leave out a point
            // 5 km off; within a degree of a pole the covering starts from the whole world, and
            // its few ranges may hold it (the callers measure each distance).
            if lat.abs() < 88.9 {
                prop_assert!(!found.contains(&"far"), "{:?}", found);
            }
        }

        /// Every point of the ring lies in a range of its covering, whatever the place.
        #[test]
        fn the_covering_holds_the_ring(
            lat in -90.0f64..=90.0,
            lon in -180.0f64..180.0,
            inner in -1.0f64..20_000.0,
            width in 1.0f64..40_000.0,
            bearing in 0.0f64..360.0,
            at in 0.0f64..=1.0,
            cells in 1usize..64,
            by_edges: bool,
        ) {
            let outer = inner.max(0.0) + width;
            let distance = inner.max(0.0) + at * width;
            let (plat, plon) = destination(lat, lon, bearing, distance);
            let d = haversine_m(lat, lon, plat, plon);
            prop_assume!(d > inner && d <= outer);
            let ranges = match by_edges {
                true => cover_by_edges(lat, lon, inner, outer, cells),
                false => cover(lat, lon, inner, outer, cells),
            };
            prop_assert!(ranges.len() <= cells.max(1));
            prop_assert!(covered(&ranges, plat, plon), "{:?} at {} m", (plat, plon), d);
        }

        /// A cell's bounds without trigonometry hold its least and greatest distances, for cells
        /// of every size from a continent to a few metres, near the point and far from it.
        #[test]
        fn a_cell_s_bounds_hold_its_distances(
            lat in -90.0f64..=90.0,
            lon in -180.0f64..180.0,
            bearing in 0.0f64..360.0,
            distance in 0.0f64..3_000_000.0,
            level in 4u32..=30,
        ) {
            let (clat, clon) = destination(lat, lon, bearing, distance);
            let key = cell_key(clat, clon) as u64;
            let (mut x, mut y) = (0u64, 0u64);
            for bit in 0..BITS {
                x |= ((key >> (2 * bit)) & 1) << bit;
                y |= ((key >> (2 * bit + 1)) & 1) << bit;
            }
            let shift = BITS - level;
            let rect = Cell { level, x: x >> shift, y: y >> shift }.rect();
            let from = Seen::new(lat, lon);
            let bounds = rect.distance_bounds(&from);
            let (least, greatest) = (rect.least_distance(&from), rect.greatest_distance(&from));
            prop_assert!(bounds.least.0 <= least && least <= bounds.least.1, "{} not in {:?}", least, bounds.least);
            prop_assert!(
                bounds.greatest.0 <= greatest && greatest <= bounds.greatest.1,
                "{} not in {:?}", greatest, bounds.greatest
            );
        }

        /// The bounds only spare the exact distances: the covering is the one the exact distances
        /// alone make, for the rings of a buyer's walk and the neighbour search's disk.
        #[test]
        fn the_bounds_leave_the_covering_as_the_exact_distances_make_it(
            lat in -90.0f64..=90.0,
            lon in -180.0f64..180.0,
            inner in -1.0f64..50_000.0,
            width in 1.0f64..50_000.0,
            cells in prop::sample::select(vec![NEIGHBOUR_CELLS, crate::domain::location::search::RING_CELLS, 64]),
        ) {
            let outer = inner.max(0.0) + width;
            prop_assert_eq!(
                cover_by(lat, lon, (inner, outer), cells, Weigh::BoundsFirst),
                cover_by(lat, lon, (inner, outer), cells, Weigh::Exactly)
            );
        }
    }
}

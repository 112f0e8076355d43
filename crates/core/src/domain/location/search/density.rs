//! How far from a point an index in memory expects a page of its entries to lie, so that a walk's
//! first ring reaches about that far: a walk that starts small takes a second ring wherever the
//! entries lie less densely than its first ring assumes, and each ring costs a covering and the
//! search of its ranges' ends. Only where the walk starts depends on it: any reach gives the same
//! page.
//!
//! The index counts its entries in the point's cell of one level of the quadtree, chosen when
//! they are sorted: the finest level at which an entry's cell holds [`DENSE`] entries on average
//! over the entries. Near where most entries lie, that cell holds enough of them to say how
//! densely they lie, and is small enough to be the point's neighbourhood. The counts are taken
//! when the entries are sorted (a cell's count is then one look in a small map, where counting
//! the sorted entries of its range would take two searches through them all). It counts too how
//! many entries have each flag ([`FlagCounts`]), so that a search for a flag few entries have
//! expects its page of matches among as many more entries.

use std::collections::HashMap;

use super::query::IndexTest;
use crate::domain::cells::{LEVELS, cell_area_m2, cell_key, cell_keys_at};

/// The least share of the entries a walk's first ring expects its test's flags to pass: it then
/// reaches no further than a second ring after one that found nothing would (sixteen times the
/// area), where flags guessed rare together may not be.
const LEAST_SHARE: f64 = 1.0 / 16.0;

/// How many of an index's sorted entries have each of the 64 flags: a first ring then reaches as
/// far as the page's matches are expected to lie, not the page's entries. A rare flag asked for
/// (a service one point in twenty offers) would otherwise send the walk through a first ring
/// holding a page of entries but few matches, and a second: each a covering and its ranges.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct FlagCounts {
    entries: usize,
    counts: [u32; 64],
}

impl Default for FlagCounts {
    fn default() -> FlagCounts {
        FlagCounts {
            entries: 0,
            counts: [0; 64],
        }
    }
}

impl FlagCounts {
    /// Of the entries' `flags`.
    pub(super) fn of(flags: &[i64]) -> FlagCounts {
        let mut held = FlagCounts {
            entries: flags.len(),
            ..FlagCounts::default()
        };
        for &bits in flags {
            for bit in set_bits(bits) {
                held.counts[bit] += 1;
            }
        }
        held
    }

    /// About what share of the entries `test`'s flags pass, as though the flags were independent:
    /// an entry of any type asked for (the shares of the types added), with every flag asked for
    /// (multiplied). At least [`LEAST_SHARE`]; 1 when there are no entries to say.
    pub(super) fn share_passing(&self, test: &IndexTest) -> f64 {
        if self.entries == 0 {
            return 1.0;
        }
        let share = |bit: usize| f64::from(self.counts[bit]) / self.entries as f64;
        let any = |flags: i64| set_bits(flags).map(share).sum::<f64>().min(1.0);
        let all: f64 = set_bits(test.all).map(share).product();
        (any(test.any).min(any(test.visible)) * all).clamp(LEAST_SHARE, 1.0)
    }
}

/// The flags set in `flags`, the lowest first: an entry or a test has a few of the 64, each found
/// at once rather than by looking at all 64.
fn set_bits(flags: i64) -> impl Iterator<Item = usize> {
    let mut left = flags as u64;
    std::iter::from_fn(move || {
        (left != 0).then(|| {
            let bit = left.trailing_zeros() as usize;
            left &= left - 1;
            bit
        })
    })
}

/// Entries that an entry's cell of the chosen level holds, on average over the entries.
const DENSE: usize = 128;

/// The level whose cells an index counts (see the module).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct Density {
    /// 0 when the entries are too few to say: the walk starts as it would on disk.
    level: u32,
    /// The entries of each cell of that level that holds any, by the cell's first key.
    counts: HashMap<i64, usize>,
}

impl Density {
    /// Of the entries' `cells`, sorted.
    pub(super) fn of(cells: &[i64]) -> Density {
        if cells.len() < DENSE {
            return Density::default();
        }
        // The sum of each cell's count squared, over the entries: the mean count of an entry's
        // cell, which falls as the level grows (a cell's count squared is at least the sum of its
        // parts' squares). The last level where it holds DENSE, by halving.
        let mean_at = |level: u32| -> usize {
            let squares: usize = cells
                .chunk_by(|a, b| cell_keys_at(*a, level) == cell_keys_at(*b, level))
                .map(|run| run.len() * run.len())
                .sum();
            squares / cells.len()
        };
        let (mut dense, mut sparse) = (0, LEVELS + 1);
        while sparse - dense > 1 {
            let level = (dense + sparse) / 2;
            if mean_at(level) >= DENSE {
                dense = level;
            } else {
                sparse = level;
            }
        }
        let counts = match dense {
            0 => HashMap::new(),
            level => cells
                .chunk_by(|a, b| cell_keys_at(*a, level) == cell_keys_at(*b, level))
                .map(|run| (cell_keys_at(run[0], level).0, run.len()))
                .collect(),
        };
        Density { level: dense, counts }
    }

    /// The entries in the point's cell, unless the entries are too few to say.
    pub(super) fn count_around(&self, latitude: f64, longitude: f64) -> Option<usize> {
        (self.level > 0).then(|| {
            let (first, _) = cell_keys_at(cell_key(latitude, longitude), self.level);
            self.counts.get(&first).copied().unwrap_or(0)
        })
    }

    /// What it holds on the heap, in bytes.
    pub(super) fn bytes(&self) -> usize {
        self.counts.capacity() * (std::mem::size_of::<i64>() + std::mem::size_of::<usize>() + 1)
    }

    /// The radius in metres of the disk around a point at `latitude` that holds `want` entries, if
    /// its cell's `count` entries lie evenly over the cell; `None` when the cell holds none.
    pub(super) fn reach_m(&self, latitude: f64, count: usize, want: f64) -> Option<f64> {
        if self.level == 0 || count == 0 {
            return None;
        }
        let per_m2 = count as f64 / cell_area_m2(self.level, latitude);
        Some((want / (std::f64::consts::PI * per_m2)).sqrt()).filter(|metres| metres.is_finite())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashMap;

    #[test]
    fn a_test_s_share_adds_the_types_asked_for_and_multiplies_the_flags_asked_for() {
        // 100 entries: 60 of type 1, 40 of type 2; a half of each with flag 8, a quarter with 16.
        let flags: Vec<i64> = (0..100)
            .map(|i| (if i < 60 { 1 } else { 2 }) | if i % 2 == 0 { 8 } else { 0 } | if i % 4 == 0 { 16 } else { 0 })
            .collect();
        let held = FlagCounts::of(&flags);
        let test = |any, visible, all| IndexTest {
            any,
            visible,
            all,
            fit: [0.0; 4],
        };
        assert_eq!(held.share_passing(&test(0b111, 0b111, 0)), 1.0);
        assert_eq!(held.share_passing(&test(0b001, 0b111, 0)), 0.6);
        assert_eq!(
            held.share_passing(&test(0b111, 0b010, 0)),
            0.4,
            "the types a key may see"
        );
        assert_eq!(held.share_passing(&test(0b011, 0b111, 8)), 0.5);
        assert_eq!(held.share_passing(&test(0b111, 0b111, 8 | 16)), 0.125);
        assert_eq!(
            held.share_passing(&test(0b010, 0b111, 8 | 16)),
            LEAST_SHARE,
            "never below"
        );
        assert_eq!(
            FlagCounts::default().share_passing(&test(0b001, 0b001, 8)),
            1.0,
            "nothing to say"
        );
    }

    proptest! {
        /// The level is the finest at which the entries' cells hold `DENSE` or more on average,
        /// as counting every level finds it.
        #[test]
        fn the_level_is_the_last_dense_one(
            points in prop::collection::vec((-0.5f64..0.5, -0.5f64..0.5, 0u32..4), 0..1500),
        ) {
            // Clusters of four sizes, from a metre to a degree.
            let mut cells: Vec<i64> = points
                .iter()
                .map(|&(a, o, spread)| {
                    let scale = 10f64.powi(-(spread as i32) * 2);
                    cell_key(55.75 + a * scale, 37.61 + o * scale)
                })
                .collect();
            cells.sort_unstable();
            let mean = |level: u32| {
                let mut counts: HashMap<i64, usize> = HashMap::new();
                for &cell in &cells {
                    *counts.entry(cell_keys_at(cell, level).0).or_default() += 1;
                }
                counts.values().map(|c| c * c).sum::<usize>() / cells.len().max(1)
            };
            let expected = if cells.len() < DENSE {
                0
            } else {
                (0..=LEVELS).rev().find(|&level| mean(level) >= DENSE).unwrap_or(0)
            };
            let density = Density::of(&cells);
            prop_assert_eq!(density.level, expected);
            // Each point's count is that of the sorted entries in its cell's key range.
            for &(a, o, _) in points.iter().take(20) {
                let (latitude, longitude) = (55.75 + a, 37.61 + o);
                let counted = (density.level > 0).then(|| {
                    let (first, last) = cell_keys_at(cell_key(latitude, longitude), density.level);
                    cells.partition_point(|c| *c <= last) - cells.partition_point(|c| *c < first)
                });
                prop_assert_eq!(density.count_around(latitude, longitude), counted);
            }
        }
    }

    #[test]
    fn the_reach_holds_what_is_wanted_where_entries_lie_evenly() {
        let density = Density {
            level: 17,
            ..Density::default()
        };
        let area = cell_area_m2(17, 55.75);
        // 100 entries to a hectare: 31.5 of them within 31.7 m.
        let count = (area / 100.0).round() as usize;
        let reach = density.reach_m(55.75, count, 31.5).unwrap_or_default();
        assert!((31.0..32.5).contains(&reach), "reach {reach} m");
        assert_eq!(density.reach_m(55.75, 0, 31.5), None, "nothing counted, nothing said");
        assert_eq!(Density::default().count_around(55.75, 37.61), None);
        assert_eq!(Density::default().reach_m(55.75, 100, 31.5), None);
    }
}

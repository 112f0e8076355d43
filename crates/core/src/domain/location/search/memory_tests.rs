//! Tests of one merchant's search index in memory (`memory.rs`).

use super::super::query::{Near, Radius, SearchFilter};
use super::*;
use crate::domain::cells::cell_key;
use proptest::prelude::*;

fn entry(seq: i64, latitude: f64, longitude: f64, flags: i64, side: f64, hours: u8) -> IndexEntry {
    IndexEntry {
        seq,
        latitude,
        longitude,
        key: SearchKey {
            cell: cell_key(latitude, longitude),
            flags,
            fit: [side, side / 2.0, side / 4.0, side * 3.0],
            hours: vec![hours; 3],
        },
    }
}

/// What a store's scan gives for a range: every entry of `model` in it that passes.
fn expected(
    model: &HashMap<i64, IndexEntry>,
    (first, last): (i64, i64),
    test: &IndexTest,
) -> Vec<(i64, u64, u64, Vec<u8>)> {
    let mut found: Vec<_> = model
        .values()
        .filter(|e| (first..=last).contains(&e.key.cell))
        .filter(|e| {
            let f = e.key.flags;
            f & test.any != 0
                && f & test.visible != 0
                && f & test.all == test.all
                && e.key.fit.iter().zip(test.fit).all(|(h, n)| *h >= n)
        })
        .map(|e| (e.seq, e.latitude.to_bits(), e.longitude.to_bits(), e.key.hours.clone()))
        .collect();
    found.sort();
    found
}

fn scanned(index: &MemoryIndex, range: (i64, i64), test: &IndexTest) -> Vec<(i64, u64, u64, Vec<u8>)> {
    let mut found = Vec::new();
    index.scan(range, test, true, |seq, lat, lon, hours| {
        found.push((seq, lat.to_bits(), lon.to_bits(), hours().unwrap_or_default().to_vec()));
    });
    found.sort();
    found
}

#[derive(Clone, Debug)]
enum Step {
    Upsert(i64, f64, f64, i64, f64, u8),
    Remove(i64),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        3 => (0i64..300, -0.02f64..0.02, -0.02f64..0.02, 1i64..2048, 0.0f64..100.0, 0u8..4)
            .prop_map(|(s, a, o, f, side, h)| Step::Upsert(s, 55.75 + a, 37.61 + o, f, side, h)),
        1 => (0i64..300).prop_map(Step::Remove),
    ]
}

proptest! {
    /// A cell's place found through the fences is the binary search's over the whole
    /// vector, with runs of equal cells across the blocks' edges.
    #[test]
    fn a_place_found_by_the_fences_is_the_binary_search_s(
        cells in prop::collection::vec(0i64..40, 0..700),
        probe in -1i64..42,
    ) {
        let index = MemoryIndex::of(cells.iter().enumerate().map(|(seq, &cell)| {
            let mut e = entry(seq as i64, 0.0, 0.0, 1, 1.0, 0);
            e.key.cell = cell;
            e
        }));
        prop_assert_eq!(index.place(|c| c < probe), index.cells.partition_point(|&c| c < probe));
        prop_assert_eq!(index.place(|c| c <= probe), index.cells.partition_point(|&c| c <= probe));
    }

    /// After any upserts and removals (merges among them), every range scan gives exactly
    /// what a scan of the same entries in a table gives.
    #[test]
    fn scans_equal_a_table_s_after_any_changes(
        initial in prop::collection::vec((0i64..300, -0.02f64..0.02, -0.02f64..0.02, 1i64..2048, 0.0f64..100.0, 0u8..4), 0..200),
        steps in prop::collection::vec(step(), 0..400),
        any in 1i64..8, all in 0i64..64, visible in 1i64..8, need in 0.0f64..60.0,
        merge_every in 1usize..50,
    ) {
        let mut model: HashMap<i64, IndexEntry> = HashMap::new();
        for &(s, a, o, f, side, h) in &initial {
            model.insert(s, entry(s, 55.75 + a, 37.61 + o, f, side, h));
        }
        let mut index = MemoryIndex::of(model.values().cloned());
        for (i, step) in steps.into_iter().enumerate() {
            match step {
                Step::Upsert(s, lat, lon, f, side, h) => {
                    let e = entry(s, lat, lon, f, side, h);
                    model.insert(s, e.clone());
                    index.upsert(e);
                }
                Step::Remove(s) => {
                    model.remove(&s);
                    index.remove(s);
                }
            }
            if i % merge_every == 0 {
                index.merge();
            }
        }
        prop_assert_eq!(index.len(), model.len());
        let test = IndexTest { any, visible, all: all << 3, fit: [need, need / 2.0, need / 4.0, need * 3.0] };
        let everything = IndexTest { any: 7, visible: 7, all: 0, fit: [0.0; 4] };
        let mut cells: Vec<i64> = model.values().map(|e| e.key.cell).collect();
        cells.sort_unstable();
        let ranges = [(i64::MIN, i64::MAX), (cell_key(55.74, 37.60), cell_key(55.76, 37.62))]
            .into_iter()
            .chain(cells.windows(2).map(|w| (w[0], w[1])));
        for range in ranges {
            prop_assert_eq!(scanned(&index, range, &test), expected(&model, range, &test));
            prop_assert_eq!(scanned(&index, range, &everything), expected(&model, range, &everything));
        }
    }
}

#[test]
fn an_entry_takes_about_eighty_bytes_when_hours_are_shared() {
    let n = 100_000;
    let index = MemoryIndex::of((0..n).map(|s| {
        entry(
            s,
            55.0 + (s % 1000) as f64 * 1e-3,
            37.0 + (s / 1000) as f64 * 1e-3,
            1,
            1.0,
            (s % 8) as u8,
        )
    }));
    assert_eq!(index.len(), n as usize);
    let per_entry = index.bytes() as f64 / n as f64;
    assert!((80.0..90.0).contains(&per_entry), "{per_entry} bytes an entry");
    assert!(index.bytes() >= n as usize * MemoryIndex::LEAST_BYTES_AN_ENTRY);
}

#[test]
fn the_least_limits_pass_only_what_every_entry_passes() {
    let fits = [[3.0, 2.0, 1.0, 9.0], [5.0, 1.0, 0.5, 10.0]];
    assert_eq!(least_fit(&fits), [3.0, 1.0, 0.5, 9.0]);
    assert_eq!(least_fit(&[]), [f64::INFINITY; 4]);
    let not_a_number = [[3.0, f64::NAN, 1.0, 9.0], [5.0, 1.0, 0.5, 10.0]];
    assert_eq!(least_fit(&not_a_number)[1], f64::NEG_INFINITY);
    let no_parcel = IndexTest {
        any: 1,
        visible: 1,
        all: 0,
        fit: [0.0; 4],
    };
    assert!(
        !fits_pass(&least_fit(&not_a_number), &no_parcel),
        "a limit that is not a number passes nothing"
    );
    assert!(fits_pass(&least_fit(&fits), &no_parcel));
}

#[test]
fn a_merge_keeps_only_the_hours_still_used() {
    let mut index = MemoryIndex::of((0..10).map(|s| entry(s, 55.75, 37.61, 1, 1.0, (s % 2) as u8)));
    assert_eq!(index.hours.count(), 2, "equal hours kept once");
    for s in 0..10 {
        index.upsert(entry(s, 55.75, 37.61, 1, 1.0, 9));
    }
    index.merge();
    assert_eq!(index.hours.count(), 1);
    assert_eq!(index.len(), 10);
}

/// A grid of `side` × `side` entries, 50 m apart.
fn grid(side: i64) -> MemoryIndex {
    MemoryIndex::of((0..side * side).map(|s| {
        entry(
            s,
            55.75 + (s / side) as f64 * 0.00045,
            37.61 + (s % side) as f64 * 0.0008,
            1,
            1.0,
            0,
        )
    }))
}

#[test]
fn the_first_ring_reaches_about_as_far_as_a_page_lies() {
    // 40,000 entries 50 m apart, 4 to a hectare: a page of 20 and half again as many to
    // spare (31.5) lie within 158 m of a point amid them, and a walk's default first ring
    // (100 m) holds about 13.
    let index = grid(200);
    let near = Near::new(Some(55.795), Some(37.69)).unwrap_or_else(|_| unreachable!());
    let query = SearchQuery::new(1, near, Radius::DEFAULT, SearchFilter::default(), 20);
    let reach = index.reach_m(&query, &everything()).unwrap_or_default();
    assert!((110.0..225.0).contains(&reach), "reach {reach} m");
    assert_eq!(index.walk(&query).rings(), 1, "the page found in the first ring");
    // Where the index holds nothing, no guess: the walk starts as it would on disk.
    let far = Near::new(Some(-33.0), Some(151.0)).unwrap_or_else(|_| unreachable!());
    let query = SearchQuery::new(1, far, Radius::DEFAULT, SearchFilter::default(), 20);
    assert_eq!(index.reach_m(&query, &everything()), None);
    let query = SearchQuery::new(1, near, Radius::DEFAULT, SearchFilter::default(), 20);
    assert_eq!(grid(10).reach_m(&query, &everything()), None, "too few entries to say");
}

fn everything() -> IndexTest {
    SearchFilter::default().index_test()
}

#[test]
fn a_first_ring_reaches_as_far_as_a_page_of_matches_of_a_rare_flag_lies() {
    use crate::domain::location::PickupService;
    // The grid of 40,000 entries 50 m apart, one in twenty (spread, by a hash of its place)
    // offering a service.
    let fitting = super::super::key::service_bit(PickupService::Fitting);
    let side = 200;
    let index = MemoryIndex::of((0..side * side).map(|s| {
        let picked = ((s as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 32).is_multiple_of(20);
        let flags = if picked { 1 | fitting } else { 1 };
        entry(
            s,
            55.75 + (s / side) as f64 * 0.00045,
            37.61 + (s % side) as f64 * 0.0008,
            flags,
            1.0,
            0,
        )
    }));
    let near = Near::new(Some(55.795), Some(37.69)).unwrap_or_else(|_| unreachable!());
    let rare = SearchFilter {
        services: vec![PickupService::Fitting],
        ..SearchFilter::default()
    };
    let query = SearchQuery::new(1, near, Radius::DEFAULT, rare, 20);
    let all = index.reach_m(&query, &everything()).unwrap_or_default();
    let reach = index.reach_m(&query, &query.filter().index_test()).unwrap_or_default();
    assert!(
        (reach / all - 4.0).abs() < 0.01,
        "sixteen times the area: {reach} m beside {all}"
    );
    assert_eq!(index.walk(&query).rings(), 1, "its page found in the first ring");
    assert_eq!(index.search(&query).0.len(), 20);
}

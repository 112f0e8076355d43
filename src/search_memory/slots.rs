//! The held indexes' slots, kept in the order they are dropped in: the least recently searched
//! first, ties broken by the smaller index, then by the merchant. A search only stamps its slot;
//! the order learns of the stamp when a walk through it next comes to that slot, and places the slot
//! again then. So the next index to drop, or the room that dropping the first few would make, costs
//! a few steps of a sorted tree however many indexes are held, where a sort of them all would cost
//! every search of a merchant not held a pass over thousands.

use std::collections::{BTreeSet, HashMap};
use std::ops::Bound::{Excluded, Unbounded};

/// Where a slot stands in the order: when it was last searched (the searches counted so far), its
/// bytes, its merchant.
type Place = (u64, usize, i64);

/// Each slot holds a `V` (the merchant's index, shared).
pub(super) struct Slots<V> {
    by_merchant: HashMap<i64, Slot<V>>,
    /// Every slot at the place it was last given: one searched since stands earlier than it
    /// should, until a walk comes to it.
    order: BTreeSet<Place>,
    /// The slots' bytes, together.
    bytes: usize,
}

struct Slot<V> {
    merchant: V,
    bytes: usize,
    used: u64,
    /// The `used` it was last placed by.
    placed: u64,
}

impl<V> Default for Slots<V> {
    fn default() -> Self {
        Slots {
            by_merchant: HashMap::new(),
            order: BTreeSet::new(),
            bytes: 0,
        }
    }
}

impl<V: Clone> Slots<V> {
    pub(super) fn len(&self) -> usize {
        self.by_merchant.len()
    }

    pub(super) fn bytes(&self) -> usize {
        self.bytes
    }

    pub(super) fn contains(&self, merchant_pk: i64) -> bool {
        self.by_merchant.contains_key(&merchant_pk)
    }

    /// The merchant's index, when held, stamped as searched at `clock`.
    pub(super) fn stamp(&mut self, merchant_pk: i64, clock: u64) -> Option<V> {
        let slot = self.by_merchant.get_mut(&merchant_pk)?;
        slot.used = clock;
        Some(slot.merchant.clone())
    }

    /// Holds the merchant's index, of `bytes`, as searched at `clock` (in place of any held before).
    pub(super) fn insert(&mut self, merchant_pk: i64, merchant: V, bytes: usize, clock: u64) {
        self.remove(merchant_pk);
        self.order.insert((clock, bytes, merchant_pk));
        self.bytes += bytes;
        let slot = Slot {
            merchant,
            bytes,
            used: clock,
            placed: clock,
        };
        self.by_merchant.insert(merchant_pk, slot);
    }

    /// Whether the merchant's index was held; it is not now.
    pub(super) fn remove(&mut self, merchant_pk: i64) -> bool {
        let Some(slot) = self.by_merchant.remove(&merchant_pk) else {
            return false;
        };
        self.order.remove(&(slot.placed, slot.bytes, merchant_pk));
        self.bytes -= slot.bytes;
        true
    }

    /// The merchant's index now takes `bytes`; `false` when it is not held.
    pub(super) fn resize(&mut self, merchant_pk: i64, bytes: usize) -> bool {
        let Some(slot) = self.by_merchant.get_mut(&merchant_pk) else {
            return false;
        };
        if slot.bytes == bytes {
            return true;
        }
        self.order.remove(&(slot.placed, slot.bytes, merchant_pk));
        self.bytes = self.bytes - slot.bytes + bytes;
        slot.bytes = bytes;
        slot.placed = slot.used;
        self.order.insert((slot.used, bytes, merchant_pk));
        true
    }

    /// Calls `go_on` with each held merchant but `skip`, and its bytes, in the order they are
    /// dropped in, for as long as it answers `true`.
    pub(super) fn walk(&mut self, skip: i64, mut go_on: impl FnMut(i64, usize) -> bool) {
        let mut after: Option<Place> = None;
        loop {
            let rest = match after {
                None => self.order.range(..),
                Some(place) => self.order.range((Excluded(place), Unbounded)),
            };
            let mut searched_since = None;
            for &place in rest {
                let (placed, bytes, merchant_pk) = place;
                if self
                    .by_merchant
                    .get(&merchant_pk)
                    .is_some_and(|slot| slot.used != placed)
                {
                    searched_since = Some(place);
                    break;
                }
                after = Some(place);
                if merchant_pk != skip && !go_on(merchant_pk, bytes) {
                    return;
                }
            }
            // Placed again by its last search: later in this walk, where it comes now.
            let Some(place @ (_, bytes, merchant_pk)) = searched_since else {
                return;
            };
            self.order.remove(&place);
            if let Some(slot) = self.by_merchant.get_mut(&merchant_pk) {
                slot.placed = slot.used;
                self.order.insert((slot.used, bytes, merchant_pk));
            }
        }
    }

    /// The merchant whose index is dropped first, but `keep`'s.
    pub(super) fn first_but(&mut self, keep: i64) -> Option<i64> {
        let mut first = None;
        self.walk(keep, |merchant_pk, _| {
            first = Some(merchant_pk);
            false
        });
        first
    }

    /// The merchants held, in the order of their numbers.
    #[cfg(test)]
    pub(super) fn merchants(&self) -> Vec<i64> {
        let mut pks: Vec<i64> = self.by_merchant.keys().copied().collect();
        pks.sort_unstable();
        pks
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// What the slots would be dropped in, sorted afresh: every slot by when it was last searched,
    /// its bytes and its merchant.
    fn sorted(slots: &Slots<i64>, skip: i64) -> Vec<(i64, usize)> {
        let mut all: Vec<Place> = slots
            .by_merchant
            .iter()
            .filter(|(pk, _)| **pk != skip)
            .map(|(pk, slot)| (slot.used, slot.bytes, *pk))
            .collect();
        all.sort_unstable();
        all.into_iter().map(|(_, bytes, pk)| (pk, bytes)).collect()
    }

    fn walked(slots: &mut Slots<i64>, skip: i64, at_most: usize) -> Vec<(i64, usize)> {
        let mut seen = Vec::new();
        slots.walk(skip, |pk, bytes| {
            seen.push((pk, bytes));
            seen.len() < at_most
        });
        seen
    }

    #[derive(Clone, Debug)]
    enum Step {
        Search(i64),
        Insert(i64, usize),
        Remove(i64),
        Resize(i64, usize),
        Walk(i64, usize),
    }

    fn step() -> impl Strategy<Value = Step> {
        let pk = 0i64..12;
        prop_oneof![
            4 => pk.clone().prop_map(Step::Search),
            2 => (pk.clone(), 1usize..4).prop_map(|(pk, bytes)| Step::Insert(pk, bytes)),
            1 => pk.clone().prop_map(Step::Remove),
            1 => (pk.clone(), 1usize..4).prop_map(|(pk, bytes)| Step::Resize(pk, bytes)),
            2 => (pk, 1usize..14).prop_map(|(skip, at_most)| Step::Walk(skip, at_most)),
        ]
    }

    proptest! {
        /// Searches, holds, drops and resizes in any order: every walk, stopped anywhere, goes
        /// through the slots as a sort of them all at that moment would, and the bytes add up.
        #[test]
        fn walks_follow_the_order_a_sort_of_every_slot_gives(steps in prop::collection::vec(step(), 1..200)) {
            let mut slots = Slots::<i64>::default();
            for (clock, step) in (1u64..).zip(steps) {
                match step {
                    Step::Search(pk) => {
                        let held = slots.contains(pk).then_some(pk);
                        prop_assert_eq!(slots.stamp(pk, clock), held);
                    }
                    Step::Insert(pk, bytes) => slots.insert(pk, pk, bytes, clock),
                    Step::Remove(pk) => {
                        let held = slots.contains(pk);
                        prop_assert_eq!(slots.remove(pk), held);
                    }
                    Step::Resize(pk, bytes) => {
                        let held = slots.contains(pk);
                        prop_assert_eq!(slots.resize(pk, bytes), held);
                    }
                    Step::Walk(skip, at_most) => {
                        let mut expected = sorted(&slots, skip);
                        expected.truncate(at_most);
                        prop_assert_eq!(walked(&mut slots, skip, at_most), expected);
                        let first = sorted(&slots, skip).first().map(|(pk, _)| *pk);
                        prop_assert_eq!(slots.first_but(skip), first);
                    }
                }
                prop_assert_eq!(slots.bytes(), slots.by_merchant.values().map(|s| s.bytes).sum::<usize>());
                prop_assert_eq!(slots.order.len(), slots.len());
            }
        }
    }

    #[test]
    fn a_walk_comes_to_a_slot_searched_since_it_was_placed_where_its_search_puts_it() {
        let mut slots = Slots::<i64>::default();
        for pk in 1..=4 {
            slots.insert(pk, pk, 10, pk as u64);
        }
        slots.stamp(1, 5);
        slots.stamp(3, 6);
        assert_eq!(walked(&mut slots, 0, 10), [(2, 10), (4, 10), (1, 10), (3, 10)]);
        assert_eq!(
            walked(&mut slots, 2, 1),
            [(4, 10)],
            "the merchant skipped is not counted"
        );
        assert_eq!(slots.first_but(4), Some(2));
        assert!(slots.remove(2));
        assert_eq!(slots.first_but(0), Some(4));
        assert_eq!(slots.bytes(), 30);
    }
}

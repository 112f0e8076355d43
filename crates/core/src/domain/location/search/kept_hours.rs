//! The opening hours an index in memory holds, each distinct set once: a chain's points mostly
//! share theirs.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};

/// Every distinct opening hours, each kept once, one after another in one vector: an entry holds
/// where its hours begin, and the four bytes there say how many follow. Reading an entry's hours
/// costs one look into memory, not two (a table of the hours, then the hours).
#[derive(Default, Debug)]
pub(super) struct Hours {
    /// By a hash of their bytes, where the hours with that hash begin (on a collision, the
    /// first's: the second is kept apart, under no hash).
    places: HashMap<u64, u64>,
    all: Vec<u8>,
}

/// The bytes before an entry's hours in [`Hours`]: how many they are.
const LENGTH: usize = 4;

impl Hours {
    /// Where `hours` begin, kept now when they were not yet.
    pub(super) fn place(&mut self, hours: &[u8]) -> u64 {
        let hash = {
            let mut h = std::collections::hash_map::DefaultHasher::new();
            hours.hash(&mut h);
            h.finish()
        };
        if let Some(&at) = self.places.get(&hash)
            && self.get(at) == hours
        {
            return at;
        }
        let at = self.all.len() as u64;
        // Hours are a week and the dated days of one location: far fewer than 4 GiB of bytes.
        let length = u32::try_from(hours.len()).unwrap_or(u32::MAX);
        self.all.extend_from_slice(&length.to_le_bytes());
        self.all.extend_from_slice(hours);
        self.places.entry(hash).or_insert(at);
        at
    }

    pub(super) fn get(&self, at: u64) -> &[u8] {
        let at = usize::try_from(at).unwrap_or(usize::MAX);
        let length = self
            .all
            .get(at..at.saturating_add(LENGTH))
            .and_then(|b| b.try_into().ok())
            .map_or(0, |b| u32::from_le_bytes(b) as usize);
        let from = at.saturating_add(LENGTH);
        self.all.get(from..from.saturating_add(length)).unwrap_or(&[])
    }

    /// What it holds on the heap, in bytes.
    pub(super) fn bytes(&self) -> usize {
        self.all.capacity() + self.places.capacity() * (2 * std::mem::size_of::<u64>() + 1)
    }

    /// How many hours it holds, each after its length.
    #[cfg(test)]
    pub(super) fn count(&self) -> usize {
        let mut at = 0;
        std::iter::from_fn(|| (at < self.all.len()).then(|| at = at + LENGTH + self.get(at as u64).len())).count()
    }
}

//! Whether a storefront key's search may answer from a merchant's index without reading where its
//! log stands: only while no commit of this instance and no notice from another has moved the log
//! since a read found the index where the log stood, and only for a short while after that read
//! (a notice may be lost with a broken connection, and another process may write a SQLite file).
//! A commit rings before its request is answered, so a storefront key reads its own instance's
//! writes at once, and another instance's as soon as their notice comes: within the bound a
//! replica's reads keep in any case.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::store::event_signal::RECHECK;

/// How long a read of the log that found the index current vouches for it without a ring: the
/// time a feed's waiter, too, goes without looking again.
const VOUCHED_FOR: Duration = RECHECK;

#[derive(Debug)]
pub(super) struct Fresh {
    /// The merchant's count of rings (`EventSignal::rings`).
    rings: Arc<AtomicU64>,
    /// The count of rings before the last read that found the index where the log stood, and when.
    checked: Mutex<Option<(u64, Instant)>>,
}

impl Fresh {
    pub(super) fn new(rings: Arc<AtomicU64>) -> Fresh {
        Fresh {
            rings,
            checked: Mutex::new(None),
        }
    }

    /// The count of rings now: taken before a read of the log, for [`Fresh::found_current`].
    pub(super) fn rings(&self) -> u64 {
        self.rings.load(Ordering::SeqCst)
    }

    /// No ring since a read found the index where the log stood, and that read was lately.
    pub(super) fn current(&self) -> bool {
        let rings = self.rings();
        matches!(*self.lock(), Some((at, when)) if at == rings && when.elapsed() < VOUCHED_FOR)
    }

    /// A read begun when the count was `rings` found the index where the log stood.
    pub(super) fn found_current(&self, rings: u64) {
        let mut checked = self.lock();
        if checked.is_none_or(|(at, _)| at <= rings) {
            *checked = Some((rings, Instant::now()));
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<(u64, Instant)>> {
        // Only a pair is read and written under the lock, which cannot panic half-way.
        self.checked.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn current_only_after_a_read_and_until_the_next_ring() {
        let rings = Arc::new(AtomicU64::new(5));
        let fresh = Fresh::new(Arc::clone(&rings));
        assert!(!fresh.current(), "never read");
        let before = fresh.rings();
        fresh.found_current(before);
        assert!(fresh.current());
        rings.fetch_add(1, Ordering::SeqCst);
        assert!(!fresh.current(), "a ring since the read");
        // A read begun before the ring vouches for nothing after it, whenever it ends.
        fresh.found_current(before);
        assert!(!fresh.current());
        fresh.found_current(fresh.rings());
        assert!(fresh.current());
        // An older read ending late does not take a newer one's place.
        fresh.found_current(before);
        assert_eq!(fresh.lock().map(|(at, _)| at), Some(6));
    }

    #[test]
    fn a_read_vouches_for_a_while_only() {
        let fresh = Fresh::new(Arc::default());
        *fresh.lock() = Instant::now().checked_sub(VOUCHED_FOR).map(|when| (0, when));
        assert!(!fresh.current());
    }
}

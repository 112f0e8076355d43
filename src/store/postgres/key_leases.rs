//! Keys and origins found on the primary, trusted for a short lease instead of being looked up at
//! every request. A key revoked on any instance is refused from the next request on, on every
//! instance; the lease keeps that true without a round trip a request:
//! - an instance trusts what a lookup found for `LEASE` after the request that asked for it
//!   arrived (the lookup began after that, so it read the database as of then or later);
//! - a revocation is answered only `LEASE` after its commit ([`KeyLeases::revoked`]).
//!
//! So a request that comes after the revocation's answer finds, on any instance, either nothing
//! trusted (and looks up) or a lease taken by a request that arrived after the commit: a lookup
//! that saw the revocation. Only what was found is trusted: an unknown key, a revoked one or an
//! origin no key names is looked up again at each request (the gate remembers made-up keys on
//! its own), so a key or an origin made on another instance serves at once.
//!
//! Within a lease a buyer's key costs no round trip; when it ends, the requests presenting the key
//! at that moment share one lookup (`shared_reads`).

use std::future::Future;
use std::hash::Hash;
use std::time::{Duration, Instant};

use dashmap::DashMap;

use super::shared_reads::SharedLookups;
use crate::store::api::{StoreError, StoredKey};

/// How long a lookup's finding is trusted, and how long a revocation waits before its answer.
const LEASE: Duration = Duration::from_millis(250);
/// Most findings held of each kind; past it, the lapsed ones go, then (a flood of new keys,
/// each one stored) all of them.
const MAX_HELD: usize = 65_536;

/// The leases of one instance.
#[derive(Default)]
pub(super) struct KeyLeases {
    reads: SharedLookups<Option<StoredKey>>,
    keys: Leased<String, StoredKey>,
    origins: Leased<String, ()>,
}

impl KeyLeases {
    /// The key `key_id`, from a lease or from `lookup` (shared by the requests asking at once).
    pub(super) async fn key<F, Fut>(&self, key_id: &str, lookup: F) -> Result<Option<StoredKey>, StoreError>
    where
        F: Fn() -> Fut,
        Fut: Future<Output = Result<Option<StoredKey>, StoreError>>,
    {
        let asked = Instant::now();
        if let Some(key) = self.keys.get(key_id, asked) {
            return Ok(Some(key));
        }
        let found = self.reads.get(key_id, lookup).await?;
        if let Some(key) = &found {
            self.keys.put(key_id.to_owned(), asked, key.clone());
        }
        Ok(found)
    }

    /// Whether a key not revoked names `origin`, from a lease or from `lookup`.
    pub(super) async fn origin<Fut>(&self, origin: &str, lookup: Fut) -> Result<bool, StoreError>
    where
        Fut: Future<Output = Result<bool, StoreError>>,
    {
        let asked = Instant::now();
        if self.origins.get(origin, asked).is_some() {
            return Ok(true);
        }
        let named = lookup.await?;
        if named {
            self.origins.put(origin.to_owned(), asked, ());
        }
        Ok(named)
    }

    /// After the commit of a revocation of `key_id` (or the finding that it was revoked): waits
    /// until every lease any instance may have taken before the commit has lapsed, so that the
    /// revocation's answer comes after it holds everywhere. This instance's own leases of the key
    /// and of every origin go at once.
    pub(super) async fn revoked(&self, key_id: &str) {
        self.keys.held.remove(key_id);
        self.origins.held.clear();
        tokio::time::sleep(LEASE).await;
    }
}

/// Findings, each with when the request that looked it up arrived.
struct Leased<K: Eq + Hash, V> {
    held: DashMap<K, (Instant, V)>,
}

impl<K: Eq + Hash, V> Default for Leased<K, V> {
    fn default() -> Self {
        Leased { held: DashMap::new() }
    }
}

impl<K: Eq + Hash + std::borrow::Borrow<str>, V: Clone> Leased<K, V> {
    /// What a lease still running at `now` holds for `name`.
    fn get(&self, name: &str, now: Instant) -> Option<V> {
        let held = self.held.get(name)?;
        let (asked, value) = &*held;
        (now.saturating_duration_since(*asked) < LEASE).then(|| value.clone())
    }

    /// What a lookup asked for at `asked` found.
    fn put(&self, name: K, asked: Instant, value: V) {
        if self.held.len() >= MAX_HELD {
            let now = Instant::now();
            self.held
                .retain(|_, (at, _)| now.saturating_duration_since(*at) < LEASE);
            if self.held.len() >= MAX_HELD {
                self.held.clear();
            }
        }
        self.held.insert(name, (asked, value));
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU32, Ordering};

    use super::*;
    use crate::auth::KeyScope;
    use crate::store::MerchantRef;

    fn stored() -> StoredKey {
        StoredKey {
            merchant: MerchantRef {
                pk: 1,
                id: "m".to_owned(),
            },
            scope: KeyScope::Storefront,
            secret_hash: [7; 32],
            allowed_origins: None,
        }
    }

    #[tokio::test]
    async fn a_finding_is_trusted_for_the_lease_only_and_a_revocation_outlasts_it() {
        let leases = KeyLeases::default();
        let lookups = AtomicU32::new(0);
        let lookup = || async {
            lookups.fetch_add(1, Ordering::SeqCst);
            Ok(Some(stored()))
        };
        for _ in 0..5 {
            assert!(leases.key("k", lookup).await.unwrap().is_some());
        }
        assert_eq!(lookups.load(Ordering::SeqCst), 1, "one lookup for the lease");
        tokio::time::sleep(LEASE).await;
        leases.key("k", lookup).await.unwrap();
        assert_eq!(lookups.load(Ordering::SeqCst), 2, "looked up again once it lapsed");

        let began = Instant::now();
        leases.revoked("k").await;
        assert!(
            began.elapsed() >= LEASE,
            "answered only once every lease taken before has lapsed"
        );
        leases.key("k", lookup).await.unwrap();
        assert_eq!(
            lookups.load(Ordering::SeqCst),
            3,
            "this instance's lease went with the revocation"
        );
    }

    #[tokio::test]
    async fn only_what_was_found_is_trusted() {
        let leases = KeyLeases::default();
        let lookups = AtomicU32::new(0);
        let unknown = || async {
            lookups.fetch_add(1, Ordering::SeqCst);
            Ok(None)
        };
        for _ in 0..3 {
            assert!(leases.key("k", unknown).await.unwrap().is_none());
        }
        assert_eq!(lookups.load(Ordering::SeqCst), 3);

        assert!(
            !leases
                .origin("https://shop.example", async { Ok(false) })
                .await
                .unwrap()
        );
        assert!(leases.origin("https://shop.example", async { Ok(true) }).await.unwrap());
        assert!(
            leases
                .origin("https://shop.example", async { Err(StoreError::Unavailable) })
                .await
                .unwrap(),
            "named: trusted without a lookup"
        );
        leases.revoked("k").await;
        assert!(
            leases
                .origin("https://shop.example", async { Err(StoreError::Unavailable) })
                .await
                .is_err(),
            "a revocation drops the origins' leases"
        );
    }

    #[test]
    fn the_leases_held_are_bounded() {
        let leased = Leased::<String, ()>::default();
        let long_ago = Instant::now().checked_sub(LEASE).unwrap_or_else(Instant::now);
        for i in 0..MAX_HELD {
            leased.put(i.to_string(), long_ago, ());
        }
        // Read at the time it was put: going through the full map may take longer than a lease on
        // a busy machine.
        let asked = Instant::now();
        leased.put("new".to_owned(), asked, ());
        assert_eq!(leased.held.len(), 1, "the lapsed ones went");
        assert!(leased.get("new", asked).is_some());
        assert!(leased.get("new", asked + LEASE).is_none());
    }
}

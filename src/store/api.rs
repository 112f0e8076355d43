//! The storage trait and what crosses it, beside the backends that implement it (`sqlite`,
//! `postgres`), so that they import it from a sibling and the factory in `store/mod.rs` can name
//! them without an import loop.
//!
//! Every write of one request happens in one transaction; an answer that says something is
//! stored is sent only after that transaction is durably committed. Errors here know nothing of
//! HTTP: the HTTP layer maps any `StoreError` it does not expect to a 500.

use std::sync::Arc;

use async_trait::async_trait;

pub use super::error::StoreError;
use super::event_signal::EventSignal;
pub use super::reads::{ReadFrom, ReadOn};
use super::redelivery_api::RedeliveryStore;
use super::webhook_api::WebhookStore;
pub use crate::clock::{millis, now_ms};
use crate::domain::category::Category;
use crate::domain::category::import::{Mode, Parsed, Problem};
use crate::domain::event::{EventPage, EventQuery};
use crate::domain::location::batch::{NewLocation, Outcome};
use crate::domain::location::change::{ChangePlan, Decision};
use crate::domain::location::listing::{LocationPage, LocationQuery};
use crate::domain::location::search::{SearchPage, SearchQuery};
use crate::domain::location::{Persist, Status};
use crate::rate_limit::shared::Ledger;

/// A merchant as the rest of the service refers to it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MerchantRef {
    /// The store's internal key.
    pub pk: i64,
    /// The public id.
    pub id: String,
}

/// What a key may call: everything, or only what a storefront's web page needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum KeyScope {
    #[default]
    Full,
    /// A key that may be published in a web page: search and the category list.
    Storefront,
}

impl KeyScope {
    /// The stored and printed name.
    pub fn as_str(self) -> &'static str {
        match self {
            KeyScope::Full => "full",
            KeyScope::Storefront => "storefront",
        }
    }

    /// Whether this key's searches find only what a buyer may see: a key published
    /// in a web page never tells where the merchant's warehouses are.
    pub fn buyers_only(self) -> bool {
        self == KeyScope::Storefront
    }

    /// Where this key's searches read: a buyer's on a replica, a merchant's where
    /// it writes.
    pub fn search_reads(self) -> ReadFrom {
        match self {
            KeyScope::Full => ReadFrom::Primary,
            KeyScope::Storefront => ReadFrom::Replica,
        }
    }

    /// The scope a stored name means; an unknown name is the narrowest scope (a newer release's
    /// scope is never widened by an older one).
    pub fn from_stored(name: &str) -> Self {
        match name {
            "full" => KeyScope::Full,
            _ => KeyScope::Storefront,
        }
    }
}

/// The hot standbys buyers' searches read from. Its `Debug` shows their URLs with
/// any password replaced.
#[derive(Clone, Default)]
pub struct ReadReplicas {
    /// Their URLs, in the order `replica_lag_seconds` numbers them.
    pub urls: Vec<String>,
    /// A replica further behind is not read.
    pub max_lag: std::time::Duration,
}

impl std::fmt::Debug for ReadReplicas {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let urls: Vec<String> = self.urls.iter().map(|url| super::redact::redact(url)).collect();
        f.debug_struct("ReadReplicas")
            .field("urls", &urls)
            .field("max_lag", &self.max_lag)
            .finish()
    }
}

/// A merchant as the operator lists it.
#[derive(Clone, Debug, PartialEq)]
pub struct MerchantRow {
    pub merchant_id: String,
    pub name: String,
    pub created_at_ms: i64,
}

/// A key as the operator lists it: never its secret.
#[derive(Clone, Debug, PartialEq)]
pub struct KeyRow {
    pub key_id: String,
    pub scope: KeyScope,
    /// What the merchant called it (`None` for a key the operator issued).
    pub label: Option<String>,
    /// The web origins it may be used from; `None`: any the service allows.
    pub allowed_origins: Option<Vec<String>>,
    pub created_at_ms: i64,
    pub revoked_at_ms: Option<i64>,
}

/// A stored, unrevoked API key.
#[derive(Clone, Debug)]
pub struct StoredKey {
    pub merchant: MerchantRef,
    pub scope: KeyScope,
    pub secret_hash: [u8; 32],
    /// The web origins it may be used from; `None`: any the service allows.
    pub allowed_origins: Option<Vec<String>>,
}

/// A location in `QUARANTINE`, as an operator reviews it.
#[derive(Clone, Debug, PartialEq)]
pub struct QuarantinedLocation {
    pub location_id: String,
    pub merchant_id: String,
    pub merchant_location_id: Option<String>,
    pub name: String,
    /// The location its issue names.
    pub neighbour_location_id: Option<String>,
}

/// What `approve_location` did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Approval {
    /// Now `ACTIVE`, at this version.
    Approved {
        version: i64,
    },
    /// Not in `QUARANTINE`: nothing changed.
    NotQuarantined(Status),
    NotFound,
}

/// What an import did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Imported {
    /// Records in the file.
    pub records: usize,
    /// Categories stored afterwards.
    pub total: usize,
    /// The new taxonomy version.
    pub version: i64,
}

/// A stored wire word of the service's own (`what` names it in the error).
pub fn stored_word<T>(s: &str, what: &str, parse: impl Fn(&str) -> Option<T>) -> Result<T, StoreError> {
    parse(s).ok_or_else(|| StoreError::corrupt(what, s))
}

/// A stored location status.
pub fn stored_status(s: &str) -> Result<Status, StoreError> {
    Status::from_wire(s).ok_or_else(|| StoreError::corrupt("status", s))
}

/// Whom a request's write is for and how it is done: its merchant, whether it is kept (a
/// `validate_only` request's is not), and when it must be done by (a write not begun, or not
/// committed, by then is abandoned with `DeadlinePassed`).
#[derive(Clone, Copy, Debug)]
pub struct WriteFor<'a> {
    pub merchant: &'a MerchantRef,
    pub persist: Persist,
    pub deadline: std::time::Instant,
}

/// A key to store: its merchant's public id, its own id, the hash of its secret, its scope, what
/// the merchant calls it and the origins it may be used from.
#[derive(Clone, Debug)]
pub struct NewKey {
    pub merchant_id: String,
    pub key_id: String,
    pub secret_hash: [u8; 32],
    pub scope: KeyScope,
    pub label: Option<String>,
    pub allowed_origins: Option<Vec<String>>,
    /// The key is stored only while the merchant has fewer storefront keys not revoked than this
    /// (a merchant's own bound; the operator has none).
    pub storefront_below: Option<usize>,
}

/// What revoking one of a merchant's keys found.
#[derive(Clone, Debug, PartialEq)]
pub enum MerchantKey {
    /// A storefront key, revoked now or before.
    Revoked(KeyRow),
    /// A full key: left as it is (the operator revokes those).
    Full,
    /// No key of this merchant has that id.
    NotFound,
}

#[async_trait]
pub trait Store: Send + Sync + 'static {
    /// Whether the database answers.
    async fn ping(&self) -> Result<(), StoreError>;

    /// Test hook (a failpoint, in debug builds only): the next request write stalls this long
    /// inside its transaction, so that a test can make it overrun its deadline.
    #[doc(hidden)]
    fn delay_next_write(&self, _by: std::time::Duration) {}

    /// The durability settings in force, as `name=value` pairs for the startup log.
    async fn durability(&self) -> Result<Vec<(String, String)>, StoreError>;

    /// Creates a merchant; returns it.
    async fn create_merchant(&self, name: &str) -> Result<MerchantRef, StoreError>;

    /// How many merchants exist.
    async fn merchant_count(&self) -> Result<u64, StoreError>;

    /// Every merchant, oldest first (the operator's `merchant list`).
    async fn list_merchants(&self) -> Result<Vec<MerchantRow>, StoreError>;

    /// The merchant's keys, oldest first, revoked ones included (never a secret); `None` when no
    /// merchant has that public id (the operator's `key list`).
    async fn list_keys(&self, merchant_id: &str) -> Result<Option<Vec<KeyRow>>, StoreError>;

    /// Stores a new key for the merchant with public id `key.merchant_id` (`NotFound` if none);
    /// `None` (nothing stored) when the merchant has `key.storefront_below` storefront keys not
    /// revoked.
    async fn insert_key(&self, key: NewKey) -> Result<Option<KeyRow>, StoreError>;

    /// A page of the merchant's keys, oldest first, after the key created at `after`'s time with
    /// `after`'s id.
    async fn key_page(
        &self,
        merchant_pk: i64,
        after: Option<(i64, String)>,
        limit: usize,
    ) -> Result<Vec<KeyRow>, StoreError>;

    /// Revokes a key; `false` when no unrevoked key has that id.
    async fn revoke_key(&self, key_id: &str) -> Result<bool, StoreError>;

    /// Revokes the merchant's storefront key with this id (a revoked one is answered as it is).
    async fn revoke_merchant_key(&self, merchant_pk: i64, key_id: &str) -> Result<MerchantKey, StoreError>;

    /// Whether a storefront key not revoked names this web origin.
    async fn origin_allowed(&self, origin: &str) -> Result<bool, StoreError>;

    /// The unrevoked key with this id, if any.
    async fn find_key(&self, key_id: &str) -> Result<Option<StoredKey>, StoreError>;

    /// Stores the valid items of one create request, in order, in one transaction: one
    /// outcome per item. On error nothing of the request is stored. A write not
    /// begun (SQLite) or not committed (PostgreSQL) by `deadline` is abandoned with
    /// `DeadlinePassed`. With `Persist::ValidateOnly` the same work is done in the same place and
    /// rolled back: the outcomes are what a committed request would have had.
    async fn create_locations(&self, to: WriteFor<'_>, items: Vec<NewLocation>) -> Result<Vec<Outcome>, StoreError>;

    /// Updates, archives or restores the locations a change request names, in one
    /// transaction, serialised with every other write of the merchant: fetches what
    /// `ChangePlan::decide` reads, writes what it decides. On error nothing is changed. A write not
    /// begun (SQLite) or not committed (PostgreSQL) by `deadline` is abandoned with
    /// `DeadlinePassed`. With `Persist::ValidateOnly` the decision is made and its writes rolled
    /// back.
    async fn change_locations(&self, to: WriteFor<'_>, plan: ChangePlan) -> Result<Decision, StoreError>;

    /// Every `QUARANTINE` location of every merchant, in creation order.
    async fn quarantined_locations(&self) -> Result<Vec<QuarantinedLocation>, StoreError>;

    /// An operator's approval: a `QUARANTINE` location becomes `ACTIVE`.
    async fn approve_location(&self, location_id: &str) -> Result<Approval, StoreError>;

    /// One page of a merchant's locations, in creation order, with the exact
    /// total; read in one transaction.
    async fn list_locations(&self, query: LocationQuery) -> Result<LocationPage, StoreError>;

    /// One page of a buyer's search: the merchant's `ACTIVE` locations near a point
    /// that pass the filter, nearest first, walked outward on the store's spatial index until the
    /// page is full; read in one transaction, where `from` says.
    async fn search_locations(&self, query: SearchQuery, from: ReadFrom) -> Result<SearchPage, StoreError>;

    /// One page of the merchant's event feed, read in one snapshot.
    async fn read_events(&self, query: EventQuery) -> Result<EventPage, StoreError>;

    /// Retention: drops up to `PRUNE_BATCH` events appended before `cutoff_ms`,
    /// in one short transaction that never holds a merchant's writes; how many (0: none is due).
    async fn prune_events(&self, cutoff_ms: i64) -> Result<usize, StoreError>;

    /// What wakes the waiting feeds: rung by the store after each commit that appended events
    /// (`group::after_commit`), and by `follow_events`.
    fn event_signal(&self) -> Arc<EventSignal>;

    /// Rings `signal` for every merchant whose log another process or instance grew, for as long
    /// as the store runs (PostgreSQL's `LISTEN`). A store with one writer process returns at once:
    /// its own commits ring the signal.
    async fn follow_events(&self, _signal: Arc<EventSignal>) {}

    /// What is stored of webhooks.
    fn webhooks(&self) -> Arc<dyn WebhookStore>;

    /// Resends, tests and recoveries.
    fn redeliveries(&self) -> Arc<dyn RedeliveryStore>;

    /// Merchants' files handed to the service and what became of their rows.
    fn imports(&self) -> Arc<dyn super::import_api::ImportStore>;

    /// What the search index in memory reads.
    fn search_source(&self) -> Arc<dyn super::search_api::SearchSource>;

    /// The secret that signs list cursors: generated once per database, then always the same.
    async fn cursor_secret(&self) -> Result<[u8; 32], StoreError>;

    /// The stored taxonomy's version; every import changes it.
    async fn taxonomy_version(&self) -> Result<i64, StoreError>;

    /// Every stored category, with the version they are (read in one transaction).
    async fn load_categories(&self) -> Result<(i64, Vec<Category>), StoreError>;

    /// The taxonomy snapshot of the stored categories, built row by row (never holding them all
    /// as `Category` values: with a million categories that would double the memory).
    async fn load_taxonomy(&self) -> Result<crate::domain::category::taxonomy::Taxonomy, StoreError>;

    /// Imports `records` atomically: checks the set that would result and writes
    /// it, bumping the version, or writes nothing and returns every problem.
    async fn import_categories(&self, parsed: Parsed, mode: Mode)
    -> Result<Result<Imported, Vec<Problem>>, StoreError>;

    /// Finishes queued writes and releases the database.
    async fn close(&self);

    /// The ledger of the rate budgets that the instances on this database share:
    /// PostgreSQL's, where several instances serve one database; none for SQLite (one instance a
    /// file), whose budgets stay in memory.
    fn rate_ledger(&self) -> Option<Arc<dyn Ledger>> {
        None
    }
}

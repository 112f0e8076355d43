//! A real store with one fault switched on (a panic, an error, slowness), and a server over it.

use std::sync::Arc;

use async_trait::async_trait;
use storefront::domain::category::Category;
use storefront::domain::category::import::{Mode, Parsed, Problem};
use storefront::domain::event::{EventPage, EventQuery};
use storefront::domain::location::batch::{NewLocation, Outcome};
use storefront::domain::location::change::{ChangePlan, Decision};
use storefront::domain::location::listing::{LocationPage, LocationQuery};
use storefront::domain::location::search::{SearchPage, SearchQuery};
use storefront::store::{
    Approval, Imported, KeyRow, MerchantKey, MerchantRef, NewKey, QuarantinedLocation, ReadFrom, Store, StoreError,
    StoredKey, WriteFor,
};

use super::{TestApp, fresh_database_url, open_store};

/// A real store with one fault switched on.
pub struct FaultyStore {
    inner: Arc<dyn Store>,
    fault: Fault,
    /// How many times an API key was looked up.
    key_lookups: Arc<std::sync::atomic::AtomicUsize>,
}

#[derive(Clone, Copy, PartialEq)]
pub enum Fault {
    Panic,
    Fail,
    /// Creates wait this long, then go to the real store (which honours the deadline).
    Slow(std::time::Duration),
}

impl FaultyStore {
    pub fn wrap(inner: Arc<dyn Store>, fault: Fault) -> Arc<dyn Store> {
        FaultyStore::wrap_counting(inner, fault).0
    }

    /// The store, and the count of its key lookups.
    pub fn wrap_counting(inner: Arc<dyn Store>, fault: Fault) -> (Arc<dyn Store>, Arc<std::sync::atomic::AtomicUsize>) {
        let key_lookups = Arc::default();
        let store = FaultyStore {
            inner,
            fault,
            key_lookups: Arc::clone(&key_lookups),
        };
        (Arc::new(store), key_lookups)
    }
}

#[async_trait]
impl Store for FaultyStore {
    async fn ping(&self) -> Result<(), StoreError> {
        match self.fault {
            Fault::Fail => Err(StoreError::Backend("disk I/O error at /var/lib/secret.db".into())),
            _ => self.inner.ping().await,
        }
    }
    async fn durability(&self) -> Result<Vec<(String, String)>, StoreError> {
        self.inner.durability().await
    }
    async fn create_merchant(&self, name: &str) -> Result<MerchantRef, StoreError> {
        self.inner.create_merchant(name).await
    }
    async fn merchant_count(&self) -> Result<u64, StoreError> {
        self.inner.merchant_count().await
    }
    async fn insert_key(&self, key: NewKey) -> Result<Option<KeyRow>, StoreError> {
        self.inner.insert_key(key).await
    }
    async fn key_page(
        &self,
        merchant_pk: i64,
        after: Option<(i64, String)>,
        limit: usize,
    ) -> Result<Vec<KeyRow>, StoreError> {
        self.inner.key_page(merchant_pk, after, limit).await
    }
    async fn revoke_key(&self, key_id: &str) -> Result<bool, StoreError> {
        self.inner.revoke_key(key_id).await
    }
    async fn revoke_merchant_key(&self, merchant_pk: i64, key_id: &str) -> Result<MerchantKey, StoreError> {
        self.inner.revoke_merchant_key(merchant_pk, key_id).await
    }
    async fn origin_allowed(&self, origin: &str) -> Result<bool, StoreError> {
        self.inner.origin_allowed(origin).await
    }
    async fn find_key(&self, key_id: &str) -> Result<Option<StoredKey>, StoreError> {
        self.key_lookups.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.inner.find_key(key_id).await
    }
    async fn create_locations(&self, to: WriteFor<'_>, items: Vec<NewLocation>) -> Result<Vec<Outcome>, StoreError> {
        match self.fault {
            Fault::Panic => panic!("injected panic while storing {} items", items.len()),
            Fault::Fail => Err(StoreError::Backend(
                "SQLITE_FULL: database or disk is full: /var/lib/secret.db".into(),
            )),
            Fault::Slow(wait) => {
                tokio::time::sleep(wait).await;
                self.inner.create_locations(to, items).await
            }
        }
    }
    async fn change_locations(&self, to: WriteFor<'_>, plan: ChangePlan) -> Result<Decision, StoreError> {
        match self.fault {
            Fault::Panic => panic!("injected panic while changing locations"),
            Fault::Fail => Err(StoreError::Backend(
                "SQLITE_FULL: database or disk is full: /var/lib/secret.db".into(),
            )),
            Fault::Slow(wait) => {
                tokio::time::sleep(wait).await;
                self.inner.change_locations(to, plan).await
            }
        }
    }
    async fn quarantined_locations(&self) -> Result<Vec<QuarantinedLocation>, StoreError> {
        self.inner.quarantined_locations().await
    }
    async fn approve_location(&self, location_id: &str) -> Result<Approval, StoreError> {
        self.inner.approve_location(location_id).await
    }
    async fn list_locations(&self, query: LocationQuery) -> Result<LocationPage, StoreError> {
        match self.fault {
            Fault::Panic => panic!("injected panic while listing"),
            Fault::Fail => Err(StoreError::Backend("SQLITE_IOERR: /var/lib/secret.db".into())),
            Fault::Slow(_) => self.inner.list_locations(query).await,
        }
    }
    async fn read_events(&self, query: EventQuery) -> Result<EventPage, StoreError> {
        match self.fault {
            Fault::Panic => panic!("injected panic while reading events"),
            Fault::Fail => Err(StoreError::Backend("SQLITE_IOERR: /var/lib/secret.db".into())),
            Fault::Slow(_) => self.inner.read_events(query).await,
        }
    }

    async fn prune_events(&self, cutoff_ms: i64) -> Result<usize, StoreError> {
        self.inner.prune_events(cutoff_ms).await
    }

    fn webhooks(&self) -> Arc<dyn storefront::store::webhook_api::WebhookStore> {
        self.inner.webhooks()
    }

    fn redeliveries(&self) -> Arc<dyn storefront::store::redelivery_api::RedeliveryStore> {
        self.inner.redeliveries()
    }

    fn imports(&self) -> Arc<dyn storefront::store::import_api::ImportStore> {
        self.inner.imports()
    }

    fn search_source(&self) -> Arc<dyn storefront::store::search_api::SearchSource> {
        self.inner.search_source()
    }

    fn event_signal(&self) -> Arc<storefront::store::event_signal::EventSignal> {
        self.inner.event_signal()
    }

    async fn search_locations(&self, query: SearchQuery, from: ReadFrom) -> Result<SearchPage, StoreError> {
        match self.fault {
            Fault::Panic => panic!("injected panic while searching"),
            Fault::Fail => Err(StoreError::Backend("SQLITE_IOERR: /var/lib/secret.db".into())),
            Fault::Slow(_) => self.inner.search_locations(query, from).await,
        }
    }
    async fn cursor_secret(&self) -> Result<[u8; 32], StoreError> {
        self.inner.cursor_secret().await
    }
    async fn taxonomy_version(&self) -> Result<i64, StoreError> {
        self.inner.taxonomy_version().await
    }
    async fn load_taxonomy(&self) -> Result<storefront::domain::category::taxonomy::Taxonomy, StoreError> {
        self.inner.load_taxonomy().await
    }
    async fn load_categories(&self) -> Result<(i64, Vec<Category>), StoreError> {
        self.inner.load_categories().await
    }
    async fn import_categories(
        &self,
        parsed: Parsed,
        mode: Mode,
    ) -> Result<Result<Imported, Vec<Problem>>, StoreError> {
        self.inner.import_categories(parsed, mode).await
    }
    async fn list_merchants(&self) -> Result<Vec<storefront::store::MerchantRow>, StoreError> {
        self.inner.list_merchants().await
    }
    async fn list_keys(&self, merchant_id: &str) -> Result<Option<Vec<storefront::store::KeyRow>>, StoreError> {
        self.inner.list_keys(merchant_id).await
    }
    async fn close(&self) {
        self.inner.close().await;
    }
}

pub async fn faulty_app(fault: Fault) -> TestApp {
    let dir = tempfile::tempdir().unwrap();
    let inner = open_store(&fresh_database_url(dir.path()).await).await;
    TestApp::spawn_with(FaultyStore::wrap(inner, fault), dir).await
}

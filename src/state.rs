//! What every handler can reach (`AppState`): the store, the taxonomy snapshot, the cursors, the
//! rate limiter, the settings; and what the layers hand to handlers (`Deadline`) and back
//! (`ServedMerchant`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use arc_swap::ArcSwap;
use tokio::sync::Semaphore;

use crate::config::Settings;
use crate::domain::category::taxonomy::Taxonomy;
use crate::key_verdicts::KeyVerdicts;
use crate::pagination::Cursors;
use crate::rate_limit::RateLimits;
use crate::store::{Store, StoreError};

/// When a request's store work must be done by: a margin before its time cap, so that a write
/// begun in time is committed before the request is answered 500.
#[derive(Clone, Copy, Debug)]
pub struct Deadline(pub Instant);

/// When a request's body must have arrived by, and the longest pause allowed between its parts
/// (CONTRACT §17: 408 otherwise): the request's time cap, less the margin its 408 needs.
#[derive(Clone, Copy, Debug)]
pub struct BodyTiming {
    pub deadline: Instant,
    pub stall: Duration,
}

impl Default for BodyTiming {
    fn default() -> Self {
        BodyTiming {
            deadline: Instant::now() + Duration::from_secs(29),
            stall: Duration::from_secs(10),
        }
    }
}

/// How long before a request's time cap its store work must be done.
pub const STORE_MARGIN: Duration = Duration::from_secs(5);

/// What every handler can reach: one `Arc`, cheap to hand to every extractor.
#[derive(Clone)]
pub struct AppState(Arc<Services>);

pub struct Services {
    pub store: Arc<dyn Store>,
    /// The current taxonomy snapshot, swapped whole when the stored one changes.
    pub taxonomy: ArcSwap<Taxonomy>,
    pub cursors: Cursors,
    /// The merchants' budgets: of their full keys, and of their storefront keys (CONTRACT §13.1).
    pub limits: RateLimits,
    pub storefront_limits: RateLimits,
    /// Presented keys' verdicts and client addresses' 401 budgets (CONTRACT §17).
    pub keys: KeyVerdicts,
    pub in_flight: Arc<Semaphore>,
    pub settings: Settings,
}

impl std::ops::Deref for AppState {
    type Target = Services;

    fn deref(&self) -> &Services {
        &self.0
    }
}

impl AppState {
    /// Loads what serving needs from the store: the cursor secret and the taxonomy.
    pub async fn load(store: Arc<dyn Store>, settings: Settings) -> Result<Self, StoreError> {
        let cursors = Cursors::new(store.cursor_secret().await?);
        let taxonomy = load_taxonomy(store.as_ref()).await?;
        Ok(AppState(Arc::new(Services {
            store,
            taxonomy: ArcSwap::from_pointee(taxonomy),
            cursors,
            limits: RateLimits::new("merchant", settings.rate, settings.burst),
            storefront_limits: RateLimits::new("storefront", settings.storefront_rate, settings.storefront_burst),
            keys: KeyVerdicts::new(settings.auth_failure_rate, settings.auth_failure_burst),
            in_flight: Arc::new(Semaphore::new(settings.max_in_flight)),
            settings,
        })))
    }

    /// Swaps in the stored taxonomy when its version differs from the one served; returns
    /// whether it did.
    pub async fn refresh_taxonomy(&self) -> Result<bool, StoreError> {
        let stored = self.store.taxonomy_version().await?;
        if stored == self.taxonomy.load().version() {
            return Ok(false);
        }
        let taxonomy = load_taxonomy(self.store.as_ref()).await?;
        tracing::info!(
            version = taxonomy.version(),
            categories = taxonomy.len(),
            "taxonomy refreshed"
        );
        self.taxonomy.store(Arc::new(taxonomy));
        Ok(true)
    }
}

async fn load_taxonomy(store: &dyn Store) -> Result<Taxonomy, StoreError> {
    store.load_taxonomy().await
}

/// The merchant a `/v1` answer was for, handed back by the gate for the access log.
#[derive(Clone)]
pub struct ServedMerchant(pub String);

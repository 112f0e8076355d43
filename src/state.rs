//! What every handler can reach (`AppState`): the store, the taxonomy snapshot, the cursors, the
//! rate limiter, the settings; and what the layers hand to handlers (`Deadline`) and back
//! (`ServedMerchant`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use arc_swap::ArcSwap;
use tokio::sync::Semaphore;

use crate::body_budget::BodyBudgets;
use crate::config::Settings;
use crate::domain::category::taxonomy::Taxonomy;
use crate::key_verdicts::KeyVerdicts;
use crate::pagination::Cursors;
use crate::rate_limit::shared::Peers;
use crate::rate_limit::{Budget, Sharing};
use crate::search_memory::SearchMemory;
use crate::store::event_signal::EventSignal;
use crate::store::heavy::HeavyWork;
use crate::store::{Store, StoreError};
use crate::webhooks::SystemClock;
use crate::webhooks::by_hand::ByHand;
use crate::webhooks::places::Places;
use crate::webhooks::send::Sender;

/// When a request's store work must be done by: a margin before its time cap, so that a write
/// begun in time is committed before the request is answered 500.
#[derive(Clone, Copy, Debug)]
pub struct Deadline(pub Instant);

/// When a request's body must have arrived by, and the longest pause allowed between its parts
/// (408 otherwise): the request's time cap, less the margin its 408 needs.
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
    /// Buyers' searches, from the merchants' indexes in memory where they are held.
    pub search: Arc<SearchMemory>,
    /// The current taxonomy snapshot, swapped whole when the stored one changes.
    pub taxonomy: ArcSwap<Taxonomy>,
    pub cursors: Cursors,
    /// The merchants' budgets: of their full keys, and of their storefront keys,
    /// shared with the other instances on the database where it has them.
    pub limits: Budget,
    pub storefront_limits: Budget,
    /// Where the budgets are shared (none: they are this instance's own), and this instance's
    /// name among those sharing them.
    pub sharing: Option<Sharing>,
    pub instance: String,
    /// Presented keys' verdicts and client addresses' 401 budgets.
    pub keys: KeyVerdicts,
    pub in_flight: Arc<Semaphore>,
    /// The memory set aside for request bodies and their parsed forms.
    pub bodies: BodyBudgets,
    /// Where feed requests wait for their merchant's next event.
    pub events: Arc<EventSignal>,
    /// Resends and tests: the delivery worker's transport and places.
    pub by_hand: Arc<ByHand>,
    /// Rung when an import is created here: this instance's runner claims it at once.
    pub imports_wake: Arc<tokio::sync::Notify>,
    /// Turns at the location lists filtered by text: such a list may read much of its merchant's
    /// text index (a text too short to look up, or other conditions that few of its matches
    /// meet), so a merchant's run one at a time, and all merchants' at most one a core (two at
    /// least).
    pub text_turns: HeavyWork,
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
        let sharing = store
            .rate_ledger()
            .filter(|_| settings.shared_rate_budget)
            .map(|ledger| Sharing {
                ledger,
                peers: Arc::new(Peers::default()),
            });
        let limits = Budget::new("merchant", settings.rate, settings.burst, sharing.as_ref());
        let storefront_limits = Budget::new(
            "storefront",
            settings.storefront_rate,
            settings.storefront_burst,
            sharing.as_ref(),
        );
        let events = store.event_signal();
        let search = SearchMemory::new(Arc::clone(&store), settings.search_memory);
        Ok(AppState(Arc::new(Services {
            store,
            search,
            taxonomy: ArcSwap::from_pointee(taxonomy),
            cursors,
            limits,
            storefront_limits,
            sharing,
            instance: crate::secret::random::<8>()
                .map(|b| b.iter().map(|b| format!("{b:02x}")).collect())
                .unwrap_or_else(|_| uuid::Uuid::now_v7().simple().to_string()),
            keys: KeyVerdicts::new(settings.auth_failure_rate, settings.auth_failure_burst),
            in_flight: Arc::new(Semaphore::new(settings.max_in_flight)),
            bodies: BodyBudgets::default(),
            events,
            by_hand: Arc::new(ByHand::new(
                Arc::new(Sender::new(settings.webhooks.attempt_timeout)),
                Arc::new(Places::default()),
                Arc::new(SystemClock),
                settings.webhooks.clone(),
            )),
            imports_wake: Arc::default(),
            text_turns: HeavyWork::new(std::thread::available_parallelism().map_or(2, |n| n.get().max(2))),
            settings,
        })))
    }

    /// Tells the other instances this one is alive, and learns how many they are (for the share
    /// each limits on while the shared budgets are unreachable). Nothing where budgets are local.
    pub async fn heartbeat(&self) {
        let Some(sharing) = &self.sharing else { return };
        match tokio::time::timeout(Duration::from_secs(1), sharing.ledger.heartbeat(&self.instance)).await {
            Ok(Ok(alive)) => sharing.peers.seen(alive),
            Ok(Err(e)) => tracing::debug!(error = %e, "heartbeat failed"),
            Err(_) => tracing::debug!("heartbeat timed out"),
        }
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

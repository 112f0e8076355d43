//! The PostgreSQL backend: for deployments where several `storefront serve` instances share one
//! database.
//!
//! **Concurrency.** A merchant's create and change requests are written by a task of that
//! merchant's, in groups (`groups`): the requests that queued while its last transaction was
//! committing go into one transaction that first takes a transaction-level advisory lock on the
//! merchant, each in a savepoint of its own, with one commit (and one fsync) for the group. So a
//! merchant's writes are serialised across every instance: the safe-retry/conflict lookup and the
//! quarantine check see everything committed before and every request before them in the group,
//! and the unique index on `(merchant, merchant_location_id)` stays a backstop that never fires in
//! normal operation. Different merchants never wait for each other.
//!
//! **Round trips.** Inside the lock: one query for the stored rows of all the request's ids, one
//! for the neighbours of all its new items, the decisions in memory (`batch::decide`, which also
//! counts items created earlier in the same request), then the multi-row insert and the counts'
//! update sent together. Every statement of the write path is prepared once per connection
//! (`sql::query`, `sql::execute`): not parsed and planned again at each use, and one round trip, not two.
//!
//! **Recovery.** Connections come from a pool that drops broken ones, so when the database comes
//! back the service recovers without a restart; while it is away, requests fail with a 500.
//!
//! **Replicas.** With `--read-replica`, buyers' searches read on hot standbys within
//! `--replica-max-lag` (`replicas`), everything else on the primary.
//!
//! A file a job: here the pool, the migrations and the trait's plumbing; `groups` the merchants'
//! group commits; `locations`, `changes` and `categories` hold their SQL; `replicas` the standbys;
//! `statistics` the locations table's first statistics on a new database.
//! An operator's approval takes the same merchant lock, in a transaction of its own.

mod categories;
mod changes;
mod events;
mod groups;
mod imports;
mod key_leases;
mod keys;
mod locations;
mod merchants;
mod migrations;
mod pool;
mod rate;
mod redelivery;
mod replicas;
mod search;
mod shared_reads;
mod snapshot;
mod sql;
mod statistics;
mod text;
mod webhooks;

use std::sync::Arc;

use categories::{CATEGORY_COLUMNS, category_of, read_categories, write_categories};
use groups::MerchantGroups;
use pool::pool_of;
use snapshot::snapshot;

use std::time::Duration;

use async_trait::async_trait;
use deadpool_postgres::{GenericClient, Pool};

use super::api::{
    Approval, Imported, KeyRow, MerchantKey, MerchantRef, MerchantRow, NewKey, QuarantinedLocation, ReadFrom, ReadOn,
    ReadReplicas, Store, StoreError, StoredKey, WriteFor,
};
use super::event_signal::EventSignal;
use super::migrate;
use super::pools::Pools;
use super::redelivery_api::RedeliveryStore;
use super::webhook_api::WebhookStore;
use crate::domain::category::Category;
use crate::domain::category::import::{self, Mode, Parsed, Problem};
use crate::domain::category::taxonomy::{self, Taxonomy};
use crate::domain::event::{EventPage, EventQuery};
use crate::domain::location::batch::{NewLocation, Outcome};
use crate::domain::location::change::{ChangePlan, Decision};
use crate::domain::location::listing::{LocationPage, LocationQuery};
use crate::domain::location::search::{SearchPage, SearchQuery};
use crate::rate_limit::shared::Ledger;

/// The migration after which `locations::fill_search` runs.
const SEARCH_MIGRATION: i32 = 5;
/// The migration after which `text::fill` writes every location's text.
const TEXT_MIGRATION: i32 = 17;
/// The longest a session may hold a lock, run a statement or idle in a transaction: a request's
/// time cap. A request's group sets tighter limits for its own transaction.
const SESSION_LIMIT: Duration = Duration::from_secs(30);
const TIMEOUT: Duration = Duration::from_secs(5);
/// The name the service's sessions go by in `pg_stat_activity`.
const SESSIONS: &str = "storefront";
/// The shared rate budgets' connections, and how long one of their statements may take: a
/// request waits no longer for a take (`rate_limit::shared::TAKE_WAIT`).
const LEDGER_POOL_SIZE: usize = 4;
const LEDGER_LIMIT: Duration = crate::rate_limit::shared::TAKE_WAIT;
/// Advisory lock (two-key form, so never equal to a merchant's one-key lock) held by migrations.
const MIGRATION_LOCK: (i32, i32) = (0x5f, 1);
/// Held by category imports, so two imports never interleave.
const IMPORT_LOCK: (i32, i32) = (0x5f, 2);

impl From<tokio_postgres::Error> for StoreError {
    fn from(e: tokio_postgres::Error) -> Self {
        StoreError::backend(e)
    }
}

impl From<deadpool_postgres::PoolError> for StoreError {
    fn from(e: deadpool_postgres::PoolError) -> Self {
        match e {
            deadpool_postgres::PoolError::Timeout(deadpool_postgres::TimeoutType::Wait) => {
                StoreError::Busy(Box::new(e))
            }
            e => StoreError::backend(e),
        }
    }
}

pub struct PgStore {
    pool: Pool,
    /// The shared rate budgets' own few connections, whose statements give up as soon as a
    /// request stops waiting for them: a budget table that cannot be reached never leaves a
    /// request's connection waiting behind one of its statements.
    ledger: Pool,
    groups: MerchantGroups,
    /// The merchants' heavy transactions' turns at the pool.
    heavy: Arc<crate::store::heavy::HeavyWork>,
    /// Where the connection that listens for other instances' events goes.
    config: tokio_postgres::Config,
    /// The hot standbys buyers' searches read from, if any.
    replicas: Option<Arc<replicas::Replicas>>,
    /// Woken after each commit that appended events (`store::group::after_commit`), and by the
    /// other instances' notices.
    events: Arc<EventSignal>,
    /// The keys and origins found lately, and each key's lookups shared by the requests that
    /// present it at the same time.
    key_leases: key_leases::KeyLeases,
}

impl PgStore {
    /// Connects with a pool of `pools.pg_connections` (creating and migrating the schema when
    /// needed), and to `replicas` (a pool each, sized like the primary's, watched from now on; one
    /// that does not answer yet is not read).
    pub async fn open(url: &str, replicas: &ReadReplicas, pools: Pools) -> Result<Self, StoreError> {
        let config: tokio_postgres::Config = url.parse()?;
        let size = pools.pg_connections.max(1);
        let pool = pool_of(config.clone(), SESSIONS, SESSION_LIMIT, size, (TIMEOUT, TIMEOUT))?;
        let ledger = pool_of(
            config.clone(),
            SESSIONS,
            LEDGER_LIMIT,
            LEDGER_POOL_SIZE,
            (LEDGER_LIMIT, TIMEOUT),
        )?;
        let events = Arc::new(EventSignal::default());
        let replica_pools = replicas
            .urls
            .iter()
            .map(|url| {
                let config: tokio_postgres::Config = url.parse()?;
                pool_of(
                    config,
                    SESSIONS,
                    SESSION_LIMIT,
                    size,
                    (replicas::READ_WAIT, replicas::CONNECT_WAIT),
                )
            })
            .collect::<Result<Vec<Pool>, StoreError>>()?;
        let store = PgStore {
            groups: MerchantGroups::new(pool.clone(), pools.pg_writers(), Arc::clone(&events)),
            heavy: Arc::new(crate::store::heavy::HeavyWork::new(pools.pg_heavy())),
            events,
            key_leases: key_leases::KeyLeases::default(),
            pool,
            ledger,
            config,
            replicas: (!replica_pools.is_empty())
                .then(|| Arc::new(replicas::Replicas::new(replica_pools, replicas.max_lag))),
        };
        store.migrate().await?;
        // The statistics' own connection: its count waits behind any lock taken on the table, and
        // would hold one of the requests' connections all the while.
        let own = pool_of(
            store.config.clone(),
            statistics::SESSION,
            SESSION_LIMIT,
            1,
            (TIMEOUT, TIMEOUT),
        )?;
        tokio::spawn(statistics::first_statistics(store.pool.clone(), own));
        if let Some(replicas) = &store.replicas {
            // The watcher's own connection to the primary: its samples never wait behind the
            // requests' pool, however busy.
            let own = pool_of(
                store.config.clone(),
                SESSIONS,
                replicas::CHECK_WAIT,
                1,
                (replicas::CHECK_WAIT, TIMEOUT),
            )?;
            let (replicas, primary) = (Arc::clone(replicas), store.pool.clone());
            tokio::spawn(async move { replicas.watch(primary, own).await });
        }
        Ok(store)
    }

    async fn migrate(&self) -> Result<(), StoreError> {
        let mut client = self.pool.get().await?;
        let tx = client.transaction().await?;
        tx.execute(
            "SELECT pg_advisory_xact_lock($1, $2)",
            &[&MIGRATION_LOCK.0, &MIGRATION_LOCK.1],
        )
        .await?;
        // A migration may rewrite every row: no request's time limits here.
        tx.batch_execute(
            "SET LOCAL statement_timeout = 0; SET LOCAL lock_timeout = 0; \
             CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY)",
        )
        .await?;
        let applied: i32 = tx
            .query_one("SELECT COALESCE(MAX(version), 0) FROM schema_migrations", &[])
            .await?
            .try_get(0)?;
        migrate::refuse_newer(i64::from(applied), migrations::MIGRATIONS.len())?;
        let mut name_neighbours = false;
        for (version, sql) in (1_i32..)
            .zip(migrations::MIGRATIONS)
            .skip(usize::try_from(applied).unwrap_or(0))
        {
            tx.batch_execute(sql).await?;
            if version == migrate::RECORD_MIGRATION as i32 {
                locations::upgrade_records(&tx).await?;
                name_neighbours = true;
            }
            if version == TEXT_MIGRATION {
                text::fill(&tx).await?;
            }
            if version == SEARCH_MIGRATION {
                locations::fill_search(&tx).await?;
            }
            tx.execute("INSERT INTO schema_migrations (version) VALUES ($1)", &[&version])
                .await?;
        }
        // Migration 3's second step searches neighbours, on the index migration 5 made.
        if name_neighbours {
            locations::name_quarantining_neighbours(&tx).await?;
        }
        tx.commit().await?;
        Ok(())
    }
}

/// A snapshot over the categories, and their version in it.
async fn taxonomy_snapshot(
    client: &mut deadpool_postgres::Object,
) -> Result<(deadpool_postgres::Transaction<'_>, i64), StoreError> {
    let tx = snapshot(client).await?;
    let version: i64 = tx
        .query_one("SELECT version FROM taxonomy_version", &[])
        .await?
        .try_get(0)?;
    Ok((tx, version))
}

#[async_trait]
impl Store for PgStore {
    fn delay_next_write(&self, by: std::time::Duration) {
        self.groups.delay.set(by);
    }

    async fn durability(&self) -> Result<Vec<(String, String)>, StoreError> {
        let client = self.pool.get().await?;
        let mut settings = Vec::new();
        for name in ["synchronous_commit", "fsync"] {
            let value: String = client.query_one(&format!("SHOW {name}"), &[]).await?.try_get(0)?;
            settings.push((name.to_owned(), value));
        }
        Ok(settings)
    }

    fn rate_ledger(&self) -> Option<Arc<dyn Ledger>> {
        Some(Arc::new(rate::PgLedger::new(self.ledger.clone())))
    }

    fn webhooks(&self) -> Arc<dyn WebhookStore> {
        Arc::new(webhooks::PgWebhooks {
            pool: self.pool.clone(),
            heavy: Arc::clone(&self.heavy),
        })
    }

    fn redeliveries(&self) -> Arc<dyn RedeliveryStore> {
        Arc::new(webhooks::PgWebhooks {
            pool: self.pool.clone(),
            heavy: Arc::clone(&self.heavy),
        })
    }

    fn search_source(&self) -> Arc<dyn crate::store::search_api::SearchSource> {
        Arc::new(search::PgSearch {
            pool: self.pool.clone(),
            replicas: self.replicas.clone(),
            heads: shared_reads::SharedLookups::default(),
        })
    }

    fn imports(&self) -> Arc<dyn crate::store::import_api::ImportStore> {
        Arc::new(imports::PgImports {
            pool: self.pool.clone(),
            heavy: Arc::clone(&self.heavy),
            signal: Arc::clone(&self.events),
        })
    }

    async fn read_events(&self, query: EventQuery) -> Result<EventPage, StoreError> {
        events::page(&self.pool, &query).await
    }

    async fn prune_events(&self, cutoff_ms: i64) -> Result<usize, StoreError> {
        events::prune(&self.pool, cutoff_ms).await
    }

    fn event_signal(&self) -> Arc<EventSignal> {
        Arc::clone(&self.events)
    }

    async fn follow_events(&self, signal: Arc<EventSignal>) {
        events::follow(self.config.clone(), signal).await;
    }

    async fn ping(&self) -> Result<(), StoreError> {
        let client = self.pool.get().await?;
        client.simple_query("SELECT 1").await?;
        Ok(())
    }

    async fn create_merchant(&self, name: &str) -> Result<MerchantRef, StoreError> {
        merchants::create(&self.pool, name).await
    }

    async fn merchant_count(&self) -> Result<u64, StoreError> {
        merchants::count(&self.pool).await
    }

    async fn list_merchants(&self) -> Result<Vec<MerchantRow>, StoreError> {
        merchants::list(&self.pool).await
    }

    async fn list_keys(&self, merchant_id: &str) -> Result<Option<Vec<KeyRow>>, StoreError> {
        keys::keys_of(&self.pool, merchant_id).await
    }

    async fn insert_key(&self, key: NewKey) -> Result<Option<KeyRow>, StoreError> {
        keys::insert(&self.pool, key).await
    }

    async fn key_page(
        &self,
        merchant_pk: i64,
        after: Option<(i64, String)>,
        limit: usize,
    ) -> Result<Vec<KeyRow>, StoreError> {
        keys::page(&self.pool, merchant_pk, after, limit).await
    }

    async fn revoke_key(&self, key_id: &str) -> Result<bool, StoreError> {
        let changed = keys::revoke(&self.pool, key_id).await?;
        // Unknown or revoked before: either way its answer says the key is refused.
        self.key_leases.revoked(key_id).await;
        Ok(changed)
    }

    async fn revoke_merchant_key(&self, merchant_pk: i64, key_id: &str) -> Result<MerchantKey, StoreError> {
        let answer = keys::revoke_of(&self.pool, merchant_pk, key_id).await?;
        if let MerchantKey::Revoked(_) = answer {
            self.key_leases.revoked(key_id).await;
        }
        Ok(answer)
    }

    async fn origin_allowed(&self, origin: &str) -> Result<bool, StoreError> {
        self.key_leases
            .origin(origin, keys::origin_named(&self.pool, origin))
            .await
    }

    async fn find_key(&self, key_id: &str) -> Result<Option<StoredKey>, StoreError> {
        self.key_leases.key(key_id, || keys::lookup(&self.pool, key_id)).await
    }

    async fn create_locations(&self, to: WriteFor<'_>, items: Vec<NewLocation>) -> Result<Vec<Outcome>, StoreError> {
        self.groups.create(to.merchant.pk, items, to.persist, to.deadline).await
    }

    async fn change_locations(&self, to: WriteFor<'_>, plan: ChangePlan) -> Result<Decision, StoreError> {
        self.groups.change(to.merchant.pk, plan, to.persist, to.deadline).await
    }

    async fn quarantined_locations(&self) -> Result<Vec<QuarantinedLocation>, StoreError> {
        changes::quarantined_locations(&self.pool).await
    }

    async fn approve_location(&self, location_id: &str) -> Result<Approval, StoreError> {
        match changes::merchant_of(&self.pool, location_id).await? {
            Some(merchant_pk) => self.groups.approve(merchant_pk, location_id).await,
            None => Ok(Approval::NotFound),
        }
    }

    async fn list_locations(&self, query: LocationQuery) -> Result<LocationPage, StoreError> {
        locations::list_locations(&self.pool, query).await
    }

    async fn search_locations(&self, query: SearchQuery, from: ReadFrom) -> Result<SearchPage, StoreError> {
        if let (ReadFrom::Replica, Some(replicas)) = (from, &self.replicas)
            && let Some(page) = replicas.read(|pool| search::search(pool, &query)).await
        {
            ReadOn::Replica.count();
            return Ok(page);
        }
        let page = search::search(&self.pool, &query).await?;
        ReadOn::Primary.count();
        Ok(page)
    }

    async fn cursor_secret(&self) -> Result<[u8; 32], StoreError> {
        let fresh: [u8; 32] = crate::secret::random().map_err(StoreError::backend)?;
        let client = self.pool.get().await?;
        client
            .execute(
                "INSERT INTO meta (key, value) VALUES ('cursor_secret', $1) ON CONFLICT (key) DO NOTHING",
                &[&&fresh[..]],
            )
            .await?;
        let stored: Vec<u8> = client
            .query_one("SELECT value FROM meta WHERE key = 'cursor_secret'", &[])
            .await?
            .try_get(0)?;
        stored
            .try_into()
            .map_err(|_| StoreError::corrupt("cursor secret", "of the wrong length"))
    }

    async fn taxonomy_version(&self) -> Result<i64, StoreError> {
        let client = self.pool.get().await?;
        Ok(client
            .query_one("SELECT version FROM taxonomy_version", &[])
            .await?
            .try_get(0)?)
    }

    async fn load_taxonomy(&self) -> Result<Taxonomy, StoreError> {
        let mut client = self.pool.get().await?;
        let (tx, version) = taxonomy_snapshot(&mut client).await?;
        let mut builder = taxonomy::Builder::new(version);
        let rows = tx
            .query_raw(
                // In list order, so the snapshot's JSON arena is laid out as pages read it (see
                // the SQLite store's `for_each_category`).
                &format!("SELECT {CATEGORY_COLUMNS} FROM categories ORDER BY sort_order NULLS LAST, id COLLATE \"C\""),
                std::iter::empty::<i32>(),
            )
            .await?;
        futures_util::pin_mut!(rows);
        while let Some(row) = futures_util::TryStreamExt::try_next(&mut rows).await? {
            builder.push(category_of(&row)?);
        }
        tx.commit().await?;
        tokio::task::spawn_blocking(move || builder.finish())
            .await
            .map_err(StoreError::backend)
    }

    async fn load_categories(&self) -> Result<(i64, Vec<Category>), StoreError> {
        let mut client = self.pool.get().await?;
        let (tx, version) = taxonomy_snapshot(&mut client).await?;
        let categories = read_categories(&tx).await?;
        tx.commit().await?;
        Ok((version, categories))
    }

    async fn import_categories(
        &self,
        parsed: Parsed,
        mode: Mode,
    ) -> Result<Result<Imported, Vec<Problem>>, StoreError> {
        let mut client = self.pool.get().await?;
        let tx = client.transaction().await?;
        // An import replaces a whole taxonomy: no request's time limits here.
        tx.batch_execute("SET LOCAL statement_timeout = 0; SET LOCAL lock_timeout = 0")
            .await?;
        tx.execute(
            "SELECT pg_advisory_xact_lock($1, $2)",
            &[&IMPORT_LOCK.0, &IMPORT_LOCK.1],
        )
        .await?;
        let count = parsed.records.len();
        let stored = match mode {
            Mode::Upsert => read_categories(&tx).await?,
            Mode::Replace => Vec::new(),
        };
        let written: std::collections::HashSet<String> = parsed.records.iter().map(|r| r.category.id.clone()).collect();
        let set = match import::merge(stored, parsed, mode) {
            Ok(set) => set,
            Err(problems) => return Ok(Err(problems)),
        };
        if mode == Mode::Replace {
            tx.execute("DELETE FROM categories", &[]).await?;
        }
        let changed: Vec<&Category> = set.iter().filter(|c| written.contains(&c.id)).collect();
        for chunk in changed.chunks(10_000) {
            write_categories(&tx, chunk).await?;
        }
        let version: i64 = tx
            .query_one(
                "UPDATE taxonomy_version SET version = version + 1 RETURNING version",
                &[],
            )
            .await?
            .try_get(0)?;
        tx.commit().await?;
        Ok(Ok(Imported {
            records: count,
            total: set.len(),
            version,
        }))
    }

    async fn close(&self) {
        self.pool.close();
        if let Some(replicas) = &self.replicas {
            replicas.close();
        }
    }
}

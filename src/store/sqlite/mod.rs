//! The SQLite backend: the embedded default.
//!
//! **One writer thread.** SQLite admits one writer at a time, so all writes go through a single
//! thread that owns the write connection. Create requests that queue up while a commit is in
//! flight are committed together (*group commit*): one `BEGIN IMMEDIATE … COMMIT`, one fsync,
//! many requests, each inside its own savepoint so a failure of one request rolls back only that
//! request. Every request is answered only after the commit that holds it returned, so with
//! `synchronous=FULL` an answered create is on disk. Being the only writer also serialises the
//! quarantine check with the inserts it depends on.
//!
//! **Readers** (key lookups, health checks, list pages) use a small pool of read-only connections
//! on blocking threads; WAL lets them run beside the writer.
//!
//! Other processes (the CLI) may write to the same file; `busy_timeout` makes them wait their turn.
//!
//! A file a job: `writer` (the thread and its group commit), `checkpoint` (WAL checkpoints off the
//! writer's path), `readers`, `keys` (the key cache), `schema` (opening and migrating), `room`
//! (the disk's free room, for readiness), `locations`, `changes` and `categories` (their SQL).

mod categories;
mod changes;
mod checkpoint;
mod column;
mod dry_run;
mod events;
mod import_batch;
mod imports;
mod keys;
mod locations;
mod merchants;
mod readers;
mod redelivery;
mod room;
mod schema;
mod search;
mod text;
mod version;
mod webhooks;
mod writer;

use crate::store::event_signal::EventSignal;
use crate::store::group::Written;
use crate::store::heavy::HeavyWork;
use categories::{for_each_category, read_categories, taxonomy_version, write_category};
use checkpoint::Checkpointer;
use keys::KeyCache;
use readers::ReadPool;
use schema::open_writer;
use writer::{Job, Jobs, WriterHealth, sender, write, writer_loop};

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use async_trait::async_trait;
use rusqlite::Connection;
use tokio::sync::{mpsc, oneshot};

use super::api::{
    Approval, Imported, KeyRow, MerchantKey, MerchantRef, MerchantRow, NewKey, QuarantinedLocation, ReadFrom, ReadOn,
    Store, StoreError, StoredKey, WriteFor, now_ms,
};
use crate::domain::category::Category;
use crate::domain::category::import::{self, Mode, Parsed, Problem};
use crate::domain::category::taxonomy::{self, Taxonomy};
use crate::domain::event::{EventPage, EventQuery};
use crate::domain::location::batch::{NewLocation, Outcome};
use crate::domain::location::change::{ChangePlan, Decision};
use crate::domain::location::listing::{LocationPage, LocationQuery};
use crate::domain::location::search::{SearchPage, SearchQuery};
use crate::store::redelivery_api::RedeliveryStore;
use crate::store::webhook_api::WebhookStore;

pub struct SqliteStore {
    jobs: Jobs,
    writer: Mutex<Option<JoinHandle<()>>>,
    readers: Arc<ReadPool>,
    health: Arc<WriterHealth>,
    /// The database's version, by which what was read at it is kept.
    version: Arc<version::DbVersion>,
    keys: KeyCache,
    checkpointer: Mutex<Option<Checkpointer>>,
    /// Woken after each commit that appended events (`store::group::after_commit`).
    events: Arc<EventSignal>,
    /// One writer: one heavy transaction at a time, merchants taking turns.
    heavy: Arc<HeavyWork>,
    /// The database file's directory, whose free room readiness weighs after a failed write.
    directory: PathBuf,
}

/// Most writes queued for the one writer thread; a request past it waits (within its deadline)
/// for a place. A SQLite file has one writer whatever the cores, so this bounds memory (a queued
/// create holds its parsed items), not parallelism: 1,024 is many groups of `MAX_GROUP` ahead.
const QUEUED_WRITES: usize = 1024;

impl SqliteStore {
    /// The webhook tables' SQL, on the writer and the read connections.
    fn webhook_sql(&self) -> webhooks::SqliteWebhooks {
        webhooks::SqliteWebhooks {
            jobs: Arc::clone(&self.jobs),
            readers: Arc::clone(&self.readers),
            heavy: Arc::clone(&self.heavy),
        }
    }

    /// Opens the database file with as many readers as the machine's cores suggest
    /// (`store::Pools`).
    pub async fn open(path: &Path) -> Result<Self, StoreError> {
        Self::open_sized(path, super::pools::Pools::default().readers).await
    }

    /// Opens the database file, creating and migrating it when needed, and starts the writer;
    /// at most `readers` reads run at once.
    pub async fn open_sized(path: &Path, readers: usize) -> Result<Self, StoreError> {
        let path = path.to_path_buf();
        let conn = tokio::task::spawn_blocking({
            let path = path.clone();
            move || open_writer(&path)
        })
        .await
        .map_err(StoreError::backend)??;
        let (tx, rx) = mpsc::channel(QUEUED_WRITES);
        let health = Arc::new(WriterHealth::default());
        let writer_health = Arc::clone(&health);
        let events = Arc::new(EventSignal::default());
        let signal = Arc::clone(&events);
        let writer = std::thread::Builder::new()
            .name("sqlite-writer".into())
            .spawn(move || writer_loop(conn, rx, &writer_health, &signal))
            .map_err(StoreError::backend)?;
        let checkpointer = Checkpointer::spawn(&path)?;
        let directory = room::directory_of(&path);
        // After `open_writer`: the database is in WAL mode and its `-shm` file exists.
        let version = Arc::new(version::DbVersion::new(&path));
        Ok(SqliteStore {
            jobs: Arc::new(Mutex::new(Some(tx))),
            writer: Mutex::new(Some(writer)),
            checkpointer: Mutex::new(Some(checkpointer)),
            events,
            version: Arc::clone(&version),
            keys: KeyCache::new(version),
            readers: Arc::new(ReadPool::new(path, readers)),
            health,
            heavy: Arc::new(HeavyWork::new(1)),
            directory,
        })
    }

    /// The unrevoked key with this id, read from the database.
    async fn lookup_key(&self, key_id: &str) -> Result<Option<StoredKey>, StoreError> {
        let key_id = key_id.to_owned();
        self.readers.read(move |c| keys::lookup(c, &key_id)).await
    }

    /// Test hook (a failpoint, in debug builds only): the `k`-th location insert from now on fails, as a full disk
    /// would make it; `None` disarms it. Used to prove a failure leaves nothing half-stored.
    #[doc(hidden)]
    pub fn fail_after_inserts(&self, k: Option<u64>) {
        self.health.failpoint.store(k.map_or(0, |k| k + 1), Ordering::SeqCst);
    }

    fn sender(&self) -> Result<mpsc::Sender<Job>, StoreError> {
        sender(&self.jobs)
    }

    /// Runs the write `work` of `to`'s merchant on the writer thread in the next group commit
    /// (kept, or rolled back after it ran when `to.persist` says so); its result once committed.
    /// Not begun after `to.deadline`.
    async fn grouped<T: Send + 'static>(
        &self,
        to: WriteFor<'_>,
        work: impl FnOnce(&Connection, &WriterHealth) -> Result<Written<T>, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let (reply, answer) = oneshot::channel();
        let job = writer::grouped(to.merchant.pk, to.deadline, to.persist, Box::new(work), reply);
        self.sender()?.send(job).await.map_err(|_| StoreError::Unavailable)?;
        answer.await.map_err(|_| StoreError::Unavailable)?
    }

    /// Runs `f` on the writer thread, in a transaction of its own.
    async fn write<T: Send + 'static>(
        &self,
        f: impl FnOnce(&rusqlite::Transaction<'_>) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        write(&self.jobs, f).await
    }
}

impl From<rusqlite::types::FromSqlError> for StoreError {
    fn from(e: rusqlite::types::FromSqlError) -> Self {
        StoreError::backend(e)
    }
}

impl From<rusqlite::Error> for StoreError {
    fn from(e: rusqlite::Error) -> Self {
        StoreError::backend(e)
    }
}

#[async_trait]
impl Store for SqliteStore {
    fn delay_next_write(&self, by: std::time::Duration) {
        self.health.delay.set(by);
    }

    async fn durability(&self) -> Result<Vec<(String, String)>, StoreError> {
        self.write(|tx| {
            let mode: String = tx.query_row("PRAGMA journal_mode", [], |r| r.get(0))?;
            let level: i64 = tx.query_row("PRAGMA synchronous", [], |r| r.get(0))?;
            let level = ["OFF", "NORMAL", "FULL", "EXTRA"]
                .get(usize::try_from(level).unwrap_or(usize::MAX))
                .map_or_else(|| level.to_string(), |s| (*s).to_owned());
            Ok(vec![
                ("journal_mode".to_owned(), mode),
                ("synchronous".to_owned(), level),
            ])
        })
        .await
    }

    async fn ping(&self) -> Result<(), StoreError> {
        self.readers
            .read(|c| Ok(c.query_row("SELECT count(*) FROM meta", [], |r| r.get::<_, i64>(0))?))
            .await?;
        if self.health.write_failed.load(Ordering::SeqCst) {
            // Writes failed last time: ready only once the disk has room again and a write commits.
            let dir = self.directory.clone();
            tokio::task::spawn_blocking(move || room::require_room(&dir))
                .await
                .map_err(StoreError::backend)??;
            self.write(|tx| {
                tx.execute(
                    "INSERT INTO meta (key, value) VALUES ('write_probe', ?1) \
                     ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                    [now_ms()],
                )?;
                Ok(())
            })
            .await?;
            self.health.write_failed.store(false, Ordering::SeqCst);
        }
        Ok(())
    }

    async fn create_merchant(&self, name: &str) -> Result<MerchantRef, StoreError> {
        let name = name.to_owned();
        self.write(move |tx| merchants::create(tx, &name)).await
    }

    async fn merchant_count(&self) -> Result<u64, StoreError> {
        self.readers.read(merchants::count).await
    }

    async fn list_merchants(&self) -> Result<Vec<MerchantRow>, StoreError> {
        self.readers.read(merchants::list).await
    }

    async fn list_keys(&self, merchant_id: &str) -> Result<Option<Vec<KeyRow>>, StoreError> {
        let merchant_id = merchant_id.to_owned();
        self.readers.snapshot(move |c| keys::keys_of(c, &merchant_id)).await
    }

    async fn insert_key(&self, key: NewKey) -> Result<Option<KeyRow>, StoreError> {
        self.write(move |tx| keys::insert(tx, &key, now_ms())).await
    }

    async fn key_page(
        &self,
        merchant_pk: i64,
        after: Option<(i64, String)>,
        limit: usize,
    ) -> Result<Vec<KeyRow>, StoreError> {
        self.readers
            .read(move |c| keys::page(c, merchant_pk, after, limit))
            .await
    }

    async fn revoke_key(&self, key_id: &str) -> Result<bool, StoreError> {
        let key_id = key_id.to_owned();
        self.write(move |tx| keys::revoke(tx, &key_id, now_ms())).await
    }

    async fn revoke_merchant_key(&self, merchant_pk: i64, key_id: &str) -> Result<MerchantKey, StoreError> {
        let key_id = key_id.to_owned();
        self.write(move |tx| keys::revoke_of(tx, merchant_pk, &key_id, now_ms()))
            .await
    }

    async fn origin_allowed(&self, origin: &str) -> Result<bool, StoreError> {
        // As with keys: read the version first, so that a change after it is seen next time.
        let version = self.keys.version();
        if let Some(version) = version
            && let Some(named) = self.keys.origin(origin, version)
        {
            return Ok(named);
        }
        let asked = origin.to_owned();
        let named = self.readers.read(move |c| keys::origin_named(c, &asked)).await?;
        if let Some(version) = version {
            self.keys.put_origin(origin, version, named);
        }
        Ok(named)
    }

    async fn find_key(&self, key_id: &str) -> Result<Option<StoredKey>, StoreError> {
        // The version is read before the lookup: a change committed after it makes the cached
        // entry stale at the next request; it never hides a revocation.
        let version = self.keys.version();
        if let Some(version) = version
            && let Some(key) = self.keys.get(key_id, version)
        {
            return Ok(Some(key));
        }
        let found = self.lookup_key(key_id).await?;
        if let (Some(version), Some(key)) = (version, &found) {
            self.keys.put(key_id, version, key.clone());
        }
        Ok(found)
    }

    async fn change_locations(&self, to: WriteFor<'_>, plan: ChangePlan) -> Result<Decision, StoreError> {
        let merchant_pk = to.merchant.pk;
        self.grouped(to, move |tx, _| changes::change_in_tx(tx, merchant_pk, plan))
            .await
    }

    fn webhooks(&self) -> Arc<dyn WebhookStore> {
        Arc::new(self.webhook_sql())
    }

    fn redeliveries(&self) -> Arc<dyn RedeliveryStore> {
        Arc::new(self.webhook_sql())
    }

    fn search_source(&self) -> Arc<dyn crate::store::search_api::SearchSource> {
        Arc::new(search::SqliteSearch {
            readers: Arc::clone(&self.readers),
            version: Arc::clone(&self.version),
            heads: version::AtVersion::new(search::HEADS_KEPT),
        })
    }

    fn imports(&self) -> Arc<dyn crate::store::import_api::ImportStore> {
        Arc::new(imports::SqliteImports {
            jobs: Arc::clone(&self.jobs),
            readers: Arc::clone(&self.readers),
            heavy: Arc::clone(&self.heavy),
            health: Arc::clone(&self.health),
            signal: Arc::clone(&self.events),
        })
    }

    async fn read_events(&self, query: EventQuery) -> Result<EventPage, StoreError> {
        self.readers.snapshot(move |tx| events::page(tx, &query)).await
    }

    async fn prune_events(&self, cutoff_ms: i64) -> Result<usize, StoreError> {
        self.write(move |tx| events::prune(tx, cutoff_ms)).await
    }

    async fn quarantined_locations(&self) -> Result<Vec<QuarantinedLocation>, StoreError> {
        self.readers.read(changes::quarantined).await
    }

    fn event_signal(&self) -> Arc<EventSignal> {
        Arc::clone(&self.events)
    }

    async fn approve_location(&self, location_id: &str) -> Result<Approval, StoreError> {
        let id = location_id.to_owned();
        let Some(merchant_pk) = self.readers.read(move |c| changes::merchant_of(c, &id)).await? else {
            return Ok(Approval::NotFound);
        };
        // In the merchant's group, like every other change: its event appended and counted, its
        // feeds woken, by the group's after-commit step.
        let id = location_id.to_owned();
        let deadline = std::time::Instant::now() + crate::store::group::OPERATOR_DEADLINE;
        let (reply, answer) = oneshot::channel();
        let work = move |tx: &Connection, _: &WriterHealth| changes::approve(tx, merchant_pk, &id);
        let job = writer::grouped(
            merchant_pk,
            deadline,
            crate::domain::location::Persist::Commit,
            Box::new(work),
            reply,
        );
        self.sender()?.send(job).await.map_err(|_| StoreError::Unavailable)?;
        answer.await.map_err(|_| StoreError::Unavailable)?
    }

    async fn list_locations(&self, query: LocationQuery) -> Result<LocationPage, StoreError> {
        // One read transaction: the total, the page and its records see one state.
        self.readers.snapshot(move |tx| locations::list(tx, query)).await
    }

    async fn search_locations(&self, query: SearchQuery, _: ReadFrom) -> Result<SearchPage, StoreError> {
        let page = self.readers.snapshot(move |tx| search::search(tx, &query)).await?;
        ReadOn::Primary.count();
        Ok(page)
    }

    async fn cursor_secret(&self) -> Result<[u8; 32], StoreError> {
        let fresh: [u8; 32] = crate::secret::random().map_err(StoreError::backend)?;
        self.write(move |tx| {
            tx.execute(
                "INSERT INTO meta (key, value) VALUES ('cursor_secret', ?1) ON CONFLICT (key) DO NOTHING",
                [&fresh[..]],
            )?;
            let stored: Vec<u8> =
                tx.query_row("SELECT value FROM meta WHERE key = 'cursor_secret'", [], |r| r.get(0))?;
            stored
                .try_into()
                .map_err(|_| StoreError::corrupt("cursor secret", "of the wrong length"))
        })
        .await
    }

    async fn taxonomy_version(&self) -> Result<i64, StoreError> {
        self.readers.read(taxonomy_version).await
    }

    async fn load_taxonomy(&self) -> Result<Taxonomy, StoreError> {
        self.readers
            .snapshot(|tx| {
                let mut builder = taxonomy::Builder::new(taxonomy_version(tx)?);
                for_each_category(tx, |category| builder.push(category))?;
                Ok(builder.finish())
            })
            .await
    }

    async fn load_categories(&self) -> Result<(i64, Vec<Category>), StoreError> {
        self.readers
            .snapshot(|tx| {
                let version = taxonomy_version(tx)?;
                let categories = read_categories(tx)?;
                Ok((version, categories))
            })
            .await
    }

    async fn import_categories(
        &self,
        parsed: Parsed,
        mode: Mode,
    ) -> Result<Result<Imported, Vec<Problem>>, StoreError> {
        self.write(move |tx| {
            let count = parsed.records.len();
            let stored = match mode {
                Mode::Upsert => read_categories(tx)?,
                Mode::Replace => Vec::new(),
            };
            let written: HashSet<String> = parsed.records.iter().map(|r| r.category.id.clone()).collect();
            let set = match import::merge(stored, parsed, mode) {
                Ok(set) => set,
                Err(problems) => return Ok(Err(problems)),
            };
            if mode == Mode::Replace {
                tx.execute("DELETE FROM categories", [])?;
            }
            for category in set.iter().filter(|c| written.contains(&c.id)) {
                write_category(tx, category)?;
            }
            tx.execute("UPDATE meta SET value = value + 1 WHERE key = 'taxonomy_version'", [])?;
            Ok(Ok(Imported {
                records: count,
                total: set.len(),
                version: taxonomy_version(tx)?,
            }))
        })
        .await
    }

    async fn create_locations(&self, to: WriteFor<'_>, items: Vec<NewLocation>) -> Result<Vec<Outcome>, StoreError> {
        if items.is_empty() {
            return Ok(Vec::new());
        }
        let merchant_pk = to.merchant.pk;
        self.grouped(to, move |tx, health| {
            locations::create_in_tx(tx, merchant_pk, &items, &health.failpoint)
        })
        .await
    }

    async fn close(&self) {
        self.readers.close();
        let checkpointer = self.checkpointer.lock().ok().and_then(|mut c| c.take());
        if let Some(checkpointer) = checkpointer {
            let _ = tokio::task::spawn_blocking(move || checkpointer.stop()).await;
        }
        // Dropping the last sender lets the writer finish what is queued, then stop.
        if let Ok(mut jobs) = self.jobs.lock() {
            jobs.take();
        }
        let writer = self.writer.lock().ok().and_then(|mut w| w.take());
        if let Some(writer) = writer {
            let _ = tokio::task::spawn_blocking(move || writer.join()).await;
        }
    }
}

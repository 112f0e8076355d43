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
//! **Readers** (key lookups, health checks) use a small pool of read-only connections on blocking
//! threads; WAL lets them run beside the writer.
//!
//! Other processes (the CLI) may write to the same file; `busy_timeout` makes them wait their turn.

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use rusqlite::{Connection, OpenFlags, OptionalExtension, TransactionBehavior, params};
use tokio::sync::{mpsc, oneshot};

use super::api::{Imported, MerchantRef, Store, StoreError, StoredKey, now_ms};
use super::migrate;
use crate::domain::category::import::{self, Mode, Parsed, Problem};
use crate::domain::category::taxonomy::{self, Taxonomy};
use crate::domain::category::{Category, CategoryStatus};
use crate::domain::geo::{self, Neighbour, QUARANTINE_RADIUS_M};
use crate::domain::location::batch::{self, NewLocation, Outcome, Stored};
use crate::domain::location::listing::{self, Candidate, Group, LocationFilter, LocationPage, LocationQuery, PageKeys};
use crate::domain::location::record::StoredRecord;
use crate::domain::location::{Status, TypeSet};

const MIGRATIONS: &[&str] = &[
    include_str!("../../migrations/sqlite/0001_init.sql"),
    include_str!("../../migrations/sqlite/0002_categories.sql"),
    include_str!("../../migrations/sqlite/0003_location_records.sql"),
];
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);
/// Most create requests committed together.
const MAX_GROUP: usize = 64;
const IDLE_READERS: usize = 8;

type Reply<T> = oneshot::Sender<Result<T, StoreError>>;

enum Job {
    Create(CreateJob),
    /// Any other write, run alone in its own transaction by the closure.
    Run(Box<dyn FnOnce(&mut Connection) + Send>),
}

pub struct SqliteStore {
    jobs: Mutex<Option<mpsc::Sender<Job>>>,
    writer: Mutex<Option<JoinHandle<()>>>,
    readers: Arc<ReadPool>,
    health: Arc<WriterHealth>,
    keys: KeyCache,
}

/// Verified API keys, each with the version of the database it was read at.
///
/// The version changes whenever any connection (the writer thread, a CLI process revoking a key)
/// commits. A key is served from here only while the version it was read at is still current, so
/// a revocation is seen by the next request; under write load entries simply go stale and keys
/// are looked up again. Only found keys are kept, at most `MAX_CACHED_KEYS` of them, so unknown
/// keys cannot grow it.
///
/// The version is read, in order of preference:
/// - from the WAL-index header, the first bytes of the `-shm` file, with one `pread` and no lock:
///   SQLite rewrites it at every commit of every process (its `iChange` counter goes up by one,
///   with the frame count and checksums), and every process sharing the database maps that very
///   file (on Linux a `pread` sees what they wrote there). The header is kept twice; while a
///   commit is writing it the copies differ, and then this source gives no answer. The server's
///   own connections keep the `-shm` file in place for as long as it runs.
/// - else from `PRAGMA data_version` on a connection of its own (a read transaction: shared-memory
///   locks, a few µs).
struct KeyCache {
    shm: Option<File>,
    watch: Mutex<Option<Connection>>,
    path: PathBuf,
    entries: Mutex<HashMap<String, (Version, StoredKey)>>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Version {
    /// One copy of the 48-byte WAL-index header.
    WalIndex([u8; WAL_INDEX_HEADER]),
    DataVersion(i64),
}

const WAL_INDEX_HEADER: usize = 48;
const MAX_CACHED_KEYS: usize = 10_000;

impl KeyCache {
    fn new(path: &Path) -> KeyCache {
        let mut shm = path.as_os_str().to_owned();
        shm.push("-shm");
        KeyCache {
            shm: File::open(shm).ok(),
            watch: Mutex::new(None),
            path: path.to_path_buf(),
            entries: Mutex::new(HashMap::new()),
        }
    }

    fn version(&self) -> Option<Version> {
        self.wal_index().or_else(|| self.data_version())
    }

    fn wal_index(&self) -> Option<Version> {
        let mut both = [0u8; 2 * WAL_INDEX_HEADER];
        self.shm.as_ref()?.read_exact_at(&mut both, 0).ok()?;
        let (first, second) = both.split_at(WAL_INDEX_HEADER);
        // `isInit` (byte 12) is set once the header is valid.
        if first != second || first[12] != 1 {
            return None;
        }
        first.try_into().ok().map(Version::WalIndex)
    }

    fn data_version(&self) -> Option<Version> {
        let mut watch = self.watch.lock().ok()?;
        if watch.is_none() {
            let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
            *watch = Connection::open_with_flags(&self.path, flags).ok();
        }
        let version = watch
            .as_ref()?
            .prepare_cached("PRAGMA data_version")
            .and_then(|mut stmt| stmt.query_row([], |r| r.get(0)));
        if version.is_err() {
            // Reopen next time: the file may be unreachable for now.
            *watch = None;
        }
        version.ok().map(Version::DataVersion)
    }

    fn get(&self, key_id: &str, version: Version) -> Option<StoredKey> {
        let entries = self.entries.lock().ok()?;
        entries
            .get(key_id)
            .filter(|(v, _)| *v == version)
            .map(|(_, key)| key.clone())
    }

    fn put(&self, key_id: &str, version: Version, key: StoredKey) {
        if let Ok(mut entries) = self.entries.lock() {
            if entries.len() >= MAX_CACHED_KEYS {
                entries.clear();
            }
            entries.insert(key_id.to_owned(), (version, key));
        }
    }
}

/// What the writer thread shares with the rest of the store.
#[derive(Debug, Default)]
struct WriterHealth {
    /// The last create group failed to commit (disk full, read-only, I/O error): `ping` then
    /// proves writes work again before it reports ready.
    write_failed: AtomicBool,
    /// Test hook: when non-zero, the insert that brings it to 1 fails (see `fail_after_inserts`).
    failpoint: AtomicU64,
}

impl SqliteStore {
    /// Opens the database file, creating and migrating it when needed, and starts the writer.
    pub async fn open(path: &Path) -> Result<Self, StoreError> {
        let path = path.to_path_buf();
        let conn = tokio::task::spawn_blocking({
            let path = path.clone();
            move || open_writer(&path)
        })
        .await
        .map_err(StoreError::backend)??;
        let (tx, rx) = mpsc::channel(1024);
        let health = Arc::new(WriterHealth::default());
        let writer_health = Arc::clone(&health);
        let writer = std::thread::Builder::new()
            .name("sqlite-writer".into())
            .spawn(move || writer_loop(conn, rx, &writer_health))
            .map_err(StoreError::backend)?;
        Ok(SqliteStore {
            jobs: Mutex::new(Some(tx)),
            writer: Mutex::new(Some(writer)),
            // After `open_writer`: the database is in WAL mode and its `-shm` file exists.
            keys: KeyCache::new(&path),
            readers: Arc::new(ReadPool {
                path,
                idle: Mutex::new(Vec::new()),
            }),
            health,
        })
    }

    /// The unrevoked key with this id, read from the database.
    async fn lookup_key(&self, key_id: &str) -> Result<Option<StoredKey>, StoreError> {
        let key_id = key_id.to_owned();
        self.readers
            .read(move |c| {
                let row = c
                    .prepare_cached(
                        "SELECT m.pk, m.id, k.secret_hash FROM api_keys k JOIN merchants m ON m.pk = k.merchant_pk \
                         WHERE k.key_id = ?1 AND k.revoked_at IS NULL",
                    )?
                    .query_row([&key_id], |r| Ok((r.get(0)?, r.get(1)?, r.get::<_, Vec<u8>>(2)?)))
                    .optional()?;
                Ok(row.and_then(|(pk, id, hash)| {
                    Some(StoredKey {
                        merchant: MerchantRef { pk, id },
                        secret_hash: hash.try_into().ok()?,
                    })
                }))
            })
            .await
    }

    /// Test hook (a failpoint): the `k`-th location insert from now on fails, as a full disk
    /// would make it; `None` disarms it. Used to prove a failure leaves nothing half-stored.
    #[doc(hidden)]
    pub fn fail_after_inserts(&self, k: Option<u64>) {
        self.health.failpoint.store(k.map_or(0, |k| k + 1), Ordering::SeqCst);
    }

    fn sender(&self) -> Result<mpsc::Sender<Job>, StoreError> {
        self.jobs
            .lock()
            .map_err(|_| StoreError::Unavailable)?
            .clone()
            .ok_or(StoreError::Unavailable)
    }

    /// Runs `f` on the writer thread, in a transaction of its own.
    async fn write<T: Send + 'static>(
        &self,
        f: impl FnOnce(&rusqlite::Transaction<'_>) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let (reply, answer) = oneshot::channel();
        let job = Job::Run(Box::new(move |conn: &mut Connection| {
            let result = (|| {
                let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
                let value = f(&tx)?;
                tx.commit()?;
                Ok(value)
            })();
            let _ = reply.send(result);
        }));
        self.sender()?.send(job).await.map_err(|_| StoreError::Unavailable)?;
        answer.await.map_err(|_| StoreError::Unavailable)?
    }
}

fn open_writer(path: &Path) -> Result<Connection, StoreError> {
    let mut conn = Connection::open(path)?;
    conn.busy_timeout(BUSY_TIMEOUT)?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "synchronous", "FULL")?;
    conn.pragma_update(None, "foreign_keys", "ON")?;
    // A group of create requests touches a few MiB of pages: with SQLite's default 2 MiB cache it
    // spills them to the WAL in the middle of the transaction. The savepoint of each request
    // journals the pages it changes; keep that journal in memory rather than in a temp file.
    conn.pragma_update(None, "cache_size", -12 * 1024)?;
    conn.pragma_update(None, "temp_store", "MEMORY")?;
    migrate(&mut conn)?;
    Ok(conn)
}

/// Applies the embedded migrations not yet applied, tracked in `PRAGMA user_version`.
fn migrate(conn: &mut Connection) -> Result<(), StoreError> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let applied: i64 = tx.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    for (version, sql) in (1_i64..).zip(MIGRATIONS).skip(usize::try_from(applied).unwrap_or(0)) {
        tx.execute_batch(sql)?;
        if version == migrate::RECORD_MIGRATION as i64 {
            upgrade_records(&tx)?;
        }
        tx.pragma_update(None, "user_version", version)?;
    }
    tx.commit()?;
    Ok(())
}

fn writer_loop(mut conn: Connection, mut jobs: mpsc::Receiver<Job>, health: &WriterHealth) {
    let mut next = None;
    loop {
        let Some(job) = next.take().or_else(|| jobs.blocking_recv()) else {
            // Closed: fold the WAL into the database file, so that after a clean stop the file is
            // complete on its own (copies and backups of it alone lose nothing).
            if let Err(e) = conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE)") {
                tracing::warn!(error = %e, "WAL checkpoint at close failed");
            }
            return;
        };
        match job {
            Job::Run(f) => {
                // A panic drops the job's reply sender, which its caller sees as `Unavailable`.
                let _ = std::panic::catch_unwind(AssertUnwindSafe(|| f(&mut conn)));
            }
            Job::Create(job) => {
                let mut group = vec![job];
                while group.len() < MAX_GROUP {
                    match jobs.try_recv() {
                        Ok(Job::Create(job)) => group.push(job),
                        Ok(other) => {
                            next = Some(other);
                            break;
                        }
                        Err(_) => break,
                    }
                }
                let _ = std::panic::catch_unwind(AssertUnwindSafe(|| commit_group(&mut conn, group, health)));
            }
        }
    }
}

/// One create request's items, waiting for the writer.
struct CreateJob {
    merchant_pk: i64,
    items: Vec<NewLocation>,
    /// Not begun after this: the request is being answered 500 (or already was).
    deadline: Instant,
    reply: Reply<Vec<Outcome>>,
}

/// Stores several create requests in one transaction, each in its own savepoint, and answers
/// each only after the commit.
fn commit_group(conn: &mut Connection, group: Vec<CreateJob>, health: &WriterHealth) {
    let mut tx = match conn.transaction_with_behavior(TransactionBehavior::Immediate) {
        Ok(tx) => tx,
        Err(e) => {
            health.write_failed.store(true, Ordering::SeqCst);
            let e = Arc::new(e);
            for job in group {
                let _ = job.reply.send(Err(StoreError::backend(SharedError(e.clone()))));
            }
            return;
        }
    };
    let mut answers = Vec::with_capacity(group.len());
    for CreateJob {
        merchant_pk,
        items,
        deadline,
        reply,
    } in group
    {
        if reply.is_closed() || Instant::now() > deadline {
            let _ = reply.send(Err(StoreError::DeadlinePassed));
            continue;
        }
        let result = tx.savepoint().map_err(StoreError::from).and_then(|sp| {
            let outcomes = create_in_tx(&sp, merchant_pk, &items, &health.failpoint)?;
            sp.commit()?;
            Ok(outcomes)
        });
        if result.is_err() {
            health.write_failed.store(true, Ordering::SeqCst);
        }
        answers.push((reply, result));
    }
    match tx.commit() {
        Ok(()) => {
            if answers.iter().all(|(_, result)| result.is_ok()) {
                health.write_failed.store(false, Ordering::SeqCst);
            }
            for (reply, result) in answers {
                let _ = reply.send(result);
            }
        }
        Err(e) => {
            health.write_failed.store(true, Ordering::SeqCst);
            let e = Arc::new(e);
            for (reply, _) in answers {
                let _ = reply.send(Err(StoreError::backend(SharedError(e.clone()))));
            }
        }
    }
}

/// One error reported to every request of a failed group.
#[derive(Debug)]
struct SharedError(Arc<rusqlite::Error>);

impl std::fmt::Display for SharedError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for SharedError {}

/// Migration 3's step: every body rewritten to the record's content, and the neighbour named of
/// every `QUARANTINE` location stored before locations named it.
fn upgrade_records(tx: &Connection) -> Result<(), StoreError> {
    let mut after = 0i64;
    loop {
        let rows: Vec<(i64, String)> = tx
            .prepare("SELECT seq, body FROM locations WHERE seq > ?1 ORDER BY seq LIMIT ?2")?
            .query_map(params![after, migrate::UPGRADE_CHUNK], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<Result<_, _>>()?;
        let Some(&(last, _)) = rows.last() else {
            break;
        };
        after = last;
        for (seq, body) in rows {
            if let Some(body) = migrate::upgraded_body(&body) {
                tx.execute("UPDATE locations SET body = ?2 WHERE seq = ?1", params![seq, body])?;
            }
        }
    }
    let quarantined: Vec<(i64, i64, f64, f64, i64)> = tx
        .prepare(
            "SELECT seq, merchant_pk, latitude, longitude, types FROM locations \
             WHERE status = ?1 AND quarantined_by IS NULL",
        )?
        .query_map([Status::Quarantine.as_str()], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
        })?
        .collect::<Result<_, _>>()?;
    for (seq, merchant_pk, latitude, longitude, types) in quarantined {
        let candidates = neighbours(tx, merchant_pk, latitude, longitude)?;
        let by = geo::quarantining_neighbour(seq, latitude, longitude, TypeSet::from_bits(types), candidates);
        if let Some(by) = by {
            tx.execute(
                "UPDATE locations SET quarantined_by = ?2 WHERE seq = ?1",
                params![seq, by.location_id],
            )?;
        }
    }
    Ok(())
}

/// One create request inside the group's transaction: fetch what the domain's decision needs (the
/// stored rows with the items' `merchant_location_id`s, the live neighbours of each new item),
/// let `batch::decide` decide, write what it decided.
fn create_in_tx(
    tx: &Connection,
    merchant_pk: i64,
    items: &[NewLocation],
    failpoint: &AtomicU64,
) -> Result<Vec<Outcome>, StoreError> {
    let mut stored = HashMap::new();
    let mut by_id = tx.prepare_cached(
        "SELECT location_id, status, body FROM locations WHERE merchant_pk = ?1 AND merchant_location_id = ?2",
    )?;
    for mlid in items.iter().filter_map(|i| i.location.merchant_location_id.as_deref()) {
        let row = by_id
            .query_row(params![merchant_pk, mlid], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?, r.get::<_, String>(2)?))
            })
            .optional()?;
        if let Some((location_id, status, canonical)) = row {
            let status = Status::from_wire(&status).ok_or_else(|| corrupt("status", &status))?;
            stored.insert(
                mlid.to_owned(),
                Stored {
                    location_id,
                    status,
                    canonical,
                },
            );
        }
    }
    let mut nearby = Vec::with_capacity(items.len());
    for item in items {
        let is_retry = item
            .location
            .merchant_location_id
            .as_ref()
            .is_some_and(|id| stored.contains_key(id));
        nearby.push(if is_retry {
            Vec::new()
        } else {
            neighbours(tx, merchant_pk, item.location.latitude, item.location.longitude)?
        });
    }

    let (outcomes, inserts) = batch::decide(items, &stored, nearby, || uuid::Uuid::now_v7().to_string());
    let now = now_ms();
    let mut insert = tx.prepare_cached(
        "INSERT INTO locations (location_id, merchant_pk, merchant_location_id, status, types, \
         latitude, longitude, band, body, created_at, updated_at, quarantined_by) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?10, ?11)",
    )?;
    for new in &inserts {
        fire(failpoint)?;
        let item = &items[new.item];
        let location = &item.location;
        insert.execute(params![
            new.location_id,
            merchant_pk,
            location.merchant_location_id,
            new.status.as_str(),
            location.location_types.bits(),
            location.latitude,
            location.longitude,
            geo::band(location.latitude),
            item.canonical,
            now,
            new.quarantined_by,
        ])?;
    }
    let counted = listing::tally(
        inserts
            .iter()
            .map(|new| (new.status, items[new.item].location.location_types, 1)),
    );
    count(tx, merchant_pk, &counted)?;
    Ok(outcomes)
}

/// Adds `changes` to the merchant's group counts.
fn count(tx: &Connection, merchant_pk: i64, changes: &[(Status, TypeSet, i64)]) -> Result<(), StoreError> {
    let mut upsert = tx.prepare_cached(
        "INSERT INTO location_counts (merchant_pk, status, types, n) VALUES (?1, ?2, ?3, ?4) \
         ON CONFLICT (merchant_pk, status, types) DO UPDATE SET n = n + excluded.n",
    )?;
    for (status, types, n) in changes {
        upsert.execute(params![merchant_pk, status.as_str(), types.bits(), n])?;
    }
    Ok(())
}

/// The test failpoint of `fail_after_inserts`: fails the insert that brings it to 1.
fn fire(failpoint: &AtomicU64) -> Result<(), StoreError> {
    let armed = failpoint.load(Ordering::SeqCst);
    if armed == 1 {
        failpoint.store(0, Ordering::SeqCst);
        return Err(StoreError::Backend(
            "injected failure (failpoint): database or disk is full".into(),
        ));
    } else if armed > 1 {
        failpoint.store(armed - 1, Ordering::SeqCst);
    }
    Ok(())
}

/// The merchant's live locations in the search box around a point (index `locations_nearby`:
/// one range scan per band and longitude interval).
fn neighbours(
    conn: &Connection,
    merchant_pk: i64,
    latitude: f64,
    longitude: f64,
) -> Result<Vec<Neighbour>, StoreError> {
    let search = geo::search_box(latitude, longitude, QUARANTINE_RADIUS_M);
    let mut stmt = conn.prepare_cached(
        "SELECT location_id, latitude, longitude, types, seq, status FROM locations \
         WHERE merchant_pk = ?1 AND band = ?2 AND longitude BETWEEN ?3 AND ?4 AND status IN (?5, ?6)",
    )?;
    let mut found = Vec::new();
    for band in search.bands.0..=search.bands.1 {
        for (west, east) in &search.longitudes {
            let [live_1, live_2] = Status::LIVE.map(Status::as_str);
            let rows = stmt.query_map(params![merchant_pk, band, west, east, live_1, live_2], |r| {
                Ok(Neighbour {
                    location_id: r.get(0)?,
                    latitude: r.get(1)?,
                    longitude: r.get(2)?,
                    types: TypeSet::from_bits(r.get(3)?),
                    seq: r.get(4)?,
                    status: Status::Active,
                })
                .map(|n| (n, r.get::<_, String>(5)))
            })?;
            for row in rows {
                let (mut neighbour, status) = row?;
                let status = status?;
                neighbour.status = Status::from_wire(&status).ok_or_else(|| corrupt("status", &status))?;
                found.push(neighbour);
            }
        }
    }
    Ok(found)
}

/// The merchant's locations named by the filter's shorter id list.
fn candidates(tx: &Connection, merchant_pk: i64, filter: &LocationFilter) -> Result<Vec<Candidate>, StoreError> {
    let Some((by_location_id, ids)) = filter.lookup() else {
        return Ok(Vec::new());
    };
    let mut stmt = tx.prepare_cached(if by_location_id {
        "SELECT seq, location_id, merchant_location_id, status, types FROM locations \
         WHERE location_id = ?2 AND merchant_pk = ?1"
    } else {
        "SELECT seq, location_id, merchant_location_id, status, types FROM locations \
         WHERE merchant_pk = ?1 AND merchant_location_id = ?2"
    })?;
    let mut found = Vec::new();
    for id in ids {
        let row = stmt
            .query_row(params![merchant_pk, id], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get::<_, String>(3)?, r.get(4)?))
            })
            .optional()?;
        if let Some((seq, location_id, merchant_location_id, status, types)) = row {
            found.push(Candidate {
                seq,
                location_id,
                merchant_location_id,
                status: Status::from_wire(&status).ok_or_else(|| corrupt("status", &status))?,
                types: TypeSet::from_bits(types),
            });
        }
    }
    Ok(found)
}

/// The page's keys from the merchant's group counts and one index range per matching group.
fn page_by_groups(
    tx: &Connection,
    merchant_pk: i64,
    filter: &LocationFilter,
    after: Option<i64>,
    limit: usize,
) -> Result<PageKeys, StoreError> {
    let mut counts = Vec::new();
    let mut stmt = tx.prepare_cached("SELECT status, types, n FROM location_counts WHERE merchant_pk = ?1")?;
    let rows = stmt.query_map([merchant_pk], |r| {
        Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?, r.get::<_, i64>(2)?))
    })?;
    for row in rows {
        let (status, types, n) = row?;
        counts.push(Group {
            status: Status::from_wire(&status).ok_or_else(|| corrupt("status", &status))?,
            types: TypeSet::from_bits(types),
            count: n.unsigned_abs(),
        });
    }
    let (groups, total) = filter.groups(counts);
    let mut range = tx.prepare_cached(
        "SELECT seq FROM locations WHERE merchant_pk = ?1 AND status = ?2 AND types = ?3 AND seq > ?4 \
         ORDER BY seq LIMIT ?5",
    )?;
    let mut lists = Vec::with_capacity(groups.len());
    for group in groups {
        let seqs = range
            .query_map(
                params![
                    merchant_pk,
                    group.status.as_str(),
                    group.types.bits(),
                    after.unwrap_or(0),
                    limit as i64 + 1
                ],
                |r| r.get::<_, i64>(0),
            )?
            .collect::<Result<Vec<_>, _>>()?;
        lists.push(seqs);
    }
    Ok(listing::merge_groups(lists, limit, total))
}

/// The records with these `seq`s, in this order.
fn records(tx: &Connection, seqs: &[i64]) -> Result<Vec<StoredRecord>, StoreError> {
    let mut stmt = tx.prepare_cached(
        "SELECT location_id, merchant_location_id, status, quarantined_by, version, created_at, updated_at, body \
         FROM locations WHERE seq = ?1",
    )?;
    let mut records = Vec::with_capacity(seqs.len());
    for &seq in seqs {
        let (location_id, merchant_location_id, status, quarantined_by, version, created_at, updated_at, body) =
            stmt.query_row([seq], |r| {
                Ok((
                    r.get(0)?,
                    r.get(1)?,
                    r.get::<_, String>(2)?,
                    r.get(3)?,
                    r.get(4)?,
                    r.get(5)?,
                    r.get(6)?,
                    r.get(7)?,
                ))
            })?;
        records.push(StoredRecord {
            seq,
            location_id,
            merchant_location_id,
            status: Status::from_wire(&status).ok_or_else(|| corrupt("status", &status))?,
            quarantined_by,
            version,
            created_at,
            updated_at,
            body,
        });
    }
    Ok(records)
}

const CATEGORY_COLUMNS: &str =
    "id, name, slug, parent_id, leaf, sort_order, icon_url, description, is_service, is_digital, status";

fn read_categories(conn: &Connection) -> Result<Vec<Category>, StoreError> {
    let mut categories = Vec::new();
    for_each_category(conn, |c| categories.push(c))?;
    Ok(categories)
}

/// Every stored category, one at a time, in list order (CONTRACT §5.2: `sort_order` with nulls
/// last, then `id` by bytes). The snapshot's JSON arena is then laid out as the list is read:
/// a page copies one run of memory, not a hundred scattered objects (on 1M categories the
/// scattered reads were a third of a page's cost).
fn for_each_category(conn: &Connection, mut f: impl FnMut(Category)) -> Result<(), StoreError> {
    let mut stmt = conn.prepare(&format!(
        "SELECT {CATEGORY_COLUMNS} FROM categories ORDER BY sort_order IS NULL, sort_order, id"
    ))?;
    let rows = stmt.query_map([], |r| {
        Ok((
            Category {
                id: r.get(0)?,
                name: r.get(1)?,
                slug: r.get(2)?,
                parent_id: r.get(3)?,
                leaf: r.get(4)?,
                sort_order: r.get(5)?,
                icon_url: r.get(6)?,
                description: r.get(7)?,
                is_service: r.get(8)?,
                is_digital: r.get(9)?,
                status: CategoryStatus::Active,
            },
            r.get::<_, String>(10)?,
        ))
    })?;
    for row in rows {
        let (mut category, status) = row?;
        category.status = CategoryStatus::from_wire(&status).ok_or_else(|| corrupt("category status", &status))?;
        f(category);
    }
    Ok(())
}

fn write_category(conn: &Connection, c: &Category) -> Result<(), StoreError> {
    conn.prepare_cached(&format!(
        "INSERT INTO categories ({CATEGORY_COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11) \
         ON CONFLICT (id) DO UPDATE SET name = excluded.name, slug = excluded.slug, parent_id = excluded.parent_id, \
         leaf = excluded.leaf, sort_order = excluded.sort_order, icon_url = excluded.icon_url, \
         description = excluded.description, is_service = excluded.is_service, is_digital = excluded.is_digital, \
         status = excluded.status"
    ))?
    .execute(params![
        c.id,
        c.name,
        c.slug,
        c.parent_id,
        c.leaf,
        c.sort_order,
        c.icon_url,
        c.description,
        c.is_service,
        c.is_digital,
        c.status.as_str()
    ])?;
    Ok(())
}

fn taxonomy_version(conn: &Connection) -> Result<i64, StoreError> {
    Ok(
        conn.query_row("SELECT value FROM meta WHERE key = 'taxonomy_version'", [], |r| {
            r.get(0)
        })?,
    )
}

fn corrupt(what: &str, value: &str) -> StoreError {
    StoreError::Backend(format!("unexpected stored {what} {value:?}").into())
}

/// Read-only connections on blocking threads.
struct ReadPool {
    path: PathBuf,
    idle: Mutex<Vec<Connection>>,
}

impl ReadPool {
    async fn read<T: Send + 'static>(
        self: &Arc<Self>,
        f: impl FnOnce(&Connection) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let pool = Arc::clone(self);
        tokio::task::spawn_blocking(move || {
            let conn = pool.take()?;
            let result = f(&conn);
            pool.give_back(conn);
            result
        })
        .await
        .map_err(StoreError::backend)?
    }

    fn take(&self) -> Result<Connection, StoreError> {
        if let Some(conn) = self.idle.lock().ok().and_then(|mut idle| idle.pop()) {
            return Ok(conn);
        }
        let conn = Connection::open_with_flags(
            &self.path,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        conn.busy_timeout(BUSY_TIMEOUT)?;
        Ok(conn)
    }

    fn give_back(&self, conn: Connection) {
        if let Ok(mut idle) = self.idle.lock()
            && idle.len() < IDLE_READERS
        {
            idle.push(conn);
        }
    }
}

#[async_trait]
impl Store for SqliteStore {
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
            // Writes failed last time: ready only once one commits again.
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
        self.write(move |tx| {
            let id = uuid::Uuid::now_v7().to_string();
            tx.execute(
                "INSERT INTO merchants (id, name, created_at) VALUES (?1, ?2, ?3)",
                params![id, name, now_ms()],
            )?;
            Ok(MerchantRef {
                pk: tx.last_insert_rowid(),
                id,
            })
        })
        .await
    }

    async fn merchant_count(&self) -> Result<u64, StoreError> {
        self.readers
            .read(|c| Ok(c.query_row("SELECT count(*) FROM merchants", [], |r| r.get::<_, i64>(0))?))
            .await
            .map(|n| n.unsigned_abs())
    }

    async fn insert_key(&self, merchant_id: &str, key_id: &str, secret_hash: [u8; 32]) -> Result<(), StoreError> {
        let (merchant_id, key_id) = (merchant_id.to_owned(), key_id.to_owned());
        self.write(move |tx| {
            let pk: Option<i64> = tx
                .query_row("SELECT pk FROM merchants WHERE id = ?1", [&merchant_id], |r| r.get(0))
                .optional()?;
            let pk = pk.ok_or_else(|| StoreError::NotFound(format!("merchant {merchant_id}")))?;
            tx.execute(
                "INSERT INTO api_keys (key_id, merchant_pk, secret_hash, created_at) VALUES (?1, ?2, ?3, ?4)",
                params![key_id, pk, &secret_hash[..], now_ms()],
            )?;
            Ok(())
        })
        .await
    }

    async fn revoke_key(&self, key_id: &str) -> Result<bool, StoreError> {
        let key_id = key_id.to_owned();
        self.write(move |tx| {
            let changed = tx.execute(
                "UPDATE api_keys SET revoked_at = ?2 WHERE key_id = ?1 AND revoked_at IS NULL",
                params![key_id, now_ms()],
            )?;
            Ok(changed == 1)
        })
        .await
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

    async fn list_locations(&self, query: LocationQuery) -> Result<LocationPage, StoreError> {
        self.readers
            .read(move |c| {
                let LocationQuery {
                    merchant_pk,
                    filter,
                    after,
                    limit,
                } = query;
                // One read transaction: the total, the page and its records see one state.
                let tx = c.unchecked_transaction()?;
                let keys = if filter.by_ids() {
                    let candidates = candidates(&tx, merchant_pk, &filter)?;
                    filter.page_of_candidates(candidates, after, limit)
                } else {
                    page_by_groups(&tx, merchant_pk, &filter, after, limit)?
                };
                let records = records(&tx, &keys.seqs)?;
                tx.finish()?;
                Ok(LocationPage {
                    records,
                    has_next: keys.has_next,
                    total: keys.total,
                })
            })
            .await
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
                .map_err(|_| corrupt("cursor secret", "of the wrong length"))
        })
        .await
    }

    async fn taxonomy_version(&self) -> Result<i64, StoreError> {
        self.readers.read(taxonomy_version).await
    }

    async fn load_taxonomy(&self) -> Result<Taxonomy, StoreError> {
        self.readers
            .read(|c| {
                let tx = c.unchecked_transaction()?;
                let mut builder = taxonomy::Builder::new(taxonomy_version(&tx)?);
                for_each_category(&tx, |category| builder.push(category))?;
                tx.finish()?;
                Ok(builder.finish())
            })
            .await
    }

    async fn load_categories(&self) -> Result<(i64, Vec<Category>), StoreError> {
        self.readers
            .read(|c| {
                let tx = c.unchecked_transaction()?;
                let version = taxonomy_version(&tx)?;
                let categories = read_categories(&tx)?;
                tx.finish()?;
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

    async fn create_locations(
        &self,
        merchant: &MerchantRef,
        items: Vec<NewLocation>,
        deadline: Instant,
    ) -> Result<Vec<Outcome>, StoreError> {
        if items.is_empty() {
            return Ok(Vec::new());
        }
        let (reply, answer) = oneshot::channel();
        let job = Job::Create(CreateJob {
            merchant_pk: merchant.pk,
            items,
            deadline,
            reply,
        });
        self.sender()?.send(job).await.map_err(|_| StoreError::Unavailable)?;
        answer.await.map_err(|_| StoreError::Unavailable)?
    }

    async fn close(&self) {
        if let Ok(mut idle) = self.readers.idle.lock() {
            idle.clear();
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

#[cfg(test)]
mod tests {
    use super::*;

    /// What the CLI does from another process: its own connection, its own commit.
    fn revoke_elsewhere(db: &Path, key_id: &str) {
        let conn = Connection::open(db).unwrap();
        conn.busy_timeout(BUSY_TIMEOUT).unwrap();
        let changed = conn
            .execute(
                "UPDATE api_keys SET revoked_at = 1 WHERE key_id = ?1 AND revoked_at IS NULL",
                [key_id],
            )
            .unwrap();
        assert_eq!(changed, 1);
    }

    #[tokio::test]
    async fn a_key_revoked_by_another_connection_is_refused_by_the_next_lookup() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("keys.db");
        let store = SqliteStore::open(&db).await.unwrap();
        // The lock-free source is the one in use.
        assert!(matches!(store.keys.version(), Some(Version::WalIndex(_))));
        let merchant = crate::auth::create_merchant(&store, "m").await.unwrap();
        for round in 0..20 {
            let issued = crate::auth::issue_key(&store, &merchant.merchant_id).await.unwrap();
            // Twice: the second answer comes from the cache.
            for _ in 0..2 {
                assert!(store.find_key(&issued.key_id).await.unwrap().is_some(), "round {round}");
            }
            let version = store.keys.version();
            assert!(store.keys.get(&issued.key_id, version.unwrap()).is_some(), "cached");
            revoke_elsewhere(&db, &issued.key_id);
            assert_ne!(store.keys.version(), version, "a commit elsewhere changes the version");
            assert!(store.find_key(&issued.key_id).await.unwrap().is_none(), "round {round}");
        }
        store.close().await;
    }
}

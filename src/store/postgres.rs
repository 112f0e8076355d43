//! The PostgreSQL backend: for deployments where several `storefront serve` instances share one
//! database (CONTRACT §8).
//!
//! **Concurrency.** A create request runs in one transaction that first takes a transaction-level
//! advisory lock on its merchant, so creates of one merchant are serialised across every instance:
//! the safe-retry/conflict lookup and the quarantine check see everything committed before, and
//! the unique index on `(merchant, merchant_location_id)` stays a backstop that never fires in
//! normal operation. Different merchants never wait for each other.
//!
//! **Round trips.** Inside the lock: one query for the stored rows of all the request's ids, the
//! neighbour queries of all new items pipelined on the connection, the decisions in memory
//! (`batch::decide`, which also counts items created earlier in the same request), and one
//! multi-row insert.
//!
//! **Recovery.** Connections come from a pool that drops broken ones, so when the database comes
//! back the service recovers without a restart; while it is away, requests fail with a 500.

use std::collections::HashMap;
use std::time::Duration;

use async_trait::async_trait;
use deadpool_postgres::{GenericClient, Manager, ManagerConfig, Pool, RecyclingMethod, Runtime};
use futures_util::future::try_join_all;
use tokio_postgres::NoTls;
use tokio_postgres::types::ToSql;

use super::api::{Approval, Imported, MerchantRef, QuarantinedLocation, Store, StoreError, StoredKey, now_ms};
use super::migrate;
use crate::domain::category::import::{self, Mode, Parsed, Problem};
use crate::domain::category::taxonomy::{self, Taxonomy};
use crate::domain::category::{Category, CategoryStatus};
use crate::domain::geo::{self, Neighbour, QUARANTINE_RADIUS_M};
use crate::domain::location::batch::{self, NewLocation, Outcome, Stored};
use crate::domain::location::change::{self, ChangePlan, Current, Decision, Write};
use crate::domain::location::listing::{self, Candidate, Group, LocationFilter, LocationPage, LocationQuery};
use crate::domain::location::record::StoredRecord;
use crate::domain::location::{Status, TypeSet};

const MIGRATIONS: &[&str] = &[
    include_str!("../../migrations/postgres/0001_init.sql"),
    include_str!("../../migrations/postgres/0002_categories.sql"),
    include_str!("../../migrations/postgres/0003_location_records.sql"),
];
const POOL_SIZE: usize = 16;
const TIMEOUT: Duration = Duration::from_secs(5);
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
        StoreError::backend(e)
    }
}

pub struct PgStore {
    pool: Pool,
}

impl PgStore {
    /// Connects (creating and migrating the schema when needed).
    pub async fn open(url: &str) -> Result<Self, StoreError> {
        let mut config: tokio_postgres::Config = url.parse()?;
        config.application_name("storefront").connect_timeout(TIMEOUT);
        let manager = Manager::from_config(
            config,
            NoTls,
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(manager)
            .max_size(POOL_SIZE)
            .runtime(Runtime::Tokio1)
            .wait_timeout(Some(TIMEOUT))
            .create_timeout(Some(TIMEOUT))
            .recycle_timeout(Some(TIMEOUT))
            .build()
            .map_err(StoreError::backend)?;
        let store = PgStore { pool };
        store.migrate().await?;
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
        tx.batch_execute("CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY)")
            .await?;
        let applied: i32 = tx
            .query_one("SELECT COALESCE(MAX(version), 0) FROM schema_migrations", &[])
            .await?
            .get(0);
        for (version, sql) in (1_i32..).zip(MIGRATIONS).skip(usize::try_from(applied).unwrap_or(0)) {
            tx.batch_execute(sql).await?;
            if version == migrate::RECORD_MIGRATION as i32 {
                upgrade_records(&tx).await?;
            }
            tx.execute("INSERT INTO schema_migrations (version) VALUES ($1)", &[&version])
                .await?;
        }
        tx.commit().await?;
        Ok(())
    }
}

fn corrupt(what: &str, value: &str) -> StoreError {
    StoreError::Backend(format!("unexpected stored {what} {value:?}").into())
}

fn status(s: &str) -> Result<Status, StoreError> {
    Status::from_wire(s).ok_or_else(|| corrupt("status", s))
}

/// The merchant's live locations in one search box (index `locations_nearby`).
async fn neighbours(
    client: &impl GenericClient,
    merchant_pk: i64,
    latitude: f64,
    longitude: f64,
) -> Result<Vec<Neighbour>, StoreError> {
    let search = geo::search_box(latitude, longitude, QUARANTINE_RADIUS_M);
    let stmt = client
        .prepare_cached(
            "SELECT location_id, latitude, longitude, types, seq, status FROM locations \
             WHERE merchant_pk = $1 AND band = $2 AND longitude BETWEEN $3 AND $4 AND status = ANY($5)",
        )
        .await?;
    let mut scans = Vec::new();
    for band in search.bands.0..=search.bands.1 {
        for (west, east) in &search.longitudes {
            scans.push((band, *west, *east));
        }
    }
    let live = Status::LIVE.map(Status::as_str);
    let live = &live[..];
    let params: Vec<[&(dyn ToSql + Sync); 5]> = scans
        .iter()
        .map(|(band, west, east)| [&merchant_pk as &(dyn ToSql + Sync), band, west, east, &live])
        .collect();
    let results = try_join_all(params.iter().map(|p| client.query(&stmt, p))).await?;
    results
        .into_iter()
        .flatten()
        .map(|row| {
            Ok(Neighbour {
                location_id: row.get(0),
                latitude: row.get(1),
                longitude: row.get(2),
                types: TypeSet::from_bits(i64::from(row.get::<_, i32>(3))),
                seq: row.get(4),
                status: status(row.get(5))?,
            })
        })
        .collect()
}

const CURRENT: &str = "seq, location_id, merchant_location_id, status, types, latitude, longitude, version, \
                       quarantined_by, approved, body";

fn current_of(r: &tokio_postgres::Row) -> Result<Current, StoreError> {
    Ok(Current {
        seq: r.get(0),
        location_id: r.get(1),
        merchant_location_id: r.get(2),
        status: status(r.get(3))?,
        types: TypeSet::from_bits(i64::from(r.get::<_, i32>(4))),
        latitude: r.get(5),
        longitude: r.get(6),
        version: r.get(7),
        quarantined_by: r.get(8),
        approved: r.get(9),
        body: r.get(10),
    })
}

/// Writes what a change decided, in one statement.
async fn write_changes(tx: &impl GenericClient, writes: &[Write], now: i64) -> Result<(), StoreError> {
    if writes.is_empty() {
        return Ok(());
    }
    let seqs: Vec<i64> = writes.iter().map(|w| w.seq).collect();
    let statuses: Vec<&str> = writes.iter().map(|w| w.status.as_str()).collect();
    let by: Vec<Option<&str>> = writes.iter().map(|w| w.quarantined_by.as_deref()).collect();
    let versions: Vec<i64> = writes.iter().map(|w| w.version).collect();
    let approved: Vec<bool> = writes.iter().map(|w| w.approved).collect();
    let bodies: Vec<Option<&str>> = writes
        .iter()
        .map(|w| w.content.as_ref().map(|c| c.body.as_str()))
        .collect();
    let lats: Vec<Option<f64>> = writes.iter().map(|w| w.content.as_ref().map(|c| c.latitude)).collect();
    let lons: Vec<Option<f64>> = writes.iter().map(|w| w.content.as_ref().map(|c| c.longitude)).collect();
    let bands: Vec<Option<i64>> = lats.iter().map(|lat| lat.map(geo::band)).collect();
    tx.execute(
        "UPDATE locations l SET status = u.s, quarantined_by = u.q, version = u.v, approved = u.a, updated_at = $1, \
         body = COALESCE(u.b, l.body), latitude = COALESCE(u.la, l.latitude), \
         longitude = COALESCE(u.lo, l.longitude), band = COALESCE(u.bd, l.band) \
         FROM UNNEST($2::int8[], $3::text[], $4::text[], $5::int8[], $6::bool[], $7::text[], $8::float8[], \
         $9::float8[], $10::int8[]) AS u(seq, s, q, v, a, b, la, lo, bd) WHERE l.seq = u.seq",
        &[
            &now, &seqs, &statuses, &by, &versions, &approved, &bodies, &lats, &lons, &bands,
        ],
    )
    .await?;
    Ok(())
}

/// Migration 3's step (see the SQLite store's `upgrade_records`).
async fn upgrade_records(tx: &impl GenericClient) -> Result<(), StoreError> {
    let mut after = 0i64;
    loop {
        let rows = tx
            .query(
                "SELECT seq, body FROM locations WHERE seq > $1 ORDER BY seq LIMIT $2",
                &[&after, &migrate::UPGRADE_CHUNK],
            )
            .await?;
        let Some(last) = rows.last() else {
            break;
        };
        after = last.get(0);
        for row in &rows {
            if let Some(body) = migrate::upgraded_body(row.get(1)) {
                tx.execute(
                    "UPDATE locations SET body = $2 WHERE seq = $1",
                    &[&row.get::<_, i64>(0), &body],
                )
                .await?;
            }
        }
    }
    let quarantined = tx
        .query(
            "SELECT seq, merchant_pk, latitude, longitude, types FROM locations \
             WHERE status = $1 AND quarantined_by IS NULL",
            &[&Status::Quarantine.as_str()],
        )
        .await?;
    for row in quarantined {
        let (seq, merchant_pk, latitude, longitude): (i64, i64, f64, f64) =
            (row.get(0), row.get(1), row.get(2), row.get(3));
        let types = TypeSet::from_bits(i64::from(row.get::<_, i32>(4)));
        let candidates = neighbours(tx, merchant_pk, latitude, longitude).await?;
        if let Some(by) = geo::quarantining_neighbour(seq, latitude, longitude, types, candidates) {
            tx.execute(
                "UPDATE locations SET quarantined_by = $2 WHERE seq = $1",
                &[&seq, &by.location_id],
            )
            .await?;
        }
    }
    Ok(())
}

/// Adds `changes` to the merchant's group counts.
async fn count(
    tx: &impl GenericClient,
    merchant_pk: i64,
    changes: &[(Status, TypeSet, i64)],
) -> Result<(), StoreError> {
    if changes.is_empty() {
        return Ok(());
    }
    let statuses: Vec<&str> = changes.iter().map(|(s, _, _)| s.as_str()).collect();
    let types: Vec<i32> = changes
        .iter()
        .map(|(_, t, _)| i32::try_from(t.bits()).unwrap_or(0))
        .collect();
    let deltas: Vec<i64> = changes.iter().map(|(_, _, n)| *n).collect();
    tx.execute(
        "INSERT INTO location_counts (merchant_pk, status, types, n) \
         SELECT $1, s, t, n FROM UNNEST($2::text[], $3::int4[], $4::int8[]) AS u(s, t, n) \
         ON CONFLICT (merchant_pk, status, types) DO UPDATE SET n = location_counts.n + excluded.n",
        &[&merchant_pk, &statuses, &types, &deltas],
    )
    .await?;
    Ok(())
}

/// The merchant's locations named by the filter's shorter id list.
async fn candidates(
    tx: &impl GenericClient,
    merchant_pk: i64,
    filter: &LocationFilter,
) -> Result<Vec<Candidate>, StoreError> {
    let Some((by_location_id, ids)) = filter.lookup() else {
        return Ok(Vec::new());
    };
    let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
    let rows = tx
        .query(
            if by_location_id {
                "SELECT seq, location_id, merchant_location_id, status, types FROM locations \
                 WHERE location_id = ANY($2) AND merchant_pk = $1"
            } else {
                "SELECT seq, location_id, merchant_location_id, status, types FROM locations \
                 WHERE merchant_pk = $1 AND merchant_location_id = ANY($2)"
            },
            &[&merchant_pk, &ids],
        )
        .await?;
    rows.iter()
        .map(|r| {
            Ok(Candidate {
                seq: r.get(0),
                location_id: r.get(1),
                merchant_location_id: r.get(2),
                status: status(r.get(3))?,
                types: TypeSet::from_bits(i64::from(r.get::<_, i32>(4))),
            })
        })
        .collect()
}

/// The columns of a stored record, as `record_of` reads them.
const RECORD: &str =
    "seq, location_id, merchant_location_id, status, quarantined_by, version, created_at, updated_at, body";

fn record_of(r: &tokio_postgres::Row) -> Result<StoredRecord, StoreError> {
    Ok(StoredRecord {
        seq: r.get(0),
        location_id: r.get(1),
        merchant_location_id: r.get(2),
        status: status(r.get(3))?,
        quarantined_by: r.get(4),
        version: r.get(5),
        created_at: r.get(6),
        updated_at: r.get(7),
        body: r.get(8),
    })
}

/// A page without id lists: the exact total from the merchant's group counts, and the records
/// merged from one range of the index `(merchant, status, types, seq)` per matching group (a
/// LATERAL subquery each).
async fn page_by_groups(
    tx: &impl GenericClient,
    merchant_pk: i64,
    filter: &LocationFilter,
    after: Option<i64>,
    limit: usize,
) -> Result<LocationPage, StoreError> {
    let counts = tx
        .query(
            "SELECT status, types, n FROM location_counts WHERE merchant_pk = $1",
            &[&merchant_pk],
        )
        .await?
        .iter()
        .map(|r| {
            Ok(Group {
                status: status(r.get(0))?,
                types: TypeSet::from_bits(i64::from(r.get::<_, i32>(1))),
                count: r.get::<_, i64>(2).unsigned_abs(),
            })
        })
        .collect::<Result<Vec<_>, StoreError>>()?;
    let (groups, total) = filter.groups(counts);
    if groups.is_empty() {
        return Ok(LocationPage {
            records: Vec::new(),
            has_next: false,
            total,
        });
    }
    let statuses: Vec<&str> = groups.iter().map(|g| g.status.as_str()).collect();
    let types: Vec<i32> = groups
        .iter()
        .map(|g| i32::try_from(g.types.bits()).unwrap_or(0))
        .collect();
    let mut records = tx
        .query(
            &format!(
                "SELECT l.* FROM UNNEST($2::text[], $3::int4[]) AS g(s, t) CROSS JOIN LATERAL \
                 (SELECT {RECORD} FROM locations WHERE merchant_pk = $1 AND status = g.s AND types = g.t \
                  AND seq > $4 ORDER BY seq LIMIT $5) l ORDER BY l.seq LIMIT $5"
            ),
            &[
                &merchant_pk,
                &statuses,
                &types,
                &after.unwrap_or(0),
                &(limit as i64 + 1),
            ],
        )
        .await?
        .iter()
        .map(record_of)
        .collect::<Result<Vec<_>, _>>()?;
    let has_next = records.len() > limit;
    records.truncate(limit);
    Ok(LocationPage {
        records,
        has_next,
        total,
    })
}

/// The records with these `seq`s, in this order.
async fn records(tx: &impl GenericClient, seqs: &[i64]) -> Result<Vec<StoredRecord>, StoreError> {
    if seqs.is_empty() {
        return Ok(Vec::new());
    }
    tx.query(
        &format!("SELECT {RECORD} FROM locations WHERE seq = ANY($1) ORDER BY seq"),
        &[&seqs],
    )
    .await?
    .iter()
    .map(record_of)
    .collect()
}

const CATEGORY_COLUMNS: &str =
    "id, name, slug, parent_id, leaf, sort_order, icon_url, description, is_service, is_digital, status";

async fn read_categories(client: &impl GenericClient) -> Result<Vec<Category>, StoreError> {
    let rows = client
        .query(&format!("SELECT {CATEGORY_COLUMNS} FROM categories"), &[])
        .await?;
    rows.iter().map(category_of).collect()
}

fn category_of(r: &tokio_postgres::Row) -> Result<Category, StoreError> {
    let status: String = r.get(10);
    Ok(Category {
        id: r.get(0),
        name: r.get(1),
        slug: r.get(2),
        parent_id: r.get(3),
        leaf: r.get(4),
        sort_order: r.get(5),
        icon_url: r.get(6),
        description: r.get(7),
        is_service: r.get(8),
        is_digital: r.get(9),
        status: CategoryStatus::from_wire(&status).ok_or_else(|| corrupt("category status", &status))?,
    })
}

/// Inserts or replaces `categories` in one statement.
async fn write_categories(client: &impl GenericClient, categories: &[&Category]) -> Result<(), StoreError> {
    let column = |f: fn(&Category) -> Option<String>| categories.iter().map(|c| f(c)).collect::<Vec<_>>();
    let ids = column(|c| Some(c.id.clone()));
    let names = column(|c| Some(c.name.clone()));
    let slugs = column(|c| Some(c.slug.clone()));
    let parents = column(|c| c.parent_id.clone());
    let icons = column(|c| c.icon_url.clone());
    let descriptions = column(|c| c.description.clone());
    let statuses = column(|c| Some(c.status.as_str().to_owned()));
    let leaves: Vec<bool> = categories.iter().map(|c| c.leaf).collect();
    let sorts: Vec<Option<i64>> = categories.iter().map(|c| c.sort_order).collect();
    let services: Vec<Option<bool>> = categories.iter().map(|c| c.is_service).collect();
    let digitals: Vec<Option<bool>> = categories.iter().map(|c| c.is_digital).collect();
    client
        .execute(
            &format!(
                "INSERT INTO categories ({CATEGORY_COLUMNS}) \
                 SELECT * FROM UNNEST($1::text[], $2::text[], $3::text[], $4::text[], $5::bool[], $6::int8[], \
                 $7::text[], $8::text[], $9::bool[], $10::bool[], $11::text[]) \
                 ON CONFLICT (id) DO UPDATE SET name = excluded.name, slug = excluded.slug, \
                 parent_id = excluded.parent_id, leaf = excluded.leaf, sort_order = excluded.sort_order, \
                 icon_url = excluded.icon_url, description = excluded.description, \
                 is_service = excluded.is_service, is_digital = excluded.is_digital, status = excluded.status"
            ),
            &[
                &ids,
                &names,
                &slugs,
                &parents,
                &leaves,
                &sorts,
                &icons,
                &descriptions,
                &services,
                &digitals,
                &statuses,
            ],
        )
        .await?;
    Ok(())
}

/// A read-only, repeatable-read transaction: every read in it sees one state.
async fn snapshot(client: &mut deadpool_postgres::Object) -> Result<deadpool_postgres::Transaction<'_>, StoreError> {
    Ok(client
        .build_transaction()
        .isolation_level(tokio_postgres::IsolationLevel::RepeatableRead)
        .read_only(true)
        .start()
        .await?)
}

/// A snapshot over the categories, and their version in it.
async fn taxonomy_snapshot(
    client: &mut deadpool_postgres::Object,
) -> Result<(deadpool_postgres::Transaction<'_>, i64), StoreError> {
    let tx = snapshot(client).await?;
    let version: i64 = tx.query_one("SELECT version FROM taxonomy_version", &[]).await?.get(0);
    Ok((tx, version))
}

#[async_trait]
impl Store for PgStore {
    async fn durability(&self) -> Result<Vec<(String, String)>, StoreError> {
        let client = self.pool.get().await?;
        let mut settings = Vec::new();
        for name in ["synchronous_commit", "fsync"] {
            let value: String = client.query_one(&format!("SHOW {name}"), &[]).await?.get(0);
            settings.push((name.to_owned(), value));
        }
        Ok(settings)
    }

    async fn ping(&self) -> Result<(), StoreError> {
        let client = self.pool.get().await?;
        client.simple_query("SELECT 1").await?;
        Ok(())
    }

    async fn create_merchant(&self, name: &str) -> Result<MerchantRef, StoreError> {
        let client = self.pool.get().await?;
        let id = uuid::Uuid::now_v7().to_string();
        let row = client
            .query_one(
                "INSERT INTO merchants (id, name, created_at) VALUES ($1, $2, $3) RETURNING pk",
                &[&id, &name, &now_ms()],
            )
            .await?;
        Ok(MerchantRef { pk: row.get(0), id })
    }

    async fn merchant_count(&self) -> Result<u64, StoreError> {
        let client = self.pool.get().await?;
        let n: i64 = client.query_one("SELECT count(*) FROM merchants", &[]).await?.get(0);
        Ok(n.unsigned_abs())
    }

    async fn insert_key(&self, merchant_id: &str, key_id: &str, secret_hash: [u8; 32]) -> Result<(), StoreError> {
        let client = self.pool.get().await?;
        let inserted = client
            .execute(
                "INSERT INTO api_keys (key_id, merchant_pk, secret_hash, created_at) \
                 SELECT $1, pk, $3, $4 FROM merchants WHERE id = $2",
                &[&key_id, &merchant_id, &&secret_hash[..], &now_ms()],
            )
            .await?;
        if inserted == 0 {
            return Err(StoreError::NotFound(format!("merchant {merchant_id}")));
        }
        Ok(())
    }

    async fn revoke_key(&self, key_id: &str) -> Result<bool, StoreError> {
        let client = self.pool.get().await?;
        let changed = client
            .execute(
                "UPDATE api_keys SET revoked_at = $2 WHERE key_id = $1 AND revoked_at IS NULL",
                &[&key_id, &now_ms()],
            )
            .await?;
        Ok(changed == 1)
    }

    async fn find_key(&self, key_id: &str) -> Result<Option<StoredKey>, StoreError> {
        let client = self.pool.get().await?;
        let stmt = client
            .prepare_cached(
                "SELECT m.pk, m.id, k.secret_hash FROM api_keys k JOIN merchants m ON m.pk = k.merchant_pk \
                 WHERE k.key_id = $1 AND k.revoked_at IS NULL",
            )
            .await?;
        let row = client.query_opt(&stmt, &[&key_id]).await?;
        Ok(row.and_then(|r| {
            let hash: Vec<u8> = r.get(2);
            Some(StoredKey {
                merchant: MerchantRef {
                    pk: r.get(0),
                    id: r.get(1),
                },
                secret_hash: hash.try_into().ok()?,
            })
        }))
    }

    async fn create_locations(
        &self,
        merchant: &MerchantRef,
        items: Vec<NewLocation>,
        deadline: std::time::Instant,
    ) -> Result<Vec<Outcome>, StoreError> {
        if items.is_empty() {
            return Ok(Vec::new());
        }
        let mut client = self.pool.get().await?;
        let tx = client.transaction().await?;
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&merchant.pk]).await?;

        let ids: Vec<&str> = items
            .iter()
            .filter_map(|i| i.location.merchant_location_id.as_deref())
            .collect();
        let mut stored = HashMap::new();
        if !ids.is_empty() {
            for row in tx
                .query(
                    "SELECT merchant_location_id, location_id, status, body FROM locations \
                     WHERE merchant_pk = $1 AND merchant_location_id = ANY($2)",
                    &[&merchant.pk, &ids],
                )
                .await?
            {
                let status_text: String = row.get(2);
                stored.insert(
                    row.get::<_, String>(0),
                    Stored {
                        location_id: row.get(1),
                        status: status(&status_text)?,
                        canonical: row.get(3),
                    },
                );
            }
        }
        // Items that are retries need no neighbours; the rest are searched concurrently.
        let nearby = try_join_all(items.iter().map(|item| {
            let is_retry = item
                .location
                .merchant_location_id
                .as_ref()
                .is_some_and(|id| stored.contains_key(id));
            let tx = &tx;
            async move {
                if is_retry {
                    Ok(Vec::new())
                } else {
                    neighbours(tx, merchant.pk, item.location.latitude, item.location.longitude).await
                }
            }
        }))
        .await?;

        let (outcomes, inserts) = batch::decide(&items, &stored, nearby, || uuid::Uuid::now_v7().to_string());
        if !inserts.is_empty() {
            let now = now_ms();
            let location_ids: Vec<&str> = inserts.iter().map(|i| i.location_id.as_str()).collect();
            let statuses: Vec<&str> = inserts.iter().map(|i| i.status.as_str()).collect();
            let new = |i: &batch::ToInsert| &items[i.item];
            let mlids: Vec<Option<&str>> = inserts
                .iter()
                .map(|i| new(i).location.merchant_location_id.as_deref())
                .collect();
            let types: Vec<i32> = inserts
                .iter()
                .map(|i| i32::try_from(new(i).location.location_types.bits()).unwrap_or(0))
                .collect();
            let lats: Vec<f64> = inserts.iter().map(|i| new(i).location.latitude).collect();
            let lons: Vec<f64> = inserts.iter().map(|i| new(i).location.longitude).collect();
            let bands: Vec<i64> = lats.iter().map(|&lat| geo::band(lat)).collect();
            let bodies: Vec<&str> = inserts.iter().map(|i| new(i).canonical.as_str()).collect();
            let by: Vec<Option<&str>> = inserts.iter().map(|i| i.quarantined_by.as_deref()).collect();
            tx.execute(
                "INSERT INTO locations (location_id, merchant_pk, merchant_location_id, status, types, latitude, \
                 longitude, band, body, created_at, updated_at, quarantined_by) \
                 SELECT l, $2, m, s, t, la, lo, b, bo, $10, $10, q FROM UNNEST($1::text[], $3::text[], $4::text[], \
                 $5::int4[], $6::float8[], $7::float8[], $8::int8[], $9::text[], $11::text[]) \
                 AS u(l, m, s, t, la, lo, b, bo, q)",
                &[
                    &location_ids,
                    &merchant.pk,
                    &mlids,
                    &statuses,
                    &types,
                    &lats,
                    &lons,
                    &bands,
                    &bodies,
                    &now,
                    &by,
                ],
            )
            .await?;
            let counted = listing::tally(inserts.iter().map(|i| (i.status, new(i).location.location_types, 1)));
            count(&tx, merchant.pk, &counted).await?;
        }
        if std::time::Instant::now() > deadline {
            // Dropping the transaction rolls it back.
            return Err(StoreError::DeadlinePassed);
        }
        tx.commit().await?;
        Ok(outcomes)
    }

    async fn change_locations(
        &self,
        merchant: &MerchantRef,
        plan: ChangePlan,
        deadline: std::time::Instant,
    ) -> Result<Decision, StoreError> {
        let mut client = self.pool.get().await?;
        let tx = client.transaction().await?;
        // The merchant's writes take turns (see the module's notes), across every instance.
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&merchant.pk]).await?;
        let (by_id, by_merchant_id) = plan.lookups();
        let targets = tx
            .query(
                &format!(
                    "SELECT {CURRENT} FROM locations WHERE merchant_pk = $1 \
                     AND (location_id = ANY($2) OR merchant_location_id = ANY($3))"
                ),
                &[&merchant.pk, &by_id, &by_merchant_id],
            )
            .await?
            .iter()
            .map(current_of)
            .collect::<Result<Vec<_>, _>>()?;
        let target_ids: Vec<&str> = targets.iter().map(|t| t.location_id.as_str()).collect();
        let dependents = tx
            .query(
                &format!(
                    "SELECT {CURRENT} FROM locations WHERE merchant_pk = $1 AND quarantined_by = ANY($2) \
                     AND status = $3 AND NOT (location_id = ANY($2))"
                ),
                &[&merchant.pk, &target_ids, &Status::Quarantine.as_str()],
            )
            .await?
            .iter()
            .map(current_of)
            .collect::<Result<Vec<_>, _>>()?;
        let probes = plan.probes(&targets, &dependents);
        let nearby = try_join_all(
            probes
                .iter()
                .map(|(latitude, longitude)| neighbours(&tx, merchant.pk, *latitude, *longitude)),
        )
        .await?
        .into_iter()
        .flatten()
        .collect();
        let decision = plan.decide(targets, dependents, nearby);
        write_changes(&tx, &decision.writes, now_ms()).await?;
        count(&tx, merchant.pk, &decision.counts).await?;
        if std::time::Instant::now() > deadline {
            return Err(StoreError::DeadlinePassed);
        }
        tx.commit().await?;
        Ok(decision)
    }

    async fn quarantined_locations(&self) -> Result<Vec<QuarantinedLocation>, StoreError> {
        let client = self.pool.get().await?;
        let rows = client
            .query(
                "SELECT l.location_id, m.id, l.merchant_location_id, l.body, l.quarantined_by \
                 FROM locations l JOIN merchants m ON m.pk = l.merchant_pk WHERE l.status = $1 ORDER BY l.seq",
                &[&Status::Quarantine.as_str()],
            )
            .await?;
        Ok(rows
            .iter()
            .map(|r| QuarantinedLocation {
                location_id: r.get(0),
                merchant_id: r.get(1),
                merchant_location_id: r.get(2),
                name: change::stored_name(r.get(3)),
                neighbour_location_id: r.get(4),
            })
            .collect())
    }

    async fn approve_location(&self, location_id: &str) -> Result<Approval, StoreError> {
        let mut client = self.pool.get().await?;
        let tx = client.transaction().await?;
        let Some(row) = tx
            .query_opt(
                "SELECT merchant_pk FROM locations WHERE location_id = $1",
                &[&location_id],
            )
            .await?
        else {
            return Ok(Approval::NotFound);
        };
        let merchant_pk: i64 = row.get(0);
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&merchant_pk]).await?;
        let row = tx
            .query_one(
                &format!("SELECT {CURRENT} FROM locations WHERE location_id = $1"),
                &[&location_id],
            )
            .await?;
        let location = current_of(&row)?;
        let Some(write) = change::approval(&location) else {
            return Ok(Approval::NotQuarantined(location.status));
        };
        write_changes(&tx, std::slice::from_ref(&write), now_ms()).await?;
        count(
            &tx,
            merchant_pk,
            &[(location.status, location.types, -1), (write.status, location.types, 1)],
        )
        .await?;
        tx.commit().await?;
        Ok(Approval::Approved { version: write.version })
    }

    async fn list_locations(&self, query: LocationQuery) -> Result<LocationPage, StoreError> {
        let LocationQuery {
            merchant_pk,
            filter,
            after,
            limit,
        } = &query;
        let (merchant_pk, after, limit) = (*merchant_pk, *after, *limit);
        let mut client = self.pool.get().await?;
        // One snapshot: the total, the page and its records see one state.
        let tx = snapshot(&mut client).await?;
        let page = if filter.by_ids() {
            let candidates = candidates(&tx, merchant_pk, filter).await?;
            let keys = filter.page_of_candidates(candidates, after, limit);
            LocationPage {
                records: records(&tx, &keys.seqs).await?,
                has_next: keys.has_next,
                total: keys.total,
            }
        } else {
            page_by_groups(&tx, merchant_pk, filter, after, limit).await?
        };
        tx.commit().await?;
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
            .get(0);
        stored
            .try_into()
            .map_err(|_| corrupt("cursor secret", "of the wrong length"))
    }

    async fn taxonomy_version(&self) -> Result<i64, StoreError> {
        let client = self.pool.get().await?;
        Ok(client
            .query_one("SELECT version FROM taxonomy_version", &[])
            .await?
            .get(0))
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
            .get(0);
        tx.commit().await?;
        Ok(Ok(Imported {
            records: count,
            total: set.len(),
            version,
        }))
    }

    async fn close(&self) {
        self.pool.close();
    }
}

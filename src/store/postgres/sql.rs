//! Running a statement of the write path: prepared once per connection (the pool's statement
//! cache), so it is not parsed and planned again at each use and runs in one round trip, not two.

use deadpool_postgres::GenericClient;

use crate::domain::location::TypeSet;
use crate::domain::location::listing::Candidate;
use crate::store::api::{StoreError, stored_status};

/// A transaction's statements run on their prepared statements' generic plans, never custom ones
/// (the group commit's, and a search's). These statements are written for the generic plan
/// (`OFFSET 0` in `locations::neighbours_of` and `search::ring_sql`); a custom plan, made for each
/// execution's values with the table's statistics of the moment (none yet, or stale after a burst
/// of inserts), can read all the merchant's locations per key range instead. PostgreSQL plans the
/// first five executions on each connection custom and keeps doing so whenever it estimates the
/// generic plan dearer, so without this a run of creates went at whatever speed its connections'
/// first plans allowed, and a search paid for planning each ring again.
pub(super) const GENERIC_PLANS: &str = "SET LOCAL plan_cache_mode = force_generic_plan; ";

/// A transaction's statements planned for each execution's values, as unprepared statements are,
/// though prepared once (no parse, one round trip): the location list's, whose best plan depends
/// on the values. The generic plan of one group's page reads the table in `seq` order and filters
/// out other merchants' rows, which for a small merchant beside large ones is most of the table.
pub(super) const CUSTOM_PLANS: &str = "SET LOCAL plan_cache_mode = force_custom_plan; ";

/// A statement's parameters.
pub(super) type Params<'a> = &'a [&'a (dyn tokio_postgres::types::ToSql + Sync)];

/// Runs `sql`, prepared once per connection (the pool's statement cache).
pub(super) async fn query(
    client: &impl GenericClient,
    sql: &str,
    params: Params<'_>,
) -> Result<Vec<tokio_postgres::Row>, StoreError> {
    let statement = client.prepare_cached(sql).await?;
    Ok(client.query(&statement, params).await?)
}

/// Executes `sql`, prepared once per connection (the pool's statement cache).
pub(super) async fn execute(client: &impl GenericClient, sql: &str, params: Params<'_>) -> Result<u64, StoreError> {
    let statement = client.prepare_cached(sql).await?;
    Ok(client.execute(&statement, params).await?)
}

/// The statement reading `columns` of the merchant's (`$1`) locations whose `column`
/// (`merchant_location_id` or `location_id`) is one of the names in the array parameter `names`
/// (`"$2"`): one probe of the column's index per name, whatever the plan's statistics. (With
/// `column = ANY($2)`, a generic plan made while the merchant had few locations reads every one of
/// them, as a filter, at each use: a batch's lookups grew with the merchant.) A location id is
/// unique across merchants: its own index finds it, and its merchant is checked after, so that no
/// plan takes the merchant's index instead.
pub(super) fn by_names(columns: &str, column: &str, names: &str) -> String {
    let (probe, after) = if column == "location_id" {
        ("location_id = n.wanted".to_owned(), " WHERE l.merchant_pk = $1")
    } else {
        (format!("merchant_pk = $1 AND {column} = n.wanted"), "")
    };
    format!(
        "SELECT {columns} FROM UNNEST({names}::text[]) AS n(wanted) \
         CROSS JOIN LATERAL (SELECT * FROM locations WHERE {probe} OFFSET 0) l{after}"
    )
}

/// Keeps `tx`'s statements on their generic plans (see [`GENERIC_PLANS`]): every transaction that
/// runs the write path's statements outside a group (an import's) begins with it.
pub(super) async fn generic_plans(tx: &impl GenericClient) -> Result<(), StoreError> {
    tx.batch_execute(GENERIC_PLANS).await?;
    Ok(())
}

/// Lets `tx`'s statements from here on be planned as PostgreSQL chooses again (after
/// [`generic_plans`]).
pub(super) async fn custom_plans(tx: &impl GenericClient) -> Result<(), StoreError> {
    tx.batch_execute("SET LOCAL plan_cache_mode = auto").await?;
    Ok(())
}

/// The statement of [`lock_merchant`].
pub(super) const LOCK_MERCHANT: &str = "SELECT pg_advisory_xact_lock($1)";

/// Takes the merchant's lock until the end of `tx`: a merchant's writes (its groups, an operator's
/// approval) take turns across every instance.
pub(super) async fn lock_merchant(tx: &impl GenericClient, merchant_pk: i64) -> Result<(), StoreError> {
    execute(tx, LOCK_MERCHANT, &[&merchant_pk]).await?;
    Ok(())
}

/// A location's names, status and types: the first five columns of `changes::CURRENT`, and of the
/// statements that look locations up by name.
pub(super) fn named_of(r: &tokio_postgres::Row) -> Result<Candidate, StoreError> {
    Ok(Candidate {
        seq: r.try_get(0)?,
        location_id: r.try_get(1)?,
        merchant_location_id: r.try_get(2)?,
        status: stored_status(r.try_get(3)?)?,
        types: TypeSet::from_bits(i64::from(r.try_get::<_, i32>(4)?)),
    })
}

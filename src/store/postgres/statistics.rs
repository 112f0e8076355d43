//! The locations table's first statistics, given by the service itself on a new database.

use std::time::Duration;

use deadpool_postgres::Pool;

/// The name its session goes by in `pg_stat_activity`, apart from the requests'.
pub(super) const SESSION: &str = "storefront-statistics";

/// Until the locations table has statistics, gives it some once it holds a thousand rows.
///
/// Without statistics (a new database, in the minute before autovacuum's first look) the planner
/// costs every index of `locations` that starts with the merchant and the status alike, and the
/// generic plan of the quarantine's neighbour search, made on each connection while the table is
/// small, takes `locations_pages` and filters the cells: it reads all the merchant's locations for
/// each key range, a few hundred milliseconds a batch once a merchant has some thousands. One
/// `ANALYZE` ends it (it replans every cached plan of the table); autovacuum keeps the statistics
/// from then on. The rows are counted, not read from the statistics views, which a busy backend
/// updates only about once a second, and looked at often, so that a first push or import at full
/// speed is past a thousand rows by no more than a fraction of a second's writes.
///
/// Looks on a connection of its own (`own`), named [`SESSION`], until the requests' pool (`primary`)
/// is closed.
pub(super) async fn first_statistics(primary: Pool, own: Pool) {
    const ANALYZED: &str = "SELECT last_analyze IS NOT NULL OR last_autoanalyze IS NOT NULL \
                            FROM pg_stat_user_tables WHERE relname = 'locations'";
    const ROWS: i64 = 1000;
    const COUNT: &str = "SELECT count(*) FROM (SELECT 1 FROM locations LIMIT $1) AS first";
    let mut tick = tokio::time::interval(Duration::from_millis(250));
    loop {
        tick.tick().await;
        if primary.is_closed() {
            own.close();
            return;
        }
        let Ok(client) = own.get().await else { continue };
        let Ok(row) = client.query_opt(ANALYZED, &[]).await else {
            continue;
        };
        if row.is_some_and(|r| r.try_get::<_, bool>(0).unwrap_or(false)) {
            return;
        }
        let Ok(Ok(rows)) = client.query_one(COUNT, &[&ROWS]).await.map(|r| r.try_get::<_, i64>(0)) else {
            continue;
        };
        if rows >= ROWS {
            match client.batch_execute("ANALYZE locations").await {
                Ok(()) => {
                    tracing::info!(rows, "gave the locations table its first statistics");
                    return;
                }
                Err(e) => {
                    tracing::warn!(error = %crate::errors::ErrorChain(&e), "ANALYZE locations failed; trying again")
                }
            }
        }
    }
}

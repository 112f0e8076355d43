//! PostgreSQL's connection pools: every session's time limits, keep-alives and JIT setting in
//! one place. Their sizes are `store::Pools`' (sized to the machine unless the operator says).

use std::time::Duration;

use deadpool_postgres::{Manager, ManagerConfig, Pool, QueueMode, RecyclingMethod, Runtime};
use tokio_postgres::NoTls;

use crate::store::api::StoreError;

/// A pool of at most `size` connections to `config`, named `name` in `pg_stat_activity`, on which
/// no session holds a lock, runs a statement or sits in a transaction longer than `limit`, no
/// statement is compiled by PostgreSQL's JIT, and whose peer, should it vanish, is noticed by TCP
/// keep-alives within about half a minute rather than the kernel's two hours; waiting at most
/// `wait` for a connection, and `connect` for a new one.
pub(super) fn pool_of(
    mut config: tokio_postgres::Config,
    name: &str,
    limit: Duration,
    size: usize,
    (wait, connect): (Duration, Duration),
) -> Result<Pool, StoreError> {
    // `jit=off`: our statements are short, and compiling one costs more than it can save. PostgreSQL
    // compiles any statement whose estimated cost passes `jit_above_cost`, whatever it really reads:
    // a search's ring with opening hours (estimated at ~110,000 for 30 index entries) spent 13–44 ms
    // compiling to run for 0.1, and searches on PostgreSQL went at 1,400/s with a p99 of 163 ms.
    let limits = format!(
        "-c statement_timeout={ms} -c lock_timeout={ms} -c idle_in_transaction_session_timeout={ms} -c jit=off",
        ms = limit.as_millis()
    );
    let options = match config.get_options() {
        Some(given) if !given.is_empty() => format!("{given} {limits}"),
        _ => limits,
    };
    config
        .application_name(name)
        .connect_timeout(connect)
        .options(&options)
        .keepalives(true)
        .keepalives_idle(Duration::from_secs(10))
        .keepalives_interval(Duration::from_secs(5))
        .keepalives_retries(3);
    let manager = Manager::from_config(
        config,
        NoTls,
        ManagerConfig {
            recycling_method: RecyclingMethod::Fast,
        },
    );
    Pool::builder(manager)
        .max_size(size)
        .queue_mode(QueueMode::Lifo)
        .runtime(Runtime::Tokio1)
        .wait_timeout(Some(wait))
        .create_timeout(Some(connect))
        .recycle_timeout(Some(connect))
        .build()
        .map_err(StoreError::backend)
}

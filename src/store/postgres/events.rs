//! Event SQL: appending a request's events to its merchant's log inside its
//! transaction (with a notice to every instance's waiting feeds), reading a page of the feed, and
//! retention's pruning.

use std::sync::Arc;
use std::time::Duration;

use deadpool_postgres::{GenericClient, Pool};
use futures_util::StreamExt;
use tokio_postgres::AsyncMessage;

use super::snapshot::{BEGIN, Pipelined, begun_with, commit};
use super::sql::{Params, execute, query};
use crate::domain::event::{self, Change, EventPage, EventQuery, LogBounds, PRUNE_BATCH, merge_pages, new_event_id};
use crate::store::api::StoreError;
use crate::store::event_rows::{Columns, EVENT_COLUMNS, StoredEvent, drop_pruned_retries};
use crate::store::event_signal::EventSignal;

/// The channel of `NOTIFY`: its payload is the merchant's `pk`.
pub(super) const CHANNEL: &str = "storefront_events";

/// Appends the events of `changes` after the merchant's last, numbered by the statement that
/// moves the log's end (one round trip, with the notice). The log's row stays locked to the
/// commit, so the merchant's events are numbered in commit order; the notice is delivered at the
/// commit.
pub(super) async fn append(tx: &impl GenericClient, merchant_pk: i64, changes: &[Change]) -> Result<(), StoreError> {
    let n = changes.len() as i64;
    let types: Vec<i16> = changes.iter().map(|c| c.kind.code() as i16).collect();
    let at: Vec<i64> = changes.iter().map(|c| c.at_ms).collect();
    let ids: Vec<String> = changes.iter().map(|_| new_event_id()).collect();
    let locations: Vec<&str> = changes.iter().map(|c| c.location_id.as_str()).collect();
    let names: Vec<Option<&str>> = changes.iter().map(|c| c.merchant_location_id.as_deref()).collect();
    let versions: Vec<i64> = changes.iter().map(|c| c.version).collect();
    let statuses: Vec<&str> = changes.iter().map(|c| c.status.as_str()).collect();
    let previous: Vec<Option<&str>> = changes.iter().map(|c| c.previous_status.map(|s| s.as_str())).collect();
    let notice = merchant_pk.to_string();
    let insert_params: Params<'_> = &[
        &merchant_pk,
        &n,
        &types,
        &at,
        &ids,
        &locations,
        &names,
        &versions,
        &statuses,
        &previous,
    ];
    let notify_params: Params<'_> = &[&CHANNEL, &notice];
    let insert = execute(
        tx,
        "WITH head AS (INSERT INTO event_logs (merchant_pk, last_sequence) VALUES ($1, $2) \
           ON CONFLICT (merchant_pk) DO UPDATE SET last_sequence = event_logs.last_sequence + $2 \
           RETURNING last_sequence) \
         INSERT INTO events (merchant_pk, sequence, type, appended_at, event_id, location_id, merchant_location_id, \
           version, status, previous_status) \
         SELECT $1, head.last_sequence - $2 + u.o, u.t, u.a, u.i, u.l, u.m, u.v, u.s, u.p FROM head, \
         UNNEST($3::int2[], $4::int8[], $5::text[], $6::text[], $7::text[], $8::int8[], $9::text[], $10::text[]) \
           WITH ORDINALITY AS u(t, a, i, l, m, v, s, p, o)",
        insert_params,
    );
    let notify = execute(tx, "SELECT pg_notify($1, $2)", notify_params);
    // Nothing more for webhooks: each endpoint's events after its `delivered_through` are pending.
    tokio::try_join!(insert, notify)?;
    Ok(())
}

/// An event read with [`EVENT_COLUMNS`] from column `at` on.
pub(super) fn stored_event(r: &tokio_postgres::Row, at: usize) -> Result<StoredEvent, StoreError> {
    Ok(StoredEvent::read(r, at)?)
}

/// PostgreSQL's integers of every width read as one (`type` is `smallint`, `types` `integer`).
impl Columns for tokio_postgres::Row {
    type Error = tokio_postgres::Error;
    fn int(&self, i: usize) -> Result<i64, tokio_postgres::Error> {
        self.opt_int(i).and_then(|n| n.map_or_else(|| self.try_get(i), Ok))
    }
    fn opt_int(&self, i: usize) -> Result<Option<i64>, tokio_postgres::Error> {
        use tokio_postgres::types::Type;
        match self.columns().get(i).map(|c| c.type_().clone()) {
            Some(Type::INT2) => Ok(self.try_get::<_, Option<i16>>(i)?.map(i64::from)),
            Some(Type::INT4) => Ok(self.try_get::<_, Option<i32>>(i)?.map(i64::from)),
            _ => self.try_get(i),
        }
    }
    fn text(&self, i: usize) -> Result<String, tokio_postgres::Error> {
        self.try_get(i)
    }
    fn flag(&self, i: usize) -> Result<bool, tokio_postgres::Error> {
        self.try_get(i)
    }
    fn bytes(&self, i: usize) -> Result<Vec<u8>, tokio_postgres::Error> {
        self.try_get(i)
    }
    fn real(&self, i: usize) -> Result<f64, tokio_postgres::Error> {
        self.try_get(i)
    }
    fn opt_text(&self, i: usize) -> Result<Option<String>, tokio_postgres::Error> {
        self.try_get(i)
    }
}

/// One page of the feed, in one snapshot: every type from the log's own order, a filter's types
/// each from their index, merged. The snapshot's `BEGIN` goes out with the log's bounds and the
/// pages, and its `COMMIT` after their answers: two round trips.
pub(super) async fn page(pool: &Pool, q: &EventQuery) -> Result<EventPage, StoreError> {
    let snapshot = Pipelined::get(pool).await?;
    let tx = snapshot.client()?;
    let take = q.limit as i64 + 1;
    let page_params: Params<'_> = &[&q.merchant_pk, &q.after, &take];
    let bounds = bounds(tx, q.merchant_pk);
    let rows = |rows: Vec<tokio_postgres::Row>| {
        rows.iter()
            .map(|r| {
                let event = stored_event(r, 0)?;
                Ok::<_, StoreError>((event.sequence, event.render()?))
            })
            .collect::<Result<Vec<_>, _>>()
    };
    let (bounds, pages) = if q.types.is_all() {
        let sql = format!(
            "SELECT {EVENT_COLUMNS} FROM events e WHERE e.merchant_pk = $1 AND e.sequence > $2 \
             ORDER BY e.sequence LIMIT $3"
        );
        let events = query(tx, &sql, page_params);
        let (bounds, events) = begun_with(tx, BEGIN, async { tokio::try_join!(bounds, events) }).await?;
        (bounds, vec![rows(events)?])
    } else {
        let sql = format!(
            "SELECT {EVENT_COLUMNS} FROM events e WHERE e.merchant_pk = $1 AND e.type = $4 AND e.sequence > $2 \
             ORDER BY e.sequence LIMIT $3"
        );
        let sql = &sql;
        let by_type = q.types.types().map(|t| {
            let code = t.code() as i16;
            async move { query(tx, sql, &[&q.merchant_pk, &q.after, &take, &code]).await }
        });
        let pages = futures_util::future::try_join_all(by_type);
        let (bounds, pages) = begun_with(tx, BEGIN, async { tokio::try_join!(bounds, pages) }).await?;
        (bounds, pages.into_iter().map(rows).collect::<Result<_, _>>()?)
    };
    commit(tx).await?;
    snapshot.ended();
    let (events, has_next) = merge_pages(pages, q.limit);
    Ok(EventPage {
        events,
        has_next,
        bounds,
    })
}

/// Where the merchant's log stands, read in `tx` (a merchant with no event yet: nothing appended,
/// nothing pruned).
pub(super) async fn bounds(tx: &impl GenericClient, merchant_pk: i64) -> Result<LogBounds, StoreError> {
    let rows = query(
        tx,
        "SELECT last_sequence, pruned_through FROM event_logs WHERE merchant_pk = $1",
        &[&merchant_pk],
    )
    .await?;
    match rows.first() {
        Some(r) => Ok(LogBounds {
            last: r.try_get(0)?,
            pruned_through: r.try_get(1)?,
        }),
        None => Ok(LogBounds::default()),
    }
}

/// Drops up to `PRUNE_BATCH` events of one merchant appended before `cutoff_ms`, oldest first, in
/// one short transaction that waits for no merchant's writes (a log whose row is locked by a write
/// in flight is skipped until the next step); how many.
pub(super) async fn prune(pool: &Pool, cutoff_ms: i64) -> Result<usize, StoreError> {
    let mut client = pool.get().await?;
    let tx = client.transaction().await?;
    let oldest = tx
        .query_opt(
            "SELECT l.merchant_pk, l.pruned_through FROM event_logs l \
             WHERE l.pruned_through < l.last_sequence AND (SELECT appended_at FROM events e \
             WHERE e.merchant_pk = l.merchant_pk AND e.sequence > l.pruned_through ORDER BY e.sequence LIMIT 1) < $1 \
             LIMIT 1 FOR UPDATE SKIP LOCKED",
            &[&cutoff_ms],
        )
        .await?;
    let Some(row) = oldest else {
        return Ok(0);
    };
    let (merchant_pk, pruned): (i64, i64) = (row.try_get(0)?, row.try_get(1)?);
    let rows: Vec<(i64, i64)> = tx
        .query(
            "SELECT sequence, appended_at FROM events WHERE merchant_pk = $1 AND sequence > $2 \
             ORDER BY sequence LIMIT $3",
            &[&merchant_pk, &pruned, &(PRUNE_BATCH as i64)],
        )
        .await?
        .iter()
        .map(|r| Ok((r.try_get(0)?, r.try_get(1)?)))
        .collect::<Result<_, StoreError>>()?;
    let Some(through) = event::prunable_through(&rows, cutoff_ms) else {
        return Ok(0);
    };
    let dropped = tx
        .execute(
            "DELETE FROM events WHERE merchant_pk = $1 AND sequence > $2 AND sequence <= $3",
            &[&merchant_pk, &pruned, &through],
        )
        .await?;
    tx.execute(&drop_pruned_retries('$'), &[&merchant_pk, &pruned, &through])
        .await?;
    tx.execute(
        "UPDATE event_logs SET pruned_through = $2 WHERE merchant_pk = $1",
        &[&merchant_pk, &through],
    )
    .await?;
    tx.commit().await?;
    Ok(usize::try_from(dropped).unwrap_or(0).max(1))
}

/// Rings `signal` for every merchant whose log any instance grew, for as long as it runs: one
/// connection of its own `LISTEN`s; when it breaks, it is opened again a second later, and every
/// waiter looks again (notices may have been missed meanwhile).
pub(super) async fn follow(mut config: tokio_postgres::Config, signal: Arc<EventSignal>) {
    config
        .application_name("storefront-events")
        .connect_timeout(Duration::from_secs(5))
        .keepalives(true)
        .keepalives_idle(Duration::from_secs(10))
        .keepalives_interval(Duration::from_secs(5))
        .keepalives_retries(3);
    loop {
        match listen(&config, &signal).await {
            Ok(()) => tracing::warn!("the events' notice connection closed; opening it again"),
            Err(e) => {
                tracing::warn!(error = %crate::errors::ErrorChain(&e), "the events' notice connection failed; opening it again")
            }
        }
        signal.ring_all();
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// One notice connection, until it breaks.
async fn listen(config: &tokio_postgres::Config, signal: &Arc<EventSignal>) -> Result<(), tokio_postgres::Error> {
    let (client, mut connection) = config.connect(tokio_postgres::NoTls).await?;
    let ringing = Arc::clone(signal);
    let messages = tokio::spawn(async move {
        let mut messages = futures_util::stream::poll_fn(move |cx| connection.poll_message(cx));
        while let Some(message) = messages.next().await {
            match message {
                Ok(AsyncMessage::Notification(notice)) => {
                    if let Ok(merchant_pk) = notice.payload().parse::<i64>() {
                        ringing.ring(merchant_pk);
                    }
                }
                Ok(_) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    });
    if let Err(e) = client.batch_execute(&format!("LISTEN {CHANNEL}")).await {
        // A connection ended by the database while it was to listen: the database's reason (an
        // operator's terminate, a restart) reached either the statement or the connection, and the
        // other learnt only that it closed. Dropping the client ends the connection whatever the
        // failure, so the wait is short.
        drop(client);
        return Err(match messages.await {
            Ok(Err(reason)) if e.as_db_error().is_none() => reason,
            _ => e,
        });
    }
    // Listening from here: what was committed before is seen by the waiters' own look.
    signal.ring_all();
    let ended = messages.await;
    drop(client);
    match ended {
        Ok(result) => result,
        Err(_) => Ok(()),
    }
}

//! Webhook SQL: the endpoints, their pending deliveries and their attempts. The
//! writes run on the writer thread, each in a short transaction of its own; the reads on the
//! read connections.

use std::sync::Arc;

use async_trait::async_trait;
use futures_util::FutureExt;
use rusqlite::{Connection, OptionalExtension, Row, params};

use super::events::stored_event;
use super::readers::ReadPool;
use super::writer::{Jobs, write};
use crate::domain::event::EventTypes;
use crate::domain::webhook::{Attempt, DisabledReason, MAX_WEBHOOKS, Webhook, WebhookStatus};
use crate::store::api::{StoreError, millis, now_ms};
use crate::store::event_rows::{
    ClaimedEndpoint, ENDPOINT_COLUMNS, ENDPOINT_WIDTH, EVENT_COLUMNS, EVENT_WIDTH, StoredEvent, attempts_sql,
    read_attempt,
};
use crate::store::heavy::HeavyWork;
use crate::store::webhook_api::{
    AttemptsQuery, Candidate, ClaimRequest, Claimed, Due, Failing, Held, Lost, NewWebhook, PRUNE_BATCH, SettlePlan,
    WebhookChange, WebhookStore, Window, retry_room, take_rows,
};
use crate::store::webhook_sql::{self, WindowCandidate, WindowSteps};

/// The parameter mark of the SQL written once for both engines.
const M: char = '?';

pub(super) struct SqliteWebhooks {
    pub(super) jobs: Jobs,
    pub(super) readers: Arc<ReadPool>,
    /// Turns at the writer for heavy transactions (a recovery's).
    pub(super) heavy: Arc<HeavyWork>,
}

const WEBHOOK: &str = "webhook_id, url, types, status, disabled_reason, created_at";

fn webhook(r: &Row<'_>) -> rusqlite::Result<Webhook> {
    Ok(Webhook {
        webhook_id: r.get(0)?,
        url: r.get(1)?,
        types: r.get::<_, Option<i64>>(2)?.map(EventTypes::from_bits),
        status: super::column::word(r, 3, "status", WebhookStatus::from_wire)?,
        disabled_reason: r
            .get::<_, Option<String>>(4)?
            .and_then(|s| DisabledReason::from_wire(&s)),
        created_at_ms: r.get(5)?,
    })
}

fn bits(types: Option<EventTypes>) -> Option<i64> {
    types.map(|t| i64::from(t.bits()))
}

/// Claiming windows on this connection, its claims held until `until_ms`.
struct WindowClaims<'a> {
    tx: &'a Connection,
    until_ms: i64,
}

impl WindowSteps for WindowClaims<'_> {
    async fn endpoints(&mut self, req: &ClaimRequest<'_>) -> Result<(Vec<WindowCandidate>, bool), StoreError> {
        // Skipped endpoints are read past: the query asks for as many more.
        let limit = (req.windows + req.skip.len()) as i64;
        let read = |r: &Row<'_>| {
            Ok(WindowCandidate {
                endpoint: ClaimedEndpoint::read(r)?,
                delivered_through: r.get(ENDPOINT_WIDTH)?,
                last_sequence: r.get(ENDPOINT_WIDTH + 1)?,
                resent_through: r.get(ENDPOINT_WIDTH + 2)?,
            })
        };
        let mut found: Vec<WindowCandidate> = match req.merchants {
            None => self
                .tx
                .prepare_cached(&webhook_sql::window_endpoints("?1", "?2", "", "", ""))?
                .query_map(params![req.now_ms, limit], read)?
                .collect::<Result<_, _>>()?,
            Some(merchants) => {
                let of = " AND w.merchant_pk IN (SELECT value FROM json_each(?3))";
                let list: Vec<String> = merchants.iter().map(i64::to_string).collect();
                let list = format!("[{}]", list.join(","));
                self.tx
                    .prepare_cached(&webhook_sql::window_endpoints("?1", "?2", "", of, ""))?
                    .query_map(params![req.now_ms, limit, list], read)?
                    .collect::<Result<_, _>>()?
            }
        };
        let more = found.len() as i64 >= limit;
        found.retain(|c| !req.skip.contains(&c.endpoint.webhook_id));
        Ok((found, more))
    }

    async fn events(&mut self, c: &WindowCandidate, size: i64) -> Result<Vec<(StoredEvent, bool)>, StoreError> {
        let e = &c.endpoint;
        Ok(self
            .tx
            .prepare_cached(&webhook_sql::window_events(M))?
            .query_map(
                params![e.merchant_pk, c.delivered_through, size, e.webhook_id, c.resent_through],
                |r| Ok((stored_event(r, 0)?, r.get(EVENT_WIDTH)?)),
            )?
            .collect::<Result<_, _>>()?)
    }

    async fn claim(&mut self, window: &Window, req: &ClaimRequest<'_>) -> Result<(), StoreError> {
        self.tx
            .prepare_cached(&webhook_sql::claim_window(M, "?4"))?
            .execute(params![window.webhook_id, window.through, req.owner, self.until_ms])?;
        Ok(())
    }
}

/// Retries due of enabled endpoints, none of those in `req.skip`: the endpoints with a retry due
/// are offered to the chooser (one probe each, the earliest due first), then only the chosen ones'
/// rows are read, due first and within their room, and taken one of each endpoint in turn,
/// `req.retries` at most: what a claim reads is bounded by what it may claim, whatever the
/// backlogs. With whether any endpoint was offered.
fn claim_retries(tx: &Connection, req: &ClaimRequest<'_>, until_ms: i64) -> Result<(Vec<Due>, bool), StoreError> {
    let mut offered: Vec<Candidate> = tx
        .prepare_cached(&webhook_sql::retry_offers("?1", "?1", ""))?
        .query_map([req.now_ms], |r| {
            Ok(Candidate {
                webhook_id: r.get(0)?,
                merchant_pk: r.get(1)?,
                failing: r.get(2)?,
            })
        })?
        .collect::<Result<_, _>>()?;
    offered.retain(|c| !req.skip.contains(&c.webhook_id));
    let room = retry_room(req.chooser.as_ref(), &offered, req.retries);
    let mut rows = tx.prepare_cached(&format!(
        "SELECT {ENDPOINT_COLUMNS}, d.attempts, {EVENT_COLUMNS} FROM deliveries d \
         JOIN webhooks w ON w.webhook_id = d.webhook_id \
         JOIN events e ON e.merchant_pk = d.merchant_pk AND e.sequence = d.sequence \
         WHERE {} ORDER BY d.next_attempt_at LIMIT ?3",
        webhook_sql::retries_due("?1", "?2", "?2")
    ))?;
    let mut read: Vec<Vec<Due>> = Vec::with_capacity(offered.len());
    for (candidate, &room) in offered.iter().zip(&room) {
        let mut due = Vec::new();
        if room > 0 {
            for row in rows.query_map(params![candidate.webhook_id, req.now_ms, room as i64], |r| {
                Ok((
                    ClaimedEndpoint::read(r)?,
                    r.get::<_, i64>(ENDPOINT_WIDTH)?,
                    stored_event(r, ENDPOINT_WIDTH + 1)?,
                ))
            })? {
                let (endpoint, attempts, event) = row?;
                due.push(endpoint.due(&event, attempts, req.now_ms)?);
            }
        }
        read.push(due);
    }
    let mut claim = tx.prepare_cached(
        "UPDATE deliveries SET claim_until = ?3, claim_owner = ?4 WHERE webhook_id = ?1 AND sequence = ?2",
    )?;
    let claimed = take_rows(read, req.retries);
    for d in &claimed {
        claim.execute(params![d.webhook_id, d.sequence, until_ms, req.owner])?;
    }
    Ok((claimed, !offered.is_empty()))
}

/// The merchant's endpoint `webhook_id` that is not deleted.
fn find(conn: &Connection, merchant_pk: i64, webhook_id: &str) -> Result<Option<Webhook>, StoreError> {
    Ok(conn
        .prepare_cached(&format!(
            "SELECT {WEBHOOK} FROM webhooks WHERE webhook_id = ?1 AND merchant_pk = ?2 AND deleted_at IS NULL"
        ))?
        .query_row(params![webhook_id, merchant_pk], webhook)
        .optional()?)
}

#[async_trait]
impl WebhookStore for SqliteWebhooks {
    async fn create_webhook(&self, merchant_pk: i64, new: NewWebhook) -> Result<Option<Webhook>, StoreError> {
        write(&self.jobs, move |tx| {
            let count: i64 = tx
                .prepare_cached(&webhook_sql::count_live(M))?
                .query_row([merchant_pk], |r| r.get(0))?;
            if count >= MAX_WEBHOOKS as i64 {
                return Ok(None);
            }
            let w = &new.webhook;
            tx.prepare_cached(&webhook_sql::insert(M))?.execute(params![
                w.webhook_id,
                merchant_pk,
                w.url,
                bits(w.types),
                w.status.as_str(),
                new.secret.expose(),
                w.created_at_ms
            ])?;
            Ok(Some(new.webhook))
        })
        .await
    }

    async fn list_webhooks(&self, merchant_pk: i64) -> Result<Vec<Webhook>, StoreError> {
        self.readers
            .read(move |c| {
                let mut stmt = c.prepare_cached(&format!(
                    "SELECT {WEBHOOK} FROM webhooks WHERE merchant_pk = ?1 AND deleted_at IS NULL \
                     ORDER BY created_at, webhook_id"
                ))?;
                let rows = stmt.query_map([merchant_pk], webhook)?;
                Ok(rows.collect::<Result<_, _>>()?)
            })
            .await
    }

    async fn change_webhook(
        &self,
        merchant_pk: i64,
        webhook_id: &str,
        change: WebhookChange,
    ) -> Result<Option<Webhook>, StoreError> {
        let webhook_id = webhook_id.to_owned();
        write(&self.jobs, move |tx| {
            let Some(before) = find(tx, merchant_pk, &webhook_id)? else {
                return Ok(None);
            };
            match change {
                WebhookChange::Delete => {
                    tx.execute(
                        &webhook_sql::delete(M),
                        params![webhook_id, crate::store::api::now_ms()],
                    )?;
                    tx.execute(&webhook_sql::drop_retries(M), [&webhook_id])?;
                    return Ok(Some(before));
                }
                WebhookChange::Enable => {
                    tx.execute(&webhook_sql::enable(M), params![webhook_id, merchant_pk])?;
                }
                WebhookChange::Rotate { secret, old_until_ms } => {
                    tx.execute(
                        &webhook_sql::rotate(M),
                        params![webhook_id, secret.expose(), old_until_ms],
                    )?;
                }
            }
            find(tx, merchant_pk, &webhook_id)
        })
        .await
    }

    async fn attempts(&self, page: AttemptsQuery) -> Result<Option<Vec<Attempt>>, StoreError> {
        let (merchant_pk, before, limit) = (page.merchant_pk, page.before, page.limit);
        let (webhook_id, filter) = (page.webhook_id, page.filter);
        self.readers
            .snapshot(move |c| {
                let known = c
                    .prepare_cached("SELECT 1 FROM webhooks WHERE webhook_id = ?1 AND merchant_pk = ?2")?
                    .query_row(params![webhook_id, merchant_pk], |_| Ok(()))
                    .optional()?;
                if known.is_none() {
                    return Ok(None);
                }
                let mut stmt = c.prepare_cached(&attempts_sql(&filter, '?'))?;
                let limit = limit as i64 + 1;
                let before = before.unwrap_or(i64::MAX);
                let outcome = filter.outcome.map(|o| o.as_str());
                let mut params: Vec<&dyn rusqlite::ToSql> = vec![&webhook_id, &before, &limit];
                if let Some(outcome) = &outcome {
                    params.push(outcome);
                }
                if let Some(event_id) = &filter.event_id {
                    params.push(event_id);
                }
                let mut rows = stmt.query(params.as_slice())?;
                let mut attempts = Vec::new();
                while let Some(row) = rows.next()? {
                    attempts.push(read_attempt(row)?);
                }
                Ok(Some(attempts))
            })
            .await
    }

    async fn claim(&self, request: ClaimRequest<'_>) -> Result<Claimed, StoreError> {
        if !request.asks() {
            return Ok(Claimed::default());
        }
        let skip = request.skip.to_vec();
        let owner = request.owner.to_owned();
        let chooser = Arc::clone(request.chooser);
        let merchants = request.merchants.map(<[i64]>::to_vec);
        let (now_ms, hold, windows, retries) = (request.now_ms, request.hold, request.windows, request.retries);
        write(&self.jobs, move |tx| {
            let req = ClaimRequest {
                owner: &owner,
                now_ms,
                hold,
                windows,
                retries,
                skip: &skip,
                merchants: merchants.as_deref(),
                chooser: &chooser,
            };
            let until_ms = now_ms.saturating_add(millis(hold));
            let mut claimed = Claimed::default();
            if req.looks_for_windows() {
                let mut steps = WindowClaims { tx, until_ms };
                // Every step is done on this connection when it returns: the future is ready at once.
                webhook_sql::claim_windows(&mut steps, &req, &mut claimed)
                    .now_or_never()
                    .unwrap_or_else(|| Err(StoreError::Backend("a claim's step waited on this connection".into())))?;
            }
            if retries > 0 {
                let skip = webhook_sql::skip_after_windows(&skip, &claimed.windows);
                let req = ClaimRequest { skip: &skip, ..req };
                (claimed.retries, claimed.retries_offered) = claim_retries(tx, &req, until_ms)?;
            }
            Ok(claimed)
        })
        .await
    }

    async fn extend(&self, held: Held<'_>) -> Result<Lost, StoreError> {
        let (owner, windows, retries) = (held.owner.to_owned(), held.windows.to_vec(), held.retries.to_vec());
        let until_ms = now_ms().saturating_add(millis(held.hold));
        write(&self.jobs, move |tx| {
            let mut window = tx.prepare_cached(
                "UPDATE webhooks SET claim_until = ?3 WHERE webhook_id = ?1 AND claim_owner = ?2 AND claim_until > 0",
            )?;
            let mut lost = Lost::default();
            for id in windows {
                if window.execute(params![id, owner, until_ms])? == 0 {
                    lost.windows.push(id);
                }
            }
            let mut retry = tx.prepare_cached(
                "UPDATE deliveries SET claim_until = ?4 WHERE webhook_id = ?1 AND sequence = ?2 AND claim_owner = ?3",
            )?;
            for (id, sequence) in retries {
                if retry.execute(params![id, sequence, owner, until_ms])? == 0 {
                    lost.retries.push((id, sequence));
                }
            }
            Ok(lost)
        })
        .await
    }

    async fn settle(&self, owner: &str, plan: SettlePlan) -> Result<(), StoreError> {
        let owner = owner.to_owned();
        write(&self.jobs, move |tx| write_plan(tx, &owner, plan)).await
    }

    async fn pending(&self) -> Result<u64, StoreError> {
        self.readers
            .read(|c| {
                let retries: i64 = c.query_row("SELECT count(*) FROM deliveries", [], |r| r.get(0))?;
                let fresh: i64 = c.query_row(
                    "SELECT coalesce(sum(l.last_sequence - w.delivered_through), 0) FROM webhooks w \
                     JOIN event_logs l ON l.merchant_pk = w.merchant_pk \
                     WHERE w.status = 'ENABLED' AND w.deleted_at IS NULL",
                    [],
                    |r| r.get(0),
                )?;
                Ok(u64::try_from(retries + fresh).unwrap_or(0))
            })
            .await
    }

    async fn prune_attempts(&self, cutoff_ms: i64) -> Result<usize, StoreError> {
        write(&self.jobs, move |tx| {
            Ok(tx.execute(
                "DELETE FROM delivery_attempts WHERE id IN \
                 (SELECT id FROM delivery_attempts WHERE attempted_at < ?1 ORDER BY id LIMIT ?2)",
                params![cutoff_ms, PRUNE_BATCH],
            )?)
        })
        .await
    }
}

/// Writes a settle plan (`webhooks::settle`): deliveries and windows only where `owner` still
/// holds their claim, retries only for an endpoint that is enabled.
fn write_plan(tx: &Connection, owner: &str, plan: SettlePlan) -> Result<(), StoreError> {
    let mut insert = tx.prepare_cached(
        "INSERT INTO delivery_attempts (webhook_id, event_id, sequence, attempt, attempted_at, outcome, \
         http_status, error, duration_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
    )?;
    for (webhook_id, a) in &plan.attempts {
        insert.execute(params![
            webhook_id,
            a.event_id,
            a.sequence,
            a.attempt,
            a.attempted_at_ms,
            a.outcome.as_str(),
            a.http_status,
            a.error,
            a.duration_ms
        ])?;
    }
    for (webhook_id, failing) in &plan.failing {
        match *failing {
            Failing::Clear => tx
                .prepare_cached("UPDATE webhooks SET failing_since = NULL WHERE webhook_id = ?1")?
                .execute([webhook_id])?,
            Failing::SinceUnlessSet(at) => tx
                .prepare_cached(
                    "UPDATE webhooks SET failing_since = coalesce(failing_since, ?2) WHERE webhook_id = ?1",
                )?
                .execute(params![webhook_id, at])?,
            Failing::Since(at) => tx
                .prepare_cached("UPDATE webhooks SET failing_since = ?2 WHERE webhook_id = ?1")?
                .execute(params![webhook_id, at])?,
        };
    }
    for (webhook_id, reason) in &plan.disable {
        tx.prepare_cached(
            "UPDATE webhooks SET status = 'DISABLED', disabled_reason = ?2, claim_until = 0, claim_owner = NULL \
             WHERE webhook_id = ?1 AND status = 'ENABLED' AND deleted_at IS NULL",
        )?
        .execute(params![webhook_id, reason.as_str()])?;
        tx.prepare_cached("DELETE FROM deliveries WHERE webhook_id = ?1")?
            .execute([webhook_id])?;
    }
    let mut new_retry = tx.prepare_cached(
        "INSERT INTO deliveries (webhook_id, sequence, merchant_pk, attempts, next_attempt_at, appended_at) \
         SELECT ?1, ?2, ?3, ?4, ?5, ?6 FROM webhooks w WHERE w.webhook_id = ?1 AND w.status = 'ENABLED' \
         AND w.deleted_at IS NULL AND w.claim_owner = ?7 AND w.claimed_through = ?8 \
         ON CONFLICT (webhook_id, sequence) DO NOTHING",
    )?;
    for (r, claimed_through) in &plan.new_retries {
        new_retry.execute(params![
            r.webhook_id,
            r.sequence,
            r.merchant_pk,
            r.attempts,
            r.at_ms,
            r.appended_at_ms,
            owner,
            claimed_through
        ])?;
    }
    let mut reschedule = tx.prepare_cached(
        "UPDATE deliveries SET attempts = ?3, next_attempt_at = ?4, claim_until = 0, claim_owner = NULL \
         WHERE webhook_id = ?1 AND sequence = ?2 AND claim_owner = ?5",
    )?;
    for r in &plan.rescheduled {
        reschedule.execute(params![r.webhook_id, r.sequence, r.attempts, r.at_ms, owner])?;
    }
    let mut done =
        tx.prepare_cached("DELETE FROM deliveries WHERE webhook_id = ?1 AND sequence = ?2 AND claim_owner = ?3")?;
    for (webhook_id, sequence) in &plan.done {
        done.execute(params![webhook_id, sequence, owner])?;
    }
    let mut window = tx.prepare_cached(
        "UPDATE webhooks SET delivered_through = max(delivered_through, coalesce(?3, delivered_through)), \
         claim_until = 0, claim_owner = NULL WHERE webhook_id = ?1 AND claim_owner = ?4 AND claimed_through = ?2",
    )?;
    for (webhook_id, claimed_through, settled_through) in &plan.windows {
        window.execute(params![webhook_id, claimed_through, settled_through, owner])?;
    }
    Ok(())
}

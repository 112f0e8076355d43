//! Webhook SQL: the endpoints, their pending deliveries and their attempts.
//! Several instances claim deliveries at once: a claim takes rows no other transaction holds
//! (`FOR UPDATE SKIP LOCKED`) and marks them with its owner until `claim_until`, on the
//! database's clock (`DB_NOW`: no instance's clock decides who holds a claim), so each attempt is
//! made by one instance, and a dead instance's claims are taken over once they expire.
//! The delivery worker's statements (claims, extensions, settlements) are prepared once per
//! connection: a turn of the worker runs several, each then one round trip rather than two.

use async_trait::async_trait;
use deadpool_postgres::{GenericClient, Pool};
use tokio_postgres::Row;

use super::events::stored_event;
use super::sql::{self, lock_merchant};
use crate::domain::event::EventTypes;
use crate::domain::ids;
use crate::domain::webhook::{Attempt, DisabledReason, MAX_WEBHOOKS, Webhook, WebhookStatus};
use crate::store::api::millis;
use crate::store::api::{StoreError, stored_word};
use crate::store::event_rows::{
    ClaimedEndpoint, ENDPOINT_COLUMNS, ENDPOINT_WIDTH, EVENT_COLUMNS, EVENT_WIDTH, StoredEvent, attempts_sql,
    read_attempt,
};
use crate::store::webhook_api::{
    AttemptsQuery, Candidate, ClaimRequest, Claimed, Due, Failing, Held, Lost, NewWebhook, PRUNE_BATCH, SettlePlan,
    WebhookChange, WebhookStore, Window, retry_room, take_rows,
};
use crate::store::webhook_sql::{self, WindowCandidate, WindowSteps};

/// The parameter mark of the SQL written once for both engines.
const M: char = '$';

/// The condition that leaves out the endpoints a claim skips (the statement's second parameter).
const SKIP: &str = " AND NOT (w.webhook_id = ANY($2))";

/// The database's clock, in Unix milliseconds: claims are held and expire by it. Read once a
/// statement (a scalar subquery is evaluated once), not once a row: a look at every endpoint
/// compares it with each one's claim.
pub(super) const DB_NOW: &str = "(SELECT (extract(epoch from clock_timestamp()) * 1000)::int8)";

pub(super) struct PgWebhooks {
    pub(super) pool: Pool,
    /// Turns at the pool for heavy transactions (a recovery's).
    pub(super) heavy: std::sync::Arc<crate::store::heavy::HeavyWork>,
}

const WEBHOOK: &str = "webhook_id, url, types, status, disabled_reason, created_at";

fn webhook(r: &Row) -> Result<Webhook, StoreError> {
    Ok(Webhook {
        webhook_id: r.try_get(0)?,
        url: r.try_get(1)?,
        types: r
            .try_get::<_, Option<i32>>(2)?
            .map(|bits| EventTypes::from_bits(i64::from(bits))),
        status: stored_word(r.try_get(3)?, "status", WebhookStatus::from_wire)?,
        disabled_reason: r.try_get::<_, Option<&str>>(4)?.and_then(DisabledReason::from_wire),
        created_at_ms: r.try_get(5)?,
    })
}

fn bits(types: Option<EventTypes>) -> Option<i32> {
    types.map(|t| i32::from(t.bits()))
}

async fn find(c: &impl GenericClient, merchant_pk: i64, webhook_id: &str) -> Result<Option<Webhook>, StoreError> {
    if !ids::may_name(webhook_id) {
        return Ok(None);
    }
    c.query_opt(
        &format!("SELECT {WEBHOOK} FROM webhooks WHERE webhook_id = $1 AND merchant_pk = $2 AND deleted_at IS NULL"),
        &[&webhook_id, &merchant_pk],
    )
    .await?
    .as_ref()
    .map(webhook)
    .transpose()
}

/// Claiming windows in a transaction, the endpoints' rows locked against other instances' claims.
struct WindowClaims<'a, C> {
    tx: &'a C,
}

impl<C: GenericClient + Sync> WindowSteps for WindowClaims<'_, C> {
    async fn endpoints(&mut self, req: &ClaimRequest<'_>) -> Result<(Vec<WindowCandidate>, bool), StoreError> {
        const LOCK: &str = " FOR UPDATE OF w SKIP LOCKED";
        let limit = req.windows as i64;
        let rows = match req.merchants {
            None => {
                let statement = webhook_sql::window_endpoints(DB_NOW, "$1", SKIP, "", LOCK);
                sql::query(self.tx, &statement, &[&limit, &req.skip]).await?
            }
            Some(merchants) => {
                let of = " AND w.merchant_pk = ANY($3)";
                let statement = webhook_sql::window_endpoints(DB_NOW, "$1", SKIP, of, LOCK);
                sql::query(self.tx, &statement, &[&limit, &req.skip, &merchants]).await?
            }
        };
        let more = rows.len() as i64 >= limit;
        let found = rows
            .iter()
            .map(|r| {
                Ok(WindowCandidate {
                    endpoint: ClaimedEndpoint::read(r)?,
                    delivered_through: r.try_get(ENDPOINT_WIDTH)?,
                    last_sequence: r.try_get(ENDPOINT_WIDTH + 1)?,
                    resent_through: r.try_get(ENDPOINT_WIDTH + 2)?,
                })
            })
            .collect::<Result<_, StoreError>>()?;
        Ok((found, more))
    }

    async fn events(&mut self, c: &WindowCandidate, size: i64) -> Result<Vec<(StoredEvent, bool)>, StoreError> {
        let e = &c.endpoint;
        sql::query(
            self.tx,
            &webhook_sql::window_events(M),
            &[
                &e.merchant_pk,
                &c.delivered_through,
                &size,
                &e.webhook_id,
                &c.resent_through,
            ],
        )
        .await?
        .iter()
        .map(|r| Ok((stored_event(r, 0)?, r.try_get::<_, bool>(EVENT_WIDTH)?)))
        .collect()
    }

    async fn claim(&mut self, window: &Window, req: &ClaimRequest<'_>) -> Result<(), StoreError> {
        sql::execute(
            self.tx,
            &webhook_sql::claim_window(M, &format!("{DB_NOW} + $4")),
            &[&window.webhook_id, &window.through, &req.owner, &millis(req.hold)],
        )
        .await?;
        Ok(())
    }
}

/// Retries due of enabled endpoints, none of those in `req.skip`: the endpoints with a retry due
/// are offered to the chooser (one probe each, the earliest due first), then only the chosen ones'
/// rows are read, due first and within their room, and taken one of each endpoint in turn,
/// `req.retries` at most; only those are locked (those another instance's claim holds are
/// skipped) and claimed. What a claim reads and locks is bounded by what it may claim, whatever
/// the backlogs. With whether any endpoint was offered.
async fn claim_retries(tx: &impl GenericClient, req: &ClaimRequest<'_>) -> Result<(Vec<Due>, bool), StoreError> {
    let offers = sql::query(
        tx,
        &webhook_sql::retry_offers("$1", DB_NOW, SKIP),
        &[&req.now_ms, &req.skip],
    )
    .await?;
    let offered = offers
        .iter()
        .map(|r| {
            Ok(Candidate {
                webhook_id: r.try_get(0)?,
                merchant_pk: r.try_get(1)?,
                failing: r.try_get(2)?,
            })
        })
        .collect::<Result<Vec<_>, StoreError>>()?;
    let room = retry_room(req.chooser.as_ref(), &offered, req.retries);
    let (ids, limits): (Vec<&str>, Vec<i64>) = offered
        .iter()
        .zip(&room)
        .filter(|&(_, &n)| n > 0)
        .map(|(c, &n)| (c.webhook_id.as_str(), n as i64))
        .unzip();
    if ids.is_empty() {
        return Ok((Vec::new(), !offered.is_empty()));
    }
    let rows = sql::query(
        tx,
        &format!(
            "SELECT d.webhook_id, d.sequence FROM UNNEST($1::text[], $2::int8[]) WITH ORDINALITY AS u(w, n, o) \
             CROSS JOIN LATERAL (SELECT d.webhook_id, d.sequence, d.next_attempt_at FROM deliveries d WHERE {} \
             ORDER BY d.next_attempt_at LIMIT u.n) d ORDER BY u.o, d.next_attempt_at",
            webhook_sql::retries_due("u.w", "$3", DB_NOW)
        ),
        &[&ids, &limits, &req.now_ms],
    )
    .await?;
    let mut read: Vec<Vec<(&str, i64)>> = vec![Vec::new(); ids.len()];
    let mut at = 0;
    for row in &rows {
        let webhook_id: &str = row.try_get(0)?;
        while ids.get(at).is_some_and(|&id| id != webhook_id) {
            at += 1;
        }
        if let (Some(rows), Some(&id)) = (read.get_mut(at), ids.get(at)) {
            rows.push((id, row.try_get(1)?));
        }
    }
    let (claim_ids, claim_seqs): (Vec<&str>, Vec<i64>) = take_rows(read, req.retries).into_iter().unzip();
    let statement = format!(
        "WITH locked AS (SELECT d.webhook_id, d.sequence FROM deliveries d \
               JOIN UNNEST($1::text[], $2::int8[]) AS u(w, s) ON d.webhook_id = u.w AND d.sequence = u.s \
               WHERE d.claim_until < {DB_NOW} FOR UPDATE OF d SKIP LOCKED), \
         claimed AS (UPDATE deliveries d SET claim_until = {DB_NOW} + $3, claim_owner = $4 \
               FROM locked WHERE d.webhook_id = locked.webhook_id AND d.sequence = locked.sequence \
               RETURNING d.webhook_id, d.sequence, d.merchant_pk, d.attempts, d.next_attempt_at) \
         SELECT {ENDPOINT_COLUMNS}, c.attempts, {EVENT_COLUMNS} \
         FROM claimed c JOIN webhooks w ON w.webhook_id = c.webhook_id \
         JOIN events e ON e.merchant_pk = c.merchant_pk AND e.sequence = c.sequence ORDER BY c.next_attempt_at"
    );
    let claimed = sql::query(
        tx,
        &statement,
        &[&claim_ids, &claim_seqs, &millis(req.hold), &req.owner],
    )
    .await?;
    let dues = claimed
        .iter()
        .map(|r| {
            let attempts = i64::from(r.try_get::<_, i32>(ENDPOINT_WIDTH)?);
            ClaimedEndpoint::read(r)?.due(&stored_event(r, ENDPOINT_WIDTH + 1)?, attempts, req.now_ms)
        })
        .collect::<Result<_, StoreError>>()?;
    Ok((dues, true))
}

#[async_trait]
impl WebhookStore for PgWebhooks {
    async fn create_webhook(&self, merchant_pk: i64, new: NewWebhook) -> Result<Option<Webhook>, StoreError> {
        let mut client = self.pool.get().await?;
        let tx = client.transaction().await?;
        // The count and the insert take turns with the merchant's other writes.
        lock_merchant(&tx, merchant_pk).await?;
        let count: i64 = tx
            .query_one(&webhook_sql::count_live(M), &[&merchant_pk])
            .await?
            .try_get(0)?;
        if count >= MAX_WEBHOOKS as i64 {
            return Ok(None);
        }
        let w = &new.webhook;
        // Where the merchant's log stands holds while the merchant's lock holds its writes.
        tx.execute(
            &webhook_sql::insert(M),
            &[
                &w.webhook_id,
                &merchant_pk,
                &w.url,
                &bits(w.types),
                &w.status.as_str(),
                &new.secret.expose(),
                &w.created_at_ms,
            ],
        )
        .await?;
        tx.commit().await?;
        Ok(Some(new.webhook))
    }

    async fn list_webhooks(&self, merchant_pk: i64) -> Result<Vec<Webhook>, StoreError> {
        let client = self.pool.get().await?;
        client
            .query(
                &format!(
                    "SELECT {WEBHOOK} FROM webhooks WHERE merchant_pk = $1 AND deleted_at IS NULL \
                     ORDER BY created_at, webhook_id"
                ),
                &[&merchant_pk],
            )
            .await?
            .iter()
            .map(webhook)
            .collect()
    }

    async fn change_webhook(
        &self,
        merchant_pk: i64,
        webhook_id: &str,
        change: WebhookChange,
    ) -> Result<Option<Webhook>, StoreError> {
        let mut client = self.pool.get().await?;
        let tx = client.transaction().await?;
        lock_merchant(&tx, merchant_pk).await?;
        let Some(before) = find(&tx, merchant_pk, webhook_id).await? else {
            return Ok(None);
        };
        match change {
            WebhookChange::Delete => {
                tx.execute(&webhook_sql::delete(M), &[&webhook_id, &crate::store::api::now_ms()])
                    .await?;
                tx.execute(&webhook_sql::drop_retries(M), &[&webhook_id]).await?;
                tx.commit().await?;
                return Ok(Some(before));
            }
            WebhookChange::Enable => {
                tx.execute(&webhook_sql::enable(M), &[&webhook_id, &merchant_pk])
                    .await?;
            }
            WebhookChange::Rotate { secret, old_until_ms } => {
                tx.execute(&webhook_sql::rotate(M), &[&webhook_id, &secret.expose(), &old_until_ms])
                    .await?;
            }
        }
        let after = find(&tx, merchant_pk, webhook_id).await?;
        tx.commit().await?;
        Ok(after)
    }

    async fn attempts(&self, page: AttemptsQuery) -> Result<Option<Vec<Attempt>>, StoreError> {
        let (merchant_pk, before, limit) = (page.merchant_pk, page.before, page.limit);
        let webhook_id = page.webhook_id;
        if !ids::may_name(&webhook_id) {
            return Ok(None);
        }
        let client = self.pool.get().await?;
        let known = client
            .query_opt(
                "SELECT 1 FROM webhooks WHERE webhook_id = $1 AND merchant_pk = $2",
                &[&webhook_id, &merchant_pk],
            )
            .await?;
        if known.is_none() {
            return Ok(None);
        }
        if page.filter.event_id.as_deref().is_some_and(|id| !ids::may_name(id)) {
            return Ok(Some(Vec::new()));
        }
        let sql = attempts_sql(&page.filter, '$');
        let before = before.unwrap_or(i64::MAX);
        let limit = limit as i64 + 1;
        let outcome = page.filter.outcome.map(|o| o.as_str());
        let mut params: Vec<&(dyn tokio_postgres::types::ToSql + Sync)> = vec![&webhook_id, &before, &limit];
        if let Some(outcome) = &outcome {
            params.push(outcome);
        }
        if let Some(event_id) = &page.filter.event_id {
            params.push(event_id);
        }
        let rows = client.query(&sql, &params).await?;
        rows.iter().map(read_attempt).collect::<Result<Vec<_>, _>>().map(Some)
    }

    async fn claim(&self, request: ClaimRequest<'_>) -> Result<Claimed, StoreError> {
        if !request.asks() {
            return Ok(Claimed::default());
        }
        let mut client = self.pool.get().await?;
        let mut claimed = Claimed::default();
        if request.looks_for_windows() {
            let tx = client.transaction().await?;
            webhook_sql::claim_windows(&mut WindowClaims { tx: &tx }, &request, &mut claimed).await?;
            tx.commit().await?;
        }
        if request.retries > 0 {
            let skip = webhook_sql::skip_after_windows(request.skip, &claimed.windows);
            let request = ClaimRequest { skip: &skip, ..request };
            let tx = client.transaction().await?;
            (claimed.retries, claimed.retries_offered) = claim_retries(&tx, &request).await?;
            tx.commit().await?;
        }
        Ok(claimed)
    }

    async fn extend(&self, held: Held<'_>) -> Result<Lost, StoreError> {
        let (owner, windows, retries) = (held.owner, held.windows, held.retries);
        let hold = held.hold;
        let client = self.pool.get().await?;
        let hold = millis(hold);
        let mut lost = Lost::default();
        if !windows.is_empty() {
            let statement = format!(
                "UPDATE webhooks SET claim_until = {DB_NOW} + $3 \
                 WHERE webhook_id = ANY($1) AND claim_owner = $2 AND claim_until > 0 RETURNING webhook_id"
            );
            let held: Vec<String> = sql::query(&client, &statement, &[&windows, &owner, &hold])
                .await?
                .iter()
                .map(|r| r.try_get(0))
                .collect::<Result<_, _>>()?;
            lost.windows = windows.iter().filter(|w| !held.contains(w)).cloned().collect();
        }
        if !retries.is_empty() {
            let (ids, sequences): (Vec<&str>, Vec<i64>) = retries.iter().map(|(w, s)| (w.as_str(), *s)).unzip();
            let statement = format!(
                "UPDATE deliveries d SET claim_until = {DB_NOW} + $4 FROM UNNEST($1::text[], $2::int8[]) AS u(w, s) \
                 WHERE d.webhook_id = u.w AND d.sequence = u.s AND d.claim_owner = $3 RETURNING d.webhook_id, d.sequence"
            );
            let held: Vec<(String, i64)> = sql::query(&client, &statement, &[&ids, &sequences, &owner, &hold])
                .await?
                .iter()
                .map(|r| Ok((r.try_get(0)?, r.try_get(1)?)))
                .collect::<Result<_, StoreError>>()?;
            lost.retries = retries.iter().filter(|r| !held.contains(r)).cloned().collect();
        }
        Ok(lost)
    }

    async fn settle(&self, owner: &str, plan: SettlePlan) -> Result<(), StoreError> {
        let mut client = self.pool.get().await?;
        let tx = client.transaction().await?;
        write_plan(&tx, owner, &plan).await?;
        tx.commit().await?;
        Ok(())
    }

    async fn pending(&self) -> Result<u64, StoreError> {
        const PENDING: &str = "SELECT (SELECT count(*) FROM deliveries) \
             + (SELECT coalesce(sum(l.last_sequence - w.delivered_through), 0) \
             FROM webhooks w JOIN event_logs l ON l.merchant_pk = w.merchant_pk \
             WHERE w.status = 'ENABLED' AND w.deleted_at IS NULL)::int8";
        let client = self.pool.get().await?;
        let n: i64 = match sql::query(&client, PENDING, &[]).await?.first() {
            Some(row) => row.try_get(0)?,
            None => 0,
        };
        Ok(u64::try_from(n).unwrap_or(0))
    }

    async fn prune_attempts(&self, cutoff_ms: i64) -> Result<usize, StoreError> {
        let client = self.pool.get().await?;
        let n = sql::execute(
            &client,
            "DELETE FROM delivery_attempts WHERE id IN \
             (SELECT id FROM delivery_attempts WHERE attempted_at < $1 ORDER BY id LIMIT $2)",
            &[&cutoff_ms, &PRUNE_BATCH],
        )
        .await?;
        Ok(usize::try_from(n).unwrap_or(0))
    }
}

/// Writes a settle plan (`webhooks::settle`), a statement for each of its parts that is not
/// empty: deliveries and windows only where `owner` still holds their claim, retries only for an
/// endpoint that is enabled.
async fn write_plan(tx: &impl GenericClient, owner: &str, plan: &SettlePlan) -> Result<(), StoreError> {
    if !plan.attempts.is_empty() {
        let ids: Vec<&str> = plan.attempts.iter().map(|(w, _)| w.as_str()).collect();
        let events: Vec<&str> = plan.attempts.iter().map(|(_, a)| a.event_id.as_str()).collect();
        let sequences: Vec<Option<i64>> = plan.attempts.iter().map(|(_, a)| a.sequence).collect();
        let numbers: Vec<i32> = plan.attempts.iter().map(|(_, a)| int4(a.attempt)).collect();
        let at: Vec<i64> = plan.attempts.iter().map(|(_, a)| a.attempted_at_ms).collect();
        let outcomes: Vec<&str> = plan.attempts.iter().map(|(_, a)| a.outcome.as_str()).collect();
        let statuses: Vec<Option<i32>> = plan
            .attempts
            .iter()
            .map(|(_, a)| a.http_status.and_then(|h| i32::try_from(h).ok()))
            .collect();
        let errors: Vec<Option<&str>> = plan.attempts.iter().map(|(_, a)| a.error.as_deref()).collect();
        let durations: Vec<i64> = plan.attempts.iter().map(|(_, a)| a.duration_ms).collect();
        sql::execute(
            tx,
            "INSERT INTO delivery_attempts (webhook_id, event_id, sequence, attempt, attempted_at, outcome, \
             http_status, error, duration_ms) SELECT * FROM UNNEST($1::text[], $2::text[], $3::int8[], $4::int4[], \
             $5::int8[], $6::text[], $7::int4[], $8::text[], $9::int8[])",
            &[
                &ids, &events, &sequences, &numbers, &at, &outcomes, &statuses, &errors, &durations,
            ],
        )
        .await?;
    }
    let mut clear: Vec<&str> = Vec::new();
    let (mut unless_ids, mut unless_at, mut since_ids, mut since_at) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for (webhook_id, failing) in &plan.failing {
        match *failing {
            Failing::Clear => clear.push(webhook_id.as_str()),
            Failing::SinceUnlessSet(at) => {
                unless_ids.push(webhook_id.as_str());
                unless_at.push(at);
            }
            Failing::Since(at) => {
                since_ids.push(webhook_id.as_str());
                since_at.push(at);
            }
        }
    }
    if !clear.is_empty() {
        sql::execute(
            tx,
            "UPDATE webhooks SET failing_since = NULL WHERE webhook_id = ANY($1) AND failing_since IS NOT NULL",
            &[&clear],
        )
        .await?;
    }
    if !unless_ids.is_empty() {
        sql::execute(
            tx,
            "UPDATE webhooks w SET failing_since = coalesce(w.failing_since, u.at) \
             FROM UNNEST($1::text[], $2::int8[]) AS u(id, at) WHERE w.webhook_id = u.id",
            &[&unless_ids, &unless_at],
        )
        .await?;
    }
    if !since_ids.is_empty() {
        sql::execute(
            tx,
            "UPDATE webhooks w SET failing_since = u.at FROM UNNEST($1::text[], $2::int8[]) AS u(id, at) \
             WHERE w.webhook_id = u.id",
            &[&since_ids, &since_at],
        )
        .await?;
    }
    if !plan.disable.is_empty() {
        let (ids, reasons): (Vec<&str>, Vec<&str>) = plan.disable.iter().map(|(w, r)| (w.as_str(), r.as_str())).unzip();
        sql::execute(
            tx,
            "UPDATE webhooks w SET status = 'DISABLED', disabled_reason = u.reason, claim_until = 0, claim_owner = NULL \
             FROM UNNEST($1::text[], $2::text[]) AS u(id, reason) \
             WHERE w.webhook_id = u.id AND w.status = 'ENABLED' AND w.deleted_at IS NULL",
            &[&ids, &reasons],
        )
        .await?;
        sql::execute(tx, "DELETE FROM deliveries WHERE webhook_id = ANY($1)", &[&ids]).await?;
    }
    if !plan.new_retries.is_empty() {
        let r = &plan.new_retries;
        let ids: Vec<&str> = r.iter().map(|(r, _)| r.webhook_id.as_str()).collect();
        let sequences: Vec<i64> = r.iter().map(|(r, _)| r.sequence).collect();
        let merchants: Vec<i64> = r.iter().map(|(r, _)| r.merchant_pk).collect();
        let attempts: Vec<i32> = r.iter().map(|(r, _)| int4(r.attempts)).collect();
        let at: Vec<i64> = r.iter().map(|(r, _)| r.at_ms).collect();
        let appended: Vec<i64> = r.iter().map(|(r, _)| r.appended_at_ms).collect();
        let claimed: Vec<i64> = r.iter().map(|(_, c)| *c).collect();
        sql::execute(
            tx,
            "INSERT INTO deliveries (webhook_id, sequence, merchant_pk, attempts, next_attempt_at, appended_at) \
             SELECT u.w, u.s, u.m, u.a, u.at, u.ap FROM UNNEST($1::text[], $2::int8[], $3::int8[], $4::int4[], \
             $5::int8[], $6::int8[], $7::int8[]) AS u(w, s, m, a, at, ap, ct) \
             JOIN webhooks wh ON wh.webhook_id = u.w AND wh.status = 'ENABLED' AND wh.deleted_at IS NULL \
             AND wh.claim_owner = $8 AND wh.claimed_through = u.ct \
             ON CONFLICT (webhook_id, sequence) DO NOTHING",
            &[
                &ids, &sequences, &merchants, &attempts, &at, &appended, &claimed, &owner,
            ],
        )
        .await?;
    }
    if !plan.rescheduled.is_empty() {
        let r = &plan.rescheduled;
        let ids: Vec<&str> = r.iter().map(|r| r.webhook_id.as_str()).collect();
        let sequences: Vec<i64> = r.iter().map(|r| r.sequence).collect();
        let attempts: Vec<i32> = r.iter().map(|r| int4(r.attempts)).collect();
        let at: Vec<i64> = r.iter().map(|r| r.at_ms).collect();
        sql::execute(
            tx,
            "UPDATE deliveries d SET attempts = u.a, next_attempt_at = u.at, claim_until = 0, claim_owner = NULL \
             FROM UNNEST($1::text[], $2::int8[], $3::int4[], $4::int8[]) AS u(w, s, a, at) \
             WHERE d.webhook_id = u.w AND d.sequence = u.s AND d.claim_owner = $5",
            &[&ids, &sequences, &attempts, &at, &owner],
        )
        .await?;
    }
    if !plan.done.is_empty() {
        let (ids, sequences): (Vec<&str>, Vec<i64>) = plan.done.iter().map(|(w, s)| (w.as_str(), *s)).unzip();
        sql::execute(
            tx,
            "DELETE FROM deliveries d USING UNNEST($1::text[], $2::int8[]) AS u(w, s) \
             WHERE d.webhook_id = u.w AND d.sequence = u.s AND d.claim_owner = $3",
            &[&ids, &sequences, &owner],
        )
        .await?;
    }
    if !plan.windows.is_empty() {
        let ids: Vec<&str> = plan.windows.iter().map(|(w, _, _)| w.as_str()).collect();
        let claimed: Vec<i64> = plan.windows.iter().map(|(_, c, _)| *c).collect();
        let settled: Vec<Option<i64>> = plan.windows.iter().map(|(_, _, s)| *s).collect();
        sql::execute(
            tx,
            "UPDATE webhooks w SET delivered_through = GREATEST(w.delivered_through, coalesce(u.st, w.delivered_through)), \
             claim_until = 0, claim_owner = NULL FROM UNNEST($1::text[], $2::int8[], $3::int8[]) AS u(id, ct, st) \
             WHERE w.webhook_id = u.id AND w.claim_owner = $4 AND w.claimed_through = u.ct",
            &[&ids, &claimed, &settled, &owner],
        )
        .await?;
    }
    Ok(())
}

fn int4(n: i64) -> i32 {
    i32::try_from(n).unwrap_or(i32::MAX)
}

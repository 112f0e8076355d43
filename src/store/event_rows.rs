//! What both engines read of events and webhook endpoints, and the rules they apply to it, once:
//! the event's columns and how a stored event becomes its JSON (the same bytes every time), and how an
//! endpoint's claimed rows become deliveries (its secrets, its types, where its window ends).
//! Each engine only binds its rows to these types.

use super::api::stored_word;
use super::error::StoreError;
use super::webhook_api::{AttemptFilter, Candidate, Due, Window, signing_secrets};
use crate::domain::event::{self, Change, EventTypes};
use crate::domain::webhook::{Attempt, Outcome, Trigger};

pub use super::columns::Columns;

/// An event's columns, in the order both engines read them into [`StoredEvent`] (the table as
/// `e`).
pub const EVENT_COLUMNS: &str = "e.sequence, e.event_id, e.type, e.appended_at, e.location_id, \
     e.merchant_location_id, e.version, e.status, e.previous_status";

/// How many columns [`EVENT_COLUMNS`] has.
pub const EVENT_WIDTH: usize = 9;

/// An event as stored: its change's columns (an event is rendered when read or delivered).
#[derive(Clone, Debug)]
pub struct StoredEvent {
    pub sequence: i64,
    pub event_id: String,
    /// Its type's place in the list of event types (the bit of `EventTypes`).
    pub code: i64,
    pub appended_at_ms: i64,
    pub location_id: String,
    pub merchant_location_id: Option<String>,
    pub version: i64,
    pub status: String,
    pub previous_status: Option<String>,
}

impl StoredEvent {
    /// [`EVENT_COLUMNS`] read from column `at` on.
    pub fn read<R: Columns>(r: &R, at: usize) -> Result<Self, R::Error> {
        Ok(StoredEvent {
            sequence: r.int(at)?,
            event_id: r.text(at + 1)?,
            code: r.int(at + 2)?,
            appended_at_ms: r.int(at + 3)?,
            location_id: r.text(at + 4)?,
            merchant_location_id: r.opt_text(at + 5)?,
            version: r.int(at + 6)?,
            status: r.text(at + 7)?,
            previous_status: r.opt_text(at + 8)?,
        })
    }

    /// The event object: the same bytes every time it is read or delivered.
    pub fn render(&self) -> Result<String, StoreError> {
        let change = Change::from_columns(
            self.code,
            self.location_id.clone(),
            self.merchant_location_id.clone(),
            self.version,
            &self.status,
            self.previous_status.as_deref(),
            self.appended_at_ms,
        )
        .ok_or_else(|| StoreError::corrupt("event", &self.event_id))?;
        Ok(event::render(&self.event_id, self.sequence, &change))
    }
}

/// An endpoint as a claim reads it: where to send, how to sign, what it takes, where it stands.
#[derive(Clone, Debug)]
pub struct ClaimedEndpoint {
    pub webhook_id: String,
    pub merchant_pk: i64,
    pub url: String,
    pub secret: String,
    pub old_secret: Option<String>,
    pub old_secret_until: Option<i64>,
    pub failing_since_ms: Option<i64>,
    /// The bit set of the event types it takes (`None`: every type).
    pub types: Option<i64>,
}

impl ClaimedEndpoint {
    /// [`ENDPOINT_COLUMNS`] read from column 0.
    pub fn read<R: Columns>(r: &R) -> Result<Self, R::Error> {
        Ok(ClaimedEndpoint {
            webhook_id: r.text(0)?,
            merchant_pk: r.int(1)?,
            url: r.text(2)?,
            secret: r.text(3)?,
            old_secret: r.opt_text(4)?,
            old_secret_until: r.opt_int(5)?,
            failing_since_ms: r.opt_int(6)?,
            types: r.opt_int(7)?,
        })
    }

    /// It as the scheduler weighs it.
    pub fn candidate(&self) -> Candidate {
        Candidate {
            webhook_id: self.webhook_id.clone(),
            merchant_pk: self.merchant_pk,
            failing: self.failing_since_ms.is_some(),
        }
    }

    /// Whether it takes an event of type `code`.
    pub fn takes(&self, code: i64) -> bool {
        self.types.is_none_or(|bits| EventTypes::from_bits(bits).has_code(code))
    }

    /// Whether it was to receive `event`: appended after it was created (`created_through`), of a
    /// type it takes.
    pub fn was_to_receive(&self, event: &StoredEvent, created_through: i64) -> bool {
        event.sequence > created_through && self.takes(event.code)
    }

    /// A delivery of `event` to it after `attempts` attempts, signed as at `now_ms`.
    pub fn due(&self, event: &StoredEvent, attempts: i64, now_ms: i64) -> Result<Due, StoreError> {
        Ok(Due {
            webhook_id: self.webhook_id.clone(),
            merchant_pk: self.merchant_pk,
            url: self.url.clone(),
            secrets: signing_secrets(
                self.secret.clone(),
                self.old_secret.clone(),
                self.old_secret_until,
                now_ms,
            ),
            failing_since_ms: self.failing_since_ms,
            sequence: event.sequence,
            attempts,
            appended_at_ms: event.appended_at_ms,
            event_id: event.event_id.clone(),
            body: event.render()?,
        })
    }

    /// The window of its next `events` (read after its `delivered_through`, in sequence order,
    /// each with whether a resend delivered it already): the deliveries of the types
    /// it takes not yet delivered, through the last event read, or through the log's end `last_sequence` when
    /// none was read (events dropped by retention before they were sent).
    pub fn window(
        &self,
        events: &[(StoredEvent, bool)],
        last_sequence: i64,
        now_ms: i64,
    ) -> Result<Window, StoreError> {
        let through = events.last().map_or(last_sequence, |(e, _)| e.sequence);
        let dues = events
            .iter()
            .filter(|(e, delivered)| self.takes(e.code) && !delivered)
            .map(|(e, _)| self.due(e, 0, now_ms))
            .collect::<Result<_, _>>()?;
        Ok(Window {
            webhook_id: self.webhook_id.clone(),
            merchant_pk: self.merchant_pk,
            through,
            dues,
        })
    }
}

/// Columns of an endpoint as [`ClaimedEndpoint`] is read (the table as `w`): id, merchant, URL,
/// secret, old secret, its end, failing since, types.
pub const ENDPOINT_COLUMNS: &str = "w.webhook_id, w.merchant_pk, w.url, w.secret, w.old_secret, \
     w.old_secret_until, w.failing_since, w.types";

/// Whether event `e` was delivered to endpoint `{mark}{n}` already, by a resend:
/// a column after [`EVENT_COLUMNS`] in a window's read. Looked for (through
/// `delivery_attempts_by_event`) only up to the endpoint's `resent_through`, `{mark}{n + 1}`: an
/// endpoint never resent to reads its window without a probe per event.
///
/// A scalar subquery, one probe per event of the window, rather than `EXISTS`: PostgreSQL may run
/// an `EXISTS` of a select list as one hashed pass over every attempt the endpoint ever had
/// delivered (it guesses the calls from the events' table, not from the window's `LIMIT`), so each
/// window up to the resent event read all of them, however few events it held.
pub fn delivered_column(mark: char, n: usize) -> String {
    format!(
        "CASE WHEN e.sequence <= {mark}{} THEN (SELECT 1 FROM delivery_attempts a \
         WHERE a.webhook_id = {mark}{n} AND a.event_id = e.event_id AND a.outcome = 'delivered' LIMIT 1) IS NOT NULL \
         ELSE false END",
        n + 1
    )
}

/// Drops the retry rows of the merchant's events `{mark}2` < sequence ≤ `{mark}3` (merchant
/// `{mark}1`), which retention has just dropped: an event no longer kept can be neither attempted
/// nor recovered, and its row would be pending for ever. Through the rows' primary key, endpoint
/// by endpoint of the merchant.
pub fn drop_pruned_retries(mark: char) -> String {
    format!(
        "DELETE FROM deliveries WHERE webhook_id IN (SELECT webhook_id FROM webhooks WHERE merchant_pk = {mark}1) \
         AND merchant_pk = {mark}1 AND sequence > {mark}2 AND sequence <= {mark}3"
    )
}

/// How many columns [`ENDPOINT_COLUMNS`] has.
pub const ENDPOINT_WIDTH: usize = 8;

/// An attempt's columns, in the order [`read_attempt`] reads them.
pub const ATTEMPT_COLUMNS: &str =
    "id, event_id, sequence, attempt, attempted_at, outcome, http_status, error, duration_ms, made_by";

/// An attempt of the endpoints' log, read with [`ATTEMPT_COLUMNS`].
pub fn read_attempt<R: Columns>(r: &R) -> Result<Attempt, StoreError>
where
    StoreError: From<R::Error>,
{
    Ok(Attempt {
        id: r.int(0)?,
        event_id: r.text(1)?,
        sequence: r.opt_int(2)?,
        attempt: r.int(3)?,
        attempted_at_ms: r.int(4)?,
        outcome: stored_word(&r.text(5)?, "outcome", Outcome::from_wire)?,
        http_status: r.opt_int(6)?,
        error: r.opt_text(7)?,
        duration_ms: r.int(8)?,
        trigger: stored_word(&r.text(9)?, "made_by", Trigger::from_wire)?,
    })
}

/// A page of an endpoint's attempts, newest first, for `filter`: the parameters are the endpoint
/// (1), below which id (2), how many (3), then the outcome and the event id where the filter has
/// them, numbered on; `mark` is the engine's parameter mark (`?` or `$`). Each filter is read
/// through its own index (`delivery_attempts_by_outcome`, `_by_event`).
pub fn attempts_sql(filter: &AttemptFilter, mark: char) -> String {
    let mut sql =
        format!("SELECT {ATTEMPT_COLUMNS} FROM delivery_attempts WHERE webhook_id = {mark}1 AND id < {mark}2");
    let mut n = 3;
    if filter.outcome.is_some() {
        n += 1;
        sql.push_str(&format!(" AND outcome = {mark}{n}"));
    }
    if filter.event_id.is_some() {
        n += 1;
        sql.push_str(&format!(" AND event_id = {mark}{n}"));
    }
    sql.push_str(&format!(" ORDER BY id DESC LIMIT {mark}3"));
    sql
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::event::EventType;

    fn event(sequence: i64, kind: EventType) -> StoredEvent {
        StoredEvent {
            sequence,
            event_id: format!("evt_{sequence}"),
            code: kind.code(),
            appended_at_ms: 0,
            location_id: "l".into(),
            merchant_location_id: None,
            version: 1,
            status: "ACTIVE".into(),
            previous_status: None,
        }
    }

    fn endpoint(types: Option<EventTypes>, old_until: Option<i64>) -> ClaimedEndpoint {
        ClaimedEndpoint {
            webhook_id: "w".into(),
            merchant_pk: 1,
            url: "https://example.com/".into(),
            secret: "whsec_new".into(),
            old_secret: Some("whsec_old".into()),
            old_secret_until: old_until,
            failing_since_ms: None,
            types: types.map(|t| i64::from(t.bits())),
        }
    }

    #[test]
    fn a_window_takes_its_types_and_runs_through_the_last_event_read_or_the_log_s_end() {
        let archived: EventTypes = [EventType::Archived].into_iter().collect();
        let e = endpoint(Some(archived), None);
        let events = [
            (event(4, EventType::Created), false),
            (event(5, EventType::Archived), false),
            (event(6, EventType::Created), false),
            (event(7, EventType::Archived), true),
        ];
        let w = e.window(&events, 9, 0).unwrap();
        assert_eq!(w.through, 7);
        assert_eq!(
            w.dues.iter().map(|d| d.sequence).collect::<Vec<_>>(),
            [5],
            "of its type, and not delivered already"
        );
        assert_eq!(
            e.window(&[], 9, 0).unwrap().through,
            9,
            "pruned before sent: to the log's end"
        );
        assert_eq!(endpoint(None, None).window(&events, 9, 0).unwrap().dues.len(), 3);
    }

    #[test]
    fn the_old_secret_signs_until_its_end() {
        let e = endpoint(None, Some(1000));
        assert_eq!(e.due(&event(1, EventType::Created), 0, 999).unwrap().secrets.len(), 2);
        assert_eq!(e.due(&event(1, EventType::Created), 0, 1000).unwrap().secrets.len(), 1);
    }
}

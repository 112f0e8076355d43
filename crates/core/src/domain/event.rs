//! Events: what a merchant's systems are told about each change of a location.
//!
//! A request that sets locations' versions produces one [`Change`] per location (the domain
//! decides which: create's new locations, a change's writes with the type of the request's own
//! operation or `location.redecided`, an operator's approval). The store appends them to the
//! merchant's log in the request's own transaction, as the change's columns, numbered there: the
//! merchant's writes are serialised, so numbering them under that serialisation gives sequences in
//! commit order, without gaps. A read renders each event's JSON from them ([`render`]).

use serde::Serialize;
use sha2::{Digest, Sha256};

use super::location::Status;
use super::wire::timestamp;
use crate::wire_enum;

wire_enum! {
    /// An event's `type`.
    pub enum EventType {
        Created => "location.created",
        Updated => "location.updated",
        Archived => "location.archived",
        Restored => "location.restored",
        Approved => "location.approved",
        Redecided => "location.redecided",
    }
}

impl EventType {
    /// The stored number of the type (its place in [`EventType::ALL`]).
    pub fn code(self) -> i64 {
        Self::ALL.iter().position(|t| *t == self).unwrap_or(0) as i64
    }

    pub fn from_code(code: i64) -> Option<Self> {
        usize::try_from(code).ok().and_then(|i| Self::ALL.get(i)).copied()
    }
}

/// A set of event types: a feed's or a webhook's filter.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct EventTypes(u8);

impl EventTypes {
    pub const ALL: EventTypes = EventTypes((1 << EventType::ALL.len()) - 1);
    pub const EMPTY: EventTypes = EventTypes(0);

    pub fn insert(&mut self, t: EventType) {
        self.0 |= 1 << t.code();
    }

    pub fn contains(self, t: EventType) -> bool {
        self.0 & (1 << t.code()) != 0
    }

    pub fn bits(self) -> u8 {
        self.0
    }

    /// The set a stored bit set means (bits of no type are ignored).
    pub fn from_bits(bits: i64) -> Self {
        EventTypes((bits & i64::from(Self::ALL.0)) as u8)
    }

    /// Whether the set holds the type stored as `code`.
    pub fn has_code(self, code: i64) -> bool {
        EventType::from_code(code).is_some_and(|t| self.contains(t))
    }

    pub fn is_all(self) -> bool {
        self == Self::ALL
    }

    /// The types in the set, in declaration order.
    pub fn types(self) -> impl Iterator<Item = EventType> {
        EventType::ALL.iter().copied().filter(move |t| self.contains(*t))
    }
}

impl FromIterator<EventType> for EventTypes {
    fn from_iter<I: IntoIterator<Item = EventType>>(iter: I) -> Self {
        let mut set = EventTypes::EMPTY;
        for t in iter {
            set.insert(t);
        }
        set
    }
}

/// One location's change, as its event says it: what is stored of an event beside its id,
/// sequence and type.
#[derive(Clone, Debug, PartialEq)]
pub struct Change {
    pub kind: EventType,
    pub location_id: String,
    pub merchant_location_id: Option<String>,
    pub version: i64,
    pub status: Status,
    /// `None` for `location.created`.
    pub previous_status: Option<Status>,
    /// The location's `updated_at` after the change, in Unix milliseconds.
    pub at_ms: i64,
}

impl Change {
    /// The change an event's stored columns hold (the type by its code, the statuses by their
    /// wire words); `None` for a code or word the service never stores.
    pub fn from_columns(
        code: i64,
        location_id: String,
        merchant_location_id: Option<String>,
        version: i64,
        status: &str,
        previous_status: Option<&str>,
        at_ms: i64,
    ) -> Option<Change> {
        Some(Change {
            kind: EventType::from_code(code)?,
            location_id,
            merchant_location_id,
            version,
            status: Status::from_wire(status)?,
            previous_status: match previous_status {
                None => None,
                Some(word) => Some(Status::from_wire(word)?),
            },
            at_ms,
        })
    }
}

/// The event object after `sequence`, its keys in their documented order.
#[derive(Serialize)]
struct Tail<'a> {
    #[serde(rename = "type")]
    kind: EventType,
    occurred_at: &'a str,
    location_id: &'a str,
    merchant_location_id: Option<&'a str>,
    version: i64,
    status: Status,
    previous_status: Option<Status>,
}

/// The event object for `change`, numbered `sequence`, its keys in their documented order.
///
/// An event is stored as its change's columns (some 100 bytes, where its JSON is 330: a create
/// writes one a location, so its bytes are create's) and rendered when it is read or delivered,
/// the same bytes every time: nothing it holds changes after it is written.
pub fn render(event_id: &str, sequence: i64, change: &Change) -> String {
    let at = timestamp(change.at_ms);
    let tail = Tail {
        kind: change.kind,
        occurred_at: std::str::from_utf8(&at).unwrap_or_default(),
        location_id: &change.location_id,
        merchant_location_id: change.merchant_location_id.as_deref(),
        version: change.version,
        status: change.status,
        previous_status: change.previous_status,
    };
    let mut json = String::with_capacity(256);
    // An id of ours is `evt_` and hex digits: nothing in it needs escaping.
    json.push_str(r#"{"event_id":""#);
    json.push_str(event_id);
    json.push_str(r#"","sequence":"#);
    json.push_str(itoa::Buffer::new().format(sequence));
    json.push(',');
    // Serialising plain strings, numbers and words into a string cannot fail.
    let rest = serde_json::to_string(&tail).unwrap_or_else(|_| "{}".into());
    json.push_str(rest.get(1..).unwrap_or("}"));
    json
}

/// The test event: an event object of type `webhook.test`, in no log (its
/// `sequence` and its location's keys `null`), that occurred at `at_ms`.
pub fn render_test(event_id: &str, at_ms: i64) -> String {
    #[derive(Serialize)]
    struct TestEvent<'a> {
        event_id: &'a str,
        sequence: Option<i64>,
        #[serde(rename = "type")]
        kind: &'static str,
        occurred_at: &'a str,
        location_id: Option<&'a str>,
        merchant_location_id: Option<&'a str>,
        version: Option<i64>,
        status: Option<&'a str>,
        previous_status: Option<&'a str>,
    }
    let at = timestamp(at_ms);
    let event = TestEvent {
        event_id,
        sequence: None,
        kind: TEST_TYPE,
        occurred_at: std::str::from_utf8(&at).unwrap_or_default(),
        location_id: None,
        merchant_location_id: None,
        version: None,
        status: None,
        previous_status: None,
    };
    // Serialising plain strings and nulls into a string cannot fail.
    serde_json::to_string(&event).unwrap_or_else(|_| "{}".into())
}

/// The type of the test event: sent by `POST /v1/webhook/test` only, never in a log.
pub const TEST_TYPE: &str = "webhook.test";

/// A new event id: `evt_` and a time-ordered UUID.
pub fn new_event_id() -> String {
    format!("evt_{}", uuid::Uuid::now_v7().simple())
}

/// What a feed request reads: the merchant's events after `after` (a sequence;
/// 0 is before the first), of `types`, at most `limit`.
#[derive(Clone, Copy, Debug)]
pub struct EventQuery {
    pub merchant_pk: i64,
    pub types: EventTypes,
    pub after: i64,
    pub limit: usize,
}

/// Where a merchant's log stands: its last sequence, and the last one dropped by retention (the
/// oldest kept is the one after it).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LogBounds {
    pub last: i64,
    pub pruned_through: i64,
}

/// One page of a feed, read in one snapshot.
#[derive(Clone, Debug, Default)]
pub struct EventPage {
    /// `(sequence, JSON)` of each event, in sequence order.
    pub events: Vec<(i64, String)>,
    /// Matching events after the page existed.
    pub has_next: bool,
    pub bounds: LogBounds,
}

/// The digest a feed cursor carries: the merchant and the set of types (bound to
/// both; filters that mean the same have the same digest).
pub fn feed_digest(merchant_id: &str, types: EventTypes) -> [u8; 16] {
    let mut h = Sha256::new();
    h.update(b"events/v1\0");
    h.update(merchant_id.as_bytes());
    h.update([0, types.bits()]);
    crate::domain::wire::digest16(h)
}

/// The pages of one type each (each in sequence order, each at most `limit + 1` long) merged
/// into one page of at most `limit` of the earliest, and whether more were found.
pub fn merge_pages(mut pages: Vec<Vec<(i64, String)>>, limit: usize) -> (Vec<(i64, String)>, bool) {
    let mut all: Vec<(i64, String)> = pages.iter_mut().flat_map(std::mem::take).collect();
    all.sort_by_key(|(sequence, _)| *sequence);
    let has_next = all.len() > limit;
    all.truncate(limit);
    (all, has_next)
}

/// Retention (`--event-retention`): how many events one pruning step drops at most.
pub const PRUNE_BATCH: usize = 1000;

/// The longest prefix of `rows` (`(sequence, appended at ms)`, in sequence order) appended before
/// `cutoff_ms`: its last sequence, if any. An event younger than the cutoff stops the prefix, so
/// no event is dropped before its time even when the clock stepped back.
pub fn prunable_through(rows: &[(i64, i64)], cutoff_ms: i64) -> Option<i64> {
    rows.iter()
        .take_while(|(_, at)| *at < cutoff_ms)
        .last()
        .map(|(sequence, _)| *sequence)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_test_event_has_the_keys_of_an_event_with_no_location() {
        assert_eq!(
            render_test("evt_1", 1_764_320_400_000),
            r#"{"event_id":"evt_1","sequence":null,"type":"webhook.test","occurred_at":"2025-11-28T09:00:00.000Z","location_id":null,"merchant_location_id":null,"version":null,"status":null,"previous_status":null}"#
        );
    }

    #[test]
    fn times_with_an_offset_parse_and_others_do_not() {
        use crate::domain::wire::parse_timestamp;
        assert_eq!(parse_timestamp("2025-11-28T09:00:00Z"), Some(1_764_320_400_000));
        assert_eq!(parse_timestamp("2025-11-28T12:00:00.5+03:00"), Some(1_764_320_400_500));
        assert_eq!(parse_timestamp("2025-11-28T09:00:00"), None, "no offset");
        assert_eq!(parse_timestamp("2025-11-28"), None);
        assert_eq!(parse_timestamp("yesterday"), None);
    }

    #[test]
    fn an_event_is_rendered_from_its_change_with_its_keys_in_order() {
        let change = Change {
            kind: EventType::Redecided,
            location_id: "loc".into(),
            merchant_location_id: None,
            version: 3,
            status: Status::Active,
            previous_status: Some(Status::Quarantine),
            at_ms: 1_700_000_000_123,
        };
        assert_eq!(
            render("e1", 42, &change),
            r#"{"event_id":"e1","sequence":42,"type":"location.redecided","occurred_at":"2023-11-14T22:13:20.123Z","location_id":"loc","merchant_location_id":null,"version":3,"status":"ACTIVE","previous_status":"QUARANTINE"}"#
        );
    }

    #[test]
    fn a_change_is_read_back_from_its_columns() {
        let read = Change::from_columns(3, "loc".into(), Some("m-1".into()), 2, "ARCHIVED", Some("ACTIVE"), 5);
        assert_eq!(
            read,
            Some(Change {
                kind: EventType::ALL[3],
                location_id: "loc".into(),
                merchant_location_id: Some("m-1".into()),
                version: 2,
                status: Status::Archived,
                previous_status: Some(Status::Active),
                at_ms: 5,
            })
        );
        assert_eq!(Change::from_columns(99, "l".into(), None, 1, "ACTIVE", None, 0), None);
        assert_eq!(Change::from_columns(0, "l".into(), None, 1, "GONE", None, 0), None);
        assert_eq!(
            Change::from_columns(0, "l".into(), None, 1, "ACTIVE", Some("GONE"), 0),
            None
        );
    }

    #[test]
    fn type_codes_round_trip_and_sets_hold_what_was_put_in() {
        for t in EventType::ALL {
            assert_eq!(EventType::from_code(t.code()), Some(*t));
        }
        let set: EventTypes = [EventType::Archived, EventType::Created, EventType::Archived]
            .into_iter()
            .collect();
        assert_eq!(
            set.types().collect::<Vec<_>>(),
            [EventType::Created, EventType::Archived]
        );
        assert!(!set.is_all() && EventTypes::ALL.is_all());
        assert_ne!(feed_digest("m", set), feed_digest("m", EventTypes::ALL));
        assert_ne!(feed_digest("m", set), feed_digest("n", set));
    }

    #[test]
    fn pages_of_each_type_merge_in_sequence_order() {
        let page = |s: &[i64]| s.iter().map(|&n| (n, n.to_string())).collect::<Vec<_>>();
        let (merged, more) = merge_pages(vec![page(&[1, 4, 9]), page(&[2, 3])], 3);
        assert_eq!(merged.iter().map(|e| e.0).collect::<Vec<_>>(), [1, 2, 3]);
        assert!(more);
        let (merged, more) = merge_pages(vec![page(&[5]), page(&[])], 3);
        assert_eq!(merged.len(), 1);
        assert!(!more);
    }

    #[test]
    fn pruning_stops_at_the_first_young_event() {
        assert_eq!(prunable_through(&[(1, 10), (2, 20), (3, 5)], 15), Some(1));
        assert_eq!(prunable_through(&[(1, 10), (2, 12)], 15), Some(2));
        assert_eq!(prunable_through(&[(1, 20)], 15), None);
    }
}

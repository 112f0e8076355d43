//! What a search index kept in memory reads of the store: a merchant's entries in one snapshot with
//! where its event log stood, the log's changes since (each named location's entry as it is now),
//! and a page's records in one snapshot with where the log stands. The statements are written once
//! for both engines ([`entries`], [`changes`]); each engine runs them in its own snapshot.

use async_trait::async_trait;

use super::columns::Columns;
use super::error::StoreError;
use super::reads::{ReadFrom, ReadOn};
use super::sql_text::marked;
use crate::domain::event::LogBounds;
use crate::domain::location::Status;
use crate::domain::location::search::key::SearchKey;
use crate::domain::location::search::memory::IndexEntry;

#[async_trait]
pub trait SearchSource: Send + Sync {
    /// The merchant's `ACTIVE` locations' entries, as of the sequence its log stood at; only their
    /// count, none read, when `fits` refuses it (counted first, in the same snapshot).
    async fn entries(&self, merchant_pk: i64, fits: Fits) -> Result<Counted, StoreError>;

    /// What the merchant's log says changed after the sequence `after`, at most `limit` events.
    async fn changes(&self, merchant_pk: i64, after: i64, limit: usize) -> Result<Changes, StoreError>;

    /// The records `seqs` (the merchant's, as their JSON) and the sequence its log stands at, read
    /// in one snapshot: on a replica when `from` allows and one is usable, else on the primary.
    async fn records(&self, merchant_pk: i64, seqs: Vec<i64>, from: ReadFrom) -> Result<Records, StoreError>;
}

/// Records as their JSON (`RecordRef::write_json`), by seq, read where `on` says when the log stood
/// at `head`; `on` is `None` when the database was not read at all (no record asked, and where the
/// log stands known from a read at the database's current version).
#[derive(Debug)]
pub struct Records {
    pub head: i64,
    pub json: Vec<(i64, Vec<u8>)>,
    pub on: Option<ReadOn>,
}

/// A merchant's entries, as of `through`.
#[derive(Debug, Default)]
pub struct Entries {
    pub through: i64,
    pub entries: Vec<IndexEntry>,
}

/// A merchant's entries, or how many there are when they are more than were asked for.
#[derive(Debug)]
pub enum Counted {
    Read(Entries),
    Beyond(usize),
}

/// What changed after a sequence.
#[derive(Debug, PartialEq)]
pub enum Changes {
    /// The log no longer holds every event after it (retention dropped some).
    Gap,
    /// Through `through`: each changed location's seq and its entry now (`None`: not `ACTIVE`),
    /// in the log's order; a location changed again later is read as it is now, which no
    /// earlier state of it overtakes (the reads' snapshot is at least as new as `through`).
    Read {
        through: i64,
        changed: Vec<(i64, Option<IndexEntry>)>,
        /// More events follow `through` (the step read as many as it could).
        more: bool,
    },
}

/// One row of [`changes`].
pub struct ChangedRow {
    pub sequence: i64,
    /// The location's seq and its entry when it is `ACTIVE`; `None` when no location has the id.
    pub location: Option<(i64, Option<IndexEntry>)>,
}

/// An entry's columns (the table as `l`).
const ENTRY: &str = "l.seq, l.latitude, l.longitude, l.cell, l.flags, l.fit_a, l.fit_b, l.fit_c, l.fit_w, l.hours";

/// How many `ACTIVE` locations the merchant (1) has, from the counts every write keeps.
pub fn active_count(mark: char) -> String {
    marked(
        "SELECT CAST(COALESCE(SUM(n), 0) AS BIGINT) FROM location_counts WHERE merchant_pk = $1 AND status = 'ACTIVE'",
        mark,
    )
}

/// Whether a merchant's entries, so many, may be read now: asked in the snapshot they are counted
/// in, before any is read.
pub type Fits = Box<dyn FnOnce(usize) -> bool + Send>;

/// `count` of [`active_count`]: `Ok` when `fits` takes it.
pub fn within(count: i64, fits: Fits) -> Result<usize, usize> {
    match usize::try_from(count) {
        Ok(count) if fits(count) => Ok(count),
        Ok(count) => Err(count),
        Err(_) => Err(usize::MAX),
    }
}

/// The merchant's (1) `ACTIVE` locations' entries.
pub fn entries(mark: char) -> String {
    marked(
        &format!("SELECT {ENTRY} FROM locations l WHERE l.merchant_pk = $1 AND l.status = 'ACTIVE'"),
        mark,
    )
}

/// The merchant's (1) events after the sequence (2), at most (3), in order, each with its
/// location's status and entry now.
pub fn changes(mark: char) -> String {
    marked(
        &format!(
            "SELECT e.sequence, l.status, {ENTRY} FROM events e \
             LEFT JOIN locations l ON l.location_id = e.location_id AND l.merchant_pk = e.merchant_pk \
             WHERE e.merchant_pk = $1 AND e.sequence > $2 ORDER BY e.sequence LIMIT $3"
        ),
        mark,
    )
}

/// An entry read with [`ENTRY`] from column `at` on.
pub fn read_entry<R: Columns>(r: &R, at: usize) -> Result<IndexEntry, StoreError>
where
    StoreError: From<R::Error>,
{
    Ok(IndexEntry {
        seq: r.int(at)?,
        latitude: r.real(at + 1)?,
        longitude: r.real(at + 2)?,
        key: SearchKey {
            cell: r.int(at + 3)?,
            flags: r.int(at + 4)?,
            fit: [r.real(at + 5)?, r.real(at + 6)?, r.real(at + 7)?, r.real(at + 8)?],
            hours: r.bytes(at + 9)?,
        },
    })
}

/// A row of [`changes`].
pub fn read_changed<R: Columns>(r: &R) -> Result<ChangedRow, StoreError>
where
    StoreError: From<R::Error>,
{
    let sequence = r.int(0)?;
    let location = match r.opt_text(1)? {
        None => None,
        Some(status) => {
            let entry = read_entry(r, 2)?;
            let active = status == Status::Active.as_str();
            Some((entry.seq, active.then_some(entry)))
        }
    };
    Ok(ChangedRow { sequence, location })
}

/// The changes after `after` from the rows of [`changes`] read with at most `limit` rows, and the
/// log's `head` read in the same snapshot.
pub fn changes_of(head: LogBounds, after: i64, rows: Vec<ChangedRow>, limit: usize) -> Changes {
    if after < head.pruned_through {
        return Changes::Gap;
    }
    let more = rows.len() >= limit;
    let through = match rows.last() {
        Some(last) if more => last.sequence,
        _ => head.last.max(after),
    };
    Changes::Read {
        through,
        changed: rows.into_iter().filter_map(|r| r.location).collect(),
        more,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_count_is_within_a_limit_up_to_it() {
        let at_most = |n: usize| -> Fits { Box::new(move |count| count <= n) };
        assert_eq!((within(0, at_most(0)), within(5, at_most(5))), (Ok(0), Ok(5)));
        assert_eq!(within(6, at_most(5)), Err(6));
        assert_eq!(
            within(-1, Box::new(|_| true)),
            Err(usize::MAX),
            "no count is negative: one that is, is not believed"
        );
    }

    fn row(sequence: i64, seq: i64) -> ChangedRow {
        ChangedRow {
            sequence,
            location: Some((seq, None)),
        }
    }

    #[test]
    fn the_changes_end_where_the_log_does_unless_the_step_was_full() {
        let head = LogBounds {
            last: 12,
            pruned_through: 3,
        };
        let read = changes_of(head, 10, vec![row(11, 5), row(12, 6)], 5);
        assert_eq!(
            read,
            Changes::Read {
                through: 12,
                changed: vec![(5, None), (6, None)],
                more: false
            }
        );
        let full = changes_of(head, 4, vec![row(5, 1), row(6, 2)], 2);
        assert!(matches!(
            full,
            Changes::Read {
                through: 6,
                more: true,
                ..
            }
        ));
        let none = changes_of(head, 12, Vec::new(), 5);
        assert!(matches!(
            none,
            Changes::Read {
                through: 12,
                more: false,
                ..
            }
        ));
        // An event whose location is gone names nothing.
        let gone = changes_of(
            head,
            11,
            vec![ChangedRow {
                sequence: 12,
                location: None,
            }],
            5,
        );
        assert!(matches!(gone, Changes::Read { through: 12, ref changed, .. } if changed.is_empty()));
    }

    #[test]
    fn a_position_before_what_retention_dropped_is_a_gap() {
        let head = LogBounds {
            last: 40,
            pruned_through: 20,
        };
        assert_eq!(changes_of(head, 19, Vec::new(), 5), Changes::Gap);
        assert!(matches!(changes_of(head, 20, Vec::new(), 5), Changes::Read { .. }));
    }
}

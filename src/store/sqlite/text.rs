//! The text index of the location list (`location_text`, an FTS5 table of three-character
//! pieces): written beside every location, read for a page of a text filter. The merchant is a
//! column match; the text a `GLOB` that FTS5 answers from its pieces when the text has three
//! characters or more, each candidate confirmed against the stored text. A shorter text has no
//! piece to look up: it is looked for in the merchant's rows of the index (their stored texts,
//! not the locations), in `seq` order, until the page is full.

use rusqlite::{Connection, params};

use crate::domain::location::listing::{Candidate, LocationFilter};
use crate::domain::location::{Status, TypeSet};
use crate::store::api::StoreError;
use crate::store::migrate;

/// How the merchant is named in the index.
fn merchant_tag(merchant_pk: i64) -> String {
    format!("#{merchant_pk}#")
}

/// An FTS5 phrase that matches exactly `text`.
fn phrase(text: &str) -> String {
    format!("\"{}\"", text.replace('"', "\"\""))
}

/// A `GLOB` pattern matching any text that contains `text` (its wildcards taken as themselves).
fn containing(text: &str) -> String {
    let mut pattern = String::with_capacity(text.len() + 2);
    pattern.push('*');
    for c in text.chars() {
        match c {
            '*' | '?' | '[' => {
                pattern.push('[');
                pattern.push(c);
                pattern.push(']');
            }
            _ => pattern.push(c),
        }
    }
    pattern.push('*');
    pattern
}

/// Indexes a new location.
pub(super) fn index(tx: &Connection, seq: i64, merchant_pk: i64, text: &str) -> Result<(), StoreError> {
    tx.prepare_cached("INSERT INTO location_text (rowid, m, t) VALUES (?1, ?2, ?3)")?
        .execute(params![seq, merchant_tag(merchant_pk), text])?;
    Ok(())
}

/// Indexes a location's new content.
pub(super) fn reindex(tx: &Connection, seq: i64, text: &str) -> Result<(), StoreError> {
    tx.prepare_cached("UPDATE location_text SET t = ?2 WHERE rowid = ?1")?
        .execute(params![seq, text])?;
    Ok(())
}

/// Rows looked at a step.
const STEP: usize = 256;

/// The `seq`s of a page of the merchant's locations matching `filter`, whose `text` is set (its
/// other conditions, ids included, are checked on each location the index finds), and whether
/// more follow.
pub(super) fn matching(
    tx: &Connection,
    merchant_pk: i64,
    filter: &LocationFilter,
    after: Option<i64>,
    limit: usize,
) -> Result<(Vec<i64>, bool), StoreError> {
    let text = filter.text.as_deref().unwrap_or_default();
    let merchant = format!("m : {}", phrase(&merchant_tag(merchant_pk)));
    let pattern = containing(text);
    let mut found = tx.prepare_cached(
        "SELECT rowid FROM location_text WHERE location_text MATCH ?1 AND t GLOB ?2 AND rowid > ?3 \
         ORDER BY rowid LIMIT ?4",
    )?;
    let mut kind =
        tx.prepare_cached("SELECT location_id, merchant_location_id, status, types FROM locations WHERE seq = ?1")?;
    let mut seqs = Vec::with_capacity(limit + 1);
    let mut from = after.unwrap_or(0);
    'walk: loop {
        let batch: Vec<i64> = found
            .query_map(params![merchant, pattern, from, STEP as i64], |r| r.get(0))?
            .collect::<Result<_, _>>()?;
        for &seq in &batch {
            let (location_id, merchant_location_id, status, types): (String, Option<String>, String, i64) =
                kind.query_row([seq], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?;
            let candidate = Candidate {
                seq,
                location_id,
                merchant_location_id,
                status: Status::from_wire(&status).ok_or_else(|| StoreError::corrupt("status", &status))?,
                types: TypeSet::from_bits(types),
            };
            if filter.accepts(&candidate) {
                seqs.push(seq);
                if seqs.len() > limit {
                    break 'walk;
                }
            }
        }
        match batch.last() {
            Some(&last) if batch.len() == STEP => from = last,
            _ => break,
        }
    }
    let has_next = seqs.len() > limit;
    seqs.truncate(limit);
    Ok((seqs, has_next))
}

/// The migration's step: every location indexed.
pub(super) fn fill(tx: &Connection) -> Result<(), StoreError> {
    let mut after = 0i64;
    loop {
        let rows: Vec<(i64, i64, Option<String>, String)> = tx
            .prepare("SELECT seq, merchant_pk, merchant_location_id, body FROM locations WHERE seq > ?1 ORDER BY seq LIMIT ?2")?
            .query_map(params![after, migrate::UPGRADE_CHUNK], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
            })?
            .collect::<Result<_, _>>()?;
        let Some(&(last, ..)) = rows.last() else {
            return Ok(());
        };
        after = last;
        for (seq, merchant_pk, mlid, body) in rows {
            if let Some(text) = migrate::indexed_text(&body, mlid.as_deref()) {
                index(tx, seq, merchant_pk, &text)?;
            }
        }
    }
}

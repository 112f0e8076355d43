//! A stored file read into batches, one at a time, in the order a run applies them: at most
//! `BATCH_ROWS` rows and `BATCH_BYTES` of items each, and never two rows that name the same
//! location in one batch (a row naming one already in the batch starts the next), so that rows of
//! one location are applied in the file's order.

use std::collections::HashSet;

use tokio::sync::mpsc;

use crate::client::apply::keys_of;
use crate::client::table::rows::{Format, ReadOptions, Row, Unreadable, scan_bytes};
use crate::domain::import::BATCH_ROWS;
use crate::store::import_api::RowBatch;

/// The items of one batch stay under this (a row alone may exceed it: it is a batch alone).
const BATCH_BYTES: usize = 4 * 1024 * 1024;

/// Collects rows into batches.
#[derive(Default)]
pub(super) struct Batcher {
    rows: Vec<Row>,
    keys: HashSet<String>,
    bytes: usize,
}

impl Batcher {
    /// Adds `row`; the batch it closed, if it closed one.
    pub(super) fn push(&mut self, row: Row) -> Option<Vec<Row>> {
        let keys = keys_of(&row);
        let full = self.rows.len() >= BATCH_ROWS || self.bytes + row.size() > BATCH_BYTES;
        let closed = if !self.rows.is_empty() && (full || keys.iter().any(|k| self.keys.contains(k))) {
            self.keys.clear();
            self.bytes = 0;
            Some(std::mem::take(&mut self.rows))
        } else {
            None
        };
        self.bytes += row.size();
        self.keys.extend(keys);
        self.rows.push(row);
        closed
    }

    /// The last batch, if any row is left.
    pub(super) fn finish(self) -> Option<Vec<Row>> {
        (!self.rows.is_empty()).then_some(self.rows)
    }
}

/// Reads `data` and sends its batches to `to`, after the first `skip` rows (those a run before
/// applied). Stops when the receiver is gone.
pub(super) fn send(
    data: &[u8],
    format: Format,
    options: &ReadOptions,
    skip: u64,
    update: bool,
    to: &mpsc::Sender<RowBatch>,
) -> Result<(), Unreadable> {
    let mut batcher = Batcher::default();
    let mut seen = 0u64;
    scan_bytes(data, format, options, |row| {
        seen += 1;
        if seen <= skip {
            return true;
        }
        match batcher.push(row) {
            Some(batch) => to.blocking_send(RowBatch::checked(batch, update)).is_ok(),
            None => true,
        }
    })?;
    if let Some(batch) = batcher.finish() {
        let _ = to.blocking_send(RowBatch::checked(batch, update));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(text: &str) -> Vec<Vec<u64>> {
        let (tx, mut rx) = mpsc::channel(1000);
        send(text.as_bytes(), Format::Jsonl, &ReadOptions::default(), 1, false, &tx).unwrap();
        drop(tx);
        let mut batches = Vec::new();
        while let Ok(batch) = rx.try_recv() {
            batches.push(batch.rows.iter().map(|r| r.row).collect());
        }
        batches
    }

    #[test]
    fn a_row_naming_a_location_already_in_the_batch_starts_the_next() {
        let text = "{}\n{\"merchant_location_id\":\"a\"}\n{\"merchant_location_id\":\"b\"}\n{\"merchant_location_id\":\"a\"}\n{}\n";
        // The first row was applied before: skipped.
        assert_eq!(rows(text), vec![vec![2, 3], vec![4, 5]]);
    }

    #[test]
    fn a_batch_holds_at_most_its_rows() {
        let text: String = (0..450).map(|i| format!("{{\"name\":\"{i}\"}}\n")).collect();
        let sizes: Vec<usize> = rows(&text).iter().map(Vec::len).collect();
        assert_eq!(sizes, [BATCH_ROWS, BATCH_ROWS, 449 - 2 * BATCH_ROWS]);
    }
}

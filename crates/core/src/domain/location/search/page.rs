//! A page of search results and the answer it makes, written in one place: each
//! result's JSON as the store reads it, then the answer around them.

use bytes::Bytes;

use super::super::record::RecordRef;
use super::cache_lines::a_value_a_line;
use super::query::{Hit, MAX_LIMIT};
use crate::domain::wire::{Total, answer_tail};

/// The most a result adds around its record: `,{"distance_m":4294967295,"location":` and `}`.
const RESULT_MOST: usize = 1 + 14 + 10 + 12 + 1;

/// One page of results, as a store read it: `{"distance_m":…,"location":{record}}` objects,
/// comma-joined, written as they were read.
#[derive(Clone, Debug, Default)]
pub struct SearchPage {
    pub json: Vec<u8>,
    pub count: usize,
    pub last: Option<Hit>,
    pub has_next: bool,
}

impl SearchPage {
    pub fn new(limit: usize) -> SearchPage {
        SearchPage {
            json: Vec::with_capacity(limit.min(MAX_LIMIT) * 1600),
            ..SearchPage::default()
        }
    }

    /// A page for `records` whose JSON was written before, with room for exactly them: a page
    /// that outgrew its estimate would be copied whole into a buffer twice its size.
    pub fn for_records<'a>(records: impl IntoIterator<Item = &'a [u8]>) -> SearchPage {
        let (count, bytes) = records
            .into_iter()
            .fold((0, 0), |(count, bytes), json| (count + 1, bytes + json.len()));
        SearchPage {
            json: Vec::with_capacity(bytes + count * RESULT_MOST),
            ..SearchPage::default()
        }
    }

    /// A page of these results, whose records' JSON was written before.
    ///
    /// Each record is read once, a byte of every cache line, before any is copied. The records
    /// of a page lie apart in memory and mostly outside the cache; copied one after another, each
    /// waits for its own first lines in turn, where reads that depend on nothing are fetched
    /// together. (The reads only warm the cache: the answer is the same without them.)
    pub fn of_records(results: &[(Hit, &[u8])]) -> SearchPage {
        std::hint::black_box(results.iter().fold(0, |seen, (_, json)| seen ^ a_value_a_line(json)));
        let mut page = SearchPage::for_records(results.iter().map(|(_, json)| *json));
        for (hit, json) in results {
            page.push_json(*hit, json);
        }
        page
    }

    /// Appends a result.
    pub fn push(&mut self, hit: Hit, record: RecordRef<'_>) {
        self.open(hit);
        record.write_json(&mut self.json);
        self.close(hit);
    }

    /// Appends a result whose record's JSON was written before (`RecordRef::write_json`).
    pub fn push_json(&mut self, hit: Hit, record: &[u8]) {
        self.open(hit);
        self.json.extend_from_slice(record);
        self.close(hit);
    }

    fn open(&mut self, hit: Hit) {
        if self.count > 0 {
            self.json.push(b',');
        }
        self.json.extend_from_slice(br#"{"distance_m":"#);
        self.json
            .extend_from_slice(itoa::Buffer::new().format(hit.distance_m).as_bytes());
        self.json.extend_from_slice(br#","location":"#);
    }

    fn close(&mut self, hit: Hit) {
        self.json.push(b'}');
        self.count += 1;
        self.last = Some(hit);
    }

    /// The answer: `{"results":[…],"pagination":{"next_cursor":…,"has_next":…}}`, in pieces
    /// to be sent as they are (the results are not copied again).
    pub fn into_answer(self, next_cursor: Option<&str>) -> [Bytes; 3] {
        [
            Bytes::from_static(br#"{"results":["#),
            Bytes::from(self.json),
            Bytes::from(answer_tail(next_cursor, Total::Absent)),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_for_its_records_never_outgrows_its_buffer() {
        let records: Vec<Vec<u8>> = (1..=100).map(|n| vec![b'x'; n * 37]).collect();
        let mut page = SearchPage::for_records(records.iter().map(Vec::as_slice));
        let room = page.json.capacity();
        for (seq, record) in (0..).zip(&records) {
            let hit = Hit {
                distance_m: u32::MAX,
                seq,
            };
            page.push_json(hit, record);
        }
        assert_eq!(page.json.capacity(), room);
        // The most a result adds is what each of these added: the room is exact (the first has no
        // comma).
        assert_eq!(page.json.len(), room - 1);
    }
}

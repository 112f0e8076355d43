//! A page of search results and the answer it makes, written in one place: each
//! result's JSON as the store reads it, then the answer around them.

use bytes::Bytes;

use super::super::record::RecordRef;
use super::query::{Hit, MAX_LIMIT};
use crate::domain::wire::{Total, answer_tail};

/// The most a result adds around its record: `,{"distance_m":4294967295,"location":` and `}`.
const RESULT_MOST: usize = 1 + 14 + 10 + 12 + 1;

/// One page of results, as a store read it: `{"distance_m":…,"location":{record}}` objects,
/// comma-joined. A record the store writes goes into `written`; one whose JSON was written before
/// is shared, not copied, and goes out between the written bytes before and after it.
#[derive(Clone, Debug, Default)]
pub struct SearchPage {
    written: Vec<u8>,
    /// Records written before, each with the place in `written` it goes at, in order.
    shared: Vec<(usize, Bytes)>,
    pub count: usize,
    pub last: Option<Hit>,
    pub has_next: bool,
}

impl SearchPage {
    pub fn new(limit: usize) -> SearchPage {
        SearchPage {
            written: Vec::with_capacity(limit.min(MAX_LIMIT) * 1600),
            ..SearchPage::default()
        }
    }

    /// A page of these results, whose records' JSON was written before: only what goes around
    /// them is written, into a buffer of exactly its size.
    pub fn of_records(results: Vec<(Hit, Bytes)>) -> SearchPage {
        let mut page = SearchPage {
            written: Vec::with_capacity(results.len() * RESULT_MOST),
            shared: Vec::with_capacity(results.len()),
            ..SearchPage::default()
        };
        for (hit, json) in results {
            page.open(hit);
            page.shared.push((page.written.len(), json));
            page.close(hit);
        }
        page
    }

    /// Appends a result.
    pub fn push(&mut self, hit: Hit, record: RecordRef<'_>) {
        self.open(hit);
        record.write_json(&mut self.written);
        self.close(hit);
    }

    fn open(&mut self, hit: Hit) {
        if self.count > 0 {
            self.written.push(b',');
        }
        self.written.extend_from_slice(br#"{"distance_m":"#);
        self.written
            .extend_from_slice(itoa::Buffer::new().format(hit.distance_m).as_bytes());
        self.written.extend_from_slice(br#","location":"#);
    }

    fn close(&mut self, hit: Hit) {
        self.written.push(b'}');
        self.count += 1;
        self.last = Some(hit);
    }

    /// The answer: `{"results":[…],"pagination":{"next_cursor":…,"has_next":…}}`, in pieces to
    /// be sent as they are (nothing is copied again: the written bytes are sliced around the
    /// records shared).
    pub fn into_answer(self, next_cursor: Option<&str>) -> Vec<Bytes> {
        let mut pieces = Vec::with_capacity(2 * self.shared.len() + 3);
        pieces.push(Bytes::from_static(br#"{"results":["#));
        let written = Bytes::from(self.written);
        let mut from = 0;
        for (at, json) in self.shared {
            pieces.push(written.slice(from..at));
            pieces.push(json);
            from = at;
        }
        pieces.push(written.slice(from..));
        pieces.push(Bytes::from(answer_tail(next_cursor, Total::Absent)));
        pieces
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hit(seq: i64) -> Hit {
        Hit {
            distance_m: u32::MAX,
            seq,
        }
    }

    #[test]
    fn a_page_of_shared_records_writes_exactly_what_goes_around_them() {
        let records: Vec<Bytes> = (1..=100).map(|n| Bytes::from(vec![b'x'; n * 37])).collect();
        let page = SearchPage::of_records(
            records
                .iter()
                .zip(0..)
                .map(|(json, seq)| (hit(seq), json.clone()))
                .collect(),
        );
        // The most a result adds is what each of these added: the room is exact (the first has no
        // comma), and never outgrown.
        assert_eq!(page.written.capacity(), 100 * RESULT_MOST);
        assert_eq!(page.written.len(), 100 * RESULT_MOST - 1);
        let pieces = page.into_answer(None);
        let shared = |piece: &Bytes| records.iter().any(|json| json.as_ptr() == piece.as_ptr());
        assert_eq!(
            pieces.iter().filter(|piece| shared(piece)).count(),
            100,
            "no record copied"
        );
    }

    #[test]
    fn an_answer_reads_the_same_whether_its_records_are_shared_or_written() {
        let records = [&b"{\"id\":1}"[..], b"{\"id\":22}"];
        let shared = SearchPage::of_records(
            records
                .iter()
                .zip(0..)
                .map(|(json, seq)| (hit(seq), Bytes::from_static(json)))
                .collect(),
        );
        let mut written = SearchPage::new(2);
        for (seq, json) in (0..).zip(records) {
            written.open(hit(seq));
            written.written.extend_from_slice(json);
            written.close(hit(seq));
        }
        let concat = |page: SearchPage| page.into_answer(Some("c")).concat();
        let expected = format!(
            r#"{{"results":[{{"distance_m":{m},"location":{{"id":1}}}},{{"distance_m":{m},"location":{{"id":22}}}}],"pagination":{{"next_cursor":"c","has_next":true}}}}"#,
            m = u32::MAX
        );
        assert_eq!(String::from_utf8(concat(written)).ok(), Some(expected.clone()));
        assert_eq!(String::from_utf8(concat(shared)).ok(), Some(expected));
    }
}

//! Which stored locations a list request reads, in which order, and how many match. The stores
//! fetch; the decisions are made here, once.
//!
//! **Order and pages.** Records come in creation order (`seq`, oldest first); a page continues
//! after the `seq` of the previous page's last record (keyset), so a walk never returns a record
//! twice, and locations created during it come at its end.
//!
//! **Without id lists** every page reads the merchant's per-(status, types) counts, kept by the
//! stores in the same transaction as every write: they give the exact `total` without a scan, and
//! name the few (status, types) groups that can match. Each group is one range of the index
//! `(merchant, status, types, seq)`; the page is the merge of the groups' first `limit + 1` entries
//! after the cursor, so its cost does not depend on how deep the walk is or how many locations the
//! merchant has.
//!
//! **With id lists** (at most 1000 ids) the candidates are looked up by id, and the filter, the
//! total and the page are computed over them.

use std::collections::BTreeSet;

use sha2::{Digest, Sha256};

use super::{Status, TypeSet};
use crate::domain::ids;

/// The statuses a stored location can have, in the order a filter digest writes them.
pub const STORED: [Status; 3] = [Status::Active, Status::Quarantine, Status::Archived];

/// A list filter, normalised: id lists as sets, absent conditions `None`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LocationFilter {
    pub location_ids: Option<BTreeSet<String>>,
    pub merchant_location_ids: Option<BTreeSet<String>>,
    pub status: Option<Status>,
    /// Matches a location that has at least one of these types.
    pub types: Option<TypeSet>,
    /// Matches a location whose name or `merchant_location_id` contains this text, folded
    /// (`text::fold`); a page of it is found through the text index.
    pub text: Option<String>,
}

/// A stored location found by one of its ids: what the filter reads of it.
#[derive(Clone, Debug)]
pub struct Candidate {
    pub seq: i64,
    pub location_id: String,
    pub merchant_location_id: Option<String>,
    pub status: Status,
    pub types: TypeSet,
}

/// One (status, types) group of a merchant's locations and how many it holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Group {
    pub status: Status,
    pub types: TypeSet,
    pub count: u64,
}

/// A page: the `seq`s of its records, in order, and whether more follow.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PageKeys {
    pub seqs: Vec<i64>,
    pub has_next: bool,
    pub total: u64,
}

impl LocationFilter {
    /// Whether the status and type conditions hold.
    pub fn admits(&self, status: Status, types: TypeSet) -> bool {
        self.status.is_none_or(|s| s == status) && self.types.is_none_or(|t| t.intersects(types))
    }

    /// Whether the filter names locations by id: then it is answered from the ids, not the groups.
    pub fn by_ids(&self) -> bool {
        self.location_ids.is_some() || self.merchant_location_ids.is_some()
    }

    /// The ids to look up: `(by location_id, ids)`, from the shorter of the two lists, but those
    /// that can name nothing (`ids::may_name`).
    pub fn lookup(&self) -> Option<(bool, Vec<&str>)> {
        let (by_location_id, ids) = match (&self.location_ids, &self.merchant_location_ids) {
            (Some(a), Some(b)) if b.len() < a.len() => (false, b),
            (Some(a), _) => (true, a),
            (None, Some(b)) => (false, b),
            (None, None) => return None,
        };
        let ids = ids.iter().map(String::as_str).filter(|id| ids::may_name(id)).collect();
        Some((by_location_id, ids))
    }

    /// Whether a location found by id or by text meets the other conditions.
    pub fn accepts(&self, c: &Candidate) -> bool {
        self.admits(c.status, c.types)
            && self
                .location_ids
                .as_ref()
                .is_none_or(|ids| ids.contains(&c.location_id))
            && self
                .merchant_location_ids
                .as_ref()
                .is_none_or(|ids| c.merchant_location_id.as_ref().is_some_and(|id| ids.contains(id)))
    }

    /// The groups a page scans, and the exact total, from the merchant's group counts.
    pub fn groups(&self, counts: impl IntoIterator<Item = Group>) -> (Vec<Group>, u64) {
        let groups: Vec<Group> = counts
            .into_iter()
            .filter(|g| g.count > 0 && self.admits(g.status, g.types))
            .collect();
        let total = groups.iter().map(|g| g.count).sum();
        (groups, total)
    }

    /// The page among `candidates` (found by id, in any order, possibly repeated).
    pub fn page_of_candidates(&self, mut candidates: Vec<Candidate>, after: Option<i64>, limit: usize) -> PageKeys {
        candidates.retain(|c| self.accepts(c));
        let mut seqs: Vec<i64> = candidates.iter().map(|c| c.seq).collect();
        seqs.sort_unstable();
        seqs.dedup();
        let total = seqs.len() as u64;
        let rest: Vec<i64> = seqs.into_iter().filter(|&s| after.is_none_or(|a| s > a)).collect();
        page(rest, limit, total)
    }

    /// A digest of the merchant and the normalised filter, which a cursor carries to be bound to
    /// both: filters that mean the same have the same digest.
    pub fn digest(&self, merchant_id: &str) -> [u8; 16] {
        let mut h = Sha256::new();
        h.update(b"locations/v1\0");
        h.update(merchant_id.as_bytes());
        h.update([0]);
        for ids in [&self.location_ids, &self.merchant_location_ids] {
            match ids {
                None => h.update([0]),
                Some(ids) => {
                    h.update([1]);
                    h.update((ids.len() as u64).to_be_bytes());
                    for id in ids {
                        h.update((id.len() as u64).to_be_bytes());
                        h.update(id.as_bytes());
                    }
                }
            }
        }
        h.update([self
            .status
            .map_or(0, |s| 1 + STORED.iter().position(|x| *x == s).unwrap_or(3) as u8)]);
        h.update([self.types.map_or(0xff, |t| t.bits() as u8)]);
        // Written only when there is one, so that the digests of filters without text are those of
        // cursors issued before the text filter existed.
        if let Some(text) = &self.text {
            h.update(b"\0text\0");
            h.update(text.as_bytes());
        }
        crate::domain::wire::digest16(h)
    }
}

/// Changes to the merchant's group counts, summed per group: `(status, types, delta)` in, one
/// entry per group with a non-zero sum out.
pub fn tally(changes: impl IntoIterator<Item = (Status, TypeSet, i64)>) -> Vec<(Status, TypeSet, i64)> {
    let mut sums: std::collections::BTreeMap<(Status, i64), i64> = std::collections::BTreeMap::new();
    for (status, types, delta) in changes {
        *sums.entry((status, types.bits())).or_default() += delta;
    }
    sums.into_iter()
        .filter(|(_, n)| *n != 0)
        .map(|((status, bits), n)| (status, TypeSet::from_bits(bits), n))
        .collect()
}

/// What one page reads: the merchant's locations matching `filter` created after `after` (a
/// `seq`), at most `limit` of them.
#[derive(Clone, Debug)]
pub struct LocationQuery {
    pub merchant_pk: i64,
    pub filter: LocationFilter,
    pub after: Option<i64>,
    pub limit: usize,
}

/// One page of a merchant's records, as a store read it in one transaction: the records' JSON
/// objects, comma-joined, written as they were read.
#[derive(Clone, Debug, Default)]
pub struct LocationPage {
    pub json: Vec<u8>,
    pub count: usize,
    /// The `seq` of the last record, where the next page continues.
    pub last_seq: Option<i64>,
    pub has_next: bool,
    /// How many locations match; `None` where counting them would mean reading them all.
    pub total: Option<u64>,
}

impl LocationPage {
    /// An empty page of a list of `total`, room made for `limit` records.
    pub fn new(limit: usize, total: Option<u64>) -> LocationPage {
        LocationPage {
            json: Vec::with_capacity(limit.min(1000) * 1500),
            total,
            ..LocationPage::default()
        }
    }

    /// Appends the record with creation order `seq`.
    pub fn push(&mut self, seq: i64, record: super::record::RecordRef<'_>) {
        if self.count > 0 {
            self.json.push(b',');
        }
        record.write_json(&mut self.json);
        self.count += 1;
        self.last_seq = Some(seq);
    }

    /// A page of these records.
    pub fn of(records: &[super::record::StoredRecord], has_next: bool, total: Option<u64>) -> LocationPage {
        let mut page = LocationPage::new(records.len(), total);
        for record in records {
            page.push(record.seq, record.as_ref());
        }
        page.has_next = has_next;
        page
    }
}

/// The first `limit` records of the merge of several sources, each giving its records in
/// ascending `seq` order, and whether more follow: every source is read one record ahead at most.
pub fn merge_records<E>(
    mut sources: Vec<impl FnMut() -> Result<Option<super::record::StoredRecord>, E>>,
    limit: usize,
) -> Result<(Vec<super::record::StoredRecord>, bool), E> {
    let mut heads = Vec::with_capacity(sources.len());
    for source in &mut sources {
        heads.push(source()?);
    }
    let mut records = Vec::with_capacity(limit.min(1000));
    loop {
        let next = heads
            .iter()
            .enumerate()
            .filter_map(|(i, head)| head.as_ref().map(|r| (r.seq, i)))
            .min();
        let Some((_, i)) = next else {
            return Ok((records, false));
        };
        if records.len() == limit {
            return Ok((records, true));
        }
        let record = std::mem::replace(&mut heads[i], sources[i]()?);
        records.extend(record);
    }
}

fn page(mut seqs: Vec<i64>, limit: usize, total: u64) -> PageKeys {
    let has_next = seqs.len() > limit;
    seqs.truncate(limit);
    PageKeys { seqs, has_next, total }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(ids: &[&str]) -> Option<BTreeSet<String>> {
        Some(ids.iter().map(|s| (*s).to_owned()).collect())
    }

    #[test]
    fn filters_that_mean_the_same_share_a_digest_and_merchants_do_not() {
        let a = LocationFilter {
            location_ids: set(&["b", "a", "a"]),
            ..Default::default()
        };
        let b = LocationFilter {
            location_ids: set(&["a", "b"]),
            ..Default::default()
        };
        assert_eq!(a.digest("m"), b.digest("m"));
        assert_ne!(a.digest("m"), a.digest("n"));
        let c = LocationFilter {
            merchant_location_ids: set(&["a", "b"]),
            ..Default::default()
        };
        assert_ne!(a.digest("m"), c.digest("m"));
        assert_ne!(LocationFilter::default().digest("m"), a.digest("m"));
        let active = LocationFilter {
            status: Some(Status::Active),
            ..Default::default()
        };
        assert_ne!(active.digest("m"), LocationFilter::default().digest("m"));
    }

    fn record(seq: i64) -> super::super::record::StoredRecord {
        super::super::record::StoredRecord {
            seq,
            location_id: format!("L{seq}"),
            merchant_location_id: None,
            status: Status::Active,
            quarantined_by: None,
            version: 1,
            created_at: 0,
            updated_at: 0,
            body: "{}".into(),
        }
    }

    fn merged(groups: Vec<Vec<i64>>, limit: usize) -> (Vec<i64>, bool) {
        let sources = groups
            .into_iter()
            .map(|seqs| {
                let mut seqs = seqs.into_iter();
                move || Ok::<_, ()>(seqs.next().map(record))
            })
            .collect();
        let (records, has_next) = merge_records(sources, limit).unwrap();
        (records.iter().map(|r| r.seq).collect(), has_next)
    }

    #[test]
    fn the_merge_takes_the_first_records_of_every_group() {
        assert_eq!(
            merged(vec![vec![1, 4, 9], vec![2, 3], vec![]], 3),
            (vec![1, 2, 3], true)
        );
        assert_eq!(merged(vec![vec![5], vec![7]], 3), (vec![5, 7], false));
        assert_eq!(merged(vec![vec![], vec![]], 3), (vec![], false));
    }

    #[test]
    fn groups_give_the_total_of_what_matches() {
        let w = TypeSet::WAREHOUSE;
        let p = TypeSet::PICKUP_POINT;
        let counts = [
            Group {
                status: Status::Active,
                types: w,
                count: 5,
            },
            Group {
                status: Status::Quarantine,
                types: w.union(p),
                count: 2,
            },
            Group {
                status: Status::Archived,
                types: p,
                count: 1,
            },
            Group {
                status: Status::Active,
                types: p,
                count: 0,
            },
        ];
        let f = LocationFilter {
            types: Some(p),
            ..Default::default()
        };
        let (groups, total) = f.groups(counts);
        assert_eq!(total, 3);
        assert_eq!(groups.len(), 2);
        let (_, all) = LocationFilter::default().groups(counts);
        assert_eq!(all, 8);
    }
}

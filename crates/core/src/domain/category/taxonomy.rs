//! The taxonomy in memory: one immutable snapshot per stored version, swapped whole when the
//! stored taxonomy changes, answering every list request without touching the database.
//!
//! Categories are kept in list order, so a category's *rank* is its position in
//! that order, and every filtered list is a sorted list of ranks:
//!
//! * per *variant* (status any/active/disabled × leaf_only), the global list and, in CSR form
//!   (one offsets array, one ranks array), the children of every category and the roots;
//! * `ids` filters resolve each id by binary search and sort the few ranks they find.
//!
//! A page is a binary search for the cursor's key (O(log n)) and a slice of `limit` ranks;
//! `total` is the list's length. Each category's JSON is serialised once, when the snapshot is
//! built, into one shared arena, each object followed by a comma. The store hands categories over
//! in list order, so neighbours in a list are neighbours in the arena: a page of an unfiltered
//! list is one run of the arena, already comma-joined, and is sent without being copied.

use std::cmp::Ordering;
use std::ops::Range;

use bytes::Bytes;
use sha2::{Digest, Sha256};

use super::{Category, CategoryStatus, OrderKey, order};

/// Which categories a list request asks for, normalised: filters that mean the
/// same are equal.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Filter {
    pub status: Option<CategoryStatus>,
    pub leaf_only: bool,
    pub scope: Scope,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Scope {
    All,
    Roots,
    ChildrenOf(String),
    /// Sorted, without repeats.
    Ids(Vec<String>),
}

impl Filter {
    /// Builds a normalised filter; `ids`, when given, wins over `parent_id`.
    pub fn new(
        status: Option<CategoryStatus>,
        leaf_only: bool,
        parent_id: Option<String>,
        ids: Option<Vec<String>>,
    ) -> Self {
        let scope = match (ids, parent_id) {
            (Some(mut ids), _) => {
                ids.sort_unstable();
                ids.dedup();
                Scope::Ids(ids)
            }
            (None, Some(p)) if p.is_empty() => Scope::Roots,
            (None, Some(p)) => Scope::ChildrenOf(p),
            (None, None) => Scope::All,
        };
        Filter {
            status,
            leaf_only,
            scope,
        }
    }

    /// A digest of the normalised filter, which a cursor carries to be bound to it.
    pub fn digest(&self) -> [u8; 16] {
        let mut h = Sha256::new();
        h.update(b"filter/v1");
        h.update([match self.status {
            None => 0,
            Some(CategoryStatus::Active) => 1,
            Some(CategoryStatus::Disabled) => 2,
        }]);
        h.update([u8::from(self.leaf_only)]);
        let mut put = |tag: u8, s: &str| {
            h.update([tag]);
            h.update((s.len() as u64).to_be_bytes());
            h.update(s.as_bytes());
        };
        match &self.scope {
            Scope::All => put(b'a', ""),
            Scope::Roots => put(b'r', ""),
            Scope::ChildrenOf(p) => put(b'c', p),
            Scope::Ids(ids) => ids.iter().for_each(|id| put(b'i', id)),
        }
        crate::domain::wire::digest16(h)
    }

    fn variant(&self) -> usize {
        let status = match self.status {
            None => 0,
            Some(CategoryStatus::Active) => 1,
            Some(CategoryStatus::Disabled) => 2,
        };
        status * 2 + usize::from(self.leaf_only)
    }
}

const VARIANTS: usize = 6;

fn variant_matches(variant: usize, status: CategoryStatus, leaf: bool) -> bool {
    let status_ok = match variant / 2 {
        1 => status == CategoryStatus::Active,
        2 => status == CategoryStatus::Disabled,
        _ => true,
    };
    status_ok && (variant.is_multiple_of(2) || leaf)
}

/// Builds a [`Taxonomy`] from categories given one at a time, in any order, holding nothing but
/// the snapshot's own memory: each category is serialised into the arena as it arrives and then
/// dropped; only the entries (a few words each) are sorted at the end, the arena is never copied.
/// The categories form a valid set (every parent present), as imports guarantee; a missing parent
/// would make a category unreachable by `parent_id` but still listed.
pub struct Builder {
    taxonomy: Taxonomy,
    json: Vec<u8>,
    parents: Vec<Option<Box<str>>>,
}

impl Builder {
    pub fn new(version: i64) -> Builder {
        Builder {
            taxonomy: Taxonomy {
                version,
                ..Taxonomy::default()
            },
            json: Vec::new(),
            parents: Vec::new(),
        }
    }

    pub fn push(&mut self, category: Category) {
        let (t, json) = (&mut self.taxonomy, &mut self.json);
        let json_start = json.len();
        // Serialising plain data into a Vec cannot fail.
        if serde_json::to_writer(&mut *json, &category).is_err() {
            json.truncate(json_start);
            json.extend_from_slice(b"{}");
        }
        let json_len = json.len() - json_start;
        json.push(b',');
        let id_start = t.ids.len();
        t.ids.push_str(&category.id);
        t.entries.push(Entry {
            json: span(json_start, json_len),
            id: span(id_start, category.id.len()),
            sort_order: category.sort_order,
            status: category.status,
            leaf: category.leaf,
        });
        self.parents.push(category.parent_id.map(String::into_boxed_str));
    }

    pub fn finish(self) -> Taxonomy {
        let Builder {
            taxonomy: mut t,
            mut json,
            mut parents,
        } = self;
        json.shrink_to_fit();
        t.json = Bytes::from(json);
        t.ids.shrink_to_fit();
        let n = t.entries.len();
        // Into list order: ranks are positions in it.
        let mut order_of: Vec<u32> = (0..n as u32).collect();
        order_of.sort_unstable_by(|&a, &b| {
            let (ea, eb) = (&t.entries[a as usize], &t.entries[b as usize]);
            order(ea.sort_order, t.id_at(ea.id), eb.sort_order, t.id_at(eb.id))
        });
        t.entries = order_of.iter().map(|&i| t.entries[i as usize]).collect();
        let parents: Vec<Option<Box<str>>> = order_of.iter().map(|&i| parents[i as usize].take()).collect();
        drop(order_of);

        let mut by_id: Vec<u32> = (0..n as u32).collect();
        by_id.sort_unstable_by(|&a, &b| t.id(a).as_bytes().cmp(t.id(b).as_bytes()));
        t.by_id = by_id;

        let roots = n;
        let group_of: Vec<usize> = parents
            .iter()
            .map(|p| p.as_deref().and_then(|p| t.rank_of(p)).map_or(roots, |r| r as usize))
            .collect();
        drop(parents);
        for variant in 0..VARIANTS {
            let members: Vec<u32> = (0..n as u32)
                .filter(|&r| {
                    let e = &t.entries[r as usize];
                    variant_matches(variant, e.status, e.leaf)
                })
                .collect();
            let mut offsets = vec![0u32; n + 2];
            for &r in &members {
                offsets[group_of[r as usize] + 1] += 1;
            }
            for g in 1..offsets.len() {
                offsets[g] += offsets[g - 1];
            }
            let mut fill = offsets.clone();
            let mut ranks = vec![0u32; members.len()];
            for &r in &members {
                let g = group_of[r as usize];
                ranks[fill[g] as usize] = r;
                fill[g] += 1;
            }
            t.children.push(Groups { offsets, ranks });
            t.global.push(members);
        }
        t
    }
}

#[derive(Clone, Copy, Debug)]
struct Span {
    start: u32,
    len: u32,
}

#[derive(Clone, Copy, Debug)]
struct Entry {
    json: Span,
    id: Span,
    sort_order: Option<i64>,
    status: CategoryStatus,
    leaf: bool,
}

/// Lists of ranks grouped by parent (group `n` holds the roots), each group in rank order.
#[derive(Debug, Default)]
struct Groups {
    offsets: Vec<u32>,
    ranks: Vec<u32>,
}

impl Groups {
    fn group(&self, g: usize) -> &[u32] {
        match (self.offsets.get(g), self.offsets.get(g + 1)) {
            (Some(&a), Some(&b)) => &self.ranks[a as usize..b as usize],
            _ => &[],
        }
    }
}

/// One page of a list: its categories' JSON objects in order, as runs of the snapshot's arena.
#[derive(Debug)]
pub struct Page<'a> {
    arena: &'a Bytes,
    runs: Vec<Range<usize>>,
    pub total: usize,
    /// Where this page ended, when more items follow.
    pub next: Option<Resume>,
}

/// Where a page starts: right after `key`. `position` is where `key` sat in its list when the
/// previous page was made; a page tries it first (one comparison: a position is used only when
/// `key` is still there) and searches the list for `key` only when the list has changed since.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resume {
    pub key: OrderKey,
    pub position: Option<u32>,
}

/// An immutable snapshot of the taxonomy.
#[derive(Debug, Default)]
pub struct Taxonomy {
    version: i64,
    entries: Vec<Entry>,
    /// Every category's JSON object (UTF-8), each followed by a comma, in the order the store
    /// handed them over (list order); a page shares it without looking into it.
    json: Bytes,
    ids: String,
    /// Ranks sorted by id bytes, for lookups by id.
    by_id: Vec<u32>,
    global: Vec<Vec<u32>>,
    children: Vec<Groups>,
}

impl Taxonomy {
    /// Builds the snapshot of stored `version` from a whole set (see [`Builder`] to build it
    /// row by row instead).
    pub fn build(version: i64, mut categories: Vec<Category>) -> Taxonomy {
        // In list order, so that neighbours share the arena (see the module's note).
        categories.sort_unstable_by(|a, b| order(a.sort_order, &a.id, b.sort_order, &b.id));
        let mut builder = Builder::new(version);
        for category in categories {
            builder.push(category);
        }
        builder.finish()
    }

    pub fn version(&self) -> i64 {
        self.version
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    fn id(&self, rank: u32) -> &str {
        self.id_at(self.entries[rank as usize].id)
    }

    fn id_at(&self, s: Span) -> &str {
        &self.ids[s.start as usize..(s.start + s.len) as usize]
    }

    fn rank_of(&self, id: &str) -> Option<u32> {
        self.by_id
            .binary_search_by(|&r| self.id(r).as_bytes().cmp(id.as_bytes()))
            .ok()
            .map(|i| self.by_id[i])
    }

    fn key_cmp(&self, rank: u32, key: &OrderKey) -> Ordering {
        order(
            self.entries[rank as usize].sort_order,
            self.id(rank),
            key.sort_order,
            &key.id,
        )
    }

    /// The page of `limit` categories matching `filter` that follows `after` (or the first).
    pub fn page(&self, filter: &Filter, after: Option<&Resume>, limit: usize) -> Page<'_> {
        let variant = filter.variant();
        let owned;
        let list: &[u32] = match &filter.scope {
            Scope::All => &self.global[variant],
            Scope::Roots => self.children[variant].group(self.len()),
            Scope::ChildrenOf(parent) => match self.rank_of(parent) {
                Some(p) => self.children[variant].group(p as usize),
                None => &[],
            },
            Scope::Ids(ids) => {
                let mut ranks: Vec<u32> = ids
                    .iter()
                    .filter_map(|id| self.rank_of(id))
                    .filter(|&r| {
                        let e = &self.entries[r as usize];
                        variant_matches(variant, e.status, e.leaf)
                    })
                    .collect();
                ranks.sort_unstable();
                owned = ranks;
                &owned
            }
        };
        let start = after.map_or(0, |after| {
            // Keys are unique: when `key` is found at `position`, the page starts right after it.
            let at = after.position.map(|p| p as usize).filter(|&p| {
                list.get(p)
                    .is_some_and(|&r| self.key_cmp(r, &after.key) == Ordering::Equal)
            });
            at.map_or_else(
                || list.partition_point(|&r| self.key_cmp(r, &after.key) != Ordering::Greater),
                |p| p + 1,
            )
        });
        let end = start.saturating_add(limit).min(list.len());
        let page = &list[start..end];
        let next = (end < list.len()).then(|| page.last()).flatten().map(|&r| Resume {
            key: OrderKey {
                sort_order: self.entries[r as usize].sort_order,
                id: self.id(r).to_owned(),
            },
            position: u32::try_from(end - 1).ok(),
        });
        Page {
            arena: &self.json,
            runs: self.runs(page),
            total: list.len(),
            next,
        }
    }

    /// The arena ranges holding the objects of `ranks`, in order: neighbours in the arena (one
    /// comma apart) share a range.
    fn runs(&self, ranks: &[u32]) -> Vec<Range<usize>> {
        let mut runs: Vec<Range<usize>> = Vec::new();
        for &r in ranks {
            let s = self.entries[r as usize].json;
            let (start, end) = (s.start as usize, (s.start + s.len) as usize);
            match runs.last_mut() {
                Some(run) if run.end + 1 == start => run.end = end,
                _ => runs.push(start..end),
            }
        }
        runs
    }
}

impl Page<'_> {
    /// The inside of the page's JSON array (its objects joined by commas), as buffers to send one
    /// after another: when the page is at most `max_shared` runs of the arena, the runs themselves
    /// (shared, not copied) with a comma between them; otherwise one buffer they are copied into,
    /// which beats many tiny ones.
    pub fn inside(&self, max_shared: usize) -> Vec<Bytes> {
        const COMMA: Bytes = Bytes::from_static(b",");
        if self.runs.len() <= max_shared {
            let mut parts = Vec::with_capacity(2 * self.runs.len());
            for (i, run) in self.runs.iter().enumerate() {
                if i > 0 {
                    parts.push(COMMA);
                }
                parts.push(self.arena.slice(run.clone()));
            }
            return parts;
        }
        let mut copied = Vec::with_capacity(self.runs.iter().map(|r| r.len() + 1).sum());
        for (i, run) in self.runs.iter().enumerate() {
            if i > 0 {
                copied.push(b',');
            }
            copied.extend_from_slice(&self.arena[run.clone()]);
        }
        vec![Bytes::from(copied)]
    }

    /// How many runs of the arena the page is made of: one for a page of neighbours.
    #[cfg(test)]
    fn run_count(&self) -> usize {
        self.runs.len()
    }
}

fn span(start: usize, len: usize) -> Span {
    // Arenas stay far below 4 GiB: ids are at most 64 characters and a category's JSON is small.
    Span {
        start: u32::try_from(start).unwrap_or(u32::MAX),
        len: u32::try_from(len).unwrap_or(0),
    }
}

#[cfg(test)]
#[path = "taxonomy_tests.rs"]
mod tests;

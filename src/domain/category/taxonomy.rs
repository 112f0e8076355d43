//! The taxonomy in memory: one immutable snapshot per stored version, swapped whole when the
//! stored taxonomy changes, answering every list request without touching the database.
//!
//! Categories are kept in list order (CONTRACT §5.3), so a category's *rank* is its position in
//! that order, and every filtered list is a sorted list of ranks:
//!
//! * per *variant* (status any/active/disabled × leaf_only), the global list and, in CSR form
//!   (one offsets array, one ranks array), the children of every category and the roots;
//! * `ids` filters resolve each id by binary search and sort the few ranks they find.
//!
//! A page is a binary search for the cursor's key (O(log n)) and a slice of `limit` ranks;
//! `total` is the list's length. Each category's JSON is serialised once, when the snapshot is
//! built, into one arena, so a page is written by concatenation.

use std::cmp::Ordering;

use sha2::{Digest, Sha256};

use super::{Category, CategoryStatus, OrderKey, order};

/// Which categories a list request asks for (CONTRACT §5.2), normalised: filters that mean the
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
        let full = h.finalize();
        let mut digest = [0u8; 16];
        digest.copy_from_slice(&full[..16]);
        digest
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
    parents: Vec<Option<Box<str>>>,
}

impl Builder {
    pub fn new(version: i64) -> Builder {
        Builder {
            taxonomy: Taxonomy {
                version,
                ..Taxonomy::default()
            },
            parents: Vec::new(),
        }
    }

    pub fn push(&mut self, category: Category) {
        let t = &mut self.taxonomy;
        let json_start = t.json.len();
        // Serialising plain data into a Vec cannot fail.
        if serde_json::to_writer(&mut t.json, &category).is_err() {
            t.json.truncate(json_start);
            t.json.extend_from_slice(b"{}");
        }
        let id_start = t.ids.len();
        t.ids.push_str(&category.id);
        t.entries.push(Entry {
            json: span(json_start, t.json.len() - json_start),
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
            mut parents,
        } = self;
        t.json.shrink_to_fit();
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

/// One page of a list.
#[derive(Debug)]
pub struct Page<'a> {
    /// Each category's JSON object (UTF-8).
    pub items: Vec<&'a [u8]>,
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
    /// Every category's JSON object, one after another in list order (bytes: a page copies them
    /// without looking into them).
    json: Vec<u8>,
    ids: String,
    /// Ranks sorted by id bytes, for lookups by id.
    by_id: Vec<u32>,
    global: Vec<Vec<u32>>,
    children: Vec<Groups>,
}

impl Taxonomy {
    /// Builds the snapshot of stored `version` from a whole set (see [`Builder`] to build it
    /// row by row instead).
    pub fn build(version: i64, categories: Vec<Category>) -> Taxonomy {
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

    fn object(&self, rank: u32) -> &[u8] {
        let s = self.entries[rank as usize].json;
        &self.json[s.start as usize..(s.start + s.len) as usize]
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
            items: page.iter().map(|&r| self.object(r)).collect(),
            total: list.len(),
            next,
        }
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
mod tests {
    use super::*;

    fn cat(id: &str, parent: Option<&str>, sort: Option<i64>, leaf: bool, status: CategoryStatus) -> Category {
        Category {
            id: id.into(),
            name: id.into(),
            slug: id.to_lowercase(),
            parent_id: parent.map(Into::into),
            leaf,
            sort_order: sort,
            icon_url: None,
            description: None,
            is_service: None,
            is_digital: None,
            status,
        }
    }

    fn ids(page: &Page<'_>) -> Vec<String> {
        page.items
            .iter()
            .map(|j| {
                serde_json::from_slice::<serde_json::Value>(j).unwrap_or_default()["id"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned()
            })
            .collect()
    }

    #[test]
    fn filters_and_pages() {
        use CategoryStatus::*;
        let t = Taxonomy::build(
            1,
            vec![
                cat("r2", None, Some(2), false, Active),
                cat("r1", None, Some(1), false, Active),
                cat("a", Some("r1"), None, true, Active),
                cat("b", Some("r1"), Some(5), true, Disabled),
                cat("c", Some("r2"), Some(5), true, Active),
            ],
        );
        let all = Filter::new(None, false, None, None);
        assert_eq!(ids(&t.page(&all, None, 10)), ["r1", "r2", "b", "c", "a"]);
        let first = t.page(&all, None, 2);
        assert_eq!(first.total, 5);
        let second = t.page(&all, first.next.as_ref(), 2);
        assert_eq!(ids(&second), ["b", "c"]);
        let third = t.page(&all, second.next.as_ref(), 2);
        assert_eq!(ids(&third), ["a"]);
        assert!(third.next.is_none());
        // Where the key sat is only a hint: any other position (a list changed since, a cursor
        // from before positions were kept) finds the key by search, and the page is the same.
        let resume = first.next.clone().unwrap();
        assert_eq!(resume.position, Some(1));
        for position in [None, Some(0), Some(2), Some(4), Some(5), Some(u32::MAX)] {
            let moved = Resume {
                position,
                ..resume.clone()
            };
            assert_eq!(ids(&t.page(&all, Some(&moved), 2)), ["b", "c"], "{position:?}");
        }
        // A key no longer in the list: the page starts after where it would be.
        let gone = Resume {
            key: OrderKey {
                sort_order: Some(2),
                id: "r2x".into(),
            },
            position: Some(1),
        };
        assert_eq!(ids(&t.page(&all, Some(&gone), 2)), ["b", "c"]);

        assert_eq!(
            ids(&t.page(&Filter::new(None, false, Some(String::new()), None), None, 10)),
            ["r1", "r2"]
        );
        assert_eq!(
            ids(&t.page(&Filter::new(Some(Active), true, Some("r1".into()), None), None, 10)),
            ["a"]
        );
        let by_ids = Filter::new(
            None,
            true,
            Some("r2".into()),
            Some(vec!["a".into(), "zz".into(), "r1".into(), "a".into()]),
        );
        let page = t.page(&by_ids, None, 10);
        assert_eq!((ids(&page), page.total), (vec!["a".to_owned()], 1));
        assert_eq!(
            t.page(&Filter::new(None, false, Some("nope".into()), None), None, 10)
                .total,
            0
        );
    }

    #[test]
    fn equivalent_filters_share_a_digest() {
        let a = Filter::new(
            None,
            false,
            Some("x".into()),
            Some(vec!["b".into(), "a".into(), "b".into()]),
        );
        let b = Filter::new(None, false, None, Some(vec!["a".into(), "b".into()]));
        assert_eq!(a.digest(), b.digest());
        assert_ne!(
            a.digest(),
            Filter::new(None, true, None, Some(vec!["a".into(), "b".into()])).digest()
        );
        assert_ne!(
            Filter::new(None, false, Some(String::new()), None).digest(),
            Filter::new(None, false, None, None).digest()
        );
    }
}

//! Categories: the model, the import formats and the in-memory
//! taxonomy that serves the list endpoint.

pub mod import;
pub mod taxonomy;

use std::cmp::Ordering;

use serde::Serialize;

use crate::wire_enum;

wire_enum! {
    pub enum CategoryStatus {
        Active => "active",
        Disabled => "disabled",
    }
}

/// One category, as stored and as answered (every field present, optional ones `null`).
#[derive(Clone, Debug, PartialEq, Serialize, utoipa::ToSchema)]
pub struct Category {
    pub id: String,
    pub name: String,
    pub slug: String,
    pub parent_id: Option<String>,
    pub leaf: bool,
    pub sort_order: Option<i64>,
    pub icon_url: Option<String>,
    pub description: Option<String>,
    pub is_service: Option<bool>,
    pub is_digital: Option<bool>,
    pub status: CategoryStatus,
}

/// The list order: `sort_order` ascending with nulls last, then `id` by bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OrderKey {
    pub sort_order: Option<i64>,
    pub id: String,
}

/// Compares two positions in the list order.
pub fn order(a_sort: Option<i64>, a_id: &str, b_sort: Option<i64>, b_id: &str) -> Ordering {
    let by_sort = match (a_sort, b_sort) {
        (Some(a), Some(b)) => a.cmp(&b),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => Ordering::Equal,
    };
    by_sort.then_with(|| a_id.as_bytes().cmp(b_id.as_bytes()))
}

impl Ord for OrderKey {
    fn cmp(&self, other: &Self) -> Ordering {
        order(self.sort_order, &self.id, other.sort_order, &other.id)
    }
}

impl PartialOrd for OrderKey {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nulls_last_then_ids_by_bytes() {
        let key = |s: Option<i64>, id: &str| OrderKey {
            sort_order: s,
            id: id.into(),
        };
        let mut keys = vec![
            key(None, "a"),
            key(Some(2), "a"),
            key(Some(1), "b"),
            key(Some(1), "B"),
            key(None, "A"),
        ];
        keys.sort();
        assert_eq!(
            keys,
            vec![
                key(Some(1), "B"),
                key(Some(1), "b"),
                key(Some(2), "a"),
                key(None, "A"),
                key(None, "a")
            ]
        );
    }
}

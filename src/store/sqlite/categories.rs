//! Category SQL.

use rusqlite::{Connection, params};

use crate::domain::category::{Category, CategoryStatus};
use crate::store::api::StoreError;

pub(super) const CATEGORY_COLUMNS: &str =
    "id, name, slug, parent_id, leaf, sort_order, icon_url, description, is_service, is_digital, status";

pub(super) fn read_categories(conn: &Connection) -> Result<Vec<Category>, StoreError> {
    let mut categories = Vec::new();
    for_each_category(conn, |c| categories.push(c))?;
    Ok(categories)
}

/// Every stored category, one at a time, in list order (`sort_order` with nulls
/// last, then `id` by bytes). The snapshot's JSON arena is then laid out as the list is read:
/// a page copies one run of memory, not a hundred scattered objects (on 1M categories the
/// scattered reads were a third of a page's cost).
pub(super) fn for_each_category(conn: &Connection, mut f: impl FnMut(Category)) -> Result<(), StoreError> {
    let mut stmt = conn.prepare(&format!(
        "SELECT {CATEGORY_COLUMNS} FROM categories ORDER BY sort_order IS NULL, sort_order, id"
    ))?;
    let rows = stmt.query_map([], |r| {
        Ok(Category {
            id: r.get(0)?,
            name: r.get(1)?,
            slug: r.get(2)?,
            parent_id: r.get(3)?,
            leaf: r.get(4)?,
            sort_order: r.get(5)?,
            icon_url: r.get(6)?,
            description: r.get(7)?,
            is_service: r.get(8)?,
            is_digital: r.get(9)?,
            status: super::column::word(r, 10, "category status", CategoryStatus::from_wire)?,
        })
    })?;
    for row in rows {
        f(row?);
    }
    Ok(())
}

pub(super) fn write_category(conn: &Connection, c: &Category) -> Result<(), StoreError> {
    conn.prepare_cached(&format!(
        "INSERT INTO categories ({CATEGORY_COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11) \
         ON CONFLICT (id) DO UPDATE SET name = excluded.name, slug = excluded.slug, parent_id = excluded.parent_id, \
         leaf = excluded.leaf, sort_order = excluded.sort_order, icon_url = excluded.icon_url, \
         description = excluded.description, is_service = excluded.is_service, is_digital = excluded.is_digital, \
         status = excluded.status"
    ))?
    .execute(params![
        c.id,
        c.name,
        c.slug,
        c.parent_id,
        c.leaf,
        c.sort_order,
        c.icon_url,
        c.description,
        c.is_service,
        c.is_digital,
        c.status.as_str()
    ])?;
    Ok(())
}

pub(super) fn taxonomy_version(conn: &Connection) -> Result<i64, StoreError> {
    Ok(
        conn.query_row("SELECT value FROM meta WHERE key = 'taxonomy_version'", [], |r| {
            r.get(0)
        })?,
    )
}

//! Category SQL.

use deadpool_postgres::GenericClient;

use crate::domain::category::{Category, CategoryStatus};
use crate::store::api::StoreError;

pub(super) const CATEGORY_COLUMNS: &str =
    "id, name, slug, parent_id, leaf, sort_order, icon_url, description, is_service, is_digital, status";

pub(super) async fn read_categories(client: &impl GenericClient) -> Result<Vec<Category>, StoreError> {
    let rows = client
        .query(&format!("SELECT {CATEGORY_COLUMNS} FROM categories"), &[])
        .await?;
    rows.iter().map(category_of).collect()
}

pub(super) fn category_of(r: &tokio_postgres::Row) -> Result<Category, StoreError> {
    let status: String = r.try_get(10)?;
    Ok(Category {
        id: r.try_get(0)?,
        name: r.try_get(1)?,
        slug: r.try_get(2)?,
        parent_id: r.try_get(3)?,
        leaf: r.try_get(4)?,
        sort_order: r.try_get(5)?,
        icon_url: r.try_get(6)?,
        description: r.try_get(7)?,
        is_service: r.try_get(8)?,
        is_digital: r.try_get(9)?,
        status: CategoryStatus::from_wire(&status).ok_or_else(|| StoreError::corrupt("category status", &status))?,
    })
}

/// Inserts or replaces `categories` in one statement.
pub(super) async fn write_categories(client: &impl GenericClient, categories: &[&Category]) -> Result<(), StoreError> {
    let column = |f: fn(&Category) -> Option<String>| categories.iter().map(|c| f(c)).collect::<Vec<_>>();
    let ids = column(|c| Some(c.id.clone()));
    let names = column(|c| Some(c.name.clone()));
    let slugs = column(|c| Some(c.slug.clone()));
    let parents = column(|c| c.parent_id.clone());
    let icons = column(|c| c.icon_url.clone());
    let descriptions = column(|c| c.description.clone());
    let statuses = column(|c| Some(c.status.as_str().to_owned()));
    let leaves: Vec<bool> = categories.iter().map(|c| c.leaf).collect();
    let sorts: Vec<Option<i64>> = categories.iter().map(|c| c.sort_order).collect();
    let services: Vec<Option<bool>> = categories.iter().map(|c| c.is_service).collect();
    let digitals: Vec<Option<bool>> = categories.iter().map(|c| c.is_digital).collect();
    client
        .execute(
            &format!(
                "INSERT INTO categories ({CATEGORY_COLUMNS}) \
                 SELECT * FROM UNNEST($1::text[], $2::text[], $3::text[], $4::text[], $5::bool[], $6::int8[], \
                 $7::text[], $8::text[], $9::bool[], $10::bool[], $11::text[]) \
                 ON CONFLICT (id) DO UPDATE SET name = excluded.name, slug = excluded.slug, \
                 parent_id = excluded.parent_id, leaf = excluded.leaf, sort_order = excluded.sort_order, \
                 icon_url = excluded.icon_url, description = excluded.description, \
                 is_service = excluded.is_service, is_digital = excluded.is_digital, status = excluded.status"
            ),
            &[
                &ids,
                &names,
                &slugs,
                &parents,
                &leaves,
                &sorts,
                &icons,
                &descriptions,
                &services,
                &digitals,
                &statuses,
            ],
        )
        .await?;
    Ok(())
}

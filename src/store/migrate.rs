//! What both stores' migrations share beyond their SQL files: the steps written in Rust.
//!
//! Migration 3 (the stored record) rewrites every location's stored text from the
//! earlier canonical form (absent values left out, `merchant_location_id` inside) to the record's
//! content, so that a page is sent from the stored text as it is. The search migration (SQLite's
//! 4th, PostgreSQL's 5th) fills in the search index's columns of every location from its record.

use crate::domain::location::Location;
use crate::domain::location::search::key::SearchKey;

use super::api::StoreError;

/// Refuses a database migrated further than this binary knows (`known` migrations): serving it
/// could write what a newer schema forbids, or misread what it stores.
pub fn refuse_newer(applied: i64, known: usize) -> Result<(), StoreError> {
    if applied > known as i64 {
        return Err(StoreError::Backend(
            format!(
                "the database is at schema version {applied}, newer than this storefront knows ({known}): run the newer storefront that migrated it"
            )
            .into(),
        ));
    }
    Ok(())
}

/// The migration after which `upgraded_body` runs over every location.
pub const RECORD_MIGRATION: usize = 3;
/// Rows rewritten per statement batch.
pub const UPGRADE_CHUNK: i64 = 1000;

/// The search index's columns of a stored record; `None` when it is not one (left as it is, and
/// so never found, rather than lost).
pub fn search_key(body: &str) -> Option<SearchKey> {
    Location::from_canonical(body).map(|l| SearchKey::of(&l))
}

/// What the text filter finds a stored record by; `None` when it is not one.
pub fn indexed_text(body: &str, merchant_location_id: Option<&str>) -> Option<String> {
    Location::from_canonical(body).map(|l| crate::domain::location::text::indexed(&l.name, merchant_location_id))
}

/// The record content of a body stored in an earlier form; `None` when it already is one (or is
/// not a location at all, which is left for a human to see rather than lost).
pub fn upgraded_body(body: &str) -> Option<String> {
    let canonical = Location::from_canonical(body)?.canonical_json();
    (canonical != body).then_some(canonical)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_old_body_becomes_the_record_content_and_a_new_one_stays() {
        let old = r#"{"merchant_location_id":"wh-1","location_types":["WAREHOUSE"],"name":"W","latitude":10.0,"longitude":37.6,"limits":{"length":200.0,"width":120.0,"height":150.0,"weight":500.0},"working_schedule":[{"day":"MONDAY","schedule":{"time_start":"09:00","time_end":"21:00","break":"13:00-14:00"}}],"is_accepts_returns":true}"#;
        let new = upgraded_body(old).unwrap();
        assert_eq!(
            new,
            r#"{"location_types":["WAREHOUSE"],"name":"W","address_tail":null,"comment":null,"latitude":10.0,"longitude":37.6,"provider_id":null,"provider_location_id":null,"pickup_point_type":null,"payment_methods":null,"storage_period_days":null,"limits":{"length":200.0,"width":120.0,"height":150.0,"weight":500.0},"instruction":null,"pickup_services":null,"working_schedule":[{"day":"MONDAY","schedule":{"time_start":"09:00","time_end":"21:00","break":"13:00-14:00","shipping_cutoff":null}}],"individual_schedule":null,"is_accepts_returns":true}"#
        );
        assert_eq!(upgraded_body(&new), None);
        assert_eq!(upgraded_body("not json"), None);
    }

    #[test]
    fn a_database_newer_than_the_binary_is_refused() {
        assert!(refuse_newer(4, 4).is_ok());
        assert!(refuse_newer(0, 4).is_ok());
        let refused = refuse_newer(5, 4).err().map(|e| format!("{:?}", e));
        assert!(refused.is_some_and(|e| e.contains("schema version 5")));
    }
}

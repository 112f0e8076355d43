//! What the create and update targets share: reading a body's items as the service does, and
//! what every answer must hold, whatever the body (CONTRACT §4.1 step 3, §6): at most 50 errors
//! an item, never two at one path, every path inside its own item.

use serde_json_borrow::Value;
use storefront_core::domain::field_error::{FieldError, MAX_ERRORS_PER_ITEM};
use storefront_core::domain::location::request::request_items;

/// The items of `data`, when it is a request body the service reads on to its items.
pub fn items_of(data: &[u8]) -> Option<Vec<Value<'_>>> {
    let body = serde_json::from_slice::<Value>(data).ok()?;
    request_items(body).ok()
}

pub fn check_errors(index: usize, errors: &[FieldError]) {
    assert!(errors.len() <= MAX_ERRORS_PER_ITEM, "item {index}: {} errors", errors.len());
    let prefix = format!("locations[{index}]");
    let mut seen = std::collections::HashSet::new();
    for error in errors {
        let rest = error.field.strip_prefix(&prefix);
        assert!(
            rest.is_some_and(|r| r.is_empty() || r.starts_with('.') || r.starts_with('[')),
            "item {index}: error at {:?}",
            error.field
        );
        assert!(seen.insert(error.field.as_str()), "item {index}: two errors at {:?}", error.field);
    }
}

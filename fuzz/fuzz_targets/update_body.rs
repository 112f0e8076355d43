//! An update body (and the same items as archive and restore) through the request reader and the
//! change decision, against a merchant with no stored location: every item fails, each with its
//! errors bounded and inside its own item.
#![no_main]

use libfuzzer_sys::fuzz_target;
use storefront_core::domain::location::change::{ChangePlan, Operation};

#[path = "items.rs"]
mod items;

fuzz_target!(|data: &[u8]| {
    let Some(values) = items::items_of(data) else {
        return;
    };
    for operation in [Operation::Update, Operation::Archive, Operation::Restore] {
        let plan = ChangePlan::new(operation, &values);
        let decision = plan.decide(Vec::new(), Vec::new(), Vec::new());
        assert_eq!(decision.results.len(), values.len());
        assert!(decision.writes.is_empty(), "nothing is stored, so nothing changes");
        for (i, result) in decision.results.iter().enumerate() {
            items::check_errors(i, &result.errors);
            assert!(!result.errors.is_empty(), "item {i} names no stored location");
        }
    }
});

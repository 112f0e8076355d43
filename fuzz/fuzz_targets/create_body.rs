//! A create body, as bytes, through the request reader and the whole create decision that needs
//! no storage (duplicates, validation), then answered as if every valid item were stored.
#![no_main]

use libfuzzer_sys::fuzz_target;
use storefront_core::domain::location::Persist;
use storefront_core::domain::location::batch::{Outcome, Plan};

#[path = "items.rs"]
mod items;

fuzz_target!(|data: &[u8]| {
    let Some(values) = items::items_of(data) else {
        return;
    };
    let mut plan = Plan::new(&values);
    let stored = plan.take_to_store().len();
    let outcomes = (0..stored)
        .map(|i| Outcome::Created {
            location_id: format!("L{i}"),
            quarantined_by: None,
        })
        .collect();
    let results = plan.finish(outcomes, Persist::Commit).expect("one result per item");
    assert_eq!(results.len(), values.len());
    for (i, result) in results.iter().enumerate() {
        items::check_errors(i, &result.errors);
        assert_eq!(result.location_id.is_empty(), !result.errors.is_empty());
    }
    let answer = serde_json::to_vec(&results).expect("the answer serialises");
    // 200 items × 50 errors stay far below this, plus what the items echo back.
    assert!(answer.len() <= 4 * 1024 * 1024 + 2 * data.len(), "answer of {} bytes", answer.len());
});

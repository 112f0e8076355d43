//! The demo merchant's delivery locations (`serve --demo`): about 300 pickup points, parcel
//! lockers and stores around Moscow and Saint Petersburg, from `assets/demo-locations.json`
//! (`scripts/gen-demo-locations.py` writes it), created through the create path like any
//! merchant's, so a newcomer's first search in `/docs` finds something.

use std::time::{Duration, Instant};

use crate::domain::json::{Value, take_member};
use crate::domain::location::Persist;
use crate::domain::location::batch::Plan;
use crate::domain::location::schema::limits::ITEMS_PER_REQUEST;
use crate::store::WriteFor;
use crate::store::{MerchantRef, Store};

const DEMO_LOCATIONS: &str = include_str!("../assets/demo-locations.json");

/// Creates the demo locations for `merchant`, a create request's worth at a time; returns how many
/// were stored.
pub async fn seed_locations(store: &dyn Store, merchant: &MerchantRef) -> anyhow::Result<usize> {
    let body: Value<'_> = serde_json::from_str(DEMO_LOCATIONS)?;
    let items = request_items_unbounded(body)?;
    let mut stored = 0;
    for chunk in items.chunks(ITEMS_PER_REQUEST) {
        let mut plan = Plan::new(chunk);
        let to_store = plan.take_to_store();
        anyhow::ensure!(
            to_store.len() == chunk.len(),
            "a demo location is invalid: regenerate assets/demo-locations.json"
        );
        let deadline = Instant::now() + Duration::from_secs(60);
        stored += store
            .create_locations(
                WriteFor {
                    merchant,
                    persist: Persist::Commit,
                    deadline,
                },
                to_store,
            )
            .await?
            .len();
    }
    Ok(stored)
}

/// The file's `locations` (more than one request may hold: it is cut into requests above).
fn request_items_unbounded(body: Value<'_>) -> anyhow::Result<Vec<Value<'_>>> {
    let Value::Object(members) = body else {
        anyhow::bail!("assets/demo-locations.json is not an object");
    };
    let Some(Value::Array(items)) = take_member(members, "locations") else {
        anyhow::bail!("assets/demo-locations.json has no locations");
    };
    Ok(items)
}

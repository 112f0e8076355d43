//! The demo merchant's delivery locations (`serve --demo`): about 300 pickup points, parcel
//! lockers and stores around Moscow and Saint Petersburg, from `assets/demo-locations.json`
//! (`scripts/gen-demo-locations.py` writes it), created through the create path like any
//! merchant's, so a newcomer's first search in `/docs` finds something; then a few archived, and
//! one more created 20 m from a pickup point, in quarantine beside it (`seed_statuses`), so that
//! the console has every status to show.

use std::time::{Duration, Instant};

use crate::domain::json::{Value, take_member};
use crate::domain::location::Persist;
use crate::domain::location::batch::Plan;
use crate::domain::location::change::{ChangePlan, Operation};
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

/// The demo's locations archived by `seed_statuses`.
const ARCHIVED: &str = r#"[{"merchant_location_id": "pvz-0004"}, {"merchant_location_id": "locker-0006"},
    {"merchant_location_id": "shop-0002"}]"#;

/// Archives a few demo locations and creates one 20 m north of the pickup point `pvz-0003` (a
/// copy of it but for its ids and latitude): it is decided `QUARANTINE`, its neighbour named.
pub async fn seed_statuses(store: &dyn Store, merchant: &MerchantRef) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(60);
    let write = |deadline| WriteFor {
        merchant,
        persist: Persist::Commit,
        deadline,
    };
    let archived: Value<'_> = serde_json::from_str(ARCHIVED)?;
    let Value::Array(items) = archived else {
        anyhow::bail!("the demo's archived locations are not a list");
    };
    store
        .change_locations(write(deadline), ChangePlan::new(Operation::Archive, &items))
        .await?;
    let mut all: serde_json::Value = serde_json::from_str(DEMO_LOCATIONS)?;
    let near = all["locations"]
        .as_array_mut()
        .and_then(|items| items.iter_mut().find(|l| l["merchant_location_id"] == "pvz-0003"))
        .map(std::mem::take)
        .ok_or_else(|| anyhow::anyhow!("the demo has no pvz-0003"))?;
    let mut annex = near;
    let latitude = annex["latitude"].as_f64().unwrap_or_default() + 0.00018;
    annex["merchant_location_id"] = "pvz-0003-annex".into();
    annex["latitude"] = latitude.into();
    if let Some(name) = annex["name"].as_str() {
        annex["name"] = format!("{name} (annex)").into();
    }
    let text = serde_json::to_string(&annex)?;
    let item: Value<'_> = serde_json::from_str(&text)?;
    let items = [item];
    let mut plan = Plan::new(&items);
    let to_store = plan.take_to_store();
    store.create_locations(write(deadline), to_store).await?;
    Ok(())
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

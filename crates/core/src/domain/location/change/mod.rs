//! Changing stored locations: update, archive and restore, in batches.
//!
//! `ChangePlan::new` does everything that needs no storage: how each item names its location,
//! its `expected_version`, and (update) its new content through the very validator create uses.
//! The store then, in one transaction and under the merchant's write lock, fetches what the
//! decision reads and nothing more:
//!
//! 1. the locations the items name ([`ChangePlan::lookups`]),
//! 2. the `QUARANTINE` locations whose issue names one of those (they may be decided again),
//! 3. the live locations around every point a decision looks at ([`ChangePlan::probes`]),
//!
//! and [`ChangePlan::decide`] makes every decision in memory, in request order: the results, the
//! rows to write, the changes to the merchant's counts. Deciding `ACTIVE` or `QUARANTINE`
//! is the rule create uses ([`geo::quarantining_neighbour`]) over the state as the request
//! leaves it so far: every location fetched, with this request's earlier changes applied.

mod item;
mod plan;
mod world;

pub use item::{ChangeResult, Content, Current, Decision, Operation, Write, approval, stored_name};
use item::{Item, Naming};

use std::collections::{HashMap, HashSet};

use self::plan::plan_item;
use self::world::{Applied, World};
use super::Status;
use super::batch::quarantine_issue;
use crate::domain::field_error::{FieldCode, Path};
use crate::domain::geo::Neighbour;
use crate::domain::ids;
use crate::domain::json::Value;

/// A change request after everything that needs no storage.
#[derive(Debug)]
pub struct ChangePlan {
    operation: Operation,
    /// One per request item: `Some` when already answered (it names no location).
    results: Vec<Option<ChangeResult>>,
    items: Vec<Item>,
}

impl ChangePlan {
    /// Reads every item of `values` (the request's `locations`) for `operation`.
    pub fn new(operation: Operation, values: &[Value]) -> ChangePlan {
        let root = Path::root("locations");
        let mut plan = ChangePlan {
            operation,
            results: Vec::with_capacity(values.len()),
            items: Vec::new(),
        };
        for (i, value) in values.iter().enumerate() {
            let path = root.index(i);
            match plan_item(operation, i, value, &path) {
                Ok(item) => {
                    plan.items.push(item);
                    plan.results.push(None);
                }
                Err(result) => plan.results.push(Some(result)),
            }
        }
        plan
    }

    pub fn operation(&self) -> Operation {
        self.operation
    }

    /// Whether any item names a location (else the store need not be asked).
    pub fn names_any(&self) -> bool {
        !self.items.is_empty()
    }

    /// The `location_id`s and `merchant_location_id`s the items name, but those that can name
    /// nothing (`ids::may_name`): their items are not found.
    pub fn lookups(&self) -> (Vec<&str>, Vec<&str>) {
        let mut by_id = Vec::new();
        let mut by_merchant_id = Vec::new();
        for item in &self.items {
            match &item.naming {
                Naming::LocationId(id) if ids::may_name(id) => by_id.push(id.as_str()),
                Naming::MerchantId(id) if ids::may_name(id) => by_merchant_id.push(id.as_str()),
                _ => {}
            }
        }
        (by_id, by_merchant_id)
    }

    /// Every point a decision may look around, given the named locations (`targets`) and the
    /// quarantined locations whose issue names one of them (`dependents`): the new coordinates of
    /// every update, and where every named and dependent location is.
    pub fn probes(&self, targets: &[Current], dependents: &[Current]) -> Vec<(f64, f64)> {
        let mut points: Vec<(f64, f64)> = targets
            .iter()
            .chain(dependents)
            .map(|c| (c.latitude, c.longitude))
            .collect();
        for item in &self.items {
            if let Ok(Some(new)) = &item.content {
                points.push((new.location.latitude, new.location.longitude));
            }
        }
        points.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.total_cmp(&b.1)));
        points.dedup();
        points
    }

    /// Decides every item, given the locations the items name (`targets`),
    /// the quarantined ones whose issue names one of them (`dependents`), and the live locations
    /// around every probe (`nearby`).
    pub fn decide(self, targets: Vec<Current>, dependents: Vec<Current>, nearby: Vec<Neighbour>) -> Decision {
        let ChangePlan {
            operation,
            mut results,
            items,
        } = self;
        let mut world = World::new(targets, dependents, nearby);

        // Which location each item names; failures answer at once.
        let mut named: Vec<(Item, String)> = Vec::new();
        for item in items {
            match world.resolve(&item) {
                Ok(id) => named.push((item, id)),
                Err(result) => results[item.index] = Some(result),
            }
        }
        // Several items naming one location: the last one is processed.
        let mut last: HashMap<&str, usize> = HashMap::new();
        for (item, id) in &named {
            last.insert(id.as_str(), item.index);
        }
        let last: HashMap<String, usize> = last.into_iter().map(|(k, v)| (k.to_owned(), v)).collect();

        let mut released: HashSet<String> = HashSet::new();
        let mut decided_quarantine: HashSet<usize> = HashSet::new();
        let mut succeeded: Vec<(usize, String, Option<String>)> = Vec::new();
        let mut changed: Vec<(usize, String)> = Vec::new();
        for (item, id) in named {
            let j = last.get(&id).copied().unwrap_or(item.index);
            if j != item.index {
                let result = world.failed_at(
                    &item,
                    &id,
                    item.naming.key(),
                    FieldCode::Conflict,
                    format!("superseded by locations[{j}] naming the same location"),
                );
                results[item.index] = Some(result);
                continue;
            }
            match world.apply(operation, &item, &id) {
                Err(result) => results[item.index] = Some(result),
                Ok(Applied {
                    changed: did,
                    moved,
                    quarantined,
                }) => {
                    if moved {
                        released.insert(id.clone());
                    }
                    if quarantined {
                        decided_quarantine.insert(item.index);
                    }
                    if did {
                        changed.push((item.index, id.clone()));
                    }
                    succeeded.push((item.index, id, item.name));
                }
            }
        }

        // The quarantined locations whose issue named an archived or moved one, decided again.
        let mut again: Vec<(i64, String)> = world
            .locations
            .values()
            .filter(|l| l.full && l.now.status == Status::Quarantine)
            .filter(|l| l.now.quarantined_by.as_ref().is_some_and(|by| released.contains(by)))
            .map(|l| (l.now.seq, l.now.location_id.clone()))
            .collect();
        again.sort();
        for (_, id) in again {
            world.decide_again(&id);
        }

        for (index, id, name) in succeeded {
            let Some(location) = world.locations.get(&id) else {
                continue;
            };
            let now = &location.now;
            let errors = match (&now.quarantined_by, now.status) {
                (Some(by), Status::Quarantine) if decided_quarantine.contains(&index) => {
                    vec![quarantine_issue(format!("locations[{index}].latitude"), by)]
                }
                _ => Vec::new(),
            };
            results[index] = Some(ChangeResult {
                location_id: id.clone(),
                merchant_location_id: now.merchant_location_id.clone(),
                name: name.unwrap_or_else(|| stored_name(&now.body)),
                status: now.status,
                version: Some(location.version()),
                errors,
            });
        }
        let by_items: HashSet<&str> = changed.iter().map(|(_, id)| id.as_str()).collect();
        let statuses = changed
            .iter()
            .filter_map(|(_, id)| world.locations.get(id).map(|l| l.now.status))
            .collect();
        let (writes, counts) = world.writes(operation, &by_items);
        Decision {
            results: results.into_iter().flatten().collect(),
            writes,
            counts,
            changed: statuses,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_names_are_read_from_the_canonical_text() {
        assert_eq!(
            stored_name(r#"{"location_types":["WAREHOUSE"],"name":"A \"b\""}"#),
            "A \"b\""
        );
        assert_eq!(stored_name("{}"), "");
    }
}

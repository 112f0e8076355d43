//! One create request as a whole: in-request duplicates, per-item validation,
//! and the result items in request order.
//!
//! `plan` does everything that needs no storage; the store then decides, for each valid item in
//! order, whether it is new (created `ACTIVE` or `QUARANTINE`), a safe retry, or a conflict, and
//! `Plan::finish` turns those outcomes into the answer.

use std::collections::HashMap;
use std::sync::OnceLock;

use serde::Serialize;

use super::{Location, Persist, Status, validate};

use crate::domain::event::{Change, EventType};
use crate::domain::field_error::{FieldCode, FieldError, Path};
use crate::domain::geo::{self, Neighbour, QUARANTINE_RADIUS_M};
use crate::domain::json::{Value, member};

/// A valid item on its way to the store.
#[derive(Clone, Debug)]
pub struct NewLocation {
    pub location: Location,
    /// `Location::canonical_json`, compared byte for byte to recognise a safe retry.
    pub canonical: String,
    /// The key ranges of its quarantine disk, once asked for: an import's reader computes them
    /// beside the transaction that writes the batch before, not in it.
    ranges: OnceLock<Vec<(i64, i64)>>,
}

impl NewLocation {
    /// The create item `item` at `path` validated: the location, or every error it has.
    pub fn checked(item: &Value, path: &Path<'_>) -> Result<NewLocation, Vec<FieldError>> {
        validate::parse(item, path).map(NewLocation::new)
    }

    /// A valid `location`.
    pub fn new(location: Location) -> NewLocation {
        let canonical = location.canonical_json();
        NewLocation {
            location,
            canonical,
            ranges: OnceLock::new(),
        }
    }

    /// The key ranges of the cells within the quarantine radius of the location (computed once).
    pub fn neighbour_ranges(&self) -> &[(i64, i64)] {
        self.ranges
            .get_or_init(|| crate::domain::cells::neighbour_ranges(self.location.latitude, self.location.longitude))
    }
}

/// What the store did with one `NewLocation`.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    Created {
        location_id: String,
        /// The stored location within the quarantine radius, when there is one.
        quarantined_by: Option<String>,
    },
    /// A stored location with the same `merchant_location_id` and the same content.
    Existing { location_id: String, status: Status },
    /// A stored location with the same `merchant_location_id` and other content.
    Conflict { location_id: String },
    /// Not stored: more than `geo::DENSITY_LIMIT` other live locations are within the radius.
    TooDense,
}

/// A stored location found by `merchant_location_id`.
#[derive(Clone, Debug)]
pub struct Stored {
    pub location_id: String,
    pub status: Status,
    pub canonical: String,
}

impl Stored {
    /// The same content is a safe retry, other content a conflict.
    pub fn outcome_for(self, canonical: &str) -> Outcome {
        if self.canonical == canonical {
            Outcome::Existing {
                location_id: self.location_id,
                status: self.status,
            }
        } else {
            Outcome::Conflict {
                location_id: self.location_id,
            }
        }
    }
}

/// The status (at create, at an update that moves it, at a restore) of the location created
/// `seq`-th with `location`'s coordinates and types, among `candidates` (the merchant's live
/// locations near it), and the neighbour that quarantines it. A new location's `seq` is after every other.
pub fn placement(
    seq: i64,
    location: &Location,
    candidates: impl IntoIterator<Item = Neighbour>,
) -> (Status, Option<String>) {
    let by = geo::quarantining_neighbour(
        seq,
        location.latitude,
        location.longitude,
        location.location_types,
        candidates,
    )
    .map(|n| n.location_id);
    let status = if by.is_some() {
        Status::Quarantine
    } else {
        Status::Active
    };
    (status, by)
}

/// The `STOREFRONT_RULE_VIOLATION` that explains a `QUARANTINE` status, at
/// `field`: `latitude` in a stored record, `locations[i].latitude` in an answer.
pub fn quarantine_issue(field: String, neighbour: &str) -> FieldError {
    FieldError {
        field,
        code: FieldCode::StorefrontRuleViolation,
        message: format!(
            "within {QUARANTINE_RADIUS_M} m of location {neighbour} of the same merchant that shares a location \
             type; in QUARANTINE for review"
        )
        .into(),
    }
}

/// A location `decide` created, for the store to insert (in this order).
#[derive(Clone, Debug)]
pub struct ToInsert {
    /// Index into the items given to `decide`.
    pub item: usize,
    pub location_id: String,
    pub status: Status,
    pub quarantined_by: Option<String>,
}

impl ToInsert {
    /// Its event: `location.created`, stored at `at_ms` from `items[self.item]`.
    pub fn change(&self, items: &[NewLocation], at_ms: i64) -> Change {
        Change {
            kind: EventType::Created,
            location_id: self.location_id.clone(),
            merchant_location_id: items
                .get(self.item)
                .and_then(|i| i.location.merchant_location_id.clone()),
            version: 1,
            status: self.status,
            previous_status: None,
            at_ms,
        }
    }
}

/// Which items need their neighbours looked up for `decide`: those that are not a retry of (or a
/// conflict with) a stored location, which `decide` answers from `stored` alone.
pub fn searched(items: &[NewLocation], stored: &HashMap<String, Stored>) -> Vec<Neighbourhood> {
    items
        .iter()
        .map(|item| {
            let location = &item.location;
            let retried = location
                .merchant_location_id
                .as_ref()
                .is_some_and(|id| stored.contains_key(id));
            Neighbourhood {
                ranges: match retried {
                    true => Vec::new(),
                    false => item.neighbour_ranges().to_vec(),
                },
                stored: Vec::new(),
            }
        })
        .collect()
}

/// An item's neighbourhood: the key ranges of its 50 m disk (none for an item answered from what
/// is stored), computed once, and the merchant's stored live locations the store found in them.
#[derive(Clone, Debug, Default)]
pub struct Neighbourhood {
    pub ranges: Vec<(i64, i64)>,
    pub stored: Vec<Neighbour>,
}

/// A create's outcomes (a retry, a conflict, the quarantine rule) for a store that looks
/// everything up first: `stored` holds the
/// merchant's stored locations with the items' `merchant_location_id`s, `nearby[i]` item `i`'s
/// neighbourhood (`searched`, with the stored live locations the store found in its ranges). Items created earlier in the same batch count
/// as neighbours of later ones, after every stored one in creation order. An item that would have
/// more than `geo::DENSITY_LIMIT` live neighbours within the radius is not created.
pub fn decide(
    items: &[NewLocation],
    stored: &HashMap<String, Stored>,
    nearby: Vec<Neighbourhood>,
    mut new_id: impl FnMut() -> String,
) -> (Vec<Outcome>, Vec<ToInsert>) {
    let mut outcomes = Vec::with_capacity(items.len());
    let mut inserts: Vec<ToInsert> = Vec::new();
    let mut created = crate::domain::cells::Nearby::default();
    for (i, (item, near)) in items.iter().zip(nearby).enumerate() {
        let location = &item.location;
        if let Some(found) = location.merchant_location_id.as_ref().and_then(|id| stored.get(id)) {
            outcomes.push(found.clone().outcome_for(&item.canonical));
            continue;
        }
        let mut candidates = near.stored;
        candidates.extend(created.within(near.ranges).cloned());
        // After every stored location, in batch order.
        let seq = i64::MAX / 2 + i as i64;
        if geo::too_dense(seq, location.latitude, location.longitude, &candidates) {
            outcomes.push(Outcome::TooDense);
            continue;
        }
        let (status, quarantined_by) = placement(seq, location, candidates);
        let location_id = new_id();
        created.insert(Neighbour {
            location_id: location_id.clone(),
            latitude: location.latitude,
            longitude: location.longitude,
            types: location.location_types,
            seq,
            status,
        });
        inserts.push(ToInsert {
            item: i,
            location_id: location_id.clone(),
            status,
            quarantined_by: quarantined_by.clone(),
        });
        outcomes.push(Outcome::Created {
            location_id,
            quarantined_by,
        });
    }
    (outcomes, inserts)
}

/// One item of the create answer.
#[derive(Clone, Debug, PartialEq, Serialize, utoipa::ToSchema)]
pub struct ItemResult {
    /// Empty when the item was not created.
    pub location_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub merchant_location_id: Option<String>,
    pub name: String,
    pub status: Status,
    pub errors: Vec<FieldError>,
}

/// A create request after everything that needs no storage.
#[derive(Debug)]
pub struct Plan {
    /// One per request item: `Some` when already decided (superseded or invalid).
    results: Vec<Option<ItemResult>>,
    /// The valid items, in request order: where each stands in the request, and what its result
    /// echoes.
    pending: Vec<Pending>,
    to_store: Vec<NewLocation>,
}

#[derive(Debug)]
struct Pending {
    index: usize,
    merchant_location_id: Option<String>,
    name: String,
}

impl Plan {
    /// Dedupes and validates every item of `items` (the request's `locations`).
    pub fn new(items: &[Value]) -> Plan {
        Plan::with(items, |_, item, path| NewLocation::checked(item, path))
    }

    /// As [`Plan::new`], the items that are not superseded validated by `validate` (given the
    /// item's index, the item and its path): for a caller that validated them earlier, elsewhere.
    pub fn with(
        items: &[Value],
        mut validate: impl FnMut(usize, &Value, &Path<'_>) -> Result<NewLocation, Vec<FieldError>>,
    ) -> Plan {
        let mut last_index: HashMap<&str, usize> = HashMap::new();
        for (i, item) in items.iter().enumerate() {
            if let Some(id) = merchant_location_id(item) {
                last_index.insert(id, i);
            }
        }

        let root = Path::root("locations");
        let mut plan = Plan {
            results: Vec::with_capacity(items.len()),
            pending: Vec::new(),
            to_store: Vec::new(),
        };
        for (i, item) in items.iter().enumerate() {
            let path = root.index(i);
            let superseded_by = merchant_location_id(item)
                .and_then(|id| last_index.get(id))
                .filter(|&&j| j != i);
            let result = if let Some(j) = superseded_by {
                Some(failed(
                    item,
                    vec![FieldError {
                        field: path.key("merchant_location_id").to_string(),
                        code: FieldCode::Conflict,
                        message: format!("superseded by locations[{j}] with the same merchant_location_id").into(),
                    }],
                ))
            } else {
                match validate(i, item, &path) {
                    Err(errors) => Some(failed(item, errors)),
                    Ok(new) => {
                        plan.pending.push(Pending {
                            index: i,
                            merchant_location_id: new.location.merchant_location_id.clone(),
                            name: new.location.name.clone(),
                        });
                        plan.to_store.push(new);
                        None
                    }
                }
            };
            plan.results.push(result);
        }
        plan
    }

    /// Moves the valid items, in request order, out for the store.
    pub fn take_to_store(&mut self) -> Vec<NewLocation> {
        std::mem::take(&mut self.to_store)
    }

    /// Where each valid item stands among the request's items, in the order `take_to_store` gives
    /// them.
    pub fn to_store_indexes(&self) -> Vec<usize> {
        self.pending.iter().map(|p| p.index).collect()
    }

    /// The answer, given the store's outcome for each valid item (same order). `None` when the
    /// store did not answer for every item, which would be a bug in the store.
    pub fn finish(self, outcomes: Vec<Outcome>, persist: Persist) -> Option<Vec<ItemResult>> {
        let Plan {
            mut results, pending, ..
        } = self;
        if outcomes.len() != pending.len() {
            return None;
        }
        let outcomes = match persist {
            Persist::Commit => outcomes,
            Persist::ValidateOnly => unstored(&pending, outcomes),
        };
        for (item, outcome) in pending.into_iter().zip(outcomes) {
            let index = item.index;
            results[index] = Some(stored_result(item, outcome));
        }
        results.into_iter().collect()
    }
}

/// A `validate_only` request's outcomes as they are answered: a location that would be new
/// has no id (`""`), and a quarantine decision against one of them names its item, `locations[j]`.
fn unstored(pending: &[Pending], outcomes: Vec<Outcome>) -> Vec<Outcome> {
    let new: HashMap<String, usize> = pending
        .iter()
        .zip(&outcomes)
        .filter_map(|(item, outcome)| match outcome {
            Outcome::Created { location_id, .. } => Some((location_id.clone(), item.index)),
            _ => None,
        })
        .collect();
    outcomes
        .into_iter()
        .map(|outcome| match outcome {
            Outcome::Created { quarantined_by, .. } => Outcome::Created {
                location_id: String::new(),
                quarantined_by: quarantined_by.map(|by| new.get(&by).map_or(by, |j| format!("locations[{j}]"))),
            },
            other => other,
        })
        .collect()
}

fn stored_result(item: Pending, outcome: Outcome) -> ItemResult {
    let index = item.index;
    let (location_id, status, errors) = match outcome {
        Outcome::Created {
            location_id,
            quarantined_by: None,
        } => (location_id, Status::Active, vec![]),
        Outcome::Created {
            location_id,
            quarantined_by: Some(neighbour),
        } => (
            location_id,
            Status::Quarantine,
            vec![quarantine_issue(format!("locations[{index}].latitude"), &neighbour)],
        ),
        Outcome::Existing { location_id, status } => (location_id, status, vec![]),
        Outcome::TooDense => (
            String::new(),
            Status::Failed,
            vec![FieldError {
                field: format!("locations[{index}].latitude"),
                code: FieldCode::StorefrontRuleViolation,
                message: geo::density_message().into(),
            }],
        ),
        Outcome::Conflict { location_id } => (
            String::new(),
            Status::Failed,
            vec![FieldError {
                field: format!("locations[{index}].merchant_location_id"),
                code: FieldCode::Conflict,
                message: format!(
                    "merchant_location_id is already used by location {location_id} with different content; \
                     create never changes a stored location"
                )
                .into(),
            }],
        ),
    };
    ItemResult {
        location_id,
        merchant_location_id: item.merchant_location_id,
        name: item.name,
        status,
        errors,
    }
}

/// The item's `merchant_location_id` when it is a non-empty string.
fn merchant_location_id<'v>(item: &'v Value<'v>) -> Option<&'v str> {
    member(item, "merchant_location_id")?.as_str().filter(|s| !s.is_empty())
}

fn failed(item: &Value, errors: Vec<FieldError>) -> ItemResult {
    ItemResult {
        location_id: String::new(),
        merchant_location_id: merchant_location_id(item).map(str::to_owned),
        name: member(item, "name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned(),
        status: Status::Failed,
        errors,
    }
}

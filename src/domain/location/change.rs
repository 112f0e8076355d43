//! Changing stored locations (CONTRACT §10): update, archive and restore, in batches.
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
//! (§10.4) is the rule create uses ([`geo::quarantining_neighbour`]) over the state as the request
//! leaves it so far: every location fetched, with this request's earlier changes applied.

use std::collections::{HashMap, HashSet};

use serde::Serialize;

use super::batch::{NewLocation, quarantine_issue};
use super::validate::{self, KEYS};
use super::{Status, TypeSet};
use crate::domain::field_error::{FieldCode, FieldError, FieldErrors, Path};
use crate::domain::geo::{self, Neighbour};
use crate::domain::json::{Value, member};
use crate::wire_enum;

wire_enum! {
    /// The three changes, as `location_changes_total{operation}` names them.
    pub enum Operation {
        Update => "update",
        Archive => "archive",
        Restore => "restore",
    }
}

/// The keys that name a location, and the version check, known to every operation.
const NAMING_KEYS: [&str; 3] = ["location_id", "merchant_location_id", "expected_version"];
/// The keys an update item has besides the fields of SPEC §2.1.
const UPDATE_KEYS: [&str; 2] = ["location_id", "expected_version"];

/// One item of a change answer: a create result plus `version` (CONTRACT §10).
#[derive(Clone, Debug, PartialEq, Serialize, utoipa::ToSchema)]
pub struct ChangeResult {
    /// The addressed location's id, also when the item failed; empty when it named none.
    pub location_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub merchant_location_id: Option<String>,
    pub name: String,
    /// The location's status after the request; `FAILED` when the item failed.
    pub status: Status,
    /// The location's version after the request; null when the item failed.
    pub version: Option<i64>,
    pub errors: Vec<FieldError>,
}

/// A stored location as a change reads it.
#[derive(Clone, Debug, PartialEq)]
pub struct Current {
    pub seq: i64,
    pub location_id: String,
    pub merchant_location_id: Option<String>,
    pub status: Status,
    pub types: TypeSet,
    pub latitude: f64,
    pub longitude: f64,
    pub version: i64,
    pub quarantined_by: Option<String>,
    /// Approved by an operator (CONTRACT §10.5): `ACTIVE` until its coordinates change.
    pub approved: bool,
    /// The stored canonical content.
    pub body: String,
}

/// One row a change writes (the store sets `updated_at` to now).
#[derive(Clone, Debug, PartialEq)]
pub struct Write {
    pub seq: i64,
    pub status: Status,
    pub quarantined_by: Option<String>,
    pub version: i64,
    pub approved: bool,
    /// An update's new content.
    pub content: Option<Content>,
}

/// New content of a location.
#[derive(Clone, Debug, PartialEq)]
pub struct Content {
    pub body: String,
    pub latitude: f64,
    pub longitude: f64,
}

/// Everything a change request decided.
#[derive(Debug)]
pub struct Decision {
    /// One per request item, in request order.
    pub results: Vec<ChangeResult>,
    pub writes: Vec<Write>,
    /// Changes to the merchant's (status, types) counts.
    pub counts: Vec<(Status, TypeSet, i64)>,
    /// The status after each item that changed a location (for `location_changes_total`).
    pub changed: Vec<Status>,
}

#[derive(Clone, Debug)]
enum Naming {
    LocationId(String),
    MerchantId(String),
}

impl Naming {
    fn key(&self) -> &'static str {
        match self {
            Naming::LocationId(_) => "location_id",
            Naming::MerchantId(_) => "merchant_location_id",
        }
    }
}

/// An item that names a location, after the checks that need no storage.
#[derive(Debug)]
struct Item {
    index: usize,
    naming: Naming,
    /// The item's `merchant_location_id` when it named its location by `location_id`.
    also_merchant_id: Option<String>,
    expected_version: Option<i64>,
    /// The item's name (update), echoed in its result.
    name: Option<String>,
    /// update: the new content; archive, restore: nothing. `Err`: the item's errors.
    content: Result<Option<NewLocation>, Vec<FieldError>>,
    /// update: its `location_types`, when valid (checked against the stored ones even when other
    /// fields have errors).
    types: Option<TypeSet>,
}

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

    /// The `location_id`s and `merchant_location_id`s the items name.
    pub fn lookups(&self) -> (Vec<&str>, Vec<&str>) {
        let mut by_id = Vec::new();
        let mut by_merchant_id = Vec::new();
        for item in &self.items {
            match &item.naming {
                Naming::LocationId(id) => by_id.push(id.as_str()),
                Naming::MerchantId(id) => by_merchant_id.push(id.as_str()),
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

    /// Decides every item (CONTRACT §10.1–10.4), given the locations the items name (`targets`),
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
        let changed = changed
            .iter()
            .filter_map(|(_, id)| world.locations.get(id).map(|l| l.now.status))
            .collect();
        let (writes, counts) = world.writes();
        Decision {
            results: results.into_iter().flatten().collect(),
            writes,
            counts,
            changed,
        }
    }
}

/// What applying one item did to its location.
struct Applied {
    /// The location changed (content, status or issue).
    changed: bool,
    /// It was archived or its coordinates changed: the locations it quarantined are decided again.
    moved: bool,
    /// This item decided it `QUARANTINE`.
    quarantined: bool,
}

/// A location as the request leaves it so far.
#[derive(Clone, Debug)]
struct Entry {
    /// As stored before the request.
    was: Current,
    now: Current,
    /// Fetched whole (a named or dependent location), so it may be written; the others are
    /// neighbours, read for their position, status and types only.
    full: bool,
    /// Changed by this request (its version is one higher, once).
    changed: bool,
    content: Option<Content>,
}

impl Entry {
    /// The version at the end of the request: one higher when the request changed it, once.
    fn version(&self) -> i64 {
        self.was.version + i64::from(self.changed)
    }
}

struct World {
    locations: HashMap<String, Entry>,
    by_merchant_id: HashMap<String, String>,
    targets: HashSet<String>,
}

impl World {
    fn new(targets: Vec<Current>, dependents: Vec<Current>, nearby: Vec<Neighbour>) -> World {
        let mut world = World {
            locations: HashMap::new(),
            by_merchant_id: HashMap::new(),
            targets: targets.iter().map(|t| t.location_id.clone()).collect(),
        };
        for n in nearby {
            let current = Current {
                seq: n.seq,
                location_id: n.location_id.clone(),
                merchant_location_id: None,
                status: n.status,
                types: n.types,
                latitude: n.latitude,
                longitude: n.longitude,
                version: 0,
                quarantined_by: None,
                approved: false,
                body: String::new(),
            };
            world.locations.entry(n.location_id).or_insert(Entry {
                was: current.clone(),
                now: current,
                full: false,
                changed: false,
                content: None,
            });
        }
        for current in targets.into_iter().chain(dependents) {
            if let Some(mlid) = &current.merchant_location_id {
                world.by_merchant_id.insert(mlid.clone(), current.location_id.clone());
            }
            world.locations.insert(
                current.location_id.clone(),
                Entry {
                    was: current.clone(),
                    now: current,
                    full: true,
                    changed: false,
                    content: None,
                },
            );
        }
        world
    }

    /// The location an item names (CONTRACT §10.1), or its one error.
    fn resolve(&self, item: &Item) -> Result<String, ChangeResult> {
        let found = match &item.naming {
            Naming::LocationId(id) => self.targets.contains(id).then(|| id.clone()),
            Naming::MerchantId(mlid) => self.by_merchant_id.get(mlid).cloned(),
        };
        let Some(id) = found else {
            let key = item.naming.key();
            return Err(ChangeResult {
                location_id: String::new(),
                merchant_location_id: match &item.naming {
                    Naming::MerchantId(mlid) => Some(mlid.clone()),
                    Naming::LocationId(_) => item.also_merchant_id.clone(),
                },
                name: item.name.clone().unwrap_or_default(),
                status: Status::Failed,
                version: None,
                errors: vec![FieldError {
                    field: format!("locations[{}].{key}", item.index),
                    code: FieldCode::NotFound,
                    message: format!("no location of this merchant has this {key}").into(),
                }],
            });
        };
        if let Some(mlid) = &item.also_merchant_id {
            let stored = self.locations.get(&id).and_then(|l| l.now.merchant_location_id.clone());
            if stored.as_ref() != Some(mlid) {
                let message = match &stored {
                    Some(stored) => format!(
                        "location {id} has merchant_location_id {stored:?}; merchant_location_id is fixed at creation"
                    ),
                    None => {
                        format!("location {id} has no merchant_location_id; merchant_location_id is fixed at creation")
                    }
                };
                return Err(self.failed_at(item, &id, "merchant_location_id", FieldCode::Conflict, message));
            }
        }
        Ok(id)
    }

    /// A failed result for an item that named location `id`, with one error at `key`.
    fn failed_at(&self, item: &Item, id: &str, key: &str, code: FieldCode, message: String) -> ChangeResult {
        self.failed(
            item,
            id,
            vec![FieldError {
                field: format!("locations[{}].{key}", item.index),
                code,
                message: message.into(),
            }],
        )
    }

    fn failed(&self, item: &Item, id: &str, errors: Vec<FieldError>) -> ChangeResult {
        let stored = self.locations.get(id).map(|l| &l.now);
        ChangeResult {
            location_id: id.to_owned(),
            merchant_location_id: stored.and_then(|s| s.merchant_location_id.clone()),
            // update: the item's name; archive and restore: the stored one.
            name: match &item.name {
                Some(name) => name.clone(),
                None => stored.map(|s| stored_name(&s.body)).unwrap_or_default(),
            },
            status: Status::Failed,
            version: None,
            errors,
        }
    }

    /// Applies one item to the location `id` it names (the last item naming it).
    fn apply(&mut self, operation: Operation, item: &Item, id: &str) -> Result<Applied, ChangeResult> {
        let Some(entry) = self.locations.get(id) else {
            return Err(self.failed(item, id, Vec::new()));
        };
        let current = entry.now.clone();
        let unchanged = Applied {
            changed: false,
            moved: false,
            quarantined: false,
        };
        if operation == Operation::Update && current.status == Status::Archived {
            return Err(self.failed_at(
                item,
                id,
                item.naming.key(),
                FieldCode::Conflict,
                "archived: restore it first".to_owned(),
            ));
        }
        let new = match &item.content {
            Err(errors) => {
                let errors = with_types_conflict(errors.clone(), item, &current);
                return Err(self.failed(item, id, errors));
            }
            Ok(new) => new,
        };
        if let Some(types) = item.types
            && types != current.types
        {
            let errors = with_types_conflict(Vec::new(), item, &current);
            debug_assert!(!errors.is_empty(), "{types} differs from {}", current.types);
            return Err(self.failed(item, id, errors));
        }
        // What the item asks for, and whether it changes anything.
        let would_change = match operation {
            Operation::Update => new.as_ref().is_some_and(|n| n.canonical != current.body),
            Operation::Archive => current.status != Status::Archived,
            Operation::Restore => current.status == Status::Archived,
        };
        if !would_change {
            return Ok(unchanged);
        }
        if let Some(expected) = item.expected_version
            && expected != current.version
        {
            return Err(self.failed_at(
                item,
                id,
                "expected_version",
                FieldCode::Conflict,
                format!(
                    "the location is at version {}, not {expected}; read it again and resend the change",
                    current.version
                ),
            ));
        }
        let mut applied = Applied {
            changed: true,
            moved: false,
            quarantined: false,
        };
        match operation {
            Operation::Update => {
                let Some(new) = new else {
                    return Ok(unchanged);
                };
                let location = &new.location;
                let moved = location.latitude != current.latitude || location.longitude != current.longitude;
                self.change(id, |now, content| {
                    now.body = new.canonical.clone();
                    now.latitude = location.latitude;
                    now.longitude = location.longitude;
                    *content = Some(Content {
                        body: new.canonical.clone(),
                        latitude: location.latitude,
                        longitude: location.longitude,
                    });
                    if moved {
                        now.approved = false;
                    }
                });
                if moved {
                    applied.moved = true;
                    applied.quarantined = self.decide_status(id) == Status::Quarantine;
                }
            }
            Operation::Archive => {
                self.change(id, |now, _| {
                    now.status = Status::Archived;
                    now.quarantined_by = None;
                });
                applied.moved = true;
            }
            Operation::Restore => {
                applied.quarantined = self.decide_status(id) == Status::Quarantine;
            }
        }
        Ok(applied)
    }

    /// Changes the location `id` (a fetched one) with `f`, marking it changed.
    fn change(&mut self, id: &str, f: impl FnOnce(&mut Current, &mut Option<Content>)) {
        if let Some(entry) = self.locations.get_mut(id) {
            f(&mut entry.now, &mut entry.content);
            entry.changed = true;
        }
    }

    /// CONTRACT §10.4 for the location `id`: its status and issue from the state so far.
    fn decide_status(&mut self, id: &str) -> Status {
        let Some(subject) = self.locations.get(id).map(|e| e.now.clone()) else {
            return Status::Failed;
        };
        let (status, by) = if subject.approved {
            (Status::Active, None)
        } else {
            let candidates = self
                .locations
                .values()
                .filter(|e| e.now.status.is_live())
                .map(|e| Neighbour {
                    location_id: e.now.location_id.clone(),
                    latitude: e.now.latitude,
                    longitude: e.now.longitude,
                    types: e.now.types,
                    seq: e.now.seq,
                    status: e.now.status,
                });
            match geo::quarantining_neighbour(
                subject.seq,
                subject.latitude,
                subject.longitude,
                subject.types,
                candidates,
            ) {
                Some(n) => (Status::Quarantine, Some(n.location_id)),
                None => (Status::Active, None),
            }
        };
        self.change(id, |now, _| {
            now.status = status;
            now.quarantined_by = by;
        });
        status
    }

    /// A quarantined location whose neighbour was archived or moved: decided again, changed only
    /// when its status or the neighbour its issue names changes.
    fn decide_again(&mut self, id: &str) {
        let Some(before) = self
            .locations
            .get(id)
            .map(|e| (e.now.status, e.now.quarantined_by.clone(), e.changed))
        else {
            return;
        };
        self.decide_status(id);
        if let Some(entry) = self.locations.get_mut(id)
            && (entry.now.status, &entry.now.quarantined_by) == (before.0, &before.1)
        {
            entry.changed = before.2;
        }
    }

    /// The rows to write and the count changes: every changed location, one version higher.
    fn writes(self) -> (Vec<Write>, Vec<(Status, TypeSet, i64)>) {
        let mut writes = Vec::new();
        let mut counts = Vec::new();
        let mut changed: Vec<Entry> = self.locations.into_values().filter(|e| e.changed && e.full).collect();
        changed.sort_by_key(|e| e.now.seq);
        for entry in changed {
            if entry.was.status != entry.now.status {
                counts.push((entry.was.status, entry.was.types, -1));
                counts.push((entry.now.status, entry.now.types, 1));
            }
            let version = entry.version();
            writes.push(Write {
                seq: entry.now.seq,
                status: entry.now.status,
                quarantined_by: entry.now.quarantined_by,
                version,
                approved: entry.now.approved,
                content: entry.content,
            });
        }
        (writes, super::listing::tally(counts))
    }
}

/// `errors` with a `CONFLICT` at `location_types` when the item's valid types differ from the
/// stored ones, in its place among the fields (after `expected_version` and
/// `merchant_location_id`).
fn with_types_conflict(mut errors: Vec<FieldError>, item: &Item, current: &Current) -> Vec<FieldError> {
    let Some(types) = item.types.filter(|t| *t != current.types) else {
        return errors;
    };
    let prefix = format!("locations[{}].", item.index);
    let before = |e: &FieldError| {
        let key = e.field.strip_prefix(&prefix).unwrap_or_default();
        key == "expected_version" || key == "merchant_location_id" || key == "location_id"
    };
    let at = errors.iter().take_while(|e| before(e)).count();
    errors.insert(
        at,
        FieldError {
            field: format!("{prefix}location_types"),
            code: FieldCode::Conflict,
            message: format!(
                "location_types is fixed at creation: the location is {}, not {types}",
                current.types
            )
            .into(),
        },
    );
    errors
}

/// CONTRACT §10.5: an operator approves a `QUARANTINE` location: it becomes `ACTIVE` (issue
/// null, version + 1) and stays so until its coordinates change. `None` for any other status.
pub fn approval(location: &Current) -> Option<Write> {
    (location.status == Status::Quarantine).then(|| Write {
        seq: location.seq,
        status: Status::Active,
        quarantined_by: None,
        version: location.version + 1,
        approved: true,
        content: None,
    })
}

/// The name in a stored canonical text.
pub fn stored_name(body: &str) -> String {
    #[derive(serde::Deserialize)]
    struct Named {
        name: String,
    }
    serde_json::from_str::<Named>(body).map(|n| n.name).unwrap_or_default()
}

/// A string key of an item: `Ok(None)` when absent (missing, `null` or `""`), `Err` when not a
/// string.
fn naming_key<'v>(item: &'v Value<'v>, key: &str) -> Result<Option<&'v str>, ()> {
    match member(item, key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => match v.as_str() {
            Some("") => Ok(None),
            Some(s) => Ok(Some(s)),
            None => Err(()),
        },
    }
}

/// One item: how it names its location, its version check and (update) its content; or its
/// answer when it names none.
fn plan_item(operation: Operation, index: usize, value: &Value, path: &Path<'_>) -> Result<Item, ChangeResult> {
    let item_name = || member(value, "name").and_then(Value::as_str).map(str::to_owned);
    let answer = |key: Option<&str>, code: FieldCode, message: String, mlid: Option<String>| ChangeResult {
        location_id: String::new(),
        merchant_location_id: mlid,
        name: if operation == Operation::Update {
            item_name().unwrap_or_default()
        } else {
            String::new()
        },
        status: Status::Failed,
        version: None,
        errors: vec![FieldError {
            field: match key {
                Some(key) => path.key(key).to_string(),
                None => path.to_string(),
            },
            code,
            message: message.into(),
        }],
    };
    if !matches!(value, Value::Object(_)) {
        return Err(answer(
            None,
            FieldCode::InvalidType,
            format!("must be an object, not {}", crate::domain::json::kind(value)),
            None,
        ));
    }
    let location_id = naming_key(value, "location_id").map_err(|()| {
        answer(
            Some("location_id"),
            FieldCode::InvalidType,
            "location_id must be a string".into(),
            None,
        )
    })?;
    let merchant_id = naming_key(value, "merchant_location_id").map_err(|()| {
        answer(
            Some("merchant_location_id"),
            FieldCode::InvalidType,
            "merchant_location_id must be a string".into(),
            None,
        )
    })?;
    let naming = match (location_id, merchant_id) {
        (Some(id), _) => Naming::LocationId(id.to_owned()),
        (None, Some(mlid)) => Naming::MerchantId(mlid.to_owned()),
        (None, None) => {
            return Err(answer(
                Some("location_id"),
                FieldCode::RequiredOneOf,
                "location_id or merchant_location_id is required to name the location".into(),
                None,
            ));
        }
    };
    let also_merchant_id = location_id.and(merchant_id).map(str::to_owned);

    let mut errors = FieldErrors::default();
    let version_path = path.key("expected_version");
    let expected_version = match member(value, "expected_version") {
        None | Some(Value::Null) => None,
        Some(v) => match v.as_f64() {
            Some(n) if n.fract() == 0.0 && n >= 1.0 && n <= i64::MAX as f64 => Some(n as i64),
            Some(n) if n.fract() == 0.0 => {
                errors.push(
                    &version_path,
                    FieldCode::MinValue,
                    "expected_version must be at least 1",
                );
                None
            }
            _ => {
                errors.push(
                    &version_path,
                    FieldCode::InvalidType,
                    "expected_version must be an integer",
                );
                None
            }
        },
    };
    let (content, types, name) = match operation {
        Operation::Update => {
            let checked = validate::check(value, path, &UPDATE_KEYS, errors);
            let content = match checked.location {
                Some(location) => {
                    let canonical = location.canonical_json();
                    Ok(Some(NewLocation { location, canonical }))
                }
                None => Err(checked.errors.into_vec()),
            };
            (content, checked.types, Some(item_name().unwrap_or_default()))
        }
        Operation::Archive | Operation::Restore => {
            if let Value::Object(object) = value {
                let mut unknown: Vec<&str> = object.keys().filter(|k| !NAMING_KEYS.contains(k)).collect();
                unknown.sort_unstable();
                unknown.dedup();
                for key in unknown {
                    let known_field = KEYS.contains(&key);
                    errors.push(
                        &path.key(key),
                        FieldCode::SchemaMismatch,
                        if known_field {
                            format!("{key} is not part of {operation}: the item names a location only")
                        } else {
                            format!("unknown field {key}")
                        },
                    );
                }
            }
            let content = if errors.is_empty() {
                Ok(None)
            } else {
                Err(errors.into_vec())
            };
            (content, None, None)
        }
    };
    Ok(Item {
        index,
        naming,
        also_merchant_id,
        expected_version,
        name,
        content,
        types,
    })
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

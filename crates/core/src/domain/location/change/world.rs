//! The state a change request decides over: every location fetched, with the request's earlier
//! changes applied, and the rules that change it.

use std::collections::{HashMap, HashSet};

use super::item::{ChangeResult, Content, Current, Item, Naming, Operation, Write, stored_name};
use crate::domain::event::EventType;
use crate::domain::field_error::{FieldCode, FieldError};
use crate::domain::geo::{self, Neighbour};
use crate::domain::location::search::key::SearchKey;
use crate::domain::location::{Status, TypeSet, text};

/// What applying one item did to its location.
pub(super) struct Applied {
    /// The location changed (content, status or issue).
    pub(super) changed: bool,
    /// It was archived or its coordinates changed: the locations it quarantined are decided again.
    pub(super) moved: bool,
    /// This item decided it `QUARANTINE`.
    pub(super) quarantined: bool,
}

/// A location as the request leaves it so far.
#[derive(Clone, Debug)]
pub(super) struct Entry {
    /// As stored before the request.
    pub(super) was: Current,
    pub(super) now: Current,
    /// Fetched whole (a named or dependent location), so it may be written; the others are
    /// neighbours, read for their position, status and types only.
    pub(super) full: bool,
    /// Changed by this request (its version is one higher, once).
    pub(super) changed: bool,
    pub(super) content: Option<Content>,
}

impl Entry {
    /// The version at the end of the request: one higher when the request changed it, once.
    pub(super) fn version(&self) -> i64 {
        self.was.version + i64::from(self.changed)
    }
}

pub(super) struct World {
    pub(super) locations: HashMap<String, Entry>,
    by_merchant_id: HashMap<String, String>,
    targets: HashSet<String>,
}

impl World {
    pub(super) fn new(targets: Vec<Current>, dependents: Vec<Current>, nearby: Vec<Neighbour>) -> World {
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

    /// The location an item names, or its one error.
    pub(super) fn resolve(&self, item: &Item) -> Result<String, ChangeResult> {
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
    pub(super) fn failed_at(&self, item: &Item, id: &str, key: &str, code: FieldCode, message: String) -> ChangeResult {
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
    pub(super) fn apply(&mut self, operation: Operation, item: &Item, id: &str) -> Result<Applied, ChangeResult> {
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
                if moved
                    && current.status.is_live()
                    && self.too_dense(current.seq, location.latitude, location.longitude)
                {
                    return Err(self.too_dense_at(item, id));
                }
                self.change(id, |now, content| {
                    now.body = new.canonical.clone();
                    now.latitude = location.latitude;
                    now.longitude = location.longitude;
                    *content = Some(Content {
                        body: new.canonical.clone(),
                        latitude: location.latitude,
                        longitude: location.longitude,
                        search: SearchKey::of(location),
                        text: text::indexed(&location.name, now.merchant_location_id.as_deref()),
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
                if self.too_dense(current.seq, current.latitude, current.longitude) {
                    return Err(self.too_dense_at(item, id));
                }
                applied.quarantined = self.decide_status(id) == Status::Quarantine;
            }
        }
        Ok(applied)
    }

    /// A location created `seq`-th would have too many live neighbours at this point.
    fn too_dense(&self, seq: i64, latitude: f64, longitude: f64) -> bool {
        let live = self.candidates();
        geo::too_dense(seq, latitude, longitude, &live)
    }

    fn too_dense_at(&self, item: &Item, id: &str) -> ChangeResult {
        self.failed_at(
            item,
            id,
            "latitude",
            FieldCode::StorefrontRuleViolation,
            geo::density_message(),
        )
    }

    /// Every live location the request knows of, as a neighbour.
    fn candidates(&self) -> Vec<Neighbour> {
        self.locations
            .values()
            .filter(|e| e.now.status.is_live())
            .map(|e| Neighbour {
                location_id: e.now.location_id.clone(),
                latitude: e.now.latitude,
                longitude: e.now.longitude,
                types: e.now.types,
                seq: e.now.seq,
                status: e.now.status,
            })
            .collect()
    }

    /// Changes the location `id` (a fetched one) with `f`, marking it changed.
    fn change(&mut self, id: &str, f: impl FnOnce(&mut Current, &mut Option<Content>)) {
        if let Some(entry) = self.locations.get_mut(id) {
            f(&mut entry.now, &mut entry.content);
            entry.changed = true;
        }
    }

    /// The quarantine rule for the location `id`: its status and issue from the state so far.
    fn decide_status(&mut self, id: &str) -> Status {
        let Some(subject) = self.locations.get(id).map(|e| e.now.clone()) else {
            return Status::Failed;
        };
        let (status, by) = if subject.approved {
            (Status::Active, None)
        } else {
            let candidates = self.candidates();
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
    pub(super) fn decide_again(&mut self, id: &str) {
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

    /// The rows to write and the count changes: every changed location, one version higher; a
    /// location an item of `operation` changed (one of `by_items`) has that operation's event, any
    /// other was decided again.
    pub(super) fn writes(
        self,
        operation: Operation,
        by_items: &HashSet<&str>,
    ) -> (Vec<Write>, Vec<(Status, TypeSet, i64)>) {
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
            let kind = if by_items.contains(entry.now.location_id.as_str()) {
                operation.event_type()
            } else {
                EventType::Redecided
            };
            writes.push(Write {
                seq: entry.now.seq,
                location_id: entry.now.location_id,
                merchant_location_id: entry.now.merchant_location_id,
                kind,
                previous_status: entry.was.status,
                status: entry.now.status,
                quarantined_by: entry.now.quarantined_by,
                version,
                approved: entry.now.approved,
                content: entry.content,
            });
        }
        (writes, crate::domain::location::listing::tally(counts))
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
    // Still at most the first errors of the item .
    errors.truncate(crate::domain::field_error::MAX_ERRORS_PER_ITEM);
    errors
}

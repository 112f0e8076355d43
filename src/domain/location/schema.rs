//! Which fields each location type allows and requires (CONTRACT §4.5), in one table.
//!
//! A field is allowed when at least one of the item's types allows it, and required when at least
//! one of them requires it. Fields not listed here are allowed for every type and required only as
//! §4.2 says.

use super::TypeSet;

const W: TypeSet = TypeSet::WAREHOUSE;
const P: TypeSet = TypeSet::PICKUP_POINT;
const C: TypeSet = TypeSet::CLICK_AND_COLLECT;
const NONE: TypeSet = TypeSet::EMPTY;

/// The types that allow and require one field.
#[derive(Clone, Copy, Debug)]
pub struct Presence {
    pub allowed: TypeSet,
    pub required: TypeSet,
}

const fn rule(allowed: TypeSet, required: TypeSet) -> Presence {
    Presence { allowed, required }
}

/// Every type allows the field, none requires it beyond §4.2.
pub const UNRESTRICTED: Presence = rule(W.union(P).union(C), NONE);
pub const ADDRESS_TAIL: Presence = rule(W.union(P).union(C), P.union(C));
/// `provider_id` and `provider_location_id`; each also requires the other when the other is given.
pub const PROVIDER: Presence = rule(P, NONE);
pub const PICKUP_POINT_TYPE: Presence = rule(P, P);
pub const PAYMENT_METHODS: Presence = rule(P.union(C), P.union(C));
pub const STORAGE_PERIOD_DAYS: Presence = rule(P.union(C), P.union(C));
pub const INSTRUCTION: Presence = rule(P.union(C), NONE);
pub const PICKUP_SERVICES: Presence = rule(P.union(C), NONE);
/// `shipping_cutoff` inside any day schedule.
pub const SHIPPING_CUTOFF: Presence = rule(W.union(C), NONE);

/// What §4.5 says about one field of an item whose types are `types`.
pub enum Verdict {
    /// Validate the value by §4.2 (or skip it when absent).
    Check,
    /// Present but allowed by none of the item's types.
    NotAllowed,
    /// Absent but required by at least one of the item's types (the ones returned).
    Missing(TypeSet),
}

impl Presence {
    pub fn judge(self, types: TypeSet, present: bool) -> Verdict {
        if present && !self.allowed.intersects(types) {
            Verdict::NotAllowed
        } else if !present && self.required.intersects(types) {
            Verdict::Missing(self.required.intersection(types))
        } else {
            Verdict::Check
        }
    }
}

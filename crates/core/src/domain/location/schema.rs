//! Which fields each location type allows and requires, in one table.
//!
//! A field is allowed when at least one of the item's types allows it, and required when at least
//! one of them requires it. Fields not listed here are allowed for every type and required only as
//! their own rules say.

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

/// Every type allows the field, none requires it beyond its own rules.
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

/// The fields whose presence depends on the item's types, by their key (`shipping_cutoff` is a
/// key of every day schedule), as the OpenAPI document publishes them for forms to read.
pub const BY_KEY: [(&str, Presence); 9] = [
    ("address_tail", ADDRESS_TAIL),
    ("provider_id", PROVIDER),
    ("provider_location_id", PROVIDER),
    ("pickup_point_type", PICKUP_POINT_TYPE),
    ("payment_methods", PAYMENT_METHODS),
    ("storage_period_days", STORAGE_PERIOD_DAYS),
    ("instruction", INSTRUCTION),
    ("pickup_services", PICKUP_SERVICES),
    ("shipping_cutoff", SHIPPING_CUTOFF),
];

/// What the matrix says about one field of an item whose types are `types`.
pub enum Verdict {
    /// Validate the value by its own rules (or skip it when absent).
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

/// Every limit on a location's fields, once: the validator checks these, and the
/// OpenAPI document states them (`http::openapi` writes them into the request schemas).
pub mod limits {
    /// Most items in one create, update, archive or restore request (a request-level limit).
    pub const ITEMS_PER_REQUEST: usize = 200;
    /// Longest `merchant_location_id`, in characters.
    pub const MERCHANT_LOCATION_ID: usize = 64;
    pub const NAME: usize = 255;
    pub const ADDRESS_TAIL: usize = 500;
    pub const COMMENT: usize = 1000;
    pub const PROVIDER_LOCATION_ID: usize = 64;
    pub const INSTRUCTION: usize = 2000;
    /// `latitude` lies within ± this, `longitude` within ± `LONGITUDE`.
    pub const LATITUDE: f64 = 90.0;
    pub const LONGITUDE: f64 = 180.0;
    /// `storage_period_days`: 1 to this.
    pub const STORAGE_DAYS: u32 = 90;
    /// `limits.length`, `.width`, `.height` (cm), above 0 and at most this.
    pub const DIMENSION_CM: f64 = 1000.0;
    /// `limits.weight` (kg), above 0 and at most this.
    pub const WEIGHT_KG: f64 = 10000.0;
    /// Elements of `working_schedule` (one per day) and of `individual_schedule`.
    pub const WORKING_DAYS: usize = 7;
    pub const INDIVIDUAL_DAYS: usize = 100;

    /// The text fields and their longest length, by key, as the document states them.
    pub const TEXT: &[(&str, usize)] = &[
        ("merchant_location_id", MERCHANT_LOCATION_ID),
        ("name", NAME),
        ("address_tail", ADDRESS_TAIL),
        ("comment", COMMENT),
        ("provider_location_id", PROVIDER_LOCATION_ID),
        ("instruction", INSTRUCTION),
    ];
}

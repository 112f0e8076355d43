//! The delivery location: its wire enumerations, the valid model, and its canonical form.
//!
//! A `Location` exists only after `validate::parse` accepted an item, so code past that point never
//! re-checks a field. Its serialisation is *canonical*: two requests that mean the same location
//! serialise to the same bytes, which is how a safe retry is recognised .
//! It is also the stored record's content, as `POST /v1/location/list` answers it:
//! every field of a location after `merchant_location_id` (which is stored and answered beside it),
//! in the table's order, absent optional values `null`, sets in enumeration order, schedules in day
//! and date order, every day schedule with its four keys, numbers as `f64`. So a page of records is
//! sent from the stored text without decoding it.
//!
//! Reading it back (`Deserialize`) also accepts the form stored before the record existed, which
//! left absent values out; the migration to the record rewrites those.

pub mod address;
pub mod batch;
pub mod change;
pub mod listing;
pub mod record;
pub mod request;
pub mod schema;
pub mod search;
pub mod text;
pub mod validate;

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::schedule::DaySchedule;
use crate::wire_enum;

wire_enum! {
    pub enum LocationType {
        Warehouse => "WAREHOUSE",
        PickupPoint => "PICKUP_POINT",
        ClickAndCollect => "CLICK_AND_COLLECT",
    }
}

wire_enum! {
    pub enum Provider {
        P1 => "PROVIDER_1", P2 => "PROVIDER_2", P3 => "PROVIDER_3", P4 => "PROVIDER_4",
        P5 => "PROVIDER_5", P6 => "PROVIDER_6", P7 => "PROVIDER_7", P8 => "PROVIDER_8",
        P9 => "PROVIDER_9", P10 => "PROVIDER_10", P11 => "PROVIDER_11", P12 => "PROVIDER_12",
        P13 => "PROVIDER_13", P14 => "PROVIDER_14", P15 => "PROVIDER_15", P16 => "PROVIDER_16",
    }
}

wire_enum! {
    pub enum PickupPointType {
        PickupPoint => "PICKUP_POINT",
        Postamat => "POSTAMAT",
    }
}

wire_enum! {
    pub enum PaymentMethod {
        AlreadyPaid => "ALREADY_PAID",
        Card => "CARD",
        Cash => "CASH",
    }
}

wire_enum! {
    pub enum PickupService {
        Fitting => "FITTING",
    }
}

wire_enum! {
    pub enum Weekday {
        Monday => "MONDAY",
        Tuesday => "TUESDAY",
        Wednesday => "WEDNESDAY",
        Thursday => "THURSDAY",
        Friday => "FRIDAY",
        Saturday => "SATURDAY",
        Sunday => "SUNDAY",
    }
}

wire_enum! {
    /// Location status. Create answers only `ACTIVE`, `QUARANTINE` and `FAILED`.
    pub enum Status {
        Draft => "DRAFT",
        Pending => "PENDING",
        Active => "ACTIVE",
        Quarantine => "QUARANTINE",
        Failed => "FAILED",
        Archived => "ARCHIVED",
    }
}

impl Status {
    /// The statuses of a stored location that count as a neighbour in the quarantine decision:
    /// not archived.
    pub const LIVE: [Status; 2] = [Status::Active, Status::Quarantine];

    pub fn is_live(self) -> bool {
        Status::LIVE.contains(&self)
    }
}

/// What becomes of a create or update request's writes: committed, or decided the
/// same way, in the same transaction, and rolled back (`"validate_only": true`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Persist {
    #[default]
    Commit,
    ValidateOnly,
}

impl Persist {
    pub fn commits(self) -> bool {
        self == Persist::Commit
    }
}

/// A set of location types, as a bit mask (one bit per `LocationType`, in declaration order).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct TypeSet(u8);

impl TypeSet {
    pub const EMPTY: TypeSet = TypeSet(0);
    pub const WAREHOUSE: TypeSet = TypeSet::of(LocationType::Warehouse);
    pub const PICKUP_POINT: TypeSet = TypeSet::of(LocationType::PickupPoint);
    pub const CLICK_AND_COLLECT: TypeSet = TypeSet::of(LocationType::ClickAndCollect);

    pub const fn of(t: LocationType) -> TypeSet {
        TypeSet(1 << t as u8)
    }

    pub const fn union(self, other: TypeSet) -> TypeSet {
        TypeSet(self.0 | other.0)
    }

    pub const fn intersection(self, other: TypeSet) -> TypeSet {
        TypeSet(self.0 & other.0)
    }

    pub const fn intersects(self, other: TypeSet) -> bool {
        self.0 & other.0 != 0
    }

    pub const fn contains(self, t: LocationType) -> bool {
        self.intersects(TypeSet::of(t))
    }

    pub fn insert(&mut self, t: LocationType) {
        self.0 |= TypeSet::of(t).0;
    }

    pub fn iter(self) -> impl Iterator<Item = LocationType> {
        LocationType::ALL.iter().copied().filter(move |t| self.contains(*t))
    }

    /// The mask as stored in the database.
    pub const fn bits(self) -> i64 {
        self.0 as i64
    }

    pub const fn from_bits(bits: i64) -> TypeSet {
        TypeSet((bits & 0b111) as u8)
    }
}

/// `WAREHOUSE or PICKUP_POINT`, for messages.
impl fmt::Display for TypeSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, t) in self.iter().enumerate() {
            if i > 0 {
                f.write_str(" or ")?;
            }
            f.write_str(t.as_str())?;
        }
        Ok(())
    }
}

impl Serialize for TypeSet {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.iter())
    }
}

impl<'de> Deserialize<'de> for TypeSet {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let mut set = TypeSet::EMPTY;
        Vec::<LocationType>::deserialize(d)?
            .into_iter()
            .for_each(|t| set.insert(t));
        Ok(set)
    }
}

/// An optional list: `null` when empty.
fn null_if_empty<T: Serialize, S: Serializer>(list: &[T], s: S) -> Result<S::Ok, S::Error> {
    if list.is_empty() {
        s.serialize_none()
    } else {
        s.collect_seq(list)
    }
}

/// An optional list: empty when `null`.
fn empty_if_null<'de, T: Deserialize<'de>, D: Deserializer<'de>>(d: D) -> Result<Vec<T>, D::Error> {
    Ok(Option::<Vec<T>>::deserialize(d)?.unwrap_or_default())
}

/// Maximum order dimensions (cm) and weight (kg).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Limits {
    pub length: f64,
    pub width: f64,
    pub height: f64,
    pub weight: f64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WeeklyDay {
    pub day: Weekday,
    pub schedule: DaySchedule,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DatedDay {
    /// `YYYY-MM-DD`, a real calendar date (so string order is date order).
    pub date: String,
    pub schedule: DaySchedule,
    pub is_works: bool,
}

/// A valid location, in canonical form: sets and schedules sorted, absent optional values `None`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Location {
    /// Stored and answered beside the content, not inside it.
    #[serde(skip_serializing, default)]
    pub merchant_location_id: Option<String>,
    pub location_types: TypeSet,
    pub name: String,
    #[serde(default)]
    pub address_tail: Option<String>,
    #[serde(default)]
    pub comment: Option<String>,
    pub latitude: f64,
    pub longitude: f64,
    #[serde(default)]
    pub provider_id: Option<Provider>,
    #[serde(default)]
    pub provider_location_id: Option<String>,
    #[serde(default)]
    pub pickup_point_type: Option<PickupPointType>,
    #[serde(serialize_with = "null_if_empty", deserialize_with = "empty_if_null", default)]
    pub payment_methods: Vec<PaymentMethod>,
    #[serde(default)]
    pub storage_period_days: Option<u32>,
    pub limits: Limits,
    #[serde(default)]
    pub instruction: Option<String>,
    #[serde(serialize_with = "null_if_empty", deserialize_with = "empty_if_null", default)]
    pub pickup_services: Vec<PickupService>,
    pub working_schedule: Vec<WeeklyDay>,
    #[serde(serialize_with = "null_if_empty", deserialize_with = "empty_if_null", default)]
    pub individual_schedule: Vec<DatedDay>,
    pub is_accepts_returns: bool,
}

impl Location {
    /// The canonical JSON text: equal for two requests that mean the same location; the stored
    /// record's content.
    pub fn canonical_json(&self) -> String {
        // Serialising plain data into a String cannot fail; fall back to an empty object rather
        // than panic on a request path.
        serde_json::to_string(self).unwrap_or_else(|_| String::from("{}"))
    }

    /// A stored canonical text read back (either form); `None` when it is not one.
    pub fn from_canonical(text: &str) -> Option<Location> {
        serde_json::from_str(text).ok()
    }
}

//! The location validator: turns one untrusted JSON item into a [`Location`], or into *every*
//! error it has.
//!
//! Fields are visited in the order of a location's fields, each by one method, so the errors come out in
//! the contract's order without sorting, and every rule of a field reads in one place. The
//! per-type matrix (`schema`) needs `location_types`, which comes second, so it is known before any
//! field it governs; the one rule that reads a later field (placeholder coordinates, reported at
//! `latitude`, reads `longitude`) evaluates both coordinates before pushing either.

use std::borrow::Cow;

use super::schema::{self, Presence, Verdict, limits};
use super::{Limits, Location, LocationType, PaymentMethod, PickupPointType, PickupService, Provider, TypeSet};
use crate::domain::field_error::{FieldCode, FieldError, FieldErrors, Path};
use crate::domain::json::{
    Fields, Text, Value, check_text, expect_array, expect_bool, expect_integer, expect_number, expect_str,
};
use crate::domain::wire::WireEnum;

use super::address;

mod schedules;

/// The keys of a location, in their order.
pub const KEYS: &[&str] = &[
    "merchant_location_id",
    "location_types",
    "name",
    "address_tail",
    "comment",
    "latitude",
    "longitude",
    "provider_id",
    "provider_location_id",
    "pickup_point_type",
    "payment_methods",
    "storage_period_days",
    "limits",
    "instruction",
    "pickup_services",
    "working_schedule",
    "individual_schedule",
    "is_accepts_returns",
];

/// Validates one create item found at `path` (`locations[i]`).
pub fn parse(value: &Value, path: &Path<'_>) -> Result<Location, Vec<FieldError>> {
    let checked = check(value, path, &[], FieldErrors::default());
    match checked.location {
        Some(location) if checked.errors.is_empty() => Ok(location),
        _ => Err(checked.errors.into_vec()),
    }
}

/// An item after every rule of its fields and its type.
pub struct Checked {
    /// The location, when the item has no error (besides those it came with).
    pub location: Option<Location>,
    /// `location_types`, when they are valid (also when other fields are not).
    pub types: Option<TypeSet>,
    pub errors: FieldErrors,
}

/// Validates the item at `path` as a location whose keys may also include `also` (an update's
/// `location_id`, `expected_version`), adding to `errors` (which may already hold the errors of
/// those keys: they come first).
pub fn check(value: &Value, path: &Path<'_>, also: &[&str], mut errors: FieldErrors) -> Checked {
    let Some(fields) = Fields::new(value, path, &mut errors) else {
        return Checked {
            location: None,
            types: None,
            errors,
        };
    };
    let mut item = Item {
        fields,
        path,
        also,
        types: None,
        errors,
    };
    let location = item.location();
    let types_valid = !item.errors.has(&path.key("location_types"));
    Checked {
        location: location.filter(|_| item.errors.is_empty()),
        types: item.types.filter(|_| types_valid),
        errors: item.errors,
    }
}

struct Item<'v, 'p> {
    fields: Fields<'v>,
    path: &'p Path<'p>,
    /// Keys known besides a location's fields.
    also: &'p [&'p str],
    /// `location_types` once it passed its own checks; `None` turns the per-type matrix off.
    types: Option<TypeSet>,
    errors: FieldErrors,
}

impl<'v> Item<'v, '_> {
    fn location(&mut self) -> Option<Location> {
        let merchant_location_id = self.text(
            "merchant_location_id",
            limits::MERCHANT_LOCATION_ID,
            Text::SingleLine,
            schema::UNRESTRICTED,
        );
        let location_types = self.location_types();
        let name = self.name();
        let address_tail = self.address_tail();
        let comment = self.text("comment", limits::COMMENT, Text::MultiLine, schema::UNRESTRICTED);
        let (latitude, longitude) = self.coordinates();
        let (provider_id, provider_location_id) = self.provider();
        let pickup_point_type = self.pickup_point_type();
        let payment_methods = self.payment_methods(pickup_point_type);
        let storage_period_days = self.storage_period_days();
        let limits = self.limits();
        let instruction = self.text("instruction", limits::INSTRUCTION, Text::MultiLine, schema::INSTRUCTION);
        let pickup_services = self.pickup_services(pickup_point_type);
        let working_schedule = self.working_schedule();
        let individual_schedule = self.individual_schedule();
        let is_accepts_returns = self.is_accepts_returns();
        self.fields
            .reject_unknown_beside(KEYS, self.also, self.path, &mut self.errors);

        Some(Location {
            merchant_location_id,
            location_types: location_types?,
            name: name?,
            address_tail,
            comment,
            latitude: latitude?,
            longitude: longitude?,
            provider_id,
            provider_location_id,
            pickup_point_type,
            payment_methods: payment_methods.unwrap_or_default(),
            storage_period_days,
            limits: limits?,
            instruction,
            pickup_services: pickup_services.unwrap_or_default(),
            working_schedule: working_schedule?,
            individual_schedule: individual_schedule.unwrap_or_default(),
            is_accepts_returns: is_accepts_returns?,
        })
    }

    fn push(&mut self, key: &str, code: FieldCode, message: impl Into<Cow<'static, str>>) {
        let base = self.path;
        self.errors.push(&base.key(key), code, message);
    }

    /// The per-type matrix for an optional field: its value when it is present and allowed; otherwise pushes
    /// `SCHEMA_MISMATCH` (present, not allowed) or `CONDITIONALLY_REQUIRED` (absent, required).
    fn gate(&mut self, key: &'static str, presence: Presence) -> Option<&'v Value<'v>> {
        let value = self.fields.present(key);
        let Some(types) = self.types else {
            return value;
        };
        match presence.judge(types, value.is_some()) {
            Verdict::Check => value,
            Verdict::NotAllowed => {
                self.push(
                    key,
                    FieldCode::SchemaMismatch,
                    format!(
                        "{key} is not allowed for {types}; it is allowed only for {}",
                        presence.allowed
                    ),
                );
                None
            }
            Verdict::Missing(by) => {
                self.push(
                    key,
                    FieldCode::ConditionallyRequired,
                    format!("{key} is required for {by} locations"),
                );
                None
            }
        }
    }

    /// An optional text field: type, length and control characters.
    fn text(&mut self, key: &'static str, max: usize, text: Text, presence: Presence) -> Option<String> {
        let value = self.gate(key, presence)?;
        self.text_value(key, value, max, text)
    }

    fn text_value(&mut self, key: &str, value: &Value, max: usize, text: Text) -> Option<String> {
        let base = self.path;
        let path = base.key(key);
        let s = expect_str(value, &path, &mut self.errors)?;
        check_text(s, max, text, &path, &mut self.errors).then(|| s.to_owned())
    }

    fn location_types(&mut self) -> Option<TypeSet> {
        let base = self.path;
        let path = base.key("location_types");
        let value = self.fields.required("location_types", &path, &mut self.errors)?;
        let items = expect_array(value, &path, &mut self.errors)?;
        if items.is_empty() {
            self.errors
                .push(&path, FieldCode::Required, "location_types must not be empty");
            return None;
        }
        let list = enum_set::<LocationType>(items, &path, &mut self.errors)?;
        let mut types = TypeSet::EMPTY;
        list.into_iter().for_each(|t| types.insert(t));
        self.types = Some(types);
        if types.contains(LocationType::ClickAndCollect) && !types.contains(LocationType::Warehouse) {
            self.errors.push(
                &path,
                FieldCode::StorefrontRuleViolation,
                "CLICK_AND_COLLECT needs WAREHOUSE in the same location: orders are collected from its own stock",
            );
        }
        Some(types)
    }

    fn name(&mut self) -> Option<String> {
        let base = self.path;
        let path = base.key("name");
        let s = self.fields.required_str("name", &path, &mut self.errors)?;
        check_text(s, limits::NAME, Text::SingleLine, &path, &mut self.errors).then(|| s.to_owned())
    }

    fn address_tail(&mut self) -> Option<String> {
        let address = self.text(
            "address_tail",
            limits::ADDRESS_TAIL,
            Text::SingleLine,
            schema::ADDRESS_TAIL,
        )?;
        match address::check(&address) {
            Ok(()) => Some(address),
            Err(message) => {
                self.push("address_tail", FieldCode::InvalidAddressFormat, message);
                None
            }
        }
    }

    fn coordinates(&mut self) -> (Option<f64>, Option<f64>) {
        let latitude = coordinate(
            self.fields.get("latitude"),
            "latitude",
            limits::LATITUDE,
            FieldCode::InvalidLatitude,
        );
        let longitude = coordinate(
            self.fields.get("longitude"),
            "longitude",
            limits::LONGITUDE,
            FieldCode::InvalidLongitude,
        );
        match (&latitude, &longitude) {
            (Err((code, message)), _) => self.push("latitude", *code, message.clone()),
            (Ok(lat), Ok(lon)) if *lat == 0.0 && *lon == 0.0 => self.push(
                "latitude",
                FieldCode::StorefrontRuleViolation,
                "latitude 0 and longitude 0 together are placeholder coordinates",
            ),
            _ => {}
        }
        if let Err((code, message)) = &longitude {
            self.push("longitude", *code, message.clone());
        }
        // `+ 0.0` turns -0.0 into 0.0, so both spell the same canonical location.
        (latitude.ok().map(|v| v + 0.0), longitude.ok().map(|v| v + 0.0))
    }

    fn provider(&mut self) -> (Option<Provider>, Option<String>) {
        let id_given = self.fields.present("provider_id").is_some();
        let location_given = self.fields.present("provider_location_id").is_some();
        let id = self
            .paired("provider_id", location_given, "provider_location_id")
            .and_then(|v| self.enum_value::<Provider>("provider_id", v));
        let location = self
            .paired("provider_location_id", id_given, "provider_id")
            .and_then(|v| {
                self.text_value(
                    "provider_location_id",
                    v,
                    limits::PROVIDER_LOCATION_ID,
                    Text::SingleLine,
                )
            });
        (id, location)
    }

    /// `provider_id` and `provider_location_id`: each requires the other when the other is given
    /// (and the pair is allowed for the item's types).
    fn paired(&mut self, key: &'static str, partner_given: bool, partner: &str) -> Option<&'v Value<'v>> {
        let value = self.gate(key, schema::PROVIDER);
        let allowed = self.types.is_none_or(|t| schema::PROVIDER.allowed.intersects(t));
        if self.fields.present(key).is_none() && partner_given && allowed {
            self.push(
                key,
                FieldCode::ConditionallyRequired,
                format!("{key} is required when {partner} is given"),
            );
        }
        value
    }

    fn enum_value<E: WireEnum>(&mut self, key: &str, value: &Value) -> Option<E> {
        let base = self.path;
        enum_value(value, &base.key(key), &mut self.errors)
    }

    fn pickup_point_type(&mut self) -> Option<PickupPointType> {
        let value = self.gate("pickup_point_type", schema::PICKUP_POINT_TYPE)?;
        self.enum_value("pickup_point_type", value)
    }

    /// An optional array of distinct enum values, gated by the per-type matrix.
    fn enum_list<E: WireEnum>(&mut self, key: &'static str, presence: Presence) -> Option<Vec<E>> {
        let value = self.gate(key, presence)?;
        let base = self.path;
        let path = base.key(key);
        let items = expect_array(value, &path, &mut self.errors)?;
        enum_set(items, &path, &mut self.errors)
    }

    fn payment_methods(&mut self, pickup_point_type: Option<PickupPointType>) -> Option<Vec<PaymentMethod>> {
        let methods = self.enum_list("payment_methods", schema::PAYMENT_METHODS)?;
        if pickup_point_type == Some(PickupPointType::Postamat) && methods.contains(&PaymentMethod::Cash) {
            self.push(
                "payment_methods",
                FieldCode::StorefrontRuleViolation,
                "a POSTAMAT does not take CASH",
            );
        }
        Some(methods)
    }

    fn pickup_services(&mut self, pickup_point_type: Option<PickupPointType>) -> Option<Vec<PickupService>> {
        let services = self.enum_list("pickup_services", schema::PICKUP_SERVICES)?;
        if pickup_point_type == Some(PickupPointType::Postamat) && services.contains(&PickupService::Fitting) {
            self.push(
                "pickup_services",
                FieldCode::StorefrontRuleViolation,
                "a POSTAMAT offers no FITTING",
            );
        }
        Some(services)
    }

    fn storage_period_days(&mut self) -> Option<u32> {
        let value = self.gate("storage_period_days", schema::STORAGE_PERIOD_DAYS)?;
        let base = self.path;
        let path = base.key("storage_period_days");
        let days = expect_integer(value, &path, &mut self.errors)?;
        let verdict = bounded(days, f64::from(limits::STORAGE_DAYS), "days");
        match verdict {
            Ok(()) => Some(days as u32),
            Err((code, message)) => {
                self.errors.push(&path, code, message);
                None
            }
        }
    }

    fn limits(&mut self) -> Option<Limits> {
        let base = self.path;
        let path = base.key("limits");
        let value = self.fields.required("limits", &path, &mut self.errors)?;
        let fields = Fields::new(value, &path, &mut self.errors)?;
        let mut measure = |key: &str, max: f64, unit: &str| {
            let path = path.key(key);
            let n = expect_number(fields.required(key, &path, &mut self.errors)?, &path, &mut self.errors)?;
            match bounded(n, max, unit) {
                Ok(()) => Some(n + 0.0),
                Err((code, message)) => {
                    self.errors.push(&path, code, message);
                    None
                }
            }
        };
        let length = measure("length", limits::DIMENSION_CM, "cm");
        let width = measure("width", limits::DIMENSION_CM, "cm");
        let height = measure("height", limits::DIMENSION_CM, "cm");
        let weight = measure("weight", limits::WEIGHT_KG, "kg");
        fields.reject_unknown(&["length", "width", "height", "weight"], &path, &mut self.errors);
        Some(Limits {
            length: length?,
            width: width?,
            height: height?,
            weight: weight?,
        })
    }

    fn is_accepts_returns(&mut self) -> Option<bool> {
        let base = self.path;
        let path = base.key("is_accepts_returns");
        let value = self.fields.required("is_accepts_returns", &path, &mut self.errors)?;
        expect_bool(value, &path, &mut self.errors)
    }
}

/// A required coordinate: a number within ±`limit`.
fn coordinate(
    value: Option<&Value>,
    key: &str,
    limit: f64,
    out_of_range: FieldCode,
) -> Result<f64, (FieldCode, Cow<'static, str>)> {
    let Some(value) = value else {
        return Err((FieldCode::Required, format!("{key} is required").into()));
    };
    let Some(n) = value.as_f64() else {
        return Err((FieldCode::InvalidType, format!("{key} must be a number").into()));
    };
    if !(-limit..=limit).contains(&n) {
        return Err((out_of_range, format!("{key} must be within [-{limit}, {limit}]").into()));
    }
    Ok(n)
}

/// A positive measure: `NEGATIVE_VALUE` below 0, `MIN_VALUE` at 0, `MAX_VALUE` above `max`.
fn bounded(n: f64, max: f64, unit: &str) -> Result<(), (FieldCode, Cow<'static, str>)> {
    if n < 0.0 {
        Err((FieldCode::NegativeValue, "must not be negative".into()))
    } else if n == 0.0 {
        Err((FieldCode::MinValue, "must be greater than 0".into()))
    } else if n > max {
        Err((FieldCode::MaxValue, format!("must be at most {max} {unit}").into()))
    } else {
        Ok(())
    }
}

fn check_max_items(items: &[Value], max: usize, path: &Path<'_>, errors: &mut FieldErrors) -> Option<()> {
    if items.len() > max {
        errors.push(
            path,
            FieldCode::TooManyItems,
            format!("at most {max} elements, got {}", items.len()),
        );
        return None;
    }
    Some(())
}

fn parse_enum<E: WireEnum>(s: &str, path: &Path<'_>, errors: &mut FieldErrors) -> Option<E> {
    let parsed = E::parse_wire(s);
    if parsed.is_none() {
        errors.push(path, FieldCode::InvalidEnum, format!("must be one of {}", E::listing()));
    }
    parsed
}

fn enum_value<E: WireEnum>(value: &Value, path: &Path<'_>, errors: &mut FieldErrors) -> Option<E> {
    parse_enum(expect_str(value, path, errors)?, path, errors)
}

/// Distinct enum values: `INVALID_TYPE`/`INVALID_ENUM` at `[k]`, `INVALID_FORMAT` at a repeat.
/// Returns the values sorted (canonical order) when every element is valid.
fn enum_set<E: WireEnum>(items: &[Value], path: &Path<'_>, errors: &mut FieldErrors) -> Option<Vec<E>> {
    let before = errors.len();
    let mut seen: Vec<E> = Vec::with_capacity(E::all().len());
    for (k, element) in items.iter().enumerate() {
        let path = path.index(k);
        if let Some(value) = enum_value::<E>(element, &path, errors) {
            if seen.contains(&value) {
                errors.push(
                    &path,
                    FieldCode::InvalidFormat,
                    format!("{value} is repeated", value = value.wire()),
                );
            } else {
                seen.push(value);
            }
        }
    }
    seen.sort();
    (errors.len() == before).then_some(seen)
}

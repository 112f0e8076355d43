//! The table of field rules (CONTRACT §4.2–4.5): for each, a valid fixture with one thing
//! changed and the exact errors (path and code) it must produce, and no others. Create's tests
//! (`create_rules`) and update's (`changes`) both run it.

use serde_json::{Value, json};

use crate::helpers::*;

pub struct Case {
    pub name: &'static str,
    pub item: Value,
    /// `(path relative to locations[0], code)`, in answer order.
    pub expected: Vec<(&'static str, &'static str)>,
}

pub fn case(name: &'static str, item: Value, expected: &[(&'static str, &'static str)]) -> Case {
    Case {
        name,
        item,
        expected: expected.to_vec(),
    }
}

pub fn long(n: usize) -> Value {
    Value::String("x".repeat(n))
}

pub fn cases() -> Vec<Case> {
    let mut all = field_cases();
    all.extend(crate::create_cases_by_type::cases());
    all
}

/// The item itself, and the fields of every type (§4.2).
fn field_cases() -> Vec<Case> {
    let w = || warehouse(0);
    let p = || pickup_point(0);
    let cc = || click_and_collect(0);
    vec![
        // The item itself.
        case("item not an object", json!(["WAREHOUSE"]), &[("", "INVALID_TYPE")]),
        case("item is null", Value::Null, &[("", "INVALID_TYPE")]),
        case(
            "unknown field",
            with(w(), "/color", Some(json!("red"))),
            &[(".color", "SCHEMA_MISMATCH")],
        ),
        // merchant_location_id
        case(
            "merchant_location_id too long",
            with(w(), "/merchant_location_id", Some(long(65))),
            &[(".merchant_location_id", "INVALID_FORMAT")],
        ),
        case(
            "merchant_location_id not a string",
            with(w(), "/merchant_location_id", Some(json!(7))),
            &[(".merchant_location_id", "INVALID_TYPE")],
        ),
        case(
            "merchant_location_id control char",
            with(w(), "/merchant_location_id", Some(json!("a\u{1}b"))),
            &[(".merchant_location_id", "INVALID_FORMAT")],
        ),
        // location_types
        case(
            "location_types missing",
            with(w(), "/location_types", None),
            &[(".location_types", "REQUIRED")],
        ),
        case(
            "location_types null",
            with(w(), "/location_types", Some(Value::Null)),
            &[(".location_types", "REQUIRED")],
        ),
        case(
            "location_types empty",
            with(w(), "/location_types", Some(json!([]))),
            &[(".location_types", "REQUIRED")],
        ),
        case(
            "location_types not an array",
            with(w(), "/location_types", Some(json!("WAREHOUSE"))),
            &[(".location_types", "INVALID_TYPE")],
        ),
        case(
            "location_types element not a string",
            with(w(), "/location_types", Some(json!(["WAREHOUSE", 1]))),
            &[(".location_types[1]", "INVALID_TYPE")],
        ),
        case(
            "location_types unknown",
            with(w(), "/location_types", Some(json!(["warehouse"]))),
            &[(".location_types[0]", "INVALID_ENUM")],
        ),
        case(
            "location_types repeated",
            with(w(), "/location_types", Some(json!(["WAREHOUSE", "WAREHOUSE"]))),
            &[(".location_types[1]", "INVALID_FORMAT")],
        ),
        case(
            "CLICK_AND_COLLECT without WAREHOUSE",
            with(cc(), "/location_types", Some(json!(["CLICK_AND_COLLECT"]))),
            &[(".location_types", "STOREFRONT_RULE_VIOLATION")],
        ),
        // name
        case("name missing", with(w(), "/name", None), &[(".name", "REQUIRED")]),
        case(
            "name blank",
            with(w(), "/name", Some(json!("   "))),
            &[(".name", "REQUIRED")],
        ),
        case(
            "name not a string",
            with(w(), "/name", Some(json!(5))),
            &[(".name", "INVALID_TYPE")],
        ),
        case(
            "name too long",
            with(w(), "/name", Some(long(256))),
            &[(".name", "INVALID_FORMAT")],
        ),
        case(
            "name with a line feed",
            with(w(), "/name", Some(json!("a\nb"))),
            &[(".name", "INVALID_FORMAT")],
        ),
        // address_tail
        case(
            "address_tail missing on a pickup point",
            with(p(), "/address_tail", None),
            &[(".address_tail", "CONDITIONALLY_REQUIRED")],
        ),
        case(
            "address_tail empty on click and collect",
            with(cc(), "/address_tail", Some(json!(""))),
            &[(".address_tail", "CONDITIONALLY_REQUIRED")],
        ),
        case(
            "address_tail off the template",
            with(w(), "/address_tail", Some(json!("Moscow, Tverskaya 1"))),
            &[(".address_tail", "INVALID_ADDRESS_FORMAT")],
        ),
        case(
            "address_tail bad floor",
            with(
                w(),
                "/address_tail",
                Some(json!("101000, Russia, Moscow, Tverskaya, 1, 2, 300")),
            ),
            &[(".address_tail", "INVALID_ADDRESS_FORMAT")],
        ),
        case(
            "address_tail too long",
            with(w(), "/address_tail", Some(long(501))),
            &[(".address_tail", "INVALID_FORMAT")],
        ),
        case(
            "address_tail not a string",
            with(w(), "/address_tail", Some(json!(101000))),
            &[(".address_tail", "INVALID_TYPE")],
        ),
        // comment
        case(
            "comment too long",
            with(w(), "/comment", Some(long(1001))),
            &[(".comment", "INVALID_FORMAT")],
        ),
        case(
            "comment with a bell",
            with(w(), "/comment", Some(json!("ring \u{7}"))),
            &[(".comment", "INVALID_FORMAT")],
        ),
        // latitude / longitude
        case(
            "latitude missing",
            with(w(), "/latitude", None),
            &[(".latitude", "REQUIRED")],
        ),
        case(
            "latitude a string",
            with(w(), "/latitude", Some(json!("55.7"))),
            &[(".latitude", "INVALID_TYPE")],
        ),
        case(
            "latitude above 90",
            with(w(), "/latitude", Some(json!(90.0001))),
            &[(".latitude", "INVALID_LATITUDE")],
        ),
        case(
            "latitude below -90",
            with(w(), "/latitude", Some(json!(-91))),
            &[(".latitude", "INVALID_LATITUDE")],
        ),
        case(
            "longitude missing",
            with(w(), "/longitude", None),
            &[(".longitude", "REQUIRED")],
        ),
        case(
            "longitude a boolean",
            with(w(), "/longitude", Some(json!(true))),
            &[(".longitude", "INVALID_TYPE")],
        ),
        case(
            "longitude above 180",
            with(w(), "/longitude", Some(json!(180.5))),
            &[(".longitude", "INVALID_LONGITUDE")],
        ),
        case(
            "placeholder coordinates",
            with(with(w(), "/latitude", Some(json!(0))), "/longitude", Some(json!(0.0))),
            &[(".latitude", "STOREFRONT_RULE_VIOLATION")],
        ),
        // provider_id / provider_location_id
        case(
            "provider_id unknown",
            with(p(), "/provider_id", Some(json!("PROVIDER_17"))),
            &[(".provider_id", "INVALID_ENUM")],
        ),
        case(
            "provider_id without provider_location_id",
            with(p(), "/provider_location_id", None),
            &[(".provider_location_id", "CONDITIONALLY_REQUIRED")],
        ),
        case(
            "provider_location_id without provider_id",
            with(p(), "/provider_id", None),
            &[(".provider_id", "CONDITIONALLY_REQUIRED")],
        ),
        case(
            "provider_location_id too long",
            with(p(), "/provider_location_id", Some(long(65))),
            &[(".provider_location_id", "INVALID_FORMAT")],
        ),
        case(
            "provider fields on a warehouse",
            with(
                with(w(), "/provider_id", Some(json!("PROVIDER_1"))),
                "/provider_location_id",
                Some(json!("X1")),
            ),
            &[
                (".provider_id", "SCHEMA_MISMATCH"),
                (".provider_location_id", "SCHEMA_MISMATCH"),
            ],
        ),
        case(
            "provider_id alone on a warehouse",
            with(w(), "/provider_id", Some(json!("PROVIDER_1"))),
            &[(".provider_id", "SCHEMA_MISMATCH")],
        ),
    ]
}

//! One case per field rule of CONTRACT §4.2–4.5: a valid fixture with one thing changed, and the
//! exact errors (path and code) it must produce, and no others.

use serde_json::{Value, json};

use crate::helpers::*;

pub struct Case {
    pub name: &'static str,
    pub item: Value,
    /// `(path relative to locations[0], code)`, in answer order.
    pub expected: Vec<(&'static str, &'static str)>,
}

fn case(name: &'static str, item: Value, expected: &[(&'static str, &'static str)]) -> Case {
    Case {
        name,
        item,
        expected: expected.to_vec(),
    }
}

fn long(n: usize) -> Value {
    Value::String("x".repeat(n))
}

pub fn cases() -> Vec<Case> {
    let w = || warehouse(0);
    let p = || pickup_point(0);
    let pm = || postamat(0);
    let cc = || click_and_collect(0);
    let eight_days: Vec<Value> = [
        "MONDAY",
        "TUESDAY",
        "WEDNESDAY",
        "THURSDAY",
        "FRIDAY",
        "SATURDAY",
        "SUNDAY",
        "MONDAY",
    ]
    .iter()
    .map(|d| json!({"day": d, "schedule": {"time_start": "09:00", "time_end": "18:00"}}))
    .collect();
    let many_dates: Vec<Value> = (0..101)
        .map(|i| json!({"date": format!("2027-{:02}-{:02}", 1 + i / 28, 1 + i % 28), "schedule": {"time_start": "09:00", "time_end": "18:00"}, "is_works": true}))
        .collect();
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
        // pickup_point_type
        case(
            "pickup_point_type missing on a pickup point",
            with(p(), "/pickup_point_type", None),
            &[(".pickup_point_type", "CONDITIONALLY_REQUIRED")],
        ),
        case(
            "pickup_point_type unknown",
            with(p(), "/pickup_point_type", Some(json!("LOCKER"))),
            &[(".pickup_point_type", "INVALID_ENUM")],
        ),
        case(
            "pickup_point_type lower case",
            with(p(), "/pickup_point_type", Some(json!("postamat"))),
            &[(".pickup_point_type", "INVALID_ENUM")],
        ),
        case(
            "pickup_point_type on a warehouse",
            with(w(), "/pickup_point_type", Some(json!("POSTAMAT"))),
            &[(".pickup_point_type", "SCHEMA_MISMATCH")],
        ),
        // payment_methods
        case(
            "payment_methods missing on a pickup point",
            with(p(), "/payment_methods", None),
            &[(".payment_methods", "CONDITIONALLY_REQUIRED")],
        ),
        case(
            "payment_methods empty on click and collect",
            with(cc(), "/payment_methods", Some(json!([]))),
            &[(".payment_methods", "CONDITIONALLY_REQUIRED")],
        ),
        case(
            "payment_methods not an array",
            with(p(), "/payment_methods", Some(json!("CARD"))),
            &[(".payment_methods", "INVALID_TYPE")],
        ),
        case(
            "payment_methods element not a string",
            with(p(), "/payment_methods", Some(json!([1]))),
            &[(".payment_methods[0]", "INVALID_TYPE")],
        ),
        case(
            "payment_methods unknown",
            with(p(), "/payment_methods", Some(json!(["CARD", "BITCOIN"]))),
            &[(".payment_methods[1]", "INVALID_ENUM")],
        ),
        case(
            "payment_methods repeated",
            with(p(), "/payment_methods", Some(json!(["CARD", "CASH", "CARD"]))),
            &[(".payment_methods[2]", "INVALID_FORMAT")],
        ),
        case(
            "payment_methods on a warehouse",
            with(w(), "/payment_methods", Some(json!(["CARD"]))),
            &[(".payment_methods", "SCHEMA_MISMATCH")],
        ),
        case(
            "postamat takes cash",
            with(pm(), "/payment_methods", Some(json!(["CARD", "CASH"]))),
            &[(".payment_methods", "STOREFRONT_RULE_VIOLATION")],
        ),
        // storage_period_days
        case(
            "storage_period_days missing on a pickup point",
            with(p(), "/storage_period_days", None),
            &[(".storage_period_days", "CONDITIONALLY_REQUIRED")],
        ),
        case(
            "storage_period_days negative",
            with(p(), "/storage_period_days", Some(json!(-1))),
            &[(".storage_period_days", "NEGATIVE_VALUE")],
        ),
        case(
            "storage_period_days zero",
            with(p(), "/storage_period_days", Some(json!(0))),
            &[(".storage_period_days", "MIN_VALUE")],
        ),
        case(
            "storage_period_days above 90",
            with(p(), "/storage_period_days", Some(json!(91))),
            &[(".storage_period_days", "MAX_VALUE")],
        ),
        case(
            "storage_period_days fractional",
            with(p(), "/storage_period_days", Some(json!(7.5))),
            &[(".storage_period_days", "INVALID_TYPE")],
        ),
        case(
            "storage_period_days a string",
            with(p(), "/storage_period_days", Some(json!("7"))),
            &[(".storage_period_days", "INVALID_TYPE")],
        ),
        case(
            "storage_period_days on a warehouse",
            with(w(), "/storage_period_days", Some(json!(5))),
            &[(".storage_period_days", "SCHEMA_MISMATCH")],
        ),
        // limits
        case("limits missing", with(w(), "/limits", None), &[(".limits", "REQUIRED")]),
        case(
            "limits not an object",
            with(w(), "/limits", Some(json!([1, 2, 3, 4]))),
            &[(".limits", "INVALID_TYPE")],
        ),
        case(
            "limits.length missing",
            with(w(), "/limits/length", None),
            &[(".limits.length", "REQUIRED")],
        ),
        case(
            "limits.weight a string",
            with(w(), "/limits/weight", Some(json!("5"))),
            &[(".limits.weight", "INVALID_TYPE")],
        ),
        case(
            "limits.height negative",
            with(w(), "/limits/height", Some(json!(-0.5))),
            &[(".limits.height", "NEGATIVE_VALUE")],
        ),
        case(
            "limits.width zero",
            with(w(), "/limits/width", Some(json!(0))),
            &[(".limits.width", "MIN_VALUE")],
        ),
        case(
            "limits.length above 1000 cm",
            with(w(), "/limits/length", Some(json!(1000.5))),
            &[(".limits.length", "MAX_VALUE")],
        ),
        case(
            "limits.weight above 10000 kg",
            with(w(), "/limits/weight", Some(json!(10001))),
            &[(".limits.weight", "MAX_VALUE")],
        ),
        case(
            "limits unknown key",
            with(w(), "/limits/depth", Some(json!(3))),
            &[(".limits.depth", "SCHEMA_MISMATCH")],
        ),
        // instruction
        case(
            "instruction too long",
            with(p(), "/instruction", Some(long(2001))),
            &[(".instruction", "INVALID_FORMAT")],
        ),
        case(
            "instruction on a warehouse",
            with(w(), "/instruction", Some(json!("Ring"))),
            &[(".instruction", "SCHEMA_MISMATCH")],
        ),
        // pickup_services
        case(
            "pickup_services unknown",
            with(p(), "/pickup_services", Some(json!(["SEWING"]))),
            &[(".pickup_services[0]", "INVALID_ENUM")],
        ),
        case(
            "pickup_services repeated",
            with(p(), "/pickup_services", Some(json!(["FITTING", "FITTING"]))),
            &[(".pickup_services[1]", "INVALID_FORMAT")],
        ),
        case(
            "pickup_services on a warehouse",
            with(w(), "/pickup_services", Some(json!(["FITTING"]))),
            &[(".pickup_services", "SCHEMA_MISMATCH")],
        ),
        case(
            "postamat offers fitting",
            with(pm(), "/pickup_services", Some(json!(["FITTING"]))),
            &[(".pickup_services", "STOREFRONT_RULE_VIOLATION")],
        ),
        // working_schedule
        case(
            "working_schedule missing",
            with(w(), "/working_schedule", None),
            &[(".working_schedule", "REQUIRED")],
        ),
        case(
            "working_schedule empty",
            with(w(), "/working_schedule", Some(json!([]))),
            &[(".working_schedule", "REQUIRED")],
        ),
        case(
            "working_schedule not an array",
            with(w(), "/working_schedule", Some(json!({"day": "MONDAY"}))),
            &[(".working_schedule", "INVALID_TYPE")],
        ),
        case(
            "working_schedule eight days",
            with(w(), "/working_schedule", Some(Value::Array(eight_days))),
            &[(".working_schedule", "TOO_MANY_ITEMS")],
        ),
        case(
            "working_schedule element not an object",
            with(w(), "/working_schedule/0", Some(json!("MONDAY"))),
            &[(".working_schedule[0]", "INVALID_TYPE")],
        ),
        case(
            "day missing",
            with(w(), "/working_schedule/1/day", None),
            &[(".working_schedule[1].day", "REQUIRED")],
        ),
        case(
            "day unknown",
            with(w(), "/working_schedule/1/day", Some(json!("MON"))),
            &[(".working_schedule[1].day", "INVALID_ENUM")],
        ),
        case(
            "day repeated",
            with(w(), "/working_schedule/1/day", Some(json!("MONDAY"))),
            &[(".working_schedule[1].day", "INVALID_FORMAT")],
        ),
        case(
            "schedule missing",
            with(w(), "/working_schedule/0/schedule", None),
            &[(".working_schedule[0].schedule", "REQUIRED")],
        ),
        case(
            "schedule not an object",
            with(w(), "/working_schedule/0/schedule", Some(json!("09:00-18:00"))),
            &[(".working_schedule[0].schedule", "INVALID_TYPE")],
        ),
        case(
            "working day unknown key",
            with(w(), "/working_schedule/0/open", Some(json!(true))),
            &[(".working_schedule[0].open", "SCHEMA_MISMATCH")],
        ),
        // day schedule (§4.4)
        case(
            "time_start missing",
            with(w(), "/working_schedule/2/schedule/time_start", None),
            &[(".working_schedule[2].schedule.time_start", "REQUIRED")],
        ),
        case(
            "time_start one digit hour",
            with(w(), "/working_schedule/2/schedule/time_start", Some(json!("8:00"))),
            &[(".working_schedule[2].schedule.time_start", "INVALID_TIME")],
        ),
        case(
            "time_start 24:00",
            with(w(), "/working_schedule/2/schedule/time_start", Some(json!("24:00"))),
            &[(".working_schedule[2].schedule.time_start", "INVALID_TIME")],
        ),
        case(
            "time_end 24:30",
            with(w(), "/working_schedule/2/schedule/time_end", Some(json!("24:30"))),
            &[(".working_schedule[2].schedule.time_end", "INVALID_TIME")],
        ),
        case(
            "time_end a number",
            with(w(), "/working_schedule/2/schedule/time_end", Some(json!(2000))),
            &[(".working_schedule[2].schedule.time_end", "INVALID_TYPE")],
        ),
        case(
            "time_end before time_start",
            with(w(), "/working_schedule/2/schedule/time_end", Some(json!("07:00"))),
            &[(".working_schedule[2].schedule.time_end", "INVALID_TIME_RANGE")],
        ),
        case(
            "time_end equal to time_start",
            with(w(), "/working_schedule/2/schedule/time_end", Some(json!("08:00"))),
            &[(".working_schedule[2].schedule.time_end", "INVALID_TIME_RANGE")],
        ),
        case(
            "break with spaces",
            with(w(), "/working_schedule/0/schedule/break", Some(json!("13:00 - 14:00"))),
            &[(".working_schedule[0].schedule.break", "INVALID_TIME")],
        ),
        case(
            "break not a string",
            with(w(), "/working_schedule/0/schedule/break", Some(json!(60))),
            &[(".working_schedule[0].schedule.break", "INVALID_TYPE")],
        ),
        case(
            "break reversed",
            with(w(), "/working_schedule/0/schedule/break", Some(json!("14:00-13:00"))),
            &[(".working_schedule[0].schedule.break", "INVALID_TIME_RANGE")],
        ),
        case(
            "break outside the day",
            with(w(), "/working_schedule/0/schedule/break", Some(json!("08:00-09:30"))),
            &[(".working_schedule[0].schedule.break", "INVALID_TIME_RANGE")],
        ),
        case(
            "shipping_cutoff bad time",
            with(w(), "/working_schedule/2/schedule/shipping_cutoff", Some(json!("16h"))),
            &[(".working_schedule[2].schedule.shipping_cutoff", "INVALID_TIME")],
        ),
        case(
            "shipping_cutoff after closing",
            with(
                w(),
                "/working_schedule/2/schedule/shipping_cutoff",
                Some(json!("20:30")),
            ),
            &[(".working_schedule[2].schedule.shipping_cutoff", "INVALID_TIME_RANGE")],
        ),
        case(
            "shipping_cutoff on a pickup point",
            with(
                p(),
                "/working_schedule/0/schedule/shipping_cutoff",
                Some(json!("12:00")),
            ),
            &[(".working_schedule[0].schedule.shipping_cutoff", "SCHEMA_MISMATCH")],
        ),
        case(
            "day schedule unknown key",
            with(w(), "/working_schedule/0/schedule/lunch", Some(json!("13:00"))),
            &[(".working_schedule[0].schedule.lunch", "SCHEMA_MISMATCH")],
        ),
        // individual_schedule
        case(
            "individual_schedule not an array",
            with(p(), "/individual_schedule", Some(json!({}))),
            &[(".individual_schedule", "INVALID_TYPE")],
        ),
        case(
            "individual_schedule 101 dates",
            with(p(), "/individual_schedule", Some(Value::Array(many_dates))),
            &[(".individual_schedule", "TOO_MANY_ITEMS")],
        ),
        case(
            "date not a calendar date",
            with(p(), "/individual_schedule/0/date", Some(json!("2026-02-30"))),
            &[(".individual_schedule[0].date", "INVALID_FORMAT")],
        ),
        case(
            "date in another format",
            with(p(), "/individual_schedule/0/date", Some(json!("31.12.2026"))),
            &[(".individual_schedule[0].date", "INVALID_FORMAT")],
        ),
        case(
            "date missing",
            with(p(), "/individual_schedule/0/date", None),
            &[(".individual_schedule[0].date", "REQUIRED")],
        ),
        case(
            "date repeated",
            with(p(), "/individual_schedule/1/date", Some(json!("2026-12-31"))),
            &[(".individual_schedule[1].date", "INVALID_FORMAT")],
        ),
        case(
            "dated schedule missing",
            with(p(), "/individual_schedule/1/schedule", None),
            &[(".individual_schedule[1].schedule", "REQUIRED")],
        ),
        case(
            "is_works missing",
            with(p(), "/individual_schedule/0/is_works", None),
            &[(".individual_schedule[0].is_works", "REQUIRED")],
        ),
        case(
            "is_works a string",
            with(p(), "/individual_schedule/0/is_works", Some(json!("yes"))),
            &[(".individual_schedule[0].is_works", "INVALID_TYPE")],
        ),
        case(
            "dated time range",
            with(p(), "/individual_schedule/0/schedule/time_start", Some(json!("17:00"))),
            &[(".individual_schedule[0].schedule.time_end", "INVALID_TIME_RANGE")],
        ),
        case(
            "dated day unknown key",
            with(p(), "/individual_schedule/0/reason", Some(json!("holiday"))),
            &[(".individual_schedule[0].reason", "SCHEMA_MISMATCH")],
        ),
        // is_accepts_returns
        case(
            "is_accepts_returns missing",
            with(w(), "/is_accepts_returns", None),
            &[(".is_accepts_returns", "REQUIRED")],
        ),
        case(
            "is_accepts_returns a string",
            with(w(), "/is_accepts_returns", Some(json!("true"))),
            &[(".is_accepts_returns", "INVALID_TYPE")],
        ),
        case(
            "is_accepts_returns a number",
            with(w(), "/is_accepts_returns", Some(json!(1))),
            &[(".is_accepts_returns", "INVALID_TYPE")],
        ),
    ]
}

#[tokio::test]
async fn every_rule_reports_its_exact_path_and_code_and_nothing_else() {
    let app = TestApp::spawn().await;
    let mut failures = Vec::new();
    for case in cases() {
        let got = app.errors_of(case.item.clone()).await;
        let want: Vec<(String, String)> = case
            .expected
            .iter()
            .map(|(path, code)| (format!("locations[0]{path}"), (*code).to_owned()))
            .collect();
        if got != want {
            failures.push(format!("{}: want {want:?}, got {got:?}", case.name));
        }
    }
    assert!(
        failures.is_empty(),
        "{} cases failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[tokio::test]
async fn valid_variants_are_created() {
    let app = TestApp::spawn().await;
    let items = vec![
        warehouse(1),
        pickup_point(2),
        postamat(3),
        click_and_collect(4),
        // A warehouse needs no address; empty optional strings and arrays, and nulls, are absent.
        with(with(warehouse(5), "/address_tail", None), "/comment", Some(json!(""))),
        with(
            with(warehouse(6), "/individual_schedule", Some(json!([]))),
            "/merchant_location_id",
            Some(Value::Null),
        ),
        with(
            with(pickup_point(7), "/provider_id", Some(json!(""))),
            "/provider_location_id",
            None,
        ),
        // Line feeds and tabs in comment and instruction; 24:00 as the end of a day.
        with(warehouse(8), "/comment", Some(json!("line one\n\tline two"))),
        with(
            warehouse(9),
            "/working_schedule/0/schedule/time_end",
            Some(json!("24:00")),
        ),
        // Empty break and cutoff mean none.
        with(
            with(warehouse(10), "/working_schedule/0/schedule/break", Some(json!(""))),
            "/working_schedule/2/schedule/shipping_cutoff",
            Some(json!("")),
        ),
        // Boundaries.
        with(
            with(warehouse(11), "/limits/length", Some(json!(1000))),
            "/limits/weight",
            Some(json!(10000)),
        ),
        with(pickup_point(12), "/storage_period_days", Some(json!(90.0))),
        with(
            with(warehouse(13), "/latitude", Some(json!(-90))),
            "/longitude",
            Some(json!(180)),
        ),
        with(warehouse(14), "/name", Some(Value::String("名".repeat(255)))),
        with(
            warehouse(15),
            "/working_schedule/0/schedule/break",
            Some(json!("09:00-21:00")),
        ),
        with(
            pickup_point(16),
            "/individual_schedule/0/date",
            Some(json!("2028-02-29")),
        ),
        // Types allow fields as a union: PICKUP_POINT + WAREHOUSE may carry a cutoff.
        with(
            pickup_point(17),
            "/location_types",
            Some(json!(["WAREHOUSE", "PICKUP_POINT"])),
        ),
        with(
            with(
                pickup_point(17),
                "/location_types",
                Some(json!(["WAREHOUSE", "PICKUP_POINT"])),
            ),
            "/working_schedule/0/schedule/shipping_cutoff",
            Some(json!("12:00")),
        ),
    ];
    // Distinct ids and places, so nothing supersedes or quarantines anything else.
    let items: Vec<Value> = items
        .into_iter()
        .enumerate()
        .map(|(i, item)| {
            let item = with(item, "/latitude", Some(json!(-80.0 + i as f64)));
            if item.get("merchant_location_id").is_some_and(Value::is_string) {
                with(item, "/merchant_location_id", Some(json!(format!("valid-{i}"))))
            } else {
                item
            }
        })
        .collect();
    let results = app.create(items.clone()).await;
    assert_eq!(results.len(), items.len());
    for (i, result) in results.iter().enumerate() {
        assert_eq!(result["status"], "ACTIVE", "item {i}: {result:#}");
        assert_eq!(result["errors"], json!([]), "item {i}");
        assert!(!result["location_id"].as_str().unwrap().is_empty());
    }
}

#[tokio::test]
async fn types_unknown_turn_the_type_matrix_off() {
    // With an invalid location_types, no SCHEMA_MISMATCH or CONDITIONALLY_REQUIRED is derived from it.
    let app = TestApp::spawn().await;
    let item = with(
        with(
            pickup_point(0),
            "/location_types",
            Some(json!(["PICKUP_POINT", "DEPOT"])),
        ),
        "/payment_methods",
        None,
    );
    let item = with(
        item,
        "/working_schedule/0/schedule/shipping_cutoff",
        Some(json!("12:00")),
    );
    assert_eq!(
        app.errors_of(item).await,
        vec![("locations[0].location_types[1]".to_owned(), "INVALID_ENUM".to_owned())]
    );
}

#[tokio::test]
async fn a_field_not_allowed_is_not_checked_further() {
    let app = TestApp::spawn().await;
    let item = with(warehouse(0), "/payment_methods", Some(json!(["CARD", "CARD", 5])));
    assert_eq!(
        app.errors_of(item).await,
        vec![("locations[0].payment_methods".to_owned(), "SCHEMA_MISMATCH".to_owned())]
    );
}

#[tokio::test]
async fn every_error_of_an_item_in_field_order() {
    let app = TestApp::spawn().await;
    let item = json!({
        "zzz": 1,
        "is_accepts_returns": "no",
        "working_schedule": [{"day": "MONDAY", "schedule": {"time_start": "9", "time_end": "18:00"}}, {"day": "MONDAY", "schedule": {"time_start": "10:00", "time_end": "09:00"}}],
        "limits": {"length": 0, "width": -1, "height": 2000},
        "storage_period_days": 100,
        "payment_methods": ["CASH", "CASH"],
        "pickup_point_type": "POSTAMAT",
        "latitude": 91,
        "name": "",
        "location_types": ["PICKUP_POINT"],
        "merchant_location_id": "m-1"
    });
    let got = app.errors_of(item).await;
    let want: Vec<(String, String)> = [
        ("name", "REQUIRED"),
        ("address_tail", "CONDITIONALLY_REQUIRED"),
        ("latitude", "INVALID_LATITUDE"),
        ("longitude", "REQUIRED"),
        ("payment_methods[1]", "INVALID_FORMAT"),
        ("storage_period_days", "MAX_VALUE"),
        ("limits.length", "MIN_VALUE"),
        ("limits.width", "NEGATIVE_VALUE"),
        ("limits.height", "MAX_VALUE"),
        ("limits.weight", "REQUIRED"),
        ("working_schedule[0].schedule.time_start", "INVALID_TIME"),
        ("working_schedule[1].day", "INVALID_FORMAT"),
        ("working_schedule[1].schedule.time_end", "INVALID_TIME_RANGE"),
        ("is_accepts_returns", "INVALID_TYPE"),
        ("zzz", "SCHEMA_MISMATCH"),
    ]
    .iter()
    .map(|(p, c)| (format!("locations[0].{p}"), (*c).to_owned()))
    .collect();
    assert_eq!(got, want);
}

#[tokio::test]
async fn multi_error_items_snapshot() {
    let app = TestApp::spawn().await;
    let items = vec![
        json!({"merchant_location_id": "snap-1", "location_types": ["CLICK_AND_COLLECT", "CLICK_AND_COLLECT"], "name": 42, "latitude": "north", "longitude": -200, "limits": {}, "working_schedule": "always", "is_accepts_returns": null}),
        with(
            with(
                with(postamat(1), "/payment_methods", Some(json!(["CASH"]))),
                "/pickup_services",
                Some(json!(["FITTING"])),
            ),
            "/address_tail",
            Some(json!("1, , Moscow, Tverskaya, 1")),
        ),
        with(
            with(warehouse(2), "/latitude", Some(json!(0))),
            "/longitude",
            Some(json!(0)),
        ),
        json!("not an object"),
    ];
    let results = app.create(items).await;
    insta::assert_json_snapshot!(results);
}

#[tokio::test]
async fn an_item_reports_at_most_fifty_errors_in_field_order_and_fails() {
    let app = TestApp::spawn().await;
    // 3 errors among the fields, then 80 unknown keys: the first 50 in order.
    let mut item = with(warehouse(0), "/name", Some(json!("")));
    item["latitude"] = json!(91);
    item["limits"]["weight"] = json!(-1);
    for i in 0..80 {
        item[format!("zz{i:02}")] = json!(i);
    }
    let mut updated = item.clone();
    let results = app.create(vec![item, warehouse(1)]).await;
    assert_eq!(results[0]["status"], "FAILED");
    assert_eq!(results[0]["location_id"], "");
    let errors = field_codes(&results[0]);
    assert_eq!(errors.len(), 50);
    assert_eq!(
        errors[..4],
        [
            ("locations[0].name".to_owned(), "REQUIRED".to_owned()),
            ("locations[0].latitude".to_owned(), "INVALID_LATITUDE".to_owned()),
            ("locations[0].limits.weight".to_owned(), "NEGATIVE_VALUE".to_owned()),
            ("locations[0].zz00".to_owned(), "SCHEMA_MISMATCH".to_owned()),
        ]
    );
    assert_eq!(
        errors[49],
        ("locations[0].zz46".to_owned(), "SCHEMA_MISMATCH".to_owned())
    );
    assert_eq!(results[1]["status"], "ACTIVE", "the other item is not affected");
    // The same validator through update.
    app.create(vec![warehouse(0)]).await;
    updated["location_types"] = json!(["PICKUP_POINT"]);
    let answer = app.post("/v1/location/update", &json!({"locations": [updated]})).await;
    let result = &answer.body["locations"][0];
    assert_eq!(result["status"], "FAILED");
    assert_eq!(field_codes(result).len(), 50);
}

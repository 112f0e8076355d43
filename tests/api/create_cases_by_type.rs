//! The field rules that depend on a location's type (CONTRACT §4.2–4.5, from `pickup_point_type`
//! on): the second half of `create_cases`' table.

use serde_json::{Value, json};

use crate::create_cases::{Case, case, long};
use crate::helpers::*;

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

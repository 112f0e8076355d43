//! A stored record (CONTRACT §9.1) as the cells of a `pull` in the layout `push` reads.

use serde_json::Value;

use super::layout::{Kind, pulled_columns};

/// The cells of a record (CONTRACT §9.1) under `pulled_columns()`.
pub fn record_cells(record: &Value) -> Vec<String> {
    pulled_columns()
        .iter()
        .map(|column| match column.kind {
            Kind::Text
            | Kind::LocationId
            | Kind::Status
            | Kind::Number
            | Kind::Boolean
            | Kind::Version
            | Kind::ReadOnly => scalar(&record[column.name]),
            Kind::Issue => scalar(&record["issue"]["message"]),
            Kind::List => record[column.name]
                .as_array()
                .map(|list| list.iter().map(scalar).collect::<Vec<_>>().join("; "))
                .unwrap_or_default(),
            Kind::Limit(key) => scalar(&record["limits"][key]),
            Kind::Day(day) => record["working_schedule"]
                .as_array()
                .and_then(|days| days.iter().find(|d| d["day"] == day.as_str()))
                .map(|d| day_text(&d["schedule"]))
                .unwrap_or_default(),
            Kind::Dated => record["individual_schedule"]
                .as_array()
                .map(|days| {
                    days.iter()
                        .map(|d| {
                            let closed = if d["is_works"] == false { " closed" } else { "" };
                            format!("{}{closed} {}", scalar(&d["date"]), day_text(&d["schedule"]))
                        })
                        .collect::<Vec<_>>()
                        .join("; ")
                })
                .unwrap_or_default(),
        })
        .collect()
}

/// A day schedule as its cell text.
fn day_text(schedule: &Value) -> String {
    let mut text = format!("{}-{}", scalar(&schedule["time_start"]), scalar(&schedule["time_end"]));
    for (key, word) in [("break", "break"), ("shipping_cutoff", "cutoff")] {
        if let Some(value) = schedule[key].as_str().filter(|v| !v.is_empty()) {
            text.push_str(&format!(" {word} {value}"));
        }
    }
    text
}

/// A scalar as cell text: strings as they are, numbers as JSON writes them (a whole number without
/// `.0`, as a spreadsheet shows it), `null` empty.
fn scalar(value: &Value) -> String {
    match value {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        Value::Number(n) if n.is_f64() => match n.as_f64() {
            Some(f) if f.fract() == 0.0 && f.abs() < 1e15 => format!("{}", f as i64),
            _ => n.to_string(),
        },
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::client::layout::Layout;
    use crate::domain::location::Weekday;

    fn layout() -> Layout {
        Layout::new(pulled_columns().iter().map(|c| c.name)).unwrap()
    }

    #[test]
    fn a_record_written_as_cells_reads_back_as_its_content() {
        let record = json!({
            "location_id": "L1", "merchant_location_id": "pp-1", "status": "QUARANTINE",
            "issue": {"field": "latitude", "code": "STOREFRONT_RULE_VIOLATION", "message": "near L0"},
            "version": 3, "created_at": "2026-11-22T09:30:00.123Z", "updated_at": "2026-11-22T09:30:00.123Z",
            "location_types": ["PICKUP_POINT", "CLICK_AND_COLLECT"], "name": "Point; \"one\"",
            "address_tail": "101000, Russia, Moscow, Tverskaya, 1", "comment": "line\nbreak",
            "latitude": 55.7558, "longitude": 37.6173, "provider_id": "PROVIDER_3",
            "provider_location_id": "X-1", "pickup_point_type": "POSTAMAT",
            "payment_methods": ["CARD", "CASH"], "storage_period_days": 7,
            "limits": {"length": 60, "width": 40.5, "height": 40, "weight": 15},
            "instruction": null, "pickup_services": ["FITTING"],
            "working_schedule": [
                {"day": "MONDAY", "schedule": {"time_start": "09:00", "time_end": "21:00", "break": "13:00-14:00", "shipping_cutoff": "18:00"}},
                {"day": "SUNDAY", "schedule": {"time_start": "10:00", "time_end": "24:00", "break": null, "shipping_cutoff": null}}
            ],
            "individual_schedule": [
                {"date": "2026-12-31", "schedule": {"time_start": "10:00", "time_end": "16:00", "break": null, "shipping_cutoff": "15:00"}, "is_works": true},
                {"date": "2027-01-01", "schedule": {"time_start": "00:00", "time_end": "23:59", "break": null, "shipping_cutoff": null}, "is_works": false}
            ],
            "is_accepts_returns": false
        });
        let cells = record_cells(&record);
        assert_eq!(cells[2], "QUARANTINE");
        assert_eq!(cells[4], "near L0");
        let by_name = |name: &str| {
            let i = pulled_columns().iter().position(|c| c.name == name).unwrap();
            cells[i].clone()
        };
        assert_eq!(
            by_name("working_schedule.monday"),
            "09:00-21:00 break 13:00-14:00 cutoff 18:00"
        );
        assert_eq!(by_name("working_schedule.tuesday"), "");
        assert_eq!(
            by_name("individual_schedule"),
            "2026-12-31 10:00-16:00 cutoff 15:00; 2027-01-01 closed 00:00-23:59"
        );
        assert_eq!(by_name("payment_methods"), "CARD; CASH");

        let back = layout().convert(cells.iter().map(String::as_str), 0);
        assert_eq!(back.location_id, Some(json!("L1")));
        assert_eq!(back.version, Some(json!(3)));
        assert!(!back.archived);
        assert_eq!(back.days, [Weekday::Monday, Weekday::Sunday]);
        let mut expected = record.as_object().unwrap().clone();
        for key in [
            "location_id",
            "status",
            "issue",
            "version",
            "created_at",
            "updated_at",
            "instruction",
        ] {
            expected.remove(key);
        }
        // A day schedule without a break reads back without the key: absent and null are equal.
        for day in [1, 0] {
            let schedule = expected["working_schedule"][day]["schedule"].as_object_mut();
            schedule.unwrap().retain(|_, v| !v.is_null());
            let schedule = expected["individual_schedule"][day]["schedule"].as_object_mut();
            schedule.unwrap().retain(|_, v| !v.is_null());
        }
        assert_eq!(
            serde_json::from_str::<Value>(&back.json).unwrap(),
            Value::Object(expected)
        );
        assert_eq!(back.merchant_location_id.as_deref(), Some("pp-1"));
    }
}

//! A stored record as the cells of a `pull` in the layout `push` reads.

use std::borrow::Cow;

use serde_json::Value;

use super::layout::{Kind, pulled_columns};
use crate::client::file::cells::{Cell, Dialect, number_display, quote_formula};

/// The cells of a record under `pulled_columns()`: numbers as number cells,
/// everything else as text, `null` and absent values empty.
pub fn record_cells(record: &Value) -> Vec<Cell<'static>> {
    pulled_columns()
        .iter()
        .map(|column| match column.kind {
            Kind::Number | Kind::Version => cell(&record[column.name]),
            Kind::Limit(key) => cell(&record["limits"][key]),
            Kind::Text | Kind::LocationId | Kind::Status | Kind::Boolean | Kind::ReadOnly => {
                text(scalar(&record[column.name]))
            }
            Kind::Issue => text(scalar(&record["issue"]["message"])),
            Kind::List => text(
                record[column.name]
                    .as_array()
                    .map(|list| list.iter().map(scalar).collect::<Vec<_>>().join("; "))
                    .unwrap_or_default(),
            ),
            Kind::Day(day) => text(
                record["working_schedule"]
                    .as_array()
                    .and_then(|days| days.iter().find(|d| d["day"] == day.as_str()))
                    .map(|d| day_text(&d["schedule"]))
                    .unwrap_or_default(),
            ),
            Kind::Dated => text(
                record["individual_schedule"]
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
            ),
        })
        .collect()
}

/// A cell as a pulled CSV writes it: a number as a spreadsheet shows it, a text with a formula's
/// first character quoted.
pub fn csv_text<'a>(cell: &'a Cell<'_>) -> Cow<'a, str> {
    match cell {
        Cell::Text(text) => quote_formula(text),
        other => other.text(Dialect::WORKBOOK),
    }
}

/// A number of the record as a number cell; anything else as its text.
fn cell(value: &Value) -> Cell<'static> {
    match value.as_f64() {
        Some(n) => Cell::Number(n),
        None => text(scalar(value)),
    }
}

fn text(text: String) -> Cell<'static> {
    if text.is_empty() {
        Cell::Empty
    } else {
        Cell::Text(Cow::Owned(text))
    }
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

/// A scalar as text: strings as they are, numbers as a spreadsheet shows them, `null` empty.
fn scalar(value: &Value) -> String {
    match value {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        Value::Number(n) => n.as_f64().map_or_else(|| n.to_string(), number_display),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::client::table::layout::Layout;
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
        let texts: Vec<String> = cells.iter().map(|c| csv_text(c).into_owned()).collect();
        assert_eq!(texts[2], "QUARANTINE");
        assert_eq!(texts[4], "near L0");
        assert_eq!(cells[3], Cell::Number(3.0), "the version is a number cell");
        let by_name = |name: &str| {
            let i = pulled_columns().iter().position(|c| c.name == name).unwrap();
            texts[i].clone()
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

        let back = layout().convert(&cells, Dialect::WORKBOOK, 0);
        let csv_cells: Vec<Cell<'_>> = texts.iter().map(|t| Cell::Text(Cow::Borrowed(t.as_str()))).collect();
        let back_from_csv = layout().convert(&csv_cells, Dialect::csv(b','), 0);
        assert_eq!(
            back.json, back_from_csv.json,
            "a workbook's cells and a CSV's convert alike"
        );
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

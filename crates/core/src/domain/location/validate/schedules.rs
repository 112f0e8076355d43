//! The weekly and the dated opening hours of a location: each day's schedule checked by the rules
//! of day schedules, the days distinct, the shipping cut-off allowed only where the location's
//! types allow it.

use std::collections::HashSet;

use super::super::schema::{self, limits};
use super::super::{DatedDay, Weekday, WeeklyDay};
use super::{Item, check_max_items, parse_enum};
use crate::domain::field_error::{FieldCode, Path};
use crate::domain::json::{Fields, expect_array, expect_bool};
use crate::domain::schedule::{CutoffRule, DaySchedule, is_calendar_date, parse_day_schedule};

impl Item<'_, '_> {
    pub(super) fn cutoff_rule(&self) -> CutoffRule {
        match self.types {
            None => CutoffRule::Unchecked,
            Some(types) if schema::SHIPPING_CUTOFF.allowed.intersects(types) => CutoffRule::Allowed,
            Some(_) => CutoffRule::NotAllowed("WAREHOUSE or CLICK_AND_COLLECT"),
        }
    }

    pub(super) fn working_schedule(&mut self) -> Option<Vec<WeeklyDay>> {
        let base = self.path;
        let path = base.key("working_schedule");
        let value = self.fields.required("working_schedule", &path, &mut self.errors)?;
        let items = expect_array(value, &path, &mut self.errors)?;
        if items.is_empty() {
            self.errors
                .push(&path, FieldCode::Required, "working_schedule must not be empty");
            return None;
        }
        check_max_items(items, limits::WORKING_DAYS, &path, &mut self.errors)?;
        let cutoff = self.cutoff_rule();
        let before = self.errors.len();
        let mut seen = HashSet::new();
        let mut days = Vec::with_capacity(items.len());
        for (k, element) in items.iter().enumerate() {
            let path = path.index(k);
            let Some(fields) = Fields::new(element, &path, &mut self.errors) else {
                continue;
            };
            let day_path = path.key("day");
            let day = fields
                .required_str("day", &day_path, &mut self.errors)
                .and_then(|s| parse_enum::<Weekday>(s, &day_path, &mut self.errors));
            if let Some(day) = day
                && !seen.insert(day)
            {
                self.errors
                    .push(&day_path, FieldCode::InvalidFormat, format!("{day} is repeated"));
            }
            let schedule = self.schedule(&fields, &path, cutoff);
            fields.reject_unknown(&["day", "schedule"], &path, &mut self.errors);
            if let (Some(day), Some(schedule)) = (day, schedule) {
                days.push(WeeklyDay { day, schedule });
            }
        }
        days.sort_by_key(|d| d.day);
        (self.errors.len() == before).then_some(days)
    }

    fn schedule(&mut self, fields: &Fields<'_>, element: &Path<'_>, cutoff: CutoffRule) -> Option<DaySchedule> {
        let path = element.key("schedule");
        let value = fields.required("schedule", &path, &mut self.errors)?;
        parse_day_schedule(value, &path, cutoff, &mut self.errors)
    }

    pub(super) fn individual_schedule(&mut self) -> Option<Vec<DatedDay>> {
        let value = self.fields.present("individual_schedule")?;
        let base = self.path;
        let path = base.key("individual_schedule");
        let items = expect_array(value, &path, &mut self.errors)?;
        check_max_items(items, limits::INDIVIDUAL_DAYS, &path, &mut self.errors)?;
        let cutoff = self.cutoff_rule();
        let before = self.errors.len();
        let mut seen = HashSet::new();
        let mut dates = Vec::with_capacity(items.len());
        for (k, element) in items.iter().enumerate() {
            let path = path.index(k);
            let Some(fields) = Fields::new(element, &path, &mut self.errors) else {
                continue;
            };
            let date_path = path.key("date");
            let date = fields.required_str("date", &date_path, &mut self.errors).and_then(|s| {
                let valid = is_calendar_date(s);
                if !valid {
                    self.errors.push(
                        &date_path,
                        FieldCode::InvalidFormat,
                        "date must be a real calendar date written YYYY-MM-DD",
                    );
                }
                valid.then_some(s)
            });
            if let Some(date) = date
                && !seen.insert(date)
            {
                self.errors
                    .push(&date_path, FieldCode::InvalidFormat, format!("{date} is repeated"));
            }
            let schedule = self.schedule(&fields, &path, cutoff);
            let works_path = path.key("is_works");
            let is_works = fields
                .required("is_works", &works_path, &mut self.errors)
                .and_then(|v| expect_bool(v, &works_path, &mut self.errors));
            fields.reject_unknown(&["date", "schedule", "is_works"], &path, &mut self.errors);
            if let (Some(date), Some(schedule), Some(is_works)) = (date, schedule, is_works) {
                dates.push(DatedDay {
                    date: date.to_owned(),
                    schedule,
                    is_works,
                });
            }
        }
        dates.sort_by(|a, b| a.date.cmp(&b.date));
        (self.errors.len() == before).then_some(dates)
    }
}

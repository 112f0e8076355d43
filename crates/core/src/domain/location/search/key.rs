//! What the search index holds of a location: its cell key, one integer of flags
//! for the filters that are sets and booleans, its limits sorted for the parcel test, and its
//! opening hours in a compact binary form. The stores write these beside the record in the same
//! statement as the record, so the index is never out of step with it; the search tests the flags
//! and the limits inside the index scan and decodes the hours only for `open_at`.

use super::super::{Location, PaymentMethod, PickupPointType, PickupService};
use crate::domain::cells::cell_key;

/// Flag bits of [`SearchKey::flags`]. Bits 0–2 are the location's types (`TypeSet::bits`).
pub const TYPE_BITS: i64 = 0b111;
const PICKUP_POINT_BIT: i64 = 1 << 3;
const POSTAMAT_BIT: i64 = 1 << 4;
const PAYMENT_SHIFT: u32 = 5;
const FITTING_BIT: i64 = 1 << 8;
const RETURNS_BIT: i64 = 1 << 9;
const NO_RETURNS_BIT: i64 = 1 << 10;

pub fn pickup_point_type_bit(t: PickupPointType) -> i64 {
    match t {
        PickupPointType::PickupPoint => PICKUP_POINT_BIT,
        PickupPointType::Postamat => POSTAMAT_BIT,
    }
}

pub fn payment_bit(p: PaymentMethod) -> i64 {
    1 << (PAYMENT_SHIFT + p as u32)
}

pub fn service_bit(s: PickupService) -> i64 {
    match s {
        PickupService::Fitting => FITTING_BIT,
    }
}

pub fn returns_bit(accepts: bool) -> i64 {
    if accepts { RETURNS_BIT } else { NO_RETURNS_BIT }
}

/// Sides sorted from longest to shortest.
pub fn sorted_sides(mut sides: [f64; 3]) -> [f64; 3] {
    sides.sort_by(|a, b| b.total_cmp(a));
    sides
}

/// A location's columns in the search index.
#[derive(Clone, Debug, PartialEq)]
pub struct SearchKey {
    pub cell: i64,
    pub flags: i64,
    /// `limits`' sides from longest to shortest, then its weight.
    pub fit: [f64; 4],
    /// [`hours`]' encoding of both schedules.
    pub hours: Vec<u8>,
}

impl SearchKey {
    pub fn of(location: &Location) -> SearchKey {
        let mut flags = location.location_types.bits() & TYPE_BITS;
        flags |= location.pickup_point_type.map_or(0, pickup_point_type_bit);
        flags |= location
            .payment_methods
            .iter()
            .map(|p| payment_bit(*p))
            .fold(0, |a, b| a | b);
        flags |= location
            .pickup_services
            .iter()
            .map(|s| service_bit(*s))
            .fold(0, |a, b| a | b);
        flags |= returns_bit(location.is_accepts_returns);
        let limits = &location.limits;
        let [a, b, c] = sorted_sides([limits.length, limits.width, limits.height]);
        SearchKey {
            cell: cell_key(location.latitude, location.longitude),
            flags,
            fit: [a, b, c, limits.weight],
            hours: hours::encode(location),
        }
    }
}

/// Opening hours as bytes: a version byte; for each weekday, Monday first, its day schedule as
/// four little-endian `u16` minutes (start, end, break start, break end; `NONE` start when the
/// weekday has no element, a `0–0` break when it has none); then each dated element, in date
/// order, as the date (`u32`, `YYYYMMDD`), a works byte and the same four minutes.
pub mod hours {
    use super::super::super::{Location, Weekday};
    use crate::domain::schedule::DaySchedule;

    const VERSION: u8 = 1;
    const NONE: u16 = u16::MAX;
    const DAY: usize = 8;
    const DATED: usize = 4 + 1 + DAY;
    const WEEK: usize = 1 + 7 * DAY;

    fn put_day(out: &mut Vec<u8>, day: &DaySchedule) {
        let (break_start, break_end) = day.break_time.map_or((0, 0), |b| (b.start.minutes(), b.end.minutes()));
        for minutes in [day.time_start.minutes(), day.time_end.minutes(), break_start, break_end] {
            out.extend_from_slice(&minutes.to_le_bytes());
        }
    }

    /// `YYYY-MM-DD` as `YYYYMMDD`; 0 for what is not one (never stored: dates are validated).
    pub fn date_number(date: &str) -> u32 {
        let digits: String = date.chars().filter(char::is_ascii_digit).collect();
        digits.parse().unwrap_or(0)
    }

    pub fn encode(location: &Location) -> Vec<u8> {
        let mut out = Vec::with_capacity(WEEK + location.individual_schedule.len() * DATED);
        out.push(VERSION);
        for weekday in Weekday::ALL {
            match location.working_schedule.iter().find(|d| d.day == *weekday) {
                Some(d) => put_day(&mut out, &d.schedule),
                None => out.extend_from_slice(&[NONE.to_le_bytes(), [0; 2], [0; 2], [0; 2]].concat()),
            }
        }
        for dated in &location.individual_schedule {
            out.extend_from_slice(&date_number(&dated.date).to_le_bytes());
            out.push(u8::from(dated.is_works));
            put_day(&mut out, &dated.schedule);
        }
        out
    }

    fn minutes(bytes: &[u8], at: usize) -> Option<u16> {
        Some(u16::from_le_bytes(bytes.get(at..at + 2)?.try_into().ok()?))
    }

    /// Whether a day schedule (four minutes at `at`) is open at `minute`.
    fn open_in(bytes: &[u8], at: usize, minute: u16) -> Option<bool> {
        let (start, end) = (minutes(bytes, at)?, minutes(bytes, at + 2)?);
        let (break_start, break_end) = (minutes(bytes, at + 4)?, minutes(bytes, at + 6)?);
        Some(start != NONE && start <= minute && minute < end && !(break_start <= minute && minute < break_end))
    }

    /// Whether the location with these hours is open on `date` (`YYYYMMDD`), a `weekday`, at
    /// `minute`: the dated element of the date decides when there is one,
    /// else the weekday's element; neither means closed. Unreadable bytes: closed.
    pub fn is_open(bytes: &[u8], date: u32, weekday: Weekday, minute: u16) -> bool {
        if bytes.first() != Some(&VERSION) || bytes.len() < WEEK {
            return false;
        }
        for dated in bytes[WEEK..].chunks_exact(DATED) {
            let day = u32::from_le_bytes([dated[0], dated[1], dated[2], dated[3]]);
            if day == date {
                return dated[4] == 1 && open_in(dated, 5, minute).unwrap_or(false);
            }
        }
        open_in(bytes, 1 + weekday as usize * DAY, minute).unwrap_or(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::location::{DatedDay, Limits, TypeSet, Weekday, WeeklyDay};
    use crate::domain::schedule::{Break, DaySchedule, TimeOfDay};

    fn time(s: &str) -> TimeOfDay {
        TimeOfDay::parse(s, true).unwrap()
    }

    fn day(start: &str, end: &str, lunch: Option<(&str, &str)>) -> DaySchedule {
        DaySchedule {
            time_start: time(start),
            time_end: time(end),
            break_time: lunch.map(|(s, e)| Break {
                start: time(s),
                end: time(e),
            }),
            shipping_cutoff: None,
        }
    }

    fn location() -> Location {
        Location {
            merchant_location_id: None,
            location_types: TypeSet::PICKUP_POINT,
            name: "P".into(),
            address_tail: None,
            comment: None,
            latitude: 55.75,
            longitude: 37.61,
            provider_id: None,
            provider_location_id: None,
            pickup_point_type: Some(PickupPointType::Postamat),
            payment_methods: vec![PaymentMethod::Card, PaymentMethod::Cash],
            storage_period_days: None,
            limits: Limits {
                length: 40.0,
                width: 60.0,
                height: 30.0,
                weight: 15.0,
            },
            instruction: None,
            pickup_services: vec![],
            working_schedule: vec![
                WeeklyDay {
                    day: Weekday::Monday,
                    schedule: day("09:00", "21:00", Some(("13:00", "14:00"))),
                },
                WeeklyDay {
                    day: Weekday::Saturday,
                    schedule: day("10:00", "24:00", None),
                },
            ],
            individual_schedule: vec![
                DatedDay {
                    date: "2026-12-28".into(),
                    schedule: day("09:00", "21:00", None),
                    is_works: false,
                },
                DatedDay {
                    date: "2026-12-31".into(),
                    schedule: day("10:00", "12:00", None),
                    is_works: true,
                },
            ],
            is_accepts_returns: false,
        }
    }

    #[test]
    fn flags_and_sides() {
        let key = SearchKey::of(&location());
        assert_eq!(key.fit, [60.0, 40.0, 30.0, 15.0]);
        assert_eq!(
            key.flags,
            TypeSet::PICKUP_POINT.bits()
                | POSTAMAT_BIT
                | payment_bit(PaymentMethod::Card)
                | payment_bit(PaymentMethod::Cash)
                | NO_RETURNS_BIT
        );
    }

    #[test]
    fn hours_follow_the_schedules() {
        let bytes = SearchKey::of(&location()).hours;
        let monday = 20261130; // a Monday
        let open = |date, weekday, hhmm: &str| hours::is_open(&bytes, date, weekday, time(hhmm).minutes());
        assert!(open(monday, Weekday::Monday, "09:00"));
        assert!(!open(monday, Weekday::Monday, "08:59"));
        assert!(open(monday, Weekday::Monday, "12:59"));
        assert!(!open(monday, Weekday::Monday, "13:00"), "the break starts");
        assert!(!open(monday, Weekday::Monday, "13:59"));
        assert!(open(monday, Weekday::Monday, "14:00"), "the break has ended");
        assert!(!open(monday, Weekday::Monday, "21:00"), "the end is not open");
        assert!(!open(20261201, Weekday::Tuesday, "12:00"), "no element for Tuesday");
        assert!(
            open(20261205, Weekday::Saturday, "23:59"),
            "24:00 is the end of the day"
        );
        assert!(!open(20261228, Weekday::Monday, "12:00"), "a holiday closed all day");
        assert!(
            open(20261231, Weekday::Thursday, "11:00"),
            "a dated day with other hours"
        );
        assert!(!open(20261231, Weekday::Thursday, "12:00"));
        assert!(!hours::is_open(b"", monday, Weekday::Monday, 600));
    }

    /// A day schedule of the cases' JSON (`break` as `HH:MM-HH:MM`).
    fn day_of(v: &serde_json::Value) -> DaySchedule {
        let at = |key: &str| v[key].as_str().unwrap_or_default();
        let lunch = at("break").split_once('-');
        day(at("time_start"), at("time_end"), lunch)
    }

    /// The opening-hours cases, one table with the widget's browser test (`openAt`).
    #[test]
    fn the_search_decides_open_as_the_shared_cases_say() {
        let table: serde_json::Value =
            serde_json::from_str(include_str!("../../../../../../tests/data/open-cases.json")).unwrap_or_default();
        let cases = table["cases"].as_array().cloned().unwrap_or_default();
        assert!(cases.len() >= 15, "the table is read");
        for case in cases {
            let schedule = &table["schedules"][case["schedule"].as_str().unwrap_or_default()];
            let mut place = location();
            place.working_schedule = schedule["working_schedule"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|d| WeeklyDay {
                    day: d["day"]
                        .as_str()
                        .and_then(Weekday::from_wire)
                        .unwrap_or(Weekday::Sunday),
                    schedule: day_of(&d["schedule"]),
                })
                .collect();
            place.individual_schedule = schedule["individual_schedule"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|d| DatedDay {
                    date: d["date"].as_str().unwrap_or_default().to_owned(),
                    schedule: day_of(&d["schedule"]),
                    is_works: d["is_works"].as_bool().unwrap_or(false),
                })
                .collect();
            let at = crate::domain::location::search::LocalTime::parse(case["at"].as_str().unwrap_or_default());
            let at = at.unwrap_or_else(|| panic!("{case}"));
            let bytes = SearchKey::of(&place).hours;
            assert_eq!(
                hours::is_open(&bytes, at.date, at.weekday, at.minute),
                case["open"].as_bool().unwrap_or_default(),
                "{case}"
            );
        }
    }
}

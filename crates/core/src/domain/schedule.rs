//! Day schedules: `HH:MM` times, the opening range, the break and the shipping
//! cut-off.
//!
//! A time is kept as minutes since midnight; `24:00` (1440) is accepted only where the contract
//! allows it, as the end of a day. Ranges are checked only when every time they involve is valid,
//! so one bad time never produces a second, derived error.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::field_error::{FieldCode, FieldErrors, Path};
use super::json::{Fields, Value, expect_str};

/// Minutes since midnight, 0..=1440.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct TimeOfDay(u16);

const END_OF_DAY: u16 = 24 * 60;

impl TimeOfDay {
    /// Minutes since midnight (1440 for `24:00`).
    pub const fn minutes(self) -> u16 {
        self.0
    }

    /// Parses `HH:MM` exactly: two digits, a colon, two digits; `HH` 00–23, `MM` 00–59. With
    /// `allow_end_of_day`, `24:00` is accepted too.
    pub fn parse(s: &str, allow_end_of_day: bool) -> Option<Self> {
        let b = s.as_bytes();
        if b.len() != 5 || b[2] != b':' || ![b[0], b[1], b[3], b[4]].iter().all(u8::is_ascii_digit) {
            return None;
        }
        let hours = u16::from(b[0] - b'0') * 10 + u16::from(b[1] - b'0');
        let minutes = u16::from(b[3] - b'0') * 10 + u16::from(b[4] - b'0');
        match (hours, minutes) {
            (0..=23, 0..=59) => Some(TimeOfDay(hours * 60 + minutes)),
            (24, 0) if allow_end_of_day => Some(TimeOfDay(END_OF_DAY)),
            _ => None,
        }
    }

    /// `HH:MM`, written without the formatting machinery: a location's canonical JSON holds
    /// dozens of these, and it is built for every item of every create request.
    fn write(self, out: &mut [u8]) {
        let (hours, minutes) = (self.0 / 60, self.0 % 60);
        let digit = |n: u16| b'0' + (n % 10) as u8;
        out[..5].copy_from_slice(&[
            digit(hours / 10),
            digit(hours),
            b':',
            digit(minutes / 10),
            digit(minutes),
        ]);
    }
}

/// The text of `bytes`, which `TimeOfDay::write` filled with ASCII only.
fn ascii(bytes: &[u8]) -> &str {
    std::str::from_utf8(bytes).unwrap_or_default()
}

impl fmt::Display for TimeOfDay {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut text = [0u8; 5];
        self.write(&mut text);
        f.write_str(ascii(&text))
    }
}

impl Serialize for TimeOfDay {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut text = [0u8; 5];
        self.write(&mut text);
        s.serialize_str(ascii(&text))
    }
}

impl<'de> Deserialize<'de> for TimeOfDay {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        TimeOfDay::parse(&s, true).ok_or_else(|| serde::de::Error::custom(format!("not a time: {s:?}")))
    }
}

/// A break inside a working day, `HH:MM-HH:MM`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Break {
    pub start: TimeOfDay,
    pub end: TimeOfDay,
}

impl Break {
    fn parse(s: &str) -> Option<Self> {
        let (start, end) = s.split_once('-')?;
        Some(Break {
            start: TimeOfDay::parse(start, false)?,
            end: TimeOfDay::parse(end, false)?,
        })
    }
}

impl Serialize for Break {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut text = *b"HH:MM-HH:MM";
        self.start.write(&mut text[..5]);
        self.end.write(&mut text[6..]);
        s.serialize_str(ascii(&text))
    }
}

impl<'de> Deserialize<'de> for Break {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        Break::parse(&s).ok_or_else(|| serde::de::Error::custom(format!("not a break: {s:?}")))
    }
}

/// A valid day schedule. Serialised with all four keys, `null` where there is none.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DaySchedule {
    pub time_start: TimeOfDay,
    pub time_end: TimeOfDay,
    #[serde(rename = "break", default)]
    pub break_time: Option<Break>,
    #[serde(default)]
    pub shipping_cutoff: Option<TimeOfDay>,
}

const KEYS: &[&str] = &["time_start", "time_end", "break", "shipping_cutoff"];

/// Whether `shipping_cutoff` may appear, decided by the location's types.
#[derive(Clone, Copy, Debug)]
pub enum CutoffRule {
    /// Types unknown (invalid `location_types`): the per-type check does not run.
    Unchecked,
    Allowed,
    /// Not allowed; the message names the types that allow it.
    NotAllowed(&'static str),
}

/// Validates a day schedule object at `path`, pushing every error; returns it when valid.
pub fn parse_day_schedule(
    value: &Value,
    path: &Path<'_>,
    cutoff: CutoffRule,
    errors: &mut FieldErrors,
) -> Option<DaySchedule> {
    let fields = Fields::new(value, path, errors)?;
    let before = errors.len();

    let start = required_time(&fields, path, "time_start", false, errors);
    let end = required_time(&fields, path, "time_end", true, errors);
    if let (Some(start), Some(end)) = (start, end)
        && start >= end
    {
        errors.push(
            &path.key("time_end"),
            FieldCode::InvalidTimeRange,
            format!("time_end {end} must be after time_start {start}"),
        );
    }
    // Break and cut-off are judged against the opening hours only when those form a valid range:
    // a reversed day must not make every time inside it a second, derived error.
    let hours = start.zip(end).filter(|(start, end)| start < end);

    let break_path = path.key("break");
    let mut break_time = None;
    if let Some(raw) = fields.optional_str("break", &break_path, errors) {
        match Break::parse(raw) {
            None => errors.push(&break_path, FieldCode::InvalidTime, "break must be HH:MM-HH:MM"),
            Some(b) => {
                if let Some((start, end)) = hours
                    && (b.start >= b.end || b.start < start || b.end > end)
                {
                    errors.push(
                        &break_path,
                        FieldCode::InvalidTimeRange,
                        format!("break must start before it ends and lie within {start}-{end}"),
                    );
                }
                break_time = Some(b);
            }
        }
    }

    let cutoff_path = path.key("shipping_cutoff");
    let mut shipping_cutoff = None;
    if let Some(raw_value) = fields.get("shipping_cutoff").filter(|v| !is_empty_string(v)) {
        if let CutoffRule::NotAllowed(types) = cutoff {
            errors.push(
                &cutoff_path,
                FieldCode::SchemaMismatch,
                format!("shipping_cutoff is allowed only for {types} locations"),
            );
        } else if let Some(raw) = expect_str(raw_value, &cutoff_path, errors) {
            match TimeOfDay::parse(raw, false) {
                None => errors.push(&cutoff_path, FieldCode::InvalidTime, "shipping_cutoff must be HH:MM"),
                Some(t) => {
                    if let Some((start, end)) = hours
                        && (t < start || t > end)
                    {
                        errors.push(
                            &cutoff_path,
                            FieldCode::InvalidTimeRange,
                            format!("shipping_cutoff must lie within {start}-{end}"),
                        );
                    }
                    shipping_cutoff = Some(t);
                }
            }
        }
    }

    fields.reject_unknown(KEYS, path, errors);

    match (start, end) {
        (Some(time_start), Some(time_end)) if errors.len() == before => Some(DaySchedule {
            time_start,
            time_end,
            break_time,
            shipping_cutoff,
        }),
        _ => None,
    }
}

fn is_empty_string(v: &Value) -> bool {
    v.as_str().is_some_and(str::is_empty)
}

fn required_time(
    fields: &Fields<'_>,
    path: &Path<'_>,
    key: &'static str,
    allow_end_of_day: bool,
    errors: &mut FieldErrors,
) -> Option<TimeOfDay> {
    let path = path.key(key);
    let raw = fields.required_str(key, &path, errors)?;
    let time = TimeOfDay::parse(raw, allow_end_of_day);
    if time.is_none() {
        let expected = if allow_end_of_day {
            "HH:MM (00:00-24:00)"
        } else {
            "HH:MM (00:00-23:59)"
        };
        errors.push(&path, FieldCode::InvalidTime, format!("{key} must be {expected}"));
    }
    time
}

/// `YYYY-MM-DD`, digits exactly so, naming a real calendar date.
pub fn is_calendar_date(s: &str) -> bool {
    let b = s.as_bytes();
    let digits_at = |range: std::ops::Range<usize>| b[range].iter().all(u8::is_ascii_digit);
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' || !digits_at(0..4) || !digits_at(5..7) || !digits_at(8..10) {
        return false;
    }
    let (Ok(year), Ok(month), Ok(day)) = (s[0..4].parse::<i32>(), s[5..7].parse::<u8>(), s[8..10].parse::<u8>()) else {
        return false;
    };
    time::Month::try_from(month).is_ok_and(|month| time::Date::from_calendar_date(year, month, day).is_ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_parse_strictly() {
        assert_eq!(TimeOfDay::parse("09:30", false), Some(TimeOfDay(570)));
        assert_eq!(TimeOfDay::parse("23:59", false), Some(TimeOfDay(1439)));
        assert_eq!(TimeOfDay::parse("24:00", true), Some(TimeOfDay(1440)));
        for bad in [
            "24:00",
            "9:30",
            "09:3",
            "09-30",
            "24:01",
            "12:60",
            " 9:30",
            "09:30 ",
            "ab:cd",
            "٠٩:٣٠",
        ] {
            assert_eq!(TimeOfDay::parse(bad, false), None, "{bad}");
        }
        assert_eq!(TimeOfDay::parse("24:30", true), None);
    }

    #[test]
    fn every_time_and_break_writes_back_as_it_was_read() {
        for minute in 0..=END_OF_DAY {
            let text = format!("{:02}:{:02}", minute / 60, minute % 60);
            let time = TimeOfDay::parse(&text, true).unwrap();
            assert_eq!(time.to_string(), text);
            assert_eq!(serde_json::to_string(&time).unwrap(), format!("\"{text}\""));
        }
        let lunch = Break::parse("09:05-23:59").unwrap();
        assert_eq!(serde_json::to_string(&lunch).unwrap(), "\"09:05-23:59\"");
    }

    #[test]
    fn breaks_parse_without_spaces() {
        assert!(Break::parse("13:00-14:00").is_some());
        assert!(Break::parse("13:00 - 14:00").is_none());
        assert!(Break::parse("13:00-24:00").is_none());
        assert!(Break::parse("13:00").is_none());
    }

    #[test]
    fn calendar_dates() {
        assert!(is_calendar_date("2024-02-29"));
        assert!(is_calendar_date("2026-12-31"));
        for bad in [
            "2023-02-29",
            "2026-13-01",
            "2026-00-10",
            "2026-04-31",
            "2026-1-01",
            "26-01-01",
            "2026/01/01",
            "2026-01-01T",
        ] {
            assert!(!is_calendar_date(bad), "{bad}");
        }
    }
}

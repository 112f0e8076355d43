//! The JSON files of push: JSON Lines, and a JSON array (or `{"locations": [...]}`)
//! read element by element, never whole.

use std::fmt;
use std::io::{BufRead, Read};

use serde::Deserializer as _;
use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

/// JSON Lines: each line that is not blank is a value; its line number (from 1) with it.
pub(crate) fn scan_lines(reader: impl BufRead, each: &mut dyn FnMut(u64, Value) -> bool) -> Result<(), String> {
    for (n, line) in reader.lines().enumerate() {
        let number = n as u64 + 1;
        let line = line.map_err(|e| format!("line {number}: {e}"))?;
        if line.trim().is_empty() {
            continue;
        }
        let value: Value = serde_json::from_str(&line).map_err(|e| format!("line {number}: not a JSON value: {e}"))?;
        if !each(number, value) {
            break;
        }
    }
    Ok(())
}

/// A JSON array of values, or `{"locations": [...]}`; each element's index (from 0) with it.
pub(crate) fn scan_array(reader: impl Read, each: &mut dyn FnMut(u64, Value) -> bool) -> Result<(), String> {
    let mut deserializer = serde_json::Deserializer::from_reader(reader);
    let mut top = Top { each, next: 0 };
    let read = deserializer.deserialize_any(&mut top).and_then(|()| deserializer.end());
    read.map_err(|e| format!("not a JSON array of locations (or {{\"locations\": [...]}}): {e}"))
}

/// The top of a JSON file: an array of locations, or an object whose one key `locations` is.
struct Top<'a> {
    each: &'a mut dyn FnMut(u64, Value) -> bool,
    next: u64,
}

impl<'de> Visitor<'de> for &mut Top<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an array of locations or {\"locations\": [...]}")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(value) = seq.next_element::<Value>()? {
            let index = self.next;
            self.next += 1;
            if !(self.each)(index, value) {
                while seq.next_element::<de::IgnoredAny>()?.is_some() {}
                break;
            }
        }
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut seen = false;
        while let Some(key) = map.next_key::<String>()? {
            if key != "locations" || seen {
                return Err(de::Error::custom(format!("unexpected key {key:?}")));
            }
            seen = true;
            map.next_value_seed(&mut *self)?;
        }
        if !seen {
            return Err(de::Error::custom("no key \"locations\""));
        }
        Ok(())
    }
}

impl<'de> DeserializeSeed<'de> for &mut Top<'_> {
    type Value = ();

    fn deserialize<D: serde::Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        struct Elements<'b, 'c>(&'b mut Top<'c>);
        impl<'de> Visitor<'de> for Elements<'_, '_> {
            type Value = ();
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an array of locations")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<(), A::Error> {
                self.0.visit_seq(seq)
            }
        }
        deserializer.deserialize_seq(Elements(self))
    }
}

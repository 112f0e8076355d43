//! The stored record of a location as `POST /v1/location/list` answers it.
//!
//! The stored canonical text already is the record's content (see the module above), so a record
//! is written as a few small keys followed by that text, never decoded and encoded again.

use super::Status;
use super::batch::quarantine_issue;
pub use crate::domain::wire::timestamp;

/// A stored location as the store reads it for a page.
#[derive(Clone, Debug, PartialEq)]
pub struct StoredRecord {
    /// Creation order, the key of the list's pages.
    pub seq: i64,
    pub location_id: String,
    pub merchant_location_id: Option<String>,
    pub status: Status,
    /// The location whose nearness keeps this one in `QUARANTINE`.
    pub quarantined_by: Option<String>,
    pub version: i64,
    /// Unix milliseconds.
    pub created_at: i64,
    pub updated_at: i64,
    /// `Location::canonical_json`: `{"location_types":…,"is_accepts_returns":…}`.
    pub body: String,
}

/// A stored record as a store reads it straight from its row, borrowing every text.
#[derive(Clone, Copy, Debug)]
pub struct RecordRef<'a> {
    pub location_id: &'a str,
    pub merchant_location_id: Option<&'a str>,
    pub status: Status,
    pub quarantined_by: Option<&'a str>,
    pub version: i64,
    pub created_at: i64,
    pub updated_at: i64,
    /// The stored canonical text (written as it is).
    pub body: &'a [u8],
}

impl StoredRecord {
    pub fn as_ref(&self) -> RecordRef<'_> {
        RecordRef {
            location_id: &self.location_id,
            merchant_location_id: self.merchant_location_id.as_deref(),
            status: self.status,
            quarantined_by: self.quarantined_by.as_deref(),
            version: self.version,
            created_at: self.created_at,
            updated_at: self.updated_at,
            body: self.body.as_bytes(),
        }
    }
}

impl RecordRef<'_> {
    /// Appends the record's JSON object to `out`.
    pub fn write_json(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(b"{\"location_id\":");
        json_string(out, self.location_id);
        out.extend_from_slice(b",\"merchant_location_id\":");
        match self.merchant_location_id {
            Some(id) => json_string(out, id),
            None => out.extend_from_slice(b"null"),
        }
        out.extend_from_slice(b",\"status\":\"");
        out.extend_from_slice(self.status.as_str().as_bytes());
        out.extend_from_slice(b"\",\"issue\":");
        match (self.quarantined_by, self.status) {
            (Some(neighbour), Status::Quarantine) => {
                let issue = quarantine_issue("latitude".to_owned(), neighbour);
                // Plain data into a Vec: cannot fail.
                let _ = serde_json::to_writer(&mut *out, &issue);
            }
            _ => out.extend_from_slice(b"null"),
        }
        out.extend_from_slice(b",\"version\":");
        out.extend_from_slice(itoa::Buffer::new().format(self.version).as_bytes());
        out.extend_from_slice(b",\"created_at\":\"");
        out.extend_from_slice(&timestamp(self.created_at));
        out.extend_from_slice(b"\",\"updated_at\":\"");
        out.extend_from_slice(&timestamp(self.updated_at));
        out.extend_from_slice(b"\",");
        // The content without its opening brace: its keys continue this object.
        out.extend_from_slice(self.body.get(1..).unwrap_or(b"}"));
    }
}

fn json_string(out: &mut Vec<u8>, s: &str) {
    // Writing a string into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *out, s);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_rfc3339_with_milliseconds() {
        assert_eq!(&timestamp(0), b"1970-01-01T00:00:00.000Z");
        assert_eq!(&timestamp(1_795_339_800_123), b"2026-11-22T09:30:00.123Z");
        assert_eq!(&timestamp(951_782_400_007), b"2000-02-29T00:00:00.007Z");
        assert_eq!(&timestamp(-1), b"1969-12-31T23:59:59.999Z");
        assert_eq!(&timestamp(253_402_300_799_999), b"9999-12-31T23:59:59.999Z");
    }

    #[test]
    fn a_record_is_its_keys_then_its_content() {
        let record = StoredRecord {
            seq: 1,
            location_id: "L1".into(),
            merchant_location_id: None,
            status: Status::Quarantine,
            quarantined_by: Some("L0".into()),
            version: 3,
            created_at: 0,
            updated_at: 1,
            body: r#"{"location_types":["WAREHOUSE"],"name":"a\"b"}"#.into(),
        };
        let mut out = Vec::new();
        record.as_ref().write_json(&mut out);
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        let text = String::from_utf8(out).unwrap();
        let keys = [
            "location_id",
            "merchant_location_id",
            "status",
            "issue",
            "version",
            "created_at",
            "updated_at",
            "location_types",
            "name",
        ];
        let at: Vec<usize> = keys.iter().map(|k| text.find(&format!("\"{k}\":")).unwrap()).collect();
        assert!(at.windows(2).all(|w| w[0] < w[1]), "{text}");
        assert_eq!(v.as_object().unwrap().len(), keys.len());
        assert_eq!(v["issue"]["field"], "latitude");
        assert_eq!(v["issue"]["code"], "STOREFRONT_RULE_VIOLATION");
        assert!(v["issue"]["message"].as_str().unwrap().contains("L0"));
        assert_eq!(v["name"], "a\"b");
        assert_eq!(v["updated_at"], "1970-01-01T00:00:00.001Z");
    }
}

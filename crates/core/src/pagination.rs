//! The list cursors: opaque, URL-safe, versioned, signed, bound to their
//! filter. One implementation for every list; each list says only what its position is
//! ([`Position`]).
//!
//! Layout before base64url (no padding): `version (1) | filter digest (16) | position | tag (16)`.
//! The version byte names the kind of list too. The category list's position, version 2, is
//! `position (4) | has sort_order (1) | sort_order (8, if any) | id`,
//! where `tag` is HMAC-SHA256 over everything before it, truncated to 128 bits, under a secret
//! generated once per database and kept in it, so cursors survive restarts and work on every
//! instance sharing the database, and a cursor from another database fails. Version 1 (the
//! same without `position`) is still read.
//!
//! The cursor carries the last item's *order key*: the next page starts right after that key, so
//! a change to the taxonomy between pages never returns an unchanged category twice. It also
//! carries where that key sat in its list, which spares the next page its search when the list
//! is unchanged (see [`Resume`]). Every way a cursor can be wrong gives the same answer (`None` →
//! `INVALID_CURSOR`).

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

use crate::domain::category::OrderKey;
use crate::domain::category::taxonomy::Resume;
use crate::domain::location::search::{Hit, MAX_RADIUS_M};

const VERSION: u8 = 2;
/// Cursors without a position, issued before version 2.
const VERSION_1: u8 = 1;
const TAG_BYTES: usize = 16;
/// Longest cursor accepted (characters); checked before decoding anything.
pub const MAX_CURSOR_CHARS: usize = 512;

/// Issues and checks cursors under one secret.
#[derive(Clone)]
pub struct Cursors {
    /// HMAC state with the key already absorbed; cloned for each cursor.
    mac: Hmac<Sha256>,
}

impl std::fmt::Debug for Cursors {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Cursors { secret: <redacted> }")
    }
}

impl Cursors {
    pub fn new(secret: [u8; 32]) -> Self {
        // HMAC zero-pads a key shorter than the hash's block (64 bytes); padding it here is the
        // same key, in the fixed-size form that cannot fail.
        let mut block = [0u8; 64];
        block[..32].copy_from_slice(&secret);
        Cursors {
            mac: <Hmac<Sha256> as KeyInit>::new(&block.into()),
        }
    }

    fn mac(&self) -> Hmac<Sha256> {
        self.mac.clone()
    }

    /// The cursor that continues after `position` in the list of the filter with `digest`.
    pub fn encode<P: Position>(&self, digest: &[u8; 16], position: &P) -> String {
        let mut bytes = Vec::with_capacity(1 + 16 + 32 + TAG_BYTES);
        bytes.push(P::VERSIONS[0]);
        bytes.extend_from_slice(digest);
        position.write(&mut bytes);
        let mut mac = self.mac();
        mac.update(&bytes);
        let tag = mac.finalize().into_bytes();
        bytes.extend_from_slice(&tag[..TAG_BYTES]);
        URL_SAFE_NO_PAD.encode(bytes)
    }

    /// Where a cursor continues, if the cursor is one of ours, unaltered, of this kind of list,
    /// and was issued for the filter with `digest`.
    pub fn decode<P: Position>(&self, cursor: &str, digest: &[u8; 16]) -> Option<P> {
        if cursor.len() > MAX_CURSOR_CHARS {
            return None;
        }
        let bytes = URL_SAFE_NO_PAD.decode(cursor).ok()?;
        let body_len = bytes.len().checked_sub(TAG_BYTES)?;
        let (body, tag) = bytes.split_at(body_len);
        let mut mac = self.mac();
        mac.update(body);
        mac.verify_truncated_left(tag).ok()?;
        let (&version, rest) = body.split_first()?;
        if !P::VERSIONS.contains(&version) {
            return None;
        }
        let (bound, rest) = rest.split_at_checked(16)?;
        if bound != digest {
            return None;
        }
        P::read(version, rest)
    }
}

/// Where a page of one kind of list ends, as a cursor carries it. Each kind has version bytes of
/// its own, so a cursor of one list is never read by another.
pub trait Position: Sized {
    /// The version bytes this kind reads; the first is the one written.
    const VERSIONS: &'static [u8];
    /// Appends the position's bytes.
    fn write(&self, out: &mut Vec<u8>);
    /// The position from its bytes, written by `version`.
    fn read(version: u8, bytes: &[u8]) -> Option<Self>;
}

/// Where a page of the location list ends: the `seq` (creation order) of its last record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AfterSeq(pub i64);

/// Version bytes of location-list cursors (category-list cursors use 1 and 2).
const LOCATIONS_V1: u8 = 0x41;

impl Position for AfterSeq {
    const VERSIONS: &'static [u8] = &[LOCATIONS_V1];

    fn write(&self, bytes: &mut Vec<u8>) {
        bytes.extend_from_slice(&self.0.to_be_bytes());
    }

    fn read(_version: u8, bytes: &[u8]) -> Option<Self> {
        let seq = i64::from_be_bytes(bytes.try_into().ok()?);
        (seq > 0).then_some(AfterSeq(seq))
    }
}

/// Where a feed continues: after the event with this sequence (0: before the
/// first).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AfterEvent(pub i64);

/// Version bytes of event-feed cursors.
const EVENTS_V1: u8 = 0x45;

impl Position for AfterEvent {
    const VERSIONS: &'static [u8] = &[EVENTS_V1];

    fn write(&self, bytes: &mut Vec<u8>) {
        bytes.extend_from_slice(&self.0.to_be_bytes());
    }

    fn read(_version: u8, bytes: &[u8]) -> Option<Self> {
        let sequence = i64::from_be_bytes(bytes.try_into().ok()?);
        (sequence >= 0).then_some(AfterEvent(sequence))
    }
}

/// Where a page of an endpoint's delivery attempts ends (newest first): the id
/// of its last (oldest) attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BeforeAttempt(pub i64);

/// Version bytes of delivery-attempt cursors.
const ATTEMPTS_V1: u8 = 0x57;

impl Position for BeforeAttempt {
    const VERSIONS: &'static [u8] = &[ATTEMPTS_V1];

    fn write(&self, bytes: &mut Vec<u8>) {
        bytes.extend_from_slice(&self.0.to_be_bytes());
    }

    fn read(_version: u8, bytes: &[u8]) -> Option<Self> {
        let id = i64::from_be_bytes(bytes.try_into().ok()?);
        (id > 0).then_some(BeforeAttempt(id))
    }
}

/// Where a page of a merchant's imports ends (newest first): its last (oldest) import's key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BeforeImport(pub i64);

/// Version bytes of import-list cursors.
const IMPORTS_V1: u8 = 0x49;

impl Position for BeforeImport {
    const VERSIONS: &'static [u8] = &[IMPORTS_V1];

    fn write(&self, bytes: &mut Vec<u8>) {
        bytes.extend_from_slice(&self.0.to_be_bytes());
    }

    fn read(_version: u8, bytes: &[u8]) -> Option<Self> {
        let key = i64::from_be_bytes(bytes.try_into().ok()?);
        (key > 0).then_some(BeforeImport(key))
    }
}

/// Where a page of an import's rows ends (file order): its last row's place in the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AfterRow(pub i64);

/// Version bytes of import-row cursors.
const IMPORT_ROWS_V1: u8 = 0x52;

impl Position for AfterRow {
    const VERSIONS: &'static [u8] = &[IMPORT_ROWS_V1];

    fn write(&self, bytes: &mut Vec<u8>) {
        bytes.extend_from_slice(&self.0.to_be_bytes());
    }

    fn read(_version: u8, bytes: &[u8]) -> Option<Self> {
        let ordinal = i64::from_be_bytes(bytes.try_into().ok()?);
        (ordinal >= 0).then_some(AfterRow(ordinal))
    }
}

/// Where a page of a merchant's keys ends (oldest first): its last key's creation time and id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AfterKey(pub i64, pub String);

/// Version bytes of key-list cursors.
const KEYS_V1: u8 = 0x4B;

impl Position for AfterKey {
    const VERSIONS: &'static [u8] = &[KEYS_V1];

    fn write(&self, bytes: &mut Vec<u8>) {
        bytes.extend_from_slice(&self.0.to_be_bytes());
        bytes.extend_from_slice(self.1.as_bytes());
    }

    fn read(_version: u8, bytes: &[u8]) -> Option<Self> {
        let (at, id) = bytes.split_at_checked(8)?;
        let at = i64::from_be_bytes(at.try_into().ok()?);
        Some(AfterKey(at, std::str::from_utf8(id).ok()?.to_owned()))
    }
}

/// Version bytes of search cursors.
const SEARCH_V1: u8 = 0x53;

/// Where a page of a search ends: the last result's `distance_m`, then its `seq`.
impl Position for Hit {
    const VERSIONS: &'static [u8] = &[SEARCH_V1];

    fn write(&self, bytes: &mut Vec<u8>) {
        bytes.extend_from_slice(&self.distance_m.to_be_bytes());
        bytes.extend_from_slice(&self.seq.to_be_bytes());
    }

    fn read(_version: u8, bytes: &[u8]) -> Option<Self> {
        let (distance, seq) = bytes.split_at_checked(4)?;
        let hit = Hit {
            distance_m: u32::from_be_bytes(distance.try_into().ok()?),
            seq: i64::from_be_bytes(seq.try_into().ok()?),
        };
        (hit.seq > 0 && hit.distance_m <= MAX_RADIUS_M).then_some(hit)
    }
}

/// The category list's position: the last item's order key, and where it sat in its list.
impl Position for Resume {
    const VERSIONS: &'static [u8] = &[VERSION, VERSION_1];

    fn write(&self, bytes: &mut Vec<u8>) {
        let key = &self.key;
        // No position is written as u32::MAX, which no list reaches.
        bytes.extend_from_slice(&self.position.unwrap_or(u32::MAX).to_be_bytes());
        match key.sort_order {
            Some(n) => {
                bytes.push(1);
                bytes.extend_from_slice(&n.to_be_bytes());
            }
            None => bytes.push(0),
        }
        bytes.extend_from_slice(key.id.as_bytes());
    }

    fn read(version: u8, rest: &[u8]) -> Option<Self> {
        let (position, rest) = if version == VERSION {
            let (position, rest) = rest.split_at_checked(4)?;
            let position = u32::from_be_bytes(position.try_into().ok()?);
            ((position != u32::MAX).then_some(position), rest)
        } else {
            (None, rest)
        };
        let (&has_sort, rest) = rest.split_first()?;
        let (sort_order, id) = match has_sort {
            0 => (None, rest),
            1 => {
                let (n, id) = rest.split_at_checked(8)?;
                (Some(i64::from_be_bytes(n.try_into().ok()?)), id)
            }
            _ => return None,
        };
        let id = std::str::from_utf8(id).ok()?;
        (!id.is_empty()).then(|| Resume {
            key: OrderKey {
                sort_order,
                id: id.to_owned(),
            },
            position,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(sort_order: Option<i64>, id: &str) -> Resume {
        Resume {
            key: OrderKey {
                sort_order,
                id: id.into(),
            },
            position: Some(41),
        }
    }

    #[test]
    fn a_cursor_without_a_position_round_trips_without_one() {
        let cursors = Cursors::new([7; 32]);
        let k = Resume {
            position: None,
            ..key(Some(3), "abc")
        };
        assert_eq!(
            cursors.decode::<Resume>(&cursors.encode(&[1; 16], &k), &[1; 16]),
            Some(k)
        );
    }

    #[test]
    fn version_1_cursors_are_still_read() {
        // Version 1 had no position: version | digest | has sort_order | sort_order | id | tag.
        let cursors = Cursors::new([7; 32]);
        let mut bytes = vec![VERSION_1];
        bytes.extend_from_slice(&[1; 16]);
        bytes.push(1);
        bytes.extend_from_slice(&3i64.to_be_bytes());
        bytes.extend_from_slice(b"abc");
        let mut mac = cursors.mac();
        mac.update(&bytes);
        bytes.extend_from_slice(&mac.finalize().into_bytes()[..TAG_BYTES]);
        let v1 = URL_SAFE_NO_PAD.encode(bytes);
        let expected = Resume {
            position: None,
            ..key(Some(3), "abc")
        };
        assert_eq!(cursors.decode::<Resume>(&v1, &[1; 16]), Some(expected));
        assert_eq!(
            cursors.decode::<Resume>(&v1, &[2; 16]),
            None,
            "still bound to its filter"
        );
    }

    #[test]
    fn round_trip_and_binding() {
        let cursors = Cursors::new([7; 32]);
        let digest = [1; 16];
        for k in [
            key(Some(-5), "abc"),
            key(None, "Ж-1"),
            key(Some(i64::MAX), &"x".repeat(64)),
        ] {
            let c = cursors.encode(&digest, &k);
            assert!(c.len() <= MAX_CURSOR_CHARS);
            assert!(c.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'));
            assert_eq!(cursors.decode::<Resume>(&c, &digest), Some(k));
            assert_eq!(cursors.decode::<Resume>(&c, &[2; 16]), None, "bound to its filter");
            assert_eq!(
                Cursors::new([8; 32]).decode::<Resume>(&c, &digest),
                None,
                "another database"
            );
        }
    }

    #[test]
    fn a_cursor_of_one_list_is_refused_by_the_other() {
        let cursors = Cursors::new([7; 32]);
        let category = cursors.encode(&[1; 16], &key(Some(3), "abc"));
        let location = cursors.encode(&[1; 16], &AfterSeq(42));
        assert_eq!(cursors.decode::<AfterSeq>(&location, &[1; 16]), Some(AfterSeq(42)));
        assert_eq!(cursors.decode::<AfterSeq>(&location, &[2; 16]), None);
        assert_eq!(cursors.decode::<AfterSeq>(&category, &[1; 16]), None);
        assert_eq!(cursors.decode::<Resume>(&location, &[1; 16]), None);
    }

    #[test]
    fn any_alteration_is_refused() {
        let cursors = Cursors::new([7; 32]);
        let c = cursors.encode(&[1; 16], &key(Some(3), "abc"));
        for i in 0..c.len() {
            let mut bytes = c.clone().into_bytes();
            bytes[i] = if bytes[i] == b'A' { b'B' } else { b'A' };
            let altered = String::from_utf8(bytes).unwrap_or_default();
            assert_eq!(cursors.decode::<Resume>(&altered, &[1; 16]), None, "byte {i}");
        }
        assert_eq!(cursors.decode::<Resume>(&c[..c.len() - 1], &[1; 16]), None);
        assert_eq!(cursors.decode::<Resume>("", &[1; 16]), None);
        assert_eq!(cursors.decode::<Resume>(&"A".repeat(600), &[1; 16]), None);
        assert_eq!(cursors.decode::<Resume>("!!!", &[1; 16]), None);
    }
}

//! The list cursor (CONTRACT §5.3): opaque, URL-safe, versioned, signed, bound to its filter.
//!
//! Layout before base64url (no padding):
//! `version (1) | filter digest (16) | has sort_order (1) | sort_order (8, if any) | id | tag (16)`,
//! where `tag` is HMAC-SHA256 over everything before it, truncated to 128 bits, under a secret
//! generated once per database and kept in it, so cursors survive restarts and work on every
//! instance sharing the database, and a cursor from another database fails.
//!
//! The cursor carries the last item's *order key*, not an offset: the next page starts right
//! after that key, so a change to the taxonomy between pages never returns an unchanged category
//! twice. Every way a cursor can be wrong gives the same answer (`None` → `INVALID_CURSOR`).

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

use crate::domain::category::OrderKey;

const VERSION: u8 = 1;
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

    /// The cursor that continues after `key` in the list of the filter with `digest`.
    pub fn encode(&self, digest: &[u8; 16], key: &OrderKey) -> String {
        let mut bytes = Vec::with_capacity(1 + 16 + 9 + key.id.len() + TAG_BYTES);
        bytes.push(VERSION);
        bytes.extend_from_slice(digest);
        match key.sort_order {
            Some(n) => {
                bytes.push(1);
                bytes.extend_from_slice(&n.to_be_bytes());
            }
            None => bytes.push(0),
        }
        bytes.extend_from_slice(key.id.as_bytes());
        let mut mac = self.mac();
        mac.update(&bytes);
        let tag = mac.finalize().into_bytes();
        bytes.extend_from_slice(&tag[..TAG_BYTES]);
        URL_SAFE_NO_PAD.encode(bytes)
    }

    /// The key a cursor continues after, if the cursor is one of ours, unaltered, and was issued
    /// for the filter with `digest`.
    pub fn decode(&self, cursor: &str, digest: &[u8; 16]) -> Option<OrderKey> {
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
        if version != VERSION {
            return None;
        }
        let (bound, rest) = rest.split_at_checked(16)?;
        if bound != digest {
            return None;
        }
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
        (!id.is_empty()).then(|| OrderKey {
            sort_order,
            id: id.to_owned(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(sort_order: Option<i64>, id: &str) -> OrderKey {
        OrderKey {
            sort_order,
            id: id.into(),
        }
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
            assert_eq!(cursors.decode(&c, &digest), Some(k));
            assert_eq!(cursors.decode(&c, &[2; 16]), None, "bound to its filter");
            assert_eq!(Cursors::new([8; 32]).decode(&c, &digest), None, "another database");
        }
    }

    #[test]
    fn any_alteration_is_refused() {
        let cursors = Cursors::new([7; 32]);
        let c = cursors.encode(&[1; 16], &key(Some(3), "abc"));
        for i in 0..c.len() {
            let mut bytes = c.clone().into_bytes();
            bytes[i] = if bytes[i] == b'A' { b'B' } else { b'A' };
            let altered = String::from_utf8(bytes).unwrap_or_default();
            assert_eq!(cursors.decode(&altered, &[1; 16]), None, "byte {i}");
        }
        assert_eq!(cursors.decode(&c[..c.len() - 1], &[1; 16]), None);
        assert_eq!(cursors.decode("", &[1; 16]), None);
        assert_eq!(cursors.decode(&"A".repeat(600), &[1; 16]), None);
        assert_eq!(cursors.decode("!!!", &[1; 16]), None);
    }
}

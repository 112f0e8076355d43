//! A cursor, as text, through the decoder of each list: it is refused, or it is one the service
//! issued, and what it decodes to encodes to a cursor that decodes to the same position (to
//! itself, when it is of the current version).
#![no_main]

use libfuzzer_sys::fuzz_target;
use storefront_core::domain::category::taxonomy::Resume;
use storefront_core::pagination::{AfterSeq, Cursors};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let cursors = Cursors::new([7; 32]);
    let digest = [3; 16];
    if let Some(position) = cursors.decode::<AfterSeq>(text, &digest) {
        let again = cursors.encode(&digest, &position);
        assert_eq!(again, text, "a location cursor has one version");
    }
    if let Some(position) = cursors.decode::<Resume>(text, &digest) {
        let again = cursors.encode(&digest, &position);
        assert_eq!(cursors.decode::<Resume>(&again, &digest), Some(position));
    }
    // The fuzzer cannot forge a tag, so also feed it positions: every one round-trips.
    if data.len() >= 8 {
        // Sequence numbers start at 1; a cursor after 0 or before is refused by design.
        let seq = i64::from_le_bytes(data[..8].try_into().expect("8 bytes")).checked_abs().unwrap_or(i64::MAX).max(1);
        let cursor = cursors.encode(&digest, &AfterSeq(seq));
        assert_eq!(cursors.decode::<AfterSeq>(&cursor, &digest), Some(AfterSeq(seq)));
        assert_eq!(cursors.decode::<AfterSeq>(&cursor, &[4; 16]), None, "bound to its filter");
        assert_eq!(cursors.decode::<Resume>(&cursor, &digest), None, "bound to its list");
    }
});

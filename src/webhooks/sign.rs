//! Standard Webhooks 1.0 signatures: `v1,` and the base64 of the HMAC-SHA256 of
//! `{webhook-id}.{webhook-timestamp}.{body}`, keyed with the secret's bytes (the base64 after
//! `whsec_`); one per secret, separated by a space.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

/// A secret's prefix.
pub const PREFIX: &str = "whsec_";

/// A new secret: `whsec_` and the base64 of 32 random bytes.
pub fn new_secret() -> std::io::Result<String> {
    Ok(format!("{PREFIX}{}", STANDARD.encode(crate::secret::random::<32>()?)))
}

/// The `webhook-signature` header's value for `body`, signed with each of `secrets`.
pub fn signatures(secrets: &[String], id: &str, timestamp: i64, body: &str) -> String {
    secrets
        .iter()
        .filter_map(|secret| {
            let key = STANDARD.decode(secret.strip_prefix(PREFIX).unwrap_or(secret)).ok()?;
            let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(&key).ok()?;
            mac.update(id.as_bytes());
            mac.update(b".");
            mac.update(timestamp.to_string().as_bytes());
            mac.update(b".");
            mac.update(body.as_bytes());
            Some(format!("v1,{}", STANDARD.encode(mac.finalize().into_bytes())))
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The Standard Webhooks specification's own example (its test vector).
    #[test]
    fn the_specification_s_example_signs_as_it_says() {
        let secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw".to_owned();
        let body = r#"{"test": 2432232314}"#;
        assert_eq!(
            signatures(&[secret], "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, body),
            "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
        );
    }

    #[test]
    fn two_secrets_sign_twice_and_new_secrets_are_32_bytes() {
        let a = new_secret().unwrap_or_default();
        let b = new_secret().unwrap_or_default();
        assert_ne!(a, b);
        assert_eq!(STANDARD.decode(&a[PREFIX.len()..]).map(|k| k.len()).ok(), Some(32));
        let both = signatures(&[a.clone(), b.clone()], "id", 1, "{}");
        let parts: Vec<&str> = both.split(' ').collect();
        assert_eq!(parts.len(), 2);
        assert_eq!(parts[0], signatures(&[a], "id", 1, "{}"));
        assert_eq!(parts[1], signatures(&[b], "id", 1, "{}"));
    }
}

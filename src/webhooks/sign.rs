//! Standard Webhooks 1.0 signatures: `v1,` and the base64 of the HMAC-SHA256 of
//! `{webhook-id}.{webhook-timestamp}.{body}`, keyed with the secret's bytes (the base64 after
//! `whsec_`); one per secret, separated by a space.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

use crate::secret::Secret;

/// A secret's prefix.
pub const PREFIX: &str = "whsec_";

/// A new secret: `whsec_` and the base64 of 32 random bytes.
pub fn new_secret() -> std::io::Result<String> {
    Ok(format!("{PREFIX}{}", STANDARD.encode(crate::secret::random::<32>()?)))
}

/// The `webhook-signature` header's value for `body`, signed with each of `secrets`; an error
/// when a secret cannot be decoded (never a header that silently leaves one out).
pub fn signatures(secrets: &[Secret], id: &str, timestamp: i64, body: &str) -> Result<String, String> {
    let signed = secrets
        .iter()
        .map(|secret| {
            let text = secret.expose();
            let key = STANDARD
                .decode(text.strip_prefix(PREFIX).unwrap_or(text))
                .map_err(|_| "the endpoint's secret is not valid base64: it cannot sign".to_owned())?;
            let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(&key)
                .map_err(|_| "the endpoint's secret cannot key an HMAC".to_owned())?;
            mac.update(id.as_bytes());
            mac.update(b".");
            mac.update(timestamp.to_string().as_bytes());
            mac.update(b".");
            mac.update(body.as_bytes());
            Ok(format!("v1,{}", STANDARD.encode(mac.finalize().into_bytes())))
        })
        .collect::<Result<Vec<_>, String>>()?;
    if signed.is_empty() {
        return Err("the endpoint has no secret to sign with".to_owned());
    }
    Ok(signed.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The Standard Webhooks specification's own example (its test vector).
    #[test]
    fn the_specification_s_example_signs_as_it_says() {
        let secret = Secret::new("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw");
        let body = r#"{"test": 2432232314}"#;
        assert_eq!(
            signatures(&[secret], "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, body),
            Ok("v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=".to_owned())
        );
    }

    #[test]
    fn two_secrets_sign_twice_and_new_secrets_are_32_bytes() {
        let a = new_secret().unwrap_or_default();
        let b = new_secret().unwrap_or_default();
        assert_ne!(a, b);
        assert_eq!(STANDARD.decode(&a[PREFIX.len()..]).map(|k| k.len()).ok(), Some(32));
        let (a, b) = (Secret::new(a), Secret::new(b));
        let both = signatures(&[a.clone(), b.clone()], "id", 1, "{}").unwrap_or_default();
        let parts: Vec<&str> = both.split(' ').collect();
        assert_eq!(parts.len(), 2);
        assert_eq!(Ok(parts[0].to_owned()), signatures(&[a], "id", 1, "{}"));
        assert_eq!(Ok(parts[1].to_owned()), signatures(&[b], "id", 1, "{}"));
    }

    #[test]
    fn a_secret_that_cannot_be_decoded_is_an_error_not_a_signature_left_out() {
        let good = Secret::new(new_secret().unwrap_or_default());
        let bad = Secret::new("whsec_not base64!");
        assert!(signatures(&[good, bad], "id", 1, "{}").is_err());
        assert!(signatures(&[], "id", 1, "{}").is_err());
    }
}

//! Random secrets from the operating system (API keys, the cursor secret).

/// `N` bytes from the operating system's random source.
pub fn random<const N: usize>() -> std::io::Result<[u8; N]> {
    let mut bytes = [0u8; N];
    getrandom::fill(&mut bytes).map_err(|e| std::io::Error::other(e.to_string()))?;
    Ok(bytes)
}

/// A secret held in memory (a webhook's signing secret, a database URL with its password): its
/// `Debug` never shows it, so that a log line of a struct that holds one cannot leak it.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(text: impl Into<String>) -> Self {
        Secret(text.into())
    }

    /// The secret itself, for the one place that uses it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(redacted)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_secret_s_debug_never_shows_it() {
        let s = Secret::new("whsec_abc");
        assert_eq!(format!("{s:?}"), "Secret(redacted)");
        assert_eq!(format!("{:?}", vec![s.clone()]), "[Secret(redacted)]");
        assert_eq!(s.expose(), "whsec_abc");
    }
}

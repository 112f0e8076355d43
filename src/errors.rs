//! An error with its causes, for a log line or an attempt's `error` (one formatter for the crate:
//! HTTP, the store and the webhook sender all print errors the same way).

/// `error: cause: cause …`.
pub struct ErrorChain<'a>(pub &'a (dyn std::error::Error + 'static));

impl std::fmt::Display for ErrorChain<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0)?;
        let mut source = self.0.source();
        while let Some(cause) = source {
            write!(f, ": {cause}")?;
            source = cause.source();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("outer")]
    struct Outer(#[source] std::io::Error);

    #[test]
    fn an_error_prints_with_each_cause() {
        let e = Outer(std::io::Error::other("inner"));
        assert_eq!(ErrorChain(&e).to_string(), "outer: inner");
    }
}

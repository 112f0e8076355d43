//! What a store's calls fail with (beside `api`, which re-exports it, so that the traits of
//! `api` and `webhook_api` both take it from here).

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{0} not found")]
    NotFound(String),
    #[error("the store is closed or its writer stopped")]
    Unavailable,
    #[error("the request's deadline passed before its write was committed; nothing was stored")]
    DeadlinePassed,
    /// The connection broke while the transaction was committing: it may or may not be stored.
    #[error("the database connection broke during the commit; the write may or may not be stored")]
    OutcomeUnknown(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// No connection came free in time: the database is busy, not broken, and nothing was done.
    #[error("no database connection came free in time")]
    Busy(#[source] Box<dyn std::error::Error + Send + Sync>),
    #[error("database error")]
    Backend(#[source] Box<dyn std::error::Error + Send + Sync>),
}

impl StoreError {
    pub fn backend(e: impl std::error::Error + Send + Sync + 'static) -> Self {
        StoreError::Backend(Box::new(e))
    }

    /// The error with its causes, for a log line.
    pub fn chain(&self) -> String {
        crate::errors::ErrorChain(self).to_string()
    }

    /// A stored value the service never writes.
    pub fn corrupt(what: &str, value: &str) -> Self {
        StoreError::Backend(format!("unexpected stored {what} {value:?}").into())
    }
}

//! Read-only snapshots: the reads of one answer that must see one state run in a read-only,
//! repeatable-read transaction. A [`snapshot`] is begun and committed in round trips of their
//! own; a [`Pipelined`] one sends its `BEGIN` with its first statement and its `COMMIT` with its
//! last, so that a snapshot of two statements costs two round trips rather than four.

use deadpool_postgres::{GenericClient, Object, Pool};

use crate::store::api::StoreError;

/// Begins a read-only, repeatable-read transaction (statements may follow it in the same string).
pub(super) const BEGIN: &str = "START TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY; ";

/// A read-only, repeatable-read transaction: every read in it sees one state.
pub(super) async fn snapshot(
    client: &mut deadpool_postgres::Object,
) -> Result<deadpool_postgres::Transaction<'_>, StoreError> {
    Ok(client
        .build_transaction()
        .isolation_level(tokio_postgres::IsolationLevel::RepeatableRead)
        .read_only(true)
        .start()
        .await?)
}

/// A pooled connection whose snapshot is begun with its first statement and committed with its
/// last. One left inside its snapshot (an error, or the request given up half way) is not handed
/// back to the pool but closed, which ends the transaction on the server.
pub(super) struct Pipelined(Option<Object>);

impl Pipelined {
    pub(super) async fn get(pool: &Pool) -> Result<Self, StoreError> {
        Ok(Self(Some(pool.get().await?)))
    }

    pub(super) fn client(&self) -> Result<&Object, StoreError> {
        self.0.as_ref().ok_or(StoreError::Unavailable)
    }

    /// The connection goes back to the pool: its snapshot has been committed.
    pub(super) fn ended(mut self) {
        self.0.take();
    }
}

impl Drop for Pipelined {
    fn drop(&mut self) {
        if let Some(client) = self.0.take() {
            drop(Object::take(client));
        }
    }
}

/// `first`'s result, with `begin` (a [`BEGIN`] and what else it sets) sent ahead of it in the
/// same round trip.
pub(super) async fn begun_with<T>(
    client: &Object,
    begin: &str,
    first: impl Future<Output = Result<T, StoreError>>,
) -> Result<T, StoreError> {
    let ((), out) = tokio::try_join!(async { Ok(client.batch_execute(begin).await?) }, first)?;
    Ok(out)
}

/// `last`'s result, with the snapshot's `COMMIT` sent behind it in the same round trip.
pub(super) async fn committed_with<T>(
    client: &Object,
    last: impl Future<Output = Result<T, StoreError>>,
) -> Result<T, StoreError> {
    let (out, ()) = tokio::try_join!(last, async { Ok(client.batch_execute("COMMIT").await?) })?;
    Ok(out)
}

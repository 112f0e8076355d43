//! Read-only snapshots: the reads of one answer that must see one state run in a read-only,
//! repeatable-read transaction. A [`snapshot`] is begun and committed in round trips of their
//! own; a [`Pipelined`] one sends its `BEGIN` with its first statement and its `COMMIT` with its
//! last ([`begun_with`], [`committed_after`]), so that a snapshot of two statements costs two
//! round trips rather than four.

use deadpool_postgres::{GenericClient, Object, Pool};

use super::sql::Params;
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
/// last. One left inside its snapshot is rolled back before it is handed back to the pool.
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
        let Some(client) = self.0.take() else { return };
        // Left inside its snapshot (an error, or a client that hung up): its ROLLBACK goes out
        // behind whatever it had sent, and the connection returns to the pool once that is
        // answered, rather than a new connection being opened for the next request. One whose
        // ROLLBACK fails is closed.
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            drop(Object::take(client));
            return;
        };
        runtime.spawn(async move {
            if client.batch_execute("ROLLBACK").await.is_err() {
                drop(Object::take(client));
            }
        });
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

/// The rows of `sql` (prepared once per connection), the snapshot's last statement, with its
/// `COMMIT` sent behind it in the same round trip. The statement is prepared first, inside the
/// snapshot: one not yet prepared would be sent only after the `COMMIT`, and run outside it.
pub(super) async fn committed_after(
    client: &Object,
    sql: &str,
    params: Params<'_>,
) -> Result<Vec<tokio_postgres::Row>, StoreError> {
    let statement = client.prepare_cached(sql).await?;
    let (rows, ()) = tokio::try_join!(
        async { Ok::<_, StoreError>(client.query(&statement, params).await?) },
        commit(client)
    )?;
    Ok(rows)
}

/// Ends the snapshot.
pub(super) async fn commit(client: &Object) -> Result<(), StoreError> {
    Ok(client.batch_execute("COMMIT").await?)
}

//! Storage behind one trait (`api::Store`), so the HTTP layer and the domain never see which
//! engine runs: the trait and its types in `api`, one module per engine, the migration steps both
//! share in `migrate`, their group commits' common parts in `group`, and here the database URL and the factory that opens the right engine.

pub mod api;
pub mod columns;
pub mod error;
pub mod event_rows;
pub mod event_signal;
pub mod group;
pub mod heavy;
pub mod import_api;
pub mod import_apply;
pub mod import_sql;
pub mod key_sql;
pub mod merchant_sql;
pub mod migrate;
pub mod pools;
pub mod postgres;
pub mod reads;
mod redact;
pub mod redelivery_api;
pub mod redelivery_sql;
pub mod search_api;
pub mod sql_text;
pub mod sqlite;
pub mod webhook_api;
pub mod webhook_sql;

pub use pools::Pools;
pub use redact::redact;

use std::path::PathBuf;
use std::sync::Arc;

pub use api::*;

/// Where the data lives, parsed from `--database`.
#[derive(Clone, PartialEq, Eq)]
pub enum DatabaseUrl {
    Sqlite(PathBuf),
    Postgres(String),
}

impl DatabaseUrl {
    pub fn parse(url: &str) -> Result<Self, String> {
        if let Some(path) = url.strip_prefix("sqlite://").or_else(|| url.strip_prefix("sqlite:")) {
            if path.is_empty() {
                return Err("sqlite:// needs a file path, e.g. sqlite://storefront.db".into());
            }
            Ok(DatabaseUrl::Sqlite(PathBuf::from(path)))
        } else if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            Ok(DatabaseUrl::Postgres(url.to_owned()))
        } else {
            Err(format!(
                "unsupported database URL {:?}: use sqlite://FILE or postgres://user:pass@host/db",
                redact(url)
            ))
        }
    }
}

impl std::fmt::Debug for DatabaseUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DatabaseUrl::Sqlite(path) => write!(f, "sqlite://{}", path.display()),
            DatabaseUrl::Postgres(url) => f.write_str(&redact(url)),
        }
    }
}

/// Opens (creating and migrating when needed) the store at `url`.
pub async fn open(url: &DatabaseUrl) -> anyhow::Result<Arc<dyn Store>> {
    open_with(url, &ReadReplicas::default(), Pools::default()).await
}

/// Opens the store at `url` with pools of `pools`' sizes, its buyers' searches read on `replicas`
/// (PostgreSQL only).
pub async fn open_with(url: &DatabaseUrl, replicas: &ReadReplicas, pools: Pools) -> anyhow::Result<Arc<dyn Store>> {
    match url {
        DatabaseUrl::Sqlite(_) if !replicas.urls.is_empty() => {
            anyhow::bail!("--read-replica needs PostgreSQL: SQLite has no replicas")
        }
        DatabaseUrl::Sqlite(path) => Ok(Arc::new(sqlite::SqliteStore::open_sized(path, pools.readers).await?)),
        DatabaseUrl::Postgres(url) => Ok(Arc::new(postgres::PgStore::open(url, replicas, pools).await?)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        assert_eq!(
            DatabaseUrl::parse("sqlite://storefront.db"),
            Ok(DatabaseUrl::Sqlite("storefront.db".into()))
        );
        assert_eq!(
            DatabaseUrl::parse("sqlite:///tmp/x.db"),
            Ok(DatabaseUrl::Sqlite("/tmp/x.db".into()))
        );
        assert!(DatabaseUrl::parse("mysql://x").is_err());
        assert_eq!(redact("postgres://u:secret@h/db"), "postgres://u:***@h/db");
        assert_eq!(
            redact("postgres://u@h/db?sslmode=disable&password=secret&sslpassword=x"),
            "postgres://u@h/db?sslmode=disable&password=***&sslpassword=***"
        );
        assert_eq!(
            redact("postgres://u:a@b@h/db?Password=s"),
            "postgres://u:***@h/db?Password=***"
        );
        assert_eq!(redact("postgres://h/db"), "postgres://h/db");
        assert_eq!(
            format!("{:?}", DatabaseUrl::Postgres("postgres://u:pw@h/db".into())),
            "postgres://u:***@h/db"
        );
    }
}

//! Settings from flags or the environment (CONTRACT §1). Secrets (a database password) never
//! appear in `Debug` output or logs.

use std::net::SocketAddr;

use clap::{Args, ValueEnum};

use crate::store::DatabaseUrl;

#[derive(Args, Debug, Clone)]
pub struct DatabaseArgs {
    /// Database: sqlite://FILE (created when missing) or postgres://user:pass@host/db.
    #[arg(long, env = "STOREFRONT_DATABASE", default_value = "sqlite://storefront.db", global = true, value_parser = DatabaseUrl::parse, hide_env_values = true)]
    pub database: DatabaseUrl,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    Pretty,
    Json,
}

#[derive(Args, Debug, Clone)]
pub struct ServeArgs {
    /// Address to listen on.
    #[arg(long, env = "STOREFRONT_ADDR", default_value = "127.0.0.1:8080")]
    pub addr: SocketAddr,
    /// On an empty database, create the merchant `demo` (printing its API key once) and load the
    /// built-in demo taxonomy.
    #[arg(long)]
    pub demo: bool,
}

//! Settings from flags or the environment (CONTRACT §1). Secrets (a database password) never
//! appear in `Debug` output or logs.

use std::net::SocketAddr;

use clap::{Args, ValueEnum};

use crate::app::Settings;
use crate::rate_limit::Rate;
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
    /// Requests per merchant: N/s or N/min; 0 disables limiting.
    #[arg(long, env = "STOREFRONT_RATE_LIMIT", default_value = "50/s")]
    pub rate_limit: Rate,
    /// Requests a merchant may send at once before the rate applies.
    #[arg(long, env = "STOREFRONT_RATE_BURST", default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..))]
    pub rate_burst: u32,
    /// Most /v1 requests in flight at once; more are answered 429 rather than queued.
    #[arg(long, env = "STOREFRONT_MAX_IN_FLIGHT", default_value_t = 512, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_in_flight: u64,
}

impl ServeArgs {
    pub fn settings(&self) -> Settings {
        Settings {
            rate: self.rate_limit,
            burst: self.rate_burst,
            max_in_flight: usize::try_from(self.max_in_flight).unwrap_or(usize::MAX),
            ..Settings::default()
        }
    }
}

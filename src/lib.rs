//! Storefront Catalog Service: batch create of delivery locations and the category list.

pub mod app;
pub mod auth;
pub mod body_budget;
pub mod cli;
pub mod client;
pub mod clock;
pub mod config;
pub mod demo;
pub mod errors;
pub mod http;
pub mod imports;
pub mod key_verdicts;
pub mod rate_limit;
pub mod search_memory;
pub mod secret;
pub mod server;
pub mod state;
pub mod store;
pub mod telemetry;
pub mod webhooks;

// The rules, the codes, the cursors and the merchants' files live in crates/core; here they keep
// the paths the rest of the service names them by.
pub use storefront_core::{codes, domain, pagination, wire_enum};

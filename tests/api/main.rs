//! The one integration-test binary: the real server over HTTP.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests may panic: that is how they fail

mod categories;
mod create_batch;
mod create_rules;
mod helpers;
mod import;
mod postgres;
mod process;
mod properties;
mod request;

//! The one integration-test binary: the real server over HTTP.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests may panic: that is how they fail

mod categories;
mod changes;
mod connections;
mod crash;
mod create_batch;
mod create_rules;
mod deliveries;
mod density;
mod docs;
mod dry_run;
mod event_waits;
mod events;
mod helpers;
mod import;
mod limits;
mod location_list;
mod migration;
mod postgres;
mod process;
mod properties;
mod push;
mod replicas;
mod request;
mod search;
mod search_model;
mod shared_budget;
mod sheets;
mod sqlite_faults;
mod staying_up;
mod storefront;
mod validate_only;
mod webhooks;
mod widget;

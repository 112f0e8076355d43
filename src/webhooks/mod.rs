//! Delivering events to the merchants' endpoints: signed (`sign`), only to public addresses
//! (`address`), one HTTP attempt at a time (`send`, its failures said in words by `failure`), by
//! the worker (`worker`, looking at whose endpoints `looks` says), whose results become a settle
//! plan (`settle`) written in batches.
//!
//! The worker claims windows of endpoints' fresh events and retries due, in the name of a random
//! token of its own: the claims expire unless it extends them, so with several instances each
//! attempt is made by one, and a dead instance's are taken over. Whom a claim serves, and how many
//! attempts of each endpoint and merchant run at once, is the fair scheduler's (`places`): a slow
//! or dead endpoint holds a few places of its own, never another's, and no request's.

pub mod address;
pub mod attempt;
pub mod by_hand;
pub mod config;
pub mod failure;
pub mod looks;
mod pending;
pub mod places;
pub mod send;
pub mod settle;
pub mod sign;
pub mod worker;

pub use self::config::{Clock, SystemClock, WebhookSettings};
pub use self::send::Transport;
pub use self::worker::deliver;

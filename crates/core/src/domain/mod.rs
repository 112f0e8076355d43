//! The domain: what a location and a category are, and every rule about them. Knows nothing of
//! HTTP or SQL.

pub mod category;
pub mod cells;
pub mod event;
pub mod field_error;
pub mod geo;
pub mod ids;
pub mod import;
pub mod json;
pub mod key;
pub mod location;
pub mod schedule;
pub mod webhook;
pub mod wire;

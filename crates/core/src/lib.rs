//! The service's rules and the files merchants send, with nothing of HTTP, SQL or a runtime: what
//! a location, a category, an event and a key are and every rule about them (`domain`), every code
//! the service answers with (`codes`), the lists' signed cursors (`pagination`), and files as
//! programs write them and a location's row in them (`client::file`, `client::table`). The
//! service's crate builds on it; the fuzz targets drive it alone, without the server's crates.

pub mod client;
pub mod codes;
pub mod domain;
pub mod pagination;

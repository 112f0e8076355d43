//! What the merchant's side reads and writes without the service: files as programs write them
//! (`file`), and a location's row in them (`table`). The commands that talk to the service are in
//! the service's crate.

pub mod file;
pub mod table;

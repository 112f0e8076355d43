//! The HTTP layer: thin handlers over the domain and the store.

pub mod assets;
pub mod body;
pub mod categories;
pub mod changes;
pub mod console;
pub mod cors;
pub mod error;
pub mod event_schemas;
pub mod events;
pub mod extract;
pub mod gate;
pub mod import_schemas;
pub mod imports;
pub mod key_schemas;
pub mod keys;
pub mod locations;
pub mod openapi;
pub mod ops;
pub mod paging;
pub mod redelivery;
pub mod request_id;
mod rules_doc;
pub mod schemas;
pub mod search;
pub mod search_schemas;
pub mod webhooks;
pub mod widget;

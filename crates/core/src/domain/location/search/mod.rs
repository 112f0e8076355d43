//! A buyer's search: which of the merchant's `ACTIVE` locations can serve an order
//! near a point, nearest first. The stores fetch; everything is decided here, once.
//!
//! **The walk.** A search reads rings around the buyer, each the key ranges of a covering
//! ([`crate::domain::cells::cover`]) of the distances `inner < distance_m ≤ outer`, until the page
//! is full: once `limit + 1` matches lie within `outer`, every location nearer than the last of them
//! has been seen, so the page and `has_next` are exact and nothing farther is read. The first ring
//! is small (an index in memory sizes it by how densely its entries lie around the buyer); each
//! next one is sized from the matches found so far (the area that should hold the page, with a
//! margin), so in a dense city a page is one or two rings of a few hundred metres and in a sparse
//! one a few wider rings. The filters are tested inside the index scan (the stores'
//! SQL tests the flags and sorted limits the index holds, [`IndexTest`]) and the opening hours here,
//! so a filter that few locations pass widens the walk instead of emptying a page: every match
//! within the radius is reachable by paging.
//!
//! **Pages.** A page ends at the `(distance_m, seq)` of its last result; the next walk starts at
//! that distance and skips what is not after it, so a page deep in a walk reads the ring where it
//! starts, not everything nearer. What a walk costs is bounded by the locations within `radius_m`
//! of the buyer that pass the index's test (at most the density limit over the disk), and by at
//! most [`MAX_RINGS`] rings of [`RING_CELLS`] ranges each.

mod cache_lines;
mod density;
mod kept_hours;
pub mod key;
pub mod memory;
mod page;
mod query;
mod walk;

pub use page::SearchPage;
pub use query::{
    Axis, DEFAULT_LIMIT, DEFAULT_RADIUS_M, Hit, IndexTest, LocalTime, MAX_LIMIT, MAX_RADIUS_M, MAX_RINGS, Near, Parcel,
    RING_CELLS, Radius, SearchFilter, SearchQuery,
};
pub use walk::{Ring, Walk};

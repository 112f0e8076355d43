//! Rate limiting: a keyed GCRA limiter (`local`), one per
//! budget: the merchant's and its storefront keys' (keyed by merchant), and the 401 budget of a
//! client address (`"unauthenticated"`). Where instances share a database, the merchants' budgets
//! are shared by them all (`shared`); a [`Budget`] is either kind.
//!
//! Every authenticated `/v1` request that is not refused spends one unit of its merchant's
//! budget. The answer carries the IETF httpapi draft's headers:
//! `RateLimit-Policy: "<policy>";q=<burst>;w=<seconds to refill the burst>` and
//! `RateLimit: "<policy>";r=<units left>;t=<seconds until one more unit>` (whole seconds, rounded
//! up). `t` is read from the state the check wrote: when `r + 1` units would conform.
//! Idle merchants' state is dropped by `forget_idle`, called periodically, so memory does not
//! grow with the number of merchants ever seen.
//!
//! `quota` holds what both kinds share (the configured rate, a budget's size, the headers), `local`
//! the limiter of this instance, `shared` the budget kept in the store's ledger.

mod local;
mod quota;
pub mod shared;

use std::sync::Arc;

pub use local::RateLimits;
pub use quota::{Headers, Quota, Rate, Refusal};
use shared::{Ledger, Peers, SharedBudget};

/// Where budgets are shared: the ledger that keeps them and the instances sharing it.
#[derive(Clone)]
pub struct Sharing {
    pub ledger: Arc<dyn Ledger>,
    pub peers: Arc<Peers>,
}

/// A merchant budget: this instance's own, or shared with every instance on the database.
pub enum Budget {
    Local(RateLimits<i64>),
    Shared(SharedBudget),
}

impl Budget {
    /// The budget `policy` of `rate` and `burst`: shared where `sharing` says so, else this
    /// instance's own.
    pub fn new(policy: &'static str, rate: Rate, burst: u32, sharing: Option<&Sharing>) -> Budget {
        match (Quota::of(rate, burst), sharing) {
            (Some(quota), Some(sharing)) => Budget::Shared(SharedBudget::new(
                policy,
                quota,
                Arc::clone(&sharing.ledger),
                Arc::clone(&sharing.peers),
            )),
            _ => Budget::Local(RateLimits::new(policy, rate, burst)),
        }
    }

    /// Spends one unit of `key`'s budget, or refuses. `None` when limiting is off.
    pub async fn check(&self, key: i64) -> Option<Result<Headers, Refusal>> {
        match self {
            Budget::Local(limits) => limits.check(&key),
            Budget::Shared(shared) => Some(shared.check(key).await),
        }
    }

    /// Every second: gives back what a shared budget holds for merchants gone quiet.
    pub async fn settle(&self) {
        if let Budget::Shared(shared) = self {
            shared.settle().await;
        }
    }

    /// Now and then: forgets merchants whose local budget is full again.
    pub fn forget_idle(&self) {
        if let Budget::Local(limits) = self {
            limits.forget_idle();
        }
    }
}

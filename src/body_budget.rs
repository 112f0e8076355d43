//! The memory a server sets aside for request bodies and their parsed forms:
//! one set of budgets per served application, in its state, so that servers in one process (the
//! tests') never share them.
//!
//! A body reserves its declared size (else the limit) whole, first from its merchant's quarter of
//! the body budget, then from the server's, each at once: a body never holds part of a budget
//! while it waits for more, so bodies cannot starve one another. One merchant's bodies in flight
//! thus hold at most a quarter of the budget: a merchant that drips sixteen 8 MiB bodies holds
//! 16 MiB and waits for its own quarter, never for the others'.

use std::sync::Arc;

use dashmap::DashMap;
use tokio::sync::{AcquireError, OwnedSemaphorePermit, Semaphore};

/// Budgets, in KiB: bodies being read or held, and their parsed forms.
const BODY_BUDGET_KIB: usize = 64 * 1024;
const PARSE_BUDGET_KIB: usize = 96 * 1024;

pub struct BodyBudgets {
    bodies: Arc<Semaphore>,
    parsed: Arc<Semaphore>,
    /// Each merchant's quarter of the body budget, while it has a body in flight.
    merchants: DashMap<i64, Arc<Semaphore>>,
}

impl Default for BodyBudgets {
    fn default() -> Self {
        BodyBudgets {
            bodies: Arc::new(Semaphore::new(BODY_BUDGET_KIB)),
            parsed: Arc::new(Semaphore::new(PARSE_BUDGET_KIB)),
            merchants: DashMap::new(),
        }
    }
}

/// A budget was closed (never, while the application lives).
#[derive(Debug, thiserror::Error)]
#[error("a request budget was closed")]
pub struct BudgetClosed;

impl From<AcquireError> for BudgetClosed {
    fn from(_: AcquireError) -> Self {
        BudgetClosed
    }
}

impl BodyBudgets {
    /// Room for a body of at most `bytes` of `merchant`'s: its quarter's permit (given back once
    /// the body is read) and the server's (held while the body and what is built from it live).
    pub async fn reading(
        &self,
        merchant: i64,
        bytes: usize,
    ) -> Result<(OwnedSemaphorePermit, OwnedSemaphorePermit), BudgetClosed> {
        let kib = bytes.div_ceil(1024).max(1);
        let quarter = Arc::clone(
            self.merchants
                .entry(merchant)
                .or_insert_with(|| Arc::new(Semaphore::new(BODY_BUDGET_KIB / 4)))
                .value(),
        );
        let mine = quarter
            .acquire_many_owned(permits(kib.min(BODY_BUDGET_KIB / 4)))
            .await?;
        let shared = Arc::clone(&self.bodies)
            .acquire_many_owned(permits(kib.min(BODY_BUDGET_KIB)))
            .await?;
        Ok((mine, shared))
    }

    /// Room for a parsed form of about `bytes` (at least 1 KiB, at most the whole budget).
    pub async fn parsing(&self, bytes: usize) -> Result<OwnedSemaphorePermit, BudgetClosed> {
        let kib = (bytes / 1024).clamp(1, PARSE_BUDGET_KIB);
        Ok(Arc::clone(&self.parsed).acquire_many_owned(permits(kib)).await?)
    }

    /// Forgets the quarters of merchants with no body in flight (periodic upkeep).
    pub fn forget_idle_merchants(&self) {
        self.merchants
            .retain(|_, quarter| Arc::strong_count(quarter) > 1 || quarter.available_permits() < BODY_BUDGET_KIB / 4);
    }
}

fn permits(kib: usize) -> u32 {
    u32::try_from(kib).unwrap_or(u32::MAX)
}

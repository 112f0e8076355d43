//! The attempts in flight from this instance, and who is served next: a fair share of a bound
//! set by memory, so that no endpoint and no merchant, however many and however broken its
//! receivers, holds back another's deliveries.
//!
//! - **The bound is memory's.** An attempt waits on the network, not on a core: it holds a socket
//!   and a few KiB of buffers and body. `PER_INSTANCE` of them cost tens of MiB at most, so the
//!   bound is high enough that hanging receivers fill it only when there are very many of them.
//! - **A share per merchant and per endpoint.** One merchant holds at most `PER_MERCHANT` places
//!   (a quarter: at least four merchants' worth of hanging receivers are needed to fill the
//!   instance), one endpoint at most `PER_ENDPOINT`, attempts made by hand (tests, resends)
//!   included.
//! - **A dead receiver costs one place.** An endpoint's automatic attempts run at most `limit` at
//!   once: halved (down to 1) whenever an attempt gets no answer in time or no connection, one
//!   more (up to `PER_ENDPOINT`) whenever one is answered, however it is answered.
//! - **Healthy first, then the least served.** When the store offers endpoints with work to claim,
//!   [`Places::choose`] serves those that are not failing before those that are, and among them
//!   the merchant with the fewest attempts in flight first (counting those just chosen), so that
//!   when places are scarce the next one freed goes to whoever has least, never to the backlog
//!   that holds the most.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio::sync::Notify;
use tokio::time::Instant;

pub use crate::domain::webhook::PER_ENDPOINT;
pub use crate::store::webhook_api::Candidate;

/// Most attempts in flight on one instance. Each holds a connection and its buffers (tens of KiB
/// with TLS): the bound keeps memory and open files to a few tens of MiB and a thousand sockets.
pub const PER_INSTANCE: usize = 1024;
/// Most attempts of one merchant in flight on one instance: a quarter of all.
pub const PER_MERCHANT: usize = PER_INSTANCE / 4;

/// One endpoint's attempts in flight, and how many of its automatic ones may run at once.
#[derive(Clone, Copy, Debug)]
struct Lane {
    merchant_pk: i64,
    in_flight: usize,
    limit: usize,
}

#[derive(Default)]
struct Book {
    total: usize,
    /// Endpoints with attempts in flight, or whose limit is below `PER_ENDPOINT`.
    lanes: HashMap<String, Lane>,
    /// Merchants with attempts in flight.
    merchants: HashMap<i64, usize>,
    /// Merchants an endpoint of which has had its last place given back since the worker last
    /// asked: while it held one, no window of it was looked for.
    freed: HashSet<i64>,
}

impl Book {
    fn limit(&self, endpoint: &str) -> usize {
        self.lanes.get(endpoint).map_or(PER_ENDPOINT, |l| l.limit)
    }

    fn in_flight(&self, endpoint: &str) -> usize {
        self.lanes.get(endpoint).map_or(0, |l| l.in_flight)
    }

    fn merchant(&self, merchant_pk: i64) -> usize {
        self.merchants.get(&merchant_pk).copied().unwrap_or(0)
    }

    /// How many places `endpoint` may take now, up to `want`.
    fn room(&self, endpoint: &str, merchant_pk: i64, want: usize) -> usize {
        want.min(PER_ENDPOINT.saturating_sub(self.in_flight(endpoint)))
            .min(PER_MERCHANT.saturating_sub(self.merchant(merchant_pk)))
            .min(PER_INSTANCE.saturating_sub(self.total))
    }

    fn take(&mut self, endpoint: &str, merchant_pk: i64, n: usize) {
        if n == 0 {
            return;
        }
        self.total += n;
        *self.merchants.entry(merchant_pk).or_default() += n;
        let lane = self.lanes.entry(endpoint.to_owned()).or_insert(Lane {
            merchant_pk,
            in_flight: 0,
            limit: PER_ENDPOINT,
        });
        lane.in_flight += n;
        lane.merchant_pk = merchant_pk;
    }

    fn give_back(&mut self, endpoint: &str, n: usize) {
        let Some(lane) = self.lanes.get_mut(endpoint) else {
            return;
        };
        let n = n.min(lane.in_flight);
        lane.in_flight -= n;
        self.total = self.total.saturating_sub(n);
        let merchant_pk = lane.merchant_pk;
        if lane.in_flight == 0 {
            self.freed.insert(merchant_pk);
            if lane.limit == PER_ENDPOINT {
                self.lanes.remove(endpoint);
            }
        }
        if let Some(held) = self.merchants.get_mut(&merchant_pk) {
            *held = held.saturating_sub(n);
            if *held == 0 {
                self.merchants.remove(&merchant_pk);
            }
        }
    }
}

/// The places taken, by endpoint and merchant, and the endpoints' limits.
#[derive(Default)]
pub struct Places {
    book: Mutex<Book>,
    freed: Notify,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Places {
    /// How many places are free, and the endpoints with any taken (no window of theirs is
    /// claimed: their places are in use).
    pub fn free_and_busy(&self) -> (usize, Vec<String>) {
        let book = lock(&self.book);
        let busy = book
            .lanes
            .iter()
            .filter(|(_, lane)| lane.in_flight > 0)
            .map(|(id, _)| id.clone())
            .collect();
        (PER_INSTANCE.saturating_sub(book.total), busy)
    }

    /// The merchants an endpoint of which is free again since the last call (`Book::freed`).
    pub fn take_freed(&self) -> HashSet<i64> {
        std::mem::take(&mut lock(&self.book).freed)
    }

    /// How many places are taken in all.
    pub fn taken(&self) -> usize {
        lock(&self.book).total
    }

    /// Chooses whom to serve among `candidates` (endpoints with work, in the store's order), at
    /// most `most` of them, and takes their places at once: for each candidate, the places it got
    /// (0: not chosen). Endpoints not failing come first; then, one at a time, the candidate of the
    /// merchant with the fewest places taken (those just taken included), the store's order
    /// breaking ties; each gets up to its limit, as far as its merchant's share and the instance's
    /// bound allow.
    pub fn choose(&self, candidates: &[Candidate], most: usize) -> Vec<usize> {
        let mut book = lock(&self.book);
        let mut granted = vec![0; candidates.len()];
        let mut open: Vec<usize> = (0..candidates.len())
            .filter(|&i| book.in_flight(&candidates[i].webhook_id) == 0)
            .collect();
        let mut chosen = 0;
        while chosen < most && book.total < PER_INSTANCE {
            let next = open.iter().enumerate().min_by_key(|&(_, &i)| {
                let c = &candidates[i];
                (c.failing, book.merchant(c.merchant_pk), i)
            });
            let Some((at, &i)) = next else { break };
            open.swap_remove(at);
            let c = &candidates[i];
            let n = book.room(&c.webhook_id, c.merchant_pk, book.limit(&c.webhook_id));
            if n == 0 {
                continue;
            }
            book.take(&c.webhook_id, c.merchant_pk, n);
            granted[i] = n;
            chosen += 1;
        }
        granted
    }

    /// Takes up to `want` places of `endpoint` as far as the bounds allow, at least one (for
    /// what was claimed without being chosen here); how many were taken.
    pub fn take(&self, endpoint: &str, merchant_pk: i64, want: usize) -> usize {
        let mut book = lock(&self.book);
        let n = book.room(endpoint, merchant_pk, want.min(book.limit(endpoint))).max(1);
        book.take(endpoint, merchant_pk, n);
        n
    }

    /// Gives back `n` places of `endpoint`, and wakes whoever waits for one.
    pub fn give_back(&self, endpoint: &str, n: usize) {
        lock(&self.book).give_back(endpoint, n);
        self.freed.notify_waiters();
        self.freed.notify_one();
    }

    /// How an automatic attempt of `endpoint` ended: answered (whatever the status) raises its
    /// limit by one, not answered in time (or not connected) halves it, never below one.
    pub fn answered(&self, endpoint: &str, merchant_pk: i64, answered: bool) {
        let mut book = lock(&self.book);
        let lane = book.lanes.entry(endpoint.to_owned()).or_insert(Lane {
            merchant_pk,
            in_flight: 0,
            limit: PER_ENDPOINT,
        });
        lane.limit = if answered {
            (lane.limit + 1).min(PER_ENDPOINT)
        } else {
            (lane.limit / 2).max(1)
        };
        if lane.in_flight == 0 && lane.limit == PER_ENDPOINT {
            book.lanes.remove(endpoint);
        }
    }

    /// Resolves when places are given back (or soon after: a wake-up may be spurious).
    pub async fn freed(&self) {
        self.freed.notified().await;
    }

    /// One place of `endpoint` for an attempt made by hand, waiting until `until` at most for
    /// one to be given back; none when the bounds held it off that long. An attempt by hand is
    /// not held to the endpoint's limit (a person checks a receiver the schedule finds slow), only
    /// to `PER_ENDPOINT` and its merchant's share.
    pub async fn wait_for_one(self: &Arc<Self>, endpoint: &str, merchant_pk: i64, until: Instant) -> Option<Place> {
        loop {
            let freed = self.freed.notified();
            tokio::pin!(freed);
            freed.as_mut().enable();
            {
                let mut book = lock(&self.book);
                if book.room(endpoint, merchant_pk, 1) == 1 {
                    book.take(endpoint, merchant_pk, 1);
                    return Some(Place {
                        places: Arc::clone(self),
                        endpoint: endpoint.to_owned(),
                    });
                }
            }
            if tokio::time::timeout_at(until, freed).await.is_err() {
                return None;
            }
        }
    }
}

/// A place taken by hand, given back when dropped.
pub struct Place {
    places: Arc<Places>,
    endpoint: String,
}

impl Drop for Place {
    fn drop(&mut self) {
        self.places.give_back(&self.endpoint, 1);
    }
}

/// `webhook_attempts_in_flight`: one more while an attempt is being made, one less when it ends.
pub struct InFlight;

impl InFlight {
    pub fn start() -> InFlight {
        metrics::gauge!("webhook_attempts_in_flight").increment(1.0);
        InFlight
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        metrics::gauge!("webhook_attempts_in_flight").decrement(1.0);
    }
}

#[cfg(test)]
#[path = "places_tests.rs"]
mod tests;

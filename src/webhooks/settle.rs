//! What a batch of attempts does to the store, decided once above both engines: the settle
//! plan, the webhooks' policy (retries, a 410, the failing clock). Each engine only writes it, in
//! one transaction.
//!
//! The rules, per endpoint, its attempts taken in the order they were made:
//! - every attempt is recorded;
//! - a delivered attempt clears the endpoint's failing clock, a failed one starts it unless it is
//!   running: after the batch the clock is cleared, started at the first failure after the last
//!   delivery, or (no delivery in the batch) started at the first failure if it was not running;
//! - a 410 disables the endpoint (`gone`); an endpoint whose clock, after the batch, has run for
//!   `disable_after` by its last attempt is disabled (`failing`); a disabled endpoint's pending
//!   deliveries are all dropped and none of its attempts is retried;
//! - otherwise a failed attempt is retried on the schedule (at least a capped `Retry-After`), or
//!   given up past it; a delivered or given-up retry row is deleted;
//! - a window moves the endpoint's `delivered_through` to where it was settled.
//!
//! What the plan cannot know (whether the claim still stands, whether the endpoint was deleted or
//! disabled meanwhile) the engines check as they write: deliveries and windows change only where
//! the owner still holds the claim, and no retry row is written for an endpoint that is not
//! enabled.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::domain::webhook::{DisabledReason, Outcome, RetrySchedule};
use crate::store::api::millis;
use crate::store::webhook_api::{Failing, Retry, SettlePlan, Settled, Settlement, Source};

/// The rules' settings: the retry schedule, and how long an endpoint may fail before it is
/// disabled.
#[derive(Clone, Debug)]
pub struct SettleRules<'a> {
    pub retry: &'a RetrySchedule,
    pub disable_after: Duration,
}

/// One attempt and where it came from.
struct Made {
    settled: Settled,
    from_window: Option<i64>,
}

/// The plan for a batch.
pub fn plan(batch: Vec<Settlement>, rules: &SettleRules<'_>) -> SettlePlan {
    let mut plan = SettlePlan::default();
    let mut by_endpoint: BTreeMap<String, Vec<Made>> = BTreeMap::new();
    for settlement in batch {
        let from_window = match &settlement.source {
            Source::Window {
                webhook_id,
                claimed_through,
                settled_through,
            } => {
                plan.windows
                    .push((webhook_id.clone(), *claimed_through, *settled_through));
                Some(*claimed_through)
            }
            Source::Retries => None,
        };
        for settled in settlement.attempts {
            by_endpoint
                .entry(settled.webhook_id.clone())
                .or_default()
                .push(Made { settled, from_window });
        }
    }
    let disable_after = millis(rules.disable_after);
    for (webhook_id, mut made) in by_endpoint {
        made.sort_by_key(|m| (m.settled.attempt.attempted_at_ms, m.settled.sequence));
        let failing = failing_clock(&made);
        let claimed_since = made.iter().filter_map(|m| m.settled.failing_since_ms).min();
        let since_after = match failing {
            Failing::Clear => None,
            Failing::Since(at) => Some(at),
            Failing::SinceUnlessSet(at) => Some(claimed_since.unwrap_or(at)),
        };
        let last_ended = made.iter().map(|m| m.settled.ended_at_ms).max().unwrap_or(0);
        let disabled = if made.iter().any(|m| m.settled.attempt.http_status == Some(410)) {
            Some(DisabledReason::Gone)
        } else if since_after.is_some_and(|since| last_ended.saturating_sub(since) >= disable_after) {
            Some(DisabledReason::Failing)
        } else {
            None
        };
        plan.failing.push((webhook_id.clone(), failing));
        if let Some(reason) = disabled {
            plan.disable.push((webhook_id.clone(), reason));
        }
        for Made { settled, from_window } in made {
            if disabled.is_none() {
                next_of(&settled, from_window, rules.retry, &mut plan);
            }
            plan.attempts.push((webhook_id.clone(), settled.attempt));
        }
    }
    plan
}

/// The endpoint's failing clock after its attempts (in the order made).
fn failing_clock(made: &[Made]) -> Failing {
    let mut clock = None::<Failing>;
    for m in made {
        let at = m.settled.attempt.attempted_at_ms;
        clock = Some(match (m.settled.attempt.outcome, clock) {
            (Outcome::Delivered, _) => Failing::Clear,
            (Outcome::Failed, None) => Failing::SinceUnlessSet(at),
            (Outcome::Failed, Some(Failing::Clear)) => Failing::Since(at),
            (Outcome::Failed, Some(running)) => running,
        });
    }
    clock.unwrap_or(Failing::Clear)
}

/// What becomes of one delivery of an endpoint that stays enabled.
fn next_of(s: &Settled, from_window: Option<i64>, schedule: &RetrySchedule, plan: &mut SettlePlan) {
    let a = &s.attempt;
    let retry_at = match a.outcome {
        Outcome::Delivered => None,
        Outcome::Failed => {
            let attempts = usize::try_from(a.attempt).unwrap_or(usize::MAX);
            schedule
                .next(attempts, s.retry_after, s.jitter)
                .map(|delay| s.ended_at_ms.saturating_add(millis(delay)))
        }
    };
    let retry = |at_ms| Retry {
        webhook_id: s.webhook_id.clone(),
        sequence: s.sequence,
        merchant_pk: s.merchant_pk,
        attempts: a.attempt,
        at_ms,
        appended_at_ms: s.appended_at_ms,
    };
    match (retry_at, from_window) {
        (Some(at), Some(claimed_through)) => plan.new_retries.push((retry(at), claimed_through)),
        (Some(at), None) => plan.rescheduled.push(retry(at)),
        // A window's delivered or given-up event needs nothing: the window moves past it.
        (None, Some(_)) => {}
        (None, None) => plan.done.push((s.webhook_id.clone(), s.sequence)),
    }
}

#[cfg(test)]
#[path = "settle_tests.rs"]
mod tests;

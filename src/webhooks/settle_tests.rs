//! The settle plan as a table: batches of results, and what they write.

use std::time::Duration;

use super::*;
use crate::domain::webhook::{Attempt, Trigger};

fn schedule() -> RetrySchedule {
    RetrySchedule(vec![Duration::from_secs(5), Duration::from_secs(300)])
}

fn rules(schedule: &RetrySchedule) -> SettleRules<'_> {
    SettleRules {
        retry: schedule,
        disable_after: Duration::from_secs(3600),
    }
}

/// An attempt of event `sequence` to `w`: its number, when it was made, its HTTP status (2xx:
/// delivered; none: no answer).
fn made(w: &str, sequence: i64, attempt: i64, at: i64, status: Option<i64>) -> Settled {
    let delivered = status.is_some_and(|s| (200..300).contains(&s));
    Settled {
        webhook_id: w.into(),
        merchant_pk: 7,
        appended_at_ms: 1,
        sequence,
        failing_since_ms: None,
        attempt: Attempt {
            id: 0,
            event_id: format!("e{sequence}"),
            sequence: Some(sequence),
            attempt,
            attempted_at_ms: at,
            outcome: if delivered { Outcome::Delivered } else { Outcome::Failed },
            http_status: status,
            error: (!delivered).then(|| "failed".to_owned()),
            duration_ms: 10,
            trigger: Trigger::Automatic,
        },
        retry_after: None,
        ended_at_ms: at + 10,
        jitter: 0.0,
    }
}

fn window(w: &str, through: i64, attempts: Vec<Settled>) -> Settlement {
    Settlement {
        source: Source::Window {
            webhook_id: w.into(),
            claimed_through: through,
            settled_through: Some(through),
        },
        attempts,
    }
}

fn retries(attempts: Vec<Settled>) -> Settlement {
    Settlement {
        source: Source::Retries,
        attempts,
    }
}

fn retry(w: &str, sequence: i64, attempts: i64, at_ms: i64) -> Retry {
    Retry {
        webhook_id: w.into(),
        sequence,
        merchant_pk: 7,
        attempts,
        at_ms,
        appended_at_ms: 1,
    }
}

#[test]
fn a_window_delivered_whole_moves_and_clears_the_clock() {
    let s = schedule();
    let p = plan(
        vec![window(
            "w",
            3,
            vec![made("w", 1, 1, 100, Some(204)), made("w", 3, 1, 101, Some(200))],
        )],
        &rules(&s),
    );
    assert_eq!(p.attempts.len(), 2);
    assert_eq!(p.windows, [("w".to_owned(), 3, Some(3))]);
    assert_eq!(p.failing, [("w".to_owned(), Failing::Clear)]);
    assert!(p.new_retries.is_empty() && p.rescheduled.is_empty() && p.done.is_empty() && p.disable.is_empty());
}

#[test]
fn a_window_s_failures_are_retried_from_when_each_ended() {
    let s = schedule();
    let p = plan(
        vec![window(
            "w",
            2,
            vec![made("w", 1, 1, 100, Some(500)), made("w", 2, 1, 200, None)],
        )],
        &rules(&s),
    );
    assert_eq!(
        p.new_retries,
        [(retry("w", 1, 1, 5110), 2), (retry("w", 2, 1, 5210), 2)]
    );
    assert_eq!(p.failing, [("w".to_owned(), Failing::SinceUnlessSet(100))]);
}

/// [delivered, failed]: the clock starts at the failure after the delivery (PostgreSQL kept an
/// old clock from the batch's last attempt alone, and could disable an endpoint that received).
#[test]
fn a_failure_after_a_delivery_restarts_the_clock_and_a_delivery_after_a_failure_clears_it() {
    let s = schedule();
    let mut old = made("w", 2, 1, 300, Some(500));
    old.failing_since_ms = Some(0);
    let p = plan(
        vec![window("w", 2, vec![made("w", 1, 1, 200, Some(204)), old])],
        &rules(&s),
    );
    assert_eq!(p.failing, [("w".to_owned(), Failing::Since(300))]);
    assert!(p.disable.is_empty(), "it received an event: not failing for an hour");

    let p = plan(
        vec![window(
            "w",
            2,
            vec![made("w", 2, 1, 300, Some(204)), made("w", 1, 1, 200, Some(500))],
        )],
        &rules(&s),
    );
    assert_eq!(
        p.failing,
        [("w".to_owned(), Failing::Clear)],
        "ordered by when they were made"
    );
}

#[test]
fn a_410_disables_retries_nothing_and_drops_the_rest() {
    let s = schedule();
    let p = plan(
        vec![
            window(
                "w",
                8,
                (1..=8)
                    .map(|n| made("w", n, 1, 100 + n, Some(if n == 1 { 410 } else { 500 })))
                    .collect(),
            ),
            retries(vec![made("w", 0, 2, 50, Some(500))]),
        ],
        &rules(&s),
    );
    assert_eq!(p.disable, [("w".to_owned(), DisabledReason::Gone)]);
    assert!(p.new_retries.is_empty() && p.rescheduled.is_empty() && p.done.is_empty());
    assert_eq!(p.attempts.len(), 9, "every attempt is recorded");
    assert_eq!(p.windows, [("w".to_owned(), 8, Some(8))]);
}

#[test]
fn an_endpoint_failing_past_the_bound_is_disabled_unless_it_delivered() {
    let s = schedule();
    let long = SettleRules {
        retry: &s,
        disable_after: Duration::from_millis(1000),
    };
    let mut failing = made("w", 1, 2, 2000, Some(500));
    failing.failing_since_ms = Some(900);
    let p = plan(vec![retries(vec![failing.clone()])], &long);
    assert_eq!(p.disable, [("w".to_owned(), DisabledReason::Failing)]);
    assert!(p.rescheduled.is_empty());

    let p = plan(vec![retries(vec![failing, made("w", 2, 2, 2001, Some(204))])], &long);
    assert!(p.disable.is_empty());
    assert_eq!(p.failing, [("w".to_owned(), Failing::Clear)]);
    assert_eq!(p.done, [("w".to_owned(), 2)]);
    assert_eq!(p.rescheduled, [retry("w", 1, 2, 2010 + 300_000)]);
}

#[test]
fn retries_are_rescheduled_or_done_and_given_up_past_the_schedule() {
    let s = schedule();
    let p = plan(
        vec![retries(vec![
            made("w", 1, 2, 100, Some(503)),
            made("w", 2, 3, 100, Some(503)),
            made("w", 3, 2, 100, Some(204)),
        ])],
        &rules(&s),
    );
    assert_eq!(p.rescheduled, [retry("w", 1, 2, 110 + 300_000)]);
    assert_eq!(p.done, [("w".to_owned(), 2), ("w".to_owned(), 3)]);
}

#[test]
fn retry_after_sets_the_least_delay_capped_at_the_schedule_s_longest() {
    let s = schedule();
    let mut a = made("w", 1, 1, 100, Some(429));
    a.retry_after = Some(Duration::from_secs(60));
    let mut b = made("w", 2, 1, 100, Some(503));
    b.retry_after = Some(Duration::from_secs(86_400 * 365));
    let p = plan(vec![window("w", 2, vec![a, b])], &rules(&s));
    assert_eq!(
        p.new_retries,
        [
            (retry("w", 1, 1, 110 + 60_000), 2),
            (retry("w", 2, 1, 110 + 300_000), 2)
        ]
    );
}

#[test]
fn a_window_cut_short_moves_only_through_what_it_attempted_and_endpoints_are_apart() {
    let s = schedule();
    let cut = Settlement {
        source: Source::Window {
            webhook_id: "a".into(),
            claimed_through: 9,
            settled_through: Some(4),
        },
        attempts: vec![made("a", 4, 1, 100, Some(204))],
    };
    let p = plan(
        vec![cut, window("b", 5, vec![made("b", 5, 1, 100, Some(410))])],
        &rules(&s),
    );
    assert_eq!(p.windows, [("a".to_owned(), 9, Some(4)), ("b".to_owned(), 5, Some(5))]);
    assert_eq!(p.disable, [("b".to_owned(), DisabledReason::Gone)]);
    assert_eq!(
        p.failing,
        [
            ("a".to_owned(), Failing::Clear),
            ("b".to_owned(), Failing::SinceUnlessSet(100))
        ]
    );
}

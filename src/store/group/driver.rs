//! The group commit's loop, once for both engines: begin, then for each request a savepoint armed
//! with the group's deadline, its write, the savepoint kept or rolled back; then commit, or roll
//! the whole group back when its deadline passed; and every request answered only after that.
//! An engine supplies the steps ([`Engine`]); the rule they follow is the module above's.
//!
//! Whatever goes wrong with the transaction itself (it cannot begin, a savepoint cannot be taken
//! or ended, the commit fails) answers every request written into it with that error and keeps
//! nothing of them; the requests not begun yet go into the next transaction.

use std::iter::Peekable;
use std::time::Instant;

use super::{GroupDeadline, Pending, SharedError};
use crate::domain::event::Change;
use crate::store::error::StoreError;
use crate::store::event_signal::EventSignal;

/// Why a commit failed: the server's answer, or no answer at all (it may have committed).
pub(crate) enum CommitFailed {
    Refused(SharedError),
    Unknown(SharedError),
}

/// What an engine does for the driver. Every step but `write` is about the transaction; an error
/// of one means the transaction is lost.
pub(crate) trait Engine {
    /// A request's write as this engine queues it.
    type Job: Pending;

    /// Begins the group's transaction (taking whatever lock serialises its writer).
    async fn begin(&mut self) -> Result<(), SharedError>;
    /// Bounds the statements from here on by `deadline` and opens a savepoint for one request.
    async fn savepoint(&mut self, deadline: Instant) -> Result<(), SharedError>;
    /// Does the request's work inside the savepoint; whether it succeeded.
    async fn write(&mut self, job: &mut Self::Job) -> bool;
    /// Appends the events of `changes` to the merchant's log, numbered after its last
    /// without gaps, inside the request's savepoint.
    async fn append(&mut self, merchant_pk: i64, changes: &[Change]) -> Result<(), StoreError>;
    /// Ends the savepoint: its work kept, or rolled back.
    async fn end_savepoint(&mut self, keep: bool) -> Result<(), SharedError>;
    async fn commit(&mut self) -> Result<(), CommitFailed>;
    /// Rolls the transaction back (nothing of the group is stored); never fails the group more.
    async fn rollback(&mut self);
    /// Test hook: the request just written stalls inside the transaction, when a test asked
    /// for it (debug builds only; see `WriteDelay`).
    async fn stall(&mut self);
}

/// How a group ended, for an engine that reports its health (SQLite's readiness).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ended {
    /// Committed, and every request's write succeeded.
    Healthy,
    /// The transaction failed, or a request's write did.
    Failed,
    /// Rolled back at its deadline: says nothing of the database.
    RolledBack,
}

/// Writes every job of `jobs`, in as many transactions as the deadline rule needs, and answers
/// each; how the last group ended (`None`: no job was begun). After each commit, `signal` wakes
/// the waiting feeds of the merchants whose events it stored (`super::after_commit`).
pub(crate) async fn write_all<E: Engine>(engine: &mut E, jobs: Vec<E::Job>, signal: &EventSignal) -> Option<Ended> {
    let mut jobs = jobs.into_iter().peekable();
    let mut last = None;
    while jobs.peek().is_some() {
        last = commit_group(engine, &mut jobs, signal).await.or(last);
    }
    last
}

/// Writes jobs of `jobs` in one transaction until they run out or the group's deadline is near,
/// and answers each (see the module's notes).
async fn commit_group<E: Engine, I: Iterator<Item = E::Job>>(
    engine: &mut E,
    jobs: &mut Peekable<I>,
    signal: &EventSignal,
) -> Option<Ended> {
    let mut deadline = GroupDeadline::default();
    let mut written: Vec<E::Job> = Vec::new();
    let mut failed = false;
    // Commit what the group has rather than begin one more request with too little left,
    // counting that request's own deadline: a late one goes into the next group alone.
    while let Some(next) = jobs.peek() {
        let mut with_next = deadline;
        with_next.include(next.deadline());
        if !written.is_empty() && with_next.nearly_due() {
            break;
        }
        let Some(mut job) = jobs.next() else { break };
        if job.abandoned() {
            job.fail(StoreError::DeadlinePassed);
            job.finish(Ok(()));
            continue;
        }
        if written.is_empty()
            && let Err(e) = engine.begin().await
        {
            // Nothing can be written now: every request waiting is told so.
            engine.rollback().await;
            fail_all(std::iter::once(job).chain(jobs), e);
            return Some(Ended::Failed);
        }
        // Re-armed for every request: one that joins with an earlier deadline brings it forward.
        let armed = deadline.with(job.deadline());
        if let Err(e) = engine.savepoint(armed).await {
            written.push(job);
            return Some(lose(engine, written, e).await);
        }
        deadline.include(job.deadline());
        let mut ok = engine.write(&mut job).await;
        // The outbox: the events of what the request changed, in its savepoint, when it is kept.
        if ok && job.persist().commits() {
            let (merchant_pk, changes) = job.changes();
            if !changes.is_empty()
                && let Err(e) = engine.append(merchant_pk, changes).await
            {
                job.fail(e);
                ok = false;
            }
        }
        engine.stall().await;
        let keep = ok && job.persist().commits();
        failed |= !ok;
        let ended = engine.end_savepoint(keep).await;
        written.push(job);
        if let Err(e) = ended {
            return Some(lose(engine, written, e).await);
        }
        if deadline.missed() {
            break;
        }
    }
    if written.is_empty() {
        return None;
    }
    if deadline.missed() {
        engine.rollback().await;
        for job in written {
            job.finish(Err(StoreError::DeadlinePassed));
        }
        return Some(Ended::RolledBack);
    }
    let committed = engine.commit().await;
    if committed.is_ok() {
        let kept = written
            .iter()
            .filter(|job| job.persist().commits())
            .map(|job| job.changes());
        super::after_commit(signal, kept);
    }
    let ended = if committed.is_ok() && !failed {
        Ended::Healthy
    } else {
        Ended::Failed
    };
    for job in written {
        job.finish(match &committed {
            Ok(()) => Ok(()),
            Err(CommitFailed::Unknown(e)) => Err(StoreError::OutcomeUnknown(Box::new(e.clone()))),
            Err(CommitFailed::Refused(e)) => Err(e.to_store()),
        });
    }
    Some(ended)
}

/// The transaction is lost: rolled back, and every request written into it answered `e`.
async fn lose<E: Engine>(engine: &mut E, written: Vec<E::Job>, e: SharedError) -> Ended {
    engine.rollback().await;
    fail_all(written, e);
    Ended::Failed
}

fn fail_all<J: Pending>(jobs: impl IntoIterator<Item = J>, e: SharedError) {
    for job in jobs {
        job.finish(Err(e.to_store()));
    }
}

#[cfg(test)]
mod tests {
    //! The driver's turns with a fake engine: what it is asked to do, and what each request hears.

    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    use tokio::sync::oneshot;

    use super::*;
    use crate::domain::location::Persist;
    use crate::store::group::{Queued, Written};

    type Job = Queued<bool, u32>;

    #[derive(Default)]
    struct Fake {
        log: Arc<Mutex<Vec<String>>>,
        fail_savepoint: bool,
        commit_unknown: bool,
        /// The append of the n-th request's events fails (1-based; 0: none does).
        fail_append: u32,
        next: u32,
    }

    impl Fake {
        fn say(&self, what: String) {
            self.log
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .push(what);
        }
    }

    impl Engine for Fake {
        type Job = Job;

        async fn begin(&mut self) -> Result<(), SharedError> {
            self.say("begin".into());
            Ok(())
        }

        async fn savepoint(&mut self, deadline: Instant) -> Result<(), SharedError> {
            let left = deadline.saturating_duration_since(Instant::now()).as_secs();
            self.say(format!("savepoint {left}s"));
            if self.fail_savepoint {
                return Err(SharedError::new(std::io::Error::other("savepoint refused")));
            }
            Ok(())
        }

        async fn write(&mut self, job: &mut Job) -> bool {
            self.next += 1;
            let ok = job.take_work().unwrap_or(false);
            let result = if ok {
                Ok(Written {
                    value: self.next,
                    changes: vec![change(self.next)],
                })
            } else {
                Err(StoreError::Unavailable)
            };
            job.done(result)
        }

        async fn append(&mut self, merchant_pk: i64, changes: &[Change]) -> Result<(), StoreError> {
            let ids: Vec<&str> = changes.iter().map(|c| c.location_id.as_str()).collect();
            self.say(format!("append {merchant_pk} {}", ids.join(",")));
            if self.fail_append == self.next {
                return Err(StoreError::Unavailable);
            }
            Ok(())
        }

        async fn end_savepoint(&mut self, keep: bool) -> Result<(), SharedError> {
            self.say(if keep { "release" } else { "rollback to" }.into());
            Ok(())
        }

        async fn commit(&mut self) -> Result<(), CommitFailed> {
            self.say("commit".into());
            if self.commit_unknown {
                return Err(CommitFailed::Unknown(SharedError::new(std::io::Error::other("gone"))));
            }
            Ok(())
        }

        async fn rollback(&mut self) {
            self.say("rollback".into());
        }

        async fn stall(&mut self) {}
    }

    /// The change the n-th write makes: the location `l{n}` created.
    fn change(n: u32) -> Change {
        Change {
            kind: crate::domain::event::EventType::Created,
            location_id: format!("l{n}"),
            merchant_location_id: None,
            version: 1,
            status: crate::domain::location::Status::Active,
            previous_status: None,
            at_ms: 0,
        }
    }

    fn job(secs: u64, persist: Persist, ok: bool) -> (Job, oneshot::Receiver<Result<u32, StoreError>>) {
        let (reply, answer) = oneshot::channel();
        let deadline = Instant::now() + Duration::from_secs(secs);
        (Queued::new(7, deadline, persist, ok, reply), answer)
    }

    /// Jobs of (seconds left, persist, whether the work succeeds), and where each is answered.
    #[allow(clippy::type_complexity)]
    fn jobs(specs: &[(u64, Persist, bool)]) -> (Vec<Job>, Vec<oneshot::Receiver<Result<u32, StoreError>>>) {
        specs.iter().map(|&(secs, persist, ok)| job(secs, persist, ok)).unzip()
    }

    /// The after-commit step: a commit that kept events wakes their merchant's waiting feeds; a
    /// `validate_only` group (nothing kept) and a failed commit wake none.
    #[tokio::test]
    async fn a_commit_that_kept_events_wakes_the_merchant_s_feeds_and_no_other_does() {
        use futures_util::FutureExt;
        let signal = Arc::new(EventSignal::default());
        let place = signal.wait_place(7).unwrap();
        for (persist, commit_unknown, wakes) in [
            (Persist::ValidateOnly, false, false),
            (Persist::Commit, true, false),
            (Persist::Commit, false, true),
        ] {
            let rung = place.notify().notified();
            tokio::pin!(rung);
            rung.as_mut().enable();
            let (group, _answers) = jobs(&[(30, persist, true)]);
            let mut fake = Fake {
                commit_unknown,
                ..Fake::default()
            };
            write_all(&mut fake, group, &signal).await;
            assert_eq!(
                rung.now_or_never().is_some(),
                wakes,
                "{persist:?}, commit unknown: {commit_unknown}"
            );
        }
    }

    fn log(fake: &Fake) -> Vec<String> {
        fake.log
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// What the engine was asked, the steps that `keep` keeps.
    fn asked(fake: &Fake, keep: impl Fn(&str) -> bool) -> Vec<String> {
        log(fake).into_iter().filter(|l| keep(l)).collect()
    }

    #[tokio::test]
    async fn each_request_is_armed_with_the_group_s_earliest_deadline_so_far() {
        use Persist::Commit as C;
        let mut fake = Fake::default();
        let (group, _answers) = jobs(&[(30, C, true), (10, C, true), (20, C, true)]);
        write_all(&mut fake, group, &EventSignal::default()).await;
        let armed = asked(&fake, |l| l.starts_with("savepoint"));
        // The second request's earlier deadline bounds its own statements and every later one's.
        assert!(armed[0] == "savepoint 29s" || armed[0] == "savepoint 30s", "{armed:?}");
        assert!(armed[1] == "savepoint 9s" || armed[1] == "savepoint 10s", "{armed:?}");
        assert_eq!(armed[2], armed[1]);
        let seen = log(&fake);
        assert_eq!(seen.first().map(String::as_str), Some("begin"));
        assert_eq!(seen.last().map(String::as_str), Some("commit"));
    }

    #[tokio::test]
    async fn a_failed_or_validate_only_write_is_rolled_back_alone_and_the_rest_commit() {
        let mut fake = Fake::default();
        let (group, answers) = jobs(&[
            (30, Persist::Commit, true),
            (30, Persist::Commit, false),
            (30, Persist::ValidateOnly, true),
        ]);
        assert_eq!(
            write_all(&mut fake, group, &EventSignal::default()).await,
            Some(Ended::Failed)
        );
        let [ra, rb, rc]: [_; 3] = answers.try_into().unwrap_or_else(|_| unreachable!());
        let ends = asked(&fake, |l| l == "release" || l == "rollback to");
        assert_eq!(ends, ["release", "rollback to", "rollback to"]);
        assert_eq!(ra.await.ok().and_then(Result::ok), Some(1));
        assert!(matches!(rb.await, Ok(Err(StoreError::Unavailable))));
        assert_eq!(
            rc.await.ok().and_then(Result::ok),
            Some(3),
            "validate_only answers its decision"
        );
    }

    /// The outbox rule: a kept write's events are appended in its own savepoint, before it is
    /// released; a failed or `validate_only` write appends none; an append that fails rolls back
    /// its request alone, which is answered with that error.
    #[tokio::test]
    async fn events_are_appended_in_the_savepoint_of_a_kept_write_only() {
        let mut fake = Fake {
            fail_append: 4,
            ..Fake::default()
        };
        let (group, answers) = jobs(&[
            (30, Persist::Commit, true),
            (30, Persist::Commit, false),
            (30, Persist::ValidateOnly, true),
            (30, Persist::Commit, true),
            (30, Persist::Commit, true),
        ]);
        write_all(&mut fake, group, &EventSignal::default()).await;
        let steps = asked(&fake, |l| {
            l.starts_with("append") || l == "release" || l == "rollback to" || l == "commit"
        });
        assert_eq!(
            steps,
            [
                "append 7 l1",
                "release",
                "rollback to",
                "rollback to",
                "append 7 l4",
                "rollback to",
                "append 7 l5",
                "release",
                "commit"
            ]
        );
        let answers: Vec<_> = futures_util::future::join_all(answers).await;
        assert!(
            matches!(answers[3], Ok(Err(StoreError::Unavailable))),
            "the failed append's request"
        );
        assert!(matches!(answers[4], Ok(Ok(5))));
    }

    /// What one request hears from a group on `fake`, and what the engine was asked.
    async fn one_request(mut fake: Fake) -> (Result<u32, StoreError>, Vec<String>) {
        let (a, ra) = job(30, Persist::Commit, true);
        write_all(&mut fake, vec![a], &EventSignal::default()).await;
        (ra.await.unwrap_or(Err(StoreError::Unavailable)), log(&fake))
    }

    #[tokio::test]
    async fn a_lost_savepoint_loses_the_transaction_and_an_unanswered_commit_is_outcome_unknown() {
        let (answer, asked) = one_request(Fake {
            fail_savepoint: true,
            ..Fake::default()
        })
        .await;
        assert!(matches!(answer, Err(StoreError::Backend(_))));
        assert!(asked.contains(&"rollback".to_owned()));
        let (answer, _) = one_request(Fake {
            commit_unknown: true,
            ..Fake::default()
        })
        .await;
        assert!(matches!(answer, Err(StoreError::OutcomeUnknown(_))));
    }

    #[tokio::test]
    async fn a_request_with_too_little_left_does_not_join_a_group_that_has_written() {
        let mut fake = Fake::default();
        let (a, ra) = job(30, Persist::Commit, true);
        let (reply, rb) = oneshot::channel();
        let late: Job = Queued::new(
            7,
            Instant::now() + Duration::from_millis(500),
            Persist::Commit,
            true,
            reply,
        );
        write_all(&mut fake, vec![a, late], &EventSignal::default()).await;
        let seen = log(&fake);
        let commits = seen.iter().filter(|l| *l == "commit").count();
        assert_eq!(
            commits, 2,
            "the first request committed before the late one began: {seen:?}"
        );
        assert_eq!(ra.await.ok().and_then(Result::ok), Some(1));
        assert_eq!(rb.await.ok().and_then(Result::ok), Some(2));
    }

    #[tokio::test]
    async fn a_request_past_its_deadline_is_not_begun() {
        let mut fake = Fake::default();
        let (reply, answer) = oneshot::channel();
        let past = Instant::now()
            .checked_sub(Duration::from_millis(1))
            .unwrap_or_else(Instant::now);
        let late: Job = Queued::new(7, past, Persist::Commit, true, reply);
        assert_eq!(write_all(&mut fake, vec![late], &EventSignal::default()).await, None);
        assert!(matches!(answer.await, Ok(Err(StoreError::DeadlinePassed))));
        assert!(log(&fake).is_empty(), "no transaction for nothing");
    }
}

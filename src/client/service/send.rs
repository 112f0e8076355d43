//! Sending one request of a push: its items in one body, sent again after a
//! 429 (within the total wait of `api::MAX_RATE_WAIT`), a refused connection, a 500 or a 408, and
//! after an unknown outcome (a timeout, a cut connection, a 503 `OUTCOME_UNKNOWN`) only for the
//! items that are safe to send again; and what became of each item.

use std::borrow::Cow;

use super::api::{Api, Attempt, Backoff};
pub(crate) use crate::client::apply::Sent;
use crate::client::outcome::ItemAnswer;
use crate::client::table::RowError;

/// What every chunk's task needs.
pub(crate) struct Context {
    pub(crate) api: Api,
    pub(crate) update: bool,
    pub(crate) retries: u32,
    /// `--dry-run`: every request with `validate_only`.
    pub(crate) dry_run: bool,
}

#[derive(serde::Deserialize)]
struct Answer {
    locations: Vec<ItemAnswer>,
}

/// Sends `items` (row index, item) to `path` in one request (with `validate_only` in a dry run),
/// again after a 429, a refused connection or a 500; after an unknown outcome, again only the
/// items `resendable` allows.
pub(crate) async fn send(
    context: &Context,
    path: &str,
    mut items: Vec<(usize, Cow<'_, str>)>,
    resendable: impl Fn(usize) -> bool,
) -> Vec<(usize, Sent)> {
    let mut out = Vec::with_capacity(items.len());
    let Context {
        api, retries, dry_run, ..
    } = context;
    let mut backoff = Backoff::new(*retries);
    while !items.is_empty() {
        // `{"locations":[...]}` around the items' own text.
        let mut body = Vec::with_capacity(items.iter().map(|(_, item)| item.len() + 1).sum::<usize>() + 16);
        body.extend_from_slice(b"{\"locations\":[");
        for (k, (_, item)) in items.iter().enumerate() {
            if k > 0 {
                body.push(b',');
            }
            body.extend_from_slice(item.as_bytes());
        }
        body.extend_from_slice(if *dry_run { b"],\"validate_only\":true}" } else { b"]}" });
        match api.attempt_json(path, body).await {
            Attempt::Answered(answer) => {
                let results = serde_json::from_slice::<Answer>(&answer).map_or_else(|_| Vec::new(), |a| a.locations);
                if results.len() == items.len() {
                    out.extend(items.drain(..).zip(results).map(|((i, _), r)| (i, Sent::Result(r))));
                } else {
                    let why = format!("the answer has {} results for {} items", results.len(), items.len());
                    out.extend(items.drain(..).map(|(i, _)| (i, Sent::Unknown(why.clone()))));
                }
            }
            Attempt::Wait(wait) => {
                if !backoff.wait_out(wait).await {
                    // A 429 processed nothing: the items were not stored.
                    let error = RowError::new("", "NOT_SENT", backoff.rate_limited());
                    out.extend(items.drain(..).map(|(i, _)| (i, Sent::Failed(error.clone()))));
                }
            }
            Attempt::Refused(e) => {
                let error = RowError::new(
                    "",
                    e.code,
                    format!("the request was refused ({}): {}", e.status, e.message),
                );
                out.extend(items.drain(..).map(|(i, _)| (i, Sent::Failed(error.clone()))));
            }
            Attempt::Unreachable(why) | Attempt::NotStored(why) => {
                if !backoff.pause().await {
                    let error = RowError::new("", "NOT_SENT", format!("not stored after retries: {why}"));
                    out.extend(items.drain(..).map(|(i, _)| (i, Sent::Failed(error.clone()))));
                }
            }
            Attempt::Unknown(why) => {
                let (again, unknown): (Vec<_>, Vec<_>) = items.drain(..).partition(|(i, _)| resendable(*i));
                out.extend(unknown.into_iter().map(|(i, _)| (i, Sent::Unknown(why.clone()))));
                items = again;
                if !items.is_empty() && !backoff.pause().await {
                    out.extend(items.drain(..).map(|(i, _)| (i, Sent::Unknown(why.clone()))));
                }
            }
        }
    }
    out
}

//! One chunk of a push, start to end: read back what is stored under its rows'
//! names (so that the outcome of a create that is answered by the retry rule is `unchanged`, and
//! of an update that changed nothing too), then create what is new, then, with `--update`, update
//! what differs. Where each row goes and how it ends is `client::outcome`'s; this sends the
//! chunk's items over HTTP and hands the answers to it.

use std::borrow::Cow;

use serde_json::{Value, json};

use crate::client::outcome::{self, Ended, Known, Route, Stored};
use crate::client::outcome::{Outcome, RowReport};
use crate::client::service::api::Failed;
use crate::client::service::send::{Context, Sent, send};
use crate::client::service::walk;
use crate::client::table::RowError;
use crate::client::table::rows::Row;

/// One chunk, start to end: its rows' outcomes in row order.
pub(super) async fn push_chunk(context: &Context, rows: Vec<Row>) -> Vec<RowReport> {
    let known = match stored(context, &rows).await {
        Ok(found) => found,
        Err(e) => {
            let error = RowError::new("", "NOT_SENT", format!("reading the stored locations failed: {e}"));
            let known = Known::default();
            return rows
                .iter()
                .map(|row| outcome::report(row, &known, (Outcome::Failed, None, vec![error.clone()])))
                .collect();
        }
    };
    let mut routes: Vec<Route> = rows
        .iter()
        .map(|row| outcome::route(row, context.update, &known))
        .collect();
    let mut results: Vec<Option<Ended>> = (0..rows.len()).map(|_| None).collect();

    let creates: Vec<(usize, Cow<'_, str>)> = routes
        .iter()
        .enumerate()
        .filter(|(_, r)| matches!(r, Route::Create))
        .map(|(i, _)| (i, Cow::Borrowed(rows[i].item.as_str())))
        .collect();
    for (i, sent) in send(context, "/v1/location/create", creates, |i| {
        context.dry_run || rows[i].merchant_location_id.is_some()
    })
    .await
    {
        results[i] = match sent {
            Sent::Result(answer) => match outcome::after_create(&rows[i], context.update, &known, answer) {
                Some(ended) => Some(ended),
                None => {
                    routes[i] = Route::Update { by_id: false };
                    continue;
                }
            },
            other => Some(not_answered(other)),
        };
    }

    let updates: Vec<(usize, Cow<'_, str>)> = routes
        .iter()
        .enumerate()
        .filter_map(|(i, r)| match r {
            Route::Update { by_id } => Some((i, Cow::Owned(outcome::update_item(&rows[i], *by_id)))),
            _ => None,
        })
        .collect();
    for (i, sent) in send(context, "/v1/location/update", updates, |_| true).await {
        let by_id = matches!(routes[i], Route::Update { by_id: true });
        results[i] = Some(match sent {
            Sent::Result(answer) => outcome::after_update(&rows[i], by_id, &known, answer),
            other => not_answered(other),
        });
    }

    rows.iter()
        .zip(routes)
        .zip(results)
        .map(|((row, route), result)| {
            let ended = match (route, result) {
                (_, Some(result)) => result,
                (Route::Done(outcome, errors), None) => (outcome, None, errors),
                // Every sent row has a result; a row without one is reported as not sent.
                (_, None) => (Outcome::Failed, None, vec![RowError::new("", "NOT_SENT", "not sent")]),
            };
            outcome::report(row, &known, ended)
        })
        .collect()
}

/// How a row ended whose request got no answer for it.
fn not_answered(sent: Sent) -> Ended {
    match sent {
        Sent::Unknown(why) => (Outcome::Unknown, None, vec![RowError::new("", "UNKNOWN", why)]),
        Sent::Failed(error) => (Outcome::Failed, None, vec![error]),
        Sent::Result(_) => (Outcome::Failed, None, vec![RowError::new("", "NOT_SENT", "not sent")]),
    }
}

/// What is stored under the chunk's names: by `merchant_location_id`, and (with `--update`) by
/// `location_id`.
async fn stored(context: &Context, rows: &[Row]) -> Result<Known, Failed> {
    let mlids: Vec<&str> = rows.iter().filter_map(|r| r.merchant_location_id.as_deref()).collect();
    let ids: Vec<&str> = if context.update {
        rows.iter().filter_map(Row::location_id_str).collect()
    } else {
        Vec::new()
    };
    let mut known = Known::default();
    for (key, names) in [("merchant_location_ids", mlids), ("location_ids", ids)] {
        if names.is_empty() {
            continue;
        }
        let filter = json!({ key: names });
        walk(&context.api, &filter, context.retries, |raw| {
            let record: Value = serde_json::from_str(raw.get()).unwrap_or_default();
            let stored = Stored {
                location_id: record["location_id"].as_str().unwrap_or_default().to_owned(),
                version: record["version"].as_u64().unwrap_or(0),
                archived: record["status"] == "ARCHIVED",
            };
            if key == "location_ids" {
                known.by_id.insert(stored.location_id.clone(), stored);
            } else if let Some(mlid) = record["merchant_location_id"].as_str() {
                known.by_mlid.insert(mlid.to_owned(), stored);
            }
            Ok(())
        })
        .await?;
    }
    Ok(known)
}

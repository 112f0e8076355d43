//! One chunk of a merchant's file applied, whoever applies it: read back what is stored under the
//! rows' names (so that the outcome of a create answered by the retry rule is `unchanged`, and of
//! an update that changed nothing too), then create what is new, then, when updating, update what
//! differs. Where each row goes and how it ends is `outcome`'s; an [`Applier`] does the three
//! steps: push over HTTP, the service's import inside one transaction.

use std::borrow::Cow;

use super::outcome::{self, Ended, ItemAnswer, Known, Outcome, Route, RowReport};
use super::table::RowError;
use super::table::rows::Row;
use crate::domain::ids;

/// What became of one item sent to create or update.
pub enum Sent {
    /// The item's result, as the service answers it.
    Result(ItemAnswer),
    /// The request's outcome is unknown and the item may not be sent again.
    Unknown(String),
    /// The request was refused, or not processed within the retries.
    Failed(RowError),
}

/// The three steps of a chunk. An error of a step ends the chunk (`apply_chunk` answers it).
pub(crate) trait Applier {
    type Error;

    /// What is stored under these `merchant_location_id`s and (when updating) `location_id`s.
    async fn stored(&mut self, mlids: &[&str], ids: &[&str]) -> Result<Known, Self::Error>;

    /// Creates the items (row index, item as JSON text), in order; what became of each. `rows`
    /// are the chunk's rows, which the indexes name.
    async fn create(
        &mut self,
        items: Vec<(usize, Cow<'_, str>)>,
        rows: &[Row],
    ) -> Result<Vec<(usize, Sent)>, Self::Error>;

    /// Updates the locations the items name (each with its `expected_version` when the row has a
    /// version); what became of each.
    async fn update(&mut self, items: Vec<(usize, Cow<'_, str>)>) -> Result<Vec<(usize, Sent)>, Self::Error>;
}

/// The names the chunk's rows are read back by: their `merchant_location_id`s, and (when
/// updating) their `location_id`s; not those that can name nothing (`ids::may_name`).
pub fn names(rows: &[Row], update: bool) -> (Vec<&str>, Vec<&str>) {
    let mlids = rows
        .iter()
        .filter_map(|r| r.merchant_location_id.as_deref())
        .filter(|id| ids::may_name(id))
        .collect();
    let location_ids = if update {
        rows.iter()
            .filter_map(Row::location_id_str)
            .filter(|id| ids::may_name(id))
            .collect()
    } else {
        Vec::new()
    };
    (mlids, location_ids)
}

/// One chunk, start to end: its rows' outcomes in row order. The rows of a chunk name different
/// locations (a row naming one already named waits for the next chunk).
pub(crate) async fn apply_chunk<A: Applier>(
    applier: &mut A,
    rows: &[Row],
    update: bool,
) -> Result<Vec<RowReport>, A::Error> {
    let (mlids, ids) = names(rows, update);
    let known = applier.stored(&mlids, &ids).await?;
    let mut routes: Vec<Route> = rows.iter().map(|row| outcome::route(row, update, &known)).collect();
    let mut results: Vec<Option<Ended>> = (0..rows.len()).map(|_| None).collect();

    let creates: Vec<(usize, Cow<'_, str>)> = routes
        .iter()
        .enumerate()
        .filter(|(_, r)| matches!(r, Route::Create))
        .map(|(i, _)| (i, Cow::Borrowed(rows[i].item.as_str())))
        .collect();
    if !creates.is_empty() {
        for (i, sent) in applier.create(creates, rows).await? {
            results[i] = match sent {
                Sent::Result(answer) => match outcome::after_create(&rows[i], update, &known, answer) {
                    Some(ended) => Some(ended),
                    None => {
                        routes[i] = Route::Update { by_id: false };
                        continue;
                    }
                },
                other => Some(not_answered(other)),
            };
        }
    }

    let updates: Vec<(usize, Cow<'_, str>)> = routes
        .iter()
        .enumerate()
        .filter_map(|(i, r)| match r {
            Route::Update { by_id } => Some((i, Cow::Owned(outcome::update_item(&rows[i], *by_id)))),
            _ => None,
        })
        .collect();
    if !updates.is_empty() {
        for (i, sent) in applier.update(updates).await? {
            let by_id = matches!(routes[i], Route::Update { by_id: true });
            results[i] = Some(match sent {
                Sent::Result(answer) => outcome::after_update(&rows[i], by_id, &known, answer),
                other => not_answered(other),
            });
        }
    }

    Ok(rows
        .iter()
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
        .collect())
}

/// How a row ended whose request got no answer for it.
fn not_answered(sent: Sent) -> Ended {
    match sent {
        Sent::Unknown(why) => (Outcome::Unknown, None, vec![RowError::new("", "UNKNOWN", why)]),
        Sent::Failed(error) => (Outcome::Failed, None, vec![error]),
        Sent::Result(_) => (Outcome::Failed, None, vec![RowError::new("", "NOT_SENT", "not sent")]),
    }
}

/// The names that order rows (`m:` a `merchant_location_id`, `i:` a `location_id`): a row waits
/// for every earlier row with one of its names, so that rows of one location never pass each other.
pub fn keys_of(row: &Row) -> Vec<String> {
    let mut keys = Vec::with_capacity(2);
    if let Some(mlid) = &row.merchant_location_id {
        keys.push(format!("m:{mlid}"));
    }
    if let Some(id) = row.location_id_str() {
        keys.push(format!("i:{id}"));
    }
    keys
}

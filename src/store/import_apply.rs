//! An import's batch inside one transaction, the same on both engines: the steps of
//! `client::apply` (read back by name, create, update) done by the store's own create and change
//! (every rule, quarantine decision and event is the API's), and their answers given the shape
//! the service's answer has, so that each row ends exactly as push would report it. An engine
//! supplies the three calls in its transaction ([`TxSteps`]).

use std::borrow::Cow;

use serde_json::json;

use super::error::StoreError;
use super::group::Written;
use crate::client::apply::{self, Applier, Sent};
use crate::client::outcome::{self, ItemAnswer, Known, RowReport, ServiceError};
use crate::client::table::RowError;
use crate::client::table::rows::Row;
use crate::domain::event::Change;
use crate::domain::field_error::{FieldError, Path};
use crate::domain::import::Counts;
use crate::domain::json::Value;
use crate::domain::location::Persist;
use crate::domain::location::batch::{NewLocation, Outcome, Plan};
use crate::domain::location::change::{ChangePlan, Decision, Operation};

/// What an engine does inside the batch's transaction.
pub(crate) trait TxSteps {
    /// What is stored under these names.
    async fn stored(&mut self, mlids: &[&str], ids: &[&str]) -> Result<Known, StoreError>;
    /// The store's create of these valid items; `rows` holds the place in the batch of each item's
    /// row.
    async fn create(&mut self, items: Vec<NewLocation>, rows: &[usize]) -> Result<Written<Vec<Outcome>>, StoreError>;
    /// The store's change.
    async fn change(&mut self, plan: ChangePlan) -> Result<Written<Decision>, StoreError>;
}

/// A batch of a file's rows, each row that may be created validated already: the reader does that
/// while the batch before is being written, so a batch's transaction holds only its reads and
/// writes.
pub struct RowBatch {
    pub rows: Vec<Row>,
    /// By row: the row's item validated as `locations[i]` (`i` its place in the batch).
    checked: Vec<Option<Checked>>,
}

type Checked = Result<NewLocation, Vec<FieldError>>;

impl RowBatch {
    /// `rows`, those a run with `update` may create validated.
    pub fn checked(rows: Vec<Row>, update: bool) -> RowBatch {
        let root = Path::root("locations");
        let checked = rows
            .iter()
            .enumerate()
            .map(|(i, row)| {
                outcome::may_create(row, update).then(|| {
                    let item = serde_json::from_str(&row.item).unwrap_or(Value::Null);
                    let checked = NewLocation::checked(&item, &root.index(i));
                    if let Ok(new) = &checked {
                        new.neighbour_ranges();
                    }
                    checked
                })
            })
            .collect();
        RowBatch { rows, checked }
    }

    pub fn len(&self) -> usize {
        self.rows.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The rows validated as new locations: each row's place in the batch and its location.
    pub fn creatable(&self) -> impl Iterator<Item = (usize, &NewLocation)> {
        self.checked
            .iter()
            .enumerate()
            .filter_map(|(i, c)| Some((i, c.as_ref()?.as_ref().ok()?)))
    }
}

/// Applies `batch` with the engine's `steps` in its open transaction: the rows' reports and the
/// changes whose events the engine appends. `persist` says whether the transaction is to be kept
/// (a dry run's is not: a location it would create has no id, as `validate_only` answers).
pub(crate) async fn apply_rows<S: TxSteps>(
    steps: &mut S,
    batch: RowBatch,
    update: bool,
    persist: Persist,
) -> Result<(Vec<RowReport>, Vec<Change>), StoreError> {
    let mut applier = InTx {
        steps,
        persist,
        checked: batch.checked,
        changes: Vec::new(),
    };
    let reports = apply::apply_chunk(&mut applier, &batch.rows, update).await?;
    Ok((reports, applier.changes))
}

struct InTx<'s, S> {
    steps: &'s mut S,
    persist: Persist,
    checked: Vec<Option<Checked>>,
    changes: Vec<Change>,
}

/// The row's validation, made at `locations[row]`, as the create item at `path` (the errors' paths
/// moved there), or `None` when the row was not validated before.
fn checked_as(checked: &mut [Option<Checked>], row: usize, path: &Path<'_>) -> Option<Checked> {
    let found = checked.get_mut(row)?.take()?;
    Some(found.map_err(|errors| {
        let (from, to) = (format!("locations[{row}]"), path.to_string());
        errors
            .into_iter()
            .map(|mut e| {
                if let Some(rest) = e.field.strip_prefix(&from) {
                    e.field = format!("{to}{rest}");
                }
                e
            })
            .collect()
    }))
}

impl<S: TxSteps> Applier for InTx<'_, S> {
    type Error = StoreError;

    async fn stored(&mut self, mlids: &[&str], ids: &[&str]) -> Result<Known, StoreError> {
        self.steps.stored(mlids, ids).await
    }

    async fn create(
        &mut self,
        items: Vec<(usize, Cow<'_, str>)>,
        _rows: &[Row],
    ) -> Result<Vec<(usize, Sent)>, StoreError> {
        let values = parsed(&items);
        let checked = &mut self.checked;
        let mut plan = Plan::with(&values, |k, item, path| {
            checked_as(checked, items[k].0, path).unwrap_or_else(|| NewLocation::checked(item, path))
        });
        drop(values);
        let to_store = plan.take_to_store();
        let rows: Vec<usize> = plan.to_store_indexes().into_iter().map(|k| items[k].0).collect();
        let outcomes = if to_store.is_empty() {
            Vec::new()
        } else {
            let written = self.steps.create(to_store, &rows).await?;
            self.changes.extend(written.changes);
            written.value
        };
        let results = plan
            .finish(outcomes, self.persist)
            .ok_or_else(|| StoreError::Backend("the store answered for fewer items than it was given".into()))?;
        Ok(items
            .iter()
            .zip(results)
            .map(|((i, _), r)| {
                (
                    *i,
                    Sent::Result(answer(r.location_id, r.status.as_str(), None, r.errors)),
                )
            })
            .collect())
    }

    async fn update(&mut self, items: Vec<(usize, Cow<'_, str>)>) -> Result<Vec<(usize, Sent)>, StoreError> {
        let values = parsed(&items);
        let plan = ChangePlan::new(Operation::Update, &values);
        drop(values);
        let decision = if plan.names_any() {
            let written = self.steps.change(plan).await?;
            self.changes.extend(written.changes);
            written.value
        } else {
            plan.decide(Vec::new(), Vec::new(), Vec::new())
        };
        if decision.results.len() != items.len() {
            return Err(StoreError::Backend(
                "the store answered for fewer items than it was given".into(),
            ));
        }
        Ok(items
            .iter()
            .zip(decision.results)
            .map(|((i, _), r)| {
                let version = r.version.and_then(|v| u64::try_from(v).ok());
                (
                    *i,
                    Sent::Result(answer(r.location_id, r.status.as_str(), version, r.errors)),
                )
            })
            .collect())
    }
}

/// The items' JSON as the request body's values (an item is JSON text a file's row became; one
/// that is not is an item of the wrong type, as in a request).
fn parsed<'a>(items: &'a [(usize, Cow<'_, str>)]) -> Vec<Value<'a>> {
    items
        .iter()
        .map(|(_, item)| serde_json::from_str(item).unwrap_or(Value::Null))
        .collect()
}

fn answer(location_id: String, status: &str, version: Option<u64>, errors: Vec<FieldError>) -> ItemAnswer {
    ItemAnswer {
        location_id,
        status: status.to_owned(),
        version,
        errors: errors
            .into_iter()
            .map(|e| ServiceError {
                field: e.field,
                code: e.code.as_str().to_owned(),
                message: e.message.into_owned(),
            })
            .collect(),
    }
}

/// A row's outcome as stored: (row, merchant_location_id, location_id, outcome, errors as JSON).
pub(crate) struct StoredRow<'a> {
    pub row: i64,
    pub merchant_location_id: Option<Cow<'a, str>>,
    pub location_id: Option<Cow<'a, str>>,
    pub outcome: &'static str,
    pub errors: String,
}

/// A file's text as both engines can store it: PostgreSQL's text holds no null character, so one
/// (in a row that failed for it) is kept as U+FFFD, the character that stands for one that cannot
/// be shown.
fn storable(text: &str) -> Cow<'_, str> {
    if text.contains('\0') {
        Cow::Owned(text.replace('\0', "\u{fffd}"))
    } else {
        Cow::Borrowed(text)
    }
}

/// The reports as stored, and what they count.
pub(crate) fn stored_rows(reports: &[RowReport]) -> (Vec<StoredRow<'_>>, Counts) {
    let mut counts = Counts::default();
    let rows = reports
        .iter()
        .map(|r| {
            counts.add(r.outcome.as_str());
            StoredRow {
                row: i64::try_from(r.row).unwrap_or(i64::MAX),
                merchant_location_id: r.merchant_location_id.as_deref().map(storable),
                location_id: r.location_id.as_deref().filter(|id| !id.is_empty()).map(storable),
                outcome: r.outcome.as_str(),
                errors: errors_json(&r.errors),
            }
        })
        .collect();
    (rows, counts)
}

/// The errors as push's report writes them (`field`, `code`, `message`).
fn errors_json(errors: &[RowError]) -> String {
    serde_json::to_string(errors).unwrap_or_else(|_| "[]".to_owned())
}

/// An archive request's items for these locations.
pub(crate) fn archive_plan(location_ids: &[String]) -> ChangePlan {
    let items: Vec<String> = location_ids
        .iter()
        .map(|id| json!({ "location_id": id }).to_string())
        .collect();
    let values: Vec<Value<'_>> = items
        .iter()
        .map(|item| serde_json::from_str(item).unwrap_or(Value::Null))
        .collect();
    ChangePlan::new(Operation::Archive, &values)
}

/// How many of an archive's items were archived by it.
pub(crate) fn archived(decision: &Decision) -> i64 {
    decision
        .results
        .iter()
        .filter(|r| r.status == crate::domain::location::Status::Archived && r.errors.is_empty())
        .count() as i64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::field_error::FieldCode;

    #[test]
    fn a_row_validated_before_its_batch_s_transaction_ends_as_if_validated_there() {
        let errors = vec![
            FieldError {
                field: "locations[12].name".to_owned(),
                code: FieldCode::Required,
                message: "required".into(),
            },
            FieldError {
                field: "locations[12]".to_owned(),
                code: FieldCode::InvalidType,
                message: "whole item".into(),
            },
        ];
        let mut checked: Vec<Option<Checked>> = (0..13).map(|_| None).collect();
        checked[12] = Some(Err(errors));
        let root = Path::root("locations");
        let Some(Err(moved)) = checked_as(&mut checked, 12, &root.index(1)) else {
            panic!("the row's errors are taken");
        };
        let fields: Vec<&str> = moved.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(fields, ["locations[1].name", "locations[1]"]);
        assert!(checked_as(&mut checked, 12, &root.index(1)).is_none(), "taken once");
        assert!(
            checked_as(&mut checked, 3, &root.index(0)).is_none(),
            "not validated before"
        );
        assert!(checked_as(&mut checked, 99, &root.index(0)).is_none(), "no such row");
    }
}

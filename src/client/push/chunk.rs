//! One chunk of a push over HTTP: the steps of `client::apply` as requests to the service (the
//! stored list read back by name, create, update), each sent again as `service::send` allows.

use std::borrow::Cow;

use serde_json::{Value, json};

use crate::client::apply::{self, Applier, Sent};
use crate::client::outcome::{self, Known, Outcome, RowReport, Stored};
use crate::client::service::api::Failed;
use crate::client::service::send::{Context, send};
use crate::client::service::walk;
use crate::client::table::RowError;
use crate::client::table::rows::Row;

/// One chunk, start to end: its rows' outcomes in row order.
pub(super) async fn push_chunk(context: &Context, rows: Vec<Row>) -> Vec<RowReport> {
    match apply::apply_chunk(&mut Http(context), &rows, context.update).await {
        Ok(reports) => reports,
        Err(e) => {
            let error = RowError::new("", "NOT_SENT", format!("reading the stored locations failed: {e}"));
            let known = Known::default();
            rows.iter()
                .map(|row| outcome::report(row, &known, (Outcome::Failed, None, vec![error.clone()])))
                .collect()
        }
    }
}

/// The chunk's steps as requests.
struct Http<'c>(&'c Context);

impl Applier for Http<'_> {
    type Error = Failed;

    async fn stored(&mut self, mlids: &[&str], ids: &[&str]) -> Result<Known, Failed> {
        stored(self.0, mlids, ids).await
    }

    async fn create(&mut self, items: Vec<(usize, Cow<'_, str>)>, rows: &[Row]) -> Result<Vec<(usize, Sent)>, Failed> {
        // A create whose outcome is unknown is sent again only for rows with a
        // `merchant_location_id`, which the retry rule makes safe (and always in a dry run).
        let context = self.0;
        Ok(send(context, "/v1/location/create", items, |i| {
            context.dry_run || rows[i].merchant_location_id.is_some()
        })
        .await)
    }

    async fn update(&mut self, items: Vec<(usize, Cow<'_, str>)>) -> Result<Vec<(usize, Sent)>, Failed> {
        Ok(send(self.0, "/v1/location/update", items, |_| true).await)
    }
}

/// What is stored under the chunk's names: by `merchant_location_id`, and (with `--update`) by
/// `location_id`.
async fn stored(context: &Context, mlids: &[&str], ids: &[&str]) -> Result<Known, Failed> {
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

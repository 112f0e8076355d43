//! `push --archive-missing`: afterwards, every stored location that no row of the
//! file named is archived, so that the service holds exactly the file.

use std::collections::HashSet;

use serde_json::{Value, json};

use crate::client::service::api::{Backoff, Failed};
use crate::client::service::send::Context;
use crate::client::service::walk;
use crate::domain::location::schema::limits::ITEMS_PER_REQUEST;

/// Archives every stored location that is not archived and that no row named; how many were. In
/// a dry run it archives nothing and answers how many it would have.
pub(super) async fn archive_missing(
    context: &Context,
    named_ids: &HashSet<String>,
    named_mlids: &HashSet<String>,
) -> Result<u64, Failed> {
    let mut missing: Vec<String> = Vec::new();
    walk(&context.api, &Value::Null, context.retries, |raw| {
        let record: Value = serde_json::from_str(raw.get()).unwrap_or_default();
        let id = record["location_id"].as_str().unwrap_or_default();
        let named = named_ids.contains(id)
            || record["merchant_location_id"]
                .as_str()
                .is_some_and(|m| named_mlids.contains(m));
        if record["status"] != "ARCHIVED" && !named {
            missing.push(id.to_owned());
        }
        Ok(())
    })
    .await?;
    if context.dry_run {
        return Ok(missing.len() as u64);
    }
    let mut archived = 0;
    for ids in missing.chunks(ITEMS_PER_REQUEST) {
        let items: Vec<Value> = ids.iter().map(|id| json!({ "location_id": id })).collect();
        let mut backoff = Backoff::new(context.retries);
        let answer = context
            .api
            .call("/v1/location/archive", &json!({ "locations": items }), &mut backoff)
            .await?;
        let answer: Value = serde_json::from_slice(&answer).unwrap_or_default();
        let results = answer["locations"].as_array().map(Vec::as_slice).unwrap_or_default();
        archived += results.iter().filter(|r| r["status"] == "ARCHIVED").count() as u64;
    }
    Ok(archived)
}

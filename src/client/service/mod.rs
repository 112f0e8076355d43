//! The service over HTTP, as a merchant's integration talks to it: one attempt of a request and
//! what it came to (`api`), sending a chunk's items (`send`), and what both commands ask before and
//! while they work: whether the service answers and takes the key (`probe`), and every stored
//! record (`walk`).

pub(crate) mod api;
pub(crate) mod send;

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Value, json};

use api::{Api, Attempt, Backoff, Failed};

/// Checks that the service answers and takes the key, before anything is sent. A refused
/// connection is final (nothing listens there); a 429 is waited out and a server error retried.
pub(crate) async fn probe(api: &Api, retries: u32) -> anyhow::Result<()> {
    use anyhow::anyhow;
    let body = json!({ "pagination": { "limit": 1 } });
    let mut backoff = Backoff::new(retries);
    loop {
        match api.attempt("/v1/location/list", &body).await {
            Attempt::Answered(_) => return Ok(()),
            Attempt::Wait(wait) => {
                if !backoff.wait_out(wait).await {
                    return Err(anyhow!("the service keeps refusing: {}", backoff.rate_limited()));
                }
            }
            Attempt::Refused(e) if e.status == 401 => {
                return Err(anyhow!("the service refused the API key ({}: {})", e.code, e.message));
            }
            Attempt::Refused(e) => {
                return Err(anyhow!(
                    "the service refused the request ({} {}: {})",
                    e.status,
                    e.code,
                    e.message
                ));
            }
            Attempt::Unreachable(why) => {
                return Err(anyhow!("the service cannot be reached: {why}"));
            }
            Attempt::NotStored(why) | Attempt::Unknown(why) => {
                if !backoff.pause().await {
                    return Err(anyhow!("the service cannot be reached: {why}"));
                }
            }
        }
    }
}

#[derive(Deserialize)]
struct Page<'a> {
    #[serde(borrow)]
    locations: Vec<&'a RawValue>,
    pagination: Pagination,
}

#[derive(Deserialize)]
struct Pagination {
    has_next: bool,
    next_cursor: Option<String>,
}

/// Walks `/v1/location/list` under `filter` from the first page to the last, 1000 records a page,
/// handing each record, as the service wrote it, to `each`.
pub(crate) async fn walk(
    api: &Api,
    filter: &Value,
    retries: u32,
    mut each: impl FnMut(&RawValue) -> Result<(), Failed>,
) -> Result<(), Failed> {
    let mut cursor: Option<String> = None;
    loop {
        let body = json!({ "filter": filter, "pagination": { "limit": 1000, "cursor": cursor } });
        let mut backoff = Backoff::new(retries);
        let bytes = api.call("/v1/location/list", &body, &mut backoff).await?;
        let page: Page<'_> =
            serde_json::from_slice(&bytes).map_err(|e| Failed::GaveUp(format!("a list page that is not one: {e}")))?;
        for record in page.locations {
            each(record)?;
        }
        match page.pagination.next_cursor {
            Some(next) if page.pagination.has_next => cursor = Some(next),
            _ => return Ok(()),
        }
    }
}

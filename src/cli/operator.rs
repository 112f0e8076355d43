//! The operator's commands that only read or review: merchants and
//! their keys listed, quarantined locations listed and approved, keys revoked. Each runs on a
//! database that exists (`with_existing_store`).

use std::io::Write;
use std::sync::Arc;

use anyhow::bail;

use crate::domain::field_error::FieldError;
use crate::domain::location::batch::quarantine_issue;
use crate::domain::wire::timestamp_text as when;
use crate::store::{Approval, Store};

/// `merchant list [--json]`: every merchant, oldest first.
pub(super) async fn list_merchants(store: Arc<dyn Store>, json: bool) -> anyhow::Result<()> {
    #[derive(serde::Serialize)]
    struct Line<'a> {
        merchant_id: &'a str,
        name: &'a str,
        created_at: String,
    }
    let merchants = store.list_merchants().await?;
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    for m in &merchants {
        if json {
            let line = Line {
                merchant_id: &m.merchant_id,
                name: &m.name,
                created_at: when(m.created_at_ms),
            };
            writeln!(out, "{}", serde_json::to_string(&line)?)?;
        } else {
            writeln!(out, "{}  {}  created {}", m.merchant_id, m.name, when(m.created_at_ms))?;
        }
    }
    if !json {
        writeln!(out, "{} merchant(s)", merchants.len())?;
    }
    out.flush()?;
    Ok(())
}

/// `key list --merchant ID [--json]`: the merchant's keys, oldest first, never a secret.
pub(super) async fn list_keys(store: Arc<dyn Store>, merchant: String, json: bool) -> anyhow::Result<()> {
    #[derive(serde::Serialize)]
    struct Line<'a> {
        key_id: &'a str,
        scope: &'a str,
        created_at: String,
        revoked_at: Option<String>,
    }
    let Some(keys) = store.list_keys(&merchant).await? else {
        bail!("no merchant with id {merchant}");
    };
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    for k in &keys {
        if json {
            let line = Line {
                key_id: &k.key_id,
                scope: k.scope.as_str(),
                created_at: when(k.created_at_ms),
                revoked_at: k.revoked_at_ms.map(when),
            };
            writeln!(out, "{}", serde_json::to_string(&line)?)?;
        } else {
            let state = k
                .revoked_at_ms
                .map_or_else(|| "valid".to_owned(), |at| format!("revoked {}", when(at)));
            writeln!(
                out,
                "{}  {}  created {}  {state}",
                k.key_id,
                k.scope.as_str(),
                when(k.created_at_ms)
            )?;
        }
    }
    if !json {
        writeln!(out, "{} key(s)", keys.len())?;
    }
    out.flush()?;
    Ok(())
}

/// `locations quarantined [--json]`: every QUARANTINE location with the neighbour that keeps it.
pub(super) async fn quarantined(store: Arc<dyn Store>, json: bool) -> anyhow::Result<()> {
    #[derive(serde::Serialize)]
    struct Line<'a> {
        location_id: &'a str,
        merchant_id: &'a str,
        merchant_location_id: Option<&'a str>,
        name: &'a str,
        issue: Option<FieldError>,
        neighbour_location_id: Option<&'a str>,
    }
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let found = store.quarantined_locations().await?;
    for q in &found {
        let issue = q
            .neighbour_location_id
            .as_deref()
            .map(|by| quarantine_issue("latitude".to_owned(), by));
        if json {
            let line = Line {
                location_id: &q.location_id,
                merchant_id: &q.merchant_id,
                merchant_location_id: q.merchant_location_id.as_deref(),
                name: &q.name,
                issue,
                neighbour_location_id: q.neighbour_location_id.as_deref(),
            };
            writeln!(out, "{}", serde_json::to_string(&line)?)?;
        } else {
            writeln!(
                out,
                "{}  merchant {}  {:?} ({})  near {}",
                q.location_id,
                q.merchant_id,
                q.name,
                q.merchant_location_id.as_deref().unwrap_or("no merchant_location_id"),
                q.neighbour_location_id.as_deref().unwrap_or("?"),
            )?;
        }
    }
    if !json {
        writeln!(out, "{} quarantined location(s)", found.len())?;
    }
    out.flush()?;
    Ok(())
}

/// `locations approve ID`.
pub(super) async fn approve(store: Arc<dyn Store>, location_id: String) -> anyhow::Result<()> {
    match store.approve_location(&location_id).await? {
        Approval::Approved { version } => {
            say!("approved location {location_id}: ACTIVE, version {version}");
            Ok(())
        }
        Approval::NotQuarantined(status) => {
            bail!("location {location_id} is {status}, not QUARANTINE: nothing changed")
        }
        Approval::NotFound => bail!("no location with id {location_id}"),
    }
}

/// `key revoke KEY_ID`.
pub(super) async fn revoke(store: Arc<dyn Store>, key_id: String) -> anyhow::Result<()> {
    if !store.revoke_key(&key_id).await? {
        bail!("no active key with key_id {key_id}");
    }
    say!("revoked key {key_id}");
    Ok(())
}

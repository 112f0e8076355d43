//! The `webhook_pending` gauge: the deliveries not yet made, counted in the store.

use std::sync::Arc;
use std::time::Duration;

use crate::store::webhook_api::WebhookStore;

/// `webhook_pending`, every few seconds (the README says the gauge lags by as much).
pub async fn count(store: Arc<dyn WebhookStore>) {
    let mut tick = tokio::time::interval(Duration::from_secs(5));
    loop {
        tick.tick().await;
        if let Ok(n) = store.pending().await {
            metrics::gauge!("webhook_pending").set(n as f64);
        }
    }
}

//! The `webhook_pending` gauge: the deliveries not yet made, counted in the store. The count reads
//! every endpoint and every retry row, so what it costs grows with them: the next count waits
//! `SHARE` times as long as the last took, `EVERY` at least, so that counting takes a bounded share
//! of the store's time however large the backlog (the gauge then lags by as much).

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use crate::store::webhook_api::WebhookStore;

/// How often the gauge is counted while counting is quick.
const EVERY: Duration = Duration::from_secs(5);
/// The next count waits at least this many times as long as the last one took.
const SHARE: u32 = 100;

/// How long to wait after a count that took `took`.
fn wait_after(took: Duration) -> Duration {
    EVERY.max(took.saturating_mul(SHARE))
}

/// `webhook_pending`, every `EVERY` or less often (`docs/architecture.md` says the gauge lags by as
/// much).
pub async fn count(store: Arc<dyn WebhookStore>) {
    loop {
        let started = Instant::now();
        if let Ok(n) = store.pending().await {
            metrics::gauge!("webhook_pending").set(n as f64);
        }
        tokio::time::sleep(wait_after(started.elapsed())).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slow_count_waits_a_hundred_times_as_long_a_quick_one_the_period() {
        assert_eq!(wait_after(Duration::from_millis(3)), EVERY);
        assert_eq!(wait_after(Duration::from_millis(50)), EVERY);
        assert_eq!(wait_after(Duration::from_millis(80)), Duration::from_secs(8));
        assert_eq!(wait_after(Duration::MAX), Duration::MAX);
    }
}

//! The Prometheus recorder.

use std::sync::OnceLock;

use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};

/// Bucket bounds of `http_request_duration_seconds`, from 100 µs to 30 s.
pub(super) const DURATION_BUCKETS: &[f64] = &[
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
];

/// Bucket bounds of `webhook_delivery_seconds` (an event's commit to its delivery), from 10 ms to
/// a day (retries run for three).
const DELIVERY_BUCKETS: &[f64] = &[
    0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 300.0, 1800.0, 7200.0, 36_000.0, 86_400.0,
];

/// The process's Prometheus recorder, installed on first use (`None` if another recorder was
/// installed first, in which case `/metrics` says so).
pub fn metrics() -> Option<&'static PrometheusHandle> {
    static HANDLE: OnceLock<Option<PrometheusHandle>> = OnceLock::new();
    HANDLE
        .get_or_init(|| {
            PrometheusBuilder::new()
                .set_buckets_for_metric(Matcher::Full("http_request_duration_seconds".into()), DURATION_BUCKETS)
                .ok()?
                .set_buckets_for_metric(Matcher::Full("webhook_delivery_seconds".into()), DELIVERY_BUCKETS)
                .ok()?
                .install_recorder()
                .ok()
        })
        .as_ref()
}

//! Figures for `GET /metrics`: the Prometheus recorder, and plain atomic counters for
//! the RESP hot path (a labelled metric per command would cost a map lookup each time;
//! these cost one relaxed add), turned into Prometheus series at scrape time together
//! with the counter engine's figures.

use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

/// RESP commands answered.
pub static RESP_COMMANDS: AtomicU64 = AtomicU64::new(0);
/// RESP commands answered with an error.
pub static RESP_ERRORS: AtomicU64 = AtomicU64::new(0);
/// RESP connections accepted.
pub static RESP_CONNECTIONS: AtomicU64 = AtomicU64::new(0);
/// Short-link redirects answered (`GET /{code}` with a 3xx; kept off the per-route
/// histogram so the redirect path pays one atomic add).
pub static LINK_REDIRECTS: AtomicU64 = AtomicU64::new(0);
/// Ids handed out (HTTP and RESP).
pub static IDS_ISSUED: AtomicU64 = AtomicU64::new(0);
/// Tickets handed out (HTTP and RESP).
pub static TICKETS_ISSUED: AtomicU64 = AtomicU64::new(0);

/// Adds to one of the counters above.
#[inline]
pub fn add(counter: &AtomicU64, n: u64) {
    counter.fetch_add(n, Ordering::Relaxed);
}

/// The process-wide Prometheus recorder, installed on first use. `None` if another
/// recorder was installed first (then only the atomic counters are exported).
pub fn prometheus() -> Option<&'static PrometheusHandle> {
    static HANDLE: OnceLock<Option<PrometheusHandle>> = OnceLock::new();
    HANDLE
        .get_or_init(|| {
            PrometheusBuilder::new()
                .set_buckets(&[
                    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                    1.0,
                ])
                .ok()?
                .install_recorder()
                .ok()
        })
        .as_ref()
}

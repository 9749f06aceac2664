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

/// The whole `/metrics` page.
pub fn render(state: &crate::state::AppState) -> String {
    use std::fmt::Write;
    let mut text = prometheus().map(|h| h.render()).unwrap_or_default();
    let counter = |text: &mut String, name: &str, help: &str, value: u64| {
        let _ = write!(
            text,
            "# HELP {name} {help}\n# TYPE {name} counter\n{name} {value}\n"
        );
    };
    counter(
        &mut text,
        "shardkit_resp_commands_total",
        "RESP commands answered.",
        RESP_COMMANDS.load(Ordering::Relaxed),
    );
    counter(
        &mut text,
        "shardkit_resp_errors_total",
        "RESP commands answered with an error.",
        RESP_ERRORS.load(Ordering::Relaxed),
    );
    counter(
        &mut text,
        "shardkit_resp_connections_total",
        "RESP connections accepted.",
        RESP_CONNECTIONS.load(Ordering::Relaxed),
    );
    counter(
        &mut text,
        "shardkit_ids_issued_total",
        "Ids handed out.",
        IDS_ISSUED.load(Ordering::Relaxed),
    );
    counter(
        &mut text,
        "shardkit_link_redirects_total",
        "Short-link redirects answered.",
        LINK_REDIRECTS.load(Ordering::Relaxed),
    );
    counter(
        &mut text,
        "shardkit_tickets_issued_total",
        "Ticket numbers handed out.",
        TICKETS_ISSUED.load(Ordering::Relaxed),
    );
    let commits = state.links.commit_stats();
    counter(
        &mut text,
        "shardkit_link_commits_total",
        "Durable commits of link writes (concurrent writes share one).",
        commits.groups.load(Ordering::Relaxed),
    );
    counter(
        &mut text,
        "shardkit_link_writes_total",
        "Link writes (a create, bulk batch, change or delete) acknowledged by those commits.",
        commits.writes.load(Ordering::Relaxed),
    );
    let stats = state.counter_stats();
    let _ = write!(text, "# HELP shardkit_counter_rows Rows stored per counter.\n# TYPE shardkit_counter_rows gauge\n");
    for c in &stats.counters {
        let _ = writeln!(
            text,
            "shardkit_counter_rows{{counter=\"{}\"}} {}",
            escape(&c.name),
            c.rows
        );
    }
    let _ = write!(text, "# HELP shardkit_counter_bytes_per_row Memory per stored row.\n# TYPE shardkit_counter_bytes_per_row gauge\n");
    for c in &stats.counters {
        let _ = writeln!(
            text,
            "shardkit_counter_bytes_per_row{{counter=\"{}\"}} {}",
            escape(&c.name),
            c.bytes_per_row
        );
    }
    // The cold tier's figures per counter.
    type Field = fn(&shardkit_counters::CounterStats) -> u64;
    let cold: [(&str, &str, &str, Field); 6] = [
        (
            "shardkit_counter_hot_rows",
            "gauge",
            "Rows held in RAM.",
            |c| c.hot_rows,
        ),
        (
            "shardkit_counter_cold_rows",
            "gauge",
            "Rows held in the cold tier (disk).",
            |c| c.cold_rows,
        ),
        (
            "shardkit_counter_bytes_ram",
            "gauge",
            "Memory of the counter's tables and cold index.",
            |c| c.bytes,
        ),
        (
            "shardkit_counter_bytes_disk",
            "gauge",
            "Bytes of the counter's cold blocks on disk.",
            |c| c.bytes_disk,
        ),
        (
            "shardkit_counter_block_cache_hits_total",
            "counter",
            "Cold blocks served from the block cache.",
            |c| c.block_cache_hits,
        ),
        (
            "shardkit_counter_cold_reads_total",
            "counter",
            "Cold blocks read from disk.",
            |c| c.cold_reads,
        ),
    ];
    for (name, kind, help, field) in cold {
        let _ = write!(text, "# HELP {name} {help}\n# TYPE {name} {kind}\n");
        for c in &stats.counters {
            let _ = writeln!(
                text,
                "{name}{{counter=\"{}\"}} {}",
                escape(&c.name),
                field(c)
            );
        }
    }
    let _ = write!(
        text,
        "# HELP shardkit_counter_log_records_total Mutations written to the counter log.\n# TYPE shardkit_counter_log_records_total counter\nshardkit_counter_log_records_total {}\n",
        stats.next_lsn.saturating_sub(1)
    );
    text
}

/// Prometheus label values escape backslash, quote and newline.
fn escape(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

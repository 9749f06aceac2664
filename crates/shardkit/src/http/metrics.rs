//! `GET /metrics` (the Prometheus recorder's series, the hot paths' atomic counters
//! and the state's figures, rendered at scrape time) and the middleware that times
//! every request by route.

use axum::extract::{MatchedPath, Request, State};
use axum::http::header;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use shardkit_node::state::AppState;
use shardkit_node::telemetry::{
    prometheus, IDS_ISSUED, LINK_REDIRECTS, RESP_COMMANDS, RESP_CONNECTIONS, RESP_ERRORS,
    TICKETS_ISSUED,
};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

/// Prometheus text exposition.
#[utoipa::path(get, path = "/metrics", tag = "meta", responses((status = 200, description = "Prometheus text format", content_type = "text/plain")))]
pub async fn metrics(State(state): State<Arc<AppState>>) -> Response {
    (
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        render(&state),
    )
        .into_response()
}

/// Counts requests and errors and records latency, labelled by route template (never
/// by raw path, which would give one series per id).
pub async fn track(request: Request, next: Next) -> Response {
    let started = Instant::now();
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| "unmatched".to_string(), |p| p.as_str().to_string());
    let method = request.method().to_string();
    let response = next.run(request).await;
    let status = response.status();
    let labels = [
        ("route", route),
        ("method", method),
        ("status", status.as_u16().to_string()),
    ];
    metrics::counter!("shardkit_http_requests_total", &labels).increment(1);
    if status.is_client_error() || status.is_server_error() {
        metrics::counter!("shardkit_http_errors_total", &labels).increment(1);
    }
    metrics::histogram!("shardkit_http_request_duration_seconds", &labels[..1])
        .record(started.elapsed().as_secs_f64());
    response
}

/// The whole `/metrics` page.
fn render(state: &AppState) -> String {
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

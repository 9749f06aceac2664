//! `GET /metrics` and the middleware that times every request by route.

use crate::state::AppState;
use axum::extract::{MatchedPath, Request, State};
use axum::http::header;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::sync::Arc;
use std::time::Instant;

/// Prometheus text exposition.
#[utoipa::path(get, path = "/metrics", tag = "meta", responses((status = 200, description = "Prometheus text format", content_type = "text/plain")))]
pub async fn metrics(State(state): State<Arc<AppState>>) -> Response {
    (
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        crate::telemetry::render(&state),
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

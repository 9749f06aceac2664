//! `POST /api/tickets/{name}?count=N`: numbers from a named sequence.

use super::ids::parse_count;
use super::ApiError;
use crate::state::AppState;
use axum::extract::{Path, Query, State};
use serde::Deserialize;
use shardkit_ids::TicketError;
use std::sync::Arc;

/// Query of `POST /api/tickets/{name}`.
#[derive(Debug, Deserialize)]
pub struct TicketQuery {
    count: Option<String>,
}

/// `{"ids":["…"]}`: the next `count` numbers of sequence `name`.
#[utoipa::path(post, path = "/api/tickets/{name}", tag = "tickets",
    params(
        ("name" = String, Path, description = "Sequence name: 1 to 64 characters of A-Z a-z 0-9 _ - . :"),
        ("count" = Option<u64>, Query, description = "How many numbers, 1 to 100000 (default 1)"),
    ),
    responses(
        (status = 200, description = "The next numbers, increasing", body = super::openapi::IdsBody),
        (status = 400, description = "Bad name or count", body = super::openapi::ErrorBody),
        (status = 401, description = "API key missing or wrong", body = super::openapi::ErrorBody),
        (status = 503, description = "The ticket store cannot be written", body = super::openapi::ErrorBody),
    ))]
pub async fn create(
    State(state): State<Arc<AppState>>,
    Path(name): Path<String>,
    query: Result<Query<TicketQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<axum::response::Response, ApiError> {
    // A cluster node's sequences are its own: two nodes would hand out the same numbers.
    if state.cluster.get().is_some() {
        return Err(ApiError::not_on_cluster_node("ticket sequences"));
    }
    // Ids and tickets come from the leader only (a replica holds no lease on them yet).
    if let Some(leader) = crate::replication::gate::http_leader(&state.replication) {
        return Err(ApiError::misdirected(leader));
    }
    let Query(query) = query.map_err(|e| ApiError::bad_request(e.body_text()))?;
    let count = parse_count(query.count.as_deref())?;
    let allocator = state.tickets(&name).map_err(ticket_error)?;
    // A block reservation may wait for an fsync: keep it off the async workers.
    let numbers = tokio::task::spawn_blocking(move || allocator.take(count))
        .await
        .map_err(|_| ApiError::unavailable("the ticket allocator stopped"))?
        .map_err(ticket_error)?;
    crate::telemetry::add(&crate::telemetry::TICKETS_ISSUED, numbers.len() as u64);
    Ok(super::ids_body::ids_response(&numbers))
}

fn ticket_error(e: TicketError) -> ApiError {
    match e {
        TicketError::Store { .. } | TicketError::StoreInUse(_) => {
            ApiError::unavailable(e.to_string())
        }
        other => ApiError::bad_request(other.to_string()),
    }
}

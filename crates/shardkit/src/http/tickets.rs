//! `POST /api/tickets/{name}?count=N`: numbers from a named sequence.

use super::ids::parse_count;
use super::ApiError;
use axum::extract::{Path, Query, State};
use serde::Deserialize;
use shardkit_ids::TicketError;
use shardkit_node::state::AppState;
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
        (status = 421, description = "A Redis Cluster node that does not own the slot of the sequence's name: `owner` is the HTTP address of the node that does", body = super::openapi::ErrorBody),
        (status = 503, description = "The ticket store cannot be written; or a Redis Cluster node still taking the name's group over", body = super::openapi::ErrorBody),
    ))]
pub async fn create(
    State(state): State<Arc<AppState>>,
    Path(name): Path<String>,
    query: Result<Query<TicketQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<axum::response::Response, ApiError> {
    if let Some(live) = state.cluster.get() {
        return on_cluster_node(&state, live, name, query).await;
    }
    // Ids and tickets come from the leader only (a replica holds no lease on them yet).
    if let Some(leader) = shardkit_node::replication::gate::http_leader(&state.replication) {
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
    shardkit_node::telemetry::add(
        &shardkit_node::telemetry::TICKETS_ISSUED,
        numbers.len() as u64,
    );
    Ok(super::ids_body::ids_response(&numbers))
}

/// On a cluster node a sequence belongs to the slot of its name and is served by that
/// slot's owner from its group's state (as `TICKET.NEXT` is): here when this node leads
/// the group, else 421 with the owner's HTTP address (503 while the group is taken
/// over).
async fn on_cluster_node(
    state: &Arc<AppState>,
    live: &shardkit_node::cluster::live::Live,
    name: String,
    query: Result<Query<TicketQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<axum::response::Response, ApiError> {
    shardkit_ids::tickets::validate_name(&name).map_err(ticket_error)?;
    let Query(query) = query.map_err(|e| ApiError::bad_request(e.body_text()))?;
    let count = parse_count(query.count.as_deref())?;
    let counters = super::counters::slot_counters(
        live,
        shardkit_node::cluster::slot::key_slot(name.as_bytes()),
    )?;
    let n = count;
    // The write waits for the group's log: keep it off the async workers.
    let (next, _) = tokio::task::spawn_blocking(move || {
        shardkit_node::cluster::tickets::reserve(&counters.engine, &name, n, false)
    })
    .await
    .map_err(|_| ApiError::unavailable("the counter engine stopped"))?
    .map_err(super::counters::engine_error)?;
    let numbers = shardkit_node::cluster::tickets::numbers_of(state.ticket_spec(), next, n)
        .ok_or_else(|| ApiError::bad_request(shardkit_node::cluster::tickets::USED_UP))?;
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

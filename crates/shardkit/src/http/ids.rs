//! `POST /api/ids?count=N&shard=S|key=K` and `GET /api/ids/{id}`.

use super::ApiError;
use crate::decoded_json::DecodedIdJson;
use crate::state::{AppState, MAX_BATCH};
use axum::extract::{Path, Query, State};
use axum::Json;
use serde::Deserialize;
use shardkit_ids::GenerateError;
use std::sync::Arc;

/// Query of `POST /api/ids`; numbers are read by hand to say exactly what is wrong.
#[derive(Debug, Deserialize)]
pub struct IdsQuery {
    count: Option<String>,
    shard: Option<String>,
    key: Option<String>,
}

/// Reads `?count=`: 1 by default, at most [`MAX_BATCH`].
pub fn parse_count(count: Option<&str>) -> Result<u64, ApiError> {
    match count {
        None => Ok(1),
        Some(text) => match text.parse::<u64>() {
            Ok(n) if (1..=MAX_BATCH).contains(&n) => Ok(n),
            _ => Err(ApiError::bad_request(format!("count must be a whole number from 1 to {MAX_BATCH}, got {text:?}"))),
        },
    }
}

/// New ids, all in one shard: `shard` if given, else the shard of `key`, else round robin.
pub async fn create(State(state): State<Arc<AppState>>, query: Result<Query<IdsQuery>, axum::extract::rejection::QueryRejection>) -> Result<Json<serde_json::Value>, ApiError> {
    let Query(query) = query.map_err(|e| ApiError::bad_request(e.body_text()))?;
    let count = parse_count(query.count.as_deref())?;
    let shards = state.layout.shards();
    let shard = match (&query.shard, &query.key) {
        (Some(_), Some(_)) => return Err(ApiError::bad_request("give shard or key, not both")),
        (Some(text), None) => match text.parse::<u64>() {
            Ok(s) if s < shards => s,
            _ => return Err(ApiError::bad_request(format!("shard must be a whole number from 0 to {}, got {text:?}", shards - 1))),
        },
        (None, Some(text)) => match text.parse::<u64>() {
            Ok(key) => state.ids.shard_for_key(key),
            Err(_) => return Err(ApiError::bad_request(format!("key must be a whole number (a user id, say), got {text:?}"))),
        },
        (None, None) => rand_shard(shards),
    };
    let mut ids = vec![0u64; count as usize];
    state.ids.fill(shard, &mut ids).map_err(generate_error)?;
    crate::telemetry::add(&crate::telemetry::IDS_ISSUED, count);
    Ok(Json(serde_json::json!({ "ids": ids.iter().map(u64::to_string).collect::<Vec<_>>() })))
}

/// Takes an id apart.
pub async fn decode(State(state): State<Arc<AppState>>, Path(id): Path<String>) -> Result<Json<DecodedIdJson>, ApiError> {
    let decoded = state.layout.decode_str(&id).map_err(|e| ApiError::bad_request(e.to_string()))?;
    DecodedIdJson::new(&decoded, &state.layout).map(Json).ok_or_else(|| ApiError::bad_request(format!("id {id} has a time that cannot be shown")))
}

/// A generator error as an answer: the clock being behind is temporary (503).
fn generate_error(e: GenerateError) -> ApiError {
    match e {
        GenerateError::ShardOutOfRange { .. } => ApiError::bad_request(e.to_string()),
        other => ApiError::unavailable(other.to_string()),
    }
}

/// Spreads requests without a shard over all shards.
fn rand_shard(shards: u64) -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed) % shards
}

//! `POST /api/ids?count=N&shard=S|key=K&format=snowflake|uuid7|ulid` and
//! `GET /api/ids/{id}`.

use super::ApiError;
use crate::decoded_json::{DecodedAnyJson, DecodedIdJson};
use axum::extract::{Path, Query, State};
use axum::Json;
use serde::Deserialize;
use shardkit_ids::GenerateError;
use shardkit_node::id_format::IdFormat;
use shardkit_node::state::{AppState, MAX_BATCH};
use std::sync::Arc;

/// Query of `POST /api/ids`; numbers are read by hand to say exactly what is wrong.
#[derive(Debug, Deserialize)]
pub struct IdsQuery {
    count: Option<String>,
    shard: Option<String>,
    key: Option<String>,
    format: Option<String>,
}

/// Reads `?count=`: 1 by default, at most [`MAX_BATCH`].
pub fn parse_count(count: Option<&str>) -> Result<u64, ApiError> {
    match count {
        None => Ok(1),
        Some(text) => match text.parse::<u64>() {
            Ok(n) if (1..=MAX_BATCH).contains(&n) => Ok(n),
            _ => Err(ApiError::bad_request(format!(
                "count must be a whole number from 1 to {MAX_BATCH}, got {text:?}"
            ))),
        },
    }
}

/// New ids, all in one shard: `shard` if given, else the shard of `key`, else round robin
/// (`shard` and `key` together are a 400). With `format=uuid7` or `ulid`, UUIDv7s or
/// ULIDs instead, which have no shard.
#[utoipa::path(post, path = "/api/ids", tag = "ids",
    params(
        ("count" = Option<u64>, Query, description = "How many ids, 1 to 100000 (default 1)"),
        ("shard" = Option<u64>, Query, description = "Logical shard, 0 to 2^shard_bits - 1"),
        ("key" = Option<u64>, Query, description = "A key (a user id, say): the shard is key % 2^shard_bits"),
        ("format" = Option<String>, Query, description = "snowflake (default: the layout's decimal ids), uuid7 (RFC 9562) or ulid; uuid7 and ulid take no shard or key"),
    ),
    responses(
        (status = 200, description = "Increasing ids of one shard, or increasing UUIDv7s or ULIDs", body = super::openapi::IdsBody),
        (status = 400, description = "Bad count, shard, key or format, both shard and key given, or a shard or key with uuid7 or ulid", body = super::openapi::ErrorBody),
        (status = 401, description = "API key missing or wrong", body = super::openapi::ErrorBody),
        (status = 503, description = "Clock behind the last issued id, or the time guard cannot be written", body = super::openapi::ErrorBody),
    ))]
pub async fn create(
    State(state): State<Arc<AppState>>,
    query: Result<Query<IdsQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<axum::response::Response, ApiError> {
    // Every node issues ids, from the shards it leases (`id_leases`).
    let Query(query) = query.map_err(|e| ApiError::bad_request(e.body_text()))?;
    let count = parse_count(query.count.as_deref())?;
    let format = match query.format.as_deref() {
        None => IdFormat::Snowflake,
        Some(text) => text.parse::<IdFormat>().map_err(ApiError::bad_request)?,
    };
    if let Some(kind) = format.time_ordered() {
        if query.shard.is_some() || query.key.is_some() {
            return Err(ApiError::bad_request(format!(
                "{format} ids have no shard: give shard or key only with format=snowflake"
            )));
        }
        let texts = state
            .time_ordered
            .next_texts(kind, count)
            .map_err(generate_error)?;
        shardkit_node::telemetry::add(&shardkit_node::telemetry::IDS_ISSUED, count);
        return Ok(super::ids_body::text_ids_response(&texts));
    }
    let shards = state.layout.shards();
    let shard = match (&query.shard, &query.key) {
        (Some(_), Some(_)) => return Err(ApiError::bad_request("give shard or key, not both")),
        (Some(text), None) => match text.parse::<u64>() {
            Ok(s) if s < shards => Some(s),
            _ => {
                return Err(ApiError::bad_request(format!(
                    "shard must be a whole number from 0 to {}, got {text:?}",
                    shards - 1
                )))
            }
        },
        (None, Some(text)) => match text.parse::<u64>() {
            Ok(key) => Some(state.ids.shard_for_key(key)),
            Err(_) => {
                return Err(ApiError::bad_request(format!(
                    "key must be a whole number (a user id, say), got {text:?}"
                )))
            }
        },
        (None, None) => None,
    };
    let shard = state
        .id_leases
        .pick(shard)
        .map_err(|why| ApiError::unavailable(why.trim_start_matches("ERR ").to_string()))?;
    let mut ids = vec![0u64; count as usize];
    state.ids.fill(shard, &mut ids).map_err(generate_error)?;
    shardkit_node::telemetry::add(&shardkit_node::telemetry::IDS_ISSUED, count);
    Ok(super::ids_body::ids_response(&ids))
}

/// Takes an id apart: the layout's decimal id, a UUIDv7 or a ULID, told by length.
#[utoipa::path(get, path = "/api/ids/{id}", tag = "ids",
    params(("id" = String, Path, description = "A decimal id of the layout, a UUIDv7 (36 characters, or 32 hex digits) or a ULID (26 characters)")),
    responses(
        (status = 200, description = "Time, and shard and sequence or the UUID's counter or the ULID's random part", body = crate::decoded_json::DecodedAnyJson),
        (status = 400, description = "Not a decimal id below 2^63, a UUIDv7 or a ULID", body = super::openapi::ErrorBody),
    ))]
pub async fn decode(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
) -> Result<Json<DecodedAnyJson>, ApiError> {
    if let Some(decoded) = crate::decoded_json::decode_time_ordered(&id) {
        return decoded.map(Json).map_err(ApiError::bad_request);
    }
    // Only what the document's pattern allows: no sign, no spaces, at most 19 digits.
    if id.is_empty() || id.len() > 19 || !id.bytes().all(|b| b.is_ascii_digit()) {
        return Err(ApiError::bad_request(format!(
            "an id is 1 to 19 decimal digits below 2^63, a UUIDv7 (36 characters, or 32 hex digits) \
             or a ULID (26 characters), got {id:?}"
        )));
    }
    let decoded = state
        .layout
        .decode_str(&id)
        .map_err(|e| ApiError::bad_request(e.to_string()))?;
    DecodedIdJson::new(&decoded, &state.layout)
        .map(|json| Json(DecodedAnyJson::Snowflake(json)))
        .ok_or_else(|| ApiError::bad_request(format!("id {id} has a time that cannot be shown")))
}

/// A generator error as an answer: the clock being behind is temporary (503).
fn generate_error(e: GenerateError) -> ApiError {
    match e {
        GenerateError::ShardOutOfRange { .. } => ApiError::bad_request(e.to_string()),
        other => ApiError::unavailable(other.to_string()),
    }
}

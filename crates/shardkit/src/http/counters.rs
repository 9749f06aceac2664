//! `GET /api/counters/{counter}/{key}`, `POST /api/counters/{counter}/{key}/incr`,
//! `POST /api/counters/{counter}/mget`.

use super::ApiError;
use crate::counter_access::{row_key, DEFAULT_COLUMN};
use crate::state::AppState;
use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, State};
use axum::Json;
use serde::Deserialize;
use serde_json::{json, Map, Value};
use shardkit_counters::{Error, Key};
use std::sync::Arc;

/// The most keys one `mget` may ask for.
pub const MAX_MGET_KEYS: usize = 10_000;

/// Body of `POST …/incr`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct IncrBody {
    /// Column to change; `value` if absent.
    column: Option<String>,
    /// Amount, negative to decrement; 1 if absent.
    by: Option<i64>,
    /// Transaction id: a retry with the same id is counted once.
    txid: Option<String>,
}

/// Body of `POST …/mget`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct MgetBody {
    /// Row keys.
    keys: Vec<String>,
}

fn engine_error(e: Error) -> ApiError {
    match e {
        Error::Io { .. }
        | Error::LogFailed(_)
        | Error::Closed
        | Error::Locked(_)
        | Error::Corrupt { .. }
        | Error::LogOfRecord(_)
        | Error::BadBatch(_)
        | Error::Restore { .. } => ApiError::unavailable(e.to_string()),
        Error::ReadOnly => ApiError::misdirected(None),
        // The engine's text names its library function; say what an HTTP user can do.
        Error::NoSuchCounter(name) => ApiError::not_found(format!(
            "counter `{name}` does not exist; create it with COUNTER.CREATE {name} over RESP, or set [counters] auto_create = true"
        )),
        Error::NoSuchColumn { counter, column } => ApiError::not_found(format!(
            "counter `{counter}` has no column `{column}`; add it with COUNTER.ADDCOL {counter} {column} over RESP, or set [counters] auto_create = true"
        )),
        other => ApiError::bad_request(other.to_string()),
    }
}

/// A row as JSON: `{"comments":3,…}`; every column, defaults included.
fn row_json(state: &AppState, counter: &str, key: &str) -> Result<Map<String, Value>, ApiError> {
    let row = state
        .counters
        .read(|e| e.get_row(counter, row_key(key)))
        .map_err(engine_error)?;
    let row =
        row.ok_or_else(|| ApiError::not_found(format!("counter `{counter}` does not exist")))?;
    Ok(row
        .into_iter()
        .map(|(column, value)| (column, json!(value)))
        .collect())
}

/// `{"key":"…","values":{…}}`.
#[utoipa::path(get, path = "/api/counters/{counter}/{key}", tag = "counters",
    params(("counter" = String, Path, description = "Counter name"), ("key" = String, Path, description = "Row key: a decimal id or any text")),
    responses(
        (status = 200, description = "Every column of the row (defaults for an absent row)", body = super::openapi::CounterRowBody),
        (status = 400, description = "Bad counter name or key", body = super::openapi::ErrorBody),
        (status = 404, description = "No such counter", body = super::openapi::ErrorBody),
    ))]
pub async fn get(
    State(state): State<Arc<AppState>>,
    Path((counter, key)): Path<(String, String)>,
) -> Result<Json<Value>, ApiError> {
    not_on_cluster_node(&state)?;
    let values = row_json(&state, &counter, &key)?;
    Ok(Json(json!({ "key": key, "values": values })))
}

/// Adds `by` to a column (auto-creating as configured); answers the new value.
#[utoipa::path(post, path = "/api/counters/{counter}/{key}/incr", tag = "counters",
    params(("counter" = String, Path, description = "Counter name"), ("key" = String, Path, description = "Row key")),
    request_body = IncrBody,
    responses(
        (status = 200, description = "The value after the increment, durable before this answer", body = super::openapi::IncrAnswer),
        (status = 400, description = "Bad body, a count that would go negative or past its max", body = super::openapi::ErrorBody),
        (status = 401, description = "API key missing or wrong", body = super::openapi::ErrorBody),
        (status = 404, description = "No such counter or column (auto_create off)", body = super::openapi::ErrorBody),
        (status = 421, description = "A read-only replica: `leader` is the HTTP address to write to", body = super::openapi::ErrorBody),
        (status = 503, description = "The log cannot be written", body = super::openapi::ErrorBody),
    ))]
pub async fn incr(
    State(state): State<Arc<AppState>>,
    Path((counter, key)): Path<(String, String)>,
    parsed: Result<Json<Value>, JsonRejection>,
) -> Result<Json<Value>, ApiError> {
    not_on_cluster_node(&state)?;
    if let Some(leader) = crate::replication::gate::http_leader(&state.replication) {
        return Err(ApiError::misdirected(leader));
    }
    let request: IncrBody = super::json_body::read(parsed)?;
    let column = request.column.unwrap_or_else(|| DEFAULT_COLUMN.to_string());
    let by = request.by.unwrap_or(1);
    let (counter2, key2, column2) = (counter.clone(), key.clone(), column.clone());
    // The write waits for the log's fsync: keep it off the async workers.
    let value = tokio::task::spawn_blocking(move || {
        state.counters.write(&counter2, &column2, |e| {
            e.incr(
                &counter2,
                row_key(&key2),
                &column2,
                by,
                request.txid.as_deref(),
            )
        })
    })
    .await
    .map_err(|_| ApiError::unavailable("the counter engine stopped"))?
    .map_err(engine_error)?;
    Ok(Json(
        json!({ "key": key, "column": column, "value": value }),
    ))
}

/// `{"rows":[{"key":"…","values":{…}},…]}` in the order asked.
#[utoipa::path(post, path = "/api/counters/{counter}/mget", tag = "counters",
    params(("counter" = String, Path, description = "Counter name")),
    request_body = MgetBody,
    responses(
        (status = 200, description = "One row per key, in order", body = super::openapi::MgetAnswer),
        (status = 400, description = "Bad body or more than 10000 keys", body = super::openapi::ErrorBody),
        (status = 404, description = "No such counter", body = super::openapi::ErrorBody),
    ))]
pub async fn mget(
    State(state): State<Arc<AppState>>,
    Path(counter): Path<String>,
    parsed: Result<Json<Value>, JsonRejection>,
) -> Result<Json<Value>, ApiError> {
    not_on_cluster_node(&state)?;
    let request: MgetBody = super::json_body::read(parsed)?;
    if request.keys.len() > MAX_MGET_KEYS {
        return Err(ApiError::bad_request(format!(
            "at most {MAX_MGET_KEYS} keys per mget, got {}",
            request.keys.len()
        )));
    }
    let keys: Vec<Key<'_>> = request.keys.iter().map(|k| row_key(k)).collect();
    let found = state
        .counters
        .read(|e| e.mget_rows(&counter, &keys))
        .map_err(engine_error)?;
    let (columns, rows) =
        found.ok_or_else(|| ApiError::not_found(format!("counter `{counter}` does not exist")))?;
    let rows: Vec<Value> = request
        .keys
        .iter()
        .zip(rows)
        .map(|(key, values)| {
            let values: Map<String, Value> = columns
                .iter()
                .cloned()
                .zip(values.into_iter().map(|v| json!(v)))
                .collect();
            json!({ "key": key, "values": values })
        })
        .collect();
    Ok(Json(json!({ "rows": rows })))
}

/// Refuses counter routes on a Redis Cluster node (see [`ApiError::not_on_cluster_node`]).
fn not_on_cluster_node(state: &AppState) -> Result<(), ApiError> {
    match state.cluster.get() {
        Some(_) => Err(ApiError::not_on_cluster_node("counters")),
        None => Ok(()),
    }
}

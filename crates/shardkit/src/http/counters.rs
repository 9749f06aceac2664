//! `GET /api/counters/{counter}/{key}`, `POST /api/counters/{counter}/{key}/incr`,
//! `POST /api/counters/{counter}/mget`.
//!
//! On a Redis Cluster node (`[cluster] enabled`) a row is served by the node that owns
//! its slot, the slot of the RESP key `<counter>:{<key>}` (the id as a hash tag): here
//! from the row's group store when this node leads it; `421` with `owner` (that node's
//! HTTP address) when another node owns it, as `-MOVED` names its RESP address; `503`
//! while this node is still taking the group over or no node serves it.

use super::ApiError;
use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, State};
use axum::Json;
use serde::Deserialize;
use serde_json::{json, Map, Value};
use shardkit_counters::{Error, Key};
use shardkit_node::counters::{row_key, Counters, DEFAULT_COLUMN};
use shardkit_node::state::AppState;
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

/// The HTTP answer to a counter engine error (4xx for the caller's mistakes, 503 for the disk or log).
pub fn engine_error(e: Error) -> ApiError {
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
fn row_json(counters: &Counters, counter: &str, key: &str) -> Result<Map<String, Value>, ApiError> {
    let row = counters
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
        (status = 421, description = "A Redis Cluster node: another node owns the row's slot; `owner` is its HTTP address", body = super::openapi::ErrorBody),
        (status = 503, description = "A Redis Cluster node still taking the row's group over, or a group no node serves; retry shortly", body = super::openapi::ErrorBody),
    ))]
pub async fn get(
    State(state): State<Arc<AppState>>,
    Path((counter, key)): Path<(String, String)>,
) -> Result<Json<Value>, ApiError> {
    let counters = row_counters(&state, &counter, &key)?;
    let values = row_json(&counters, &counter, &key)?;
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
        (status = 421, description = "A read-only replica: `leader` is the HTTP address to write to; or a Redis Cluster node that does not own the row's slot: `owner` is the HTTP address of the node that does", body = super::openapi::ErrorBody),
        (status = 503, description = "The log cannot be written; or a Redis Cluster node still taking the row's group over", body = super::openapi::ErrorBody),
    ))]
pub async fn incr(
    State(state): State<Arc<AppState>>,
    Path((counter, key)): Path<(String, String)>,
    parsed: Result<Json<Value>, JsonRejection>,
) -> Result<Json<Value>, ApiError> {
    let counters = row_counters(&state, &counter, &key)?;
    if state.cluster.get().is_none() {
        if let Some(leader) = shardkit_node::replication::gate::http_leader(&state.replication) {
            return Err(ApiError::misdirected(leader));
        }
    }
    let request: IncrBody = super::json_body::read(parsed)?;
    let column = request.column.unwrap_or_else(|| DEFAULT_COLUMN.to_string());
    let by = request.by.unwrap_or(1);
    let (counter2, key2, column2) = (counter.clone(), key.clone(), column.clone());
    // The write waits for the log's fsync: keep it off the async workers.
    let value = tokio::task::spawn_blocking(move || {
        counters.write(&counter2, &column2, |e| {
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
        (status = 421, description = "A Redis Cluster node that does not own the slot of every key: `owner` is the HTTP address of the first one's owner", body = super::openapi::ErrorBody),
    ))]
pub async fn mget(
    State(state): State<Arc<AppState>>,
    Path(counter): Path<String>,
    parsed: Result<Json<Value>, JsonRejection>,
) -> Result<Json<Value>, ApiError> {
    let request: MgetBody = super::json_body::read(parsed)?;
    if request.keys.len() > MAX_MGET_KEYS {
        return Err(ApiError::bad_request(format!(
            "at most {MAX_MGET_KEYS} keys per mget, got {}",
            request.keys.len()
        )));
    }
    // Keys by the store that holds them: one on a lone node; on a cluster node, each
    // group led here (a key owned elsewhere answers 421 for the whole request).
    let mut stores: Vec<(Arc<Counters>, Vec<usize>)> = Vec::new();
    for (i, key) in request.keys.iter().enumerate() {
        let counters = row_counters(&state, &counter, key)?;
        match stores.iter_mut().find(|(c, _)| Arc::ptr_eq(c, &counters)) {
            Some((_, at)) => at.push(i),
            None => stores.push((counters, vec![i])),
        }
    }
    if stores.is_empty() {
        // No keys: the engine still judges the counter (a bad name is a 400, a missing
        // counter a 404), as for any other request.
        stores.push((Arc::clone(&state.counters), Vec::new()));
    }
    let mut rows: Vec<Value> = vec![Value::Null; request.keys.len()];
    let mut any_counter = false;
    for (counters, at) in &stores {
        let keys: Vec<Key<'_>> = at.iter().map(|&i| row_key(&request.keys[i])).collect();
        let Some((columns, values)) = counters
            .read(|e| e.mget_rows(&counter, &keys))
            .map_err(engine_error)?
        else {
            continue;
        };
        any_counter = true;
        for (&i, values) in at.iter().zip(values) {
            let values: Map<String, Value> = columns
                .iter()
                .cloned()
                .zip(values.into_iter().map(|v| json!(v)))
                .collect();
            rows[i] = json!({ "key": request.keys[i], "values": values });
        }
    }
    if !any_counter {
        return Err(ApiError::not_found(format!(
            "counter `{counter}` does not exist"
        )));
    }
    // A group that has no such counter yet (cluster: counters are made per group on
    // first write) holds its keys' rows at their defaults: none.
    for (i, row) in rows.iter_mut().enumerate() {
        if row.is_null() {
            *row = json!({ "key": request.keys[i], "values": {} });
        }
    }
    Ok(Json(json!({ "rows": rows })))
}

/// The counters that hold row `key` of `counter` on this node: the node's own, or on a
/// cluster node the store of the row's slot group when this node leads it (see the
/// module doc for the answers otherwise).
fn row_counters(state: &AppState, counter: &str, key: &str) -> Result<Arc<Counters>, ApiError> {
    let Some(live) = state.cluster.get() else {
        if let Some(refusal) = shardkit_node::replication::gate::refuse_read(&state.replication) {
            return Err(ApiError::unavailable(refusal));
        }
        return Ok(Arc::clone(&state.counters));
    };
    slot_counters(live, row_slot(counter, key))
}

/// On a cluster node, the counters of `slot`'s group when this node leads it; else 421
/// naming the owner's HTTP address, or 503 while the group is taken over or unserved.
pub fn slot_counters(
    live: &shardkit_node::cluster::live::Live,
    slot: u16,
) -> Result<Arc<Counters>, ApiError> {
    let map = live.map();
    let group = map.group_of(slot);
    if map.owner[usize::from(group)].as_deref() == Some(live.me.as_str()) {
        return live
            .store(group)
            .filter(|s| {
                matches!(
                    s.replication.role(),
                    shardkit_node::replication::Role::Leader
                )
            })
            .map(|s| Arc::clone(&s.counters))
            .ok_or_else(|| {
                ApiError::unavailable(format!(
                    "slot {slot} (group {group}) is being taken over by this node; retry shortly"
                ))
            });
    }
    match map.owner_of(slot) {
        Some(owner) => Err(ApiError::moved(slot, &owner.http)),
        None => Err(ApiError::unavailable(format!(
            "slot {slot} (group {group}) is served by no node right now; retry shortly"
        ))),
    }
}

/// The cluster slot of a row: that of the RESP key `<counter>:{<key>}`, its id as a hash
/// tag (`{123}` in the path is row 123 too, as everywhere).
pub fn row_slot(counter: &str, key: &str) -> u16 {
    let id = key
        .strip_prefix('{')
        .and_then(|k| k.strip_suffix('}'))
        .unwrap_or(key);
    shardkit_node::cluster::slot::key_slot(format!("{counter}:{{{id}}}").as_bytes())
}

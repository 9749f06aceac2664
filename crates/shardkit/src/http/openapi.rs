//! `GET /openapi.json`: the API description, generated from the handlers' own
//! annotations (utoipa), so it cannot drift from the routes.

use axum::extract::State;
use axum::Json;
use serde::Serialize;
use shardkit_node::state::AppState;
use std::collections::BTreeMap;
use std::sync::Arc;
use utoipa::{OpenApi, ToSchema};

/// `{"status":"ok"}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct HealthBody {
    /// Always `ok`.
    pub status: String,
}

/// `{"ids":["…"]}`: ids or tickets, as decimal strings (JavaScript loses precision past 2^53).
#[derive(Debug, Serialize, ToSchema)]
pub struct IdsBody {
    /// The numbers, in increasing order.
    pub ids: Vec<String>,
}

/// Every 4xx/5xx answer: `{"error":"<what is wrong, in words>"}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorBody {
    /// What went wrong and, where it helps, what to do.
    pub error: String,
}

/// One counter row: `{"key":"123","values":{"comments":3}}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct CounterRowBody {
    /// The row key as given.
    pub key: String,
    /// Every column with its value (defaults included).
    pub values: BTreeMap<String, u64>,
}

/// The answer to an increment.
#[derive(Debug, Serialize, ToSchema)]
pub struct IncrAnswer {
    /// The row key.
    pub key: String,
    /// The column changed.
    pub column: String,
    /// Its value after the increment (or the current one for a repeated txid).
    pub value: u64,
}

/// The answer to a multi-get.
#[derive(Debug, Serialize, ToSchema)]
pub struct MgetAnswer {
    /// One row per key asked, in order.
    pub rows: Vec<CounterRowBody>,
}

/// The document.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "shardkit",
        description = "Ids, tickets, counters and short links for sharded applications. 64-bit ids are JSON strings. \
                       With an API key configured, every method but GET and HEAD needs `Authorization: Bearer <key>`."
    ),
    paths(
        super::health::healthz,
        super::metrics::metrics,
        openapi,
        super::ids::create,
        super::ids::decode,
        super::tickets::create,
        super::counters::get,
        super::counters::incr,
        super::counters::mget,
        super::links::create,
        super::links::list,
        super::links::get,
        super::links::update,
        super::links::replace,
        super::links::delete,
        super::links_bulk::create,
        super::links_bulk::export,
        super::stats::link,
        super::stats::top,
        super::redirect::follow,
        super::redirect::unlock,
        super::ui::index,
        super::ui::dashboard,
        super::ui::link_page,
        super::ui::qr,
    ),
    components(schemas(
        HealthBody,
        IdsBody,
        ErrorBody,
        CounterRowBody,
        IncrAnswer,
        MgetAnswer,
        crate::decoded_json::DecodedIdJson,
        crate::decoded_json::DecodedUuid7Json,
        crate::decoded_json::DecodedUlidJson,
        crate::decoded_json::DecodedAnyJson,
        super::counters::IncrBody,
        super::counters::MgetBody,
        shardkit_link_service::NewLink,
        shardkit_link_service::LinkPatch,
        super::stats::StatsAnswer,
        super::stats::StatValue
    ))
)]
pub struct ApiDoc;

/// The document as served: the generated one with the value rules and shared answers
/// of [`super::openapi_rules`], for a layout of `shards` shards.
pub fn document(shards: u64) -> serde_json::Value {
    let mut doc = serde_json::to_value(ApiDoc::openapi()).unwrap_or_default();
    let missing = super::openapi_rules::apply(&mut doc, shards);
    debug_assert!(missing.is_empty(), "rules without a place: {missing:?}");
    doc
}

/// This document.
#[utoipa::path(get, path = "/openapi.json", tag = "meta", responses((status = 200, description = "OpenAPI 3.1 description of this API")))]
pub async fn openapi(State(state): State<Arc<AppState>>) -> Json<serde_json::Value> {
    Json(document(state.layout.shards()))
}

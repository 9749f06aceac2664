//! The HTTP side of `[regions]`: requests for links homed elsewhere forwarded whole to
//! their home, click totals summed over the regions, and the peer routes other regions
//! call (`/api/regions/…`, behind `[regions] peer_key`):
//!
//! - `GET /api/regions/links/{path}`: the stored record of a link homed here (for the
//!   other regions' redirect caches; it carries the password hash, so a remote region
//!   can check a password itself);
//! - `GET /api/regions/clicks/{id}?first_day=&last_day=`: the clicks counted here for
//!   link `id` (homed anywhere), total and per day;
//! - `POST /api/regions/hit/{path}`: one click of a link homed here that has a visit
//!   limit (counted at home, so the limit holds across regions): 204, or 410.

use super::ApiError;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Deserialize;
use serde_json::{json, Value};
use shardkit_link_service::regions::peers::{LocalClicks, FORWARDED_BY};
use shardkit_link_service::regions::Regions;
use shardkit_links::{day_of, now_ms, Link};
use shardkit_node::state::AppState;
use std::sync::Arc;

/// Where a request for `/{path}` (or a new link) is answered.
pub enum Home<'a> {
    /// Here: one region, or this region is the home.
    Here,
    /// In that other region.
    There(&'a str),
    /// No region owns the code's group: no such link anywhere.
    Nowhere,
}

/// The home of the link at `/{path}`.
pub fn home_of_path<'a>(regions: Option<&'a Regions>, path: &str) -> Home<'a> {
    let Some(regions) = regions else {
        return Home::Here;
    };
    // Only what could be a code or an alias goes into another region's URL; anything
    // else is looked up here, where it is found nowhere. An alias of a domain other
    // than the default (`domain/alias`) is homed as its alias is.
    let path = path.rsplit_once('/').map_or(path, |(_, alias)| alias);
    if path.is_empty()
        || !path
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    {
        return Home::Here;
    }
    match regions.map.home_of_path(path) {
        None => Home::Nowhere,
        Some(home) if home == regions.map.this() => Home::Here,
        Some(home) => Home::There(home),
    }
}

/// The answer of a region that could not be reached: 503 naming it.
pub fn unreachable(e: &shardkit_link_service::regions::PeerError) -> ApiError {
    ApiError::unavailable(format!(
        "the link's home region cannot be reached now: {e}; retry later"
    ))
    .with("region", e.region())
}

/// Sends the request to `home` as the caller made it and answers what it answered.
/// A request that was forwarded to this region already is refused (421) rather than
/// sent on: the regions' settings disagree.
pub async fn forward(
    state: &AppState,
    home: &str,
    method: Method,
    path_and_query: &str,
    headers: &HeaderMap,
    body: Bytes,
) -> Result<Response, ApiError> {
    let Some(regions) = &state.regions else {
        return Err(ApiError::unavailable("this server runs one region"));
    };
    if let Some(from) = headers.get(FORWARDED_BY).and_then(|v| v.to_str().ok()) {
        return Err(ApiError::new(
            StatusCode::MISDIRECTED_REQUEST,
            format!(
                "region {from} sent this here, but this region ({}) places it in {home}: the regions' settings differ",
                regions.map.this()
            ),
        )
        .with("region", home));
    }
    let relayed = regions
        .peers
        .forward(home, method, path_and_query, headers, body)
        .await
        .map_err(|e| unreachable(&e))?;
    let mut response = (relayed.status, relayed.body).into_response();
    if let Some(kind) = relayed.content_type {
        response.headers_mut().insert(header::CONTENT_TYPE, kind);
    }
    Ok(response)
}

/// A link's view with `clicks` and `daily` summed over every region (each other region
/// asked for what it counted; one that does not answer in time is named in
/// `regions_unreachable`, with `clicks_partial: true`).
pub async fn view_summed(state: &Arc<AppState>, origin: Option<&str>, link: &Link) -> Value {
    let engine = &state.counters.engine;
    let mut value = state.links.view_with_clicks(engine, origin, link);
    let Some(regions) = &state.regions else {
        return value;
    };
    let (first, last) = shardkit_link_service::series_days(link);
    let mut asks = tokio::task::JoinSet::new();
    for (region, _) in regions.map.peers() {
        let (state, region, id) = (Arc::clone(state), region.clone(), link.id);
        asks.spawn(async move {
            let Some(regions) = &state.regions else {
                return (region, None);
            };
            let answer = regions.peers.local_clicks(&region, id, first, last).await;
            (region, answer.ok())
        });
    }
    let local = state.links.clicks.total(engine, link.id);
    let mut by_region = serde_json::Map::new();
    by_region.insert(regions.map.this().to_string(), json!(local));
    let mut missing: Vec<String> = Vec::new();
    let mut total = local;
    let mut extra_days: Vec<u64> = vec![0; usize::try_from(last - first + 1).unwrap_or(0)];
    while let Some(done) = asks.join_next().await {
        let Ok((region, answer)) = done else { continue };
        match answer {
            Some(LocalClicks { clicks, daily }) => {
                total += clicks;
                by_region.insert(region, json!(clicks));
                for (sum, n) in extra_days.iter_mut().zip(daily) {
                    *sum += n;
                }
            }
            None => missing.push(region),
        }
    }
    if let Some(object) = value.as_object_mut() {
        object.insert("clicks".into(), json!(total));
        object.insert("clicks_by_region".into(), Value::Object(by_region));
        if let Some(Value::Array(days)) = object.get_mut("daily") {
            for (day, more) in days.iter_mut().zip(&extra_days) {
                if let Some(n) = day.get("clicks").and_then(Value::as_u64) {
                    day["clicks"] = json!(n + more);
                }
            }
        }
        if !missing.is_empty() {
            missing.sort();
            object.insert("clicks_partial".into(), json!(true));
            object.insert("regions_unreachable".into(), json!(missing));
        }
    }
    value
}

/// Counted as served, per peer route.
fn served(route: &'static str) {
    metrics::counter!("shardkit_link_region_served_total", "route" => route).increment(1);
}

/// `GET /api/regions/links/{path}`: the record of a link homed here.
pub async fn link(
    State(state): State<Arc<AppState>>,
    Path(path): Path<String>,
) -> Result<Json<Link>, ApiError> {
    served("link");
    if !matches!(home_of_path(state.regions.as_ref(), &path), Home::Here) {
        return Err(ApiError::not_found(format!(
            "{path:?} is not homed in this region"
        )));
    }
    let link = state
        .links
        .lookup(&path)
        .await
        .map_err(|e| ApiError::unavailable(e.to_string()))?
        .ok_or_else(|| ApiError::not_found(format!("no link has the code or alias {path:?}")))?;
    Ok(Json(Link::clone(&link)))
}

/// The days of `GET /api/regions/clicks/{id}`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DayRange {
    /// First UTC day number.
    first_day: u64,
    /// Last UTC day number (at most 366 days after the first).
    last_day: u64,
}

/// `GET /api/regions/clicks/{id}`: the clicks this region counted for link `id`.
pub async fn clicks(
    State(state): State<Arc<AppState>>,
    Path(id): Path<u64>,
    Query(range): Query<DayRange>,
) -> Result<Json<LocalClicks>, ApiError> {
    served("clicks");
    if range.last_day < range.first_day || range.last_day - range.first_day > 366 {
        return Err(ApiError::bad_request(
            "first_day..last_day must be 1 to 367 days in order",
        ));
    }
    let engine = &state.counters.engine;
    let days: Vec<u64> = (range.first_day..=range.last_day).collect();
    Ok(Json(LocalClicks {
        clicks: state.links.clicks.total(engine, id),
        daily: state.links.clicks.daily(engine, id, &days),
    }))
}

/// `POST /api/regions/hit/{path}`: one click of a link homed here, counted against its
/// visit limit: 204, or 410 when it is used up or expired, 404 when there is none.
pub async fn hit(
    State(state): State<Arc<AppState>>,
    Path(path): Path<String>,
) -> Result<StatusCode, ApiError> {
    served("hit");
    let now = now_ms();
    let link = state
        .links
        .lookup(&path)
        .await
        .map_err(|e| ApiError::unavailable(e.to_string()))?
        .filter(|_| matches!(home_of_path(state.regions.as_ref(), &path), Home::Here))
        .ok_or_else(|| ApiError::not_found(format!("no link has the code or alias {path:?}")))?;
    if link.expired_at(now) {
        return Ok(StatusCode::GONE);
    }
    let counted = state.links.clicks.hit(
        &state.counters.engine,
        link.id,
        day_of(now),
        link.max_visits,
    );
    Ok(if counted {
        StatusCode::NO_CONTENT
    } else {
        StatusCode::GONE
    })
}

/// Whether a request to a peer route shows `[regions] peer_key` (`None`: no peer key
/// is set, the usual key check applies).
pub fn peer_key_shown(state: &AppState, bearer: Option<&[u8]>) -> Option<bool> {
    let key = state.regions.as_ref()?.peer_key.as_deref()?;
    let shown = bearer.unwrap_or_default();
    // Compared in constant time for equal lengths.
    Some(
        shown.len() == key.len()
            && shown
                .iter()
                .zip(key.as_bytes())
                .fold(0u8, |acc, (a, b)| acc | (a ^ b))
                == 0,
    )
}

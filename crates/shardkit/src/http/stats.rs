//! `GET /api/links/{code}/stats` and `GET /api/stats/top`: the click analytics, per link
//! (by referrer, browser, os, device, country or day) and site-wide (most-clicked links
//! or values). Counts are people's clicks; bots are counted apart (`bots`). They lag
//! the redirects by at most `[links] click_flush_ms`.

use super::links::op_error;
use super::ApiError;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::response::IntoResponse;
use axum::{Extension, Json};
use serde::{Deserialize, Serialize};
use shardkit_link_service::analytics::classify::Dim;
use shardkit_link_service::analytics::query::{self, Days, MAX_DAYS};
use shardkit_link_service::LinkOpError;
use shardkit_links::{day_of, format_day, now_ms, parse_day};
use shardkit_node::api_keys::Grant;
use shardkit_node::state::AppState;
use std::sync::Arc;

/// Days a question covers when it names no `from`: the last 30, `to` included.
pub const DEFAULT_DAYS: u64 = 30;
/// Most values a site-wide top answers.
pub const MAX_TOP: usize = 100;

/// Query of a link's stats.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct LinkStatsQuery {
    /// First UTC day, `YYYY-MM-DD` (default: 29 days before `to`).
    from: Option<String>,
    /// Last UTC day, `YYYY-MM-DD` (default: today).
    to: Option<String>,
    /// `referrer`, `browser`, `os`, `device`, `country` or `day` (the default).
    by: Option<String>,
    /// With `[links] domains`: the domain of an alias (default: the first domain).
    #[allow(dead_code)]
    domain: Option<String>,
}

/// Query of the site-wide top.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct TopQuery {
    /// `links` (the default), `referrer`, `browser`, `os`, `device` or `country`.
    by: Option<String>,
    /// First UTC day, `YYYY-MM-DD` (default: 29 days before `to`).
    from: Option<String>,
    /// Last UTC day, `YYYY-MM-DD` (default: today).
    to: Option<String>,
    /// Most values answered, 1 to 100 (default 10).
    limit: Option<usize>,
}

/// One value and its clicks.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct StatValue {
    /// The value: a host, browser, OS, device type, country code, day (`YYYY-MM-DD`),
    /// `other` (a link's values past its 16 per dimension), or a link's code.
    pub value: String,
    /// People's clicks.
    pub clicks: u64,
    /// Bots' clicks (`by=day` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bots: Option<u64>,
    /// The link's short URL (`by=links` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub short_url: Option<String>,
    /// The link's target (`by=links` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}

/// A link's stats or a site-wide top.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct StatsAnswer {
    /// The link's code (a link's stats only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// With `[links] domains`: the link's domain (a link's stats only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub domain: Option<String>,
    /// The dimension.
    pub by: String,
    /// First day counted.
    pub from: String,
    /// Last day counted.
    pub to: String,
    /// People's clicks over the days (a link's stats only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub clicks: Option<u64>,
    /// Bots' clicks over the days (a link's stats only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bots: Option<u64>,
    /// The values, most clicks first (`by=day`: every day in order).
    pub values: Vec<StatValue>,
}

/// The days of `from`/`to`: defaults, and a span past [`MAX_DAYS`] cut to the days
/// ending at `to`. `from` after `to` is an empty span (`None`).
fn span(from: Option<&str>, to: Option<&str>) -> Result<Option<Days>, ApiError> {
    let day = |text: &str, name: &str| {
        parse_day(text).map_err(|e| ApiError::bad_request(format!("{name}: {e}")))
    };
    let to = match to {
        Some(t) => day(t, "to")?,
        None => day_of(now_ms()),
    };
    let from = match from {
        Some(f) => day(f, "from")?,
        None => to.saturating_sub(DEFAULT_DAYS - 1),
    };
    if from > to {
        return Ok(None);
    }
    let from = from.max(to.saturating_sub(MAX_DAYS - 1));
    Ok(Days::new(from, to).ok())
}

fn value(value: String, clicks: u64) -> StatValue {
    StatValue {
        value,
        clicks,
        bots: None,
        short_url: None,
        url: None,
    }
}

fn unavailable(e: impl std::fmt::Display) -> ApiError {
    ApiError::unavailable(format!("the counters cannot be read now: {e}"))
}

/// A link's clicks by referrer host, browser, OS, device type, country or day.
#[utoipa::path(get, path = "/api/links/{code}/stats", tag = "stats",
    params(("code" = String, Path, description = "Code or alias"), LinkStatsQuery),
    responses(
        (status = 200, description = "People's clicks per value, most first (`by=day`: each day, with `bots`)", body = StatsAnswer),
        (status = 400, description = "Bad day or dimension", body = super::openapi::ErrorBody),
        (status = 404, description = "No such link", body = super::openapi::ErrorBody),
        (status = 421, description = "`domain` names no domain this server serves (`[links] domains`); `domain` names it", body = super::openapi::ErrorBody),
        (status = 503, description = "The counters cannot be read now, or (`[regions]`) the link's home region cannot be reached", body = super::openapi::ErrorBody),
    ))]
pub async fn link(
    State(state): State<Arc<AppState>>,
    grant: Option<Extension<Grant>>,
    headers: axum::http::HeaderMap,
    uri: axum::http::Uri,
    link_key: Result<super::link_key::LinkKey, ApiError>,
    query: Result<Query<LinkStatsQuery>, QueryRejection>,
) -> Result<axum::response::Response, ApiError> {
    let Query(query) = query.map_err(|e| ApiError::bad_request(e.body_text()))?;
    let by = query.by.as_deref().unwrap_or("day");
    let dim = match by {
        "day" => None,
        other => Some(Dim::from_name(other).ok_or_else(|| {
            ApiError::bad_request(format!(
                "by must be referrer, browser, os, device, country or day, not {other:?}"
            ))
        })?),
    };
    let days = span(query.from.as_deref(), query.to.as_deref())?;
    // After the query's own fields (400): an unknown domain is the deployment's (421).
    let link_key = link_key?;
    // With `[regions]`: a link homed elsewhere has its analytics there.
    let path = uri.path_and_query().map_or(uri.path(), |p| p.as_str());
    let method = axum::http::Method::GET;
    let body = axum::body::Bytes::new();
    if let Some(answer) =
        super::links::elsewhere_at(&state, method, &link_key.key, path, &headers, body).await
    {
        return answer;
    }
    let link = state
        .links
        .lookup(&link_key.key)
        .await
        .map_err(|e| ApiError::unavailable(e.to_string()))?
        .filter(|l| grant.as_ref().is_none_or(|Extension(g)| g.may_see(l)))
        .ok_or_else(|| op_error(LinkOpError::NotFound(link_key.code)))?;
    let worker = Arc::clone(&state);
    let id = link.id;
    let (per_day, values) = tokio::task::spawn_blocking(move || {
        let engine = &worker.counters.engine;
        let Some(days) = days else {
            return Ok((Vec::new(), Vec::new()));
        };
        let per_day = query::link_days(engine, id, days)?;
        let values = match dim {
            Some(dim) => query::link_values(engine, &worker.links.analytics.labels, id, dim, days)?,
            None => Vec::new(),
        };
        Ok::<_, shardkit_counters::Error>((per_day, values))
    })
    .await
    .map_err(unavailable)?
    .map_err(unavailable)?;
    let values = match dim {
        Some(_) => values.into_iter().map(|(l, n)| value(l, n)).collect(),
        None => per_day
            .iter()
            .map(|&(d, people, bots)| StatValue {
                bots: Some(bots),
                ..value(format_day(d), people)
            })
            .collect(),
    };
    let (from, to) = named_span(days, query.from.as_deref(), query.to.as_deref());
    Ok(Json(StatsAnswer {
        code: Some(link.path().to_string()),
        domain: state.links.domains().of_link(&link).map(String::from),
        by: by.to_string(),
        from,
        to,
        clicks: Some(per_day.iter().map(|d| d.1).sum()),
        bots: Some(per_day.iter().map(|d| d.2).sum()),
        values,
    })
    .into_response())
}

/// `from` and `to` as answered: the span counted, or as asked when it is empty.
fn named_span(days: Option<Days>, from: Option<&str>, to: Option<&str>) -> (String, String) {
    match days {
        Some(d) => (format_day(d.from), format_day(d.to)),
        None => (
            from.unwrap_or_default().to_string(),
            to.unwrap_or_default().to_string(),
        ),
    }
}

/// The most-clicked links, or the top values of a dimension, over every link.
#[utoipa::path(get, path = "/api/stats/top", tag = "stats", params(TopQuery),
    responses(
        (status = 200, description = "People's clicks per link (`value` the code, with `short_url` and `url`) or per value, most first", body = StatsAnswer),
        (status = 400, description = "Bad day, dimension or limit", body = super::openapi::ErrorBody),
        (status = 403, description = "An author-only key asked for a dimension over every link", body = super::openapi::ErrorBody),
        (status = 503, description = "The counters cannot be read now", body = super::openapi::ErrorBody),
    ))]
pub async fn top(
    State(state): State<Arc<AppState>>,
    origin: super::host::RequestOrigin,
    grant: Option<Extension<Grant>>,
    query: Result<Query<TopQuery>, QueryRejection>,
) -> Result<Json<StatsAnswer>, ApiError> {
    let Query(query) = query.map_err(|e| ApiError::bad_request(e.body_text()))?;
    let by = query.by.as_deref().unwrap_or("links");
    let dim = match by {
        "links" => None,
        other => Some(Dim::from_name(other).ok_or_else(|| {
            ApiError::bad_request(format!(
                "by must be links, referrer, browser, os, device or country, not {other:?}"
            ))
        })?),
    };
    let limit = query.limit.unwrap_or(10);
    if !(1..=MAX_TOP).contains(&limit) {
        return Err(ApiError::bad_request(format!(
            "limit must be 1 to {MAX_TOP}, got {limit}"
        )));
    }
    let grant = grant.map(|Extension(g)| g);
    if dim.is_some() && grant.as_ref().is_some_and(|g| g.author_only) {
        return Err(ApiError::forbidden(
            "an author-only key sees the top of its own links only (by=links)",
        ));
    }
    let days = span(query.from.as_deref(), query.to.as_deref())?;
    let worker = Arc::clone(&state);
    let values = tokio::task::spawn_blocking(move || -> Result<Vec<StatValue>, String> {
        let Some(days) = days else {
            return Ok(Vec::new());
        };
        let engine = &worker.counters.engine;
        if let Some(dim) = dim {
            let values = query::site_values(engine, dim, days, limit).map_err(|e| e.to_string())?;
            return Ok(values.into_iter().map(|(l, n)| value(l, n)).collect());
        }
        let mut out = Vec::new();
        for (id, clicks) in query::site_links(engine, days).map_err(|e| e.to_string())? {
            // A deleted link's clicks stay counted; it is left out of the top.
            let Some(link) = worker.links.store().get(id).map_err(|e| e.to_string())? else {
                continue;
            };
            if grant.as_ref().is_some_and(|g| !g.may_see(&link)) {
                continue;
            }
            out.push(StatValue {
                short_url: Some(worker.links.short_url(origin.as_deref(), &link)),
                url: Some(link.url.clone()),
                ..value(link.path().to_string(), clicks)
            });
            if out.len() == limit {
                break;
            }
        }
        Ok(out)
    })
    .await
    .map_err(unavailable)?
    .map_err(unavailable)?;
    let (from, to) = named_span(days, query.from.as_deref(), query.to.as_deref());
    Ok(Json(StatsAnswer {
        code: None,
        domain: None,
        by: by.to_string(),
        from,
        to,
        clicks: None,
        bots: None,
        values,
    }))
}

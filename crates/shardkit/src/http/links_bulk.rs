//! `POST /api/links/bulk` (JSON lines or CSV, one fsynced transaction per request)
//! and `GET /api/links/export` (the same formats, so an export imports back).

use super::links::{blocking, op_error};
use super::ApiError;
use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, QueryRejection};
use axum::extract::{Query, State};
use axum::http::{header, HeaderMap};
use axum::response::{IntoResponse, Response};
use axum::Extension;
use axum::Json;
use serde::Deserialize;
use serde_json::{json, Value};
use shardkit_link_service::bulk_formats::{self, Format};
use shardkit_link_service::LinkOpError;
use shardkit_links::Link;
use shardkit_node::api_keys::Grant;
use shardkit_node::state::AppState;
use std::sync::Arc;

/// Largest bulk body, bytes (64 MiB): room for 100,000 long lines.
pub const MAX_BODY: usize = 64 << 20;

/// Links read from the store per export step.
const EXPORT_PAGE: usize = 10_000;

/// What a bulk line that meets a stored code or alias does (`on_conflict=`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum OnConflict {
    /// The line is an error (counted in `failed`); the other lines are still created.
    #[default]
    Fail,
    /// The line is reported with `"skipped"` and is not an error.
    Skip,
}

/// Query of bulk create.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct BulkQuery {
    /// `fail` (default) or `skip`: a line whose code or alias is already stored.
    #[param(inline)]
    on_conflict: Option<OnConflict>,
    /// Check every line (fields, domain, code or alias taken) and store nothing:
    /// answers `would_create` in place of `created`, and no codes.
    dry_run: Option<bool>,
}

/// Creates (or, for lines with a `code`, restores) every line of the body; answers
/// one result per data line, in order, with its line number in the body.
#[utoipa::path(post, path = "/api/links/bulk", tag = "links", params(BulkQuery),
    request_body(content = String, description = "JSON lines (one POST /api/links body a line, or an exported line with code, created_at, clicks and daily, which restores that link) or, with Content-Type text/csv, CSV with header url,code,alias,created_at,expires_at,max_visits,redirect,tags,clicks,daily,password_protected (any of them, url first; tags split by |)"),
    responses(
        (status = 200, description = "With `dry_run=true`: `{\"would_create\":N,\"failed\":M,\"skipped\":K,\"results\":[{\"line\":1,\"ok\":true}|{\"line\":2,\"error\":…,\"code\"?:…}]}`, nothing stored. Else `{\"created\":N,\"failed\":M,\"skipped\":K,\"results\":[{\"line\":1,\"code\":…,\"short_url\":…,\"id\":…}|{\"line\":2,\"error\":…}|{\"line\":3,\"skipped\":…,\"code\":…}]}`; `line` counts every line of the body, blank ones too"),
        (status = 400, description = "Unreadable body, header or query, or too many lines", body = super::openapi::ErrorBody),
    ))]
pub async fn create(
    State(state): State<Arc<AppState>>,
    origin: super::host::RequestOrigin,
    grant: Option<Extension<Grant>>,
    query: Result<Query<BulkQuery>, QueryRejection>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<Value>, ApiError> {
    let Query(query) = query.map_err(|e| ApiError::bad_request(e.body_text()))?;
    let on_conflict = query.on_conflict.unwrap_or_default();
    let body = body.map_err(|e| {
        ApiError::body_rejected(
            e.status(),
            format!(
                "{} (at most {MAX_BODY} bytes per request: split the file)",
                e.body_text()
            ),
        )
    })?;
    if body.is_empty() {
        return Err(ApiError::bad_request(
            "the body is empty: send JSON lines or, with Content-Type text/csv, CSV",
        ));
    }
    let body = std::str::from_utf8(&body)
        .map_err(|e| ApiError::bad_request(format!("the body is not UTF-8 text: {e}")))?;
    let format = Format::detect(
        headers
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or(""),
    );
    let (numbers, mut items): (Vec<usize>, Vec<_>) = bulk_formats::parse(format, body)
        .map_err(ApiError::bad_request)?
        .into_iter()
        .unzip();
    if let Some(Extension(grant)) = grant {
        for item in items.iter_mut().flatten() {
            item.author = Some(grant.name.clone());
        }
    }
    let worker = Arc::clone(&state);
    if query.dry_run == Some(true) {
        let answers = blocking(move || worker.links.dry_run(&items)).await?;
        let (mut would, mut skipped) = (0, 0);
        let rows: Vec<Value> = answers
            .into_iter()
            .zip(numbers)
            .map(|(answer, line)| match answer {
                Ok(()) => {
                    would += 1;
                    json!({ "line": line, "ok": true })
                }
                Err(e) => line_error(e, line, on_conflict, &mut skipped),
            })
            .collect();
        let failed = rows.len() - would - skipped;
        return Ok(Json(
            json!({ "would_create": would, "failed": failed, "skipped": skipped, "results": rows }),
        ));
    }
    let results = blocking(move || {
        worker
            .links
            .create_many(items, &worker.ids, &worker.counters.engine)
    })
    .await?;
    let (mut created, mut skipped) = (0, 0);
    let rows: Vec<Value> = results
        .into_iter()
        .zip(numbers)
        .map(|(r, line)| match r {
            Ok(link) => {
                created += 1;
                json!({ "line": line, "code": link.code, "short_url": state.links.short_url(origin.as_deref(), &link), "id": link.id.to_string() })
            }
            Err(e) => line_error(e, line, on_conflict, &mut skipped),
        })
        .collect();
    let failed = rows.len() - created - skipped;
    Ok(Json(
        json!({ "created": created, "failed": failed, "skipped": skipped, "results": rows }),
    ))
}

/// A line's failure as the bulk answer writes it: a code or alias already stored names
/// the owner's code, and is `skipped` (counted in `skipped`) with `on_conflict=skip`.
fn line_error(e: LinkOpError, line: usize, on_conflict: OnConflict, skipped: &mut usize) -> Value {
    let conflict = match &e {
        LinkOpError::AliasTaken { owner_code, .. } => Some(owner_code.clone()),
        LinkOpError::CodeTaken(code) => Some(code.clone()),
        _ => None,
    };
    let message = op_error(e).message().to_string();
    match conflict {
        Some(code) if on_conflict == OnConflict::Skip => {
            *skipped += 1;
            json!({ "line": line, "skipped": message, "code": code })
        }
        Some(code) => json!({ "line": line, "error": message, "code": code }),
        None => json!({ "line": line, "error": message }),
    }
}

/// Query of the export.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct ExportQuery {
    /// `jsonl` (default) or `csv`.
    format: Option<String>,
    /// Only links with this tag.
    tag: Option<String>,
}

/// Every link as JSON lines or CSV, each with its code, creation time, click total and
/// clicks per day, so an import of it into an empty server restores the same links
/// with the same stats.
#[utoipa::path(get, path = "/api/links/export", tag = "links", params(ExportQuery),
    responses((status = 200, description = "Every link, in the bulk-create format: `{\"code\":…,\"url\":…,\"alias\"?:…,\"created_at\":…,\"expires_at\"?:…,\"max_visits\"?:…,\"redirect\":302,\"tags\"?:[…],\"clicks\":N,\"daily\"?:{\"2026-11-23\":N,…}}` a line, or CSV with header url,code,alias,created_at,expires_at,max_visits,redirect,tags,clicks,daily,password_protected (daily as 2026-11-23:N|…)"), (status = 400, description = "Bad query", body = super::openapi::ErrorBody)))]
pub async fn export(
    State(state): State<Arc<AppState>>,
    grant: Option<Extension<Grant>>,
    query: Result<Query<ExportQuery>, QueryRejection>,
) -> Result<Response, ApiError> {
    let Query(query) = query.map_err(|e| ApiError::bad_request(e.body_text()))?;
    let format = match query.format.as_deref() {
        None | Some("jsonl") => Format::JsonLines,
        Some("csv") => Format::Csv,
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "format must be jsonl or csv, got {other:?}"
            )))
        }
    };
    let body = blocking(move || {
        let mut out = Vec::new();
        let mut after = None;
        let mut header = true;
        let mut daily = state
            .links
            .clicks
            .all_daily(&state.counters.engine)
            .map_err(|e| {
                LinkOpError::Unavailable(format!("the click series cannot be read: {e}"))
            })?;
        let engine = &state.counters.engine;
        let mut analytics = state
            .links
            .analytics
            .flush(engine, &state.links.clicks)
            .and_then(|_| {
                shardkit_link_service::analytics::export::all(engine, &state.links.analytics.labels)
            })
            .map_err(|e| {
                LinkOpError::Unavailable(format!("the click analytics cannot be read: {e}"))
            })?;
        loop {
            let page = state
                .links
                .store()
                .list(query.tag.as_deref(), after, EXPORT_PAGE)?;
            let with_clicks: Vec<(Link, bulk_formats::Clicks)> = page
                .iter()
                // An author-only key exports the links it created.
                .filter(|l| grant.as_ref().is_none_or(|Extension(g)| g.may_see(l)))
                .map(|l| {
                    let clicks = bulk_formats::Clicks {
                        total: state.links.clicks.total(&state.counters.engine, l.id),
                        daily: daily.remove(&l.id).unwrap_or_default(),
                        analytics: analytics.remove(&l.id).unwrap_or_default(),
                    };
                    (l.clone(), clicks)
                })
                .collect();
            bulk_formats::write(format, &with_clicks, header, &mut out);
            header = false;
            match page.last() {
                Some(last) if page.len() == EXPORT_PAGE => after = Some(last.id),
                _ => break,
            }
        }
        Ok(out)
    })
    .await?;
    let content_type = if format == Format::Csv {
        "text/csv; charset=utf-8"
    } else {
        "application/x-ndjson"
    };
    Ok(([(header::CONTENT_TYPE, content_type)], body).into_response())
}

//! `POST /api/links/bulk` (JSON lines or CSV, one fsynced transaction per request)
//! and `GET /api/links/export` (the same formats, so an export imports back).

use super::links::{blocking, op_error};
use super::ApiError;
use crate::links::lines::{self, Format};
use crate::links::LinkOpError;
use crate::state::AppState;
use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, QueryRejection};
use axum::extract::{Query, State};
use axum::http::{header, HeaderMap};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Deserialize;
use serde_json::{json, Value};
use std::sync::Arc;

/// Largest bulk body, bytes (64 MiB): room for 100,000 long lines.
pub const MAX_BODY: usize = 64 << 20;

/// Links read from the store per export step.
const EXPORT_PAGE: usize = 10_000;

/// Creates every line of the body; answers one result per data line, in order.
#[utoipa::path(post, path = "/api/links/bulk", tag = "links",
    request_body(content = String, description = "JSON lines (one POST /api/links body a line) or, with Content-Type text/csv, CSV with header url,alias,expires_at,max_visits,redirect,tags (tags split by |)"),
    responses(
        (status = 200, description = "`{\"created\":N,\"failed\":M,\"results\":[{\"line\":1,\"code\":…,\"short_url\":…}|{\"line\":2,\"error\":…}]}`"),
        (status = 400, description = "Unreadable body or header, or too many lines", body = super::openapi::ErrorBody),
    ))]
pub async fn create(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<Value>, ApiError> {
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
    let requests = lines::parse(format, body).map_err(ApiError::bad_request)?;
    let worker = Arc::clone(&state);
    let results = blocking(move || worker.links.create_many(requests, &worker.ids)).await?;
    let mut created = 0;
    let rows: Vec<Value> = results
        .into_iter()
        .enumerate()
        .map(|(i, r)| match r {
            Ok(link) => {
                created += 1;
                json!({ "line": i + 1, "code": link.code, "short_url": state.links.short_url(&link), "id": link.id.to_string() })
            }
            Err(e) => {
                let owner = if let LinkOpError::AliasTaken { owner_code, .. } = &e { Some(owner_code.clone()) } else { None };
                let mut row = json!({ "line": i + 1, "error": op_error(e).message() });
                if let Some(code) = owner {
                    row["code"] = json!(code);
                }
                row
            }
        })
        .collect();
    let failed = rows.len() - created;
    Ok(Json(
        json!({ "created": created, "failed": failed, "results": rows }),
    ))
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

/// Every link as JSON lines or CSV.
#[utoipa::path(get, path = "/api/links/export", tag = "links", params(ExportQuery),
    responses((status = 200, description = "Every link, in the bulk-create format"), (status = 400, description = "Bad query", body = super::openapi::ErrorBody)))]
pub async fn export(
    State(state): State<Arc<AppState>>,
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
        loop {
            let page = state
                .links
                .store()
                .list(query.tag.as_deref(), after, EXPORT_PAGE)?;
            lines::write(format, &page, header, &mut out);
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

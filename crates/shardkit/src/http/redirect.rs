//! `GET /{code}`: **the redirect hot path.** Cache (then store) look-up, expiry and
//! visit-limit check, one click counted in memory, `Location` answer. No storage
//! write happens here; clicks reach the counter engine through the flusher.

use super::pages;
use crate::state::AppState;
use axum::extract::{Path, Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use shardkit_links::{day_of, now_ms, MAX_ALIAS_LEN};
use std::sync::Arc;

/// Redirects to the link's target with its status (302 by default).
#[utoipa::path(get, path = "/{code}", tag = "links",
    params(("code" = String, Path, description = "Code or alias")),
    responses(
        (status = 301, description = "Redirect with Location, for a link made with `redirect: 301`"),
        (status = 302, description = "Redirect with Location (the default)"),
        (status = 307, description = "Redirect with Location, for a link made with `redirect: 307`"),
        (status = 308, description = "Redirect with Location, for a link made with `redirect: 308`"),
        (status = 404, description = "Unknown code: an HTML page for browsers (Accept: text/html), else {\"error\":…}"),
        (status = 410, description = "Expired or out of visits: an HTML page for browsers, else {\"error\":…}"),
        (status = 503, description = "The link store cannot be read now (HTML)"),
    ))]
pub async fn follow(
    State(state): State<Arc<AppState>>,
    Path(code): Path<String>,
    request: Request,
) -> Response {
    let html = || pages::wants_html(request.headers());
    if code.is_empty() || code.len() > MAX_ALIAS_LEN {
        return pages::not_found(html(), &code);
    }
    let link = match state.links.lookup(&code) {
        Ok(Some(link)) => link,
        Ok(None) => return pages::not_found(html(), &code),
        Err(e) => {
            return pages::message(StatusCode::SERVICE_UNAVAILABLE, "Try again", &e.to_string())
        }
    };
    let now = now_ms();
    if link.expired_at(now) {
        return pages::gone(html(), &code, "it has expired");
    }
    if state
        .links
        .clicks
        .hit(
            &state.counters.engine,
            link.id,
            day_of(now),
            link.max_visits,
        )
        .is_none()
    {
        return pages::gone(html(), &code, "it has reached its visit limit");
    }
    let Ok(location) = HeaderValue::from_str(&link.url) else {
        return pages::message(
            StatusCode::SERVICE_UNAVAILABLE,
            "Broken link",
            "the stored target is not a valid header value",
        );
    };
    let status = StatusCode::from_u16(link.redirect.status()).unwrap_or(StatusCode::FOUND);
    crate::telemetry::add(&crate::telemetry::LINK_REDIRECTS, 1);
    (status, [(header::LOCATION, location)]).into_response()
}

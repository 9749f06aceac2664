//! The HTTP API (JSON): the router, the error shape, and the API-key check. One file
//! per group of endpoints.

mod counters;
mod error;
mod health;
mod ids;
mod ids_body;
mod json_body;
mod links;
mod links_bulk;
mod metrics;
mod openapi;
mod openapi_rules;
mod pages;
mod rate_limit;
mod redirect;
mod tickets;
mod ui;

pub use error::ApiError;

use crate::state::AppState;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{header, Method};
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::routing::{get, post};
use axum::Router;
use std::sync::Arc;

/// All routes, with the API-key check in front of every write and the per-client
/// rate limit in front of link creation.
pub fn router(state: Arc<AppState>) -> Router {
    let limiter = rate_limit::limiter(
        state.settings.links.create_per_second,
        state.settings.links.create_burst,
    );
    let limited = || middleware::from_fn_with_state(limiter.clone(), rate_limit::creation);
    Router::new()
        .route("/", get(ui::index))
        .route("/ui/links/{code}", get(ui::link_page))
        .route("/ui/links/{code}/qr.svg", get(ui::qr))
        .route(
            "/api/links",
            post(links::create).route_layer(limited()).get(links::list),
        )
        .route(
            "/api/links/bulk",
            post(links_bulk::create)
                .route_layer(limited())
                .layer(DefaultBodyLimit::max(links_bulk::MAX_BODY)),
        )
        .route("/api/links/export", get(links_bulk::export))
        .route(
            "/api/links/{code}",
            get(links::get)
                .patch(links::update)
                .put(links::replace)
                .delete(links::delete),
        )
        .route("/healthz", get(health::healthz))
        .route("/metrics", get(metrics::metrics))
        .route("/openapi.json", get(openapi::openapi))
        .route("/api/ids", post(ids::create))
        .route("/api/ids/{id}", get(ids::decode))
        .route("/api/tickets/{name}", post(tickets::create))
        .route("/api/counters/{counter}/mget", post(counters::mget))
        .route("/api/counters/{counter}/{key}", get(counters::get))
        .route("/api/counters/{counter}/{key}/incr", post(counters::incr))
        .fallback(|| async { ApiError::not_found("no such endpoint") })
        .method_not_allowed_fallback(|| async { ApiError::method_not_allowed() })
        .layer(middleware::from_fn_with_state(
            Arc::clone(&state),
            require_key_for_writes,
        ))
        .route_layer(middleware::from_fn(metrics::track))
        // The redirect hot path, after the layers: GET needs no key, and it is counted
        // by one atomic (`shardkit_link_redirects_total`) instead of the per-route
        // histogram, which costs more than the redirect itself.
        .route("/{code}", get(redirect::follow))
        .with_state(state)
}

/// With an API key configured, anything but GET and HEAD needs `Authorization: Bearer KEY`.
async fn require_key_for_writes(
    State(state): State<Arc<AppState>>,
    request: Request,
    next: Next,
) -> Result<Response, ApiError> {
    if state.settings.api_key.is_some() && !matches!(*request.method(), Method::GET | Method::HEAD)
    {
        let presented = request
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .map(str::as_bytes);
        if !state.key_ok(presented) {
            return Err(ApiError::unauthorized());
        }
    }
    Ok(next.run(request).await)
}

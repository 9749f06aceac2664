//! The HTTP API (JSON): the router, the error shape, and the API-key check. One file
//! per group of endpoints.

mod auth;
mod client_addr;
mod counters;
mod error;
mod health;
mod host;
mod ids;
mod ids_body;
mod json_body;
mod link_key;
mod links;
mod links_bulk;
mod metrics;
mod openapi;
mod openapi_rules;
mod pages;
mod rate_limit;
pub mod redirect;
pub mod regions;
mod stats;
mod tickets;
mod ui;
mod ui_charts;

pub use auth::parse_public;
pub use error::ApiError;

use axum::extract::DefaultBodyLimit;
use axum::handler::Handler;
use axum::middleware;
use axum::routing::{get, post};
use axum::Router;
use shardkit_node::state::AppState;
use std::sync::Arc;

/// All routes, with the key check (`auth.rs`: which role each route needs) in front of
/// everything but the redirect, and the per-client rate limit in front of link creation.
///
/// Fails only on an `[access] public` entry that names no route, which
/// [`crate::server::check_frontend_settings`] refuses before the server starts.
pub fn router(state: Arc<AppState>) -> anyhow::Result<Router> {
    let creation = rate_limit::Creation {
        limiter: rate_limit::limiter(
            state.settings.links.create_per_second,
            state.settings.links.create_burst,
        ),
        trusted: state.settings.http.trusted_proxies.clone().into(),
    };
    let limited = || middleware::from_fn_with_state(creation.clone(), rate_limit::creation);
    let auth_state = auth::AuthState {
        app: Arc::clone(&state),
        public: Arc::new(auth::parse_public(&state.settings.access.public)?),
        failures: auth::failure_limiter(),
    };
    let routes = Router::new()
        .route("/", get(ui::index))
        .route("/ui/dashboard", get(ui::dashboard))
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
        .route("/api/links/{code}/stats", get(stats::link))
        .route("/api/stats/top", get(stats::top))
        .route("/healthz", get(health::healthz))
        .route("/metrics", get(metrics::metrics))
        .route("/openapi.json", get(openapi::openapi))
        .route("/api/ids", post(ids::create))
        .route("/api/ids/{id}", get(ids::decode))
        .route("/api/tickets/{name}", post(tickets::create))
        .route("/api/counters/{counter}/mget", post(counters::mget))
        .route("/api/counters/{counter}/{key}", get(counters::get))
        .route("/api/counters/{counter}/{key}/incr", post(counters::incr));
    // The peer routes other regions call, only in a server of several regions.
    let routes = if state.regions.is_some() {
        routes
            .route("/api/regions/links/{path}", get(regions::link))
            .route("/api/regions/clicks/{id}", get(regions::clicks))
            .route("/api/regions/hit/{path}", post(regions::hit))
    } else {
        routes
    };
    // Password attempts are counted per client address by the unlock form alone.
    let attempts = axum::Extension(shardkit_link_service::password::password_attempts());
    Ok(routes
        .fallback(|| async { ApiError::not_found("no such endpoint") })
        .method_not_allowed_fallback(|| async { ApiError::method_not_allowed() })
        .layer(middleware::from_fn_with_state(auth_state, auth::check))
        .layer(middleware::from_fn_with_state(
            Arc::clone(&state),
            host::known_host,
        ))
        .route_layer(middleware::from_fn(metrics::track))
        // The redirect hot path, after the layers: GET needs no key, and it is counted
        // by one atomic (`shardkit_link_redirects_total`) instead of the per-route
        // histogram, which costs more than the redirect itself.
        .route(
            "/{code}",
            get(redirect::follow).post(redirect::unlock.layer(attempts)),
        )
        .with_state(state))
}

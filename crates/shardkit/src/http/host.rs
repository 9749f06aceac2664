//! The `Host` a request names: the origin its short URLs start with when
//! `[links] base_url` is unset ([`RequestOrigin`]), and the 421 for a Host that
//! `[links] hosts` (or `domains`) does not list ([`known_host`]), so a forged Host cannot mint short
//! URLs on a domain this server does not serve.

use super::{client_addr, ApiError};
use axum::extract::{FromRequestParts, Request, State};
use axum::http::request::Parts;
use axum::http::{header, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use shardkit_link_service::settings::host_key;
use shardkit_node::state::AppState;
use std::sync::Arc;

/// The origin (`scheme://host[:port]`) a request reached the server at, for its short
/// URLs; `None` when `base_url` is configured (it wins) or the request named no usable
/// host. The scheme is what a trusted proxy says (`X-Forwarded-Proto`, `Forwarded:
/// proto=`), else `https` when this server serves TLS itself, else `http`.
#[derive(Debug, Clone, Default)]
pub struct RequestOrigin(pub Option<String>);

impl RequestOrigin {
    /// As `Links` takes it.
    pub fn as_deref(&self) -> Option<&str> {
        self.0.as_deref()
    }
}

/// The request's host: HTTP/2's `:authority`, else the `Host` header.
fn named_host(parts: &Parts) -> Option<&str> {
    request_host(&parts.uri, &parts.headers)
}

/// The host a request names (HTTP/2's `:authority`, else the `Host` header), as
/// written: what `[links] domains` are matched against.
pub fn request_host<'a>(
    uri: &'a axum::http::Uri,
    headers: &'a axum::http::HeaderMap,
) -> Option<&'a str> {
    uri.authority()
        .map(|a| a.as_str())
        .or_else(|| headers.get(header::HOST)?.to_str().ok())
}

impl FromRequestParts<Arc<AppState>> for RequestOrigin {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &Arc<AppState>,
    ) -> Result<Self, Self::Rejection> {
        if !state.links.takes_request_origin() {
            return Ok(Self(None));
        }
        let Some(host) = named_host(parts).and_then(host_key) else {
            return Ok(Self(None));
        };
        let scheme = client_addr::forwarded_proto(
            client_addr::peer(&parts.extensions),
            &parts.headers,
            &state.settings.http.trusted_proxies,
        );
        let own = if state.settings.http.tls() {
            "https"
        } else {
            "http"
        };
        Ok(Self(Some(format!(
            "{}://{host}",
            scheme.as_deref().unwrap_or(own)
        ))))
    }
}

/// With `[links] hosts` set: a request naming a host neither it nor `domains` lists is answered 421
/// (Misdirected Request), before anything else looks at it. Health and metrics answer
/// whatever the Host, as monitors dial addresses.
pub async fn known_host(
    State(state): State<Arc<AppState>>,
    request: Request,
    next: Next,
) -> Response {
    let links = &state.settings.links;
    if links.hosts.is_empty() || matches!(request.uri().path(), "/healthz" | "/metrics") {
        return next.run(request).await;
    }
    let hosts: Vec<&String> = links.hosts.iter().chain(&links.domains).collect();
    let (parts, body) = request.into_parts();
    let named = named_host(&parts).and_then(host_key);
    let known = named
        .as_deref()
        .is_some_and(|n| hosts.iter().any(|h| host_key(h).as_deref() == Some(n)));
    if !known {
        return ApiError::new(
            StatusCode::MISDIRECTED_REQUEST,
            format!(
                "this server does not serve host {}: links.hosts lists {}",
                named.as_deref().unwrap_or("(none)"),
                hosts
                    .iter()
                    .map(|h| h.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        )
        .into_response();
    }
    next.run(Request::from_parts(parts, body)).await
}

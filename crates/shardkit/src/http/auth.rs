//! The key check in front of the API: which role each route needs, who the caller is,
//! and a per-address limit on failed checks.
//!
//! With no key configured everything is open (loopback by default). With a key (the
//! admin key or any named key), everything under `/api/`, `/metrics` and
//! `/openapi.json` needs one, except the routes the operator lists in `[access]
//! public`; the redirect `GET /{code}`, `/healthz`, the web page and the link pages
//! stay open.

use super::ApiError;
use axum::extract::{MatchedPath, Request, State};
use axum::http::{header, Method};
use axum::middleware::Next;
use axum::response::Response;
use governor::{Quota, RateLimiter};
use shardkit_node::api_keys::{Grant, Need};
use shardkit_node::state::AppState;
use std::net::IpAddr;
use std::num::NonZeroU32;
use std::sync::Arc;

/// What each route needs, by method and the router's path pattern. A route missing
/// here needs the admin key (so a new route is closed until someone decides).
const ROUTES: &[(&str, &str, Need)] = &[
    ("GET", "/", Need::Nothing),
    ("GET", "/ui/dashboard", Need::Nothing),
    ("GET", "/ui/links/{code}", Need::Nothing),
    ("GET", "/ui/links/{code}/qr.svg", Need::Nothing),
    ("GET", "/healthz", Need::Nothing),
    ("GET", "/metrics", Need::Admin),
    ("GET", "/openapi.json", Need::Admin),
    ("POST", "/api/ids", Need::Ids),
    ("GET", "/api/ids/{id}", Need::Ids),
    ("POST", "/api/tickets/{name}", Need::Ids),
    ("POST", "/api/counters/{counter}/mget", Need::CountersRead),
    ("GET", "/api/counters/{counter}/{key}", Need::CountersRead),
    (
        "POST",
        "/api/counters/{counter}/{key}/incr",
        Need::CountersWrite,
    ),
    ("POST", "/api/links", Need::LinksCreate),
    ("GET", "/api/links", Need::LinksRead),
    ("POST", "/api/links/bulk", Need::LinksCreate),
    ("GET", "/api/links/export", Need::LinksRead),
    ("GET", "/api/links/{code}", Need::LinkByCode),
    ("GET", "/api/links/{code}/stats", Need::LinkByCode),
    ("GET", "/api/stats/top", Need::LinksRead),
    ("PATCH", "/api/links/{code}", Need::Admin),
    ("PUT", "/api/links/{code}", Need::Admin),
    ("DELETE", "/api/links/{code}", Need::Admin),
];

/// What `method` on the route `pattern` needs, `public` (from `[access] public`) taken
/// into account.
pub fn need(method: &Method, pattern: &str, public: &[(String, String)]) -> Need {
    // HEAD is GET without a body.
    let method = if method == Method::HEAD {
        "GET"
    } else {
        method.as_str()
    };
    if public.iter().any(|(m, p)| m == method && p == pattern) {
        return Need::Nothing;
    }
    ROUTES
        .iter()
        .find(|(m, p, _)| *m == method && *p == pattern)
        .map_or(Need::Admin, |(_, _, need)| *need)
}

/// Parses `[access] public`: `"METHOD /pattern"` or `"/pattern"` (GET), each a route
/// of the API. Refuses an entry that names no route, so a typo does not leave a route
/// closed that the operator meant to open.
pub fn parse_public(entries: &[String]) -> anyhow::Result<Vec<(String, String)>> {
    entries
        .iter()
        .map(|entry| {
            let (method, pattern) = match entry.trim().split_once(' ') {
                Some((m, p)) => (m.trim().to_ascii_uppercase(), p.trim().to_string()),
                None => ("GET".to_string(), entry.trim().to_string()),
            };
            if !ROUTES.iter().any(|(m, p, _)| *m == method && *p == pattern) {
                let known: Vec<String> =
                    ROUTES.iter().map(|(m, p, _)| format!("{m} {p}")).collect();
                anyhow::bail!(
                    "access.public entry {entry:?} names no route; routes are: {}",
                    known.join(", ")
                );
            }
            Ok((method, pattern))
        })
        .collect()
}

/// Failed key checks per client address: a burst of 20, then 5 a second.
pub type FailureLimiter = governor::DefaultKeyedRateLimiter<IpAddr>;

/// The limiter of failed key checks.
pub fn failure_limiter() -> Arc<FailureLimiter> {
    Arc::new(RateLimiter::keyed(
        Quota::per_second(NonZeroU32::new(5).unwrap_or(NonZeroU32::MIN))
            .allow_burst(NonZeroU32::new(20).unwrap_or(NonZeroU32::MIN)),
    ))
}

/// What the middleware needs: the state, the parsed public routes and the limiter.
#[derive(Clone)]
pub struct AuthState {
    /// Server state (the keys).
    pub app: Arc<AppState>,
    /// `[access] public`, parsed.
    pub public: Arc<Vec<(String, String)>>,
    /// Failed checks per address.
    pub failures: Arc<FailureLimiter>,
}

/// The key in `Authorization: Bearer KEY`.
fn bearer(request: &Request) -> Option<&[u8]> {
    request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::as_bytes)
}

/// Checks the caller's key against what the route needs: 401 without a valid key, 403
/// with a key whose roles do not cover the route, 429 after too many failed checks
/// from one address. The caller's grant is put in the request's extensions.
pub async fn check(
    State(auth): State<AuthState>,
    mut request: Request,
    next: Next,
) -> Result<Response, ApiError> {
    let pattern = request
        .extensions()
        .get::<MatchedPath>()
        .map(|p| p.as_str().to_string());
    // The peer routes of `[regions]` take the regions' shared `peer_key` (when one is
    // set, only it); without one they need the admin key like any unlisted route.
    if pattern
        .as_deref()
        .is_some_and(|p| p.starts_with("/api/regions/"))
    {
        match super::regions::peer_key_shown(&auth.app, bearer(&request)) {
            Some(true) => return Ok(next.run(request).await),
            Some(false) => {
                metrics::counter!("shardkit_auth_failures_total").increment(1);
                return Err(ApiError::unauthorized());
            }
            None => {}
        }
    }
    if !auth.app.access.enforced() {
        return Ok(next.run(request).await);
    }
    let needed = match &pattern {
        Some(p) => need(request.method(), p, &auth.public),
        // No route matched: the 404/405 fallback tells nothing about the data.
        None => Need::Nothing,
    };
    if needed == Need::Nothing {
        return Ok(next.run(request).await);
    }
    let ip = super::client_addr::client(
        super::client_addr::peer(request.extensions()),
        request.headers(),
        &auth.app.settings.http.trusted_proxies,
    );
    let grant: Option<Grant> = auth.app.access.authenticate(bearer(&request));
    let Some(grant) = grant else {
        metrics::counter!("shardkit_auth_failures_total").increment(1);
        if auth.failures.check_key(&ip).is_err() {
            return Err(ApiError::too_many_requests(
                "too many failed key checks from this address; wait a moment and try again",
            ));
        }
        return Err(ApiError::unauthorized());
    };
    if !grant.allows(needed) {
        metrics::counter!("shardkit_auth_denied_total").increment(1);
        return Err(ApiError::forbidden(format!(
            "key {:?} ({}) may not do this: it needs {}",
            grant.name,
            grant
                .roles
                .iter()
                .map(|r| r.name())
                .collect::<Vec<_>>()
                .join(", "),
            needed.describe()
        )));
    }
    request.extensions_mut().insert(grant);
    Ok(next.run(request).await)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_need_their_role_and_unknown_ones_need_admin() {
        assert_eq!(need(&Method::GET, "/api/links", &[]), Need::LinksRead);
        assert_eq!(need(&Method::HEAD, "/api/links", &[]), Need::LinksRead);
        assert_eq!(need(&Method::POST, "/api/links", &[]), Need::LinksCreate);
        assert_eq!(need(&Method::GET, "/healthz", &[]), Need::Nothing);
        assert_eq!(need(&Method::GET, "/api/new-thing", &[]), Need::Admin);
        let public = parse_public(&["/api/links/{code}".into(), "get /metrics".into()]).unwrap();
        assert_eq!(
            need(&Method::GET, "/api/links/{code}", &public),
            Need::Nothing
        );
        assert_eq!(need(&Method::GET, "/metrics", &public), Need::Nothing);
        assert_eq!(
            need(&Method::DELETE, "/api/links/{code}", &public),
            Need::Admin
        );
    }

    #[test]
    fn a_public_entry_that_names_no_route_is_refused() {
        let err = parse_public(&["GET /api/linkz".into()])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("/api/linkz") && err.contains("GET /api/links"),
            "{err}"
        );
    }
}

//! `GET /{code}`: **the redirect hot path.** Cache (then store) look-up, expiry and
//! visit-limit check, the link's redirect rules (when it has any), one click counted
//! in memory, its referrer, User-Agent and
//! address queued for the analytics (classified later, off this path), `Location`
//! answer. No storage write happens here; clicks reach the counter engine through the
//! flusher.
//!
//! A link with a password answers a form instead; `POST /{code}` with the right
//! `password` counts the click and redirects (303), a wrong one answers 401 and the
//! form again. Attempts are limited per client address ([`shardkit_link_service::password::PasswordAttempts`]).

use super::{client_addr, pages};
use axum::body::Bytes;
use axum::extract::{Path, Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use shardkit_link_service::analytics::RawClick;
use shardkit_link_service::domains::{Domains, HostDomain};
use shardkit_link_service::password::PasswordAttempts;
use shardkit_link_service::redirect_rules;
use shardkit_link_service::webhooks::{ClickFacts, EventKind};
use shardkit_links::{day_of, now_ms, MAX_ALIAS_LEN};
use shardkit_node::state::AppState;
use std::borrow::Cow;
use std::net::IpAddr;
use std::sync::Arc;

/// Redirects to the link's target with its status (302 by default).
#[utoipa::path(get, path = "/{code}", tag = "links",
    params(("code" = String, Path, description = "Code or alias")),
    responses(
        (status = 301, description = "Redirect with Location, for a link made with `redirect: 301`"),
        (status = 302, description = "Redirect with Location (the default)"),
        (status = 307, description = "Redirect with Location, for a link made with `redirect: 307`"),
        (status = 308, description = "Redirect with Location, for a link made with `redirect: 308`"),
        (status = 200, description = "A link with a password: the form that asks for it (HTML)"),
        (status = 401, description = "A link with a password, asked for by an API client (Accept without text/html): {\"error\":…}"),
        (status = 404, description = "Unknown code: an HTML page for browsers (Accept: text/html), else {\"error\":…}"),
        (status = 410, description = "Expired or out of visits: an HTML page for browsers, else {\"error\":…}"),
        (status = 503, description = "The link store cannot be read now (HTML)"),
    ))]
pub async fn follow(
    State(state): State<Arc<AppState>>,
    Path(code): Path<String>,
    request: Request,
) -> Response {
    // A `&HeaderMap` (unlike a `&Request`) may be held across the remote fetch's await.
    let headers = request.headers();
    let html = || pages::wants_html(headers);
    let now = now_ms();
    let host = super::host::request_host(request.uri(), headers);
    let (link, home, key) = match find_link(&state, host, &code, now, html).await {
        Ok(found) => found,
        Err(answer) => return *answer,
    };
    if link.password_hash.is_some() {
        return if html() {
            pages::password_form(StatusCode::OK, &code, None)
        } else {
            super::ApiError::new(
                StatusCode::UNAUTHORIZED,
                "this link needs a password: POST it to this address as the form field password",
            )
            .into_response()
        };
    }
    let status = StatusCode::from_u16(link.redirect.status()).unwrap_or(StatusCode::FOUND);
    let visitor = Visitor::of(&request, &state.settings.http.trusted_proxies);
    let counted = match count_at_home(&state, &link, &key, home, html()).await {
        Ok(counted) => counted,
        Err(answer) => return *answer,
    };
    let target = redirect_rules::target(
        &link,
        visit_headers(request.headers(), request.uri(), visitor.ip),
        &state.links.analytics,
    );
    click_and_redirect(
        &state,
        &link,
        target,
        &code,
        now,
        status,
        html(),
        visitor,
        counted,
    )
}

/// What the redirect rules read of a request (nothing parsed here).
fn visit_headers<'a>(
    headers: &'a axum::http::HeaderMap,
    uri: &'a axum::http::Uri,
    ip: IpAddr,
) -> redirect_rules::VisitHeaders<'a> {
    let text = |name| {
        headers
            .get(name)
            .and_then(|v: &HeaderValue| v.to_str().ok())
    };
    redirect_rules::VisitHeaders {
        user_agent: text(header::USER_AGENT),
        accept_language: text(header::ACCEPT_LANGUAGE),
        query: uri.query(),
        ip,
    }
}

/// The link at `/{code}` on the domain `host` names, for one homed in another region
/// that region, and the key it was found by: from the local store, or (`[regions]`)
/// from the remote cache, fetched from its home on a miss; expired links answer 410,
/// and an uncached link of a region that cannot be reached 503 naming it. With
/// `[links] domains`, a Host that is none of them, or a code of another domain,
/// answers 404.
async fn find_link<'a, 'c>(
    state: &'a AppState,
    host: Option<&str>,
    code: &'c str,
    now: u64,
    html: impl Fn() -> bool,
) -> Result<(Arc<shardkit_links::Link>, Option<&'a str>, Cow<'c, str>), Box<Response>> {
    let served = state.links.domains().of_host(host);
    let domain = match served {
        HostDomain::Unknown => return Err(Box::new(pages::not_found(html(), code))),
        HostDomain::Served(domain) => domain,
        HostDomain::Any => None,
    };
    // Borrowed from `code` unless it is an alias of another domain: no allocation on
    // the redirect path otherwise.
    let key = Domains::key(domain, code);
    let (link, home) = find_by_key(state, &key, code, now, &html).await?;
    if !Domains::serves(served, &link) {
        return Err(Box::new(pages::not_found(html(), code)));
    }
    Ok((link, home, key))
}

/// [`find_link`] by the store key (`code` is what the visitor asked for, for pages).
async fn find_by_key<'a>(
    state: &'a AppState,
    key: &str,
    code: &str,
    now: u64,
    html: &impl Fn() -> bool,
) -> Result<(Arc<shardkit_links::Link>, Option<&'a str>), Box<Response>> {
    let home = match super::regions::home_of_path(state.regions.as_ref(), key) {
        super::regions::Home::Here => {
            return live_link(state, key, code, now, html)
                .await
                .map(|l| (l, None))
        }
        super::regions::Home::Nowhere => return Err(Box::new(pages::not_found(html(), code))),
        super::regions::Home::There(home) => home,
    };
    if code.is_empty() || code.len() > MAX_ALIAS_LEN {
        return Err(Box::new(pages::not_found(html(), code)));
    }
    let Some(regions) = &state.regions else {
        return Err(Box::new(pages::not_found(html(), code)));
    };
    let (answer, _) = regions
        .remote
        .get(key, || regions.peers.fetch_link(home, key))
        .await;
    let link = match answer {
        Ok(Some(link)) => link,
        Ok(None) => return Err(Box::new(pages::not_found(html(), code))),
        Err(reason) => return Err(Box::new(region_down(home, &reason))),
    };
    if link.expired_at(now) {
        return Err(Box::new(pages::gone(html(), code, "it has expired")));
    }
    Ok((link, Some(home)))
}

/// 503 for a link whose home region cannot be reached (and is not cached here).
fn region_down(home: &str, reason: &str) -> Response {
    let mut answer = pages::message(
        StatusCode::SERVICE_UNAVAILABLE,
        "Region unreachable",
        &format!("This link lives in region {home}, which cannot be reached now ({reason}). Try again later."),
    );
    if let Ok(value) = HeaderValue::from_str(home) {
        answer.headers_mut().insert("x-shardkit-region", value);
    }
    answer
}

/// A click of a remote link with a visit limit is counted by its home (so the limit
/// holds across regions): `Ok(true)` counted there, `Ok(false)` to count here.
async fn count_at_home(
    state: &AppState,
    link: &shardkit_links::Link,
    code: &str,
    home: Option<&str>,
    html: bool,
) -> Result<bool, Box<Response>> {
    let (Some(home), Some(regions), Some(_)) = (home, &state.regions, link.max_visits) else {
        return Ok(false);
    };
    match regions.peers.hit(home, code).await {
        Ok(true) => Ok(true),
        Ok(false) => Err(Box::new(pages::gone(
            html,
            code,
            "it has reached its visit limit",
        ))),
        Err(e) => Err(Box::new(region_down(home, &e.to_string()))),
    }
}

/// The link at store key `key` (asked for as `/{code}`) if it exists and has not
/// expired, else the page (or `{"error":…}`) that says why: 404, 410, or 503 when the
/// store cannot be read.
async fn live_link(
    state: &AppState,
    key: &str,
    code: &str,
    now: u64,
    html: &impl Fn() -> bool,
) -> Result<Arc<shardkit_links::Link>, Box<Response>> {
    if code.is_empty() || code.len() > MAX_ALIAS_LEN {
        return Err(Box::new(pages::not_found(html(), code)));
    }
    let link = match state.links.lookup(key).await {
        Ok(Some(link)) => link,
        Ok(None) => return Err(Box::new(pages::not_found(html(), code))),
        Err(e) => {
            return Err(Box::new(pages::message(
                StatusCode::SERVICE_UNAVAILABLE,
                "Try again",
                &e.to_string(),
            )))
        }
    };
    if link.expired_at(now) {
        return Err(Box::new(pages::gone(html(), code, "it has expired")));
    }
    Ok(link)
}

/// The parts of a request the click analytics read: copied here, classified later.
struct Visitor {
    referrer: Option<Box<str>>,
    agent: Option<Box<str>>,
    ip: IpAddr,
}

impl Visitor {
    fn of(request: &Request, trusted: &[ipnet::IpNet]) -> Visitor {
        let header = |name| {
            request
                .headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(Box::from)
        };
        Visitor {
            referrer: header(header::REFERER),
            agent: header(header::USER_AGENT),
            ip: client_addr::client(
                client_addr::peer(request.extensions()),
                request.headers(),
                trusted,
            ),
        }
    }
}

/// Counts one click (410 once the visit limit is reached) unless its home region
/// counted it already (`counted`), queues it for the analytics, and answers `status`
/// with `target` (the link's URL or the one its rules chose) as `Location`.
#[allow(clippy::too_many_arguments)]
fn click_and_redirect(
    state: &AppState,
    link: &Arc<shardkit_links::Link>,
    target: &str,
    code: &str,
    now: u64,
    status: StatusCode,
    html: bool,
    visitor: Visitor,
    counted: bool,
) -> Response {
    if !counted
        && !state.links.clicks.hit(
            &state.counters.engine,
            link.id,
            day_of(now),
            link.max_visits,
        )
    {
        return pages::gone(html, code, "it has reached its visit limit");
    }
    let Ok(location) = HeaderValue::from_str(target) else {
        return pages::message(
            StatusCode::SERVICE_UNAVAILABLE,
            "Broken link",
            "the stored target is not a valid header value",
        );
    };
    state.links.webhooks.emit_with(EventKind::Clicked, || {
        let facts = ClickFacts {
            target: target.into(),
            referrer: visitor.referrer.clone(),
            agent: visitor.agent.clone(),
            ip: visitor.ip,
        };
        (Arc::clone(link), Some(facts))
    });
    state.links.analytics.record(RawClick {
        id: link.id,
        day: day_of(now),
        referrer: visitor.referrer,
        agent: visitor.agent,
        ip: visitor.ip,
    });
    shardkit_node::telemetry::add(&shardkit_node::telemetry::LINK_REDIRECTS, 1);
    (status, [(header::LOCATION, location)]).into_response()
}

/// The body of `POST /{code}` (for the API document; the handler reads the form
/// itself so a link without a password takes any body).
#[derive(Debug, serde::Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub struct PasswordForm {
    /// The link's password (a link without one needs none).
    #[schema(min_length = 1, max_length = 128)]
    pub password: Option<String>,
}

/// The password form's answer: the right password redirects with 303 (after counting
/// the click), a wrong one answers 401 and the form again.
#[utoipa::path(post, path = "/{code}", tag = "links",
    params(("code" = String, Path, description = "Code or alias")),
    request_body(content = Option<PasswordForm>, content_type = "application/x-www-form-urlencoded",
        description = "password=… (a link without a password needs none)"),
    responses(
        (status = 303, description = "The right password (or a link without one): redirect with Location, the click counted"),
        (status = 400, description = "A field other than password, or a password that is empty or longer than 128 characters"),
        (status = 401, description = "A wrong or missing password: the form again (HTML)"),
        (status = 404, description = "Unknown code: an HTML page for browsers, else {\"error\":…}"),
        (status = 410, description = "Expired or out of visits"),
        (status = 429, description = "Too many attempts from this address; wait and try again"),
        (status = 503, description = "The link store cannot be read now (HTML)"),
    ))]
pub async fn unlock(
    State(state): State<Arc<AppState>>,
    axum::Extension(attempts): axum::Extension<Arc<PasswordAttempts>>,
    Path(code): Path<String>,
    request: Request,
) -> Response {
    let html = pages::wants_html(request.headers());
    let visitor = Visitor::of(&request, &state.settings.http.trusted_proxies);
    let ip = visitor.ip;
    // The body is read below; the rules need the headers after it.
    let (headers, uri) = (request.headers().clone(), request.uri().clone());
    if code.is_empty() || code.len() > MAX_ALIAS_LEN {
        return pages::not_found(html, &code);
    }
    let body = axum::body::to_bytes(request.into_body(), 4096)
        .await
        .unwrap_or_else(|_| Bytes::new());
    let (mut given, mut unknown) = (None, false);
    for (field, value) in url::form_urlencoded::parse(&body) {
        match field.as_ref() {
            "password" if given.is_none() => given = Some(value.into_owned()),
            "password" => {}
            _ => unknown = true,
        }
    }
    if unknown
        || given.as_ref().is_some_and(|p| {
            p.is_empty() || p.chars().count() > shardkit_link_service::password::MAX_PASSWORD_LEN
        })
    {
        return pages::answer(
            html,
            StatusCode::BAD_REQUEST,
            "Bad form",
            "The form takes one field, password, of 1 to 128 characters.",
        );
    }
    let now = now_ms();
    let host = super::host::request_host(&uri, &headers);
    let (link, home, key) = match find_link(&state, host, &code, now, || html).await {
        Ok(found) => found,
        Err(answer) => return *answer,
    };
    if let Some(hash) = link.password_hash.clone() {
        if attempts.check_key(&ip).is_err() {
            return pages::answer(
                html,
                StatusCode::TOO_MANY_REQUESTS,
                "Too many attempts",
                "Too many password attempts from this address; wait a minute and try again.",
            );
        }
        let Some(given) = given else {
            return pages::password_form(
                StatusCode::UNAUTHORIZED,
                &code,
                Some("Give the password (the form field password)."),
            );
        };
        let right = tokio::task::spawn_blocking(move || {
            shardkit_link_service::password::verify(given.as_bytes(), &hash)
        })
        .await
        .unwrap_or(false);
        if !right {
            metrics::counter!("shardkit_link_password_failures_total").increment(1);
            return pages::password_form(StatusCode::UNAUTHORIZED, &code, Some("Wrong password."));
        }
    }
    let counted = match count_at_home(&state, &link, &key, home, html).await {
        Ok(counted) => counted,
        Err(answer) => return *answer,
    };
    let target = redirect_rules::target(
        &link,
        visit_headers(&headers, &uri, ip),
        &state.links.analytics,
    );
    click_and_redirect(
        &state,
        &link,
        target,
        &code,
        now,
        StatusCode::SEE_OTHER,
        html,
        visitor,
        counted,
    )
}

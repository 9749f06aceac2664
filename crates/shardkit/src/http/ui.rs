//! The web page: `/` (a form that shortens a URL, with redirect rules if wanted, and
//! shows the short link and its QR code), `/ui/links/{code}` (target and rules, total
//! clicks, inline-SVG charts of people's
//! clicks per day and of the top referrers, countries, browsers, platforms and
//! devices) and `/ui/links/{code}/qr.svg`. Everything is embedded in the binary;
//! nothing is loaded from elsewhere.

use super::pages::{self, escape, page};
use crate::plural::plural;
use axum::extract::{Path, State};
use axum::http::{header, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use shardkit_link_service::analytics::classify::Dim;
use shardkit_link_service::analytics::query::{self, Days};
use shardkit_links::{day_of, format_day, now_ms, Link};
use shardkit_node::state::AppState;
use std::fmt::Write;
use std::sync::Arc;

const INDEX: &str = include_str!("assets/index.html");
const DASHBOARD: &str = include_str!("assets/dashboard.html");
/// The redirect rules' row template and the script that adds, fills and reads rows:
/// the form and the dashboard's editor share them.
const RULE_ROWS: &str = include_str!("assets/rule_rows.html");

/// The form. When creating links needs a key, the page says so and takes one (kept in
/// the tab's session storage, sent as a bearer header). With `[links] domains` it asks
/// which domain (the default first).
#[utoipa::path(get, path = "/", tag = "ui", responses((status = 200, description = "HTML form to shorten a URL")))]
pub async fn index(State(state): State<Arc<AppState>>) -> Html<String> {
    let public = super::auth::parse_public(&state.settings.access.public).unwrap_or_default();
    let needs_key = state.access.enforced()
        && super::auth::need(&axum::http::Method::POST, "/api/links", &public)
            != shardkit_node::api_keys::Need::Nothing;
    let form = with_parts(INDEX, &domain_select(&state, None));
    let body = format!("<div hidden data-needs-key=\"{needs_key}\" id=\"needs-key\"></div>{form}");
    Html(page("Shorten a link", &body))
}

/// The dashboard: every link, searched, sorted and paged, each with edit and delete,
/// and the whole site's top links, referrers and countries over chosen days. The page
/// itself is public and holds no data; its script calls the API with the key the
/// person gives (kept in the tab's session storage), as the form does.
#[utoipa::path(get, path = "/ui/dashboard", tag = "ui", responses((status = 200, description = "HTML page listing the links")))]
pub async fn dashboard(State(state): State<Arc<AppState>>) -> Html<String> {
    let domains = domain_select(&state, Some("every domain"));
    Html(page("Links", &with_parts(DASHBOARD, &domains)))
}

/// With `[links] domains`, a `<select id="domain">` of them (the default first), after
/// an option for none with the label `any` when given; else nothing.
fn domain_select(state: &AppState, any: Option<&str>) -> String {
    let mut select = String::new();
    if !state.links.domains().is_set() {
        return select;
    }
    select.push_str("<label>Domain <select id=\"domain\" name=\"domain\">");
    if let Some(any) = any {
        let _ = write!(select, "<option value=\"\">{}</option>", escape(any));
    }
    for name in state.links.domains().names() {
        let _ = write!(
            select,
            "<option value=\"{n}\">{n}</option>",
            n = escape(name)
        );
    }
    select.push_str("</select></label>");
    select
}

/// A page's template with its shared parts put in: the domain select at
/// `<!--domains-->`, the redirect rules' row template and script at `<!--rule-rows-->`.
fn with_parts(template: &str, domains: &str) -> String {
    template
        .replace("<!--domains-->", domains)
        .replace("<!--rule-rows-->", RULE_ROWS)
}

/// Bars of clicks per day as an SVG (no script, no outside file).
pub fn chart(days: &[(String, u64)]) -> String {
    let (width, height, pad) = (600u64, 160u64, 20u64);
    let max = days.iter().map(|(_, n)| *n).max().unwrap_or(0).max(1);
    // Bars at most 40 wide, so a link a day old shows one bar, not a wall of blue.
    let slot = ((width - 2 * pad) / days.len().max(1) as u64).min(40);
    let mut svg = format!("<svg class=\"chart\" role=\"img\" aria-label=\"clicks per day\" viewBox=\"0 0 {width} {}\" width=\"100%\">", height + 24);
    for (i, (day, n)) in days.iter().enumerate() {
        let h = (height - pad) * n / max;
        let x = pad + i as u64 * slot;
        let _ = write!(
            svg,
            "<rect x=\"{x}\" y=\"{}\" width=\"{}\" height=\"{h}\"><title>{day}: {n}</title></rect>",
            height - h,
            slot.saturating_sub(2).max(1)
        );
    }
    if let (Some((first, _)), Some((last, _))) = (days.first(), days.last()) {
        let _ = write!(
            svg,
            "<text x=\"{pad}\" y=\"{}\" font-size=\"12\">{first}</text>",
            height + 18
        );
        if days.len() > 1 {
            let _ = write!(
                svg,
                "<text x=\"{}\" y=\"{}\" font-size=\"12\" text-anchor=\"end\">{last}</text>",
                pad + slot * days.len() as u64,
                height + 18
            );
        }
    }
    let _ = write!(
        svg,
        "<text x=\"{pad}\" y=\"12\" font-size=\"12\">max {max}/day</text></svg>"
    );
    svg
}

/// The QR code of `text` as SVG, drawn from the module matrix (no renderer feature).
pub fn qr_svg(text: &str) -> Option<String> {
    let code = qrcode::QrCode::new(text.as_bytes()).ok()?;
    let width = code.width();
    let quiet = 4;
    let size = width + 2 * quiet;
    let colors = code.to_colors();
    let mut path = String::new();
    for (i, color) in colors.iter().enumerate() {
        if *color == qrcode::Color::Dark {
            let _ = write!(path, "M{} {}h1v1h-1z", i % width + quiet, i / width + quiet);
        }
    }
    Some(format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {size} {size}\" shape-rendering=\"crispEdges\"><rect width=\"{size}\" height=\"{size}\" fill=\"#fff\"/><path d=\"{path}\" fill=\"#000\"/></svg>"
    ))
}

/// A redirect rule's condition in words.
fn rule_text(condition: &shardkit_links::Condition) -> String {
    use shardkit_links::{Condition, QueryMatch};
    match condition {
        Condition::Device(device) => format!("device {}", device.name()),
        Condition::Language(tag) => format!("language {tag}"),
        Condition::Country(code) => format!("country {code}"),
        Condition::Cidr(net) => format!("address in {net}"),
        Condition::Query(wanted) => {
            let parts: Vec<String> = wanted
                .iter()
                .map(|(name, want)| match want {
                    QueryMatch::Present => name.clone(),
                    QueryMatch::Equals(value) => format!("{name}={value}"),
                })
                .collect();
            format!("query {}", parts.join("&"))
        }
    }
}

/// The store key of the page's link: `{code}` with the page's `?domain=` (an alias of a
/// domain other than the default); a domain this server does not serve is a 421 page
/// naming it, as the API answers.
fn page_key(state: &AppState, uri: &axum::http::Uri, code: &str) -> Result<String, Box<Response>> {
    let domain = super::link_key::domain_param(uri.query());
    state
        .links
        .domains()
        .key_for(domain.as_deref(), code)
        .map_err(|e| {
            Box::new(pages::message(
                StatusCode::MISDIRECTED_REQUEST,
                "Unknown domain",
                &e.to_string(),
            ))
        })
}

/// A link's page: target, its redirect rules, total clicks, the chart and the QR code.
#[utoipa::path(get, path = "/ui/links/{code}", tag = "ui", params(("code" = String, Path, description = "Code or alias"),
        ("domain" = Option<String>, Query, description = "With `[links] domains`: the domain of an alias (default: the first domain)")),
    responses((status = 200, description = "HTML page of the link"), (status = 421, description = "`domain` names no domain this server serves (HTML)"), (status = 404, description = "Unknown code (HTML)")))]
pub async fn link_page(
    State(state): State<Arc<AppState>>,
    origin: super::host::RequestOrigin,
    uri: axum::http::Uri,
    Path(code): Path<String>,
) -> Response {
    let key = match page_key(&state, &uri, &code) {
        Ok(key) => key,
        Err(answer) => return *answer,
    };
    let link = match state.links.lookup(&key).await {
        Ok(Some(link)) => link,
        Ok(None) => return pages::not_found(true, &code),
        Err(e) => {
            return pages::message(StatusCode::SERVICE_UNAVAILABLE, "Try again", &e.to_string())
        }
    };
    let engine = &state.counters.engine;
    let total = state.links.clicks.total(engine, link.id);
    let days = people_per_day(&state, &link);
    let short = state.links.short_url(origin.as_deref(), &link);
    let qr = qr_svg(&short).unwrap_or_default();
    let mut body = format!(
        "<h1>/{path}</h1><p>Short link: <a id=\"short\" href=\"{s}\">{s}</a></p><p>Goes to <a id=\"target\" href=\"{t}\">{t}</a></p>\
         <p><span id=\"clicks\" class=\"big\">{total}</span> {clicks_word}</p>",
        path = escape(link.path()),
        s = escape(&short),
        t = escape(&link.url),
        clicks_word = if total == 1 { "click" } else { "clicks" },
    );
    if let Some(domain) = state.links.domains().of_link(&link) {
        let _ = write!(
            body,
            "<p>Domain: <span id=\"domain\">{}</span></p>",
            escape(domain)
        );
    }
    if !link.rules.is_empty() {
        body.push_str("<p>Except, first match first:</p><ol id=\"rules\">");
        for rule in &link.rules {
            let _ = write!(
                body,
                "<li>{} → <a href=\"{u}\">{u}</a></li>",
                escape(&rule_text(&rule.when)),
                u = escape(&rule.url)
            );
        }
        body.push_str("</ol>");
    }
    if let Some(gone) = gone_reason(&link, total, now_ms()) {
        let _ = write!(
            body,
            "<p id=\"gone\"><strong>This link now answers 410 Gone: {}.</strong></p>",
            escape(&gone)
        );
    }
    if let Some(expires) = shardkit_link_service::expiry_text(&link) {
        let verb = if link.expired_at(now_ms()) {
            "Expired"
        } else {
            "Expires"
        };
        let _ = write!(body, "<p class=\"muted\">{verb} {}</p>", escape(&expires));
    }
    if let Some(max) = link.max_visits {
        let _ = write!(
            body,
            "<p class=\"muted\">At most {}</p>",
            plural(max, "visit")
        );
    }
    let _ = write!(
        body,
        "<h2>Clicks per day</h2>{}{}<div style=\"width:180px\">{qr}</div><p><a href=\"/\">Shorten another</a></p>",
        chart(&days),
        analytics(&state, &link)
    );
    Html(page(&format!("/{}", link.path()), &body)).into_response()
}

/// The last 30 days (from the link's creation day) with their people's clicks.
fn people_per_day(state: &AppState, link: &Link) -> Vec<(String, u64)> {
    let today = day_of(now_ms());
    let first = day_of(link.created_at)
        .max(today.saturating_sub(shardkit_link_service::SERIES_DAYS - 1))
        .min(today);
    let Ok(days) = Days::new(first, today) else {
        return Vec::new();
    };
    query::link_days(&state.counters.engine, link.id, days)
        .unwrap_or_default()
        .into_iter()
        .map(|(d, people, _)| (format_day(d), people))
        .collect()
}

/// The analytics of the last 30 days: people and bots, and the top values of each
/// dimension as bar charts.
fn analytics(state: &AppState, link: &Link) -> String {
    let engine = &state.counters.engine;
    let today = day_of(now_ms());
    let Ok(days) = Days::new(
        today.saturating_sub(shardkit_link_service::SERIES_DAYS - 1),
        today,
    ) else {
        return String::new();
    };
    let per_day = query::link_days(engine, link.id, days).unwrap_or_default();
    let people: u64 = per_day.iter().map(|d| d.1).sum();
    let bots: u64 = per_day.iter().map(|d| d.2).sum();
    let mut html = format!(
        "<p class=\"muted\">Last 30 days: <span id=\"people\">{people}</span> from people, \
         <span id=\"bots\">{bots}</span> from bots (not in the charts).</p><div class=\"stats\">"
    );
    let labels = &state.links.analytics.labels;
    for (dim, title) in [
        (Dim::Referrer, "Referrers"),
        (Dim::Country, "Countries"),
        (Dim::Browser, "Browsers"),
        (Dim::Os, "Platforms"),
        (Dim::Device, "Devices"),
    ] {
        if dim == Dim::Country && !state.links.analytics.has_geo() {
            continue;
        }
        let values = query::link_values(engine, labels, link.id, dim, days).unwrap_or_default();
        html.push_str(&super::ui_charts::bars(
            &format!("chart-{}", dim.name()),
            title,
            &values,
        ));
    }
    html.push_str("</div>");
    html
}

/// Why the link's redirect answers 410 now, if it does: the same checks as `GET /{code}`.
fn gone_reason(link: &Link, clicks: u64, now: u64) -> Option<String> {
    if link.expired_at(now) {
        return Some(format!(
            "it expired at {}",
            shardkit_link_service::expiry_text(link).unwrap_or_default()
        ));
    }
    match link.max_visits {
        Some(max) if clicks >= max => Some(format!(
            "it has had its {} (its visit limit)",
            plural(max, "visit")
        )),
        _ => None,
    }
}

/// The QR code of a link's short URL.
#[utoipa::path(get, path = "/ui/links/{code}/qr.svg", tag = "ui", params(("code" = String, Path, description = "Code or alias"),
        ("domain" = Option<String>, Query, description = "With `[links] domains`: the domain of an alias (default: the first domain)")),
    responses((status = 200, description = "SVG image"), (status = 421, description = "`domain` names no domain this server serves (HTML)"), (status = 404, description = "Unknown code")))]
pub async fn qr(
    State(state): State<Arc<AppState>>,
    origin: super::host::RequestOrigin,
    uri: axum::http::Uri,
    Path(code): Path<String>,
) -> Response {
    let key = match page_key(&state, &uri, &code) {
        Ok(key) => key,
        Err(answer) => return *answer,
    };
    match state.links.lookup(&key).await {
        Ok(Some(link)) => match qr_svg(&state.links.short_url(origin.as_deref(), &link)) {
            Some(svg) => (
                [
                    (header::CONTENT_TYPE, "image/svg+xml"),
                    (header::CACHE_CONTROL, "public, max-age=86400"),
                ],
                svg,
            )
                .into_response(),
            None => pages::message(
                StatusCode::SERVICE_UNAVAILABLE,
                "No QR code",
                "the short URL is too long for a QR code",
            ),
        },
        Ok(None) => pages::not_found(true, &code),
        Err(e) => pages::message(StatusCode::SERVICE_UNAVAILABLE, "Try again", &e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn qr_and_chart_are_svg() {
        let svg = super::qr_svg("http://127.0.0.1:8080/a000001").unwrap();
        assert!(svg.starts_with("<svg") && svg.contains("h1v1h-1z"));
        let chart = super::chart(&[("2026-11-21".into(), 0), ("2026-11-22".into(), 5)]);
        assert_eq!(chart.matches("<rect").count(), 2);
    }
}

//! `POST /api/links`, `GET /api/links`, `GET|PATCH|PUT|DELETE /api/links/{code}`:
//! the JSON API of short links. Storage work runs on a blocking thread (every write
//! is an fsynced transaction), except a plain create on the embedded store, which
//! awaits its group commit without a thread.

use super::host::RequestOrigin;
use super::link_key::LinkKey;
use super::{regions, ApiError};
use axum::body::Bytes;
use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::extract::{Query, State};
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use serde::Deserialize;
use serde_json::{json, Value};
use shardkit_link_service::{LinkOpError, LinkPatch, NewLink};
use shardkit_node::api_keys::Grant;
use shardkit_node::state::AppState;
use std::sync::Arc;

/// Most links one list page holds.
pub const MAX_PAGE: usize = 1_000;

/// An operation error as the API answers it.
pub fn op_error(e: LinkOpError) -> ApiError {
    match e {
        LinkOpError::Invalid(m) => ApiError::bad_request(m),
        LinkOpError::AliasTaken { ref owner_code, .. } => {
            let owner = owner_code.clone();
            ApiError::conflict(e.to_string(), "code", owner)
        }
        LinkOpError::CodeTaken(ref code) => {
            let code = code.clone();
            ApiError::conflict(e.to_string(), "code", code)
        }
        LinkOpError::NotFound(_) => ApiError::not_found(e.to_string()),
        LinkOpError::Unavailable(m) => ApiError::unavailable(m),
        LinkOpError::NoSuchRegion { ref region, .. } => {
            let region = region.clone();
            ApiError::new(StatusCode::MISDIRECTED_REQUEST, e.to_string()).with("region", region)
        }
        LinkOpError::NoSuchDomain { ref domain, .. } => {
            let domain = domain.clone();
            ApiError::new(StatusCode::MISDIRECTED_REQUEST, e.to_string()).with("domain", domain)
        }
        LinkOpError::OtherRegion { ref region, .. } => {
            let region = region.clone();
            ApiError::new(StatusCode::MISDIRECTED_REQUEST, e.to_string()).with("region", region)
        }
    }
}

/// Runs storage work off the async threads.
pub async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, LinkOpError> + Send + 'static,
) -> Result<T, ApiError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| ApiError::unavailable(format!("the request was cut short: {e}")))?
        .map_err(op_error)
}

/// Creates a link: 201 with the link, or 200 with an existing one for `"reuse": true`.
#[utoipa::path(post, path = "/api/links", tag = "links", request_body = NewLink,
    responses(
        (status = 201, description = "Created: the link with code, short_url, url and id (a string)"),
        (status = 200, description = "An existing link for the same URL (reuse)"),
        (status = 400, description = "Bad URL, alias, expiry, limit or redirect", body = super::openapi::ErrorBody),
        (status = 401, description = "API key missing or wrong", body = super::openapi::ErrorBody),
        (status = 409, description = "Alias taken: `code` names the owner", body = super::openapi::ErrorBody),
        (status = 421, description = "With `[regions]`: `region` names no region of the deployment (a server without `[regions]` has none); `region` names it", body = super::openapi::ErrorBody),
        (status = 429, description = "Too many creations from this client", body = super::openapi::ErrorBody),
        (status = 503, description = "Storage failing, or (`[regions]`) the link's home region cannot be reached: `region` names it", body = super::openapi::ErrorBody),
    ))]
pub async fn create(
    State(state): State<Arc<AppState>>,
    origin: RequestOrigin,
    grant: Option<Extension<Grant>>,
    headers: HeaderMap,
    body: Result<Json<Value>, JsonRejection>,
) -> Result<Response, ApiError> {
    let mut request: NewLink = super::json_body::read(body)?;
    // One region of several: a link homed elsewhere is made there (the caller's key
    // goes along), with its home named so the other region needs to work nothing out.
    if let (Some(regions), Some(home)) = (
        &state.regions,
        state.links.home_of(&request).map_err(op_error)?,
    ) {
        if home != regions.map.this() {
            request.region = Some(home.clone());
            let body =
                serde_json::to_vec(&request).map_err(|e| ApiError::bad_request(e.to_string()))?;
            return regions::forward(
                &state,
                &home,
                Method::POST,
                "/api/links",
                &headers,
                body.into(),
            )
            .await;
        }
    }
    let author = grant.map(|Extension(g)| g.name);
    // On the embedded store a create only waits for its (shared) commit: no thread of
    // its own. Otherwise (PostgreSQL round trips, a password to hash) a blocking thread.
    let in_place = state
        .links
        .create_in_place(
            &request,
            author.as_deref(),
            &state.ids,
            &state.counters.engine,
        )
        .await;
    let (link, created) = match in_place {
        Some(result) => result.map_err(op_error)?,
        None => {
            let worker = Arc::clone(&state);
            blocking(move || {
                worker.links.create(
                    &request,
                    author.as_deref(),
                    &worker.ids,
                    &worker.counters.engine,
                )
            })
            .await?
        }
    };
    let status = if created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((status, Json(state.links.view(origin.as_deref(), &link))).into_response())
}

/// The link with its clicks and daily series.
#[utoipa::path(get, path = "/api/links/{code}", tag = "links",
    params(("code" = String, Path, description = "Code or alias"),
        ("domain" = Option<String>, Query, description = "With `[links] domains`: the domain of an alias (default: the first domain)")),
    responses((status = 421, description = "`domain` names no domain this server serves (`[links] domains`); `domain` names it", body = super::openapi::ErrorBody),
        (status = 200, description = "The link with `clicks` (total) and `daily` ([{day, clicks}], last 30 days)"),
        (status = 404, description = "No such link", body = super::openapi::ErrorBody),
        (status = 503, description = "Storage failing, or (`[regions]`) the link's home region cannot be reached: `region` names it", body = super::openapi::ErrorBody),
    ))]
pub async fn get(
    State(state): State<Arc<AppState>>,
    origin: RequestOrigin,
    grant: Option<Extension<Grant>>,
    headers: HeaderMap,
    link_key: LinkKey,
) -> Result<Response, ApiError> {
    if let Some(answer) = elsewhere(&state, Method::GET, &link_key, &headers, Bytes::new()).await {
        return answer;
    }
    let LinkKey { key, code, .. } = link_key;
    let link = state
        .links
        .lookup(&key)
        .await
        .map_err(|e| ApiError::unavailable(e.to_string()))?
        // An author-only key is told nothing of others' links.
        .filter(|l| grant.as_ref().is_none_or(|Extension(g)| g.may_see(l)));
    let link = link.ok_or_else(|| op_error(LinkOpError::NotFound(code)))?;
    Ok(Json(regions::view_summed(&state, origin.as_deref(), &link).await).into_response())
}

/// With `[regions]`, the answer for a request about a link homed in another region
/// (forwarded there whole) or in a code group no region owns (404); `None`: the link
/// is homed here.
pub(super) async fn elsewhere(
    state: &AppState,
    method: Method,
    link: &LinkKey,
    headers: &HeaderMap,
    body: Bytes,
) -> Option<Result<Response, ApiError>> {
    let path = link.api_path("");
    elsewhere_at(state, method, &link.key, &path, headers, body).await
}

/// [`elsewhere`] for a request to `path_and_query` (a sub-route of the link's) about
/// the link at store key `code`.
pub(super) async fn elsewhere_at(
    state: &AppState,
    method: Method,
    code: &str,
    path_and_query: &str,
    headers: &HeaderMap,
    body: Bytes,
) -> Option<Result<Response, ApiError>> {
    match regions::home_of_path(state.regions.as_ref(), code) {
        regions::Home::Here => None,
        regions::Home::Nowhere => Some(Err(op_error(LinkOpError::NotFound(code.to_string())))),
        regions::Home::There(home) => {
            let answer = regions::forward(state, home, method, path_and_query, headers, body).await;
            if let Some(regions) = &state.regions {
                // A change made through this region is seen here at once.
                regions.remote.forget(code);
            }
            Some(answer)
        }
    }
}

/// Changes the target, expiry, limit, redirect or tags (PATCH and PUT alike).
#[utoipa::path(patch, path = "/api/links/{code}", tag = "links", request_body = LinkPatch,
    params(("code" = String, Path, description = "Code or alias"),
        ("domain" = Option<String>, Query, description = "With `[links] domains`: the domain of an alias (default: the first domain)")),
    responses((status = 421, description = "`domain` names no domain this server serves (`[links] domains`); `domain` names it", body = super::openapi::ErrorBody),
        (status = 200, description = "The link as changed"),
        (status = 400, description = "Bad field", body = super::openapi::ErrorBody),
        (status = 404, description = "No such link", body = super::openapi::ErrorBody),
        (status = 503, description = "Storage failing, or (`[regions]`) the link's home region cannot be reached: `region` names it", body = super::openapi::ErrorBody),
    ))]
pub async fn update(
    State(state): State<Arc<AppState>>,
    origin: RequestOrigin,
    method: Method,
    headers: HeaderMap,
    link_key: Result<LinkKey, ApiError>,
    body: Result<Json<Value>, JsonRejection>,
) -> Result<Response, ApiError> {
    let Json(raw) = body.map_err(|e| ApiError::body_rejected(e.status(), e.body_text()))?;
    let bytes = Bytes::from(serde_json::to_vec(&raw).unwrap_or_default());
    let patch: LinkPatch = super::json_body::read(Ok(Json(raw)))?;
    // After the body: a bad field is the request's own (400), an unknown domain the
    // deployment's (421).
    state.links.check_patch(&patch).map_err(op_error)?;
    let link_key = link_key?;
    if let Some(answer) = elsewhere(&state, method, &link_key, &headers, bytes).await {
        return answer;
    }
    let worker = Arc::clone(&state);
    let link = blocking(move || worker.links.update(&link_key.key, &patch)).await?;
    Ok(Json(state.links.view(origin.as_deref(), &link)).into_response())
}

/// `PUT /api/links/{code}`: the same as PATCH.
#[utoipa::path(put, path = "/api/links/{code}", tag = "links", request_body = LinkPatch,
    params(("code" = String, Path, description = "Code or alias"),
        ("domain" = Option<String>, Query, description = "With `[links] domains`: the domain of an alias (default: the first domain)")),
    responses((status = 421, description = "`domain` names no domain this server serves (`[links] domains`); `domain` names it", body = super::openapi::ErrorBody),(status = 200, description = "The link as changed"), (status = 400, description = "Bad field", body = super::openapi::ErrorBody), (status = 404, description = "No such link", body = super::openapi::ErrorBody),
        (status = 503, description = "Storage failing, or (`[regions]`) the link's home region cannot be reached", body = super::openapi::ErrorBody)))]
pub async fn replace(
    state: State<Arc<AppState>>,
    origin: RequestOrigin,
    method: Method,
    headers: HeaderMap,
    link_key: Result<LinkKey, ApiError>,
    body: Result<Json<Value>, JsonRejection>,
) -> Result<Response, ApiError> {
    update(state, origin, method, headers, link_key, body).await
}

/// Deletes a link; its code and alias then answer 404.
#[utoipa::path(delete, path = "/api/links/{code}", tag = "links",
    params(("code" = String, Path, description = "Code or alias"),
        ("domain" = Option<String>, Query, description = "With `[links] domains`: the domain of an alias (default: the first domain)")),
    responses((status = 421, description = "`domain` names no domain this server serves (`[links] domains`); `domain` names it", body = super::openapi::ErrorBody),(status = 204, description = "Deleted"), (status = 404, description = "No such link", body = super::openapi::ErrorBody),
        (status = 503, description = "Storage failing, or (`[regions]`) the link's home region cannot be reached", body = super::openapi::ErrorBody)))]
pub async fn delete(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    link_key: LinkKey,
) -> Result<Response, ApiError> {
    if let Some(answer) = elsewhere(&state, Method::DELETE, &link_key, &headers, Bytes::new()).await
    {
        return answer;
    }
    blocking(move || state.links.delete(&link_key.key, &state.counters.engine)).await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// Query of the list.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct ListQuery {
    /// Only links with this tag.
    tag: Option<String>,
    /// `next_cursor` of the previous page.
    cursor: Option<String>,
    /// Links per page (1 to 1000, default 100).
    limit: Option<usize>,
    /// A search: text the URL, code or alias contains (case ignored). Any of `q`,
    /// `sort`, `order`, `offset` and `domain` makes the list a search, answered with
    /// `total` and each link's `clicks`, paged by `offset` instead of `cursor`; it reads
    /// every link once.
    q: Option<String>,
    /// A search's order: `created` (the default) or `clicks`.
    #[param(pattern = "^(created|clicks)$")]
    sort: Option<String>,
    /// A search's direction: `desc` (the default) or `asc`.
    #[param(pattern = "^(desc|asc)$")]
    order: Option<String>,
    /// A search's matching links skipped before the page (at most 100,000).
    #[param(maximum = 100_000)]
    offset: Option<usize>,
    /// A search of one domain's links (`[links] domains`).
    domain: Option<String>,
}

impl ListQuery {
    /// Whether this is a search (answered by [`search`]) rather than the plain list.
    fn is_search(&self) -> bool {
        self.q.is_some()
            || self.sort.is_some()
            || self.order.is_some()
            || self.offset.is_some()
            || self.domain.is_some()
    }
}

/// Links in id order (creation time, then shard), a page at a time; or a search.
#[utoipa::path(get, path = "/api/links", tag = "links", params(ListQuery),
    responses(
        (status = 200, description = "`{\"links\":[…],\"next_cursor\":\"…\"|null}`; a search: `{\"links\":[…each with clicks…],\"total\":N,\"next_offset\":N|null}`"),
        (status = 400, description = "Bad cursor, limit, sort, order or offset, or a cursor with a search", body = super::openapi::ErrorBody),
        (status = 421, description = "`domain` names no domain this server serves (`[links] domains`); `domain` names it", body = super::openapi::ErrorBody),
    ))]
pub async fn list(
    State(state): State<Arc<AppState>>,
    origin: RequestOrigin,
    grant: Option<Extension<Grant>>,
    query: Result<Query<ListQuery>, QueryRejection>,
) -> Result<Json<Value>, ApiError> {
    let Query(query) = query.map_err(|e| ApiError::bad_request(e.body_text()))?;
    let limit = query.limit.unwrap_or(100);
    if !(1..=MAX_PAGE).contains(&limit) {
        return Err(ApiError::bad_request(format!(
            "limit must be between 1 and {MAX_PAGE}, got {limit}"
        )));
    }
    if query.is_search() {
        return search(state, origin, grant, query, limit).await;
    }
    let after = match query.cursor.as_deref().filter(|c| !c.is_empty()) {
        None => None,
        Some(c) => Some(c.parse::<u64>().map_err(|_| {
            ApiError::bad_request(format!("cursor {c:?} is not one this API gave out"))
        })?),
    };
    let worker = Arc::clone(&state);
    let grant = grant.map(|Extension(g)| g);
    let (links, next) = blocking(move || {
        let store = worker.links.store();
        let Some(grant) = grant.filter(|g| g.author_only) else {
            let links = store.list(query.tag.as_deref(), after, limit)?;
            let next = (links.len() == limit)
                .then(|| links.last().map(|l| l.id))
                .flatten();
            return Ok((links, next));
        };
        // An author-only key: pages of the store, filtered, until the page is full
        // (the cursor is the last link looked at, so the next page goes on from there).
        let (mut mine, mut cursor) = (Vec::new(), after);
        loop {
            let page = store.list(query.tag.as_deref(), cursor, limit)?;
            let full = page.len() == limit;
            for link in page {
                cursor = Some(link.id);
                if grant.may_see(&link) {
                    mine.push(link);
                    if mine.len() == limit {
                        return Ok((mine, cursor));
                    }
                }
            }
            if !full {
                return Ok((mine, None));
            }
        }
    })
    .await?;
    let next = next.map(|id| id.to_string());
    let views: Vec<Value> = links
        .iter()
        .map(|l| state.links.view(origin.as_deref(), l))
        .collect();
    Ok(Json(json!({ "links": views, "next_cursor": next })))
}

/// `GET /api/links` as a search: the page of the links matching `q`, `tag` and
/// `domain` in the asked order, each with its clicks, and how many match.
async fn search(
    state: Arc<AppState>,
    origin: RequestOrigin,
    grant: Option<Extension<Grant>>,
    query: ListQuery,
    limit: usize,
) -> Result<Json<Value>, ApiError> {
    use shardkit_link_service::search::{Search, SortBy};
    if query.cursor.as_deref().is_some_and(|c| !c.is_empty()) {
        return Err(ApiError::bad_request(
            "cursor pages the plain list (id order); a search (q, sort, order, offset, domain) pages with offset",
        ));
    }
    let sort = match query.sort.as_deref().unwrap_or("created") {
        "created" => SortBy::Created,
        "clicks" => SortBy::Clicks,
        other => {
            return Err(ApiError::bad_request(format!(
                "sort must be created or clicks, not {other:?}"
            )))
        }
    };
    let descending = match query.order.as_deref().unwrap_or("desc") {
        "desc" => true,
        "asc" => false,
        other => {
            return Err(ApiError::bad_request(format!(
                "order must be desc or asc, not {other:?}"
            )))
        }
    };
    let search = Search {
        text: query.q.unwrap_or_default(),
        tag: query.tag.filter(|t| !t.is_empty()),
        domain: None,
        sort,
        descending,
        offset: query.offset.unwrap_or(0),
        limit,
    };
    search.check(MAX_PAGE).map_err(op_error)?;
    let domain = match query.domain.as_deref().filter(|d| !d.is_empty()) {
        None => None,
        Some(d) => Some(state.links.domains().stored(Some(d)).map_err(op_error)?),
    };
    let search = Search { domain, ..search };
    let grant = grant.map(|Extension(g)| g);
    let worker = Arc::clone(&state);
    let offset = search.offset;
    let found = blocking(move || {
        worker.links.search(&worker.counters.engine, &search, |l| {
            grant.as_ref().is_none_or(|g| g.may_see(l))
        })
    })
    .await?;
    let links: Vec<Value> = found
        .links
        .iter()
        .map(|(link, clicks)| {
            let mut view = state.links.view(origin.as_deref(), link);
            view["clicks"] = json!(clicks);
            view
        })
        .collect();
    let next = offset + links.len();
    Ok(Json(json!({
        "links": links,
        "total": found.total,
        "next_offset": (next < found.total).then_some(next),
    })))
}

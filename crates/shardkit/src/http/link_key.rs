//! `{code}` of a link's API and page routes with its `?domain=`: the key the store
//! finds the link by. With `[links] domains` an alias is unique only within its
//! domain, so a request about one on a domain other than the default names the domain
//! (as Shlink's API does); a code needs none (codes are unique across domains).

use super::links::op_error;
use super::ApiError;
use axum::extract::{FromRequestParts, Path};
use axum::http::request::Parts;
use shardkit_node::state::AppState;
use std::sync::Arc;

/// The link a request is about.
#[derive(Debug, Clone)]
pub struct LinkKey {
    /// The store key: the code, the alias on the default domain, or `domain/alias`.
    pub key: String,
    /// The path segment as asked for (for messages and forwarded requests).
    pub code: String,
    /// The `domain` the request named, if any (forwarded along with the request).
    pub domain: Option<String>,
}

impl LinkKey {
    /// The link's API path, `/api/links/{code}` with the request's `?domain=`, for a
    /// request forwarded to its home region; `suffix` follows the code (`/stats`).
    pub fn api_path(&self, suffix: &str) -> String {
        match &self.domain {
            Some(domain) => format!(
                "/api/links/{}{suffix}?domain={}",
                self.code,
                url::form_urlencoded::byte_serialize(domain.as_bytes()).collect::<String>()
            ),
            None => format!("/api/links/{}{suffix}", self.code),
        }
    }
}

/// The `domain` parameter of a query string; empty is as absent (the default domain),
/// as a form's empty field sends it.
pub fn domain_param(query: Option<&str>) -> Option<String> {
    url::form_urlencoded::parse(query?.as_bytes())
        .find(|(name, _)| name == "domain")
        .map(|(_, value)| value.into_owned())
        .filter(|value| !value.is_empty())
}

impl FromRequestParts<Arc<AppState>> for LinkKey {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &Arc<AppState>,
    ) -> Result<Self, Self::Rejection> {
        let Path(code) = Path::<String>::from_request_parts(parts, state)
            .await
            .map_err(|e| ApiError::bad_request(e.body_text()))?;
        let domain = domain_param(parts.uri.query());
        let key = state
            .links
            .domains()
            .key_for(domain.as_deref(), &code)
            .map_err(op_error)?;
        Ok(Self { key, code, domain })
    }
}

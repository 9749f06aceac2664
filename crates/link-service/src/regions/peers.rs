//! [`Peers`]: the calls one region makes to another, each bounded by
//! `[regions] peer_timeout_ms`: a link's record for the redirect cache, a link's local
//! clicks for the summed total, a click of a link with a visit limit (counted at home),
//! and a request forwarded whole to its home region.

use super::map::RegionMap;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode};
use bytes::Bytes;
use shardkit_links::Link;
use std::sync::Arc;
use std::time::Duration;

/// The header a forwarded request carries (the forwarding region's name), so a home
/// region never forwards it again.
pub const FORWARDED_BY: &str = "x-shardkit-forwarded-by";

/// A call to another region that did not give an answer.
#[derive(Debug, thiserror::Error)]
pub enum PeerError {
    /// Not reached in time (down, cut off, too slow).
    #[error("region {region} did not answer within {timeout_ms} ms ({reason})")]
    Unreachable {
        /// The region.
        region: String,
        /// `peer_timeout_ms`.
        timeout_ms: u64,
        /// What the client saw.
        reason: String,
    },
    /// It answered something this server cannot use.
    #[error("region {region} answered {status}: {body}")]
    Refused {
        /// The region.
        region: String,
        /// Its status.
        status: u16,
        /// The start of its body.
        body: String,
    },
}

impl PeerError {
    /// The region that failed.
    pub fn region(&self) -> &str {
        match self {
            PeerError::Unreachable { region, .. } | PeerError::Refused { region, .. } => region,
        }
    }
}

/// A link's clicks counted in one region: the total and the given days'.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct LocalClicks {
    /// Clicks counted in that region.
    pub clicks: u64,
    /// Per day asked for, in order.
    pub daily: Vec<u64>,
}

/// What a forwarded request's home answered.
#[derive(Debug)]
pub struct Relayed {
    /// Its status.
    pub status: StatusCode,
    /// Its `Content-Type`, if any.
    pub content_type: Option<HeaderValue>,
    /// Its body.
    pub body: Bytes,
}

/// The HTTP client to the other regions.
#[derive(Debug)]
pub struct Peers {
    client: reqwest::Client,
    map: Arc<RegionMap>,
    key: Option<String>,
    timeout_ms: u64,
}

impl Peers {
    /// Calls to the regions of `map`, showing `key` on the peer routes; `https://`
    /// peers' certificates must chain to the CAs in `tls_ca` when given, else to the
    /// system's.
    pub fn new(
        map: Arc<RegionMap>,
        key: Option<String>,
        timeout_ms: u64,
        tls_ca: Option<&std::path::Path>,
    ) -> anyhow::Result<Self> {
        let builder = reqwest::Client::builder()
            .timeout(Duration::from_millis(timeout_ms))
            .connect_timeout(Duration::from_millis(timeout_ms))
            .redirect(reqwest::redirect::Policy::none())
            .pool_idle_timeout(Duration::from_secs(90));
        let client = trusting(builder, tls_ca)?.build()?;
        Ok(Self {
            client,
            map,
            key,
            timeout_ms,
        })
    }

    fn base(&self, region: &str) -> Result<&str, PeerError> {
        self.map.peer_url(region).ok_or_else(|| PeerError::Refused {
            region: region.to_string(),
            status: 0,
            body: "no such peer in regions.peers".into(),
        })
    }

    fn unreachable(&self, region: &str, e: reqwest::Error) -> PeerError {
        metrics::counter!("shardkit_link_region_failures_total", "region" => region.to_string())
            .increment(1);
        PeerError::Unreachable {
            region: region.to_string(),
            timeout_ms: self.timeout_ms,
            reason: e.without_url().to_string(),
        }
    }

    fn peer_request(&self, method: Method, url: String) -> reqwest::RequestBuilder {
        let request = self.client.request(method, url);
        match &self.key {
            Some(key) => request.bearer_auth(key),
            None => request,
        }
    }

    async fn refused(region: &str, response: reqwest::Response) -> PeerError {
        let status = response.status().as_u16();
        let body = response.text().await.unwrap_or_default();
        PeerError::Refused {
            region: region.to_string(),
            status,
            body: body.chars().take(300).collect(),
        }
    }

    /// The record of the link at `/{path}` in its home `region` (`None`: no such link).
    pub async fn fetch_link(&self, region: &str, path: &str) -> Result<Option<Link>, PeerError> {
        metrics::counter!("shardkit_link_region_fetches_total", "region" => region.to_string())
            .increment(1);
        let url = format!("{}/api/regions/links/{}", self.base(region)?, segment(path));
        let response = self
            .peer_request(Method::GET, url)
            .send()
            .await
            .map_err(|e| self.unreachable(region, e))?;
        match response.status() {
            StatusCode::NOT_FOUND => Ok(None),
            StatusCode::OK => response
                .json::<Link>()
                .await
                .map(Some)
                .map_err(|e| self.unreachable(region, e)),
            _ => Err(Self::refused(region, response).await),
        }
    }

    /// The clicks of link `id` counted in `region`, with those of days `first..=last`.
    pub async fn local_clicks(
        &self,
        region: &str,
        id: u64,
        first: u64,
        last: u64,
    ) -> Result<LocalClicks, PeerError> {
        let url = format!(
            "{}/api/regions/clicks/{id}?first_day={first}&last_day={last}",
            self.base(region)?
        );
        let response = self
            .peer_request(Method::GET, url)
            .send()
            .await
            .map_err(|e| self.unreachable(region, e))?;
        if response.status() != StatusCode::OK {
            return Err(Self::refused(region, response).await);
        }
        response
            .json::<LocalClicks>()
            .await
            .map_err(|e| self.unreachable(region, e))
    }

    /// Counts one click of the link at `/{path}` in its home `region` (for a link with
    /// a visit limit): `true` counted, `false` gone (expired, used up, deleted).
    pub async fn hit(&self, region: &str, path: &str) -> Result<bool, PeerError> {
        let url = format!("{}/api/regions/hit/{}", self.base(region)?, segment(path));
        let response = self
            .peer_request(Method::POST, url)
            .send()
            .await
            .map_err(|e| self.unreachable(region, e))?;
        match response.status() {
            StatusCode::NO_CONTENT | StatusCode::OK => Ok(true),
            StatusCode::GONE | StatusCode::NOT_FOUND => Ok(false),
            _ => Err(Self::refused(region, response).await),
        }
    }

    /// Sends a request to its home `region` as the caller made it (their
    /// `Authorization`, so the home checks the caller's own key) and hands back the
    /// answer.
    pub async fn forward(
        &self,
        region: &str,
        method: Method,
        path_and_query: &str,
        headers: &HeaderMap,
        body: Bytes,
    ) -> Result<Relayed, PeerError> {
        metrics::counter!("shardkit_link_region_forwards_total", "region" => region.to_string())
            .increment(1);
        let url = format!("{}{path_and_query}", self.base(region)?);
        let mut request = self
            .client
            .request(method, url)
            .header(FORWARDED_BY, self.map.this());
        for name in [
            axum::http::header::AUTHORIZATION,
            axum::http::header::CONTENT_TYPE,
            axum::http::header::ACCEPT,
        ] {
            if let Some(value) = headers.get(&name) {
                request = request.header(name, value);
            }
        }
        let response = request
            .body(body)
            .send()
            .await
            .map_err(|e| self.unreachable(region, e))?;
        let status =
            StatusCode::from_u16(response.status().as_u16()).unwrap_or(StatusCode::BAD_GATEWAY);
        let content_type = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| HeaderValue::from_bytes(v.as_bytes()).ok());
        let body = response
            .bytes()
            .await
            .map_err(|e| self.unreachable(region, e))?;
        Ok(Relayed {
            status,
            content_type,
            body,
        })
    }
}

/// The client trusting only the CAs of `tls_ca` (PEM) when given.
#[cfg(feature = "tls")]
fn trusting(
    builder: reqwest::ClientBuilder,
    tls_ca: Option<&std::path::Path>,
) -> anyhow::Result<reqwest::ClientBuilder> {
    let Some(path) = tls_ca else {
        return Ok(builder);
    };
    let pem = std::fs::read(path)
        .map_err(|e| anyhow::anyhow!("regions.tls_ca: cannot read {}: {e}", path.display()))?;
    let certs = reqwest::Certificate::from_pem_bundle(&pem).map_err(|e| {
        anyhow::anyhow!(
            "regions.tls_ca: {} holds no CA certificate that can be read: {e}",
            path.display()
        )
    })?;
    if certs.is_empty() {
        anyhow::bail!(
            "regions.tls_ca: {} holds no CA certificate (no PEM \"BEGIN CERTIFICATE\" block)",
            path.display()
        );
    }
    Ok(certs
        .into_iter()
        .fold(builder.tls_built_in_root_certs(false), |b, c| {
            b.add_root_certificate(c)
        }))
}

/// Without the `tls` feature the settings refuse https peers and `tls_ca`.
#[cfg(not(feature = "tls"))]
fn trusting(
    builder: reqwest::ClientBuilder,
    _: Option<&std::path::Path>,
) -> anyhow::Result<reqwest::ClientBuilder> {
    Ok(builder)
}

/// A store key as one path segment: an alias key of a domain other than the default
/// (`domain/alias`) has its `/` escaped; the peer's router decodes it back.
fn segment(path: &str) -> std::borrow::Cow<'_, str> {
    if path.contains('/') {
        std::borrow::Cow::Owned(path.replace('/', "%2F"))
    } else {
        std::borrow::Cow::Borrowed(path)
    }
}

//! The short-link service of the server: the [`shardkit_links`] rules and store, a hot
//! cache in front of the store for redirects, clicks counted in memory and flushed to
//! the counter engine, and the per-client creation limit ([`Links`], this file). The
//! server's HTTP handlers and the bulk formats call into it; it knows nothing of HTTP
//! routes or status codes.
//!
//! - [`analytics`]: clicks counted in memory ([`analytics::clicks`]) and every click's
//!   details, written together per link and day into the counter engine.
//! - [`bulk_formats`]: the bulk import/export formats (JSON lines, CSV).
//! - [`password`]: link passwords (Argon2id) and the attempt limiter.
//! - [`redirect_rules`]: which of a link's targets one visit goes to.
//! - [`regions`]: links homed in several regions (`[regions]`), fetched from and
//!   forwarded to their peers.
//! - [`cache_size`]: the bound on every in-memory cache of links.
//! - [`domains`]: the host names links are made on (`[links] domains`).
//! - [`search`]: the dashboard's search: links by text, tag and domain, sorted by date
//!   or clicks, a page at a time.
//! - [`settings`]: the `[links]` section.
//! - [`webhooks`]: events (clicks, links made, changed, deleted) POSTed to receivers.
//!
//! Why one file of this size: `Links` is the service's one entry point (validate, mint,
//! store, cache, views); its submodules hold the parts that stand alone.

#![warn(missing_docs)]

pub mod analytics;
pub mod bulk_formats;
pub mod cache_size;
pub mod domains;
mod doorkeeper;
mod dry_run;
pub mod password;
pub mod redirect_rules;
pub mod regions;
pub mod search;
pub mod settings;
pub mod webhooks;

use analytics::clicks::ClickBook;
use bulk_formats::{BulkItem, Restore};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use shardkit_counters::Engine;
use shardkit_ids::ShardedGenerator;
use shardkit_links::{
    day_of, format_day, format_time, group_of, group_within, normalize_rules, normalize_url,
    now_ms, parse_time, validate_alias, validate_tags, validate_title, Codec, Feistel, GroupCommit,
    GroupStats, InsertOutcome, Link, LinkError, LinkStore, Minter, OwnOrigin, Redirect,
    RedirectRule, StoreError,
};
use std::collections::HashSet;
use std::sync::Arc;

/// Days in the daily series of `GET /api/links/{code}` and the chart.
pub const SERIES_DAYS: u64 = 30;

/// A link to create: the JSON body of `POST /api/links`, one line of a bulk JSON-lines
/// file, or one CSV row.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewLink {
    /// The long URL (http or https, at most 8 KiB).
    pub url: String,
    /// Custom alias: 1 to 64 of `A-Z a-z 0-9 _ -`; 7 or more characters need a `-` or `_`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alias: Option<String>,
    /// With `[links] domains`: the domain the link is reached at (default: the first).
    /// Aliases are unique per domain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(min_length = 1)]
    pub domain: Option<String>,
    /// A name for people, shown beside the URL (1 to 512 characters).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(
        min_length = 1,
        max_length = 512,
        pattern = "^[^\\u0000-\\u001F\\u007F-\\u009F]*$"
    )]
    pub title: Option<String>,
    /// RFC 3339 instant after which the link answers 410.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<String>,
    /// Clicks after which the link answers 410.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_visits: Option<u64>,
    /// 301, 302 (default), 307 or 308.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redirect: Option<u16>,
    /// Labels for listing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tags: Option<Vec<String>>,
    /// Hand back an existing plain link for the same URL instead of making a new one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reuse: Option<bool>,
    /// A password visitors must give before the redirect (1 to 128 characters; stored
    /// as an Argon2id hash, never shown).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(min_length = 1, max_length = 128)]
    pub password: Option<String>,
    /// With `[regions]`: the region to home the link in, instead of the one its URL's
    /// host names (an aliased link lives in the default region).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub region: Option<String>,
    /// Redirect rules, evaluated in order, the first match giving the target (else
    /// `url`): each one condition (`device`: ios, android or desktop; `language`: a
    /// tag the visitor accepts; `country`: ISO code by the GeoIP database; `query`:
    /// parameters present (`true`) or equal to a string; `cidr`: the client's network)
    /// and its `url`. At most 16.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Vec<Object>>)]
    pub rules: Option<Vec<RedirectRule>>,
}

/// A change to a link (`PATCH`/`PUT /api/links/{code}`): fields present are replaced.
#[derive(Debug, Clone, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LinkPatch {
    /// New target.
    pub url: Option<String>,
    /// New expiry (RFC 3339).
    pub expires_at: Option<String>,
    /// New visit limit.
    pub max_visits: Option<u64>,
    /// New redirect status.
    pub redirect: Option<u16>,
    /// New tags (replacing the old ones).
    pub tags: Option<Vec<String>>,
    /// New title (1 to 512 characters); `""` removes it.
    #[schema(max_length = 512, pattern = "^[^\\u0000-\\u001F\\u007F-\\u009F]*$")]
    pub title: Option<String>,
    /// New password (1 to 128 characters); `""` removes it.
    #[schema(max_length = 128)]
    pub password: Option<String>,
    /// New redirect rules (replacing the old ones; `[]` removes them).
    #[schema(value_type = Option<Vec<Object>>)]
    pub rules: Option<Vec<RedirectRule>>,
}

/// Why a link operation failed, in the terms the API answers with.
#[derive(Debug, thiserror::Error)]
pub enum LinkOpError {
    /// Bad input: 400.
    #[error("{0}")]
    Invalid(String),
    /// The alias is taken: 409 with the owner's code.
    #[error("the alias {alias:?} is taken by the link with code {owner_code}")]
    AliasTaken {
        /// The alias asked for.
        alias: String,
        /// The owner's code.
        owner_code: String,
    },
    /// A restored link's code is already stored (a bulk import line): 409.
    #[error("the code {0:?} is taken by a link already stored")]
    CodeTaken(String),
    /// No such link: 404.
    #[error("no link has the code or alias {0:?}")]
    NotFound(String),
    /// Storage, the id clock or a sequence failed: 503.
    #[error("{0}")]
    Unavailable(String),
    /// `region` names no region this server knows: 421 (the deployment's regions are
    /// its settings', which the API document cannot list).
    #[error("region {region:?}: {reason}")]
    NoSuchRegion {
        /// The region asked for.
        region: String,
        /// Why it is not one.
        reason: String,
    },
    /// `domain` names no domain this server serves: 421, as for a region (the
    /// deployment's domains are its settings', which the API document cannot list).
    #[error("domain {domain:?}: {reason}")]
    NoSuchDomain {
        /// The domain asked for.
        domain: String,
        /// Why it is not one.
        reason: String,
    },
    /// With `[regions]`: the link is homed in another region, which must make it.
    #[error("the link is homed in region {region}: make it there ({peer})")]
    OtherRegion {
        /// Its home.
        region: String,
        /// That region's API.
        peer: String,
    },
}

impl From<LinkError> for LinkOpError {
    fn from(e: LinkError) -> Self {
        match e {
            LinkError::Url(_) | LinkError::Alias(_) | LinkError::Invalid(_) => {
                LinkOpError::Invalid(e.to_string())
            }
            LinkError::Code(_) | LinkError::Ticket(_) | LinkError::Store(_) => {
                LinkOpError::Unavailable(e.to_string())
            }
        }
    }
}

impl From<StoreError> for LinkOpError {
    fn from(e: StoreError) -> Self {
        LinkOpError::Unavailable(e.to_string())
    }
}

/// Links validated and drafted by [`Links::prepare`], waiting for their write.
struct Prepared {
    /// The request's items, for the restore data of imported links.
    items: Vec<Result<BulkItem, String>>,
    /// One result per item; the `Ok` ones are the drafts, in order.
    results: Vec<Result<Link, LinkOpError>>,
    /// The links to store.
    drafts: Vec<Link>,
}

/// Everything the links endpoints share.
pub struct Links {
    /// Writes of concurrent requests share one durable commit.
    store: GroupCommit,
    minter: Minter,
    cache: quick_cache::sync::Cache<String, Arc<Link>>,
    /// Which misses of `cache` are cached: a code's second, not its first.
    admit: doorkeeper::Doorkeeper,
    /// Clicks in memory, flushed to the counter engine.
    pub clicks: ClickBook,
    /// Where the clicks came from, classified off the redirect path.
    pub analytics: analytics::Analytics,
    own: Vec<OwnOrigin>,
    /// `[links] base_url`, or the bound HTTP address when that is unset.
    base_url: String,
    /// Whether short URLs start with the request's origin (no `base_url` configured),
    /// `base_url` then being only the fallback for a request without a usable Host.
    base_from_request: bool,
    /// With `[regions]`: where links live (this region mints in its own groups only).
    regions: Option<Arc<crate::regions::RegionMap>>,
    /// Where events go (`[[links.webhooks]]`; none by default).
    pub webhooks: webhooks::Webhooks,
    /// The domains links are made on (`[links] domains`; none: one, any Host).
    domains: domains::Domains,
}

impl std::fmt::Debug for Links {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Links")
            .field("base_url", &self.base_url)
            .finish()
    }
}

fn expiry(text: &str, now: u64) -> Result<u64, LinkOpError> {
    let at = parse_time(text).map_err(|e| LinkOpError::Invalid(format!("expires_at: {e}")))?;
    if at <= now {
        return Err(LinkOpError::Invalid(format!(
            "expires_at {text} is in the past"
        )));
    }
    Ok(at)
}

fn redirect(status: Option<u16>) -> Result<Redirect, LinkOpError> {
    match status {
        None => Ok(Redirect::default()),
        Some(s) => Redirect::from_status(s).ok_or_else(|| {
            LinkOpError::Invalid(format!("redirect must be 301, 302, 307 or 308, got {s}"))
        }),
    }
}

fn max_visits(n: Option<u64>) -> Result<Option<u64>, LinkOpError> {
    match n {
        Some(0) => Err(LinkOpError::Invalid("max_visits must be at least 1".into())),
        other => Ok(other),
    }
}

impl Links {
    /// The service over `store`, minting with `minter`; `base_url` starts every short URL.
    /// Writes go through a [`GroupCommit`] over `store`.
    pub fn new(
        store: Arc<dyn LinkStore>,
        minter: Minter,
        base_url: String,
        cache_entries: usize,
        analytics: analytics::Analytics,
    ) -> anyhow::Result<Self> {
        let own = vec![OwnOrigin::from_base_url(&base_url)?];
        Ok(Self {
            store: GroupCommit::new(store),
            minter,
            cache: quick_cache::sync::Cache::new(cache_entries.max(16)),
            admit: doorkeeper::Doorkeeper::new(cache_entries.max(16)),
            clicks: ClickBook::default(),
            analytics,
            own,
            base_url,
            base_from_request: false,
            regions: None,
            webhooks: webhooks::Webhooks::none(),
            domains: domains::Domains::default(),
        })
    }

    /// The service serving links on `names` (`[links] domains`, the first the
    /// default): long URLs to them are refused as links to this server.
    pub fn with_domains(mut self, names: &[String]) -> anyhow::Result<Self> {
        self.domains = domains::Domains::new(names);
        for host in self.domains.names() {
            self.own
                .push(OwnOrigin::from_base_url(&format!("http://{host}"))?);
            self.own
                .push(OwnOrigin::from_base_url(&format!("https://{host}"))?);
        }
        Ok(self)
    }

    /// The domains links are made on.
    pub fn domains(&self) -> &domains::Domains {
        &self.domains
    }

    /// The service sending its events to `webhooks`.
    pub fn with_webhooks(mut self, webhooks: webhooks::Webhooks) -> Self {
        self.webhooks = webhooks;
        self
    }

    /// Short URLs from each request's origin (`base_url` was not configured; the one
    /// given to [`Links::new`] is the fallback), and long URLs to any of `hosts` (the
    /// names this server answers to) refused as links to itself.
    pub fn with_request_origins(mut self, hosts: &[String]) -> anyhow::Result<Self> {
        self.base_from_request = true;
        for host in hosts {
            self.own
                .push(OwnOrigin::from_base_url(&format!("http://{host}"))?);
            self.own
                .push(OwnOrigin::from_base_url(&format!("https://{host}"))?);
        }
        Ok(self)
    }

    /// Whether short URLs take the request's origin, so the HTTP layer reads it only
    /// then.
    pub fn takes_request_origin(&self) -> bool {
        self.base_from_request
    }

    /// The service as one region of several: codes minted in this region's groups
    /// only, links homed elsewhere refused (the HTTP layer forwards them first).
    pub fn with_regions(mut self, regions: Option<Arc<crate::regions::RegionMap>>) -> Self {
        self.regions = regions;
        self
    }

    /// The region a new link is homed in (`None` without `[regions]`): the request's
    /// `region`, the default region for an alias, else the region of its URL's host.
    /// A request with a bad field is refused (400) before its region is judged: the
    /// fields are the request's own, the regions the deployment's.
    pub fn home_of(&self, request: &NewLink) -> Result<Option<String>, LinkOpError> {
        self.check_fields(request)?;
        let Some(map) = &self.regions else {
            return match &request.region {
                Some(region) => Err(LinkOpError::NoSuchRegion {
                    region: region.clone(),
                    reason: "this server runs one region (no [regions] in its settings)".into(),
                }),
                None => Ok(None),
            };
        };
        if let Some(region) = &request.region {
            if !map.knows(region) {
                return Err(LinkOpError::NoSuchRegion {
                    region: region.clone(),
                    reason: "it is not one of this deployment's regions".into(),
                });
            }
            if request.alias.is_some() && region != map.default_region() {
                return Err(LinkOpError::Invalid(format!(
                    "an aliased link lives in the region of record of aliases, {}; region {region:?} cannot go with alias",
                    map.default_region()
                )));
            }
            return Ok(Some(region.clone()));
        }
        if request.alias.is_some() {
            return Ok(Some(map.default_region().to_string()));
        }
        let url = normalize_url(&request.url, &self.own).map_err(LinkError::from)?;
        let host = url::Url::parse(&url)
            .ok()
            .and_then(|u| u.host_str().map(str::to_ascii_lowercase))
            .unwrap_or_default();
        Ok(Some(map.home_of_host(&host).to_string()))
    }

    /// Every rule of a new link's own fields (URL, alias, tags, expiry, visit limit,
    /// redirect, password), as [`Links::create`] applies them; not the store's (a taken
    /// alias) nor the deployment's (regions).
    pub fn check_fields(&self, request: &NewLink) -> Result<(), LinkOpError> {
        normalize_url(&request.url, &self.own).map_err(LinkError::from)?;
        if let Some(alias) = &request.alias {
            validate_alias(alias).map_err(LinkError::from)?;
        }
        validate_tags(request.tags.as_deref().unwrap_or_default()).map_err(LinkOpError::Invalid)?;
        if let Some(title) = &request.title {
            validate_title(title).map_err(LinkOpError::Invalid)?;
        }
        if let Some(t) = request.expires_at.as_deref() {
            expiry(t, now_ms())?;
        }
        max_visits(request.max_visits)?;
        redirect(request.redirect)?;
        if let Some(p) = request.password.as_deref() {
            password::check(p).map_err(LinkOpError::Invalid)?;
        }
        self.rules(request.rules.clone())?;
        // Last: a bad field is the request's own (400), an unknown domain the
        // deployment's (421).
        self.domains.stored(request.domain.as_deref())?;
        Ok(())
    }

    /// A link's rules as stored (their URLs normalized as a link's own).
    fn rules(&self, rules: Option<Vec<RedirectRule>>) -> Result<Vec<RedirectRule>, LinkOpError> {
        normalize_rules(rules.unwrap_or_default(), &self.own).map_err(LinkOpError::Invalid)
    }

    /// The region a stored link lives in (`None` without `[regions]`).
    pub fn region_of(&self, link: &Link) -> Option<&str> {
        let map = self.regions.as_ref()?;
        map.owner(Codec::group_of_code(&link.code)?)
    }

    /// Refuses a new link homed in another region (a bulk line; single creates are
    /// forwarded before they get here).
    fn check_home(&self, request: &NewLink) -> Result<(), LinkOpError> {
        let (Some(map), Some(home)) = (&self.regions, self.home_of(request)?) else {
            return Ok(());
        };
        if home == map.this() {
            return Ok(());
        }
        Err(LinkOpError::OtherRegion {
            peer: map.peer_url(&home).unwrap_or_default().to_string(),
            region: home,
        })
    }

    /// The codec for `sequential` codes or scrambled ones with `key`.
    pub fn codec(sequential: bool, key: [u8; 16]) -> Codec {
        if sequential {
            Codec::sequential()
        } else {
            Codec::scrambled(Feistel::new(key))
        }
    }

    /// The store (for export and listing).
    pub fn store(&self) -> &dyn LinkStore {
        &self.store
    }

    /// How many commits the link writes took, and how many writes they held.
    pub fn commit_stats(&self) -> &GroupStats {
        self.store.stats()
    }

    /// `<base>/<alias or code>`, the base being `[links] base_url` when configured,
    /// else `origin` (the request's `scheme://host[:port]`, when it had a usable one),
    /// else the bound HTTP address. With `[links] domains` the host is the link's
    /// domain: the request's origin when it names that domain (its port kept), else
    /// the domain with the base's scheme.
    pub fn short_url(&self, origin: Option<&str>, link: &Link) -> String {
        let base = match origin {
            Some(origin) if self.base_from_request => origin,
            _ => &self.base_url,
        };
        let base = base.trim_end_matches('/');
        let Some(domain) = self.domains.of_link(link) else {
            return format!("{base}/{}", link.path());
        };
        let (scheme, host) = base.split_once("://").unwrap_or(("http", base));
        let name = |h: &str| {
            h.rsplit_once(':')
                .map_or(h, |(n, _)| n)
                .to_ascii_lowercase()
        };
        if name(host) == name(domain) && (!domain.contains(':') || host == domain) {
            return format!("{base}/{}", link.path());
        }
        format!("{scheme}://{domain}/{}", link.path())
    }

    /// A stored link from a validated request (code minted or restored, id made), not
    /// yet stored. A minted code is never one in `taken` (codes of restored links in the
    /// same batch) nor one already stored (a restored link's code), so the minter never
    /// hands out an imported code.
    fn draft(
        &self,
        item: &BulkItem,
        taken: &HashSet<String>,
        ids: &ShardedGenerator,
        now: u64,
    ) -> Result<Link, LinkOpError> {
        let request = &item.request;
        let restore = item.restore.as_ref();
        let restored_code = restore.and_then(|r| r.code.as_deref());
        if restore.is_none() {
            self.check_home(request)?;
        }
        let url = normalize_url(&request.url, &self.own).map_err(LinkError::from)?;
        if let Some(alias) = &request.alias {
            validate_alias(alias).map_err(LinkError::from)?;
        }
        let tags = request.tags.clone().unwrap_or_default();
        validate_tags(&tags).map_err(LinkOpError::Invalid)?;
        if let Some(title) = &request.title {
            validate_title(title).map_err(LinkOpError::Invalid)?;
        }
        let expires_at = match (request.expires_at.as_deref(), restore) {
            (None, _) => None,
            (Some(t), None) => Some(expiry(t, now)?),
            // A restored link keeps its expiry, past or not (it then answers 410 again).
            (Some(t), Some(_)) => {
                Some(parse_time(t).map_err(|e| LinkOpError::Invalid(format!("expires_at: {e}")))?)
            }
        };
        let max_visits = max_visits(request.max_visits)?;
        let redirect = redirect(request.redirect)?;
        let rules = self.rules(request.rules.clone())?;
        let domain = self.domains.stored(request.domain.as_deref())?;
        let alias_key = request
            .alias
            .as_deref()
            .map(|a| shardkit_links::alias_key(domain.as_deref(), a));
        let (group, code) = match restored_code {
            Some(code) => (self.restorable_code(code)?, code.to_string()),
            None => self.mint_free(alias_key.as_deref(), &url, taken)?,
        };
        let created_at = match restore.and_then(|r| r.created_at.as_deref()) {
            Some(t) => {
                parse_time(t).map_err(|e| LinkOpError::Invalid(format!("created_at: {e}")))?
            }
            None => now,
        };
        let password_hash = request
            .password
            .as_deref()
            .map(password::hash)
            .transpose()
            .map_err(LinkOpError::Invalid)?;
        let id = ids
            .next_for_key(u64::from(group))
            .map_err(|e| LinkOpError::Unavailable(e.to_string()))?;
        Ok(Link {
            id,
            url,
            code,
            alias: request.alias.clone(),
            domain,
            title: request.title.clone(),
            created_at,
            expires_at,
            max_visits,
            redirect,
            tags,
            password_hash,
            author: item.author.clone(),
            rules,
        })
    }

    /// A fresh code for a new link: in the alias's group for an aliased link (a sharded
    /// store then finds the alias and the link in one shard), else the URL's. Codes that
    /// are taken (restored by this import) are passed over; whether the store holds the
    /// code is asked for the whole batch afterwards ([`Links::prepare`]).
    fn mint_free(
        &self,
        alias: Option<&str>,
        url: &str,
        taken: &HashSet<String>,
    ) -> Result<(u8, String), LinkOpError> {
        loop {
            let (group, code) = match (alias, &self.regions) {
                // One region of several: a group of its own, by the same hash.
                (_, Some(map)) => {
                    let group =
                        group_within(alias.unwrap_or(url), map.mine()).ok_or_else(|| {
                            LinkOpError::Unavailable("this region owns no code group".into())
                        })?;
                    self.minter.mint_in(group)?
                }
                (Some(alias), None) => self.minter.mint_in(group_of(alias))?,
                (None, None) => self.minter.mint(url)?,
            };
            if !taken.contains(&code) {
                return Ok((group, code));
            }
        }
    }

    /// [`Links::mint_free`], also passing over codes the store holds: for the few codes
    /// of a batch that [`Links::prepare`] found held.
    fn mint_unheld(
        &self,
        alias: Option<&str>,
        url: &str,
        taken: &HashSet<String>,
    ) -> Result<(u8, String), LinkOpError> {
        loop {
            let (group, code) = self.mint_free(alias, url, taken)?;
            if self.store.resolve(&code)?.is_none() {
                return Ok((group, code));
            }
        }
    }

    /// Gives the minted links of `results` whose code the store already holds (a code
    /// restored by an earlier import) a fresh one of the same group: the store is asked
    /// about all of them at once, and again only about the replacements.
    fn mint_again_where_held(
        &self,
        items: &[Result<BulkItem, String>],
        results: &mut [Result<Link, LinkOpError>],
        taken: &HashSet<String>,
    ) -> Result<(), LinkOpError> {
        let minted =
            |(result, item): (&Result<Link, LinkOpError>, &Result<BulkItem, String>)| match (
                result, item,
            ) {
                (Ok(link), Ok(item)) if item.minted() => Some(link.code.clone()),
                _ => None,
            };
        let codes: Vec<String> = results.iter().zip(items).filter_map(minted).collect();
        if codes.is_empty() {
            return Ok(());
        }
        let held = self.store.held_codes(&codes)?;
        if held.is_empty() {
            return Ok(());
        }
        for (result, item) in results.iter_mut().zip(items) {
            let (Ok(link), Ok(item)) = (result, item) else {
                continue;
            };
            if item.minted() && held.contains(&link.code) {
                // The same group (by the same alias or URL), so the link's id stands.
                let (_, code) = self.mint_unheld(link.alias_key().as_deref(), &link.url, taken)?;
                link.code = code;
            }
        }
        Ok(())
    }

    /// The group of a restored code, if it is one this server could mint.
    pub(crate) fn restorable_code(&self, code: &str) -> Result<u8, LinkOpError> {
        match self.minter.codec().decode(code) {
            Some((group, _)) if !shardkit_links::is_reserved(code) => match &self.regions {
                Some(map) if !map.owns(group) => match map.owner(group) {
                    Some(home) => Err(LinkOpError::OtherRegion {
                        peer: map.peer_url(home).unwrap_or_default().to_string(),
                        region: home.to_string(),
                    }),
                    None => Err(LinkOpError::Invalid(format!(
                        "code {code:?} is in a code group no region owns (regions.groups)"
                    ))),
                },
                _ => Ok(group),
            },
            _ => Err(LinkOpError::Invalid(format!(
                "code {code:?} is not a short code: 7 to 11 characters of A-Z a-z 0-9 \
                 (not a path of the server)"
            ))),
        }
    }

    /// Creates one link (blocking: one fsynced transaction). Answers the link and
    /// whether it is new (`false`: an existing link handed back for `reuse`).
    pub fn create(
        &self,
        request: &NewLink,
        author: Option<&str>,
        ids: &ShardedGenerator,
        engine: &Engine,
    ) -> Result<(Link, bool), LinkOpError> {
        if let Some(found) = self.reusable(request)? {
            return Ok((found, false));
        }
        created(self.create_many(one_item(request, author), ids, engine)?)
    }

    /// Creates (or restores) many links in one durable transaction; one result per
    /// item, in order. Items that failed to parse come in as `Err(reason)`. A restored
    /// link whose code is stored already, or appears earlier in the batch, answers
    /// [`LinkOpError::CodeTaken`]; its clicks are put back on its total.
    pub fn create_many(
        &self,
        items: Vec<Result<BulkItem, String>>,
        ids: &ShardedGenerator,
        engine: &Engine,
    ) -> Result<Vec<Result<Link, LinkOpError>>, LinkOpError> {
        let prepared = self.prepare(items, ids)?;
        if prepared.drafts.is_empty() {
            return Ok(prepared.results);
        }
        let outcomes = self.store.insert_batch(&prepared.drafts)?;
        self.finish(prepared, outcomes, engine)
    }

    /// Creates one link as [`Links::create`] does, from an async handler, when that
    /// needs no thread of its own: the store is on this machine and the link has no
    /// password to hash. Drafting reads the store in place (a local file read); the
    /// durable write goes to the group commit and is awaited, holding no thread.
    /// `None`: not possible here, call [`Links::create`] on a blocking thread instead.
    pub async fn create_in_place(
        &self,
        request: &NewLink,
        author: Option<&str>,
        ids: &ShardedGenerator,
        engine: &Engine,
    ) -> Option<Result<(Link, bool), LinkOpError>> {
        if !self.store.is_local() || request.password.is_some() {
            return None;
        }
        Some(self.create_awaiting(request, author, ids, engine).await)
    }

    async fn create_awaiting(
        &self,
        request: &NewLink,
        author: Option<&str>,
        ids: &ShardedGenerator,
        engine: &Engine,
    ) -> Result<(Link, bool), LinkOpError> {
        if let Some(found) = self.reusable(request)? {
            return Ok((found, false));
        }
        let prepared = self.prepare(one_item(request, author), ids)?;
        let results = if prepared.drafts.is_empty() {
            prepared.results
        } else {
            let (reply, answer) = tokio::sync::oneshot::channel();
            self.store.submit_then(
                shardkit_links::Write::Insert(prepared.drafts.clone()),
                move |result| {
                    let _ = reply.send(result);
                },
            );
            let written = answer
                .await
                .map_err(|_| LinkOpError::Unavailable("the link writer has stopped".into()))??;
            let outcomes = shardkit_links::expect_inserted(written)?;
            self.finish(prepared, outcomes, engine)?
        };
        created(results)
    }

    /// An existing plain link to hand back for `"reuse": true`, if the request asks for
    /// one and one is stored.
    fn reusable(&self, request: &NewLink) -> Result<Option<Link>, LinkOpError> {
        if request.reuse == Some(true)
            && request.alias.is_none()
            && request.rules.as_ref().is_none_or(Vec::is_empty)
            && request.expires_at.is_none()
            && request.max_visits.is_none()
            && request.password.is_none()
        {
            let url = normalize_url(&request.url, &self.own).map_err(LinkError::from)?;
            let domain = self.domains.stored(request.domain.as_deref())?;
            return Ok(self.store.find_reusable(&url, domain.as_deref())?);
        }
        Ok(None)
    }

    /// The first half of a create: every item validated and drafted (code minted or
    /// restored, id made, assigned by the store where it makes them), nothing stored.
    fn prepare(
        &self,
        items: Vec<Result<BulkItem, String>>,
        ids: &ShardedGenerator,
    ) -> Result<Prepared, LinkOpError> {
        let now = now_ms();
        let mut taken: HashSet<String> = HashSet::new();
        let mut results: Vec<Result<Link, LinkOpError>> = Vec::with_capacity(items.len());
        for item in &items {
            if let Some(code) = item.as_ref().ok().and_then(BulkItem::restored_code) {
                taken.insert(code.to_string());
            }
        }
        // The store is asked once for the batch's restored codes, once for its minted
        // ones (a sharded store: one query a server, not one a code).
        let restored: Vec<String> = taken.iter().cloned().collect();
        let held = if restored.is_empty() {
            HashSet::new()
        } else {
            self.store.held_codes(&restored)?
        };
        let mut restoring: HashSet<&str> = HashSet::new();
        for item in &items {
            let result = match item {
                Err(reason) => Err(LinkOpError::Invalid(reason.clone())),
                Ok(item) => match item.restored_code() {
                    Some(code) if !restoring.insert(code) || held.contains(code) => {
                        Err(LinkOpError::CodeTaken(code.to_string()))
                    }
                    _ => self.draft(item, &taken, ids, now),
                },
            };
            results.push(result);
        }
        self.mint_again_where_held(&items, &mut results, &taken)?;
        let mut drafts: Vec<Link> = results
            .iter()
            .filter_map(|r| r.as_ref().ok().cloned())
            .collect();
        if !drafts.is_empty() {
            // A store shared by many servers makes the ids (PostgreSQL: each shard's next_id()).
            self.store.assign_ids(&mut drafts)?;
            for (result, draft) in results
                .iter_mut()
                .filter_map(|r| r.as_mut().ok())
                .zip(&drafts)
            {
                result.id = draft.id;
            }
        }
        Ok(Prepared {
            items,
            results,
            drafts,
        })
    }

    /// The second half: the store's outcomes applied to the results, restored clicks
    /// put back, new links cached.
    fn finish(
        &self,
        prepared: Prepared,
        outcomes: Vec<InsertOutcome>,
        engine: &Engine,
    ) -> Result<Vec<Result<Link, LinkOpError>>, LinkOpError> {
        let Prepared {
            items, mut results, ..
        } = prepared;
        let mut outcomes = outcomes.into_iter();
        for result in results.iter_mut().filter(|r| r.is_ok()) {
            match outcomes.next() {
                Some(InsertOutcome::Inserted) => {}
                Some(InsertOutcome::AliasTaken { alias, owner_code }) => {
                    *result = Err(LinkOpError::AliasTaken { alias, owner_code })
                }
                None => {
                    *result = Err(LinkOpError::Unavailable(
                        "the store answered fewer outcomes than links".into(),
                    ))
                }
            }
        }
        // Restored links get their clicks back, so visits left and stats are as exported.
        let restored: Vec<(u64, &Restore)> = results
            .iter()
            .zip(&items)
            .filter_map(|(result, item)| {
                Some((
                    result.as_ref().ok()?.id,
                    item.as_ref().ok()?.restore.as_ref()?,
                ))
            })
            .collect();
        let totals: Vec<(u64, u64)> = restored
            .iter()
            .map(|&(id, r)| (id, r.clicks))
            .filter(|&(_, clicks)| clicks > 0)
            .collect();
        let days: Vec<(u64, u64, u64)> = restored
            .iter()
            .flat_map(|&(id, r)| r.daily.iter().map(move |&(day, n)| (id, day, n)))
            .filter(|&(_, _, n)| n > 0)
            .collect();
        self.clicks
            .restore(engine, &totals, &days)
            .map_err(|e| LinkOpError::Unavailable(format!("the clicks were not restored: {e}")))?;
        let mut tally = analytics::Tally::default();
        for &(id, r) in &restored {
            // Checked when the line was read (`prepare`), so this cannot fail here.
            if let Ok(more) = analytics::export::tally(id, &r.analytics) {
                tally.merge(more);
            }
        }
        self.analytics.write(engine, tally).map_err(|e| {
            LinkOpError::Unavailable(format!("the click analytics were not restored: {e}"))
        })?;
        // A new link is likely to be followed soon: put it in the redirect cache.
        for link in results.iter().flatten() {
            let link = Arc::new(link.clone());
            self.cache
                .insert(link.path_key().into_owned(), Arc::clone(&link));
            self.webhooks.emit(webhooks::EventKind::Created, link, None);
        }
        Ok(results)
    }

    /// The link at `/{path}`, from the cache or the store. On a cache miss what the
    /// store can answer from the kernel's page cache (the embedded store's record
    /// `pread`, and its slot's when not held in memory, `RWF_NOWAIT`) is read in place; a read that would wait for the disk,
    /// or a remote store (a PostgreSQL round trip), goes to the blocking pool
    /// (`spawn_blocking`) while this task waits, so the worker goes on with its other
    /// connections. Handing every read off costs more than a cached read (at 1 million
    /// links, 90% misses of the redirect cache, it held redirects to a third of the rate
    /// at 10,000); reading the disk on a worker stalls it (two workers served 10.7 k
    /// redirects/s at 100 million links); `block_in_place`, which moves the worker's
    /// queue to a new thread instead, was 7% of the server's CPU at 10 million links
    /// with 15% of reads on the disk (bench/notes/runs.md). A link read from the
    /// store is cached on its code's second miss (`links/doorkeeper.rs`), so codes asked for
    /// once do not push the popular ones out nor pay for an insert.
    pub async fn lookup(&self, path: &str) -> Result<Option<Arc<Link>>, StoreError> {
        if let Some(link) = self.cache.get(path) {
            return Ok(Some(link));
        }
        let found = match self.store.resolve_cached(path) {
            Some(found) => found,
            None => {
                metrics::counter!("shardkit_link_disk_reads_total").increment(1);
                let store = self.store.reads();
                let owned = path.to_string();
                tokio::task::spawn_blocking(move || store.resolve(&owned))
                    .await
                    .map_err(|e| StoreError::Backend(format!("the read stopped: {e}")))?
            }
        };
        let Some(link) = found? else {
            return Ok(None);
        };
        let link = Arc::new(link);
        if self.admit.seen_before(path) {
            self.cache.insert(path.to_string(), Arc::clone(&link));
        }
        Ok(Some(link))
    }

    fn forget_cached(&self, link: &Link) {
        self.cache.remove(link.code.as_str());
        if let Some(alias) = link.alias_key() {
            self.cache.remove(alias.as_ref());
        }
    }

    /// Every rule of a patch's own fields, as [`Links::update`] applies them, without
    /// reading the store: so a bad field is answered (400) before anything about the
    /// link or its domain.
    pub fn check_patch(&self, patch: &LinkPatch) -> Result<(), LinkOpError> {
        if let Some(url) = &patch.url {
            normalize_url(url, &self.own).map_err(LinkError::from)?;
        }
        if let Some(t) = &patch.expires_at {
            expiry(t, now_ms())?;
        }
        max_visits(patch.max_visits)?;
        redirect(patch.redirect)?;
        if let Some(tags) = &patch.tags {
            validate_tags(tags).map_err(LinkOpError::Invalid)?;
        }
        if let Some(title) = patch.title.as_deref().filter(|t| !t.is_empty()) {
            validate_title(title).map_err(LinkOpError::Invalid)?;
        }
        if patch.rules.is_some() {
            self.rules(patch.rules.clone())?;
        }
        match patch.password.as_deref() {
            None | Some("") => Ok(()),
            Some(p) => password::check(p).map_err(LinkOpError::Invalid),
        }
    }

    /// Applies `patch` to the link at `/{path}` (blocking).
    pub fn update(&self, path: &str, patch: &LinkPatch) -> Result<Link, LinkOpError> {
        let mut link = self
            .store
            .resolve(path)?
            .ok_or_else(|| LinkOpError::NotFound(path.to_string()))?;
        let now = now_ms();
        if let Some(url) = &patch.url {
            link.url = normalize_url(url, &self.own).map_err(LinkError::from)?;
        }
        if let Some(t) = &patch.expires_at {
            link.expires_at = Some(expiry(t, now)?);
        }
        if patch.max_visits.is_some() {
            link.max_visits = max_visits(patch.max_visits)?;
        }
        if patch.redirect.is_some() {
            link.redirect = redirect(patch.redirect)?;
        }
        if let Some(tags) = &patch.tags {
            validate_tags(tags).map_err(LinkOpError::Invalid)?;
            link.tags = tags.clone();
        }
        match patch.title.as_deref() {
            None => {}
            Some("") => link.title = None,
            Some(title) => {
                validate_title(title).map_err(LinkOpError::Invalid)?;
                link.title = Some(title.to_string());
            }
        }
        if patch.rules.is_some() {
            link.rules = self.rules(patch.rules.clone())?;
        }
        match patch.password.as_deref() {
            None => {}
            Some("") => link.password_hash = None,
            Some(p) => link.password_hash = Some(password::hash(p).map_err(LinkOpError::Invalid)?),
        }
        self.store.replace(&link).map_err(|e| match e {
            StoreError::Missing(_) => LinkOpError::NotFound(path.to_string()),
            other => other.into(),
        })?;
        self.forget_cached(&link);
        self.webhooks
            .emit(webhooks::EventKind::Updated, Arc::new(link.clone()), None);
        Ok(link)
    }

    /// Deletes the link at `/{path}` and its click total (blocking).
    pub fn delete(&self, path: &str, engine: &Engine) -> Result<Link, LinkOpError> {
        let link = self
            .store
            .resolve(path)?
            .ok_or_else(|| LinkOpError::NotFound(path.to_string()))?;
        let deleted = self
            .store
            .delete_link(&link)?
            .ok_or_else(|| LinkOpError::NotFound(path.to_string()))?;
        self.forget_cached(&deleted);
        self.clicks.forget(engine, deleted.id);
        self.webhooks.emit(
            webhooks::EventKind::Deleted,
            Arc::new(deleted.clone()),
            None,
        );
        Ok(deleted)
    }

    /// The API's JSON for a link: the stored fields plus `short_url`, with
    /// `"password": true` in place of the password's hash (never shown).
    pub fn view(&self, origin: Option<&str>, link: &Link) -> Value {
        let mut value = serde_json::to_value(link).unwrap_or_else(|_| json!({}));
        if let Some(object) = value.as_object_mut() {
            object.remove("password_hash");
            if link.password_hash.is_some() {
                object.insert("password".into(), json!(true));
            }
            object.insert("short_url".into(), json!(self.short_url(origin, link)));
            if let Some(domain) = self.domains.of_link(link) {
                object.insert("domain".into(), json!(domain));
            }
            if let Some(region) = self.region_of(link) {
                object.insert("region".into(), json!(region));
            }
        }
        value
    }

    /// The last [`SERIES_DAYS`] days (from the link's creation day at the earliest) with
    /// their clicks, oldest first: `[("2026-11-22", 3), …]`.
    pub fn daily(&self, engine: &Engine, link: &Link) -> Vec<(String, u64)> {
        let (first, today) = series_days(link);
        let days: Vec<u64> = (first..=today).collect();
        let counts = self.clicks.daily(engine, link.id, &days);
        days.iter().map(|&d| format_day(d)).zip(counts).collect()
    }

    /// The view plus `clicks` and `daily`.
    pub fn view_with_clicks(&self, engine: &Engine, origin: Option<&str>, link: &Link) -> Value {
        let mut value = self.view(origin, link);
        let daily: Vec<Value> = self
            .daily(engine, link)
            .into_iter()
            .map(|(day, clicks)| json!({ "day": day, "clicks": clicks }))
            .collect();
        if let Some(object) = value.as_object_mut() {
            object.insert("clicks".into(), json!(self.clicks.total(engine, link.id)));
            object.insert("daily".into(), json!(daily));
        }
        value
    }
}

/// The first and last day (UTC day numbers) of a link's daily series: the last
/// [`SERIES_DAYS`] days, from its creation day at the earliest.
pub fn series_days(link: &Link) -> (u64, u64) {
    let today = day_of(now_ms());
    let first = day_of(link.created_at)
        .max(today.saturating_sub(SERIES_DAYS - 1))
        .min(today);
    (first, today)
}

/// The batch of one `POST /api/links` request.
fn one_item(request: &NewLink, author: Option<&str>) -> Vec<Result<BulkItem, String>> {
    let mut item = BulkItem::new_link(request.clone());
    item.author = author.map(str::to_string);
    vec![Ok(item)]
}

/// The one link a single create made (`true`: new, not reused).
fn created(mut results: Vec<Result<Link, LinkOpError>>) -> Result<(Link, bool), LinkOpError> {
    results
        .pop()
        .unwrap_or_else(|| Err(LinkOpError::Unavailable("no result".into())))
        .map(|l| (l, true))
}

/// `expires_at` of a link as RFC 3339 (for the web page).
pub fn expiry_text(link: &Link) -> Option<String> {
    link.expires_at.map(format_time)
}

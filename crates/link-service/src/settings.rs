//! `[links]`: the short-link service's settings (codes, cache, rate limits, click
//! flushing, where links live) and their checks.

use crate::cache_size::MAX_CACHE_ENTRIES;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// `[links] store`: where links live.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum LinkStoreKind {
    /// Embedded: records in `<data>/links.segments/`, their indexes in `<data>/links.redb`.
    #[default]
    Redb,
    /// The previous embedded format (records in redb), for side-by-side measurements.
    RedbCompact,
    /// The oldest embedded format (JSON records), for side-by-side measurements.
    RedbJson,
    /// The logical shards of `links.servers`, made by `shardkit pg init` (feature `sql`).
    Postgres,
}

/// `[links]`: short links (codes, cache, limits, click flushing).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, documented::DocumentedFields)]
#[serde(default, deny_unknown_fields)]
pub struct LinkSettings {
    /// Start of every short URL, e.g. `https://sho.rt`; `http://<http address>` when absent.
    /// Long URLs pointing there are refused.
    pub base_url: Option<String>,
    /// The host names (`host` or `host:port`) clients reach the links at. When set, a
    /// request naming another `Host` is refused with 421 (so a forged Host cannot mint
    /// short URLs on another domain) and long URLs to these hosts are refused as links
    /// to this server. Without `base_url`, short URLs start with the request's Host.
    pub hosts: Vec<String>,
    /// The domains links are made on (`host` or `host:port`), the first the default:
    /// a link belongs to one (`"domain"` at create, default the first), its alias is
    /// unique within it, and a redirect is looked up by the request's Host and path;
    /// a Host that is none of them answers 404. A domain without a port matches its
    /// name on any port. Empty (the default): one domain, whatever the Host.
    pub domains: Vec<String>,
    /// Plain sequential codes (`a000001`, `a000002`, …) instead of scrambled ones.
    pub sequential_codes: bool,
    /// Links kept in the redirect cache (at most [`MAX_CACHE_ENTRIES`]).
    pub cache_entries: usize,
    /// Link creations per second per client address (0: no limit).
    pub create_per_second: u32,
    /// Creations a client may make at once before the rate applies.
    pub create_burst: u32,
    /// How often clicks counted in memory are written to the counter engine, ms:
    /// the most clicks a SIGKILL can lose.
    pub click_flush_ms: u64,
    /// Where links live: `redb` (embedded: records in `<data>/links.segments/`, their
    /// indexes in `<data>/links.redb`) or `postgres` (the logical shards of `servers`,
    /// made by `shardkit pg init`; needs feature `sql`). `redb-compact` and `redb-json`
    /// are the two previous embedded formats, kept for side-by-side measurements.
    pub store: LinkStoreKind,
    /// PostgreSQL server URLs of the cluster when `store` is `postgres`.
    pub servers: Vec<String>,
    /// A MaxMind DB file (GeoLite2-Country or alike) for the clicks' countries; none
    /// by default (no country recorded, nothing downloaded).
    pub geoip_db: Option<PathBuf>,
    /// Memory of the embedded link store, MiB: its page cache, which holds what
    /// resident memory the store takes whatever the number of links (16 to 1,048,576).
    pub memory_mib: u64,
    /// Receivers of the service's events (`[[links.webhooks]]` tables: `url`, `secret`,
    /// `events`, `batch`, `interval_ms`, `queue`); none by default.
    pub webhooks: Vec<crate::webhooks::settings::WebhookSettings>,
}

impl LinkSettings {
    /// The embedded store's page cache in bytes (`memory_mib`).
    pub fn store_cache_bytes(&self) -> usize {
        usize::try_from(self.memory_mib.saturating_mul(1 << 20)).unwrap_or(usize::MAX)
    }
}

impl Default for LinkSettings {
    fn default() -> Self {
        Self {
            base_url: None,
            hosts: Vec::new(),
            domains: Vec::new(),
            sequential_codes: false,
            cache_entries: 100_000,
            create_per_second: 100,
            create_burst: 1_000,
            click_flush_ms: 100,
            store: LinkStoreKind::Redb,
            servers: Vec::new(),
            geoip_db: None,
            memory_mib: 256,
            webhooks: Vec::new(),
        }
    }
}

impl LinkSettings {
    /// Refuses values that cannot work, naming the setting. Whether this build has the
    /// `postgres` store is the binary's to say (its cargo features).
    pub fn check(&self) -> anyhow::Result<()> {
        if self.cache_entries > MAX_CACHE_ENTRIES {
            anyhow::bail!(
                "links.cache_entries must be 0 to {MAX_CACHE_ENTRIES} (links in the redirect cache), got {}",
                self.cache_entries
            );
        }
        if !(16..=1 << 20).contains(&self.memory_mib) {
            anyhow::bail!(
                "links.memory_mib must be 16 to 1048576 (MiB of page cache for the link store), got {}",
                self.memory_mib
            );
        }
        if self.store == LinkStoreKind::Postgres && self.servers.is_empty() {
            anyhow::bail!("links.store \"postgres\" needs the cluster's servers: pass --servers URL[,URL...] (or links.servers)")
        }
        for host in &self.hosts {
            if host_key(host).is_none() {
                anyhow::bail!(
                    "links.hosts: {host:?} is not a host name with an optional port (write e.g. \"sho.rt\" or \"go.example:8443\")"
                );
            }
        }
        let mut seen = std::collections::HashSet::new();
        for domain in &self.domains {
            let Some(key) = host_key(domain) else {
                anyhow::bail!(
                    "links.domains: {domain:?} is not a host name with an optional port (write e.g. \"sho.rt\" or \"go.example:8443\")"
                );
            };
            if !seen.insert(key) {
                anyhow::bail!("links.domains: {domain:?} is listed twice");
            }
        }
        for (i, hook) in self.webhooks.iter().enumerate() {
            hook.check(i)?;
        }
        if let Some(base) = &self.base_url {
            shardkit_links::OwnOrigin::from_base_url(base)
                .map_err(|e| anyhow::anyhow!("links.base_url {base:?} is not a usable URL: {e}"))?;
        }
        Ok(())
    }
}

/// A `Host` (or `hosts` entry) as `host[:port]`, lowercased, the scheme's default port
/// dropped so `sho.rt` and `sho.rt:80` compare equal; `None` when it is no host name
/// with an optional port (a path, a user, spaces).
pub fn host_key(host: &str) -> Option<String> {
    if host.is_empty() || host.contains(['/', '@', '?', '#', ' ']) {
        return None;
    }
    let url = url::Url::parse(&format!("http://{host}/")).ok()?;
    let name = url.host_str()?.to_ascii_lowercase();
    Some(match url.port() {
        Some(port) => format!("{name}:{port}"),
        None => name,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_compare_without_case_or_the_default_port() {
        assert_eq!(host_key("Sho.RT").as_deref(), Some("sho.rt"));
        assert_eq!(host_key("sho.rt:80").as_deref(), Some("sho.rt"));
        assert_eq!(host_key("sho.rt:8443").as_deref(), Some("sho.rt:8443"));
        assert_eq!(host_key("[::1]:8080").as_deref(), Some("[::1]:8080"));
        for bad in ["", "sho.rt/x", "user@sho.rt", "sho rt", "sho.rt:99999"] {
            assert_eq!(host_key(bad), None, "{bad}");
        }
    }
}

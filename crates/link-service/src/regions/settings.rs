//! `[regions]`: which region this server is, where the other regions' HTTP APIs are,
//! which hosts belong to which region, and which code groups each region owns. Absent:
//! one region, today's behaviour.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// `[regions]` settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, documented::DocumentedFields)]
#[serde(default, deny_unknown_fields)]
pub struct RegionSettings {
    /// This server's region.
    pub this: String,
    /// The region of links whose host matches no suffix of `hosts`, and the region of
    /// record of every alias.
    pub default: String,
    /// Every other region's name → base URL of its shardkit HTTP API.
    pub peers: BTreeMap<String, String>,
    /// Host suffix (`".cn"`, `"example.de"`) → region; the longest match wins.
    pub hosts: BTreeMap<String, String>,
    /// Region → the code groups (first characters) it owns, as base62 characters and
    /// inclusive ranges: `"0-U"`, `"0-9,a-f"`. Disjoint; every region has some; a group
    /// no region owns is kept for regions added later.
    pub groups: BTreeMap<String, String>,
    /// The secret regions show each other on their peer routes (`/api/regions/…`):
    /// 16+ characters, the same in every region. None: the peer routes need the admin
    /// key when keys are configured (and are open when none are).
    pub peer_key: Option<String>,
    /// How long a link fetched from another region is served from the local cache, ms:
    /// the bound on serving an edited, deleted or expired remote link.
    pub remote_ttl_ms: u64,
    /// How long a call to another region may take before this server gives up, ms
    /// (a redirect of an uncached remote link then answers 503).
    pub peer_timeout_ms: u64,
    /// Remote links (and remote misses) kept in the local cache.
    pub remote_cache_entries: usize,
    /// CA certificates (PEM) that `https://` peers' certificates must chain to, in
    /// place of the system's CAs (as `curl --cacert`): a private CA between regions.
    pub tls_ca: Option<std::path::PathBuf>,
}

impl Default for RegionSettings {
    fn default() -> Self {
        Self {
            this: String::new(),
            default: String::new(),
            peers: BTreeMap::new(),
            hosts: BTreeMap::new(),
            groups: BTreeMap::new(),
            peer_key: None,
            remote_ttl_ms: 30_000,
            peer_timeout_ms: 1_000,
            remote_cache_entries: 100_000,
            tls_ca: None,
        }
    }
}

/// A region name: 1 to 32 of `a-z 0-9 -`.
fn valid_name(name: &str) -> bool {
    (1..=32).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

/// The groups of `text` (`"0-9,a-f"`), each once, in order; an error names the part.
pub fn parse_groups(text: &str) -> Result<Vec<u8>, String> {
    let digit = |c: &str| -> Result<u8, String> {
        shardkit_ids::base62::decode(c)
            .ok()
            .filter(|_| c.len() == 1)
            .map(|g| g as u8)
            .ok_or_else(|| format!("{c:?} is not one base62 character (0-9, A-Z, a-z)"))
    };
    let mut groups = Vec::new();
    for part in text.split(',').map(str::trim) {
        let (first, last) = match part.split_once('-') {
            Some((a, b)) => (digit(a.trim())?, digit(b.trim())?),
            None => (digit(part)?, digit(part)?),
        };
        if first > last {
            return Err(format!(
                "{part:?} runs backwards (base62 order is 0-9, then A-Z, then a-z)"
            ));
        }
        groups.extend(first..=last);
    }
    groups.sort_unstable();
    groups.dedup();
    Ok(groups)
}

impl RegionSettings {
    /// Every region named: this one and the peers.
    pub fn regions(&self) -> impl Iterator<Item = &str> {
        std::iter::once(self.this.as_str()).chain(self.peers.keys().map(String::as_str))
    }

    /// Refuses settings that cannot work, saying what to change.
    pub fn check(&self) -> anyhow::Result<()> {
        if !valid_name(&self.this) {
            anyhow::bail!(
                "regions.this must name this server's region (1 to 32 of a-z 0-9 -), got {:?}",
                self.this
            );
        }
        for name in self.peers.keys() {
            if !valid_name(name) {
                anyhow::bail!(
                    "regions.peers: {name:?} is not a region name (1 to 32 of a-z 0-9 -)"
                );
            }
            if *name == self.this {
                anyhow::bail!("regions.peers names this region ({name:?}); list only the others");
            }
        }
        for (name, url) in &self.peers {
            let parsed = url::Url::parse(url)
                .map_err(|e| anyhow::anyhow!("regions.peers.{name} = {url:?} is not a URL: {e}"))?;
            if !matches!(parsed.scheme(), "http" | "https") || parsed.host_str().is_none() {
                anyhow::bail!(
                    "regions.peers.{name} = {url:?} must be an http:// or https:// URL with a host"
                );
            }
            if parsed.scheme() == "https" && !cfg!(feature = "tls") {
                anyhow::bail!(
                    "regions.peers.{name} = {url:?} is https: that needs a shardkit built with \
                     the cargo feature `tls`"
                );
            }
        }
        if let Some(ca) = &self.tls_ca {
            if !cfg!(feature = "tls") {
                anyhow::bail!("regions.tls_ca needs a shardkit built with the cargo feature `tls`");
            }
            std::fs::File::open(ca).map_err(|e| {
                anyhow::anyhow!("regions.tls_ca: cannot read {}: {e}", ca.display())
            })?;
        }
        let known = |r: &str| self.regions().any(|n| n == r);
        if !known(&self.default) {
            anyhow::bail!(
                "regions.default = {:?} is neither regions.this nor a region of regions.peers",
                self.default
            );
        }
        for (suffix, region) in &self.hosts {
            if suffix.is_empty() || suffix.bytes().any(|b| b.is_ascii_uppercase() || b == b'/') {
                anyhow::bail!("regions.hosts: {suffix:?} is not a lowercase host suffix");
            }
            if !known(region) {
                anyhow::bail!("regions.hosts.{suffix:?} = {region:?} names no region (regions.this or regions.peers)");
            }
        }
        let mut owner: [Option<&str>; 62] = [None; 62];
        for (region, text) in &self.groups {
            if !known(region) {
                anyhow::bail!(
                    "regions.groups.{region} names no region (regions.this or regions.peers)"
                );
            }
            let groups = parse_groups(text)
                .map_err(|e| anyhow::anyhow!("regions.groups.{region} = {text:?}: {e}"))?;
            for g in groups {
                if let Some(other) = owner[usize::from(g)].replace(region) {
                    anyhow::bail!(
                        "regions.groups: group {:?} is given to both {other} and {region}; a group has one home",
                        shardkit_ids::base62::ALPHABET[usize::from(g)] as char
                    );
                }
            }
        }
        for region in self.regions() {
            if !self.groups.contains_key(region) {
                anyhow::bail!(
                    "regions.groups has no groups for region {region:?}: every region needs its own range of code groups, e.g. {region} = \"0-U\""
                );
            }
        }
        if let Some(key) = &self.peer_key {
            if key.len() < 16 {
                anyhow::bail!("regions.peer_key is too short: use at least 16 characters");
            }
        }
        if !(100..=86_400_000).contains(&self.remote_ttl_ms) {
            anyhow::bail!(
                "regions.remote_ttl_ms must be from 100 to 86400000, got {}",
                self.remote_ttl_ms
            );
        }
        if !(10..=60_000).contains(&self.peer_timeout_ms) {
            anyhow::bail!(
                "regions.peer_timeout_ms must be from 10 to 60000, got {}",
                self.peer_timeout_ms
            );
        }
        let most = crate::cache_size::MAX_CACHE_ENTRIES;
        if !(16..=most).contains(&self.remote_cache_entries) {
            anyhow::bail!(
                "regions.remote_cache_entries must be from 16 to {most}, got {}",
                self.remote_cache_entries
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn two() -> RegionSettings {
        RegionSettings {
            this: "us".into(),
            default: "us".into(),
            peers: [("cn".to_string(), "http://10.0.0.2:8080".to_string())].into(),
            hosts: [(".cn".to_string(), "cn".to_string())].into(),
            groups: [
                ("us".to_string(), "0-U".to_string()),
                ("cn".to_string(), "V-z".to_string()),
            ]
            .into(),
            ..RegionSettings::default()
        }
    }

    #[test]
    fn ranges_parse_in_base62_order() {
        assert_eq!(parse_groups("0-2,a").unwrap(), vec![0, 1, 2, 36]);
        assert_eq!(parse_groups("z").unwrap(), vec![61]);
        assert!(parse_groups("b-a").unwrap_err().contains("backwards"));
        assert!(parse_groups("0-!").unwrap_err().contains("base62"));
        assert!(parse_groups("").is_err());
    }

    #[test]
    fn good_settings_pass_and_bad_ones_are_named() {
        two().check().unwrap();
        let mut s = two();
        s.groups.insert("cn".into(), "U-z".into());
        let e = s.check().unwrap_err().to_string();
        assert!(e.contains("group 'U' is given to both"), "{e}");
        let mut s = two();
        s.groups.remove("cn");
        assert!(s
            .check()
            .unwrap_err()
            .to_string()
            .contains("no groups for region \"cn\""));
        let mut s = two();
        s.default = "eu".into();
        assert!(s
            .check()
            .unwrap_err()
            .to_string()
            .contains("regions.default"));
        let mut s = two();
        s.hosts.insert(".de".into(), "eu".into());
        assert!(s
            .check()
            .unwrap_err()
            .to_string()
            .contains("names no region"));
        let mut s = two();
        s.peer_key = Some("short".into());
        assert!(s.check().unwrap_err().to_string().contains("peer_key"));
        let mut s = two();
        s.peers.insert("us".into(), "http://x".into());
        assert!(s.check().unwrap_err().to_string().contains("this region"));
        let mut s = two();
        s.peers.insert("cn".into(), "ftp://x".into());
        assert!(s
            .check()
            .unwrap_err()
            .to_string()
            .contains("http:// or https:// URL"));
    }
}

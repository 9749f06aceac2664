//! [`RegionMap`]: where a link lives, from its URL's host (on create) or from its code
//! alone (on every later request), with no look-up.

use super::settings::{parse_groups, RegionSettings};
use shardkit_links::{looks_like_code, Codec};

/// The regions of the settings, resolved once at start.
#[derive(Debug, Clone)]
pub struct RegionMap {
    this: String,
    default: String,
    /// Owner of each of the 62 groups (`None`: no region yet).
    owners: Vec<Option<String>>,
    /// This region's groups, in order.
    mine: Vec<u8>,
    /// `(suffix, region)`, longest suffix first.
    hosts: Vec<(String, String)>,
    /// Region → base URL of its API, without a trailing `/`.
    peers: Vec<(String, String)>,
}

impl RegionMap {
    /// The map of checked settings ([`RegionSettings::check`]).
    pub fn new(settings: &RegionSettings) -> anyhow::Result<Self> {
        let mut owners = vec![None; usize::from(shardkit_links::GROUPS)];
        for (region, text) in &settings.groups {
            for g in parse_groups(text).map_err(anyhow::Error::msg)? {
                owners[usize::from(g)] = Some(region.clone());
            }
        }
        let mine: Vec<u8> = (0..shardkit_links::GROUPS)
            .filter(|&g| owners[usize::from(g)].as_deref() == Some(settings.this.as_str()))
            .collect();
        let mut hosts: Vec<(String, String)> = settings
            .hosts
            .iter()
            .map(|(s, r)| (s.clone(), r.clone()))
            .collect();
        hosts.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then_with(|| a.0.cmp(&b.0)));
        Ok(Self {
            this: settings.this.clone(),
            default: settings.default.clone(),
            owners,
            mine,
            hosts,
            peers: settings
                .peers
                .iter()
                .map(|(r, u)| (r.clone(), u.trim_end_matches('/').to_string()))
                .collect(),
        })
    }

    /// This server's region.
    pub fn this(&self) -> &str {
        &self.this
    }

    /// The region of record of aliases and of hosts no suffix matches.
    pub fn default_region(&self) -> &str {
        &self.default
    }

    /// The groups this region mints codes in.
    pub fn mine(&self) -> &[u8] {
        &self.mine
    }

    /// Whether this region owns `group`.
    pub fn owns(&self, group: u8) -> bool {
        self.mine.binary_search(&group).is_ok()
    }

    /// The region owning `group`, if any.
    pub fn owner(&self, group: u8) -> Option<&str> {
        self.owners.get(usize::from(group))?.as_deref()
    }

    /// The home of a link to `host` (a URL's host, lowercase): the longest matching
    /// suffix of `[regions.hosts]`, else the default region.
    pub fn home_of_host(&self, host: &str) -> &str {
        let host = host.trim_end_matches('.');
        self.hosts
            .iter()
            .find(|(suffix, _)| {
                host.ends_with(suffix.as_str())
                    && (suffix.starts_with('.')
                        || host.len() == suffix.len()
                        || host.as_bytes()[host.len() - suffix.len() - 1] == b'.')
            })
            .map_or(self.default.as_str(), |(_, region)| region.as_str())
    }

    /// The home of `/{path}`: a generated code's group owner (`None` when no region owns
    /// it: no such link anywhere), an alias's region of record (the default region).
    pub fn home_of_path(&self, path: &str) -> Option<&str> {
        if looks_like_code(path) {
            self.owner(Codec::group_of_code(path)?)
        } else {
            Some(&self.default)
        }
    }

    /// The base URL of `region`'s API (none for this region or an unknown one).
    pub fn peer_url(&self, region: &str) -> Option<&str> {
        self.peers
            .iter()
            .find(|(r, _)| r == region)
            .map(|(_, u)| u.as_str())
    }

    /// Every other region with its base URL.
    pub fn peers(&self) -> &[(String, String)] {
        &self.peers
    }

    /// Whether `region` is this one or a peer.
    pub fn knows(&self, region: &str) -> bool {
        region == self.this || self.peer_url(region).is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map() -> RegionMap {
        let settings = RegionSettings {
            this: "us".into(),
            default: "us".into(),
            peers: [("cn".to_string(), "http://10.0.0.2:8080/".to_string())].into(),
            hosts: [
                (".cn".to_string(), "cn".to_string()),
                ("us.example.cn".to_string(), "us".to_string()),
            ]
            .into(),
            groups: [
                ("us".to_string(), "0-9".to_string()),
                ("cn".to_string(), "A-Z".to_string()),
            ]
            .into(),
            ..RegionSettings::default()
        };
        settings.check().unwrap();
        RegionMap::new(&settings).unwrap()
    }

    #[test]
    fn hosts_go_by_the_longest_suffix_on_a_label_boundary() {
        let m = map();
        assert_eq!(m.home_of_host("www.baidu.cn"), "cn");
        assert_eq!(m.home_of_host("us.example.cn"), "us");
        assert_eq!(m.home_of_host("a.us.example.cn"), "us");
        assert_eq!(m.home_of_host("xus.example.cn"), "cn");
        assert_eq!(m.home_of_host("example.com"), "us");
        assert_eq!(m.peer_url("cn"), Some("http://10.0.0.2:8080"));
    }

    #[test]
    fn codes_name_their_home_and_aliases_live_in_the_default_region() {
        let m = map();
        assert_eq!(m.home_of_path("5abcdef"), Some("us"));
        assert_eq!(m.home_of_path("Babcdef"), Some("cn"));
        // Group `a` belongs to nobody: no such link in any region.
        assert_eq!(m.home_of_path("aabcdef"), None);
        assert_eq!(m.home_of_path("my-alias"), Some("us"));
        assert_eq!(m.home_of_path("Bab"), Some("us"));
        assert_eq!(m.mine(), &(0..10).collect::<Vec<u8>>()[..]);
        assert!(m.owns(3) && !m.owns(10));
    }
}

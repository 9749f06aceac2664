//! `[links] domains`: the host names links are made on, as Shlink, Kutt and Dub serve
//! several from one install. The first is the default: a link made without `domain`
//! belongs to it and is stored with no domain at all, so links made before domains
//! were configured need no change (and moving the default moves them with it, as in
//! Shlink). Codes are unique across domains; aliases are unique per domain.

use crate::settings::host_key;
use crate::LinkOpError;
use shardkit_links::{alias_key, looks_like_code, Link};
use std::borrow::Cow;

/// The configured domains, as [`host_key`] writes them; empty: one domain, any Host.
#[derive(Debug, Clone, Default)]
pub struct Domains {
    names: Vec<String>,
}

/// Which domain a request's `Host` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostDomain<'a> {
    /// No domains are configured: every Host reaches every link.
    Any,
    /// A configured domain: `None` the default, else its name as links store it.
    Served(Option<&'a str>),
    /// A Host that is none of the domains: its redirects answer 404, never another
    /// domain's link.
    Unknown,
}

impl Domains {
    /// The domains of `[links] domains` (checked by the settings: host names with an
    /// optional port, no repeats).
    pub fn new(names: &[String]) -> Self {
        Self {
            names: names.iter().filter_map(|n| host_key(n)).collect(),
        }
    }

    /// Whether several domains are served (`[links] domains` set).
    pub fn is_set(&self) -> bool {
        !self.names.is_empty()
    }

    /// Every domain, the default first.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// The default domain, if domains are configured.
    pub fn default_domain(&self) -> Option<&str> {
        self.names.first().map(String::as_str)
    }

    /// The domain a link is reached at: its own, else the default (`None` when no
    /// domains are configured).
    pub fn of_link<'a>(&'a self, link: &'a Link) -> Option<&'a str> {
        link.domain.as_deref().or(self.default_domain())
    }

    /// The domain to store for a request's `domain` field: `None` for the default
    /// (asked for by name or not at all), else the domain as configured. Anything not
    /// configured is refused, naming the setting.
    pub fn stored(&self, asked: Option<&str>) -> Result<Option<String>, LinkOpError> {
        let Some(asked) = asked else {
            return Ok(None);
        };
        if asked.is_empty() {
            return Err(LinkOpError::Invalid(
                "domain is empty: name one of links.domains, or leave it out for the default"
                    .into(),
            ));
        }
        if !self.is_set() {
            return Err(LinkOpError::NoSuchDomain {
                domain: asked.to_string(),
                reason:
                    "this server serves one domain (list several in links.domains to choose one)"
                        .into(),
            });
        }
        let known = host_key(asked)
            .and_then(|key| self.names.iter().position(|n| *n == key))
            .ok_or_else(|| LinkOpError::NoSuchDomain {
                domain: asked.to_string(),
                reason: format!("it is not one of links.domains ({})", self.names.join(", ")),
            })?;
        Ok((known > 0).then(|| self.names[known].clone()))
    }

    /// The domain `host` (a request's Host) names: by its name and port, else by its
    /// name alone when the domain was configured without a port (a server behind a
    /// proxy, or reached on a test port, still serves `go.example`).
    pub fn of_host(&self, host: Option<&str>) -> HostDomain<'_> {
        if !self.is_set() {
            return HostDomain::Any;
        }
        let Some(key) = host.and_then(host_key) else {
            return HostDomain::Unknown;
        };
        let name = key.rsplit_once(':').map_or(key.as_str(), |(n, _)| n);
        let found = self
            .names
            .iter()
            .position(|n| *n == key)
            .or_else(|| self.names.iter().position(|n| n == name));
        match found {
            Some(0) => HostDomain::Served(None),
            Some(i) => HostDomain::Served(Some(&self.names[i])),
            None => HostDomain::Unknown,
        }
    }

    /// The key a store resolves `path` by on `domain` (as stored: `None` the default):
    /// a code as it is (codes are unique across domains), an alias as its alias key.
    pub fn key<'a>(domain: Option<&str>, path: &'a str) -> Cow<'a, str> {
        if looks_like_code(path) {
            Cow::Borrowed(path)
        } else {
            alias_key(domain, path)
        }
    }

    /// The store key for an API request about `path` with `?domain=` (`asked`), the
    /// domain checked as for a create.
    pub fn key_for(&self, asked: Option<&str>, path: &str) -> Result<String, LinkOpError> {
        let domain = self.stored(asked)?;
        Ok(Self::key(domain.as_deref(), path).into_owned())
    }

    /// Whether `link` (found by `path` at `domain`) is the one that domain serves: an
    /// alias key names its domain already, a code must belong to it.
    pub fn serves(domain: HostDomain<'_>, link: &Link) -> bool {
        match domain {
            HostDomain::Any => true,
            HostDomain::Served(d) => link.domain.as_deref() == d,
            HostDomain::Unknown => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn domains() -> Domains {
        Domains::new(&[
            "Sho.rt".into(),
            "go.example".into(),
            "x.example:8443".into(),
        ])
    }

    #[test]
    fn a_request_names_a_domain_by_host_and_port_or_by_name() {
        let d = domains();
        assert_eq!(d.of_host(Some("sho.rt")), HostDomain::Served(None));
        assert_eq!(d.of_host(Some("SHO.RT:80")), HostDomain::Served(None));
        assert_eq!(
            d.of_host(Some("go.example:9000")),
            HostDomain::Served(Some("go.example"))
        );
        assert_eq!(
            d.of_host(Some("x.example:8443")),
            HostDomain::Served(Some("x.example:8443"))
        );
        assert_eq!(d.of_host(Some("x.example")), HostDomain::Unknown);
        assert_eq!(d.of_host(Some("evil.example")), HostDomain::Unknown);
        assert_eq!(d.of_host(None), HostDomain::Unknown);
        assert_eq!(
            Domains::default().of_host(Some("anything")),
            HostDomain::Any
        );
    }

    #[test]
    fn the_default_domain_is_stored_as_none_and_unknown_ones_are_named() {
        let d = domains();
        assert_eq!(d.stored(None).unwrap(), None);
        assert_eq!(d.stored(Some("sho.rt")).unwrap(), None);
        assert_eq!(
            d.stored(Some("GO.example")).unwrap().as_deref(),
            Some("go.example")
        );
        let e = d.stored(Some("evil.example")).unwrap_err().to_string();
        assert!(
            e.contains("links.domains") && e.contains("evil.example"),
            "{e}"
        );
        let e = Domains::default()
            .stored(Some("go.example"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("links.domains"), "{e}");
    }

    #[test]
    fn codes_are_keyed_alike_on_every_domain_and_aliases_per_domain() {
        assert_eq!(Domains::key(Some("go.example"), "a000001"), "a000001");
        assert_eq!(
            Domains::key(Some("go.example"), "launch"),
            "go.example/launch"
        );
        assert_eq!(Domains::key(None, "launch"), "launch");
    }
}

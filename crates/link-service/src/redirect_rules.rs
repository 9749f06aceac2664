//! Where one visit of a link goes: the first of the link's redirect rules
//! ([`shardkit_links::RedirectRule`]) the visit meets, else the link's URL.
//!
//! This runs on the redirect path, so each fact of the visit is read only when a rule
//! asks for it and at most once: the device through the analytics' User-Agent cache,
//! the country by one GeoIP lookup, the languages and the query by one pass over their
//! header or string. A link without rules costs one branch.

use crate::analytics::classify::Agent;
use crate::analytics::Analytics;
use shardkit_links::{Condition, Device, Link, QueryMatch};
use std::cell::OnceCell;
use std::net::IpAddr;
use std::sync::Arc;

/// What a request says of its visitor, as the HTTP layer hands it over (nothing parsed).
#[derive(Debug, Clone, Copy)]
pub struct VisitHeaders<'a> {
    /// `User-Agent`.
    pub user_agent: Option<&'a str>,
    /// `Accept-Language`.
    pub accept_language: Option<&'a str>,
    /// The request's query string, without the `?`.
    pub query: Option<&'a str>,
    /// The client's address (behind trusted proxies, the one they name).
    pub ip: IpAddr,
}

/// One visit, its facts read on first use.
struct Visit<'a> {
    headers: VisitHeaders<'a>,
    analytics: &'a Analytics,
    agent: OnceCell<Arc<Agent>>,
    country: OnceCell<Option<String>>,
}

/// The URL `link` sends this visit to: its first rule the visit meets, else its URL.
pub fn target<'l>(link: &'l Link, headers: VisitHeaders<'_>, analytics: &Analytics) -> &'l str {
    if link.rules.is_empty() {
        return &link.url;
    }
    let visit = Visit {
        headers,
        analytics,
        agent: OnceCell::new(),
        country: OnceCell::new(),
    };
    link.rules
        .iter()
        .find(|rule| visit.meets(&rule.when))
        .map_or(&link.url, |rule| &rule.url)
}

impl Visit<'_> {
    fn meets(&self, condition: &Condition) -> bool {
        match condition {
            Condition::Device(device) => self.is_device(*device),
            Condition::Language(tag) => self.accepts(tag),
            Condition::Country(code) => {
                self.country().is_some_and(|c| c.eq_ignore_ascii_case(code))
            }
            Condition::Query(wanted) => self.query_has(wanted),
            Condition::Cidr(net) => net.contains(&plain_ip(self.headers.ip)),
        }
    }

    fn is_device(&self, device: Device) -> bool {
        let agent = self
            .agent
            .get_or_init(|| self.analytics.agent(self.headers.user_agent));
        match device {
            Device::Ios => matches!(agent.os.as_str(), "iPhone" | "iPad" | "iPod" | "iOS"),
            Device::Android => agent.os == "Android",
            Device::Desktop => agent.device == "desktop",
        }
    }

    fn country(&self) -> Option<&str> {
        self.country
            .get_or_init(|| {
                self.analytics
                    .geo()
                    .and_then(|geo| geo.country(plain_ip(self.headers.ip)))
            })
            .as_deref()
    }

    /// Whether the visitor accepts `tag` (lowercase): a primary tag matches its
    /// regional forms, a regional tag only itself; a q-value of 0 refuses it.
    fn accepts(&self, tag: &str) -> bool {
        accepted_languages(self.headers.accept_language.unwrap_or("")).any(|accepted| {
            accepted.len() >= tag.len()
                && accepted[..tag.len()].eq_ignore_ascii_case(tag)
                && (accepted.len() == tag.len() || accepted.as_bytes()[tag.len()] == b'-')
        })
    }

    fn query_has(&self, wanted: &[(String, QueryMatch)]) -> bool {
        let query = self.headers.query.unwrap_or("");
        wanted.iter().all(|(name, want)| {
            url::form_urlencoded::parse(query.as_bytes()).any(|(n, v)| {
                n == name.as_str()
                    && match want {
                        QueryMatch::Present => true,
                        QueryMatch::Equals(value) => v == value.as_str(),
                    }
            })
        })
    }
}

/// The tags of an `Accept-Language` header whose q-value is above 0, in the header's
/// order (`*` and malformed entries left out). Read again for each language rule, which
/// costs less than keeping them (a header holds a few tags; a link, a rule or two).
fn accepted_languages(header: &str) -> impl Iterator<Item = &str> {
    header.split(',').filter_map(|entry| {
        let mut parts = entry.split(';');
        let tag = parts.next()?.trim();
        if tag.is_empty() || tag == "*" {
            return None;
        }
        let refused = parts.any(|p| {
            p.trim()
                .strip_prefix("q=")
                .and_then(|q| q.trim().parse::<f32>().ok())
                .is_some_and(|q| q <= 0.0)
        });
        (!refused).then_some(tag)
    })
}

/// An IPv4 client on a dual-stack socket arrives as `::ffff:a.b.c.d`: compared as the
/// IPv4 address it is.
fn plain_ip(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn link(rules: &str) -> Link {
        let mut link =
            shardkit_links::conformance::sample_link(1, "a000001", "https://default.example/");
        link.rules = serde_json::from_str(rules).unwrap();
        link
    }

    fn analytics() -> (tempfile::TempDir, Analytics) {
        let dir = tempfile::tempdir().unwrap();
        let engine =
            shardkit_counters::Engine::open(dir.path(), shardkit_counters::Options::default())
                .unwrap();
        let analytics = Analytics::open(&engine, None).unwrap();
        (dir, analytics)
    }

    fn visit<'a>(ua: &'a str, lang: &'a str, query: &'a str, ip: &str) -> VisitHeaders<'a> {
        VisitHeaders {
            user_agent: Some(ua),
            accept_language: Some(lang),
            query: Some(query),
            ip: ip.parse().unwrap(),
        }
    }

    const IPHONE: &str = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.1 Mobile/15E148 Safari/604.1";
    const ANDROID: &str = "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Mobile Safari/537.36";
    const WINDOWS: &str = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36";

    #[test]
    fn the_first_rule_met_wins_else_the_links_url() {
        let (_dir, analytics) = analytics();
        let link = link(
            r#"[{"device":"ios","url":"https://ios.example/"},
                {"device":"android","url":"https://android.example/"},
                {"language":"de","url":"https://de.example/"},
                {"query":{"ref":"x","debug":true},"url":"https://query.example/"},
                {"cidr":"10.0.0.0/8","url":"https://intranet.example/"},
                {"device":"desktop","url":"https://desktop.example/"}]"#,
        );
        let at = |ua, lang, query, ip| target(&link, visit(ua, lang, query, ip), &analytics);
        assert_eq!(at(IPHONE, "de", "", "192.0.2.1"), "https://ios.example/");
        assert_eq!(at(ANDROID, "", "", "192.0.2.1"), "https://android.example/");
        assert_eq!(
            at(WINDOWS, "fr, de-AT;q=0.5", "", "192.0.2.1"),
            "https://de.example/"
        );
        assert_eq!(
            at(WINDOWS, "fr, de;q=0", "ref=x&debug", "192.0.2.1"),
            "https://query.example/"
        );
        assert_eq!(
            at(WINDOWS, "", "ref=x", "10.1.2.3"),
            "https://intranet.example/"
        );
        assert_eq!(
            at(WINDOWS, "", "ref=y&debug=1", "::ffff:10.0.0.9"),
            "https://intranet.example/"
        );
        assert_eq!(at(WINDOWS, "", "", "192.0.2.1"), "https://desktop.example/");
        assert_eq!(
            at("curl/8.0", "", "", "192.0.2.1"),
            "https://default.example/"
        );
    }

    #[test]
    fn languages_match_by_primary_tag_and_q_values() {
        assert_eq!(
            accepted_languages("de-DE,de;q=0.9, en;q=0.0 ,*;q=0.1, fr ; q=0.5").collect::<Vec<_>>(),
            ["de-DE", "de", "fr"]
        );
        let (_dir, analytics) = analytics();
        let regional = link(r#"[{"language":"pt-BR","url":"https://br.example/"}]"#);
        let at = |lang| target(&regional, visit(WINDOWS, lang, "", "192.0.2.1"), &analytics);
        assert_eq!(at("pt-br"), "https://br.example/");
        assert_eq!(at("pt"), "https://default.example/");
        assert_eq!(at("pt-PT"), "https://default.example/");
        let primary = link(r#"[{"language":"de","url":"https://de.example/"}]"#);
        let at = |lang| target(&primary, visit(WINDOWS, lang, "", "192.0.2.1"), &analytics);
        assert_eq!(at("DE-ch"), "https://de.example/");
        assert_eq!(at("dew"), "https://default.example/");
    }

    #[test]
    fn a_query_value_is_compared_decoded_and_countries_need_a_database() {
        let (_dir, analytics) = analytics();
        let link = link(
            r#"[{"query":{"q":"a b"},"url":"https://q.example/"},
                {"country":"DE","url":"https://de.example/"}]"#,
        );
        let at = |query| target(&link, visit(WINDOWS, "", query, "192.0.2.1"), &analytics);
        assert_eq!(at("q=a+b"), "https://q.example/");
        assert_eq!(at("q=a%20b"), "https://q.example/");
        assert_eq!(at("q=ab"), "https://default.example/");
    }
}

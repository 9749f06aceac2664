//! Redirect rules: a link may send some visitors elsewhere than its URL (iPhones to the
//! App Store, German speakers to the German page), as Shlink's and Dub's do. A link
//! holds its rules in order; the first whose condition the visit meets gives the
//! target, else the link's URL. What a visit is (its device, languages, country) is
//! read by the service that serves the redirect; here are the rules as stored and as
//! JSON carries them, and what makes one valid.
//!
//! JSON shape, one condition per rule beside its `url`:
//!
//! ```json
//! [{"device": "ios", "url": "https://apps.apple.com/…"},
//!  {"language": "de", "url": "https://example.com/de"},
//!  {"country": "CN", "url": "https://example.cn/"},
//!  {"query": {"ref": "x", "debug": true}, "url": "https://example.com/x"},
//!  {"cidr": "10.0.0.0/8", "url": "https://intranet.example.com/"}]
//! ```

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Most rules on one link: enough for a device, a few languages and countries and a
/// campaign parameter; few enough that a redirect walking them all stays cheap.
pub const MAX_RULES: usize = 16;

/// Most parameters one `query` condition names.
pub const MAX_QUERY_PARAMS: usize = 8;

/// Longest query parameter name or value a condition compares, in characters.
pub const MAX_QUERY_TEXT: usize = 256;

/// One rule: when the visit meets `when`, it is sent to `url`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "RuleFields", into = "RuleFields")]
pub struct RedirectRule {
    /// The condition.
    pub when: Condition,
    /// The target for visits that meet it (normalized as a link's URL is).
    pub url: String,
}

/// What a rule asks of a visit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Condition {
    /// The visitor's device, as the click analytics' User-Agent parser reads it.
    Device(Device),
    /// A language the visitor accepts (Accept-Language, with a q-value above 0): a
    /// primary tag (`de`) matches its regional forms (`de-AT`), a regional tag only
    /// itself. Stored lowercase.
    Language(String),
    /// The visitor's country in the operator's GeoIP database (ISO 3166-1 alpha-2,
    /// stored uppercase); never met without a database.
    Country(String),
    /// Query parameters of the short URL's request, all of which must hold.
    Query(Vec<(String, QueryMatch)>),
    /// The client's address (as the server reads it, behind trusted proxies) is in
    /// this network.
    Cidr(ipnet::IpNet),
}

/// The devices a rule can name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Device {
    /// iPhone, iPad, iPod.
    Ios,
    /// Android phones and tablets.
    Android,
    /// Desktop and laptop browsers.
    Desktop,
}

impl Device {
    /// Its name in JSON.
    pub fn name(self) -> &'static str {
        match self {
            Device::Ios => "ios",
            Device::Android => "android",
            Device::Desktop => "desktop",
        }
    }

    fn from_name(name: &str) -> Option<Device> {
        match name {
            "ios" => Some(Device::Ios),
            "android" => Some(Device::Android),
            "desktop" => Some(Device::Desktop),
            _ => None,
        }
    }
}

/// What a `query` condition asks of one parameter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QueryMatch {
    /// Present, whatever its value (JSON `true`).
    Present,
    /// Present with exactly this value (after percent-decoding).
    Equals(String),
}

/// A parameter's wanted value in JSON: a string (equal to it) or `true` (present).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum QueryValue {
    /// `true`: present; `false` is refused.
    Present(bool),
    /// Equal to this.
    Equals(String),
}

/// A rule as JSON carries it: exactly one condition field beside `url`. The API takes
/// rules in this shape, the export writes them in it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleFields {
    /// `ios`, `android` or `desktop`.
    #[serde(
        default,
        deserialize_with = "not_null",
        skip_serializing_if = "Option::is_none"
    )]
    pub device: Option<String>,
    /// A language tag: `de`, `pt-BR`.
    #[serde(
        default,
        deserialize_with = "not_null",
        skip_serializing_if = "Option::is_none"
    )]
    pub language: Option<String>,
    /// An ISO 3166-1 alpha-2 country code: `CN`.
    #[serde(
        default,
        deserialize_with = "not_null",
        skip_serializing_if = "Option::is_none"
    )]
    pub country: Option<String>,
    /// Parameters that must be present (`true`) or equal to a string.
    #[serde(
        default,
        deserialize_with = "not_null",
        skip_serializing_if = "Option::is_none"
    )]
    pub query: Option<BTreeMap<String, QueryValue>>,
    /// A network: `10.0.0.0/8`, `2001:db8::/32`, or one address.
    #[serde(
        default,
        deserialize_with = "not_null",
        skip_serializing_if = "Option::is_none"
    )]
    pub cidr: Option<String>,
    /// Where a visit that meets the condition goes.
    pub url: String,
}

/// A condition field is absent or a value: `null` is refused, not read as absent (a
/// rule `{"device": null, "language": "de"}` is not the language rule it would
/// otherwise pass for).
fn not_null<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    T::deserialize(d).map(Some)
}

impl TryFrom<RuleFields> for RedirectRule {
    type Error = String;

    /// The rule, its condition checked; its URL is taken as given (the service
    /// normalizes it, [`crate::normalize_url`], before storing).
    fn try_from(fields: RuleFields) -> Result<Self, String> {
        let RuleFields {
            device,
            language,
            country,
            query,
            cidr,
            url,
        } = fields;
        let mut conditions = Vec::new();
        if let Some(device) = device {
            let d = Device::from_name(&device)
                .ok_or_else(|| format!("device must be ios, android or desktop, got {device:?}"))?;
            conditions.push(Condition::Device(d));
        }
        if let Some(language) = language {
            conditions.push(Condition::Language(language_tag(&language)?));
        }
        if let Some(country) = country {
            conditions.push(Condition::Country(country_code(&country)?));
        }
        if let Some(query) = query {
            conditions.push(Condition::Query(query_matches(query)?));
        }
        if let Some(cidr) = cidr {
            conditions.push(Condition::Cidr(network(&cidr)?));
        }
        if conditions.len() != 1 {
            return Err(format!(
                "a rule has exactly one of device, language, country, query, cidr beside url; this one has {}",
                conditions.len()
            ));
        }
        Ok(RedirectRule {
            when: conditions.remove(0),
            url,
        })
    }
}

impl From<RedirectRule> for RuleFields {
    fn from(rule: RedirectRule) -> RuleFields {
        let mut fields = RuleFields {
            url: rule.url,
            ..RuleFields::default()
        };
        match rule.when {
            Condition::Device(d) => fields.device = Some(d.name().into()),
            Condition::Language(l) => fields.language = Some(l),
            Condition::Country(c) => fields.country = Some(c),
            Condition::Query(q) => {
                fields.query = Some(
                    q.into_iter()
                        .map(|(name, m)| {
                            let value = match m {
                                QueryMatch::Present => QueryValue::Present(true),
                                QueryMatch::Equals(v) => QueryValue::Equals(v),
                            };
                            (name, value)
                        })
                        .collect(),
                )
            }
            Condition::Cidr(net) => fields.cidr = Some(net.to_string()),
        }
        fields
    }
}

/// The rules of a link as it is stored: at most [`MAX_RULES`], each URL normalized
/// as a link's own ([`crate::normalize_url`]: http or https, not this service). An
/// error names the rule: `rules[2].url: …`.
pub fn normalize_rules(
    rules: Vec<RedirectRule>,
    own: &[crate::OwnOrigin],
) -> Result<Vec<RedirectRule>, String> {
    if rules.len() > MAX_RULES {
        return Err(format!(
            "rules: at most {MAX_RULES} rules on a link, got {}",
            rules.len()
        ));
    }
    rules
        .into_iter()
        .enumerate()
        .map(|(i, rule)| {
            let url =
                crate::normalize_url(&rule.url, own).map_err(|e| format!("rules[{i}].url: {e}"))?;
            Ok(RedirectRule { url, ..rule })
        })
        .collect()
}

/// A BCP 47 tag as Accept-Language carries it: subtags of 1 to 8 ASCII letters or
/// digits joined by `-`, the first letters only; lowercased.
fn language_tag(tag: &str) -> Result<String, String> {
    let ok = !tag.is_empty()
        && tag.len() <= MAX_LANGUAGE_LEN
        && tag.split('-').enumerate().all(|(i, part)| {
            (1..=8).contains(&part.len())
                && part.bytes().all(|b| {
                    if i == 0 {
                        b.is_ascii_alphabetic()
                    } else {
                        b.is_ascii_alphanumeric()
                    }
                })
        });
    if !ok {
        return Err(format!(
            "language must be a language tag such as de or pt-BR, got {tag:?}"
        ));
    }
    Ok(tag.to_ascii_lowercase())
}

/// Two ASCII letters, uppercased.
fn country_code(code: &str) -> Result<String, String> {
    if code.len() != 2 || !code.bytes().all(|b| b.is_ascii_alphabetic()) {
        return Err(format!(
            "country must be an ISO 3166-1 alpha-2 code such as DE, got {code:?}"
        ));
    }
    Ok(code.to_ascii_uppercase())
}

fn query_matches(query: BTreeMap<String, QueryValue>) -> Result<Vec<(String, QueryMatch)>, String> {
    if query.is_empty() || query.len() > MAX_QUERY_PARAMS {
        return Err(format!(
            "query names 1 to {MAX_QUERY_PARAMS} parameters, got {}",
            query.len()
        ));
    }
    query
        .into_iter()
        .map(|(name, value)| {
            if name.is_empty() || name.chars().count() > MAX_QUERY_TEXT {
                return Err(format!(
                    "query parameter names are 1 to {MAX_QUERY_TEXT} characters, got {name:?}"
                ));
            }
            let wanted = match value {
                QueryValue::Present(true) => QueryMatch::Present,
                QueryValue::Present(false) => {
                    return Err(format!(
                        "query.{name}: true (present) or a string (equal to it), got false"
                    ))
                }
                QueryValue::Equals(v) if v.chars().count() > MAX_QUERY_TEXT => {
                    return Err(format!(
                        "query.{name}: a value is at most {MAX_QUERY_TEXT} characters"
                    ))
                }
                QueryValue::Equals(v) => QueryMatch::Equals(v),
            };
            Ok((name, wanted))
        })
        .collect()
}

/// A network in CIDR notation, or one address (a /32 or /128): exactly the strings
/// [`CIDR_PATTERN`] describes. An IPv6 address is written in hex groups only (an IPv4
/// network is written as IPv4), a prefix length in plain decimal.
fn network(text: &str) -> Result<ipnet::IpNet, String> {
    let bad = || {
        format!("cidr must be a network such as 10.0.0.0/8 or 2001:db8::/32, or one address, got {text:?}")
    };
    let (address, prefix) = match text.split_once('/') {
        Some((a, p)) => (a, Some(p)),
        None => (text, None),
    };
    let ip: std::net::IpAddr = address.parse().map_err(|_| bad())?;
    if ip.is_ipv6() && address.contains('.') {
        return Err(bad());
    }
    let max = if ip.is_ipv4() { 32 } else { 128 };
    let len = match prefix {
        None => max,
        Some(p) => {
            let plain = !p.is_empty()
                && p.bytes().all(|b| b.is_ascii_digit())
                && (p == "0" || !p.starts_with('0'));
            p.parse::<u8>()
                .ok()
                .filter(|&n| plain && n <= max)
                .ok_or_else(bad)?
        }
    };
    ipnet::IpNet::new(ip, len)
        .map(|net| net.trunc())
        .map_err(|_| bad())
}

/// The shape of a `cidr` value, as the API document states it (ECMA-262, read alike by
/// Rust's `regex`): an IPv4 address in dotted decimal with an optional `/0` to `/32`,
/// or an IPv6 address in hex groups (one `::` at most) with an optional `/0` to `/128`.
/// [`RedirectRule`] takes exactly these (a test holds the two together).
pub const CIDR_PATTERN: &str = concat!(
    r"^(",
    r"((25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])[.]){3}(25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])",
    r"(/(3[0-2]|[12]?[0-9]))?",
    r"|(",
    r"([0-9A-Fa-f]{1,4}:){7}[0-9A-Fa-f]{1,4}",
    r"|([0-9A-Fa-f]{1,4}:){1,7}:",
    r"|([0-9A-Fa-f]{1,4}:){1,6}:[0-9A-Fa-f]{1,4}",
    r"|([0-9A-Fa-f]{1,4}:){1,5}(:[0-9A-Fa-f]{1,4}){1,2}",
    r"|([0-9A-Fa-f]{1,4}:){1,4}(:[0-9A-Fa-f]{1,4}){1,3}",
    r"|([0-9A-Fa-f]{1,4}:){1,3}(:[0-9A-Fa-f]{1,4}){1,4}",
    r"|([0-9A-Fa-f]{1,4}:){1,2}(:[0-9A-Fa-f]{1,4}){1,5}",
    r"|[0-9A-Fa-f]{1,4}:(:[0-9A-Fa-f]{1,4}){1,6}",
    r"|:((:[0-9A-Fa-f]{1,4}){1,7}|:)",
    r")(/(12[0-8]|1[01][0-9]|[1-9]?[0-9]))?",
    r")$"
);

/// The shape of a `language` value in the API document.
pub const LANGUAGE_PATTERN: &str = r"^[A-Za-z]{1,8}(-[A-Za-z0-9]{1,8})*$";

/// Longest `language` value, in characters.
pub const MAX_LANGUAGE_LEN: usize = 35;

/// The shape of a `country` value in the API document.
pub const COUNTRY_PATTERN: &str = r"^[A-Za-z]{2}$";

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(json: &str) -> Result<RedirectRule, String> {
        serde_json::from_str::<RedirectRule>(json).map_err(|e| e.to_string())
    }

    #[test]
    fn the_contract_shapes_read_and_write_back() {
        for json in [
            r#"{"device":"ios","url":"https://a.example/"}"#,
            r#"{"language":"de","url":"https://a.example/de"}"#,
            r#"{"country":"CN","url":"https://a.example/cn"}"#,
            r#"{"query":{"debug":true,"ref":"x"},"url":"https://a.example/x"}"#,
            r#"{"cidr":"10.0.0.0/8","url":"https://a.example/in"}"#,
        ] {
            let read = rule(json).unwrap();
            assert_eq!(serde_json::to_string(&read).unwrap(), json);
        }
    }

    #[test]
    fn values_are_normalized() {
        let r = rule(r#"{"language":"PT-br","url":"u"}"#).unwrap();
        assert_eq!(r.when, Condition::Language("pt-br".into()));
        let r = rule(r#"{"country":"de","url":"u"}"#).unwrap();
        assert_eq!(r.when, Condition::Country("DE".into()));
        let r = rule(r#"{"cidr":"10.1.2.3/8","url":"u"}"#).unwrap();
        assert_eq!(r.when, Condition::Cidr("10.0.0.0/8".parse().unwrap()));
        let r = rule(r#"{"cidr":"192.0.2.7","url":"u"}"#).unwrap();
        assert_eq!(r.when, Condition::Cidr("192.0.2.7/32".parse().unwrap()));
        let r = rule(r#"{"cidr":"2001:DB8::1/32","url":"u"}"#).unwrap();
        assert_eq!(r.when, Condition::Cidr("2001:db8::/32".parse().unwrap()));
    }

    #[test]
    fn bad_rules_are_refused_naming_the_field() {
        for (json, names) in [
            (r#"{"device":"tv","url":"u"}"#, "device"),
            (r#"{"language":"de_DE","url":"u"}"#, "language"),
            (r#"{"language":"","url":"u"}"#, "language"),
            (r#"{"country":"DEU","url":"u"}"#, "country"),
            (r#"{"query":{},"url":"u"}"#, "query"),
            (r#"{"query":{"a":false},"url":"u"}"#, "query.a"),
            (r#"{"cidr":"10.0.0.0/33","url":"u"}"#, "cidr"),
            (r#"{"url":"u"}"#, "exactly one"),
            (
                r#"{"device":"ios","country":"DE","url":"u"}"#,
                "exactly one",
            ),
            (r#"{"device":"iOS","url":"u"}"#, "device"),
            (r#"{"language":" de","url":"u"}"#, "language"),
            (r#"{"cidr":"10.0.0.0/08","url":"u"}"#, "cidr"),
            (r#"{"cidr":"::ffff:10.0.0.1","url":"u"}"#, "cidr"),
            (r#"{"cidr":" 10.0.0.0/8","url":"u"}"#, "cidr"),
            (r#"{"device":null,"language":"de","url":"u"}"#, "null"),
            (r#"{"device":"ios"}"#, "url"),
            (r#"{"agent":"x","url":"u"}"#, "agent"),
        ] {
            let err = rule(json).unwrap_err();
            assert!(err.contains(names), "{json}: {err}");
        }
    }

    /// What [`CIDR_PATTERN`] says and what the server takes are the same strings: tried
    /// on strings made of the characters addresses are made of, in the shapes they take.
    #[test]
    fn the_cidr_pattern_is_the_check() {
        use proptest::prelude::*;
        let pattern = regex::Regex::new(CIDR_PATTERN).unwrap();
        let agree = |text: &str| {
            let checked = network(text).is_ok();
            assert_eq!(pattern.is_match(text), checked, "{text:?}");
        };
        for text in [
            "10.0.0.0/8",
            "0.0.0.0/0",
            "255.255.255.255",
            "1.2.3.4/32",
            "1.2.3.4/33",
            "01.2.3.4",
            "1.2.3",
            "::",
            "::/0",
            "::1",
            "1::",
            "1:2:3:4:5:6:7:8",
            "1:2:3:4:5:6:7::",
            "::2:3:4:5:6:7:8",
            "1:2:3:4:5:6:7:8:9",
            "1::2::3",
            "12345::",
            "fe80::1/64",
            "2001:db8::/128",
            "2001:db8::/129",
            "::ffff:1.2.3.4",
            "1.2.3.4/",
            "/8",
            "",
        ] {
            agree(text);
        }
        let v4 = "([0-9]{1,3}[.]){2,4}[0-9]{1,3}(/[0-9]{1,3})?";
        let v6 = "[0-9a-fA-F:]{0,45}(/[0-9]{1,4})?";
        proptest!(ProptestConfig::with_cases(4000), |(text in v4)| agree(&text));
        proptest!(ProptestConfig::with_cases(4000), |(text in v6)| agree(&text));
        proptest!(ProptestConfig::with_cases(4000), |(text in "(:|[0-9a-f]{1,5}:{1,2}){1,9}[0-9a-f]{0,4}")| agree(&text));
    }
}

//! The stored link and the small value types around it.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::borrow::Cow;
use std::time::{Duration, UNIX_EPOCH};

/// Most tags on one link.
pub const MAX_TAGS: usize = 16;

/// The HTTP status a link redirects with: a per-link choice, since 301/308 are
/// cached by browsers forever (no later clicks are seen) and 307/308 keep the method.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Redirect {
    /// 301 Moved Permanently.
    Permanent,
    /// 302 Found: the default, every click reaches the server.
    #[default]
    Found,
    /// 307 Temporary Redirect (method and body kept).
    Temporary,
    /// 308 Permanent Redirect (method and body kept).
    PermanentKeepMethod,
}

impl Redirect {
    /// The status code.
    pub fn status(self) -> u16 {
        match self {
            Redirect::Permanent => 301,
            Redirect::Found => 302,
            Redirect::Temporary => 307,
            Redirect::PermanentKeepMethod => 308,
        }
    }

    /// From a status code; `None` for anything but 301, 302, 307, 308.
    pub fn from_status(status: u16) -> Option<Self> {
        match status {
            301 => Some(Redirect::Permanent),
            302 => Some(Redirect::Found),
            307 => Some(Redirect::Temporary),
            308 => Some(Redirect::PermanentKeepMethod),
            _ => None,
        }
    }
}

impl Serialize for Redirect {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u16(self.status())
    }
}

impl<'de> Deserialize<'de> for Redirect {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let status = u16::deserialize(d)?;
        Redirect::from_status(status).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "redirect must be 301, 302, 307 or 308, got {status}"
            ))
        })
    }
}

/// A short link as stored. JSON: the id as a decimal string (JavaScript loses
/// precision past 2^53), times as RFC 3339.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Link {
    /// From the shardkit-ids generator, in the shard of the code's group.
    #[serde(with = "id_string")]
    pub id: u64,
    /// The normalized long URL.
    pub url: String,
    /// The generated code (always present, even with an alias).
    pub code: String,
    /// The custom alias, if one was asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alias: Option<String>,
    /// The domain it is reached at, one of `[links] domains`; `None`: the default
    /// domain (the first), so links made before domains were configured need no change
    /// (Shlink keeps its default domain's links the same way).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub domain: Option<String>,
    /// A name for people (at most [`MAX_TITLE_LEN`] characters): what the dashboard and
    /// the shorteners links are imported from show beside the URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Creation time, ms since the Unix epoch.
    #[serde(with = "time_string")]
    pub created_at: u64,
    /// After this instant (ms since the Unix epoch) the link answers 410.
    #[serde(
        default,
        with = "opt_time_string",
        skip_serializing_if = "Option::is_none"
    )]
    pub expires_at: Option<u64>,
    /// After this many clicks the link answers 410.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_visits: Option<u64>,
    /// Status of the redirect.
    #[serde(default)]
    pub redirect: Redirect,
    /// Free labels for listing (`GET /api/links?tag=`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// Argon2id hash (PHC string) of the password a visitor must give before the
    /// redirect; `None`: no password. Stored, never shown by the API.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password_hash: Option<String>,
    /// Name of the API key that created the link (`None`: made without a named key).
    /// An "author only" key sees only the links it made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub author: Option<String>,
    /// Where some visitors go instead of `url`, first match wins.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rules: Vec<crate::rules::RedirectRule>,
}

impl Link {
    /// Whether `"reuse": true` may hand this link out for its URL: a plain link (no
    /// alias, redirect rules, expiry, visit limit or password), whoever made it.
    pub fn reusable(&self) -> bool {
        self.alias.is_none()
            && self.rules.is_empty()
            && self.expires_at.is_none()
            && self.max_visits.is_none()
            && self.password_hash.is_none()
    }

    /// The path segment that reaches it: the alias if any, else the code.
    pub fn path(&self) -> &str {
        self.alias.as_deref().unwrap_or(&self.code)
    }

    /// The key its alias is stored under (see [`alias_key`]), if it has one.
    pub fn alias_key(&self) -> Option<Cow<'_, str>> {
        let alias = self.alias.as_deref()?;
        Some(alias_key(self.domain.as_deref(), alias))
    }

    /// The key a store resolves it by at its domain: its alias key, else its code
    /// (codes are unique across domains).
    pub fn path_key(&self) -> Cow<'_, str> {
        self.alias_key().unwrap_or(Cow::Borrowed(&self.code))
    }

    /// Whether it is past `expires_at` at `now_ms`.
    pub fn expired_at(&self, now_ms: u64) -> bool {
        self.expires_at.is_some_and(|t| now_ms >= t)
    }
}

/// The key an alias is stored and resolved under: the alias itself on the default
/// domain (`domain` `None`), else `domain/alias`. Aliases are unique per domain, and a
/// `/` is in no alias nor in a host name, so no key of one domain is another's, and no
/// request path (one segment) reaches another domain's alias.
pub fn alias_key<'a>(domain: Option<&str>, alias: &'a str) -> Cow<'a, str> {
    match domain {
        None => Cow::Borrowed(alias),
        Some(domain) => Cow::Owned(format!("{domain}/{alias}")),
    }
}

/// Longest title, in characters.
pub const MAX_TITLE_LEN: usize = 512;

/// Checks a title: 1 to [`MAX_TITLE_LEN`] characters, no control characters.
pub fn validate_title(title: &str) -> Result<(), String> {
    let len = title.chars().count();
    if !(1..=MAX_TITLE_LEN).contains(&len) {
        return Err(format!(
            "title must be 1 to {MAX_TITLE_LEN} characters, got {len}"
        ));
    }
    if title.chars().any(char::is_control) {
        return Err("title must not hold control characters (line breaks, tabs)".into());
    }
    Ok(())
}

/// Checks tags: at most [`MAX_TAGS`], each 1 to 64 characters of `A-Z a-z 0-9 _ - . :`.
pub fn validate_tags(tags: &[String]) -> Result<(), String> {
    if tags.len() > MAX_TAGS {
        return Err(format!(
            "at most {MAX_TAGS} tags per link, got {}",
            tags.len()
        ));
    }
    for tag in tags {
        let ok = (1..=64).contains(&tag.len())
            && tag
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"_-.:".contains(&b));
        if !ok {
            return Err(format!(
                "tag {tag:?} is invalid: use 1 to 64 characters of A-Z a-z 0-9 _ - . :"
            ));
        }
    }
    Ok(())
}

/// Milliseconds since the Unix epoch, now (one copy, in `shardkit-ids`).
pub use shardkit_ids::now_ms;

/// The UTC day number (days since 1970-01-01) of an instant: the per-day click key.
pub fn day_of(ms: u64) -> u64 {
    ms / 86_400_000
}

/// `YYYY-MM-DD` of a day number.
pub fn format_day(day: u64) -> String {
    let mut text = format_time(day * 86_400_000);
    text.truncate(10);
    text
}

/// The day number of `YYYY-MM-DD` (what [`format_day`] writes).
pub fn parse_day(text: &str) -> Result<u64, String> {
    let bad = || format!("{text:?} is not a day like 2026-11-23");
    if text.len() != 10 {
        return Err(bad());
    }
    let ms = parse_time(&format!("{text}T00:00:00Z")).map_err(|_| bad())?;
    Ok(day_of(ms))
}

/// RFC 3339 (UTC, seconds) of an instant in ms.
pub fn format_time(ms: u64) -> String {
    humantime::format_rfc3339_seconds(UNIX_EPOCH + Duration::from_millis(ms)).to_string()
}

/// Parses RFC 3339 (`2026-12-31T23:59:59Z`, fractions allowed) into ms since the epoch.
/// Anything after the seconds but a fraction and a final `Z` is refused (the parser
/// alone lets trailing text through).
pub fn parse_time(text: &str) -> Result<u64, String> {
    let trimmed = text.trim();
    let bad = |why: &dyn std::fmt::Display| {
        format!("{text:?} is not an RFC 3339 time like 2026-12-31T23:59:59Z: {why}")
    };
    let tail = trimmed.get(19..).unwrap_or("");
    let fraction = tail
        .strip_prefix('.')
        .map_or("", |f| f.trim_end_matches(['Z', 'z']));
    let expected_tail_len = if tail.starts_with('.') {
        1 + fraction.len()
    } else {
        0
    };
    if !fraction.bytes().all(|b| b.is_ascii_digit())
        || !matches!(&tail[expected_tail_len..], "" | "Z" | "z")
    {
        return Err(bad(&"unexpected text after the seconds"));
    }
    let t = humantime::parse_rfc3339_weak(trimmed).map_err(|e| bad(&e))?;
    Ok(t.duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0))
}

mod id_string {
    use serde::{Deserialize, Deserializer, Serializer};
    pub fn serialize<S: Serializer>(id: &u64, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(id)
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
        let text = String::deserialize(d)?;
        text.parse()
            .map_err(|_| serde::de::Error::custom(format!("id {text:?} is not a decimal number")))
    }
}

mod time_string {
    use serde::{Deserialize, Deserializer, Serializer};
    pub fn serialize<S: Serializer>(ms: &u64, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&super::format_time_ms(*ms))
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
        super::parse_time(&String::deserialize(d)?).map_err(serde::de::Error::custom)
    }
}

mod opt_time_string {
    use serde::{Deserialize, Deserializer, Serializer};
    pub fn serialize<S: Serializer>(ms: &Option<u64>, s: S) -> Result<S::Ok, S::Error> {
        match ms {
            Some(ms) => s.serialize_str(&super::format_time_ms(*ms)),
            None => s.serialize_none(),
        }
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
        Option::<String>::deserialize(d)?
            .map(|t| super::parse_time(&t).map_err(serde::de::Error::custom))
            .transpose()
    }
}

/// RFC 3339 with milliseconds, so a stored time reads back exactly.
fn format_time_ms(ms: u64) -> String {
    humantime::format_rfc3339_millis(UNIX_EPOCH + Duration::from_millis(ms)).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_round_trip_with_string_id_and_rfc3339_times() {
        let link = Link {
            id: u64::MAX / 3,
            url: "https://example.com/".into(),
            code: "a000001".into(),
            alias: Some("x".into()),
            domain: None,
            title: None,
            created_at: 1_790_000_000_123,
            expires_at: Some(1_800_000_000_000),
            max_visits: Some(3),
            redirect: Redirect::PermanentKeepMethod,
            tags: vec!["t".into()],
            password_hash: Some("$argon2id$v=19$m=19456,t=2,p=1$c2FsdA$aGFzaA".into()),
            author: Some("writer".into()),
            rules: vec![crate::RedirectRule {
                when: crate::Condition::Language("de".into()),
                url: "https://example.com/de".into(),
            }],
        };
        let json = serde_json::to_value(&link).unwrap();
        assert_eq!(json["id"], serde_json::json!((u64::MAX / 3).to_string()));
        assert_eq!(json["redirect"], 308);
        assert_eq!(json["rules"][0]["language"], "de");
        assert!(json["created_at"].as_str().unwrap().ends_with(".123Z"));
        let back: Link = serde_json::from_value(json).unwrap();
        assert_eq!(back, link);
        assert_eq!(format_day(day_of(86_400_000 * 365)), "1971-01-01");
        assert!(parse_time("tomorrow").is_err());
        assert!(parse_time("6313-11-28T20:20:18Z*").is_err());
        assert!(parse_time("2100-01-01T00:00:00Zjunk").is_err());
        assert!(parse_time("2100-01-01T00:00:00.5x").is_err());
        assert!(parse_time("2100-01-01T00:00:00.25Z").is_ok());
        assert!(parse_time("2100-01-01T00:00:00Z").is_ok());
        assert!(parse_time("2100-01-01T00:00:00").is_ok());
        assert!(validate_tags(&["ok".into()]).is_ok());
        assert!(validate_tags(&["not ok".into()]).is_err());
    }
}

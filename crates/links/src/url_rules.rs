//! Long-URL rules: what may be shortened, and the one normalized spelling that the
//! reuse index and the group hash see, so `HTTP://Example.COM:80` and
//! `http://example.com/` are one URL.

use crate::error::UrlError;

/// Longest accepted long URL, in bytes (8 KiB).
pub const MAX_URL_LEN: usize = 8 * 1024;

/// The service's own origin (host and port): a long URL pointing there is refused,
/// since a short link to a short link can loop.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnOrigin {
    host: String,
    port: Option<u16>,
}

impl OwnOrigin {
    /// From the short-link base URL, e.g. `https://sho.rt` or `http://127.0.0.1:8080`.
    pub fn from_base_url(base: &str) -> Result<Self, UrlError> {
        let parsed = url::Url::parse(base).map_err(|e| UrlError::Unparsable(e.to_string()))?;
        let host = parsed
            .host_str()
            .ok_or(UrlError::NoHost)?
            .to_ascii_lowercase();
        Ok(Self {
            host,
            port: parsed.port_or_known_default(),
        })
    }

    fn matches(&self, url: &url::Url) -> bool {
        url.host_str()
            .is_some_and(|h| h.eq_ignore_ascii_case(&self.host))
            && url.port_or_known_default() == self.port
    }
}

/// The shape of an accepted long URL, as the API document states it (JSON Schema
/// `pattern`, read alike by ECMA-262, Python and Rust): optional ASCII whitespace
/// around an `http` or `https` URL (any case) whose host is a DNS name of ASCII
/// letters, digits, `-` and `_` (punycode for international names) whose last label
/// starts with a letter, or an IPv4 address in dotted decimal; an optional port up to
/// 65535; then a path, query or fragment without spaces or control characters. No
/// user name or password, no IPv6 literal. [`normalize_url`] enforces exactly this
/// (by hand, in [`has_url_shape`]), so the document neither promises more than the
/// server takes nor refuses what it takes.
pub const URL_PATTERN: &str = concat!(
    r"^[\t\n\f\r ]*[Hh][Tt][Tt][Pp][Ss]?://",
    r"(((25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])[.]){3}(25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])",
    r"|([A-Za-z0-9_-]+[.])*[A-Za-z][A-Za-z0-9_-]*[.]?)",
    r"(:([0-9]{1,4}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5]))?",
    r"([/?#][^\x00-\x20]*)?[\t\n\f\r ]*$"
);

/// Longest accepted long URL as sent, in characters (JSON Schema's `maxLength`):
/// one less than [`MAX_URL_LEN`], since normalizing may add a `/` (an empty path).
pub const MAX_URL_CHARS: usize = MAX_URL_LEN - 1;

/// The whitespace [`URL_PATTERN`] allows around a URL (and [`normalize_url`] drops).
fn is_url_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\x0c' | '\r')
}

/// Whether `url` (already without surrounding whitespace) matches [`URL_PATTERN`].
pub fn has_url_shape(url: &str) -> bool {
    let Some((scheme, rest)) = url.split_once("://") else {
        return false;
    };
    if !scheme.eq_ignore_ascii_case("http") && !scheme.eq_ignore_ascii_case("https") {
        return false;
    }
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    if tail.chars().any(|c| c <= ' ') {
        return false;
    }
    let (host, port) = match authority.split_once(':') {
        Some((host, port)) => (host, Some(port)),
        None => (authority, None),
    };
    let port_ok = port.is_none_or(|p| {
        p.bytes().all(|b| b.is_ascii_digit())
            && match p.len() {
                1..=4 => true,
                5 => !p.starts_with('0') && p.parse::<u32>().is_ok_and(|n| n <= 65_535),
                _ => false,
            }
    });
    port_ok && (is_dotted_ipv4(host) || is_dns_name(host))
}

/// Four decimal octets 0 to 255, without leading zeros (the URL standard reads `010`
/// as octal).
fn is_dotted_ipv4(host: &str) -> bool {
    let octets: Vec<&str> = host.split('.').collect();
    octets.len() == 4
        && octets.iter().all(|o| {
            !o.is_empty()
                && o.len() <= 3
                && o.bytes().all(|b| b.is_ascii_digit())
                && (o.len() == 1 || !o.starts_with('0'))
                && o.parse::<u16>().is_ok_and(|n| n <= 255)
        })
}

/// Labels of ASCII letters, digits, `-` and `_`, the last one starting with a letter
/// (the URL standard reads an all-digit last label as an IPv4 address), one trailing
/// dot allowed.
fn is_dns_name(host: &str) -> bool {
    let host = host.strip_suffix('.').unwrap_or(host);
    let labels: Vec<&str> = host.split('.').collect();
    labels.iter().all(|l| {
        !l.is_empty()
            && l.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    }) && labels
        .last()
        .is_some_and(|l| l.starts_with(|c: char| c.is_ascii_alphabetic()))
}

/// Validates a long URL and returns its normalized form: scheme and host in lower
/// case, default port dropped, empty path as `/`, percent-encoding made canonical.
/// Only `http` and `https` URLs of [`URL_PATTERN`]'s shape, at most [`MAX_URL_CHARS`]
/// characters as sent and [`MAX_URL_LEN`] bytes normalized, and not one of `own`
/// origins.
pub fn normalize_url(input: &str, own: &[OwnOrigin]) -> Result<String, UrlError> {
    let chars = input.chars().count();
    if chars > MAX_URL_CHARS {
        return Err(UrlError::TooLong {
            len: chars,
            max: MAX_URL_CHARS,
        });
    }
    let trimmed = input.trim_matches(is_url_space);
    if trimmed.is_empty() {
        return Err(UrlError::Empty);
    }
    let parsed = url::Url::parse(trimmed).map_err(|e| UrlError::Unparsable(e.to_string()))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(UrlError::Scheme(parsed.scheme().to_string()));
    }
    match parsed.host_str() {
        None | Some("") => return Err(UrlError::NoHost),
        Some(_) => {}
    }
    if !has_url_shape(trimmed) {
        return Err(UrlError::Shape);
    }
    if let Some(origin) = own.iter().find(|o| o.matches(&parsed)) {
        return Err(UrlError::OwnDomain(origin.host.clone()));
    }
    let normalized = parsed.to_string();
    if normalized.len() > MAX_URL_LEN {
        return Err(UrlError::TooLong {
            len: normalized.len(),
            max: MAX_URL_LEN,
        });
    }
    Ok(normalized)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalizes_and_refuses() {
        assert_eq!(
            normalize_url(" HTTP://Example.COM:80", &[]).unwrap(),
            "http://example.com/"
        );
        assert_eq!(
            normalize_url("https://example.com:443/a?b=1#c", &[]).unwrap(),
            "https://example.com/a?b=1#c"
        );
        assert_eq!(normalize_url("", &[]), Err(UrlError::Empty));
        assert!(matches!(
            normalize_url("example.com", &[]),
            Err(UrlError::Unparsable(_))
        ));
        assert_eq!(
            normalize_url("ftp://example.com/", &[]),
            Err(UrlError::Scheme("ftp".into()))
        );
        assert_eq!(
            normalize_url("javascript:alert(1)", &[]),
            Err(UrlError::Scheme("javascript".into()))
        );
        assert!(matches!(
            normalize_url("http:///x", &[]),
            Err(UrlError::Unparsable(_) | UrlError::NoHost | UrlError::Shape)
        ));
        let long = format!("https://example.com/{}", "a".repeat(MAX_URL_LEN));
        assert!(matches!(
            normalize_url(&long, &[]),
            Err(UrlError::TooLong { .. })
        ));
        let own = [OwnOrigin::from_base_url("http://127.0.0.1:8080").unwrap()];
        assert!(matches!(
            normalize_url("http://127.0.0.1:8080/abc", &own),
            Err(UrlError::OwnDomain(_))
        ));
        assert!(normalize_url("http://127.0.0.1:9090/abc", &own).is_ok());
    }

    #[test]
    fn the_shape_is_the_documented_pattern() {
        for good in [
            "http://a",
            "HTTPS://Example.COM:443/a?b=1#c",
            "https://my-site.example_1.com./x",
            "http://xn--bcher-kva.de/",
            "http://127.0.0.1:65535/a",
            "http://255.0.10.1",
            "http://1.2.3.4.com:0",
            "http://a.b?x",
            "http://a.b#",
            "http://a.b/%zz\u{e9}\u{7f}*",
            "http://a-:8080",
        ] {
            assert!(has_url_shape(good), "{good}");
            assert!(normalize_url(good, &[]).is_ok(), "{good}");
        }
        for bad in [
            "http://a.b*",
            "http://a.b:65536",
            "http://a.b:09999",
            "http://a.b:",
            "http://a.b/x y",
            "http://a.b/\tx",
            "http://user:pw@a.b/",
            "http://[::1]/",
            "http://1.2.3.4.5",
            "http://1.2.3",
            "http://010.0.0.1",
            "http://256.0.0.1",
            "http://a.1b",
            "http://a..b",
            "http://b\u{fc}cher.de",
            "http:/a.b",
            "http://a.b\\x",
            "http://%41.com",
        ] {
            assert!(!has_url_shape(bad), "{bad}");
            assert!(normalize_url(bad, &[]).is_err(), "{bad}");
        }
        assert_eq!(
            normalize_url("\t http://a.b/c \r\n", &[]).unwrap(),
            "http://a.b/c"
        );
        let at_limit = format!("http://a.b/{}", "x".repeat(MAX_URL_CHARS - 11));
        assert!(normalize_url(&at_limit, &[]).is_ok());
        assert!(matches!(
            normalize_url(&format!("{at_limit}x"), &[]),
            Err(UrlError::TooLong { .. })
        ));
    }
}

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

/// Validates a long URL and returns its normalized form: scheme and host in lower
/// case, default port dropped, empty path as `/`, percent-encoding made canonical.
/// Only `http` and `https` with a host, at most [`MAX_URL_LEN`] bytes, and not one of
/// `own` origins.
pub fn normalize_url(input: &str, own: &[OwnOrigin]) -> Result<String, UrlError> {
    let trimmed = input.trim();
    if trimmed.is_empty() {
        return Err(UrlError::Empty);
    }
    if trimmed.len() > MAX_URL_LEN {
        return Err(UrlError::TooLong {
            len: trimmed.len(),
            max: MAX_URL_LEN,
        });
    }
    let parsed = url::Url::parse(trimmed).map_err(|e| UrlError::Unparsable(e.to_string()))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(UrlError::Scheme(parsed.scheme().to_string()));
    }
    match parsed.host_str() {
        None | Some("") => return Err(UrlError::NoHost),
        Some(_) => {}
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
            Err(UrlError::Unparsable(_) | UrlError::NoHost) | Ok(_)
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
}

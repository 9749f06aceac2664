//! What one click says about its visitor, read from the request's headers and
//! address: the referrer's host (or `direct`), the browser family, the OS, the device
//! type, the country (with a GeoIP database), and whether it is a bot. Nothing here
//! is stored; only these labels reach the counters.

use super::geo::GeoIp;
use std::net::IpAddr;

/// The analytics dimensions, each with the one-letter tag it has in row keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Dim {
    /// The referrer's host, or `direct`.
    Referrer,
    /// The browser family (`Chrome`, `Firefox`, …).
    Browser,
    /// The operating system or platform (`Windows 10`, `Android`, …).
    Os,
    /// The device type (`desktop`, `phone`, `appliance`, `other`, `unknown`).
    Device,
    /// The ISO 3166-1 country code, or `unknown`; only with a GeoIP database.
    Country,
}

impl Dim {
    /// Every dimension, in the order the page shows them.
    pub const ALL: [Dim; 5] = [
        Dim::Referrer,
        Dim::Browser,
        Dim::Os,
        Dim::Device,
        Dim::Country,
    ];

    /// The tag in row keys.
    pub fn tag(self) -> char {
        match self {
            Dim::Referrer => 'r',
            Dim::Browser => 'b',
            Dim::Os => 'o',
            Dim::Device => 'd',
            Dim::Country => 'c',
        }
    }

    /// The dimension of a row-key tag.
    pub fn from_tag(tag: char) -> Option<Dim> {
        Dim::ALL.into_iter().find(|d| d.tag() == tag)
    }

    /// The name in the API (`by=`).
    pub fn name(self) -> &'static str {
        match self {
            Dim::Referrer => "referrer",
            Dim::Browser => "browser",
            Dim::Os => "os",
            Dim::Device => "device",
            Dim::Country => "country",
        }
    }

    /// The dimension named `name` in the API.
    pub fn from_name(name: &str) -> Option<Dim> {
        Dim::ALL.into_iter().find(|d| d.name() == name)
    }
}

/// Longest label kept, in characters (a host name is at most 253).
pub const MAX_LABEL: usize = 253;

/// What the User-Agent says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Agent {
    /// A crawler, feed reader or other robot.
    pub bot: bool,
    /// Browser family.
    pub browser: String,
    /// OS or platform.
    pub os: String,
    /// Device type.
    pub device: String,
}

/// Reads a User-Agent with woothee (absent or unknown: `unknown`).
pub fn agent(user_agent: Option<&str>) -> Agent {
    let unknown = || "unknown".to_string();
    let Some(result) = user_agent.and_then(|ua| woothee::parser::Parser::new().parse(ua)) else {
        return Agent {
            bot: false,
            browser: unknown(),
            os: unknown(),
            device: unknown(),
        };
    };
    let known = |s: &str| {
        if s.is_empty() || s == woothee::woothee::VALUE_UNKNOWN {
            unknown()
        } else {
            label(s)
        }
    };
    let device = match result.category {
        "pc" => "desktop".to_string(),
        "smartphone" | "mobilephone" => "phone".to_string(),
        "appliance" => "appliance".to_string(),
        "crawler" => "bot".to_string(),
        "misc" => "other".to_string(),
        _ => unknown(),
    };
    Agent {
        bot: result.category == "crawler",
        browser: known(result.name),
        os: known(result.os),
        device,
    }
}

/// The referrer's host, lowercased, or `direct` when there is none (or it is not a URL
/// with a host).
pub fn referrer(header: Option<&str>) -> String {
    header
        .and_then(|r| url::Url::parse(r.trim()).ok())
        .and_then(|u| u.host_str().map(|h| label(&h.to_ascii_lowercase())))
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "direct".to_string())
}

/// The country of `ip` as the database has it: its ISO code, or `unknown`; `None`
/// without a database.
pub fn country(geo: Option<&GeoIp>, ip: IpAddr) -> Option<String> {
    geo.map(|g| {
        g.country(ip)
            .map(|c| label(&c))
            .unwrap_or_else(|| "unknown".into())
    })
}

/// A label as stored: control characters dropped, at most [`MAX_LABEL`] characters.
pub fn label(text: &str) -> String {
    text.chars()
        .filter(|c| !c.is_control())
        .take(MAX_LABEL)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const CHROME_WINDOWS: &str = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36";
    const SAFARI_IPHONE: &str = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.1 Mobile/15E148 Safari/604.1";
    const GOOGLEBOT: &str =
        "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)";

    #[test]
    fn desktop_phone_and_bot_are_told_apart() {
        let desktop = agent(Some(CHROME_WINDOWS));
        assert_eq!(
            (
                desktop.bot,
                desktop.browser.as_str(),
                desktop.device.as_str()
            ),
            (false, "Chrome", "desktop")
        );
        assert!(desktop.os.starts_with("Windows"), "{desktop:?}");
        let phone = agent(Some(SAFARI_IPHONE));
        assert_eq!(
            (
                phone.bot,
                phone.browser.as_str(),
                phone.os.as_str(),
                phone.device.as_str()
            ),
            (false, "Safari", "iPhone", "phone")
        );
        assert!(agent(Some(GOOGLEBOT)).bot);
        assert_eq!(agent(None).browser, "unknown");
    }

    #[test]
    fn referrer_is_the_host_or_direct() {
        assert_eq!(
            referrer(Some("https://News.Example.com/a?b")),
            "news.example.com"
        );
        assert_eq!(referrer(None), "direct");
        assert_eq!(referrer(Some("not a url")), "direct");
        assert_eq!(label("a\u{7}b"), "ab");
    }
}

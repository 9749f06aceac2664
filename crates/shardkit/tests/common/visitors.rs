//! Chosen visitors for the click-analytics tests: each clicks from its own loopback
//! address (mapped to a country by a test GeoIP database) with its own User-Agent and
//! referrer, so the tests know exactly what the stats and the page must show.

use super::Server;
use reqwest::blocking::Client;
use std::net::{IpAddr, Ipv4Addr};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Desktop Chrome on Windows.
pub const CHROME_WINDOWS: &str = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36";
/// Safari on an iPhone.
pub const SAFARI_IPHONE: &str = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.1 Mobile/15E148 Safari/604.1";
/// Desktop Firefox on Linux.
pub const FIREFOX_LINUX: &str =
    "Mozilla/5.0 (X11; Linux x86_64; rv:120.0) Gecko/20100101 Firefox/120.0";
/// Google's crawler.
pub const GOOGLEBOT: &str =
    "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)";

/// A visitor: where it clicks from, with what, coming from where.
#[derive(Debug, Clone, Copy)]
pub struct Visitor {
    /// Loopback address the client binds.
    pub ip: Ipv4Addr,
    /// User-Agent.
    pub agent: &'static str,
    /// Referer, if any.
    pub referrer: Option<&'static str>,
}

/// 127.0.0.2 is in Germany, 127.0.0.3 in Japan; 127.0.0.1 is in no country.
pub const GERMANY: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 2);
/// See [`GERMANY`].
pub const JAPAN: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 3);

/// A desktop in Germany from a news site.
pub const DESKTOP_DE: Visitor = Visitor {
    ip: GERMANY,
    agent: CHROME_WINDOWS,
    referrer: Some("https://news.example.com/today?x=1"),
};
/// A phone in Japan with no referrer.
pub const PHONE_JP: Visitor = Visitor {
    ip: JAPAN,
    agent: SAFARI_IPHONE,
    referrer: None,
};
/// Firefox from an address the database does not know, from a blog.
pub const FIREFOX_NOWHERE: Visitor = Visitor {
    ip: Ipv4Addr::LOCALHOST,
    agent: FIREFOX_LINUX,
    referrer: Some("https://blog.example.org/post"),
};
/// A crawler.
pub const BOT: Visitor = Visitor {
    ip: Ipv4Addr::LOCALHOST,
    agent: GOOGLEBOT,
    referrer: None,
};

/// Writes the test GeoIP database and a config naming it (clicks flushed every
/// `flush_ms`) into `dir`; answers the config's path.
pub fn geo_config(dir: &Path, flush_ms: u64) -> PathBuf {
    let db = dir.join("countries.mmdb");
    std::fs::write(
        &db,
        super::mmdb::country_db(&[(GERMANY, "DE"), (JAPAN, "JP")]),
    )
    .unwrap();
    let config = dir.join("shardkit.toml");
    std::fs::write(
        &config,
        format!(
            "[links]\ngeoip_db = {:?}\nclick_flush_ms = {flush_ms}\n",
            db.display().to_string()
        ),
    )
    .unwrap();
    config
}

/// `times` clicks on `/{code}` by `visitor`; each must redirect.
pub fn click(server: &Server, code: &str, visitor: Visitor, times: usize) {
    let client = Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .local_address(IpAddr::V4(visitor.ip))
        .user_agent(visitor.agent)
        .build()
        .unwrap();
    for _ in 0..times {
        let mut request = client.get(server.url(&format!("/{code}")));
        if let Some(referrer) = visitor.referrer {
            request = request.header("Referer", referrer);
        }
        assert_eq!(request.send().unwrap().status().as_u16(), 302);
    }
}

/// `GET /api/links/{code}/stats?by=day` until it counts `people` and `bots` (the
/// flusher writes them within `click_flush_ms`); panics after 20 s.
pub fn wait_for_stats(server: &Server, code: &str, people: u64, bots: u64) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let stats: serde_json::Value =
            reqwest::blocking::get(server.url(&format!("/api/links/{code}/stats?by=day")))
                .unwrap()
                .json()
                .unwrap();
        if stats["clicks"] == people && stats["bots"] == bots {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "stats never reached {people} people and {bots} bots: {stats}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

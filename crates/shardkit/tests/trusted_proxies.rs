//! Behind a proxy, against the real binary: with `[http] trusted_proxies`, requests
//! from the proxy count as coming from the client the proxy names (`X-Forwarded-For`,
//! `Forwarded`), for every per-client decision: the creation rate limit, the password
//! attempts, the key-check throttle, a click's country. The same headers from any other
//! peer are ignored, and without the setting they are ignored from everyone.
//!
//! Loopback stands in for the hosts: the proxy binds 127.0.0.9, a direct client
//! 127.0.0.5; the test GeoIP database puts 127.0.0.2 in Germany and 127.0.0.3 in Japan.

mod common;

use common::visitors::{GERMANY, JAPAN};
use common::Server;
use reqwest::blocking::{Client, RequestBuilder};
use serde_json::{json, Value};
use std::net::{IpAddr, Ipv4Addr};
use std::path::Path;
use std::time::{Duration, Instant};

const ADMIN: &str = "admin-key-0123456789abcdef";
const PROXY: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 9);
const DIRECT: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 5);

fn client_from(ip: Ipv4Addr) -> Client {
    Client::builder()
        .local_address(IpAddr::V4(ip))
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

/// A server whose creation limit is one link at a time per client, with the test
/// GeoIP database, trusting `trusted` (a TOML array) as proxies.
fn server(dir: &Path, trusted: &str) -> Server {
    let db = dir.join("countries.mmdb");
    std::fs::write(
        &db,
        common::mmdb::country_db(&[(GERMANY, "DE"), (JAPAN, "JP")]),
    )
    .unwrap();
    Server::start_with_config(
        dir,
        &format!(
            "api_key = {ADMIN:?}\n[http]\ntrusted_proxies = {trusted}\n\
             [links]\ngeoip_db = {:?}\nclick_flush_ms = 50\ncreate_per_second = 1\ncreate_burst = 1\n",
            db.display().to_string()
        ),
    )
}

/// Creates a link from `from` naming `forwarded` as the client; the status.
fn create(server: &Server, from: Ipv4Addr, forwarded: &str, n: usize) -> u16 {
    client_from(from)
        .post(server.url("/api/links"))
        .bearer_auth(ADMIN)
        .header("X-Forwarded-For", forwarded)
        .json(&json!({ "url": format!("https://example.com/{n}") }))
        .send()
        .unwrap()
        .status()
        .as_u16()
}

fn admin(request: RequestBuilder) -> Value {
    request.bearer_auth(ADMIN).send().unwrap().json().unwrap()
}

/// Each link's clicks by country once the flusher wrote `total` of them (20 s at most).
fn countries(server: &Server, code: &str, total: u64) -> Vec<(String, u64)> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let stats =
            admin(Client::new().get(server.url(&format!("/api/links/{code}/stats?by=country"))));
        let values: Vec<(String, u64)> = stats["values"]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|v| {
                        (
                            v["value"].as_str().unwrap().to_string(),
                            v["clicks"].as_u64().unwrap(),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default();
        if values.iter().map(|(_, n)| n).sum::<u64>() >= total {
            return values;
        }
        assert!(
            Instant::now() < deadline,
            "clicks never reached {total}: {stats}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_trusted_proxy_names_the_client_for_every_per_client_decision() {
    let dir = tempfile::tempdir().unwrap();
    let server = server(dir.path(), "[\"127.0.0.9\"]");

    // The creation limit (one at a time) counts the forwarded client, not the proxy.
    assert_eq!(create(&server, PROXY, "203.0.113.1", 0), 201);
    assert_eq!(create(&server, PROXY, "203.0.113.1", 1), 429);
    assert_eq!(create(&server, PROXY, "203.0.113.2", 2), 201);
    // A forged left part does not buy a new address: the right-most untrusted hop
    // (the one the proxy appended) is the client.
    assert_eq!(create(&server, PROXY, "198.51.100.1, 203.0.113.2", 3), 429);
    // From a peer that is no proxy the header is ignored: the peer is limited.
    assert_eq!(create(&server, DIRECT, "203.0.113.3", 4), 201);
    assert_eq!(create(&server, DIRECT, "203.0.113.4", 5), 429);

    // A click's country is the forwarded client's; from a direct peer, the peer's.
    let link = admin(
        client_from(Ipv4Addr::new(127, 0, 0, 21))
            .post(server.url("/api/links"))
            .json(&json!({ "url": "https://example.com/geo" })),
    );
    let code = link["code"].as_str().unwrap().to_string();
    let click = |from: Ipv4Addr, header: (&str, &str)| {
        let r = client_from(from)
            .get(server.url(&format!("/{code}")))
            .header(header.0, header.1)
            .send()
            .unwrap();
        assert_eq!(r.status().as_u16(), 302);
    };
    click(PROXY, ("X-Forwarded-For", "127.0.0.2"));
    click(PROXY, ("X-Forwarded-For", "10.0.0.1, 127.0.0.3"));
    click(PROXY, ("Forwarded", "for=\"127.0.0.3:5555\";proto=https"));
    click(DIRECT, ("X-Forwarded-For", "127.0.0.2"));
    let mut seen = countries(&server, &code, 4);
    seen.sort();
    assert_eq!(
        seen,
        [("DE".into(), 1), ("JP".into(), 2), ("unknown".into(), 1)]
    );

    // The password attempts (a burst of 10) are the forwarded client's.
    let protected = admin(
        client_from(Ipv4Addr::new(127, 0, 0, 22))
            .post(server.url("/api/links"))
            .json(&json!({ "url": "https://example.com/secret", "password": "right one" })),
    );
    let protected = protected["code"].as_str().unwrap().to_string();
    let attempt = |forwarded: &str| {
        client_from(PROXY)
            .post(server.url(&format!("/{protected}")))
            .header("X-Forwarded-For", forwarded)
            .form(&[("password", "wrong")])
            .send()
            .unwrap()
            .status()
            .as_u16()
    };
    for _ in 0..10 {
        assert_eq!(attempt("203.0.113.7"), 401);
    }
    assert_eq!(attempt("203.0.113.7"), 429);
    assert_eq!(attempt("203.0.113.8"), 401);

    // The key-check throttle (a burst of 20 failures) likewise.
    let bad_key = |forwarded: &str| {
        client_from(PROXY)
            .get(server.url("/api/links/export"))
            .bearer_auth("not-the-key-0123456789")
            .header("X-Forwarded-For", forwarded)
            .send()
            .unwrap()
            .status()
            .as_u16()
    };
    let mut last = 0;
    for _ in 0..40 {
        last = bad_key("203.0.113.9");
        if last == 429 {
            break;
        }
    }
    assert_eq!(last, 429, "the throttle never answered");
    assert_eq!(bad_key("203.0.113.10"), 401);
}

#[test]
fn without_trusted_proxies_forwarding_headers_are_ignored() {
    let dir = tempfile::tempdir().unwrap();
    let server = server(dir.path(), "[]");
    assert_eq!(create(&server, PROXY, "203.0.113.1", 0), 201);
    assert_eq!(create(&server, PROXY, "203.0.113.2", 1), 429);
    let link = admin(
        client_from(Ipv4Addr::new(127, 0, 0, 21))
            .post(server.url("/api/links"))
            .json(&json!({ "url": "https://example.com/geo" })),
    );
    let code = link["code"].as_str().unwrap().to_string();
    let r = client_from(JAPAN)
        .get(server.url(&format!("/{code}")))
        .header("X-Forwarded-For", "127.0.0.2")
        .header("Forwarded", "for=127.0.0.2")
        .send()
        .unwrap();
    assert_eq!(r.status().as_u16(), 302);
    assert_eq!(countries(&server, &code, 1), [("JP".into(), 1)]);
}

#[test]
fn a_bad_trusted_proxy_entry_stops_the_start_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let err =
        Server::refused_with_config(dir.path(), "[http]\ntrusted_proxies = [\"10.0.0.0/40\"]\n");
    assert!(
        err.contains("http.trusted_proxies") && err.contains("10.0.0.0/40"),
        "{err}"
    );
}

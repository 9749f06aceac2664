//! Short URLs that work however the server is reached, against the real binary:
//! without `[links] base_url` a link's `short_url` starts with the Host the request
//! named (`https` only when a trusted proxy says so); with `[links] hosts` another Host
//! is refused with 421 before anything is made; a configured `base_url` wins over Host.

mod common;

use common::Server;
use reqwest::blocking::Client;
use serde_json::{json, Value};
use std::net::{IpAddr, Ipv4Addr};

const PROXY: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 9);

fn client_from(ip: Ipv4Addr) -> Client {
    Client::builder()
        .local_address(IpAddr::V4(ip))
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

/// `POST /api/links` naming `host`, with `extra` headers; status and body.
fn create(
    server: &Server,
    from: Ipv4Addr,
    host: &str,
    extra: &[(&str, &str)],
    url: &str,
) -> (u16, Value) {
    let mut request = client_from(from)
        .post(server.url("/api/links"))
        .header("Host", host)
        .json(&json!({ "url": url }));
    for (name, value) in extra {
        request = request.header(*name, *value);
    }
    let r = request.send().unwrap();
    let status = r.status().as_u16();
    (status, r.json().unwrap_or(Value::Null))
}

fn short_url(answer: &(u16, Value)) -> String {
    assert!(answer.0 == 201 || answer.0 == 200, "{answer:?}");
    answer.1["short_url"].as_str().unwrap().to_string()
}

#[test]
fn without_base_url_short_urls_take_the_requests_host() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start_with_config(
        dir.path(),
        "[http]\ntrusted_proxies = [\"127.0.0.9\"]\n[links]\ncreate_per_second = 0\n",
    );
    let local = Ipv4Addr::LOCALHOST;
    let a = create(&server, local, "Sho.RT:8443", &[], "https://example.com/a");
    let code = a.1["code"].as_str().unwrap().to_string();
    assert_eq!(short_url(&a), format!("http://sho.rt:8443/{code}"));
    // The scheme from a trusted proxy; the same header from anyone else is ignored.
    let proto = [("X-Forwarded-Proto", "https")];
    let b = create(&server, PROXY, "sho.rt", &proto, "https://example.com/b");
    assert!(short_url(&b).starts_with("https://sho.rt/"), "{b:?}");
    let c = create(&server, local, "sho.rt", &proto, "https://example.com/c");
    assert!(short_url(&c).starts_with("http://sho.rt/"), "{c:?}");
    // Every answer that shows a link says it the same way: the link, the list.
    let got: Value = client_from(local)
        .get(server.url(&format!("/api/links/{code}")))
        .header("Host", "go.example")
        .send()
        .unwrap()
        .json()
        .unwrap();
    assert_eq!(got["short_url"], format!("http://go.example/{code}"));
    let list: Value = client_from(local)
        .get(server.url("/api/links"))
        .header("Host", "go.example")
        .send()
        .unwrap()
        .json()
        .unwrap();
    assert!(
        list.to_string()
            .contains(&format!("http://go.example/{code}")),
        "{list}"
    );
    // A request without a usable Host gets the bound address.
    let d = create(&server, local, "not a host", &[], "https://example.com/d");
    assert!(
        short_url(&d).starts_with(&format!("http://{}/", server.http)),
        "{d:?}"
    );
}

#[test]
fn with_hosts_another_host_is_misdirected_and_nothing_is_made() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start_with_config(
        dir.path(),
        "[links]\nhosts = [\"sho.rt\", \"go.example:8443\"]\ncreate_per_second = 0\n",
    );
    let local = Ipv4Addr::LOCALHOST;
    let ok = create(&server, local, "SHO.RT:80", &[], "https://example.com/a");
    assert!(short_url(&ok).starts_with("http://sho.rt/"), "{ok:?}");
    let ok = create(
        &server,
        local,
        "go.example:8443",
        &[],
        "https://example.com/b",
    );
    assert!(
        short_url(&ok).starts_with("http://go.example:8443/"),
        "{ok:?}"
    );
    let (status, body) = create(&server, local, "evil.example", &[], "https://example.com/c");
    assert_eq!(status, 421, "{body}");
    assert!(
        body["error"].as_str().unwrap().contains("evil.example"),
        "{body}"
    );
    let (status, _) = create(&server, local, "go.example", &[], "https://example.com/c");
    assert_eq!(status, 421, "the port is part of the host");
    // Nothing was made for the refused requests.
    let list: Value = client_from(local)
        .get(server.url("/api/links"))
        .header("Host", "sho.rt")
        .send()
        .unwrap()
        .json()
        .unwrap();
    assert!(!list.to_string().contains("example.com/c"), "{list}");
    // A long URL to one of the hosts is a link to this server: refused.
    let (status, body) = create(&server, local, "sho.rt", &[], "https://sho.rt/abc");
    assert_eq!(status, 400, "{body}");
    // Monitors dial addresses: health and metrics answer whatever the Host.
    for path in ["/healthz", "/metrics"] {
        let r = client_from(local)
            .get(server.url(path))
            .header("Host", "10.1.2.3:8080")
            .send()
            .unwrap();
        assert_eq!(r.status().as_u16(), 200, "{path}");
    }
}

#[test]
fn a_configured_base_url_wins_over_the_host_and_bad_hosts_stop_the_start() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start_with_config(
        dir.path(),
        "[links]\nbase_url = \"https://s.example\"\ncreate_per_second = 0\n",
    );
    let a = create(
        &server,
        Ipv4Addr::LOCALHOST,
        "sho.rt",
        &[],
        "https://example.com/a",
    );
    assert!(short_url(&a).starts_with("https://s.example/"), "{a:?}");

    let dir = tempfile::tempdir().unwrap();
    let err = Server::refused_with_config(dir.path(), "[links]\nhosts = [\"sho.rt/path\"]\n");
    assert!(
        err.contains("links.hosts") && err.contains("sho.rt/path"),
        "{err}"
    );
}

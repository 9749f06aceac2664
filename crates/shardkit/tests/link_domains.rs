//! Several domains from one server (`[links] domains`), through the real binary: one
//! alias on two domains is two links, each redirecting only at its own Host; a code
//! answers only at its link's domain; an unknown Host is a 404 page, never another
//! domain's link; the API, stats and link page reach an alias with `?domain=`; reuse
//! stays within a domain; export and import carry the domain (both formats); the
//! domain survives a restart; bad domains are refused naming the setting.

mod common;

use common::Server;
use reqwest::blocking::{Client, Response};
use serde_json::{json, Value};

const CONFIG: &str = "[links]\ncreate_per_second = 0\ndomains = [\"sho.rt\", \"go.example\"]\n";

fn client() -> Client {
    Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

/// `POST /api/links` with `body`, naming Host `host`.
fn create(server: &Server, host: &str, body: Value) -> (u16, Value) {
    let r = client()
        .post(server.url("/api/links"))
        .header("Host", host)
        .json(&body)
        .send()
        .unwrap();
    (r.status().as_u16(), r.json().unwrap_or(Value::Null))
}

/// `GET /{path}` naming Host `host`.
fn visit(server: &Server, host: &str, path: &str) -> Response {
    client()
        .get(server.url(&format!("/{path}")))
        .header("Host", host)
        .send()
        .unwrap()
}

/// Where `/{path}` at `host` redirects to; `None` for a 404.
fn target(server: &Server, host: &str, path: &str) -> Option<String> {
    let answer = visit(server, host, path);
    match answer.status().as_u16() {
        302 => Some(answer.headers()["location"].to_str().unwrap().to_string()),
        404 => None,
        other => panic!("/{path} at {host}: {other}"),
    }
}

fn api(server: &Server, method: reqwest::Method, path: &str) -> reqwest::blocking::RequestBuilder {
    client().request(method, server.url(path))
}

#[test]
fn one_alias_on_two_domains_is_two_links_each_reached_only_at_its_host() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start_with_config(dir.path(), CONFIG);

    let home = create(
        &server,
        "sho.rt",
        json!({"url": "https://example.com/home", "alias": "launch-day"}),
    );
    assert_eq!(home.0, 201, "{home:?}");
    assert_eq!(home.1["short_url"], "http://sho.rt/launch-day");
    assert_eq!(home.1["domain"], "sho.rt");
    let away = create(
        &server,
        "sho.rt",
        json!({"url": "https://example.com/away", "alias": "launch-day", "domain": "go.example"}),
    );
    assert_eq!(away.0, 201, "{away:?}");
    assert_eq!(away.1["short_url"], "http://go.example/launch-day");
    assert_eq!(away.1["domain"], "go.example");
    let away_code = away.1["code"].as_str().unwrap().to_string();
    // Taken within its domain: 409 naming the owner.
    let again = create(
        &server,
        "go.example",
        json!({"url": "https://example.com/3", "alias": "launch-day", "domain": "go.example"}),
    );
    assert_eq!(again.0, 409, "{again:?}");
    assert_eq!(again.1["code"], away_code.as_str());

    // Redirects by (Host, path); a domain without a port matches any port.
    let home_url = Some("https://example.com/home".to_string());
    let away_url = Some("https://example.com/away".to_string());
    assert_eq!(target(&server, "sho.rt", "launch-day"), home_url);
    assert_eq!(target(&server, "SHO.RT:80", "launch-day"), home_url);
    assert_eq!(target(&server, "go.example:8080", "launch-day"), away_url);
    assert_eq!(target(&server, "go.example", &away_code), away_url);
    assert_eq!(
        target(&server, "sho.rt", &away_code),
        None,
        "a code of another domain"
    );
    let home_code = home.1["code"].as_str().unwrap();
    assert_eq!(target(&server, "go.example", home_code), None);
    // An unknown Host: the plain 404 page, not another domain's link.
    for host in ["evil.example", "127.0.0.1"] {
        let page = client()
            .get(server.url("/launch-day"))
            .header("Host", host)
            .header("Accept", "text/html")
            .send()
            .unwrap();
        assert_eq!(page.status().as_u16(), 404, "{host}");
        let text = page.text().unwrap();
        assert!(
            text.contains("<html") && !text.contains("example.com/"),
            "{text}"
        );
    }

    // The API reaches an alias of another domain by `?domain=`.
    let get = |query: &str| {
        let r = api(
            &server,
            reqwest::Method::GET,
            &format!("/api/links/launch-day{query}"),
        )
        .send()
        .unwrap();
        (r.status().as_u16(), r.json::<Value>().unwrap())
    };
    assert_eq!(get("").1["url"], "https://example.com/home");
    assert_eq!(get("?domain=sho.rt").1["url"], "https://example.com/home");
    assert_eq!(
        get("?domain=go.example").1["url"],
        "https://example.com/away"
    );
    let unknown = get("?domain=nope.example");
    assert_eq!(unknown.0, 421);
    assert!(
        unknown.1["error"]
            .as_str()
            .unwrap()
            .contains("links.domains"),
        "{unknown:?}"
    );
    let patched = api(
        &server,
        reqwest::Method::PATCH,
        "/api/links/launch-day?domain=go.example",
    )
    .json(&json!({"url": "https://example.com/moved"}))
    .send()
    .unwrap();
    assert_eq!(patched.status().as_u16(), 200);
    assert_eq!(
        target(&server, "go.example", "launch-day").as_deref(),
        Some("https://example.com/moved")
    );
    assert_eq!(target(&server, "sho.rt", "launch-day"), home_url);
    let stats = api(
        &server,
        reqwest::Method::GET,
        "/api/links/launch-day/stats?domain=go.example&by=day",
    )
    .send()
    .unwrap();
    assert_eq!(stats.status().as_u16(), 200);
    let stats: Value = stats.json().unwrap();
    assert_eq!(stats["domain"], "go.example", "{stats}");
    assert_eq!(stats["code"], "launch-day");
    let page = api(
        &server,
        reqwest::Method::GET,
        "/ui/links/launch-day?domain=go.example",
    )
    .send()
    .unwrap();
    assert_eq!(page.status().as_u16(), 200);
    let page = page.text().unwrap();
    assert!(
        page.contains("<span id=\"domain\">go.example</span>")
            && page.contains("example.com/moved"),
        "{page}"
    );
    let form = api(&server, reqwest::Method::GET, "/")
        .send()
        .unwrap()
        .text()
        .unwrap();
    assert!(
        form.contains("<option value=\"go.example\">"),
        "the form offers the domains"
    );

    // Reuse hands out a link of the asked domain only.
    let reuse = |domain: Option<&str>| {
        let mut body = json!({"url": "https://example.com/reused", "reuse": true});
        if let Some(d) = domain {
            body["domain"] = json!(d);
        }
        let (status, link) = create(&server, "sho.rt", body);
        assert!(status == 200 || status == 201, "{link:?}");
        link["code"].as_str().unwrap().to_string()
    };
    let on_home = reuse(None);
    let on_away = reuse(Some("go.example"));
    assert_ne!(on_home, on_away);
    assert_eq!(reuse(None), on_home);
    assert_eq!(reuse(Some("go.example")), on_away);

    // Bad domains: named, nothing made.
    let bad = create(
        &server,
        "sho.rt",
        json!({"url": "https://example.com/x", "domain": "evil.example"}),
    );
    assert_eq!(bad.0, 421);
    assert!(
        bad.1["error"].as_str().unwrap().contains("links.domains"),
        "{bad:?}"
    );
    let own = create(
        &server,
        "sho.rt",
        json!({"url": "https://go.example/launch-day"}),
    );
    assert_eq!(own.0, 400, "a link to one of our own domains: {own:?}");

    // Export and import carry the domain, both formats; the import is another server.
    for format in ["jsonl", "csv"] {
        let exported = api(
            &server,
            reqwest::Method::GET,
            &format!("/api/links/export?format={format}"),
        )
        .send()
        .unwrap()
        .text()
        .unwrap();
        assert!(exported.contains("go.example"), "{format}: {exported}");
        let other_dir = dir.path().join(format);
        std::fs::create_dir_all(&other_dir).unwrap();
        let other = Server::start_with_config(&other_dir, CONFIG);
        let content_type = if format == "csv" {
            "text/csv"
        } else {
            "application/x-ndjson"
        };
        let imported = client()
            .post(other.url("/api/links/bulk"))
            .header("Content-Type", content_type)
            .body(exported)
            .send()
            .unwrap();
        assert!(
            imported.status().is_success(),
            "{format}: {}",
            imported.text().unwrap()
        );
        assert_eq!(target(&other, "sho.rt", "launch-day"), home_url, "{format}");
        assert_eq!(
            target(&other, "go.example", "launch-day").as_deref(),
            Some("https://example.com/moved"),
            "{format}"
        );
        assert_eq!(target(&other, "sho.rt", &away_code), None, "{format}");
    }

    // Deleting one domain's alias leaves the other's; the domain survives a restart.
    let deleted = api(
        &server,
        reqwest::Method::DELETE,
        "/api/links/launch-day?domain=go.example",
    )
    .send()
    .unwrap();
    assert_eq!(deleted.status().as_u16(), 204);
    assert_eq!(target(&server, "go.example", "launch-day"), None);
    assert_eq!(target(&server, "sho.rt", "launch-day"), home_url);
    let remade = create(
        &server,
        "go.example",
        json!({"url": "https://example.com/again", "alias": "launch-day", "domain": "go.example"}),
    );
    assert_eq!(remade.0, 201, "{remade:?}");
    assert!(server.terminate().success());
    let server = Server::start_with_config(dir.path(), CONFIG);
    assert_eq!(target(&server, "sho.rt", "launch-day"), home_url);
    assert_eq!(
        target(&server, "go.example", "launch-day").as_deref(),
        Some("https://example.com/again")
    );
}

#[test]
fn without_domains_every_host_reaches_every_link_and_a_domain_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start_with_config(dir.path(), "[links]\ncreate_per_second = 0\n");
    let made = create(
        &server,
        "a.example",
        json!({"url": "https://example.com/x", "alias": "plain"}),
    );
    assert_eq!(made.0, 201, "{made:?}");
    assert!(made.1.get("domain").is_none(), "{made:?}");
    assert_eq!(
        target(&server, "b.example", "plain").as_deref(),
        Some("https://example.com/x")
    );
    let refused = create(
        &server,
        "a.example",
        json!({"url": "https://example.com/y", "domain": "a.example"}),
    );
    assert_eq!(refused.0, 421);
    assert!(
        refused.1["error"]
            .as_str()
            .unwrap()
            .contains("links.domains"),
        "{refused:?}"
    );
}

#[test]
fn bad_domain_settings_are_refused_naming_them() {
    for (toml, says) in [
        (
            "[links]\ndomains = [\"go.example/path\"]\n",
            "links.domains",
        ),
        (
            "[links]\ndomains = [\"go.example\", \"GO.example\"]\n",
            "listed twice",
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let err = Server::refused_with_config(dir.path(), toml);
        assert!(err.contains(says), "{toml}: {err}");
    }
}

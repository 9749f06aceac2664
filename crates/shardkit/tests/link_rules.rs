//! Redirect rules through the real server: a link sends iPhones, German speakers,
//! visitors from Japan (by the test GeoIP database), a campaign's query and an
//! address range each to their own target, and everyone else to its URL; the rules
//! show in the API, change with PATCH, survive a restart and travel through export and
//! import; a bad rule is refused naming it.

mod common;

use common::visitors::{geo_config, JAPAN, SAFARI_IPHONE};
use common::Server;
use reqwest::blocking::Client;
use serde_json::{json, Value};
use std::net::{IpAddr, Ipv4Addr};

const WINDOWS: &str = common::visitors::CHROME_WINDOWS;
const ANDROID: &str = "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Mobile Safari/537.36";

/// A visitor's request: from `ip`, with `agent`, `language` and `query`.
struct Visit<'a> {
    ip: Ipv4Addr,
    agent: &'a str,
    language: &'a str,
    query: &'a str,
}

const NOBODY: Visit<'static> = Visit {
    ip: Ipv4Addr::LOCALHOST,
    agent: WINDOWS,
    language: "en-US,en;q=0.9",
    query: "",
};

/// Where `/{path}` sends `visit` (the Location of its redirect).
fn target(server: &Server, path: &str, visit: &Visit<'_>) -> String {
    let client = Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .local_address(IpAddr::V4(visit.ip))
        .user_agent(visit.agent)
        .build()
        .unwrap();
    let query = if visit.query.is_empty() {
        String::new()
    } else {
        format!("?{}", visit.query)
    };
    let answer = client
        .get(server.url(&format!("/{path}{query}")))
        .header("Accept-Language", visit.language)
        .send()
        .unwrap();
    assert_eq!(answer.status().as_u16(), 302, "/{path}{query}");
    answer.headers()["location"].to_str().unwrap().to_string()
}

fn rules() -> Value {
    json!([
        {"device": "ios", "url": "https://example.com/ios"},
        {"language": "de", "url": "https://example.com/de"},
        {"country": "JP", "url": "https://example.com/jp"},
        {"query": {"utm_source": "news", "debug": true}, "url": "https://example.com/news"},
        {"cidr": "127.0.0.4/31", "url": "https://example.com/office"},
    ])
}

/// Every rule sends its visitors to its target, in order; the rest go to the URL.
fn check_targets(server: &Server, path: &str) {
    let cases = [
        (NOBODY, "https://example.com/default"),
        (
            Visit {
                agent: SAFARI_IPHONE,
                language: "de",
                ..NOBODY
            },
            "https://example.com/ios",
        ),
        (
            Visit {
                agent: ANDROID,
                ..NOBODY
            },
            "https://example.com/default",
        ),
        (
            Visit {
                language: "fr-FR, de-AT;q=0.4",
                ..NOBODY
            },
            "https://example.com/de",
        ),
        (
            Visit {
                language: "fr, de;q=0",
                ..NOBODY
            },
            "https://example.com/default",
        ),
        (
            Visit {
                ip: JAPAN,
                ..NOBODY
            },
            "https://example.com/jp",
        ),
        (
            Visit {
                query: "utm_source=news&debug",
                ..NOBODY
            },
            "https://example.com/news",
        ),
        (
            Visit {
                query: "utm_source=news",
                ..NOBODY
            },
            "https://example.com/default",
        ),
        (
            Visit {
                query: "utm_source=mail&debug=1",
                ..NOBODY
            },
            "https://example.com/default",
        ),
        (
            Visit {
                ip: Ipv4Addr::new(127, 0, 0, 5),
                ..NOBODY
            },
            "https://example.com/office",
        ),
        (
            Visit {
                ip: Ipv4Addr::new(127, 0, 0, 6),
                ..NOBODY
            },
            "https://example.com/default",
        ),
    ];
    for (visit, expected) in cases {
        assert_eq!(
            target(server, path, &visit),
            expected,
            "/{path} from {} with {:?}, {:?}, ?{}",
            visit.ip,
            visit.agent,
            visit.language,
            visit.query
        );
    }
}

#[test]
fn each_rule_sends_its_visitors_and_the_rules_persist_change_and_travel() {
    let dir = tempfile::tempdir().unwrap();
    let config = geo_config(dir.path(), 50);
    let env = [("SHARDKIT_CONFIG", config.to_str().unwrap())];
    let server = Server::start(&dir.path().join("a"), &env);
    let c = common::link_client();
    let link = common::create_link(
        &c,
        &server,
        json!({"url": "https://example.com/default", "alias": "ruled", "rules": rules()}),
    );
    assert_eq!(link["rules"], rules(), "{link}");
    let code = link["code"].as_str().unwrap().to_string();
    check_targets(&server, "ruled");
    check_targets(&server, &code);
    let shown: Value = c
        .get(server.url("/api/links/ruled"))
        .send()
        .unwrap()
        .json()
        .unwrap();
    assert_eq!(shown["rules"], rules());
    // The link's page lists them.
    let page = c
        .get(server.url("/ui/links/ruled"))
        .send()
        .unwrap()
        .text()
        .unwrap();
    assert!(
        page.contains("language de") && page.contains("address in 127.0.0.4/31"),
        "{page}"
    );
    // A link with rules is never handed out for `reuse`.
    let ruled = common::create_link(
        &c,
        &server,
        json!({"url": "https://example.com/only-rules", "rules": rules()}),
    );
    let plain = common::create_link(
        &c,
        &server,
        json!({"url": "https://example.com/only-rules", "reuse": true}),
    );
    assert_ne!(plain["code"], ruled["code"]);
    // Nor does asking for `reuse` with rules get the plain link without them.
    let asked = common::create_link(
        &c,
        &server,
        json!({"url": "https://example.com/only-rules", "reuse": true, "rules": rules()}),
    );
    assert_ne!(asked["code"], plain["code"]);
    assert_eq!(asked["rules"], rules());

    // Through a restart (the store's record) and the cache after a change.
    let server = {
        assert!(server.terminate().success());
        Server::start(&dir.path().join("a"), &env)
    };
    check_targets(&server, "ruled");
    let patched = c
        .patch(server.url("/api/links/ruled"))
        .json(&json!({"rules": [{"device": "android", "url": "https://example.com/android"}]}))
        .send()
        .unwrap();
    assert_eq!(patched.status().as_u16(), 200);
    assert_eq!(
        target(
            &server,
            "ruled",
            &Visit {
                agent: ANDROID,
                ..NOBODY
            }
        ),
        "https://example.com/android"
    );
    assert_eq!(
        target(
            &server,
            "ruled",
            &Visit {
                agent: SAFARI_IPHONE,
                ..NOBODY
            }
        ),
        "https://example.com/default"
    );
    let patched = c
        .patch(server.url("/api/links/ruled"))
        .json(&json!({"rules": rules()}))
        .send()
        .unwrap();
    assert_eq!(patched.status().as_u16(), 200);

    // Export and import, both formats: the rules come along.
    for format in ["jsonl", "csv"] {
        let exported = c
            .get(server.url(&format!("/api/links/export?format={format}")))
            .send()
            .unwrap()
            .text()
            .unwrap();
        let other = Server::start(&dir.path().join(format!("b-{format}")), &env);
        let content_type = if format == "csv" {
            "text/csv"
        } else {
            "application/x-ndjson"
        };
        let imported = c
            .post(other.url("/api/links/bulk"))
            .header("Content-Type", content_type)
            .body(exported.clone())
            .send()
            .unwrap();
        assert!(
            imported.status().is_success(),
            "{format}: {}",
            imported.text().unwrap()
        );
        check_targets(&other, "ruled");
    }

    // Removing them: back to one target.
    let cleared = c
        .patch(server.url("/api/links/ruled"))
        .json(&json!({"rules": []}))
        .send()
        .unwrap();
    assert_eq!(cleared.status().as_u16(), 200);
    assert_eq!(
        target(
            &server,
            "ruled",
            &Visit {
                agent: SAFARI_IPHONE,
                ..NOBODY
            }
        ),
        "https://example.com/default"
    );
}

#[test]
fn a_bad_rule_is_refused_naming_it_and_nothing_is_stored() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    let c = common::link_client();
    let too_many: Vec<Value> = (0..17)
        .map(|i| json!({"query": {"n": i.to_string()}, "url": "https://example.com/n"}))
        .collect();
    for (rules, names) in [
        (
            json!([{"device": "tv", "url": "https://example.com/"}]),
            "rules[0]",
        ),
        (
            json!([{"device": "ios", "url": "https://example.com/"}, {"language": "de_DE", "url": "https://example.com/"}]),
            "rules[1]",
        ),
        (
            json!([{"country": "Germany", "url": "https://example.com/"}]),
            "country",
        ),
        (
            json!([{"cidr": "10.0.0.0/33", "url": "https://example.com/"}]),
            "cidr",
        ),
        (
            json!([{"query": {"a": false}, "url": "https://example.com/"}]),
            "query.a",
        ),
        (
            json!([{"device": "ios", "country": "DE", "url": "https://example.com/"}]),
            "exactly one",
        ),
        (
            json!([{"device": "ios", "url": "ftp://example.com/"}]),
            "rules[0].url",
        ),
        (json!([{"device": "ios"}]), "url"),
        (json!(too_many), "at most 16"),
    ] {
        let answer = c
            .post(server.url("/api/links"))
            .json(&json!({"url": "https://example.com/", "alias": "bad-rules", "rules": rules}))
            .send()
            .unwrap();
        let status = answer.status().as_u16();
        let body = answer.text().unwrap();
        assert_eq!(status, 400, "{rules}: {body}");
        assert!(body.contains(names), "{rules}: {body} should name {names}");
    }
    let missing = c.get(server.url("/api/links/bad-rules")).send().unwrap();
    assert_eq!(missing.status().as_u16(), 404);
}

//! The embedded link store's file format through the real binary: a `links.redb` of
//! either previous format (JSON records, kept as `[links] store = "redb-json"`, and
//! records in redb, kept as `"redb-compact"`) is converted at start into segments, and
//! every link (code, alias, tags, reuse) answers as before, also after a SIGKILL of the
//! server that converted it.

mod common;

use common::Server;
use reqwest::blocking::Client;
use serde_json::{json, Value};

fn location(c: &Client, server: &Server, path: &str) -> Option<String> {
    let r = c.get(server.url(&format!("/{path}"))).send().unwrap();
    r.headers()
        .get("location")
        .map(|l| l.to_str().unwrap().to_string())
}

#[test]
fn a_store_of_json_records_is_converted_at_start() {
    converted_at_start("redb-json");
}

#[test]
fn a_store_of_records_in_redb_is_converted_at_start() {
    converted_at_start("redb-compact");
}

fn converted_at_start(older: &str) {
    let dir = tempfile::tempdir().unwrap();
    let c = common::link_client();
    let (plain, aliased) = {
        let server = Server::start(dir.path(), &[("SHARDKIT_STORE", older)]);
        let plain = common::create_link(&c, &server, json!({ "url": "https://example.com/plain" }));
        let aliased = common::create_link(
            &c,
            &server,
            json!({ "url": "https://example.com/aliased", "alias": "old-one", "tags": ["kept"] }),
        );
        assert!(server.terminate().success());
        (plain, aliased)
    };
    let check = |server: &Server| {
        let code = plain["code"].as_str().unwrap();
        assert_eq!(
            location(&c, server, code).as_deref(),
            Some("https://example.com/plain")
        );
        assert_eq!(
            location(&c, server, "old-one").as_deref(),
            Some("https://example.com/aliased")
        );
        let code = aliased["code"].as_str().unwrap();
        assert_eq!(
            location(&c, server, code).as_deref(),
            Some("https://example.com/aliased")
        );
        let listed: Value = c
            .get(server.url("/api/links?tag=kept"))
            .send()
            .unwrap()
            .json()
            .unwrap();
        assert_eq!(listed["links"][0]["code"], aliased["code"], "{listed}");
        let again = common::create_link(
            &c,
            server,
            json!({ "url": "https://example.com/plain", "reuse": true }),
        );
        assert_eq!(
            again["code"], plain["code"],
            "reuse finds the converted link"
        );
    };
    let newer = {
        let mut server = Server::start(dir.path(), &[]);
        check(&server);
        let newer = common::create_link(&c, &server, json!({ "url": "https://example.com/newer" }));
        server.child.kill().unwrap(); // SIGKILL: the conversion and the new link are durable
        let _ = server.child.wait();
        newer
    };
    let server = Server::start(dir.path(), &[]);
    check(&server);
    assert!(dir.path().join("links.segments/seg-000000").exists());
    let code = newer["code"].as_str().unwrap();
    assert_eq!(
        location(&c, &server, code).as_deref(),
        Some("https://example.com/newer")
    );
    let count: Value = c
        .get(server.url("/api/links?limit=10"))
        .send()
        .unwrap()
        .json()
        .unwrap();
    assert_eq!(count["links"].as_array().unwrap().len(), 3, "{count}");
}

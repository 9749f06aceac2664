//! Who may read what, route by route, against the real server: no key, a wrong key, the
//! admin key and a named key of each role (made with the real `shardkit keys add`).

mod common;

use common::Server;
use reqwest::blocking::Client;
use reqwest::Method;
use serde_json::{json, Value};
use std::net::{IpAddr, Ipv4Addr};
use std::path::Path;

const ADMIN: &str = "admin-key-0123456789abcdef";

/// `shardkit keys ARGS --data DIR`, its stdout on success.
fn keys(data: &Path, args: &[&str]) -> Result<String, String> {
    common::keys_cli(data, args)
}

/// A client whose requests come from `127.0.0.N` (the failed-check limit is per address).
fn client_from(n: u8) -> Client {
    Client::builder()
        .local_address(IpAddr::V4(Ipv4Addr::new(127, 0, 0, n)))
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

fn send(c: &Client, server: &Server, method: &Method, path: &str, key: Option<&str>) -> u16 {
    let mut request = c.request(method.clone(), server.url(path));
    if let Some(key) = key {
        request = request.bearer_auth(key);
    }
    request = match (method.as_str(), path) {
        ("POST", "/api/links") => request.json(&json!({ "url": "https://example.com/t" })),
        ("POST", "/api/links/bulk") => request
            .header("content-type", "application/x-ndjson")
            .body("{\"url\":\"https://example.com/b\"}\n"),
        ("PATCH", _) | ("PUT", _) => request.json(&json!({ "url": "https://example.org/" })),
        ("POST", p) if p.ends_with("/mget") => request.json(&json!({ "keys": ["1"] })),
        ("POST", p) if p.ends_with("/incr") => request.json(&json!({ "column": "value", "by": 1 })),
        _ => request,
    };
    request.send().unwrap().status().as_u16()
}

#[test]
fn every_route_answers_each_role_as_documented() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let roles = [
        "links:create",
        "links:read",
        "counters:read",
        "counters:write",
        "ids",
    ];
    let secrets: Vec<(String, String)> = roles
        .iter()
        .map(|role| {
            let name = role.replace(':', "-");
            (
                role.to_string(),
                keys(&data, &["add", &name, "--role", role]).unwrap(),
            )
        })
        .collect();
    let server = Server::start(&data, &[("SHARDKIT_API_KEY", ADMIN)]);
    let admin = client_from(1);
    // A link (to read, edit and delete) and a counter row, made with the admin key.
    let created: Value = admin
        .post(server.url("/api/links"))
        .bearer_auth(ADMIN)
        .json(&json!({ "url": "https://example.com/x" }))
        .send()
        .unwrap()
        .json()
        .unwrap();
    let code = created["code"].as_str().unwrap().to_string();
    let link = format!("/api/links/{code}");
    // (method, path, roles that may; "" = open to all).
    let table: Vec<(Method, String, &[&str])> = vec![
        (Method::GET, "/healthz".into(), &[""]),
        (Method::GET, "/".into(), &[""]),
        (Method::GET, format!("/ui/links/{code}"), &[""]),
        (Method::GET, "/metrics".into(), &[]),
        (Method::GET, "/openapi.json".into(), &[]),
        (Method::POST, "/api/ids".into(), &["ids"]),
        (Method::GET, "/api/ids/765485701750849536".into(), &["ids"]),
        (Method::POST, "/api/tickets/photos".into(), &["ids"]),
        (
            Method::GET,
            "/api/counters/weibo/1".into(),
            &["counters:read", "counters:write"],
        ),
        (
            Method::POST,
            "/api/counters/weibo/mget".into(),
            &["counters:read", "counters:write"],
        ),
        (
            Method::POST,
            "/api/counters/weibo/1/incr".into(),
            &["counters:write"],
        ),
        (Method::POST, "/api/links".into(), &["links:create"]),
        (Method::POST, "/api/links/bulk".into(), &["links:create"]),
        (Method::GET, "/api/links".into(), &["links:read"]),
        (Method::GET, "/api/links/export".into(), &["links:read"]),
        (Method::GET, link.clone(), &["links:read", "links:create"]),
        (Method::PATCH, link.clone(), &[]),
        (Method::PUT, link.clone(), &[]),
        (Method::DELETE, link.clone(), &[]),
    ];
    let nobody = client_from(2);
    let wrong = client_from(3);
    for (method, path, allowed) in &table {
        let open = allowed.contains(&"");
        let status = send(&nobody, &server, method, path, None);
        if open {
            assert!(status < 400, "{method} {path} without a key: {status}");
            continue;
        }
        assert_eq!(status, 401, "{method} {path} without a key");
        let status = send(&wrong, &server, method, path, Some("shk_not-a-key"));
        assert_eq!(status, 401, "{method} {path} with a wrong key");
        for (role, secret) in &secrets {
            let status = send(&admin, &server, method, path, Some(secret));
            if allowed.contains(&role.as_str()) {
                assert!(
                    status != 401 && status != 403,
                    "{method} {path} with {role}: {status}"
                );
            } else {
                assert_eq!(status, 403, "{method} {path} with {role}");
            }
        }
    }
    // The admin key last: DELETE removes the link the others read.
    for (method, path, _) in &table {
        let status = send(&admin, &server, method, path, Some(ADMIN));
        assert!(
            status != 401 && status != 403,
            "{method} {path} as admin: {status}"
        );
    }
    // The redirect stays open.
    let status = send(&nobody, &server, &Method::GET, &format!("/{code}"), None);
    assert!(status == 404 || status == 302, "redirect: {status}");
}

#[test]
fn a_named_key_alone_closes_the_api_and_keys_change_without_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let reader = keys(&data, &["add", "reader", "--role", "counters:read"]).unwrap();
    let server = Server::start(&data, &[]);
    let c = client_from(1);
    assert_eq!(
        send(&c, &server, &Method::GET, "/api/counters/weibo/1", None),
        401
    );
    // Past the key check (the counter does not exist yet: 404, not 401 or 403).
    let status = send(
        &c,
        &server,
        &Method::GET,
        "/api/counters/weibo/1",
        Some(&reader),
    );
    assert_eq!(status, 404);
    // Revoked while the server runs: refused within about a second.
    keys(&data, &["revoke", "reader"]).unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let status = send(
            &c,
            &server,
            &Method::GET,
            "/api/counters/weibo/1",
            Some(&reader),
        );
        if status == 401 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "revoked key still works"
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    // Added while the server runs: accepted within about a second.
    let writer = keys(&data, &["add", "writer", "--role", "counters:write"]).unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while send(
        &c,
        &server,
        &Method::POST,
        "/api/counters/weibo/1/incr",
        Some(&writer),
    ) != 200
    {
        assert!(std::time::Instant::now() < deadline, "new key not accepted");
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
}

#[test]
fn failed_checks_are_limited_per_address_and_counted() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[("SHARDKIT_API_KEY", ADMIN)]);
    let attacker = client_from(9);
    let statuses: Vec<u16> = (0..40)
        .map(|_| {
            send(
                &attacker,
                &server,
                &Method::GET,
                "/api/links",
                Some("guess"),
            )
        })
        .collect();
    assert_eq!(statuses[0], 401);
    assert!(statuses.contains(&429), "{statuses:?}");
    // Another address is not held back, and the right key still works from there.
    let other = client_from(10);
    assert_eq!(
        send(&other, &server, &Method::GET, "/api/links", Some("guess")),
        401
    );
    assert_eq!(
        send(&other, &server, &Method::GET, "/api/links", Some(ADMIN)),
        200
    );
    let metrics = other
        .get(server.url("/metrics"))
        .bearer_auth(ADMIN)
        .send()
        .unwrap()
        .text()
        .unwrap();
    let failures: u64 = metrics
        .lines()
        .find(|l| l.starts_with("shardkit_auth_failures_total"))
        .and_then(|l| l.split_whitespace().last())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    assert!(failures >= 41, "{failures}");
}

#[test]
fn public_routes_are_opened_on_purpose_and_typos_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("shardkit.toml");
    std::fs::write(
        &config,
        "[access]\npublic = [\"GET /metrics\", \"/api/ids/{id}\"]\n",
    )
    .unwrap();
    let config = config.to_str().unwrap().to_string();
    let args = [
        "--http",
        "127.0.0.1:0",
        "--resp",
        "127.0.0.1:0",
        "--config",
        config.as_str(),
    ];
    let server = Server::try_start(
        &dir.path().join("data"),
        &args,
        &[("SHARDKIT_API_KEY", ADMIN)],
    )
    .unwrap();
    let c = client_from(1);
    assert_eq!(send(&c, &server, &Method::GET, "/metrics", None), 200);
    assert_eq!(
        send(
            &c,
            &server,
            &Method::GET,
            "/api/ids/765485701750849536",
            None
        ),
        200
    );
    assert_eq!(send(&c, &server, &Method::POST, "/api/ids", None), 401);
    drop(server);
    std::fs::write(
        dir.path().join("shardkit.toml"),
        "[access]\npublic = [\"GET /api/linkz\"]\n",
    )
    .unwrap();
    let err = Server::try_start(
        &dir.path().join("data2"),
        &args,
        &[("SHARDKIT_API_KEY", ADMIN)],
    )
    .err()
    .unwrap();
    assert!(err.contains("/api/linkz"), "{err}");
}

#[test]
fn keys_cli_lists_without_secrets_and_refuses_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let secret = keys(
        &data,
        &[
            "add",
            "ci",
            "--role",
            "ids",
            "--role",
            "links:read",
            "--expires",
            "30d",
        ],
    )
    .unwrap();
    assert!(secret.starts_with("shk_"));
    let list = keys(&data, &["list"]).unwrap();
    let line: Value = serde_json::from_str(&list).unwrap();
    assert_eq!(line["name"], "ci");
    assert_eq!(line["roles"], json!(["ids", "links:read"]));
    assert_eq!(line["expired"], false);
    assert!(!list.contains(&secret[4..]));
    let err = keys(&data, &["add", "x", "--role", "links:write"]).unwrap_err();
    assert!(
        err.contains("links:write") && err.contains("links:create"),
        "{err}"
    );
    let err = keys(&data, &["add", "ci", "--role", "ids"]).unwrap_err();
    assert!(err.contains("exists"), "{err}");
    let err = keys(
        &data,
        &[
            "add",
            "y",
            "--role",
            "ids",
            "--expires",
            "2001-01-01T00:00:00Z",
        ],
    )
    .unwrap_err();
    assert!(err.contains("in the past"), "{err}");
    let err = keys(&data, &["revoke", "nobody"]).unwrap_err();
    assert!(err.contains("no key named"), "{err}");
}

/// One RESP command's reply as text: the value, or the error message.
fn resp(con: &mut redis::Connection, args: &[&str]) -> String {
    let mut cmd = redis::cmd(args[0]);
    for a in &args[1..] {
        cmd.arg(*a);
    }
    match cmd.query::<redis::Value>(con) {
        Ok(redis::Value::Okay) => "OK".into(),
        Ok(redis::Value::Int(n)) => n.to_string(),
        Ok(redis::Value::BulkString(b)) => String::from_utf8_lossy(&b).into_owned(),
        Ok(redis::Value::SimpleString(s)) => s,
        Ok(other) => format!("{other:?}"),
        Err(e) => format!("{}: {}", e.code().unwrap_or("?"), e.detail().unwrap_or("")),
    }
}

#[test]
fn resp_commands_run_by_the_role_of_the_key_that_authenticated() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let reader = keys(&data, &["add", "reader", "--role", "counters:read"]).unwrap();
    let writer = keys(&data, &["add", "writer", "--role", "counters:write"]).unwrap();
    let ids = keys(&data, &["add", "idgen", "--role", "ids"]).unwrap();
    let server = Server::start(&data, &[("SHARDKIT_API_KEY", ADMIN)]);
    let mut con = server.redis();
    assert!(resp(&mut con, &["GET", "a:1"]).starts_with("NOAUTH"));
    // The key's name as the user name (Redis ACL style); another name is refused.
    let wrong = resp(&mut con, &["AUTH", "reader", &writer]);
    assert!(
        wrong.contains("WRONGPASS") || wrong.contains("invalid username-password"),
        "{wrong}"
    );
    assert_eq!(resp(&mut con, &["AUTH", "writer", &writer]), "OK");
    assert_eq!(resp(&mut con, &["INCR", "a:1"]), "1");
    assert_eq!(resp(&mut con, &["GET", "a:1"]), "1", "writers read too");
    assert_eq!(
        resp(&mut con, &["FLUSHALL"]),
        "NOPERM: User writer has no permissions to run the 'flushall' command"
    );
    assert!(resp(&mut con, &["ID.NEXT"]).starts_with("NOPERM"));
    // `AUTH key` alone, and `default` as the user name, take any key.
    assert_eq!(resp(&mut con, &["AUTH", &reader]), "OK");
    assert_eq!(resp(&mut con, &["GET", "a:1"]), "1");
    assert!(resp(&mut con, &["SCAN", "0"]).contains("a:1"));
    assert!(resp(&mut con, &["INCR", "a:1"]).starts_with("NOPERM"));
    assert!(resp(&mut con, &["HINCRBY", "a:1", "x", "1"]).starts_with("NOPERM"));
    assert!(resp(&mut con, &["CLIENT", "KILL", "ID", "1"]).starts_with("NOPERM"));
    assert_eq!(resp(&mut con, &["PING"]), "PONG");
    assert_eq!(resp(&mut con, &["AUTH", "default", &ids]), "OK");
    assert!(resp(&mut con, &["ID.NEXT"]).parse::<u64>().is_ok());
    assert!(resp(&mut con, &["GET", "a:1"]).starts_with("NOPERM"));
    // The admin key runs everything; the value was never changed by a refused command.
    assert_eq!(resp(&mut con, &["AUTH", ADMIN]), "OK");
    assert_eq!(resp(&mut con, &["GET", "a:1"]), "1");
    assert_eq!(resp(&mut con, &["FLUSHALL"]), "OK");
}

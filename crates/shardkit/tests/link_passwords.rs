//! Password-protected links and author-only keys, against the real server: the form,
//! right and wrong passwords, the click counted only on success, the attempt limit,
//! an export that does not leave a protected link open, and keys that see only the
//! links they made.

mod common;

use common::Server;
use reqwest::blocking::Client;
use serde_json::{json, Value};
use std::net::{IpAddr, Ipv4Addr};
use std::path::Path;

const ADMIN: &str = "admin-key-0123456789abcdef";

fn client_from(n: u8) -> Client {
    Client::builder()
        .local_address(IpAddr::V4(Ipv4Addr::new(127, 0, 0, n)))
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

fn clicks(c: &Client, server: &Server, code: &str) -> u64 {
    let view: Value = c
        .get(server.url(&format!("/api/links/{code}")))
        .bearer_auth(ADMIN)
        .send()
        .unwrap()
        .json()
        .unwrap();
    view["clicks"].as_u64().unwrap()
}

fn post_password(c: &Client, server: &Server, code: &str, password: &str) -> (u16, String) {
    let response = c
        .post(server.url(&format!("/{code}")))
        .header("accept", "text/html")
        .form(&[("password", password)])
        .send()
        .unwrap();
    let status = response.status().as_u16();
    let location = response
        .headers()
        .get("location")
        .map(|l| l.to_str().unwrap().to_string());
    let body = response.text().unwrap();
    (status, location.unwrap_or(body))
}

#[test]
fn a_password_link_asks_counts_only_the_right_password_and_limits_attempts() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[("SHARDKIT_API_KEY", ADMIN)]);
    let c = client_from(1);
    let created: Value = c
        .post(server.url("/api/links"))
        .bearer_auth(ADMIN)
        .json(&json!({ "url": "https://example.com/invoice/7", "password": "s3cret words" }))
        .send()
        .unwrap()
        .json()
        .unwrap();
    let code = created["code"].as_str().unwrap().to_string();
    assert_eq!(created["password"], true, "{created}");
    let text = created.to_string();
    assert!(
        !text.contains("argon2") && !text.contains("s3cret"),
        "{text}"
    );

    // The redirect answers the form (a browser) or 401 (an API client), no click.
    let form = c
        .get(server.url(&format!("/{code}")))
        .header("accept", "text/html")
        .send()
        .unwrap();
    assert_eq!(form.status().as_u16(), 200);
    let page = form.text().unwrap();
    assert!(page.contains("name=\"password\"") && page.contains(&format!("action=\"/{code}\"")));
    let api = c.get(server.url(&format!("/{code}"))).send().unwrap();
    assert_eq!(api.status().as_u16(), 401);
    assert_eq!(clicks(&c, &server, &code), 0);

    // Wrong: 401 and the form again, no click. Right: 303 to the target, one click.
    let (status, page) = post_password(&c, &server, &code, "wrong");
    assert_eq!(status, 401);
    assert!(page.contains("Wrong password"), "{page}");
    assert_eq!(clicks(&c, &server, &code), 0);
    let (status, location) = post_password(&c, &server, &code, "s3cret words");
    assert_eq!(
        (status, location.as_str()),
        (303, "https://example.com/invoice/7")
    );
    assert_eq!(clicks(&c, &server, &code), 1);
    let missing = c.post(server.url(&format!("/{code}"))).send().unwrap();
    assert_eq!(
        missing.status().as_u16(),
        401,
        "no password: the form again"
    );
    let stray = c
        .post(server.url(&format!("/{code}")))
        .body("nothing=here")
        .send()
        .unwrap();
    assert_eq!(stray.status().as_u16(), 400, "the form has one field");

    // Attempts from one address are limited (a burst of 10); another address is not.
    let mut limited = false;
    for _ in 0..12 {
        let (status, _) = post_password(&c, &server, &code, "guess");
        if status == 429 {
            limited = true;
            break;
        }
        assert_eq!(status, 401);
    }
    assert!(limited, "12 quick attempts were never limited");
    let other = client_from(2);
    let (status, _) = post_password(&other, &server, &code, "s3cret words");
    assert_eq!(status, 303);
    assert_eq!(clicks(&c, &server, &code), 2, "only right passwords count");

    // The export does not carry the password; importing the line needs one again.
    let export = c
        .get(server.url("/api/links/export"))
        .bearer_auth(ADMIN)
        .send()
        .unwrap()
        .text()
        .unwrap();
    assert!(export.contains("\"password_protected\":true"), "{export}");
    assert!(
        !export.contains("argon2") && !export.contains("s3cret"),
        "{export}"
    );
    let dir_b = tempfile::tempdir().unwrap();
    let b = Server::start(dir_b.path(), &[("SHARDKIT_API_KEY", ADMIN)]);
    let refused: Value = c
        .post(b.url("/api/links/bulk"))
        .bearer_auth(ADMIN)
        .header("content-type", "application/x-ndjson")
        .body(export.clone())
        .send()
        .unwrap()
        .json()
        .unwrap();
    assert_eq!(refused["created"], 0, "{refused}");
    assert!(refused.to_string().contains("give it one"), "{refused}");
    let mut line: Value = serde_json::from_str(export.lines().next().unwrap()).unwrap();
    line["password"] = json!("new words");
    let restored = c
        .post(b.url("/api/links/bulk"))
        .bearer_auth(ADMIN)
        .header("content-type", "application/x-ndjson")
        .body(format!("{line}\n"))
        .send()
        .unwrap();
    assert_eq!(restored.status().as_u16(), 200);
    let (status, _) = post_password(&c, &b, &code, "new words");
    assert_eq!(status, 303, "the restored link takes its new password");

    // PATCH with "" removes the password: the link redirects again.
    let patched = c
        .patch(server.url(&format!("/api/links/{code}")))
        .bearer_auth(ADMIN)
        .json(&json!({ "password": "" }))
        .send()
        .unwrap();
    assert_eq!(patched.status().as_u16(), 200);
    let open = other.get(server.url(&format!("/{code}"))).send().unwrap();
    assert_eq!(open.status().as_u16(), 302);
}

/// `shardkit keys ARGS --data DIR`, which must succeed: its stdout.
fn keys(data: &Path, args: &[&str]) -> String {
    common::keys_cli(data, args).unwrap()
}

#[test]
fn an_author_only_key_sees_only_the_links_it_made() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let mine = keys(
        &data,
        &[
            "add",
            "mine",
            "--role",
            "links:create",
            "--role",
            "links:read",
            "--author-only",
        ],
    );
    let all = keys(
        &data,
        &[
            "add",
            "all",
            "--role",
            "links:create",
            "--role",
            "links:read",
        ],
    );
    let listed = keys(&data, &["list"]);
    assert!(listed.contains("\"author_only\":true"), "{listed}");
    let server = Server::start(&data, &[]);
    let c = client_from(3);
    let create = |key: &str, url: &str| -> String {
        let v: Value = c
            .post(server.url("/api/links"))
            .bearer_auth(key)
            .json(&json!({ "url": url }))
            .send()
            .unwrap()
            .json()
            .unwrap();
        v["code"].as_str().unwrap().to_string()
    };
    let own = create(&mine, "https://example.com/mine");
    let theirs = create(&all, "https://example.com/theirs");
    let list = |key: &str| -> Vec<String> {
        let v: Value = c
            .get(server.url("/api/links?limit=1"))
            .bearer_auth(key)
            .send()
            .unwrap()
            .json()
            .unwrap();
        let mut codes: Vec<String> = v["links"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l["code"].as_str().unwrap().to_string())
            .collect();
        // Follow the cursor: an author-only list pages on past others' links.
        let mut cursor = v["next_cursor"].as_str().map(str::to_string);
        while let Some(next) = cursor {
            let v: Value = c
                .get(server.url(&format!("/api/links?limit=1&cursor={next}")))
                .bearer_auth(key)
                .send()
                .unwrap()
                .json()
                .unwrap();
            codes.extend(
                v["links"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|l| l["code"].as_str().unwrap().to_string()),
            );
            cursor = v["next_cursor"].as_str().map(str::to_string);
        }
        codes
    };
    assert_eq!(list(&mine), vec![own.clone()]);
    let mut everyone = list(&all);
    everyone.sort();
    let mut expected = vec![own.clone(), theirs.clone()];
    expected.sort();
    assert_eq!(everyone, expected);
    let status = |key: &str, code: &str| {
        c.get(server.url(&format!("/api/links/{code}")))
            .bearer_auth(key)
            .send()
            .unwrap()
            .status()
            .as_u16()
    };
    assert_eq!(status(&mine, &own), 200);
    assert_eq!(
        status(&mine, &theirs),
        404,
        "others' links do not exist for it"
    );
    assert_eq!(status(&all, &own), 200);
    // Stats: others' links are as unknown; the site-wide top holds only its own links,
    // and the other dimensions (over every link) are refused.
    let stats = |key: &str, path: &str| {
        c.get(server.url(path))
            .bearer_auth(key)
            .send()
            .unwrap()
            .status()
            .as_u16()
    };
    assert_eq!(stats(&mine, &format!("/api/links/{own}/stats")), 200);
    assert_eq!(stats(&mine, &format!("/api/links/{theirs}/stats")), 404);
    assert_eq!(stats(&mine, "/api/stats/top?by=referrer"), 403);
    assert_eq!(stats(&all, "/api/stats/top?by=referrer"), 200);
    for code in [&own, &theirs] {
        assert_eq!(
            c.get(server.url(&format!("/{code}")))
                .send()
                .unwrap()
                .status()
                .as_u16(),
            302
        );
    }
    let top = |key: &str| -> Vec<String> {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        loop {
            let v: Value = c
                .get(server.url("/api/stats/top?by=links"))
                .bearer_auth(key)
                .send()
                .unwrap()
                .json()
                .unwrap();
            let codes: Vec<String> = v["values"]
                .as_array()
                .unwrap()
                .iter()
                .map(|l| l["value"].as_str().unwrap().to_string())
                .collect();
            // The clicks reach the stats within click_flush_ms.
            if key == mine || codes.len() == 2 || std::time::Instant::now() > deadline {
                return codes;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    };
    let everyone = top(&all);
    assert_eq!(everyone.len(), 2, "{everyone:?}");
    assert_eq!(top(&mine), vec![own.clone()]);
    let export = c
        .get(server.url("/api/links/export"))
        .bearer_auth(&mine)
        .send()
        .unwrap()
        .text()
        .unwrap();
    assert!(
        export.contains(&own) && !export.contains(&theirs),
        "{export}"
    );
    let view: Value = c
        .get(server.url(&format!("/api/links/{own}")))
        .bearer_auth(&all)
        .send()
        .unwrap()
        .json()
        .unwrap();
    assert_eq!(view["author"], "mine");
}

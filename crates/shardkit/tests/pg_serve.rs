//! `shardkit serve --store postgres` (feature `sql`) against the machine's PostgreSQL:
//! a link created and followed through the real binary lives in the cluster's shards;
//! an unreachable server at start is named in the error.
#![cfg(feature = "sql")]

mod common;

use common::pg_db::{shard_schemas, Db};
use common::Server;
use reqwest::blocking::Client;
use serde_json::{json, Value};
use std::process::Command;

#[test]
fn serve_with_the_postgres_store_creates_and_follows_a_link() {
    let (a, b) = (Db::create("a"), Db::create("b"));
    let servers = format!("{},{}", a.url, b.url);
    let init = Command::new(env!("CARGO_BIN_EXE_shardkit"))
        .args(["pg", "init", "--servers", &servers, "--logical-shards", "4"])
        .output()
        .unwrap();
    assert!(
        init.status.success(),
        "{}",
        String::from_utf8_lossy(&init.stderr)
    );

    let dir = tempfile::tempdir().unwrap();
    let server = Server::try_start(
        dir.path(),
        &[
            "--http",
            "127.0.0.1:0",
            "--resp",
            "127.0.0.1:0",
            "--store",
            "postgres",
            "--servers",
            &servers,
        ],
        &[],
    )
    .unwrap();
    let client = Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let r = client
        .post(server.url("/api/links"))
        .json(&json!({ "url": "https://example.com/on-postgres" }))
        .send()
        .unwrap();
    assert_eq!(r.status().as_u16(), 201);
    let link: Value = r.json().unwrap();
    let code = link["code"].as_str().unwrap().to_string();

    let r = client.get(server.url(&format!("/{code}"))).send().unwrap();
    assert_eq!(r.status().as_u16(), 302);
    assert_eq!(r.headers()["location"], "https://example.com/on-postgres");
    let r = client
        .get(server.url(&format!("/api/links/{code}")))
        .send()
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);

    // Stored once, in PostgreSQL, on one of the two servers.
    assert_eq!(a.links_with_code(&code) + b.links_with_code(&code), 1);
    assert!(
        !dir.path().join("links.redb").exists(),
        "the embedded store was not used"
    );
}

#[test]
fn an_unreachable_server_at_start_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let err = Server::try_start(
        dir.path(),
        &[
            "--http",
            "127.0.0.1:0",
            "--resp",
            "127.0.0.1:0",
            "--store",
            "postgres",
            "--servers",
            "postgres://postgres:secret@127.0.0.1:1/nowhere",
        ],
        &[],
    )
    .err()
    .expect("the server must not start");
    assert!(
        err.contains("127.0.0.1:1/nowhere") && !err.contains("secret"),
        "{err}"
    );
}

/// The schemas on `db` holding a `links` row with `code` and a `link_aliases` row for `alias`.
fn schemas_holding(db: &Db, code: &str, alias: &str) -> (Vec<String>, Vec<String>) {
    common::pg_db::block_on(async {
        let client = shardkit_pg::connect::connect(&db.url).await.unwrap();
        let schemas = shard_schemas(&client).await;
        let (mut links, mut aliases) = (Vec::new(), Vec::new());
        for s in schemas {
            let n: i64 = client
                .query_one(
                    &format!("SELECT count(*) FROM {s}.links WHERE code = $1"),
                    &[&code],
                )
                .await
                .unwrap()
                .get(0);
            if n > 0 {
                links.push(s.clone());
            }
            let n: i64 = client
                .query_one(
                    &format!("SELECT count(*) FROM {s}.link_aliases WHERE alias = $1"),
                    &[&alias],
                )
                .await
                .unwrap()
                .get(0);
            if n > 0 {
                aliases.push(s);
            }
        }
        (links, aliases)
    })
}

#[test]
fn an_aliased_link_and_its_alias_share_one_shard() {
    let (a, b) = (Db::create("al_a"), Db::create("al_b"));
    let servers = format!("{},{}", a.url, b.url);
    let init = Command::new(env!("CARGO_BIN_EXE_shardkit"))
        .args([
            "pg",
            "init",
            "--servers",
            &servers,
            "--logical-shards",
            "16",
        ])
        .output()
        .unwrap();
    assert!(
        init.status.success(),
        "{}",
        String::from_utf8_lossy(&init.stderr)
    );
    let dir = tempfile::tempdir().unwrap();
    let server = Server::try_start(
        dir.path(),
        &[
            "--http",
            "127.0.0.1:0",
            "--resp",
            "127.0.0.1:0",
            "--store",
            "postgres",
            "--servers",
            &servers,
        ],
        &[],
    )
    .unwrap();
    let client = Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    for i in 0..8 {
        let alias = format!("team-page-{i}");
        let r = client
            .post(server.url("/api/links"))
            .json(&json!({ "url": format!("https://example.com/t/{i}"), "alias": alias }))
            .send()
            .unwrap();
        assert_eq!(r.status().as_u16(), 201);
        let code = r.json::<Value>().unwrap()["code"]
            .as_str()
            .unwrap()
            .to_string();
        let (la, aa) = schemas_holding(&a, &code, &alias);
        let (lb, ab) = schemas_holding(&b, &code, &alias);
        let (links, aliases) = (
            [la.clone(), lb.clone()].concat(),
            [aa.clone(), ab.clone()].concat(),
        );
        assert_eq!(links.len(), 1, "link {code} stored in {links:?}");
        assert_eq!(
            links, aliases,
            "alias {alias} is not beside its link {code}"
        );
        assert_eq!(
            la.is_empty(),
            aa.is_empty(),
            "link and alias on different servers"
        );
        let r = client.get(server.url(&format!("/{alias}"))).send().unwrap();
        assert_eq!(r.status().as_u16(), 302);
        assert_eq!(
            r.headers()["location"],
            format!("https://example.com/t/{i}").as_str()
        );
    }
}

#[test]
fn a_lost_server_fails_only_its_shards_with_503_and_is_used_again_when_back() {
    use common::tcp_proxy::TcpProxy;
    let (a, b) = (Db::create("lost_a"), Db::create("lost_b"));
    // Server B is reached through a loopback forwarder the test can cut.
    let mut proxy = TcpProxy::start("127.0.0.1:5432".parse().unwrap());
    let b_url = format!("postgres://postgres@127.0.0.1:{}/{}", proxy.port(), b.name);
    let servers = format!("{},{b_url}", a.url);
    let init = Command::new(env!("CARGO_BIN_EXE_shardkit"))
        .args(["pg", "init", "--servers", &servers, "--logical-shards", "4"])
        .output()
        .unwrap();
    assert!(
        init.status.success(),
        "{}",
        String::from_utf8_lossy(&init.stderr)
    );

    let dir = tempfile::tempdir().unwrap();
    let args = [
        "--http",
        "127.0.0.1:0",
        "--resp",
        "127.0.0.1:0",
        "--store",
        "postgres",
        "--servers",
        &servers,
    ];
    let client = Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(std::time::Duration::from_secs(30))
        .build()
        .unwrap();
    let mut codes = Vec::new();
    {
        let server = Server::try_start(dir.path(), &args, &[]).unwrap();
        for i in 0..24 {
            let r = client
                .post(server.url("/api/links"))
                .json(&json!({ "url": format!("https://example.com/lost/{i}") }))
                .send()
                .unwrap();
            assert_eq!(r.status().as_u16(), 201);
            codes.push(
                r.json::<Value>().unwrap()["code"]
                    .as_str()
                    .unwrap()
                    .to_string(),
            );
        }
    }
    let (on_a, on_b): (Vec<String>, Vec<String>) = codes
        .iter()
        .cloned()
        .partition(|c| a.links_with_code(c) == 1);
    assert!(
        !on_a.is_empty() && !on_b.is_empty(),
        "24 links should land on both servers: {on_a:?} {on_b:?}"
    );
    assert!(on_b.iter().all(|c| b.links_with_code(c) == 1));

    // A fresh server (empty redirect cache), then B is lost.
    let server = Server::try_start(dir.path(), &args, &[]).unwrap();
    proxy.kill();
    let b_name = format!("127.0.0.1:{}", proxy.port());
    for code in &on_a {
        let r = client.get(server.url(&format!("/{code}"))).send().unwrap();
        assert_eq!(
            r.status().as_u16(),
            302,
            "{code} lives on the server that is still up"
        );
    }
    for code in &on_b {
        let r = client.get(server.url(&format!("/{code}"))).send().unwrap();
        assert_eq!(r.status().as_u16(), 503, "{code} lives on the lost server");
        let body = r.text().unwrap();
        assert!(
            body.contains(&b_name),
            "the reason names the lost server: {body}"
        );
        let r = client
            .get(server.url(&format!("/api/links/{code}")))
            .send()
            .unwrap();
        assert_eq!(r.status().as_u16(), 503);
        let error: Value = r.json().unwrap();
        assert!(
            error["error"].as_str().unwrap().contains(&b_name),
            "{error}"
        );
    }
    // Creates that route to the live server still work; those for the lost one say why.
    let (mut created, mut refused) = (0, 0);
    for i in 0..16 {
        let r = client
            .post(server.url("/api/links"))
            .json(&json!({ "url": format!("https://example.com/while-lost/{i}") }))
            .send()
            .unwrap();
        match r.status().as_u16() {
            201 => {
                let code = r.json::<Value>().unwrap()["code"]
                    .as_str()
                    .unwrap()
                    .to_string();
                assert_eq!(a.links_with_code(&code), 1);
                created += 1;
            }
            503 => {
                assert!(r.text().unwrap().contains(&b_name));
                refused += 1;
            }
            other => panic!("create while a server is lost answered {other}"),
        }
    }
    assert!(
        created > 0 && refused > 0,
        "created {created}, refused {refused}"
    );
    assert_eq!(
        client
            .get(server.url("/healthz"))
            .send()
            .unwrap()
            .status()
            .as_u16(),
        200
    );

    // B comes back on the same address: its links redirect again.
    proxy.restart();
    for code in &on_b {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        loop {
            let status = client
                .get(server.url(&format!("/{code}")))
                .send()
                .unwrap()
                .status()
                .as_u16();
            if status == 302 {
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "{code} still answers {status} after the server came back"
            );
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
    }
}

#[test]
fn a_running_server_follows_a_shard_moved_by_the_cli() {
    let (a, b) = (Db::create("mv_a"), Db::create("mv_b"));
    let init = Command::new(env!("CARGO_BIN_EXE_shardkit"))
        .args(["pg", "init", "--servers", &a.url, "--logical-shards", "4"])
        .output()
        .unwrap();
    assert!(
        init.status.success(),
        "{}",
        String::from_utf8_lossy(&init.stderr)
    );
    let servers = format!("{},{}", a.url, b.url);
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "--http",
        "127.0.0.1:0",
        "--resp",
        "127.0.0.1:0",
        "--store",
        "postgres",
        "--servers",
        &servers,
    ];
    let client = Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let mut links = Vec::new();
    {
        let server = Server::try_start(dir.path(), &args, &[]).unwrap();
        for i in 0..16 {
            let url = format!("https://example.com/moved/{i}");
            let r = client
                .post(server.url("/api/links"))
                .json(&json!({ "url": url }))
                .send()
                .unwrap();
            assert_eq!(r.status().as_u16(), 201);
            links.push((
                r.json::<Value>().unwrap()["code"]
                    .as_str()
                    .unwrap()
                    .to_string(),
                url,
            ));
        }
    }
    // The shard of the first link moves while a fresh server (empty cache) is running.
    let group = shardkit_links::Codec::group_of_code(&links[0].0).unwrap();
    let shard = u32::from(group) % 4;
    let server = Server::try_start(dir.path(), &args, &[]).unwrap();
    let moved = Command::new(env!("CARGO_BIN_EXE_shardkit"))
        .args([
            "pg",
            "move-shard",
            &shard.to_string(),
            "--to",
            &b.url,
            "--servers",
            &a.url,
        ])
        .output()
        .unwrap();
    assert!(
        moved.status.success(),
        "{}",
        String::from_utf8_lossy(&moved.stderr)
    );
    assert_eq!(
        b.links_with_code(&links[0].0),
        1,
        "the link is on the new server"
    );
    assert_eq!(a.links_with_code(&links[0].0), 0, "the old copy is gone");
    for (code, url) in &links {
        let r = client.get(server.url(&format!("/{code}"))).send().unwrap();
        assert_eq!(r.status().as_u16(), 302, "{code} after the move");
        assert_eq!(r.headers()["location"], url.as_str());
    }
    // New links of the moved shard's groups are written to the new server.
    let r = client
        .post(server.url("/api/links"))
        .json(&json!({ "url": links[0].1.clone() + "?again" }))
        .send()
        .unwrap();
    assert_eq!(r.status().as_u16(), 201);
    let code = r.json::<Value>().unwrap()["code"]
        .as_str()
        .unwrap()
        .to_string();
    let on = |db: &Db| db.links_with_code(&code);
    let new_shard = u32::from(shardkit_links::Codec::group_of_code(&code).unwrap()) % 4;
    if new_shard == shard {
        assert_eq!((on(&a), on(&b)), (0, 1));
    } else {
        assert_eq!((on(&a), on(&b)), (1, 0));
    }
}

#[test]
fn two_servers_on_one_cluster_never_make_the_same_code_or_id() {
    let (a, b) = (Db::create("two_a"), Db::create("two_b"));
    let servers = format!("{},{}", a.url, b.url);
    let init = Command::new(env!("CARGO_BIN_EXE_shardkit"))
        .args(["pg", "init", "--servers", &servers, "--logical-shards", "8"])
        .output()
        .unwrap();
    assert!(
        init.status.success(),
        "{}",
        String::from_utf8_lossy(&init.stderr)
    );
    let (dir1, dir2) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let args = [
        "--http",
        "127.0.0.1:0",
        "--resp",
        "127.0.0.1:0",
        "--store",
        "postgres",
        "--servers",
        &servers,
    ];
    let one = Server::try_start(dir1.path(), &args, &[]).unwrap();
    let two = Server::try_start(dir2.path(), &args, &[]).unwrap();
    let create = |base: String, tag: &'static str| {
        std::thread::spawn(move || {
            let client = Client::new();
            let lines: String = (0..300)
                .map(|i| format!("{{\"url\":\"https://example.com/{tag}/{}\"}}\n", i % 50))
                .collect();
            let r = client
                .post(format!("{base}/api/links/bulk"))
                .header("content-type", "application/x-ndjson")
                .body(lines)
                .send()
                .unwrap();
            assert_eq!(r.status().as_u16(), 200, "{}", r.text().unwrap_or_default());
            let answer: Value = r.json().unwrap();
            assert_eq!(answer["failed"], 0, "{answer}");
            answer["results"].as_array().unwrap().clone()
        })
    };
    let (first, second) = (create(one.url(""), "one"), create(two.url(""), "two"));
    let links: Vec<Value> = [first.join().unwrap(), second.join().unwrap()].concat();
    assert_eq!(links.len(), 600);
    let codes: std::collections::HashSet<&str> = links
        .iter()
        .map(|l| l["code"].as_str().expect("every line created"))
        .collect();
    let ids: std::collections::HashSet<&str> =
        links.iter().map(|l| l["id"].as_str().unwrap()).collect();
    assert_eq!(codes.len(), 600, "a code was minted twice");
    assert_eq!(ids.len(), 600, "an id was made twice");
    // Each server follows the other's links.
    let client = Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    for link in links.iter().step_by(37) {
        for server in [&one, &two] {
            let r = client
                .get(server.url(&format!("/{}", link["code"].as_str().unwrap())))
                .send()
                .unwrap();
            assert_eq!(r.status().as_u16(), 302);
        }
    }
}

/// `shardkit keys … --postgres URL`.
fn cluster_keys(url: &str, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_shardkit"))
        .arg("keys")
        .args(args)
        .args(["--postgres", url])
        .env_remove("SHARDKIT_KEYS_POSTGRES")
        .output()
        .unwrap()
}

#[test]
fn keys_in_the_cluster_count_on_every_server_and_revoke_everywhere() {
    let (a, b) = (Db::create("keys_a"), Db::create("keys_b"));
    let servers = format!("{},{}", a.url, b.url);
    let init = Command::new(env!("CARGO_BIN_EXE_shardkit"))
        .args(["pg", "init", "--servers", &servers, "--logical-shards", "4"])
        .output()
        .unwrap();
    assert!(
        init.status.success(),
        "{}",
        String::from_utf8_lossy(&init.stderr)
    );
    let start = |dir: &std::path::Path| {
        Server::try_start(
            dir,
            &[
                "--http",
                "127.0.0.1:0",
                "--resp",
                "127.0.0.1:0",
                "--store",
                "postgres",
                "--servers",
                &servers,
            ],
            &[],
        )
        .unwrap()
    };
    let (dir1, dir2) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let one = start(dir1.path());
    let client = Client::new();
    let create = |server: &Server, key: Option<&str>| {
        let mut r = client
            .post(server.url("/api/links"))
            .json(&json!({ "url": "https://example.com/keyed" }));
        if let Some(key) = key {
            r = r.bearer_auth(key);
        }
        r.send().unwrap().status().as_u16()
    };
    // No key in the cluster yet: open, as without keys.json.
    assert_eq!(create(&one, None), 201);

    let added = cluster_keys(&a.url, &["add", "maker", "--role", "links:create"]);
    assert!(
        added.status.success(),
        "{}",
        String::from_utf8_lossy(&added.stderr)
    );
    let key = String::from_utf8(added.stdout).unwrap().trim().to_string();
    assert!(key.starts_with("shk_"));
    let listed = cluster_keys(&a.url, &["list"]);
    let listed = String::from_utf8(listed.stdout).unwrap();
    assert!(
        listed.contains("\"maker\"") && !listed.contains(&key[4..]),
        "{listed}"
    );
    assert!(
        !dir1.path().join("keys.json").exists(),
        "the key went to the cluster, not the data directory"
    );

    // A second server of the cluster takes the same key; both refuse a request without it
    // (the first within a second of the key appearing).
    let two = start(dir2.path());
    assert_eq!(create(&two, None), 401);
    assert_eq!(create(&two, Some(&key)), 201);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while create(&one, None) != 401 {
        assert!(
            std::time::Instant::now() < deadline,
            "server one never required the key"
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    assert_eq!(create(&one, Some(&key)), 201);

    // Revoked once, refused by both; a second add of the name is refused.
    let again = cluster_keys(&a.url, &["add", "maker", "--role", "ids"]);
    assert!(!again.status.success());
    assert!(String::from_utf8_lossy(&again.stderr).contains("exists already"));
    let revoked = cluster_keys(&a.url, &["revoke", "maker"]);
    assert!(
        revoked.status.success(),
        "{}",
        String::from_utf8_lossy(&revoked.stderr)
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while create(&one, Some(&key)) != 401 || create(&two, Some(&key)) != 401 {
        assert!(
            std::time::Instant::now() < deadline,
            "the revoked key still works"
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    assert_eq!(
        create(&two, None),
        401,
        "revoking the last key does not open the API"
    );
}

//! The PostgreSQL side of the command line given a node's settings file (feature
//! `sql`): `pg init` takes the file's `links.servers` (`SHARDKIT_PG_SERVERS` over it),
//! and `keys` on a `links.store = "postgres"` node's file keep the keys in the
//! cluster's table on the shard map's first server, where that node reads them.
#![cfg(feature = "sql")]

mod common;

use common::cli::{outcome, shardkit};
use common::pg_db::Db;
use common::Server;
use reqwest::blocking::Client;
use serde_json::json;
use std::path::Path;

/// Writes `toml` to `dir/NAME` and answers its path.
fn file(dir: &Path, name: &str, toml: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, toml).unwrap();
    path.to_str().unwrap().to_string()
}

#[test]
fn pg_init_takes_the_files_servers_and_the_environment_beats_them() {
    let db = Db::create("cfg_init");
    let dir = tempfile::tempdir().unwrap();
    let good = file(
        dir.path(),
        "good.toml",
        &format!("[links]\nservers = [{:?}]\n", db.url),
    );
    let init = |config: &str, env: &[(&str, &str)]| {
        outcome(&shardkit(
            &["pg", "init", "--logical-shards", "2", "--config", config],
            env,
        ))
    };
    let report: serde_json::Value = serde_json::from_str(&init(&good, &[]).unwrap()).unwrap();
    assert_eq!(report["new_cluster"], true);
    let unreachable = "postgres://postgres@127.0.0.1:1/nothing";
    let bad = file(
        dir.path(),
        "bad.toml",
        &format!("[links]\nservers = [{unreachable:?}]\n"),
    );
    assert!(init(&bad, &[]).is_err());
    let report: serde_json::Value =
        serde_json::from_str(&init(&bad, &[("SHARDKIT_PG_SERVERS", &db.url)]).unwrap()).unwrap();
    assert_eq!(report["new_cluster"], false);
    let err = init(&good, &[("SHARDKIT_PG_SERVERS", unreachable)]).unwrap_err();
    assert!(err.contains("127.0.0.1:1"), "{err}");

    let none = file(dir.path(), "none.toml", "");
    let err = init(&none, &[]).unwrap_err();
    assert!(
        err.contains("no PostgreSQL servers") && err.contains("links.servers"),
        "{err}"
    );
}

#[test]
fn keys_of_a_postgres_node_go_to_the_maps_first_server_which_the_node_reads() {
    let (a, b) = (Db::create("cfg_keys_a"), Db::create("cfg_keys_b"));
    let init = shardkit(
        &[
            "pg",
            "init",
            "--servers",
            &format!("{},{}", a.url, b.url),
            "--logical-shards",
            "4",
        ],
        &[],
    );
    assert!(init.status.success(), "{:?}", outcome(&init));
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    // The file lists the map's second server first: the keys still go to the first.
    let toml = format!(
        "data = {:?}\n[links]\nstore = \"postgres\"\nservers = [{:?}, {:?}]\n",
        data.to_str().unwrap(),
        b.url,
        a.url
    );
    let config = file(dir.path(), "node.toml", &toml);
    let key = outcome(&shardkit(
        &[
            "keys",
            "add",
            "maker",
            "--role",
            "links:create",
            "--config",
            &config,
        ],
        &[],
    ))
    .unwrap();
    assert!(key.starts_with("shk_"), "{key}");
    assert!(!data.join("keys.json").exists());
    let listed = |args: &[&str], env: &[(&str, &str)]| {
        outcome(&shardkit(&[&["keys", "list"], args].concat(), env)).unwrap()
    };
    assert!(listed(&["--postgres", &a.url], &[]).contains("\"maker\""));
    assert!(listed(&["--postgres", &b.url], &[]).is_empty());
    // The store and servers as `serve` reads them from its environment count too.
    let servers = format!("{},{}", b.url, a.url);
    let env = [
        ("SHARDKIT_STORE", "postgres"),
        ("SHARDKIT_PG_SERVERS", servers.as_str()),
    ];
    assert!(listed(&[], &env).contains("\"maker\""));
    // Without the store set anywhere, the keys are the data directory's.
    assert!(listed(&["--data", data.to_str().unwrap()], &[]).is_empty());

    let server = Server::start_with_config(dir.path(), &toml);
    let create = |key: Option<&str>| {
        let mut r = Client::new()
            .post(server.url("/api/links"))
            .json(&json!({ "url": "https://example.com/pg-configured" }));
        if let Some(key) = key {
            r = r.bearer_auth(key);
        }
        r.send().unwrap().status().as_u16()
    };
    assert_eq!(create(Some(&key)), 201);
    assert_eq!(create(None), 401);
}

#[test]
fn a_postgres_store_without_servers_is_an_error_naming_the_setting() {
    let dir = tempfile::tempdir().unwrap();
    let config = file(dir.path(), "node.toml", "[links]\nstore = \"postgres\"\n");
    let err = outcome(&shardkit(&["keys", "list", "--config", &config], &[])).unwrap_err();
    assert!(
        err.contains("links.store \"postgres\"") && err.contains("links.servers"),
        "{err}"
    );
}

//! `shardkit pg init` against the machine's PostgreSQL (feature `sql`): JSON report,
//! idempotence, a refused shard count, an unreachable server named, and ids made by
//! next_id() that `shardkit id decode --layout instagram` takes apart.
#![cfg(feature = "sql")]

mod common;

use common::pg_db::Db;
use std::process::{Command, Output};

fn shardkit(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_shardkit"))
        .args(args)
        .output()
        .expect("run shardkit")
}

#[test]
fn pg_init_then_decode_an_id_from_next_id() {
    let db = Db::create("cli");
    let out = shardkit(&["pg", "init", "--servers", &db.url, "--logical-shards", "4"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["logical_shards"], 4);
    assert_eq!(report["new_cluster"], true);
    assert_eq!(report["servers"][0]["created"], 4);

    let again = shardkit(&["pg", "init", "--servers", &db.url, "--logical-shards", "4"]);
    let report: serde_json::Value = serde_json::from_slice(&again.stdout).unwrap();
    assert_eq!(report["new_cluster"], false);
    assert_eq!(report["servers"][0]["created"], 0);

    let refused = shardkit(&["pg", "init", "--servers", &db.url, "--logical-shards", "8"]);
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.starts_with("shardkit: error: ") && stderr.contains("4 logical shards, not 8"),
        "{stderr}"
    );
    assert!(refused.stdout.is_empty());

    let id = db.query_i64("SELECT shard_0003.next_id()");
    let decoded = shardkit(&["id", "decode", "--layout", "instagram", &id.to_string()]);
    assert!(decoded.status.success());
    let decoded: serde_json::Value = serde_json::from_slice(&decoded.stdout).unwrap();
    assert_eq!(decoded["shard"], 3);
}

#[test]
fn pg_move_shard_switches_the_map() {
    let (a, b) = (Db::create("cli"), Db::create("cli"));
    assert!(
        shardkit(&["pg", "init", "--servers", &a.url, "--logical-shards", "2"])
            .status
            .success()
    );
    a.query_i64("WITH x AS (INSERT INTO shard_0001.links (code, url, url_hash) VALUES ('x', 'https://example.com/', 0) RETURNING id) SELECT id FROM x");
    let out = shardkit(&["pg", "move-shard", "1", "--to", &b.url, "--servers", &a.url]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["map_version"], 2);
    assert_eq!(report["rows"], 1);
    assert_eq!(b.query_i64("SELECT count(*) FROM shard_0001.links"), 1);
}

#[test]
fn pg_init_names_an_unreachable_server() {
    let out = shardkit(&[
        "pg",
        "init",
        "--servers",
        "postgres://postgres@127.0.0.1:1/none",
        "--logical-shards",
        "4",
    ]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("cannot connect to PostgreSQL server postgres://postgres@127.0.0.1:1/none"),
        "{stderr}"
    );
}

//! `shardkit pg init` against the machine's PostgreSQL (feature `sql`): JSON report,
//! idempotence, a refused shard count, an unreachable server named, and ids made by
//! next_id() that `shardkit id decode --layout instagram` takes apart.
#![cfg(feature = "sql")]

use std::process::{Command, Output};

fn shardkit(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_shardkit")).args(args).output().expect("run shardkit")
}

fn pg_url() -> String {
    std::env::var("SHARDKIT_PG_URL").unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".into())
}

/// A database of its own for this test, dropped at the end.
struct Db {
    name: String,
    url: String,
    rt: tokio::runtime::Runtime,
}

impl Db {
    fn create() -> Self {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let name = format!("sk_cli_{}_{}_{}", std::process::id(), N.fetch_add(1, std::sync::atomic::Ordering::Relaxed), std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos());
        rt.block_on(async {
            let admin = shardkit_pg::connect::connect(&pg_url()).await.unwrap();
            admin.batch_execute(&format!("CREATE DATABASE {name}")).await.unwrap();
        });
        let base = pg_url();
        let url = format!("{}/{name}", &base[..base.rfind('/').unwrap()]);
        Self { name, url, rt }
    }

    fn query_i64(&self, sql: &str) -> i64 {
        self.rt.block_on(async {
            let client = shardkit_pg::connect::connect(&self.url).await.unwrap();
            client.query_one(sql, &[]).await.unwrap().get(0)
        })
    }
}

impl Drop for Db {
    fn drop(&mut self) {
        let name = self.name.clone();
        self.rt.block_on(async {
            if let Ok(admin) = shardkit_pg::connect::connect(&pg_url()).await {
                let _ = admin.batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)")).await;
            }
        });
    }
}

#[test]
fn pg_init_then_decode_an_id_from_next_id() {
    let db = Db::create();
    let out = shardkit(&["pg", "init", "--servers", &db.url, "--logical-shards", "4"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
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
    assert!(stderr.starts_with("shardkit: error: ") && stderr.contains("4 logical shards, not 8"), "{stderr}");
    assert!(refused.stdout.is_empty());

    let id = db.query_i64("SELECT shard_0003.next_id()");
    let decoded = shardkit(&["id", "decode", "--layout", "instagram", &id.to_string()]);
    assert!(decoded.status.success());
    let decoded: serde_json::Value = serde_json::from_slice(&decoded.stdout).unwrap();
    assert_eq!(decoded["shard"], 3);
}

#[test]
fn pg_move_shard_switches_the_map() {
    let (a, b) = (Db::create(), Db::create());
    assert!(shardkit(&["pg", "init", "--servers", &a.url, "--logical-shards", "2"]).status.success());
    a.query_i64("WITH x AS (INSERT INTO shard_0001.links (code, url, url_hash) VALUES ('x', 'https://example.com/', 0) RETURNING id) SELECT id FROM x");
    let out = shardkit(&["pg", "move-shard", "1", "--to", &b.url, "--servers", &a.url]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["map_version"], 2);
    assert_eq!(report["rows"], 1);
    assert_eq!(b.query_i64("SELECT count(*) FROM shard_0001.links"), 1);
}

#[test]
fn pg_init_names_an_unreachable_server() {
    let out = shardkit(&["pg", "init", "--servers", "postgres://postgres@127.0.0.1:1/none", "--logical-shards", "4"]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("cannot connect to PostgreSQL server postgres://postgres@127.0.0.1:1/none"), "{stderr}");
}

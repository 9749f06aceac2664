//! `shardkit serve --store postgres` (feature `sql`) against the machine's PostgreSQL:
//! a link created and followed through the real binary lives in the cluster's shards;
//! an unreachable server at start is named in the error.
#![cfg(feature = "sql")]

mod common;

use common::Server;
use reqwest::blocking::Client;
use serde_json::{json, Value};
use std::process::Command;

fn pg_url() -> String {
    std::env::var("SHARDKIT_PG_URL").unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".into())
}

/// A database of its own for this test (one stand-in server), dropped at the end.
struct Db {
    name: String,
    url: String,
    rt: tokio::runtime::Runtime,
}

impl Db {
    fn create(tag: &str) -> Self {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos();
        let name = format!("sk_serve_{tag}_{}_{nanos}", std::process::id());
        rt.block_on(async {
            let admin = shardkit_pg::connect::connect(&pg_url()).await.unwrap();
            admin.batch_execute(&format!("CREATE DATABASE {name}")).await.unwrap();
        });
        let base = pg_url();
        let url = format!("{}/{name}", &base[..base.rfind('/').unwrap()]);
        Self { name, url, rt }
    }

    /// Links stored in every shard schema of this database whose code is `code`.
    fn links_with_code(&self, code: &str) -> i64 {
        self.rt.block_on(async {
            let client = shardkit_pg::connect::connect(&self.url).await.unwrap();
            let schemas: Vec<String> = client
                .query(r"SELECT nspname::text FROM pg_namespace WHERE nspname LIKE 'shard\_%'", &[])
                .await
                .unwrap()
                .iter()
                .map(|r| r.get(0))
                .collect();
            let mut n = 0;
            for s in schemas {
                let row = client.query_one(&format!("SELECT count(*) FROM {s}.links WHERE code = $1"), &[&code]).await.unwrap();
                n += row.get::<_, i64>(0);
            }
            n
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
fn serve_with_the_postgres_store_creates_and_follows_a_link() {
    let (a, b) = (Db::create("a"), Db::create("b"));
    let servers = format!("{},{}", a.url, b.url);
    let init = Command::new(env!("CARGO_BIN_EXE_shardkit")).args(["pg", "init", "--servers", &servers, "--logical-shards", "4"]).output().unwrap();
    assert!(init.status.success(), "{}", String::from_utf8_lossy(&init.stderr));

    let dir = tempfile::tempdir().unwrap();
    let server = Server::try_start(dir.path(), &["--http", "127.0.0.1:0", "--resp", "127.0.0.1:0", "--store", "postgres", "--servers", &servers], &[]).unwrap();
    let client = Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let r = client.post(server.url("/api/links")).json(&json!({ "url": "https://example.com/on-postgres" })).send().unwrap();
    assert_eq!(r.status().as_u16(), 201);
    let link: Value = r.json().unwrap();
    let code = link["code"].as_str().unwrap().to_string();

    let r = client.get(server.url(&format!("/{code}"))).send().unwrap();
    assert_eq!(r.status().as_u16(), 302);
    assert_eq!(r.headers()["location"], "https://example.com/on-postgres");
    let r = client.get(server.url(&format!("/api/links/{code}"))).send().unwrap();
    assert_eq!(r.status().as_u16(), 200);

    // Stored once, in PostgreSQL, on one of the two servers.
    assert_eq!(a.links_with_code(&code) + b.links_with_code(&code), 1);
    assert!(!dir.path().join("links.redb").exists(), "the embedded store was not used");
}

#[test]
fn an_unreachable_server_at_start_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let err = Server::try_start(
        dir.path(),
        &["--http", "127.0.0.1:0", "--resp", "127.0.0.1:0", "--store", "postgres", "--servers", "postgres://postgres:secret@127.0.0.1:1/nowhere"],
        &[],
    )
    .err()
    .expect("the server must not start");
    assert!(err.contains("127.0.0.1:1/nowhere") && !err.contains("secret"), "{err}");
}

//! The client matrix: the Redis clients people use, at pinned current versions and on
//! their defaults, against the real server: redis-py (sync RESP3 and RESP2, asyncio),
//! node-redis (RESP3, its default, and RESP2), ioredis, and the Rust `redis` crate
//! (multiplexed async connection). Each runs the same scenario (`tests/clients/`): the
//! counter commands, a refused decrement, an idempotent increment, exact ids, tickets,
//! SCAN, INFO, AUTH with a key, pipelines, and a server restart in the middle that the
//! same client object must ride out.
//!
//! The Python and Node clients come from `bash scripts/client-deps` (the test command
//! runs it); a missing client fails the test, never skips it.

mod common;

use common::Server;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const KEY: &str = "client-matrix-key-0123456789";

/// Where `scripts/client-deps` installs the clients.
fn clients_dir() -> PathBuf {
    std::env::var_os("SHARDKIT_CLIENTS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").expect("HOME")).join(".cache/shardkit/clients")
        })
}

fn scripts() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients")
}

fn start(data: &Path, resp: &str) -> Server {
    Server::try_start(
        data,
        &["--http", "127.0.0.1:0", "--resp", resp],
        &[("SHARDKIT_API_KEY", KEY)],
    )
    .expect("server starts")
}

/// Runs one client script against a fresh server, restarting the server (SIGTERM, same
/// port and data) when the script says RESTART; the script must end with `ok …`.
fn run_client(program: &str, args: &[&str], env: &[(&str, PathBuf)]) {
    let deps = clients_dir();
    assert!(
        deps.join("stamp").exists(),
        "the client matrix needs the pinned clients: run `bash scripts/client-deps` (the test command does)"
    );
    let dir = tempfile::tempdir().unwrap();
    let mut server = start(dir.path(), "127.0.0.1:0");
    let port = server.resp.port().to_string();
    let mut child = Command::new(program)
        .args(
            args.iter()
                .map(|a| a.replace("{port}", &port).replace("{key}", KEY)),
        )
        .envs(env.iter().map(|(k, v)| (*k, v.as_os_str())))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {program}: {e}"));
    let mut stdin = child.stdin.take();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    let deadline = Instant::now() + Duration::from_secs(180);
    let mut out = Vec::new();
    for line in stdout.lines().map_while(Result::ok) {
        assert!(Instant::now() < deadline, "the client ran past 180 s");
        if line == "RESTART" {
            assert!(server.terminate().success());
            server = start(dir.path(), &format!("127.0.0.1:{port}"));
            // One line, then end of input: nothing else is sent.
            let mut input = stdin.take().expect("one restart per run");
            writeln!(input, "go").unwrap();
        }
        out.push(line);
    }
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success() && out.last().is_some_and(|l| l.starts_with("ok ")),
        "{program} {args:?}: {}\nstdout: {out:?}\nstderr: {stderr}",
        output.status
    );
    drop(server);
}

fn python(mode: &str) {
    let python = clients_dir().join("venv/bin/python");
    run_client(
        python.to_str().unwrap(),
        &[
            scripts().join("matrix.py").to_str().unwrap(),
            "{port}",
            "{key}",
            mode,
        ],
        &[],
    );
}

fn node(script: &str, extra: &[&str]) {
    let mut args = vec![scripts().join(script).to_str().unwrap().to_string()];
    args.extend(["{port}".to_string(), "{key}".to_string()]);
    args.extend(extra.iter().map(|s| s.to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    run_client(
        "node",
        &args,
        &[("NODE_PATH", clients_dir().join("node/node_modules"))],
    );
}

#[test]
fn redis_py_sync_on_its_default_resp3() {
    python("sync3");
}

#[test]
fn redis_py_sync_resp2() {
    python("sync2");
}

#[test]
fn redis_py_asyncio_resp3() {
    python("async3");
}

#[test]
fn node_redis_on_its_default_resp3() {
    node("node_redis.js", &["3"]);
}

#[test]
fn node_redis_resp2() {
    node("node_redis.js", &["2"]);
}

#[test]
fn ioredis() {
    node("ioredis.js", &[]);
}

#[test]
fn rust_redis_crate_multiplexed_async() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path(), "127.0.0.1:0");
    let port = server.resp.port();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let server = runtime.block_on(async move {
        let bare = redis::Client::open(format!("redis://127.0.0.1:{port}/")).unwrap();
        let mut con = bare.get_multiplexed_async_connection().await.unwrap();
        let err = redis::cmd("INCR")
            .arg("rs:0")
            .query_async::<i64>(&mut con)
            .await
            .unwrap_err();
        assert_eq!(err.code(), Some("NOAUTH"), "{err}");

        let client = redis::Client::open(format!("redis://:{KEY}@127.0.0.1:{port}/")).unwrap();
        let mut con = client.get_multiplexed_async_connection().await.unwrap();
        let q = |args: &[&str]| {
            let mut c = redis::cmd(args[0]);
            for a in &args[1..] {
                c.arg(*a);
            }
            c
        };
        assert_eq!(
            q(&["INCR", "rs:1"])
                .query_async::<i64>(&mut con)
                .await
                .unwrap(),
            1
        );
        assert_eq!(
            q(&["INCRBY", "rs:1", "5"])
                .query_async::<i64>(&mut con)
                .await
                .unwrap(),
            6
        );
        assert_eq!(
            q(&["GET", "rs:1"])
                .query_async::<u64>(&mut con)
                .await
                .unwrap(),
            6
        );
        let m: Vec<Option<u64>> = q(&["MGET", "rs:1", "rs:2"])
            .query_async(&mut con)
            .await
            .unwrap();
        assert_eq!(m, [Some(6), Some(0)]);
        let h: i64 = q(&["HINCRBY", "hrs:1", "likes", "3"])
            .query_async(&mut con)
            .await
            .unwrap();
        assert_eq!(h, 3);
        assert_eq!(
            q(&["HGET", "hrs:1", "likes"])
                .query_async::<u64>(&mut con)
                .await
                .unwrap(),
            3
        );
        let hm: Vec<Option<u64>> = q(&["HMGET", "hrs:1", "likes", "nope"])
            .query_async(&mut con)
            .await
            .unwrap();
        assert_eq!(hm, [Some(3), None]);
        let all: std::collections::HashMap<String, u64> = q(&["HGETALL", "hrs:1"])
            .query_async(&mut con)
            .await
            .unwrap();
        assert_eq!(all, [("likes".to_string(), 3)].into());
        let refused = q(&["DECRBY", "rs:1", "100"])
            .query_async::<i64>(&mut con)
            .await;
        assert!(refused.unwrap_err().to_string().contains("below zero"));
        assert_eq!(
            q(&["GET", "rs:1"])
                .query_async::<u64>(&mut con)
                .await
                .unwrap(),
            6
        );
        for _ in 0..2 {
            let v: i64 = q(&["COUNTER.INCRBY", "hrs:1", "likes", "2", "tx-1"])
                .query_async(&mut con)
                .await
                .unwrap();
            assert_eq!(v, 5, "counted once");
        }
        let ids: Vec<u64> = q(&["ID.NEXT", "5", "2"])
            .query_async(&mut con)
            .await
            .unwrap();
        assert!(ids[0] < ids[1] && ids[0] > 1 << 53);
        let t: u64 = q(&["TICKET.NEXT", "trs"])
            .query_async(&mut con)
            .await
            .unwrap();
        assert_eq!(t, 1);
        let mut pipe = redis::pipe();
        for i in 0..50 {
            pipe.cmd("INCR").arg(format!("srs:{i}")).ignore();
        }
        let () = pipe.query_async(&mut con).await.unwrap();
        let mut found = std::collections::BTreeSet::new();
        let mut cursor: u64 = 0;
        loop {
            let (next, keys): (u64, Vec<String>) = redis::cmd("SCAN")
                .arg(cursor)
                .arg("MATCH")
                .arg("srs:*")
                .arg("COUNT")
                .arg(10)
                .query_async(&mut con)
                .await
                .unwrap();
            found.extend(keys);
            if next == 0 {
                break;
            }
            cursor = next;
        }
        assert_eq!(found.len(), 50);
        let info: String = q(&["INFO"]).query_async(&mut con).await.unwrap();
        assert!(info.contains("redis_version"));
        let mut pipe = redis::pipe();
        for _ in 0..1000 {
            pipe.cmd("INCR").arg("prs:1");
        }
        let replies: Vec<i64> = pipe.query_async(&mut con).await.unwrap();
        assert_eq!(replies, (1..=1000).collect::<Vec<i64>>());
        // Many tasks on one multiplexed connection.
        let tasks: Vec<_> = (0..20)
            .map(|_| {
                let mut con = con.clone();
                tokio::spawn(async move {
                    for _ in 0..50 {
                        let _: i64 = redis::cmd("INCR")
                            .arg("trs:1")
                            .query_async(&mut con)
                            .await
                            .unwrap();
                    }
                })
            })
            .collect();
        for t in tasks {
            t.await.unwrap();
        }
        assert_eq!(
            q(&["GET", "trs:1"])
                .query_async::<u64>(&mut con)
                .await
                .unwrap(),
            1000
        );

        // A restart under a connection manager: it reconnects by itself.
        let mut manager = client.get_connection_manager().await.unwrap();
        let v: i64 = redis::cmd("INCR")
            .arg("rrs:1")
            .query_async(&mut manager)
            .await
            .unwrap();
        assert_eq!(v, 1);
        (server, manager)
    });
    let (server, mut manager) = server;
    assert!(server.terminate().success());
    let _server = start(dir.path(), &format!("127.0.0.1:{port}"));
    runtime.block_on(async move {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            match redis::cmd("INCR")
                .arg("rrs:1")
                .query_async::<i64>(&mut manager)
                .await
            {
                Ok(v) => {
                    assert_eq!(v, 2, "the value survived the restart");
                    break;
                }
                Err(e) => {
                    assert!(Instant::now() < deadline, "no reconnect within 20 s: {e}");
                    tokio::time::sleep(Duration::from_millis(250)).await;
                }
            }
        }
    });
}

//! Backup and restore as docs/deploy.md tells an operator to do them, run for real.
//! The local log: stop the node (SIGTERM: it drains and snapshots), copy its whole data
//! directory, start a node on the copy elsewhere: the counters, links, tickets, API keys
//! and the ids' time guard come back. The JetStream log: stop the NATS server, copy its
//! store directory, start a NATS server on the copy and a node with an empty data
//! directory on it: the counters come back from the stream and snapshots alone.

mod common;

use common::Server;
use std::path::Path;
use std::process::Command;

const KEY: &str = "backup-admin-key-0123456789";

/// `cp -a FROM TO`, as an operator copies a stopped node's directory.
fn copy(from: &Path, to: &Path) {
    let status = Command::new("cp")
        .arg("-a")
        .arg(from)
        .arg(to)
        .status()
        .unwrap();
    assert!(
        status.success(),
        "cp -a {} {}",
        from.display(),
        to.display()
    );
}

fn incr(con: &mut redis::Connection, key: &str, by: i64) -> i64 {
    redis::cmd("INCRBY").arg(key).arg(by).query(con).unwrap()
}

fn get(con: &mut redis::Connection, key: &str) -> Option<i64> {
    redis::cmd("GET").arg(key).query(con).unwrap()
}

fn authed(server: &Server) -> redis::Connection {
    let mut con = server.redis();
    let () = redis::cmd("AUTH").arg(KEY).query(&mut con).unwrap();
    con
}

#[test]
fn a_stopped_nodes_copied_directory_restores_everything() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let server = Server::start(&data, &[("SHARDKIT_API_KEY", KEY)]);
    let mut con = authed(&server);
    for i in 0..100 {
        incr(&mut con, &format!("bk:{i}:hits"), i + 1);
    }
    let ticket: i64 = redis::cmd("TICKET.NEXT")
        .arg("orders")
        .query(&mut con)
        .unwrap();
    let http = reqwest::blocking::Client::new();
    let link: serde_json::Value = http
        .post(server.url("/api/links"))
        .bearer_auth(KEY)
        .json(&serde_json::json!({ "url": "https://example.com/backed-up" }))
        .send()
        .unwrap()
        .json()
        .unwrap();
    let code = link["code"].as_str().unwrap().to_string();
    let key = common::keys_cli(&data, &["add", "reader", "--role", "counters:read"]).unwrap();
    let key = key.lines().last().unwrap().trim().to_string();
    drop(con);
    assert!(server.terminate().success(), "the node stops cleanly");

    // The backup, then the restore on another path (another machine, say).
    let restored = dir.path().join("restored");
    copy(&data, &restored);
    let server = Server::start(&restored, &[("SHARDKIT_API_KEY", KEY)]);
    let mut con = authed(&server);
    for i in 0..100 {
        assert_eq!(
            get(&mut con, &format!("bk:{i}:hits")),
            Some(i + 1),
            "bk:{i}"
        );
    }
    let next: i64 = redis::cmd("TICKET.NEXT")
        .arg("orders")
        .query(&mut con)
        .unwrap();
    assert!(
        next > ticket,
        "the ticket sequence goes on: {ticket} then {next}"
    );
    let r = common::link_client()
        .get(server.url(&format!("/{code}")))
        .send()
        .unwrap();
    assert_eq!(r.status().as_u16(), 302);
    assert_eq!(r.headers()["location"], "https://example.com/backed-up");
    let mut reader = server.redis();
    let () = redis::cmd("AUTH")
        .arg("reader")
        .arg(&key)
        .query(&mut reader)
        .unwrap_or_else(|e| panic!("the copied key works: {e}"));
    assert_eq!(get(&mut reader, "bk:7:hits"), Some(8));
}

#[cfg(feature = "nats")]
#[test]
fn a_stopped_nats_servers_copied_store_restores_the_counters() {
    use common::nats::Nats;
    use common::replication::{eventually, node, role};
    let mut nats = Nats::start();
    let dir = tempfile::tempdir().unwrap();
    let server = node(&dir.path().join("first"), &nats, "auto", 1000);
    eventually(20, "the node leads", || {
        role(&server).as_deref() == Some("master")
    });
    let mut con = server.redis();
    for i in 0..200 {
        incr(&mut con, &format!("js:{}:hits", i % 20), 1);
    }
    drop(con);
    assert!(server.terminate().success());
    // The backup: the stopped server's store directory, copied whole.
    let store = nats.stop().to_path_buf();
    let copied = tempfile::tempdir().unwrap();
    copy(&store.join("."), copied.path());
    drop(nats);
    // The restore: a NATS server on the copy, and a node with nothing on disk.
    let restored = Nats::start_on_store(copied);
    let server = node(&dir.path().join("fresh"), &restored, "auto", 1000);
    eventually(20, "the new node leads", || {
        role(&server).as_deref() == Some("master")
    });
    let mut con = server.redis();
    for k in 0..20 {
        assert_eq!(get(&mut con, &format!("js:{k}:hits")), Some(10), "js:{k}");
    }
}

//! Ids from every node that shares a counter store on NATS: each node issues from the
//! id shard blocks it leases, a paused node's lease lapses and another node takes its
//! block, and across all of it no id is issued twice (feature `nats`; a private
//! `nats-server` on loopback).
#![cfg(feature = "nats")]

mod common;

use common::nats::Nats;
use common::replication::{eventually, node_with, role, signal, NatsUrl};
use common::tcp_proxy::TcpProxy;
use common::Server;
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const LEASE_MS: u64 = 1_000;

/// How long the nodes issue ids (the issue asks for a minute; `SHARDKIT_ID_SOAK_SECS`
/// shortens or lengthens it).
fn soak() -> Duration {
    let secs = std::env::var("SHARDKIT_ID_SOAK_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(60);
    Duration::from_secs(secs)
}

/// The logical shard of an id of the default (Instagram) layout.
fn shard_of(id: u64) -> u64 {
    (id >> 10) & 8191
}

/// What one node answered: ids in the order issued, and the errors.
#[derive(Default)]
struct Issued {
    ids: Vec<u64>,
    errors: Vec<String>,
    /// Connections given up (a timeout or a broken connection).
    dropped: usize,
}

/// A connection that waits out a paused node: the request in flight when the node
/// stopped is answered when it wakes, and that answer is recorded (a client that gave
/// up would never see ids the node issued then).
fn patient(addr: std::net::SocketAddr) -> Option<redis::Connection> {
    let client = redis::Client::open(format!("redis://{addr}/")).ok()?;
    let con = client
        .get_connection_with_timeout(Duration::from_millis(500))
        .ok()?;
    con.set_read_timeout(Some(Duration::from_secs(30))).ok()?;
    Some(con)
}

/// Asks `addr` for 20 ids at a time until `stop`, about 200 times a second.
fn issue(addr: std::net::SocketAddr, stop: Arc<AtomicBool>, into: Arc<Mutex<Issued>>) {
    let mut con = None;
    while !stop.load(Ordering::Relaxed) {
        if con.is_none() {
            con = patient(addr);
        }
        let Some(c) = con.as_mut() else {
            std::thread::sleep(Duration::from_millis(50));
            continue;
        };
        // 20 at a time, each a reply of its own (an error does not hide the others).
        let mut pipe = redis::pipe();
        for _ in 0..20 {
            pipe.cmd("ID.NEXT");
        }
        match pipe.query::<Vec<redis::Value>>(c) {
            Ok(replies) => {
                let mut got = into.lock().unwrap();
                for reply in replies {
                    match reply {
                        redis::Value::BulkString(id) => got
                            .ids
                            .push(String::from_utf8(id).unwrap().parse().unwrap()),
                        other => got.errors.push(format!("{other:?}")),
                    }
                }
            }
            Err(e) if e.is_io_error() || e.is_timeout() => {
                into.lock().unwrap().dropped += 1;
                con = None
            }
            Err(e) => into.lock().unwrap().errors.push(e.to_string()),
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Node 1 reaches NATS through a proxy the test can cut; every other node directly.
struct Urls {
    direct: String,
    proxied: String,
}

impl NatsUrl for Urls {
    fn url_for(&self, node: usize) -> String {
        if node == 1 {
            self.proxied.clone()
        } else {
            self.direct.clone()
        }
    }
}

/// The block of ids `node` issued, when it issued from one only.
fn only_block(issued: &Mutex<Issued>) -> u64 {
    let blocks: HashSet<u64> = issued
        .lock()
        .unwrap()
        .ids
        .iter()
        .map(|&id| shard_of(id) / 128)
        .collect();
    assert_eq!(blocks.len(), 1, "one block so far: {blocks:?}");
    *blocks.iter().next().unwrap()
}

#[test]
fn no_id_is_issued_twice_across_nodes_and_lapsed_leases() {
    let nats = Nats::start();
    let nats_addr: std::net::SocketAddr = nats.url.trim_start_matches("nats://").parse().unwrap();
    let mut proxy = TcpProxy::start(nats_addr);
    let urls = Urls {
        direct: nats.url.clone(),
        proxied: format!("nats://127.0.0.1:{}", proxy.port()),
    };
    let dirs: Vec<_> = (0..5).map(|_| tempfile::tempdir().unwrap()).collect();
    let start = |i: usize| -> Server { node_with(dirs[i].path(), &urls, i, "auto", LEASE_MS, &[]) };
    // Node 0 leads the counters (a leader cut off or paused is deposed and exits, by
    // design; the faults below hit replicas).
    let mut nodes: Vec<Server> = vec![start(0)];
    eventually(20, "node 0 leads", || {
        role(&nodes[0]).as_deref() == Some("master")
    });
    nodes.push(start(1));
    nodes.push(start(2));
    let stop = Arc::new(AtomicBool::new(false));
    let issued: Vec<Arc<Mutex<Issued>>> = (0..5).map(|_| Arc::default()).collect();
    let mut threads = Vec::new();
    let mut load = |n: &Server, i: usize| {
        let (addr, stop, into) = (n.resp, Arc::clone(&stop), Arc::clone(&issued[i]));
        threads.push(std::thread::spawn(move || issue(addr, stop, into)));
        eventually(20, "the node issues ids", || {
            !issued[i].lock().unwrap().ids.is_empty()
        });
    };
    for (i, n) in nodes.iter().enumerate() {
        load(n, i);
    }
    let began = Instant::now();
    let lapse = Duration::from_millis(LEASE_MS * 3 / 2);
    let mut handed = Vec::new();

    // Fault 1: node 1 loses NATS for a lease and a half. Its renewals fail, so only its
    // own clock stops it issuing; node 3, started meanwhile, takes the lowest free
    // block, which is node 1's.
    std::thread::sleep(soak() / 3);
    handed.push((1, 3, only_block(&issued[1])));
    proxy.kill();
    std::thread::sleep(lapse);
    nodes.push(start(3));
    load(&nodes[3], 3);
    proxy.restart();

    // Fault 2: node 2 is paused (SIGSTOP) for a lease and a half; node 4 takes its block.
    std::thread::sleep(soak() / 3);
    handed.push((2, 4, only_block(&issued[2])));
    signal(&nodes[2], "-STOP");
    std::thread::sleep(lapse);
    nodes.push(start(4));
    load(&nodes[4], 4);
    signal(&nodes[2], "-CONT");

    std::thread::sleep(
        soak()
            .saturating_sub(began.elapsed())
            .max(Duration::from_secs(3)),
    );
    stop.store(true, Ordering::Relaxed);
    for t in threads {
        t.join().unwrap();
    }
    let issued: Vec<Issued> = issued
        .into_iter()
        .map(|m| std::mem::take(&mut *m.lock().unwrap()))
        .collect();

    let mut seen = HashSet::new();
    for (i, node) in issued.iter().enumerate() {
        for &id in &node.ids {
            assert!(seen.insert(id), "id {id} issued twice (node {i})");
        }
    }
    for (old, new, block) in handed {
        let of = |i: usize| {
            issued[i]
                .ids
                .iter()
                .copied()
                .filter(move |&id| shard_of(id) / 128 == block)
        };
        // The new node took the lapsed block: the same shards from two nodes, one after
        // the other (ids sort by time): every id of the old holder's precedes the new's.
        let (last_old, first_new) = (of(old).max(), of(new).min());
        assert!(
            first_new.is_some(),
            "node {new} took node {old}'s lapsed block {block}"
        );
        assert!(
            last_old < first_new,
            "block {block}: node {old} issued {last_old:?} after node {new}'s first {first_new:?}"
        );
        // The old holder went on with another block once it was back.
        let blocks: HashSet<u64> = issued[old]
            .ids
            .iter()
            .map(|&id| shard_of(id) / 128)
            .collect();
        assert!(
            blocks.len() >= 2,
            "node {old} took a new block after its lease lapsed: {blocks:?}"
        );
        // Whatever it refused, it refused for its lease, saying so.
        for e in &issued[old].errors {
            assert!(e.contains("lease"), "{e}");
        }
        eprintln!(
            "node {old}: {} ids, {} refused while its lease was lapsed or new, e.g. {:?}",
            issued[old].ids.len(),
            issued[old].errors.len(),
            issued[old].errors.first()
        );
    }
    eprintln!("{} ids from 5 nodes, none twice", seen.len());
    drop(nodes);
}

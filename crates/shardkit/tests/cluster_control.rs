//! The cluster's control plane against a private `nats-server -js`: node records that
//! lapse, the slot map stored by compare-and-set, and `shardkit cluster
//! status|rebalance|add-node|remove-node` (the real binary) planning the fewest moves.
//!
//! The nodes here are records written through the library (as a node's heartbeat writes
//! them), so the planner is tested on its own.

#![cfg(feature = "nats")]

mod common;

use common::nats::Nats;
use serde_json::Value;
use shardkit_node::cluster::nats::map_store::{MapStore, StoreError};
use shardkit_node::cluster::nats::registry::{NodeRecord, Registry};
use shardkit_node::cluster::planner;
use std::process::Command;
use std::time::{Duration, Instant};

fn record(i: u8) -> NodeRecord {
    NodeRecord {
        id: format!("{i:040x}"),
        announce: format!("127.0.0.1:{}", 7000 + u16::from(i)),
        http: format!("127.0.0.1:{}", 8000 + u16::from(i)),
        started_ms: 1,
        following: Vec::new(),
    }
}

/// Nodes that keep their records alive until dropped.
struct Fleet {
    runtime: tokio::runtime::Runtime,
    registry: Registry,
    maps: MapStore,
    beats: Vec<(String, tokio::task::JoinHandle<()>)>,
}

impl Fleet {
    fn new(nats: &Nats, cluster: &str) -> Fleet {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let (registry, maps) = runtime.block_on(async {
            let js = shardkit_node::cluster::nats::connect(
                &shardkit_node::nats_settings::NatsSettings::servers(&nats.url),
                "test",
            )
            .await
            .unwrap();
            (
                Registry::open(&js, cluster, 1).await.unwrap(),
                MapStore::open(&js, cluster, 1).await.unwrap(),
            )
        });
        Fleet {
            runtime,
            registry,
            maps,
            beats: Vec::new(),
        }
    }

    fn start(&mut self, i: u8) {
        let rec = record(i);
        self.runtime.block_on(self.registry.announce(&rec)).unwrap();
        let beat = self.runtime.spawn(self.registry.clone().run(rec.clone()));
        self.beats.push((rec.id, beat));
    }

    /// Stops node `i`'s heartbeat (as a crash would): its record lapses.
    fn stop(&mut self, i: u8) {
        let id = record(i).id;
        let at = self.beats.iter().position(|(b, _)| *b == id).unwrap();
        self.beats.remove(at).1.abort();
    }
}

fn cli(nats: &Nats, cluster: &str, args: &[&str]) -> Result<Value, String> {
    let output = Command::new(env!("CARGO_BIN_EXE_shardkit"))
        .arg("cluster")
        .args(args)
        .args(["--nats", &nats.url, "--cluster", cluster])
        // The nodes here are records only: none follows a group.
        .args(if args[0] == "status" {
            &[][..]
        } else {
            &["--follow-wait-ms", "0"][..]
        })
        .output()
        .unwrap();
    if output.status.success() {
        Ok(serde_json::from_slice(&output.stdout).unwrap())
    } else {
        Err(String::from_utf8_lossy(&output.stderr).into_owned())
    }
}

/// Groups each node owns, by announced port, from `status`.
fn owned(status: &Value) -> Vec<(u64, u64)> {
    status["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|n| n["in_map"] == true)
        .map(|n| {
            let port = n["announce"].as_str().unwrap().rsplit(':').next().unwrap();
            (port.parse().unwrap(), n["owns_groups"].as_u64().unwrap())
        })
        .collect()
}

#[test]
fn groups_are_placed_then_a_fourth_node_takes_a_quarter_and_a_removed_one_gives_its_away() {
    let nats = Nats::start();
    let mut fleet = Fleet::new(&nats, "t1");
    for i in 1..=3 {
        fleet.start(i);
    }
    let before = cli(&nats, "t1", &["status"]).unwrap();
    assert_eq!(before["state"], "fail", "no map yet: {before}");
    assert_eq!(before["version"], 0);

    let first = cli(&nats, "t1", &["rebalance"]).unwrap();
    assert_eq!(first["moved_groups"], 64, "{first}");
    assert_eq!(first["from_version"], 0);
    let v1 = first["version"].as_u64().unwrap();
    assert!(v1 > 0);
    let status = cli(&nats, "t1", &["status"]).unwrap();
    assert_eq!(status["state"], "ok", "{status}");
    assert_eq!(status["version"].as_u64().unwrap(), v1);
    let mut counts: Vec<u64> = owned(&status).iter().map(|(_, n)| *n).collect();
    counts.sort_unstable();
    assert_eq!(counts, [21, 21, 22]);

    fleet.start(4);
    let dry = cli(&nats, "t1", &["add-node", "127.0.0.1:7004", "--dry-run"]).unwrap();
    assert_eq!(dry["applied"], false);
    assert_eq!(
        cli(&nats, "t1", &["status"]).unwrap()["version"].as_u64(),
        Some(v1),
        "a dry run stores nothing"
    );
    let added = cli(&nats, "t1", &["add-node", "127.0.0.1:7004"]).unwrap();
    assert_eq!(added["moved_groups"], 16, "a quarter of 64: {added}");
    let four = record(4).id;
    assert!(added["moves"]
        .as_array()
        .unwrap()
        .iter()
        .all(|m| m["to"] == four.as_str()));
    let v2 = added["version"].as_u64().unwrap();
    assert!(v2 > v1, "the version goes up");
    let status = cli(&nats, "t1", &["status"]).unwrap();
    assert!(owned(&status).iter().all(|(_, n)| *n == 16), "{status}");

    let again = cli(&nats, "t1", &["rebalance"]).unwrap();
    assert_eq!(again["moved_groups"], 0, "balanced already: {again}");

    let two = record(2).id;
    let removed = cli(&nats, "t1", &["remove-node", &two]).unwrap();
    assert_eq!(removed["moved_groups"], 16, "{removed}");
    assert!(removed["moves"]
        .as_array()
        .unwrap()
        .iter()
        .all(|m| m["from"] == two.as_str()));
    let status = cli(&nats, "t1", &["status"]).unwrap();
    assert_eq!(owned(&status).len(), 3, "{status}");
    assert!(owned(&status).iter().all(|(_, n)| (21..=22).contains(n)));

    // Clear errors, nothing stored.
    let err = cli(&nats, "t1", &["add-node", "127.0.0.1:9"]).unwrap_err();
    assert!(err.contains("no live node"), "{err}");
    let err = cli(&nats, "t1", &["add-node", "127.0.0.1:7001"]).unwrap_err();
    assert!(err.contains("in the map already"), "{err}");
    let err = cli(&nats, "t1", &["rebalance", "--groups", "128"]).unwrap_err();
    assert!(err.contains("fixed when the map is first written"), "{err}");
    let err = cli(&nats, "bad name", &["status"]).unwrap_err();
    assert!(err.contains("cluster.name"), "{err}");
}

#[test]
fn a_node_that_stops_renewing_drops_out_and_a_rebalance_moves_only_its_groups() {
    let nats = Nats::start();
    let mut fleet = Fleet::new(&nats, "t2");
    for i in 1..=3 {
        fleet.start(i);
    }
    cli(&nats, "t2", &["rebalance"]).unwrap();
    fleet.stop(3);
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        let status = cli(&nats, "t2", &["status"]).unwrap();
        if status["state"] == "fail" {
            break status;
        }
        assert!(Instant::now() < deadline, "node 3 never lapsed: {status}");
        std::thread::sleep(Duration::from_millis(250));
    };
    let orphans = status["groups_without_live_owner"]
        .as_array()
        .unwrap()
        .len();
    assert!((21..=22).contains(&orphans), "{status}");
    let three = record(3).id;
    let node3 = status["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["id"] == three.as_str())
        .unwrap();
    assert_eq!(node3["live"], false);

    let moved = cli(&nats, "t2", &["rebalance"]).unwrap();
    assert_eq!(moved["moved_groups"].as_u64().unwrap() as usize, orphans);
    let status = cli(&nats, "t2", &["status"]).unwrap();
    assert_eq!(status["state"], "ok", "{status}");
    assert_eq!(owned(&status).len(), 2);
}

#[test]
fn two_planners_cannot_both_store_a_map() {
    let nats = Nats::start();
    let mut fleet = Fleet::new(&nats, "t3");
    for i in 1..=2 {
        fleet.start(i);
    }
    let nodes: Vec<_> = (1..=2).map(|i| record(i).info().unwrap()).collect();
    let maps = fleet.maps.clone();
    fleet.runtime.block_on(async move {
        let first = planner::plan(None, &nodes, 64, 1).unwrap();
        let v1 = maps.store(&first.map, 0).await.unwrap();
        // A second "first map" is refused: the bucket has one.
        match maps.store(&first.map, 0).await {
            Err(StoreError::Changed {
                planned_from: 0,
                now,
            }) => assert_eq!(now, v1),
            other => panic!("a second first map was not refused: {other:?}"),
        }
        let stored = maps.load().await.unwrap().unwrap();
        assert_eq!(stored.version, v1);
        let a = planner::plan(Some(&stored), &nodes[..1], 64, 1).unwrap();
        let b = planner::plan(Some(&stored), &nodes[1..], 64, 1).unwrap();
        let va = maps.store(&a.map, a.from_version).await.unwrap();
        match maps.store(&b.map, b.from_version).await {
            Err(e @ StoreError::Changed { .. }) => {
                assert!(e.to_string().contains("plan again"), "{e}");
            }
            other => panic!("the second planner won too: {other:?}"),
        }
        let now = maps.load().await.unwrap().unwrap();
        assert_eq!(now.version, va);
        assert_eq!(now.owner, a.map.owner, "the winner's map is the one stored");
    });
}

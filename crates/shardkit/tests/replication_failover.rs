//! Failover of three counter nodes (role `auto`) under load, end to end: real `shardkit
//! serve` processes, clients that retry an unacknowledged increment with its txid on
//! whichever node leads, and a fault in the middle: the leader SIGKILLed (one private
//! `nats-server`), or one NATS server of a three-server cluster SIGKILLed (stream
//! replicas 3). Every acknowledged increment must be on every surviving node, none
//! counted twice.

#![cfg(feature = "nats")]

mod common;

use common::nats::Nats;
use common::nats_cluster::NatsCluster;
use common::raw_resp::{RawClient, Reply};
use common::replication::{
    eventually, failover_time, kill, load_total, node_with, role, Ack, Load, LogsOnFailure, NatsUrl,
};
use common::Server;
use std::time::{Duration, Instant};

/// The lease of these tests, ms.
const LEASE_MS: u64 = 600;

/// The documented bound (docs/design.md): a replica leads within two leases of the
/// leader's death (the lease runs out, a candidate sees it within a third of a lease,
/// catches up and appends its marker); one more second for a loaded test machine.
const FAILOVER_BOUND: Duration = Duration::from_millis(2 * LEASE_MS + 1_000);

const CLIENTS: usize = 6;
const EACH: usize = 150;

/// Three `auto` nodes, node `i` pointed at `nats.url_for(i)`; the first leads.
fn three_nodes(
    nats: &dyn NatsUrl,
    dirs: &[tempfile::TempDir],
    extra: &[(&str, &str)],
) -> Vec<Server> {
    let first = node_with(dirs[0].path(), nats, 0, "auto", LEASE_MS, extra);
    eventually(20, "the first node leads", || {
        role(&first).as_deref() == Some("master")
    });
    let mut nodes = vec![first];
    for (i, dir) in dirs.iter().enumerate().skip(1) {
        nodes.push(node_with(dir.path(), nats, i, "auto", LEASE_MS, extra));
    }
    eventually(20, "the others follow", || {
        nodes[1..]
            .iter()
            .all(|n| role(n).as_deref() == Some("slave"))
    });
    nodes
}

/// Runs the clients' load on every node, does `fault` (which answers the moment it
/// struck) once a quarter of it is acknowledged, waits for the rest, and checks that
/// every increment was acknowledged once. Answers the acknowledgements and that moment.
fn under_load(
    nodes: &mut [Server],
    fault: impl FnOnce(&mut [Server]) -> Instant,
) -> (Vec<Ack>, Instant) {
    let load = Load::start(nodes.iter().map(|n| n.resp).collect(), CLIENTS, EACH);
    eventually(30, "load is running", || {
        load_total(&nodes[1]).unwrap_or(0) >= (CLIENTS * EACH / 4) as i64
    });
    let at = fault(nodes);
    let acks = load.finish();
    assert_eq!(
        acks.len(),
        CLIENTS * EACH,
        "every increment acknowledged once"
    );
    (acks, at)
}

/// Checks that every node ends with exactly `total` and one of them leads. A node may
/// step down while it is checked (a leader whose own NATS server was killed loses its
/// lease): it restarts in place, answers nothing for a moment and must then hold the
/// total like the others. `cut_off`, a node whose only NATS server is gone, cannot
/// start again until it is back: it may answer nothing to the end, and if it answers,
/// the total. Any exit fails the test.
fn every_survivor_has(nodes: &mut [Server], total: usize, cut_off: Option<usize>) -> usize {
    let total = total as i64;
    let mut holding = Vec::new();
    for (i, node) in nodes.iter_mut().enumerate() {
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut seen = None;
        while seen != Some(total) && Instant::now() < deadline {
            assert!(
                node.child.try_wait().unwrap().is_none(),
                "node {i} exited ({})",
                whereabouts(node)
            );
            std::thread::sleep(Duration::from_millis(20));
            seen = load_total(node);
        }
        match seen {
            Some(n) if n == total => holding.push(i),
            None if cut_off == Some(i) => {
                eprintln!("node {i} does not answer: its NATS server is gone")
            }
            _ => panic!(
                "node {i} has {seen:?} increments, {total} were acknowledged ({})",
                whereabouts(node)
            ),
        }
    }
    // Still exact a moment later: nothing is applied twice on the way (a node in the
    // middle of a restart in place is asked until it answers).
    std::thread::sleep(Duration::from_millis(300));
    for &i in &holding.clone() {
        let deadline = Instant::now() + Duration::from_secs(30);
        let now = loop {
            if let Some(now) = load_total(&nodes[i]) {
                break Some(now);
            }
            if cut_off == Some(i) {
                // Deposed meanwhile, and cannot start again without its NATS server.
                break None;
            }
            assert!(
                Instant::now() < deadline,
                "node {i} does not answer ({})",
                whereabouts(&mut nodes[i])
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        match now {
            Some(now) => assert_eq!(now, total, "node {i} ({})", whereabouts(&mut nodes[i])),
            None => {
                eprintln!("node {i} stopped answering: deposed, its NATS server is gone");
                holding.retain(|&h| h != i);
            }
        }
        assert!(
            nodes[i].child.try_wait().unwrap().is_none(),
            "node {i} exited ({})",
            whereabouts(&mut nodes[i])
        );
    }
    assert!(
        holding.len() >= 2,
        "two nodes hold the total to the end, {holding:?} do"
    );
    let live = holding;
    let mut leader = None;
    eventually(20, "one survivor leads", || {
        leader = live
            .iter()
            .copied()
            .find(|&i| role(&nodes[i]).as_deref() == Some("master"));
        leader.is_some()
    });
    leader.unwrap()
}

/// What a failing check says of a node: its RESP address and whether its process still
/// runs (with its exit code if not), so a node that left is told from one that does
/// not answer (restarting in place).
fn whereabouts(node: &mut Server) -> String {
    match node.child.try_wait() {
        Ok(None) => format!("{} running", node.resp),
        Ok(Some(status)) => format!("{} exited: {status}", node.resp),
        Err(e) => format!("{} unknown: {e}", node.resp),
    }
}

#[test]
fn a_killed_leader_of_three_loses_no_acknowledged_increment_and_counts_none_twice() {
    let nats = Nats::start();
    let dirs: Vec<_> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
    let mut nodes = three_nodes(&nats, &dirs, &[]);
    let (acks, killed) = under_load(&mut nodes, |nodes| kill(&mut nodes[0]));
    let leader = every_survivor_has(&mut nodes[1..], CLIENTS * EACH, None) + 1;
    let failover = failover_time(&acks, killed, 0);
    eprintln!("failover: {failover:?} from SIGKILL to the first acknowledged increment (lease {LEASE_MS} ms)");
    assert!(failover <= FAILOVER_BOUND, "failover took {failover:?}");

    // The remaining replica's Sentinel reply names the new leader.
    let replica = if leader == 1 { 2 } else { 1 };
    let mut con = RawClient::connect(nodes[replica].resp);
    eventually(20, "Sentinel names the new leader", || {
        con.call(&[b"SENTINEL", b"get-master-addr-by-name", b"test"])
            == Reply::Array(Some(vec![
                Reply::Bulk(Some(b"127.0.0.1".to_vec())),
                Reply::Bulk(Some(nodes[leader].resp.port().to_string().into_bytes())),
            ]))
    });
}

#[test]
fn a_killed_nats_server_of_three_loses_no_acknowledged_increment() {
    let mut cluster = NatsCluster::start(3);
    let dirs: Vec<_> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
    let mut nodes = three_nodes(
        &cluster,
        &dirs,
        &[("SHARDKIT_COUNTERS_STREAM_REPLICAS", "3")],
    );
    let _logs = LogsOnFailure::of(&nodes);
    // The leader's own NATS server.
    let (acks, killed) = under_load(&mut nodes, |_| {
        cluster.kill(0);
        Instant::now()
    });
    let leader = every_survivor_has(&mut nodes, CLIENTS * EACH, Some(0));
    let exited: Vec<_> = nodes
        .iter_mut()
        .map(|n| n.child.try_wait().unwrap().and_then(|s| s.code()))
        .collect();
    eprintln!(
        "NATS server killed: writes resumed after {:?}; node {leader} leads; exit codes {exited:?}",
        failover_time(&acks, killed, usize::MAX)
    );
}

//! Replicated counters across network partitions, on three hosts of one LAN (network
//! namespaces on a bridge, `common::hosts`): a NATS cluster of three servers, one per
//! host, and a shardkit node per host (role `auto`, stream replicas 3, lease 3 s) on
//! its host's NATS server. A node that must start over restarts itself in place; a
//! supervisor thread restarts one that exits, and any exit fails the round.
//!
//! Two writers increment three keys with txids while, in turn: (a) the leader's host
//! is unplugged, (b) a follower's host is unplugged, (c) the leader's host loses the
//! other hosts but not its clients. One writer lives on the leader's host and knows
//! only that node; the other lives on a client host and follows Sentinel. After each
//! round every node must hold, for every key, at least every acknowledged increment
//! (none lost), at most those plus the unacknowledged ones (no phantom), the same as
//! every other node (no divergence), and the same `COUNTER.DIGEST`; and no node may
//! have exited.
//!
//! `replication_partitions/`: `writers` (the two clients), `readings` (what the nodes
//! answer, and waiting for them to settle), `verdict` (the checks), `report` (the
//! per-round lines).
//!
//! Once with Debian's nats-server, once with a current one (`SHARDKIT_TEST_NATS_CURRENT`,
//! the path `scripts/nats-servers` prints) fsyncing every write (`sync_interval:
//! always`). Needs root and `ip`; skipped with the reason otherwise.
//! `SHARDKIT_TEST_ROUND_LOGS=1` prints every node's log lines of each round.

#![cfg(feature = "nats")]

mod common;
#[path = "replication_partitions/readings.rs"]
mod readings;
#[path = "replication_partitions/report.rs"]
mod report;
#[path = "replication_partitions/verdict.rs"]
mod verdict;
#[path = "replication_partitions/writers.rs"]
mod writers;

use common::hosts::nats::NatsOnHosts;
use common::hosts::nodes::{Node, NodeSettings, Nodes};
use common::hosts::{self, Hosts};
use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};
use verdict::Totals;
use writers::Target;

/// The store (and Sentinel master) name.
const STORE: &str = "part";
/// The lease: a leader that cannot renew stops writing within it, and another node
/// takes over once it went unrenewed that long.
const LEASE_MS: u64 = 3_000;
/// Load before the fault.
const BEFORE: Duration = Duration::from_secs(5);
/// How long the fault lasts.
const FAULT: Duration = Duration::from_secs(15);
/// Load after the heal.
const AFTER: Duration = Duration::from_secs(10);
/// How long the nodes have after the writers stop to agree and have one leader.
const SETTLE: Duration = Duration::from_secs(30);
/// How long one node must have been the only leader to count as settled: a leader
/// elected around a heal may still lose its lease to the NATS cluster's own recovery.
const STEADY: Duration = Duration::from_millis(2 * LEASE_MS);
/// A round is not started past this much of the test, so a run that keeps timing
/// out still ends well before the test runner's limit.
const ROUNDS_WITHIN: Duration = Duration::from_secs(150);

/// The rounds on Debian's nats-server (2.9), as the machine has it.
#[test]
fn partitions_with_debian_nats_server() {
    if let Some(why) = hosts::unavailable() {
        eprintln!("skipped: {why}");
        return;
    }
    partitions(Path::new("nats-server"), false);
}

/// The rounds on a current nats-server (`scripts/nats-servers`) fsyncing every
/// JetStream write, as a cluster that must keep acknowledged writes would run.
#[test]
fn partitions_with_current_nats_server_fsync_always() {
    if let Some(why) = hosts::unavailable() {
        eprintln!("skipped: {why}");
        return;
    }
    let Some(binary) = common::nats_cluster::current_nats_server("the partition rounds") else {
        return;
    };
    partitions(&binary, true);
}

/// The fault of a round.
#[derive(Debug, Clone, Copy)]
enum Fault {
    /// The leader's host unplugged.
    LeaderCut,
    /// A follower's host unplugged.
    FollowerCut,
    /// The leader's host cut off from the other hosts, not from clients.
    LeaderIsolated,
}

impl Fault {
    /// How the round's report lines start.
    fn tag(self) -> &'static str {
        match self {
            Fault::LeaderCut => "round a (leader's host cut)",
            Fault::FollowerCut => "round b (a follower's host cut)",
            Fault::LeaderIsolated => "round c (leader's host isolated from the other hosts)",
        }
    }
}

/// Three hosts, the NATS cluster on them, a node on each, then the three rounds;
/// fails with every round's failures at the end.
fn partitions(nats_binary: &Path, sync_always: bool) {
    let test_start = Instant::now();
    let hosts = Hosts::make(3).expect("the hosts' namespaces and bridge");
    let nats = NatsOnHosts::start(&hosts, nats_binary, sync_always);
    if let Err(e) = nats.wait_jetstream(0, Duration::from_secs(60)) {
        panic!("{e}\n{}", nats.log_tails(20));
    }
    let settings = NodeSettings {
        store: STORE.into(),
        lease_ms: LEASE_MS,
        stream_replicas: 3,
    };
    let urls: Vec<String> = (0..3).map(|i| nats.url(i)).collect();
    let nodes = Nodes::start(&hosts, &urls, &settings);
    let mut totals = Totals::default();
    let mut failures = Vec::new();
    for (n, fault) in [Fault::LeaderCut, Fault::FollowerCut, Fault::LeaderIsolated]
        .into_iter()
        .enumerate()
    {
        if test_start.elapsed() > ROUNDS_WITHIN {
            failures.push(format!("{}: not run, the test is out of time", fault.tag()));
            continue;
        }
        let Some(leader) = readings::wait_leader(&nodes.0, Duration::from_secs(15)) else {
            failures.push(format!(
                "{}: no single leader to start from: {}",
                fault.tag(),
                readings::roles(&nodes.0)
            ));
            break;
        };
        failures.extend(round(n, fault, leader, &hosts, &nodes.0, &mut totals));
    }
    if !failures.is_empty() {
        eprintln!("{}", nats.log_tails(15));
        panic!("{} failure(s):\n{}", failures.len(), failures.join("\n"));
    }
}

/// Runs one round from `leader` (an index in `nodes`): the writers, the fault, the
/// heal, the settling; prints its report and answers its failures.
fn round(
    n: usize,
    fault: Fault,
    leader: usize,
    hosts: &Hosts,
    nodes: &[Node],
    totals: &mut Totals,
) -> Vec<String> {
    let tag = fault.tag();
    let target = match fault {
        Fault::LeaderCut | Fault::LeaderIsolated => leader,
        Fault::FollowerCut => (leader + 1) % nodes.len(),
    };
    let exits_before: Vec<usize> = nodes.iter().map(|n| n.exits().len()).collect();
    let restarts_before: Vec<usize> = nodes.iter().map(|n| n.restarts_in_place()).collect();
    let lines_before: Vec<usize> = nodes.iter().map(|n| n.log_lines().len()).collect();
    let until = Instant::now() + BEFORE + FAULT + AFTER;
    let on_leader = {
        let addr = nodes[leader].resp;
        let prefix = format!("r{n}-leader-host");
        hosts.in_ns(&hosts.hosts[leader].ns, move || {
            writers::run("leader-host", &prefix, Target::Fixed(addr), until)
        })
    };
    let following = {
        let sentinels: Vec<SocketAddr> = nodes.iter().map(|n| n.resp).collect();
        let prefix = format!("r{n}-sentinel");
        hosts.in_ns(&hosts.client.ns, move || {
            let target = Target::Sentinel {
                sentinels,
                master: STORE.into(),
            };
            writers::run("sentinel", &prefix, target, until)
        })
    };
    // Who leads the counters stream and the lease bucket through the round, as a NATS
    // server outside the fault answers: NATS's own elections (also those a healed
    // server sets off) beside the outages.
    let names = shardkit_node::replication::jetstream::names::Names::new(STORE);
    let watched = [names.stream.clone(), format!("KV_{}", names.lease_bucket)];
    let leaders = hosts::stream_leaders::watch(
        format!(
            "nats://{}:{}",
            hosts.hosts[(target + 1) % nodes.len()].addr,
            hosts::nats::CLIENT_PORT
        ),
        watched.to_vec(),
        until,
    );
    std::thread::sleep(BEFORE);
    let fault_at = Instant::now();
    let fault_wall = std::time::SystemTime::now();
    match fault {
        Fault::LeaderCut | Fault::FollowerCut => hosts.cut(target),
        Fault::LeaderIsolated => hosts.isolate_from_hosts(target),
    }
    .expect("the fault");
    std::thread::sleep(FAULT);
    hosts.heal(target).expect("the heal");
    let healed_at = Instant::now();
    let written = [on_leader.join().unwrap(), following.join().unwrap()];
    for w in &written {
        totals.add(w);
    }
    let stopped = Instant::now();
    let (seen, mut failures) = readings::settle(tag, nodes, totals, STEADY, SETTLE);
    eprintln!(
        "{tag}: fault on {} (leader was {}), settled in {:.1} s",
        nodes[target].name,
        nodes[leader].name,
        stopped.elapsed().as_secs_f64()
    );
    let times = report::Times {
        fault: fault_at,
        healed: healed_at,
        until,
    };
    report::print(tag, &times, &written, nodes, &exits_before, &seen, totals);
    let restarts: Vec<String> = nodes
        .iter()
        .zip(&restarts_before)
        .map(|(node, before)| format!("{} {}", node.name, node.restarts_in_place() - before))
        .collect();
    eprintln!(
        "{tag}: restarts in place (since the round began): {}",
        restarts.join("; ")
    );
    report::failover_parts(tag, nodes, target, &lines_before, fault_wall);
    for (name, seen) in watched.iter().zip(leaders.join().unwrap()) {
        eprintln!(
            "{tag}: NATS leader of {name} (times from the fault, healed at +{:.1} s): {}",
            (healed_at - fault_at).as_secs_f64(),
            hosts::stream_leaders::timeline(&seen, fault_at)
        );
    }
    failures.extend(verdict::check(tag, nodes, &seen, totals));
    // Every node's log lines of the round and its INFO replication, to see how a
    // failover went: always for a round that failed (a rare failure is diagnosed from
    // its one run), on request otherwise.
    if !failures.is_empty() || std::env::var("SHARDKIT_TEST_ROUND_LOGS").is_ok() {
        for (i, node) in nodes.iter().enumerate() {
            for l in node.log_lines().split_off(lines_before[i]) {
                eprintln!("{tag}: log of {}: {}", node.name, l.trim_end());
            }
            eprintln!(
                "{tag}: INFO replication of {}: {}",
                node.name,
                readings::info_replication(node.resp).replace("\r\n", "; ")
            );
        }
    }
    // A node that must start over restarts in place; an exit means it could not.
    for (node, &before) in nodes.iter().zip(&exits_before) {
        let exits = node.exits();
        if exits.len() > before {
            failures.push(format!(
                "{tag}: node {} exited instead of restarting in place: {:?}",
                node.name,
                &exits[before..]
            ));
        }
    }
    failures
}

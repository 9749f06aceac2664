//! Redis Cluster mode's slot groups through a partition, with the checks the
//! replication partition test makes, per group: three hosts (network namespaces on a
//! bridge, made and removed by the test), a three-server NATS cluster, one cluster node
//! per host (8 slot groups, every group's stream on three NATS servers), writers on the
//! client host and on the first node's host counting with txids. The first node's host
//! (it owns some groups) is cut off the bridge for 15 s, then healed. After it settles,
//! read from the owner of each key's group and from every node holding a copy of each
//! group: no key below its acknowledged count (lost), none above acknowledged plus
//! indeterminate (phantom), every copy of a group at the same lsn and digest
//! (`COUNTER.DIGEST GROUP g`), every group on two nodes or more (the cut node follows
//! the groups taken from it), and no node exited. Then `cluster rebalance`, as an
//! operator runs it after a takeover: the same checks again.
//! `SHARDKIT_TEST_ROUND_LOGS=1` prints every node's log at the end.

#![cfg(feature = "nats")]

mod common;

use common::hosts::nats::NatsOnHosts;
use common::hosts::{self, Hosts};
use common::Server;
use std::collections::HashMap;
use std::path::Path;
use std::time::{Duration, Instant};

const KEY: &str = "cluster-partition-key-0123456789";
const GROUPS: u16 = 8;
const RESP_PORT: u16 = 6380;
const HTTP_PORT: u16 = 8080;
/// Rows written (`cp:{k}`), spread over the groups.
const ROWS: usize = 32;
const BEFORE: Duration = Duration::from_secs(3);
const FAULT: Duration = Duration::from_secs(15);
const AFTER: Duration = Duration::from_secs(8);
/// How long the nodes get to agree after the writers stop.
const SETTLE: Duration = Duration::from_secs(90);
/// How long one increment is retried (same txid) before it is left indeterminate.
const OP_FOR: Duration = Duration::from_secs(4);

fn row(k: usize) -> String {
    format!("cp:{{{k}}}")
}

fn connect(addr: &str, timeout: Duration) -> Option<redis::Connection> {
    let con = redis::Client::open(format!("redis://:{KEY}@{addr}/"))
        .ok()?
        .get_connection_with_timeout(timeout)
        .ok()?;
    con.set_read_timeout(Some(timeout)).ok()?;
    con.set_write_timeout(Some(timeout)).ok()?;
    Some(con)
}

/// The slot table from `CLUSTER SLOTS` of the first of `seeds` that answers.
fn slot_owners(seeds: &[String]) -> HashMap<u16, String> {
    for seed in seeds {
        let Some(mut con) = connect(seed, Duration::from_millis(500)) else {
            continue;
        };
        let Ok(ranges) = redis::cmd("CLUSTER")
            .arg("SLOTS")
            .query::<Vec<redis::Value>>(&mut con)
        else {
            continue;
        };
        let mut owners = HashMap::new();
        for range in ranges {
            let redis::Value::Array(parts) = range else {
                continue;
            };
            let (Some(redis::Value::Int(first)), Some(redis::Value::Int(last))) =
                (parts.first(), parts.get(1))
            else {
                continue;
            };
            let Some(redis::Value::Array(master)) = parts.get(2) else {
                continue;
            };
            let (Some(redis::Value::BulkString(host)), Some(redis::Value::Int(port))) =
                (master.first(), master.get(1))
            else {
                continue;
            };
            let addr = format!("{}:{port}", String::from_utf8_lossy(host));
            for s in *first..=*last {
                owners.insert(s as u16, addr.clone());
            }
        }
        return owners;
    }
    HashMap::new()
}

/// What one writer saw of each row: increments acknowledged, and increments whose
/// outcome it never learned (counted at most once, by their txid).
#[derive(Debug, Default, Clone)]
struct Counts {
    acked: Vec<i64>,
    unknown: Vec<i64>,
    /// The longest time between two acknowledged increments.
    longest_gap: Duration,
}

/// Increments the rows in turn until `until`, each with its own txid, following MOVED
/// and retrying the same txid for [`OP_FOR`] before leaving it indeterminate.
fn write(name: &str, seeds: Vec<String>, until: Instant) -> Counts {
    let mut counts = Counts {
        acked: vec![0; ROWS],
        unknown: vec![0; ROWS],
        longest_gap: Duration::ZERO,
    };
    let mut owners = slot_owners(&seeds);
    let mut cons: HashMap<String, redis::Connection> = HashMap::new();
    let mut last_ack = Instant::now();
    let mut n = 0u64;
    while Instant::now() < until {
        let k = (n as usize) % ROWS;
        n += 1;
        let key = row(k);
        let slot = shardkit_node::cluster::slot::key_slot(key.as_bytes());
        let txid = format!("{name}-{n}");
        let give_up = Instant::now() + OP_FOR;
        let mut tried = false;
        let acked = loop {
            if Instant::now() > give_up {
                break false;
            }
            let Some(addr) = owners.get(&slot).cloned() else {
                owners = slot_owners(&seeds);
                std::thread::sleep(Duration::from_millis(100));
                continue;
            };
            let con = match cons.entry(addr.clone()) {
                std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
                std::collections::hash_map::Entry::Vacant(v) => {
                    match connect(&addr, Duration::from_millis(1500)) {
                        Some(con) => v.insert(con),
                        None => {
                            owners = slot_owners(&seeds);
                            std::thread::sleep(Duration::from_millis(100));
                            continue;
                        }
                    }
                }
            };
            tried = true;
            let answer: redis::RedisResult<i64> = redis::cmd("COUNTER.INCRBY")
                .arg(&key)
                .arg("hits")
                .arg(1)
                .arg(&txid)
                .query(con);
            match answer {
                Ok(_) => break true,
                Err(e) if e.code() == Some("MOVED") => {
                    if let Some(to) = e.detail().and_then(|d| d.split(' ').nth(1)) {
                        owners.insert(slot, to.to_string());
                    }
                }
                Err(e) => {
                    if e.is_io_error() || e.is_timeout() || e.is_connection_dropped() {
                        cons.remove(&addr);
                    }
                    std::thread::sleep(Duration::from_millis(50));
                    owners = slot_owners(&seeds);
                }
            }
        };
        if acked {
            counts.acked[k] += 1;
            counts.longest_gap = counts.longest_gap.max(last_ack.elapsed());
            last_ack = Instant::now();
        } else if tried {
            counts.unknown[k] += 1;
        }
    }
    counts
}

/// When an increment of `key` (a probe row, outside the checked ones) is first
/// acknowledged, trying through `seeds` until `until`; `None` if never.
fn first_write_after(seeds: &[String], key: &str, until: Instant) -> Option<Instant> {
    let slot = shardkit_node::cluster::slot::key_slot(key.as_bytes());
    let mut tries = 0u32;
    while Instant::now() < until {
        tries += 1;
        let owner = slot_owners(seeds).get(&slot).cloned();
        if let Some(mut con) = owner.and_then(|a| connect(&a, Duration::from_millis(300))) {
            let answer: redis::RedisResult<i64> = redis::cmd("COUNTER.INCRBY")
                .arg(key)
                .arg("hits")
                .arg(1)
                .arg(format!("{key}-{tries}"))
                .query(&mut con);
            if answer.is_ok() {
                return Some(Instant::now());
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    None
}

/// Writes `body` as a settings file and starts a cluster node with it on host `i`,
/// trying again while JetStream settles.
fn start_node(hosts: &Hosts, dir: &Path, i: usize, body: &str) -> Server {
    let file = dir.join(format!("node-{i}.toml"));
    std::fs::write(&file, body).unwrap();
    let data = dir.join(format!("node-{i}-data"));
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        match Server::try_start_in(
            &hosts.exec(i),
            &data,
            &["--config", file.to_str().unwrap()],
            &[],
        ) {
            Ok(server) => return server,
            Err(log) if Instant::now() > deadline => panic!("node {i} did not start: {log}"),
            Err(_) => std::thread::sleep(Duration::from_millis(500)),
        }
    }
}

/// `CLUSTER INFO` field `name` of the node at `addr`.
fn cluster_info(addr: &str, name: &str) -> Option<String> {
    let info: String = redis::cmd("CLUSTER")
        .arg("INFO")
        .query(&mut connect(addr, Duration::from_secs(1))?)
        .ok()?;
    info.lines()
        .find_map(|l| l.strip_prefix(&format!("{name}:")))
        .map(|v| v.trim().to_string())
}

/// Each node's `COUNTER.DIGEST GROUP g`, for the nodes that hold a copy of `g`.
fn group_digests(addrs: &[String], g: u16) -> Vec<(String, i64, String)> {
    addrs
        .iter()
        .filter_map(|addr| {
            let reply: redis::Value = redis::cmd("COUNTER.DIGEST")
                .arg("GROUP")
                .arg(g)
                .query(&mut connect(addr, Duration::from_secs(2))?)
                .ok()?;
            match reply {
                redis::Value::Array(parts) => match parts.as_slice() {
                    [redis::Value::Int(lsn), redis::Value::BulkString(hex)] => Some((
                        addr.clone(),
                        *lsn,
                        String::from_utf8_lossy(hex).into_owned(),
                    )),
                    _ => None,
                },
                _ => None,
            }
        })
        .collect()
}

/// The round on Debian's nats-server (2.9), as the machine has it.
#[test]
fn cluster_groups_through_a_cut_host_lose_nothing_and_their_copies_agree() {
    if let Some(why) = hosts::unavailable() {
        eprintln!("skipped: {why}");
        return;
    }
    cut_round(Path::new("nats-server"), false);
}

/// The round on a current nats-server (`scripts/nats-servers`) fsyncing every
/// JetStream write.
#[test]
fn cluster_groups_through_a_cut_host_on_a_current_nats_server() {
    if let Some(why) = hosts::unavailable() {
        eprintln!("skipped: {why}");
        return;
    }
    let Some(binary) = common::nats_cluster::current_nats_server("the cluster's cut round") else {
        return;
    };
    cut_round(&binary, true);
}

/// One cut of the first node's host and its checks, on the NATS servers `nats_binary`
/// (`sync_always`: with `jetstream { sync_interval: always }`).
fn cut_round(nats_binary: &Path, sync_always: bool) {
    let hosts = Hosts::make(3).expect("the hosts' namespaces and bridge");
    let nats = NatsOnHosts::start(&hosts, nats_binary, sync_always);
    nats.wait_jetstream(0, Duration::from_secs(60))
        .unwrap_or_else(|e| panic!("{e}\n{}", nats.log_tails(20)));
    let dir = tempfile::tempdir().unwrap();
    let urls: Vec<String> = (0..3).map(|i| format!("{:?}", nats.url(i))).collect();
    let mut nodes: Vec<Server> = (0..3)
        .map(|i| {
            let addr = &hosts.hosts[i].addr;
            start_node(
                &hosts,
                dir.path(),
                i,
                &format!(
                    "api_key = {KEY:?}\nresp = \"{addr}:{RESP_PORT}\"\nhttp = \"{addr}:{HTTP_PORT}\"\n\
                     [cluster]\nenabled = true\nname = \"cp\"\ngroups = {GROUPS}\nstream_replicas = 3\n\
                     [nats]\nurl = [{}]\n[counters]\nlease_ms = 2000\n",
                    urls.join(", ")
                ),
            )
        })
        .collect();
    let addrs: Vec<String> = hosts
        .hosts
        .iter()
        .map(|h| format!("{}:{RESP_PORT}", h.addr))
        .collect();
    let nats_urls: Vec<String> = (0..3).map(|i| nats.url(i)).collect();
    // `cluster ARGS`, run again (as an operator would) when the map moved while it
    // planned or NATS was still electing leaders after the heal.
    let cli = |args: &[&str]| {
        let mut last = String::new();
        for _ in 0..20 {
            let out = std::process::Command::new(env!("CARGO_BIN_EXE_shardkit"))
                .arg("cluster")
                .args(args)
                .args(["--nats", &nats_urls.join(","), "--cluster", "cp"])
                .output()
                .unwrap();
            if out.status.success() {
                return;
            }
            last = String::from_utf8_lossy(&out.stderr).trim().to_string();
            eprintln!("cluster {args:?}: {last}");
            std::thread::sleep(Duration::from_millis(500));
        }
        panic!("cluster {args:?} failed 20 times, last: {last}");
    };
    // Placed on all three (again if a record lapsed while the map was made).
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        cli(&["rebalance", "--groups", &GROUPS.to_string()]);
        let placed = Instant::now() + Duration::from_secs(30);
        while Instant::now() < placed
            && !addrs
                .iter()
                .all(|a| cluster_info(a, "cluster_state").as_deref() == Some("ok"))
        {
            std::thread::sleep(Duration::from_millis(200));
        }
        if addrs
            .iter()
            .all(|a| cluster_info(a, "cluster_size").as_deref() == Some("3"))
        {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the groups were never placed on all three nodes"
        );
        std::thread::sleep(Duration::from_secs(1));
    }
    let owners_before = slot_owners(&addrs);
    // The rows whose group the first node owns: their writes stop with the cut until
    // another node takes the group over.
    let rows_of_cut: Vec<usize> = (0..ROWS)
        .filter(|&k| {
            let slot = shardkit_node::cluster::slot::key_slot(row(k).as_bytes());
            owners_before.get(&slot) == Some(&addrs[0])
        })
        .collect();
    assert!(!rows_of_cut.is_empty(), "the first node owns rows");

    // Writers on the client host and on the first node's host, through the cut.
    let until = Instant::now() + BEFORE + FAULT + AFTER;
    // Who leads each group's lease bucket and log stream, as the second host's NATS
    // server answers, to tell NATS's elections from the failover.
    let (lease_streams, log_streams): (Vec<String>, Vec<String>) = (0..GROUPS)
        .map(|g| {
            let names = shardkit_node::replication::jetstream::names::Names::new(
                &shardkit_node::cluster::nats::names::group_store_name("cp", g),
            );
            (format!("KV_{}", names.lease_bucket), names.stream)
        })
        .unzip();
    let cluster_streams = vec![
        format!(
            "KV_{}",
            shardkit_node::cluster::nats::names::nodes_bucket("cp")
        ),
        format!(
            "KV_{}",
            shardkit_node::cluster::nats::names::map_bucket("cp")
        ),
    ];
    let leaders = hosts::stream_leaders::watch(
        nats.url(1),
        lease_streams
            .iter()
            .chain(&log_streams)
            .chain(&cluster_streams)
            .cloned()
            .collect(),
        until,
    );
    let outside = {
        let seeds = addrs.clone();
        hosts.in_ns(&hosts.client.ns, move || write("outside", seeds, until))
    };
    let inside = {
        let seeds = vec![addrs[0].clone()];
        hosts.in_ns(&hosts.hosts[0].ns, move || write("inside", seeds, until))
    };
    std::thread::sleep(BEFORE);
    let cut_at = Instant::now();
    hosts.cut(0).expect("the cut");
    // One probe per row of the cut node, from the client host through the other
    // nodes: the time to its group's first write acknowledged after the cut.
    let probes: Vec<_> = rows_of_cut
        .iter()
        .map(|&k| {
            let seeds = addrs[1..].to_vec();
            hosts.in_ns(&hosts.client.ns, move || {
                first_write_after(&seeds, &format!("cp:{{{k}}}probe"), cut_at + FAULT + AFTER)
            })
        })
        .collect();
    std::thread::sleep(FAULT);
    hosts.heal(0).expect("the heal");
    eprintln!("cut host h0 for {:.1} s", cut_at.elapsed().as_secs_f64());
    let written = [outside.join().unwrap(), inside.join().unwrap()];
    let acked: Vec<i64> = (0..ROWS)
        .map(|k| written.iter().map(|w| w.acked[k]).sum())
        .collect();
    let unknown: Vec<i64> = (0..ROWS)
        .map(|k| written.iter().map(|w| w.unknown[k]).sum())
        .collect();
    // Failover as a client sees it (reported, not asserted: a timing).
    let mut failover: Vec<f64> = probes
        .into_iter()
        .map(|p| {
            p.join()
                .unwrap()
                .map_or(f64::INFINITY, |at| (at - cut_at).as_secs_f64())
        })
        .collect();
    failover.sort_by(f64::total_cmp);
    eprintln!(
        "failover of the cut node's {} rows (from the cut to the first write acknowledged by \
         another node): median {:.1} s, max {:.1} s; bound: the node record's 3 s life + a \
         check each second + lease_ms (2 s), plus NATS's stream-leader elections",
        failover.len(),
        failover[failover.len() / 2],
        failover[failover.len() - 1]
    );
    let leaders = leaders.join().unwrap();
    let (lease_leaders, rest) = leaders.split_at(lease_streams.len());
    let (log_leaders, cluster_leaders) = rest.split_at(log_streams.len());
    for (what, of) in [
        ("lease buckets", lease_leaders),
        ("log streams", log_leaders),
        ("node records and map buckets", cluster_leaders),
    ] {
        eprintln!(
            "NATS elected another leader for the {what} the cut server led {}",
            elections(&hosts::stream_leaders::elected_after(of, "h0", cut_at))
        );
    }
    eprintln!(
        "acknowledged {} increments, {} indeterminate; longest gap between acks: outside {:.1} s, inside {:.1} s",
        acked.iter().sum::<i64>(),
        unknown.iter().sum::<i64>(),
        written[0].longest_gap.as_secs_f64(),
        written[1].longest_gap.as_secs_f64()
    );

    // Settled: every node serves, every key within its bounds at its owner, every
    // group on two nodes or more (a node back from the cut follows the groups taken
    // over while it was away, as their last replica), its copies equal. Then, as an
    // operator would, rebalance and check the same again.
    let bounds = Bounds {
        acked: &acked,
        unknown: &unknown,
    };
    let healed_at = cut_at + FAULT;
    let settled_at = settle(&addrs, &bounds, 2)
        .unwrap_or_else(|problems| not_settled("after the writers stopped", &problems, &nodes));
    eprintln!(
        "settled {:.1} s after the heal; copies per group: {:?}",
        settled_at.duration_since(healed_at).as_secs_f64(),
        (0..GROUPS)
            .map(|g| group_digests(&addrs, g).len())
            .collect::<Vec<_>>()
    );
    cli(&["rebalance", "--groups", &GROUPS.to_string()]);
    let rebalanced = settle(&addrs, &bounds, 2)
        .unwrap_or_else(|problems| not_settled("after the rebalance", &problems, &nodes));
    eprintln!(
        "after a rebalance, every group on two or more nodes in {:.1} s; copies per group: {:?}",
        rebalanced.duration_since(settled_at).as_secs_f64(),
        (0..GROUPS)
            .map(|g| group_digests(&addrs, g).len())
            .collect::<Vec<_>>()
    );
    if std::env::var("SHARDKIT_TEST_ROUND_LOGS").is_ok() {
        print_logs(&nodes);
    }
    for (i, node) in nodes.iter_mut().enumerate() {
        let status = node.child.try_wait().unwrap();
        assert!(status.is_none(), "node h{i} exited: {status:?}");
    }
}

/// What the writers learned of each row.
struct Bounds<'a> {
    acked: &'a [i64],
    unknown: &'a [i64],
}

/// Waits up to [`SETTLE`] until every node serves every group it owns, every row reads
/// within its bounds at its owner, and every group has `min_copies` copies or more,
/// all at the same lsn and digest. `Err`: what was still wrong at the end.
fn settle(
    addrs: &[String],
    bounds: &Bounds<'_>,
    min_copies: usize,
) -> Result<Instant, Vec<String>> {
    let settle_by = Instant::now() + SETTLE;
    loop {
        let mut problems = Vec::new();
        for a in addrs {
            if cluster_info(a, "cluster_state").as_deref() != Some("ok") {
                problems.push(format!("{a} does not serve every group it owns"));
            }
        }
        let owners = slot_owners(addrs);
        for k in 0..ROWS {
            let key = row(k);
            let slot = shardkit_node::cluster::slot::key_slot(key.as_bytes());
            let value = owners
                .get(&slot)
                .and_then(|a| connect(a, Duration::from_secs(2)))
                .and_then(|mut con| {
                    redis::cmd("GET")
                        .arg(format!("{key}:hits"))
                        .query::<Option<i64>>(&mut con)
                        .ok()
                })
                .map(|v| v.unwrap_or(0));
            let (acked, unknown) = (bounds.acked[k], bounds.unknown[k]);
            match value {
                None => problems.push(format!("{key}: no answer from its owner")),
                Some(v) if v < acked => {
                    problems.push(format!("{key}: {v} < {acked} acknowledged (lost)"))
                }
                Some(v) if v > acked + unknown => problems.push(format!(
                    "{key}: {v} > {acked} acknowledged + {unknown} indeterminate (phantom)"
                )),
                Some(_) => {}
            }
        }
        for g in 0..GROUPS {
            let copies = group_digests(addrs, g);
            if copies.len() < min_copies {
                problems.push(format!("group {g}: {} cop(ies) answer", copies.len()));
            }
            if copies
                .windows(2)
                .any(|w| (w[0].1, &w[0].2) != (w[1].1, &w[1].2))
            {
                problems.push(format!("group {g}: copies differ {copies:?}"));
            }
        }
        if problems.is_empty() {
            return Ok(Instant::now());
        }
        if Instant::now() > settle_by {
            return Err(problems);
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// Fails the round: what was still wrong, then the nodes' logs, then the same again
/// (a long output is cut in its middle, so the problems are at both ends).
fn not_settled(when: &str, problems: &[String], nodes: &[Server]) -> ! {
    let problems = problems.join("\n");
    eprintln!("not settled {SETTLE:?} {when}:\n{problems}");
    print_logs(nodes);
    panic!("not settled {SETTLE:?} {when}:\n{problems}")
}

/// The report of NATS's elections: how many streams, the median and the longest time
/// from the cut to a new leader, how many had none by the end of the watch.
fn elections(after: &[Option<Duration>]) -> String {
    let mut took: Vec<f64> = after.iter().flatten().map(Duration::as_secs_f64).collect();
    took.sort_by(f64::total_cmp);
    let never = after.len() - took.len();
    match took.last() {
        None => format!("({} streams): none within the watch", after.len()),
        Some(max) => format!(
            "({} streams): median {:.1} s, max {max:.1} s after the cut; {never} had none within the watch",
            after.len(),
            took[took.len() / 2]
        ),
    }
}

/// The last lines of every node's log, for a failing run (every line with
/// `SHARDKIT_TEST_ROUND_LOGS` set).
fn print_logs(nodes: &[Server]) {
    let all = std::env::var("SHARDKIT_TEST_ROUND_LOGS").is_ok();
    for (i, node) in nodes.iter().enumerate() {
        let log = node.log.lock().unwrap();
        let from = if all { 0 } else { log.len().saturating_sub(40) };
        for line in &log[from..] {
            eprintln!("h{i}: {line}");
        }
    }
}

//! Redis Cluster mode end to end: real `shardkit serve` nodes with `[cluster] enabled`
//! on loopback against a private `nats-server -js`, placed by `shardkit cluster
//! rebalance`, answering `MOVED`/`CROSSSLOT` as Redis Cluster does, and a real cluster
//! client (redis-py's `RedisCluster`) counting through a rebalance.

#![cfg(feature = "nats")]

mod common;

use common::nats::Nats;
use common::Server;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Slot groups of the test clusters (few, so nodes open few stores).
const GROUPS: u16 = 16;

/// Starts a cluster node of cluster `name`.
fn node(dir: &Path, nats: &Nats, name: &str) -> Server {
    node_on(dir, &nats.url, name, "")
}

/// Starts a cluster node on the NATS servers `urls` (comma-separated), with `extra`
/// lines in its `[cluster]` section.
fn node_on(dir: &Path, urls: &str, name: &str, extra: &str) -> Server {
    let config = dir.join("node.toml");
    std::fs::write(
        &config,
        format!(
            "[cluster]\nenabled = true\nname = \"{name}\"\ngroups = {GROUPS}\n{extra}\n\
             [nats]\nurl = \"{urls}\"\n[counters]\nlease_ms = 1000\n"
        ),
    )
    .unwrap();
    let data = dir.join("data");
    Server::try_start(
        &data,
        &[
            "--http",
            "127.0.0.1:0",
            "--resp",
            "127.0.0.1:0",
            "--config",
            config.to_str().unwrap(),
        ],
        &[],
    )
    .unwrap_or_else(|log| panic!("the node did not start: {log}"))
}

fn cli(nats: &Nats, name: &str, args: &[&str]) -> serde_json::Value {
    cli_on(&nats.url, name, args)
}

/// `shardkit cluster ARGS` against the NATS servers `urls`; a call that has not
/// answered within a minute fails the test with what it printed.
fn cli_on(urls: &str, name: &str, args: &[&str]) -> serde_json::Value {
    let started = Instant::now();
    let output = common::cli::output_within(
        Command::new(env!("CARGO_BIN_EXE_shardkit"))
            .arg("cluster")
            .args(args)
            .args(["--nats", urls, "--cluster", name])
            .args(if args == ["status"] {
                vec![]
            } else {
                vec!["--groups".to_string(), GROUPS.to_string()]
            }),
        Duration::from_secs(60),
    )
    .unwrap_or_else(|e| panic!("shardkit cluster {args:?}: {e}"));
    if started.elapsed() > Duration::from_secs(5) {
        eprintln!("shardkit cluster {args:?} took {:?}", started.elapsed());
    }
    assert!(
        output.status.success(),
        "shardkit cluster {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

/// Starts a node of cluster `name` in each of `dirs`, places the groups on them
/// (`shardkit cluster rebalance`) and waits until they all serve.
fn placed_cluster(nats: &Nats, name: &str, dirs: &[tempfile::TempDir]) -> Vec<Server> {
    let nodes: Vec<Server> = dirs.iter().map(|d| node(d.path(), nats, name)).collect();
    // A node's record reaches the registry just after it listens: a rebalance before
    // every record is there places the groups over fewer nodes.
    until_live(nats, name, nodes.len());
    // A node whose record lapsed for a moment (a heartbeat late on a loaded machine)
    // is left out of the map that rebalance made then: rebalance again until every
    // node owns groups.
    for _ in 0..5 {
        let placed = cli(nats, name, &["rebalance"]);
        until_serving(
            &nodes.iter().collect::<Vec<_>>(),
            placed["version"].as_u64().unwrap(),
        );
        if cluster_size(&nodes[0]) == nodes.len() {
            return nodes;
        }
        until_live(nats, name, nodes.len());
    }
    panic!("the groups were never placed on all {} nodes", nodes.len());
}

/// `cluster_size` of `CLUSTER INFO`: how many nodes own groups.
fn cluster_size(node: &Server) -> usize {
    let info: String = redis::cmd("CLUSTER")
        .arg("INFO")
        .query(&mut node.redis())
        .unwrap_or_default();
    info.lines()
        .find_map(|l| l.strip_prefix("cluster_size:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0)
}

/// Waits until `cluster status` lists `n` live nodes.
fn until_live(nats: &Nats, name: &str, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let status = cli(nats, name, &["status"]);
        let live = status["nodes"].as_array().map_or(0, |nodes| {
            nodes.iter().filter(|n| n["live"] == true).count()
        });
        if live >= n {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{n} nodes never all live: {status}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Waits until every node says `cluster_state:ok` and holds map version `version` (or
/// a newer one, the same on all).
fn until_serving(nodes: &[&Server], version: u64) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let infos: Vec<String> = nodes
            .iter()
            .map(|n| {
                redis::cmd("CLUSTER")
                    .arg("INFO")
                    .query::<String>(&mut n.redis())
                    .unwrap_or_default()
            })
            .collect();
        let epochs: Vec<&str> = infos
            .iter()
            .filter_map(|i| i.lines().find(|l| l.starts_with("cluster_current_epoch:")))
            .collect();
        let at_least = |e: &&str| {
            e.trim_start_matches("cluster_current_epoch:")
                .trim()
                .parse::<u64>()
                .is_ok_and(|v| v >= version)
        };
        if infos.iter().all(|i| i.contains("cluster_state:ok"))
            && epochs.len() == nodes.len()
            && epochs.iter().all(at_least)
            && epochs.windows(2).all(|w| w[0] == w[1])
        {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the cluster never served: {infos:?}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// One `CLUSTER SLOTS` entry: first slot, last slot, the master's `host:port`.
fn slot_range(range: redis::Value) -> (u16, u16, String) {
    let redis::Value::Array(parts) = range else {
        panic!("a range is an array")
    };
    let (redis::Value::Int(first), redis::Value::Int(last)) = (&parts[0], &parts[1]) else {
        panic!("slot bounds are integers")
    };
    let redis::Value::Array(master) = &parts[2] else {
        panic!("the master is an array")
    };
    let host = match &master[0] {
        redis::Value::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
        other => panic!("host {other:?}"),
    };
    let redis::Value::Int(port) = master[1] else {
        panic!("port")
    };
    (*first as u16, *last as u16, format!("{host}:{port}"))
}

/// The `host:port` that `CLUSTER SLOTS` (asked of `node`) names for `slot`.
fn owner_of(node: &Server, slot: u16) -> String {
    let ranges: Vec<redis::Value> = redis::cmd("CLUSTER")
        .arg("SLOTS")
        .query(&mut node.redis())
        .unwrap();
    ranges
        .into_iter()
        .map(slot_range)
        .find(|(first, last, _)| (*first..=*last).contains(&slot))
        .map(|(_, _, addr)| addr)
        .unwrap_or_else(|| panic!("slot {slot} is not served"))
}

fn slot(key: &str) -> u16 {
    shardkit_node::cluster::slot::key_slot(key.as_bytes())
}

/// A pipeline of increments to one node, over two of its groups and a slot it does not
/// own: the increments of one group go to the engine together across commands (one
/// run), and still each reply comes in its command's place, `-MOVED` included, and
/// each value lands in its own group once.
#[test]
fn a_pipeline_over_groups_and_a_moved_slot_keeps_its_replies_in_order() {
    let nats = Nats::start();
    let dirs: Vec<tempfile::TempDir> = (0..2).map(|_| tempfile::tempdir().unwrap()).collect();
    let nodes = placed_cluster(&nats, "c0", &dirs);
    let here = nodes[0].resp.to_string();
    let owners: Vec<(u16, u16, String)> = redis::cmd("CLUSTER")
        .arg("SLOTS")
        .query::<Vec<redis::Value>>(&mut nodes[0].redis())
        .unwrap()
        .into_iter()
        .map(slot_range)
        .collect();
    let owner = |key: &str| {
        let s = slot(key);
        owners
            .iter()
            .find(|(first, last, _)| (*first..=*last).contains(&s))
            .map(|(_, _, addr)| addr.clone())
            .unwrap()
    };
    let group = |key: &str| u32::from(slot(key)) * u32::from(GROUPS) / 16384;
    // Three rows of one group led here, two of another, one elsewhere.
    let keys: Vec<String> = (0..10_000).map(|i| format!("pv:{{{i}}}")).collect();
    let mine: Vec<&String> = keys.iter().filter(|k| owner(k) == here).collect();
    let of_group = |g: u32, n: usize| -> Vec<&String> {
        mine.iter()
            .copied()
            .filter(|k| group(k) == g)
            .take(n)
            .collect()
    };
    let g1 = group(mine[0]);
    let g2 = mine.iter().map(|k| group(k)).find(|&g| g != g1).unwrap();
    let (a, b) = (of_group(g1, 3), of_group(g2, 2));
    let away = keys.iter().find(|k| owner(k) != here).unwrap();
    assert_eq!((a.len(), b.len()), (3, 2));
    let commands: Vec<(&str, i64)> = vec![
        (a[0], 1),
        (a[1], 2),
        (a[2], 3),
        (b[0], 4),
        (b[1], 5),
        (away, 6),
        (a[0], 7),
        (b[0], 8),
        (a[0], 0),
    ];
    let mut stream = std::net::TcpStream::connect(nodes[0].resp).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut batch = Vec::new();
    for (key, by) in &commands {
        let by = by.to_string();
        batch.extend_from_slice(
            format!(
                "*3\r\n$6\r\nINCRBY\r\n${}\r\n{key}\r\n${}\r\n{by}\r\n",
                key.len(),
                by.len()
            )
            .as_bytes(),
        );
    }
    stream.write_all(&batch).unwrap();
    let mut replies = BufReader::new(stream);
    let got: Vec<String> = (0..commands.len())
        .map(|_| {
            let mut line = String::new();
            replies.read_line(&mut line).unwrap();
            line.trim_end().to_string()
        })
        .collect();
    let moved = format!("-MOVED {} {}", slot(away), owner(away));
    let want = [
        ":1",
        ":2",
        ":3",
        ":4",
        ":5",
        moved.as_str(),
        ":8",
        ":12",
        ":8",
    ];
    assert_eq!(got, want);
    // Each row holds what was added to it, in its own group, once.
    let mut con = nodes[0].redis();
    for (key, value) in [(a[0], 8), (a[1], 2), (a[2], 3), (b[0], 12), (b[1], 5)] {
        let v: i64 = redis::cmd("GET").arg(key.as_str()).query(&mut con).unwrap();
        assert_eq!(v, value, "{key}");
    }
    let elsewhere = nodes.iter().find(|n| n.resp.to_string() != here).unwrap();
    let v: Option<i64> = redis::cmd("GET")
        .arg(away.as_str())
        .query(&mut elsewhere.redis())
        .unwrap();
    assert_eq!(
        v.unwrap_or(0),
        0,
        "the refused increment was not applied anywhere"
    );
}

#[test]
fn three_nodes_serve_their_slots_and_send_the_rest_where_they_live() {
    let nats = Nats::start();
    let dirs: Vec<tempfile::TempDir> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
    let nodes: Vec<Server> = dirs.iter().map(|d| node(d.path(), &nats, "c1")).collect();
    // Before any map: nothing is served.
    let err = redis::cmd("INCR")
        .arg("weibo:1")
        .query::<i64>(&mut nodes[0].redis())
        .unwrap_err();
    assert!(
        err.to_string().to_uppercase().contains("CLUSTERDOWN"),
        "{err}"
    );

    let placed = cli(&nats, "c1", &["rebalance"]);
    assert_eq!(placed["moved_groups"], u64::from(GROUPS));
    until_serving(
        &nodes.iter().collect::<Vec<_>>(),
        placed["version"].as_u64().unwrap(),
    );

    // Every node names the same owners; the owner counts, the others say MOVED to it.
    let key = "weibo:{123}:likes";
    let owner = owner_of(&nodes[0], slot(key));
    for n in &nodes[1..] {
        assert_eq!(owner_of(n, slot(key)), owner);
    }
    let (home, others): (Vec<&Server>, Vec<&Server>) =
        nodes.iter().partition(|n| n.resp.to_string() == owner);
    assert_eq!(home.len(), 1, "one node owns the slot");
    for n in &others {
        let err = redis::cmd("INCR")
            .arg(key)
            .query::<i64>(&mut n.redis())
            .unwrap_err();
        let text = err.to_string();
        assert!(
            text.to_uppercase().contains("MOVED")
                && text.contains(&format!("{} {owner}", slot(key))),
            "{text}"
        );
    }
    let mut con = home[0].redis();
    for _ in 0..5 {
        let _: i64 = redis::cmd("INCR").arg(key).query(&mut con).unwrap();
    }
    let v: i64 = redis::cmd("HINCRBY")
        .arg("weibo:{123}")
        .arg("comments")
        .arg(2)
        .query(&mut con)
        .unwrap();
    assert_eq!(v, 2);
    let both: Vec<Option<i64>> = redis::cmd("MGET")
        .arg("weibo:{123}:likes")
        .arg("weibo:{123}:comments")
        .query(&mut con)
        .unwrap();
    assert_eq!(both, [Some(5), Some(2)]);
    let err = redis::cmd("MGET")
        .arg("weibo:1")
        .arg("weibo:2")
        .query::<Vec<Option<i64>>>(&mut con)
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("Keys in request don't hash to the same slot"),
        "{err}"
    );
    let myid: String = redis::cmd("CLUSTER").arg("MYID").query(&mut con).unwrap();
    assert_eq!(myid.len(), 40);
    let keyslot: i64 = redis::cmd("CLUSTER")
        .arg("KEYSLOT")
        .arg(key)
        .query(&mut con)
        .unwrap();
    assert_eq!(keyslot, i64::from(slot(key)));

    // After READONLY, the node that follows the slot's group (one replica per group)
    // serves reads of it from its copy; the other still answers MOVED, and writes are
    // MOVED on both.
    let mut served_by_follower = 0;
    for n in &others {
        let mut con = n.redis();
        let _: () = redis::cmd("READONLY").query(&mut con).unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            match redis::cmd("GET").arg(key).query::<Option<i64>>(&mut con) {
                Ok(Some(5)) => {
                    served_by_follower += 1;
                    break;
                }
                Ok(other) => assert!(
                    Instant::now() < deadline,
                    "the follower never caught up: {other:?}"
                ),
                Err(e) => {
                    assert!(e.to_string().to_uppercase().contains("MOVED"), "{e}");
                    break;
                }
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let err = redis::cmd("INCR")
            .arg(key)
            .query::<i64>(&mut con)
            .unwrap_err();
        assert!(err.to_string().to_uppercase().contains("MOVED"), "{err}");
    }
    assert_eq!(served_by_follower, 1, "one replica per group");

    // Ids: every node issues, from the id shards it leases in the cluster's bucket, so
    // no id comes twice.
    let mut seen = std::collections::HashSet::new();
    for n in &nodes {
        let mut pipe = redis::pipe();
        for _ in 0..3_000 {
            pipe.cmd("ID.NEXT");
        }
        let ids: Vec<String> = pipe.query(&mut n.redis()).unwrap();
        for id in ids {
            assert!(seen.insert(id.clone()), "id {id} issued twice");
        }
    }
    // A ticket sequence lives in its name's slot: its owner serves it, the others MOVED.
    let seq_owner = owner_of(&nodes[0], slot("orders"));
    for n in &nodes {
        let answer = redis::cmd("TICKET.NEXT")
            .arg("orders")
            .query::<i64>(&mut n.redis());
        if n.resp.to_string() == seq_owner {
            assert_eq!(answer.unwrap(), 1);
        } else {
            let err = answer.unwrap_err();
            assert!(err.to_string().to_uppercase().contains("MOVED"), "{err}");
        }
    }
    let owner_node = nodes
        .iter()
        .find(|n| n.resp.to_string() == seq_owner)
        .unwrap();
    let more: Vec<i64> = redis::cmd("TICKET.NEXT")
        .arg("orders")
        .arg(3)
        .query(&mut owner_node.redis())
        .unwrap();
    assert_eq!(more, [2, 3, 4]);
    // Over HTTP the same sequence goes on at its owner; the others answer 421 naming the
    // owner's HTTP address.
    let http = reqwest::blocking::Client::new();
    for n in &nodes {
        let answer = http
            .post(n.url("/api/tickets/orders?count=2"))
            .send()
            .unwrap();
        if n.resp.to_string() == seq_owner {
            assert_eq!(answer.status(), 200);
            let body: serde_json::Value = answer.json().unwrap();
            assert_eq!(body["ids"], serde_json::json!(["5", "6"]), "{body}");
        } else {
            assert_eq!(answer.status(), 421);
            let body: serde_json::Value = answer.json().unwrap();
            assert_eq!(body["owner"], owner_node.http.to_string(), "{body}");
        }
    }
    let after: i64 = redis::cmd("TICKET.NEXT")
        .arg("orders")
        .query(&mut owner_node.redis())
        .unwrap();
    assert_eq!(after, 7, "RESP and HTTP hand out one sequence");
    let bad = http
        .post(owner_node.url("/api/tickets/no%20spaces"))
        .send()
        .unwrap();
    assert_eq!(bad.status(), 400);
}

fn clients_dir() -> PathBuf {
    std::env::var_os("SHARDKIT_CLIENTS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").expect("HOME")).join(".cache/shardkit/clients")
        })
}

/// Runs a cluster client scenario (`program args… PORT`, see tests/clients/cluster.*)
/// against three nodes, adds a fourth and rebalances between its two rounds, and checks
/// that it ends with "ok" (a client that prints "scanned …" first is told to go on).
fn client_through_a_rebalance(name: &str, program: &Path, args: &[&str], env: &[(&str, PathBuf)]) {
    let nats = Nats::start();
    let dirs: Vec<tempfile::TempDir> = (0..4).map(|_| tempfile::tempdir().unwrap()).collect();
    let mut nodes = placed_cluster(&nats, name, &dirs[..3]);
    let mut child = Command::new(program)
        .args(args)
        .arg(nodes[0].resp.port().to_string())
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the clients (bash scripts/client-deps)");
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut next = || lines.next().and_then(Result::ok).unwrap_or_default();
    let first = next();
    if !first.starts_with("counted ") {
        let _ = child.kill();
        let out = child.wait_with_output().unwrap();
        panic!("{first}: {}", String::from_utf8_lossy(&out.stderr));
    }
    nodes.push(node(dirs[3].path(), &nats, name));
    let added = cli(&nats, name, &["add-node", &nodes[3].resp.to_string()]);
    assert_eq!(added["moved_groups"], u64::from(GROUPS / 4), "{added}");
    until_serving(
        &nodes.iter().collect::<Vec<_>>(),
        added["version"].as_u64().unwrap(),
    );
    writeln!(stdin, "go").unwrap();
    let mut last = next();
    // The new node serves a quarter of the groups, counted before it joined (looked at
    // before a client that goes on to FLUSHDB does so).
    let dbsize: i64 = redis::cmd("DBSIZE").query(&mut nodes[3].redis()).unwrap();
    if last.starts_with("scanned ") {
        writeln!(stdin, "flush").unwrap();
        last = next();
    }
    let output = child.wait_with_output().unwrap();
    assert!(
        last.starts_with("ok "),
        "{last}\nstderr: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(dbsize > 0, "the fourth node holds rows now");
}

fn script(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/clients")
        .join(name)
        .to_string_lossy()
        .into_owned()
}

#[test]
fn redis_py_cluster_counts_through_a_fourth_node_and_a_rebalance() {
    let python = clients_dir().join("venv/bin/python");
    client_through_a_rebalance("c2", &python, &[&script("cluster.py")], &[]);
}

/// A node client's scenario (`tests/clients/cluster.js`) as `kind`, on cluster `name`.
fn node_client_through_a_rebalance(name: &str, kind: &str) {
    let modules = clients_dir().join("node/node_modules");
    let js = script("cluster.js");
    client_through_a_rebalance(
        name,
        Path::new("node"),
        &[&js, kind],
        &[("NODE_PATH", modules)],
    );
}

#[test]
fn ioredis_cluster_counts_through_a_fourth_node_and_a_rebalance() {
    node_client_through_a_rebalance("c4", "ioredis");
}

#[test]
fn node_redis_create_cluster_counts_through_a_fourth_node_and_a_rebalance() {
    node_client_through_a_rebalance("c5", "node-redis");
}

/// `COUNTER.INCRBY key likes 1 <key>-<round>`: 1 to column `likes`, with a txid that
/// makes every retry of the same round count once.
fn counted_once(key: &str, round: impl std::fmt::Display) -> redis::Cmd {
    redis::cmd("COUNTER.INCRBY")
        .arg(key)
        .arg("likes")
        .arg(1)
        .arg(format!("{key}-{round}"))
        .clone()
}

/// A minimal cluster client: the slot table from `CLUSTER SLOTS`, `-MOVED` followed,
/// anything else (a dead node, `-TRYAGAIN`, `-CLUSTERDOWN`) retried after a pause with a
/// fresh table, until `deadline`.
struct Router {
    seeds: Vec<String>,
    owners: std::collections::HashMap<u16, String>,
}

impl Router {
    /// A router over `seeds` with its slot table read.
    fn new(seeds: Vec<String>) -> Router {
        let mut router = Router {
            seeds,
            owners: Default::default(),
        };
        router.refresh();
        router
    }

    fn refresh(&mut self) {
        for seed in &self.seeds {
            let Ok(client) = redis::Client::open(format!("redis://{seed}/")) else {
                continue;
            };
            let Ok(mut con) = client.get_connection_with_timeout(Duration::from_millis(300)) else {
                continue;
            };
            let Ok(ranges) = redis::cmd("CLUSTER")
                .arg("SLOTS")
                .query::<Vec<redis::Value>>(&mut con)
            else {
                continue;
            };
            self.owners.clear();
            for range in ranges {
                let (first, last, addr) = slot_range(range);
                for s in first..=last {
                    self.owners.insert(s, addr.clone());
                }
            }
            return;
        }
    }

    /// Adds 1 to column `likes` of every key, each with txid `<key>-<round>` and retried
    /// with it until acknowledged (60 s each): a total counts each round once.
    fn count_once(&mut self, keys: &[String], round: i64) {
        for key in keys {
            let cmd = counted_once(key, round);
            let _: i64 = self.run(key, &cmd, Instant::now() + Duration::from_secs(60));
        }
    }

    /// Runs `cmd` on the owner of `key`'s slot until it is answered or `deadline`.
    fn run<T: redis::FromRedisValue>(
        &mut self,
        key: &str,
        cmd: &redis::Cmd,
        deadline: Instant,
    ) -> T {
        let s = slot(key);
        loop {
            assert!(Instant::now() < deadline, "{key} was never served");
            let Some(addr) = self.owners.get(&s).cloned() else {
                self.refresh();
                std::thread::sleep(Duration::from_millis(100));
                continue;
            };
            let answer = redis::Client::open(format!("redis://{addr}/"))
                .and_then(|c| c.get_connection_with_timeout(Duration::from_millis(300)))
                .and_then(|mut con| {
                    con.set_read_timeout(Some(Duration::from_secs(3)))?;
                    cmd.query::<T>(&mut con)
                });
            match answer {
                Ok(v) => return v,
                Err(e) if e.code() == Some("MOVED") => {
                    let to = e
                        .detail()
                        .unwrap_or_default()
                        .split(' ')
                        .nth(1)
                        .unwrap_or_default();
                    self.owners.insert(s, to.to_owned());
                }
                Err(_) => {
                    std::thread::sleep(Duration::from_millis(10));
                    self.refresh();
                }
            }
        }
    }
}

#[test]
fn a_killed_nodes_groups_are_taken_by_their_replicas_and_nothing_acknowledged_is_lost() {
    let nats = Nats::start();
    let dirs: Vec<tempfile::TempDir> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
    let mut nodes = placed_cluster(&nats, "c3", &dirs);
    let mut router = Router::new(nodes.iter().map(|n| n.resp.to_string()).collect());
    let keys: Vec<String> = (0..120).map(|i| format!("weibo:{{{i}}}")).collect();
    let victim = nodes[2].resp.to_string();
    let killed_in_round = 1;
    let on_victim = keys
        .iter()
        .filter(|k| router.owners.get(&slot(k)) == Some(&victim))
        .count();
    assert!(on_victim > 0, "the victim owns some of the keys");
    let victim_seq = (0..1000)
        .map(|i| format!("seq{i}"))
        .find(|n| router.owners.get(&slot(n)) == Some(&victim))
        .unwrap();
    let mut tickets_before = 0;
    for _ in 0..5 {
        tickets_before = router.run(
            &victim_seq,
            redis::cmd("TICKET.NEXT").arg(&victim_seq),
            Instant::now() + Duration::from_secs(30),
        );
    }
    assert_eq!(tickets_before, 5);
    // Each increment has its own txid and is retried with it until acknowledged: the
    // total must be exact, whatever was retried where.
    let rounds = 3;
    let mut killed_at = None;
    for round in 0..rounds {
        if round == killed_in_round {
            // SIGKILL.
            nodes[2].child.kill().unwrap();
            let _ = nodes[2].child.wait();
            killed_at = Some(Instant::now());
        }
        router.count_once(&keys, round);
    }
    router.seeds.retain(|s| *s != victim);
    router.refresh();
    // A ticket sequence of the killed node's slots goes on past what it handed out.
    let after: i64 = router.run(
        &victim_seq,
        redis::cmd("TICKET.NEXT").arg(&victim_seq),
        Instant::now() + Duration::from_secs(30),
    );
    assert_eq!(
        after,
        tickets_before + 1,
        "no ticket lost or handed out twice"
    );
    assert!(
        router.owners.values().all(|a| *a != victim),
        "every slot is served by a live node"
    );
    for key in &keys {
        let deadline = Instant::now() + Duration::from_secs(30);
        let v: Option<i64> = router.run(key, redis::cmd("HGET").arg(key).arg("likes"), deadline);
        assert_eq!(
            v,
            Some(rounds),
            "{key}: every acknowledged increment, none twice"
        );
    }
    let killed_at: Instant = killed_at.unwrap();
    eprintln!(
        "{on_victim} of {} keys on the killed node; all counted again within {:?} of the kill",
        keys.len(),
        killed_at.elapsed()
    );
}

/// A node paused past its group leases (SIGSTOP for 2.5 s against a 1 s lease) finds
/// every one of them lapsed when it wakes. No other node took them (it is the only
/// one), so it sets the ones NATS expired again and leads on; a lease another node had
/// taken would have it reopen just that group from its snapshot and stream. Either way
/// the process lives on and every acknowledged increment is there, none twice.
#[test]
fn a_node_paused_past_its_leases_reopens_its_groups_and_keeps_serving() {
    let nats = Nats::start();
    let dirs = vec![tempfile::tempdir().unwrap()];
    let mut nodes = placed_cluster(&nats, "p1", &dirs);
    let mut router = Router::new(vec![nodes[0].resp.to_string()]);
    let keys: Vec<String> = (0..48).map(|i| format!("weibo:{{{i}}}")).collect();
    let rounds = 3;
    for round in 0..rounds {
        if round == 1 {
            common::replication::signal(&nodes[0], "-STOP");
            std::thread::sleep(Duration::from_millis(2500));
            common::replication::signal(&nodes[0], "-CONT");
        }
        router.count_once(&keys, round);
    }
    lived_on_and_reopened(&mut nodes[0], &mut router, &keys, rounds);
}

/// NATS itself gone for longer than the lease (SIGKILLed, restarted 4 s later from its
/// store): the node's groups wait for it (a leader's publishes and renewals are held
/// and repeated), then either renew their leases or, where a lease key expired
/// meanwhile, set it again (nobody else took it); either way they serve again, every
/// acknowledged increment there once, the node never exiting.
#[test]
fn groups_come_back_after_a_nats_outage_longer_than_the_lease() {
    let mut nats = Nats::start();
    let dirs = vec![tempfile::tempdir().unwrap()];
    let mut nodes = placed_cluster(&nats, "o1", &dirs);
    let mut router = Router::new(vec![nodes[0].resp.to_string()]);
    let keys: Vec<String> = (0..32).map(|i| format!("weibo:{{{i}}}")).collect();
    router.count_once(&keys, 0);
    nats.outage(Duration::from_secs(4));
    router.count_once(&keys, 1);
    router.count_once(&keys, 2);
    lived_on_and_reopened(&mut nodes[0], &mut router, &keys, 3);
}

/// What a one-node cluster whose group leases were in doubt must show: the process still
/// runs, every key holds exactly `rounds` (each round counted once), and its log says
/// it reopened its groups, renewed their leases or set expired ones again once NATS
/// answered again (so the leases were indeed in doubt, and the test tested that).
fn lived_on_and_reopened(node: &mut Server, router: &mut Router, keys: &[String], rounds: i64) {
    assert!(
        node.child.try_wait().unwrap().is_none(),
        "the node is still running"
    );
    for key in keys {
        let v: Option<i64> = router.run(
            key,
            redis::cmd("HGET").arg(key).arg("likes"),
            Instant::now() + Duration::from_secs(30),
        );
        assert_eq!(
            v,
            Some(rounds),
            "{key}: every acknowledged increment, none twice"
        );
    }
    // The log line may trail the answers by a moment (a renewal retried every 100 ms).
    let came_back = |log: &str| {
        log.contains("reopening the group")
            || log.contains("lease is renewed again")
            || log.contains("lease expired while it could not be renewed; set again")
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    while !came_back(&node.log.lock().unwrap().join("\n")) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let log = node.log.lock().unwrap().join("\n");
    assert!(
        came_back(&log),
        "the node's groups waited for NATS and came back: {log}"
    );
}

/// The HTTP counter routes on a cluster: a row is served by the owner of the slot of
/// `<counter>:{<key>}` (the RESP key with the id as a hash tag), and is the same row as
/// over RESP; any other node answers 421 with `owner`, the owner's HTTP address.
#[test]
fn http_counter_routes_are_served_by_the_owner_of_the_rows_slot() {
    let nats = Nats::start();
    let dirs: Vec<tempfile::TempDir> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
    let nodes = placed_cluster(&nats, "h3", &dirs);
    let by_http: std::collections::HashMap<String, &Server> =
        nodes.iter().map(|n| (n.http.to_string(), n)).collect();
    let by_resp: std::collections::HashMap<String, &Server> =
        nodes.iter().map(|n| (n.resp.to_string(), n)).collect();
    let mut router = Router::new(nodes.iter().map(|n| n.resp.to_string()).collect());
    let http = reqwest::blocking::Client::new();
    let keys = 24;
    let mut sent_on = 0;
    for i in 0..keys {
        let tagged = format!("weibo:{{{i}}}");
        let owner = by_resp[&router.owners[&slot(&tagged)]];
        let body = serde_json::json!({"column": "likes", "by": i + 1, "txid": format!("t{i}")});
        let incr = |n: &Server| {
            http.post(n.url(&format!("/api/counters/weibo/{i}/incr")))
                .json(&body)
                .send()
                .unwrap()
        };
        let first = incr(&nodes[0]);
        let answer = if first.status().as_u16() == 421 {
            sent_on += 1;
            let refusal: serde_json::Value = first.json().unwrap();
            let named = refusal["owner"].as_str().unwrap_or_default().to_string();
            assert_eq!(
                named,
                owner.http.to_string(),
                "{i}: the 421 names the slot's owner: {refusal}"
            );
            incr(by_http[&named])
        } else {
            assert_eq!(owner.http, nodes[0].http, "{i}: served where it is owned");
            first
        };
        assert_eq!(answer.status().as_u16(), 200, "{i}: {:?}", answer.text());
        let answer: serde_json::Value = answer.json().unwrap();
        assert_eq!(answer["value"], i + 1);
        // The same row over RESP, and over HTTP from its owner.
        let v: Option<i64> = router.run(
            &tagged,
            redis::cmd("HGET").arg(&tagged).arg("likes"),
            Instant::now() + Duration::from_secs(30),
        );
        assert_eq!(v, Some(i + 1), "{tagged}");
        let row: serde_json::Value = http
            .get(owner.url(&format!("/api/counters/weibo/{{{i}}}")))
            .send()
            .unwrap()
            .json()
            .unwrap();
        assert_eq!(row["values"]["likes"], i + 1, "{row}");
    }
    assert!(
        sent_on > 0 && sent_on < keys,
        "node 0 owns some of the rows, not all ({sent_on} sent on)"
    );
    // mget on a node: its own rows in one request; with a row of another node's, 421.
    let node = &nodes[1];
    let (mine, theirs): (Vec<i64>, Vec<i64>) = (0..keys)
        .partition(|i| router.owners[&slot(&format!("weibo:{{{i}}}"))] == node.resp.to_string());
    assert!(!mine.is_empty() && !theirs.is_empty());
    let ask = |ids: &[i64]| {
        http.post(node.url("/api/counters/weibo/mget"))
            .json(
                &serde_json::json!({"keys": ids.iter().map(|i| i.to_string()).collect::<Vec<_>>()}),
            )
            .send()
            .unwrap()
    };
    let rows: serde_json::Value = ask(&mine).json().unwrap();
    for (row, i) in rows["rows"].as_array().unwrap().iter().zip(&mine) {
        assert_eq!(row["values"]["likes"], i + 1, "{row}");
    }
    let refused = ask(&[mine[0], theirs[0]]);
    assert_eq!(refused.status().as_u16(), 421);
}

#[test]
fn redis_benchmark_runs_incr_and_get_against_the_cluster() {
    let nats = Nats::start();
    let dirs: Vec<tempfile::TempDir> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
    let nodes = placed_cluster(&nats, "c6", &dirs);
    let port = nodes[1].resp.port().to_string();
    let output = Command::new("redis-benchmark")
        .args(["--cluster", "-h", "127.0.0.1", "-p", &port])
        .args([
            "-t", "incr,get", "-n", "3000", "-r", "100000", "-c", "10", "-e", "-q",
        ])
        .output()
        .expect("redis-benchmark (apt-get install redis-tools)");
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{text}");
    assert!(
        text.matches("Master ").count() == 3,
        "redis-benchmark found the three masters: {text}"
    );
    for test in ["INCR: ", "GET: "] {
        assert!(
            text.lines()
                .any(|l| l.contains(test) && l.contains("requests per second")),
            "{test} ran: {text}"
        );
    }
    assert!(!text.to_lowercase().contains("error"), "{text}");
    // The increments landed on all three nodes' groups.
    for n in &nodes {
        let rows: i64 = redis::cmd("DBSIZE").query(&mut n.redis()).unwrap();
        assert!(rows > 0, "node {} holds some of the keys", n.resp);
    }
}

#[test]
fn a_fourth_node_takes_a_quarter_of_the_groups_under_load_and_nothing_acknowledged_is_lost() {
    let nats = Nats::start();
    let dirs: Vec<tempfile::TempDir> = (0..4).map(|_| tempfile::tempdir().unwrap()).collect();
    let mut nodes = placed_cluster(&nats, "c7", &dirs[..3]);
    nodes.push(node(dirs[3].path(), &nats, "c7"));
    let seeds: Vec<String> = nodes.iter().map(|n| n.resp.to_string()).collect();
    // The load runs rounds until the move is done, then one more.
    let round_now = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let moved = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let load = {
        let (round_now, moved) = (
            std::sync::Arc::clone(&round_now),
            std::sync::Arc::clone(&moved),
        );
        std::thread::spawn(move || {
            let mut router = Router::new(seeds);
            let keys: Vec<String> = (0..120).map(|i| format!("weibo:{{{i}}}")).collect();
            let mut slowest = Duration::ZERO;
            let mut round = 0;
            let mut last = None;
            while last.is_none_or(|l| round <= l) {
                round_now.store(round, std::sync::atomic::Ordering::Release);
                for key in &keys {
                    let cmd = counted_once(key, round);
                    let asked = Instant::now();
                    let _: i64 = router.run(key, &cmd, asked + Duration::from_secs(60));
                    slowest = slowest.max(asked.elapsed());
                }
                if last.is_none() && moved.load(std::sync::atomic::Ordering::Acquire) {
                    last = Some(round + 1);
                }
                round += 1;
            }
            (router, keys, slowest, round)
        })
    };
    while round_now.load(std::sync::atomic::Ordering::Acquire) < 1 {
        std::thread::sleep(Duration::from_millis(5));
    }
    let added = cli(&nats, "c7", &["add-node", &nodes[3].resp.to_string()]);
    assert_eq!(added["moved_groups"], u64::from(GROUPS / 4), "{added}");
    assert_eq!(added["prepared"]["followers_ready"], true, "{added}");
    moved.store(true, std::sync::atomic::Ordering::Release);
    let (mut router, keys, slowest, rounds) = load.join().unwrap();
    router.refresh();
    for key in &keys {
        let deadline = Instant::now() + Duration::from_secs(30);
        let v: Option<i64> = router.run(key, redis::cmd("HGET").arg(key).arg("likes"), deadline);
        assert_eq!(
            v,
            Some(rounds as i64),
            "{key}: every acknowledged increment, none twice"
        );
    }
    eprintln!(
        "{rounds} rounds; slowest increment through the move (retries included): {slowest:?}"
    );
}

/// Every key `SCAN` returns on `node`, walked `COUNT 7` at a time.
fn scanned(node: &Server) -> Vec<String> {
    let mut con = node.redis();
    let mut keys = Vec::new();
    let mut cursor = 0u64;
    for _ in 0..10_000 {
        let (next, page): (u64, Vec<String>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("COUNT")
            .arg(7)
            .query(&mut con)
            .unwrap();
        keys.extend(page);
        if next == 0 {
            return keys;
        }
        cursor = next;
    }
    panic!("SCAN on {} never ended", node.resp)
}

/// The sum of every value under `key` (a row's columns, or a cell) on the owner of
/// its slot.
fn values_under(router: &mut Router, key: &str) -> i64 {
    let deadline = Instant::now() + Duration::from_secs(30);
    let kind: String = router.run(key, redis::cmd("TYPE").arg(key), deadline);
    match kind.as_str() {
        "hash" => {
            let row: std::collections::HashMap<String, i64> =
                router.run(key, redis::cmd("HGETALL").arg(key), deadline);
            row.values().sum()
        }
        "string" => router.run(key, redis::cmd("GET").arg(key), deadline),
        other => panic!("{key} is a {other}"),
    }
}

#[test]
fn each_node_scans_counts_and_flushes_the_keys_of_the_groups_it_leads() {
    let nats = Nats::start();
    let dirs: Vec<tempfile::TempDir> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
    let nodes = placed_cluster(&nats, "k3", &dirs);
    let mut router = Router::new(nodes.iter().map(|n| n.resp.to_string()).collect());
    let deadline = Instant::now() + Duration::from_secs(60);
    // Three spellings of rows: hash-tagged (one slot per row), plain rows, and cells.
    let mut written = 0i64;
    for i in 0..40 {
        let tagged = format!("weibo:{{{i}}}");
        let _: i64 = router.run(
            &tagged,
            redis::cmd("HINCRBY").arg(&tagged).arg("likes").arg(2),
            deadline,
        );
        let _: i64 = router.run(
            &tagged,
            redis::cmd("HINCRBY").arg(&tagged).arg("shares").arg(1),
            deadline,
        );
        let page = format!("page:{i}");
        let _: i64 = router.run(&page, redis::cmd("INCRBY").arg(&page).arg(5), deadline);
        let cell = format!("user:{i}:follows");
        let _: i64 = router.run(&cell, redis::cmd("INCR").arg(&cell), deadline);
        written += 2 + 1 + 5 + 1;
    }
    let ticket: i64 = router.run("jobs", redis::cmd("TICKET.NEXT").arg("jobs"), deadline);

    // Each node lists only keys of its own slots; together they hold every value once.
    let mut total = 0;
    let mut all = std::collections::HashSet::new();
    for node in &nodes {
        let keys = scanned(node);
        let mut dedup = keys.clone();
        dedup.sort();
        dedup.dedup();
        assert_eq!(
            dedup.len(),
            keys.len(),
            "a key listed twice on {}",
            node.resp
        );
        for key in &keys {
            assert_eq!(
                owner_of(node, slot(key)),
                node.resp.to_string(),
                "{key} on {}",
                node.resp
            );
            assert!(
                !key.starts_with("shardkit_tickets"),
                "a ticket sequence listed: {key}"
            );
            total += values_under(&mut router, key);
            assert!(all.insert(key.clone()), "{key} listed by two nodes");
        }
        // DBSIZE and INFO's keyspace count this node's groups, as its SCAN does (a key
        // per row, or per stored cell of a row spelled by cells).
        let rows: i64 = redis::cmd("DBSIZE").query(&mut node.redis()).unwrap();
        assert!(
            rows > 0 && rows as usize <= keys.len(),
            "{rows} rows, {} keys",
            keys.len()
        );
        let info: String = redis::cmd("INFO")
            .arg("keyspace")
            .query(&mut node.redis())
            .unwrap();
        assert!(info.contains(&format!("db0:keys={rows},")), "{info}");
        // COUNTKEYSINSLOT agrees with SCAN; GETKEYSINSLOT lists those keys.
        let mut by_slot: std::collections::HashMap<u16, Vec<String>> = Default::default();
        for key in &keys {
            by_slot.entry(slot(key)).or_default().push(key.clone());
        }
        for (s, mut in_slot) in by_slot {
            let n: usize = redis::cmd("CLUSTER")
                .arg("COUNTKEYSINSLOT")
                .arg(s)
                .query(&mut node.redis())
                .unwrap();
            assert_eq!(n, in_slot.len(), "slot {s} on {}", node.resp);
            let mut listed: Vec<String> = redis::cmd("CLUSTER")
                .arg("GETKEYSINSLOT")
                .arg(s)
                .arg(100)
                .query(&mut node.redis())
                .unwrap();
            listed.sort();
            in_slot.sort();
            assert_eq!(listed, in_slot);
        }
    }
    assert_eq!(total, written, "SCAN's keys hold every value once: {all:?}");
    assert!(
        all.contains("weibo:{0}"),
        "a hash-tagged row keeps its spelling"
    );
    // Redis's errors for a slot out of range.
    let err = redis::cmd("CLUSTER")
        .arg("COUNTKEYSINSLOT")
        .arg(16384)
        .query::<i64>(&mut nodes[0].redis())
        .unwrap_err();
    assert_eq!(err.detail(), Some("Invalid slot"), "{err:?}");

    // FLUSHDB on every primary (what a cluster client does) empties the cluster; the
    // ticket sequence goes on.
    for node in &nodes {
        let ok: String = redis::cmd("FLUSHDB").query(&mut node.redis()).unwrap();
        assert_eq!(ok, "OK");
    }
    for node in &nodes {
        assert_eq!(scanned(node), Vec::<String>::new());
        let rows: i64 = redis::cmd("DBSIZE").query(&mut node.redis()).unwrap();
        assert_eq!(rows, 0, "{}", node.resp);
    }
    let next: i64 = router.run("jobs", redis::cmd("TICKET.NEXT").arg("jobs"), deadline);
    assert!(
        next > ticket,
        "a ticket handed out again after FLUSHDB: {next} <= {ticket}"
    );
    let got: Option<i64> = router.run(
        "weibo:{3}",
        redis::cmd("HGET").arg("weibo:{3}").arg("likes"),
        deadline,
    );
    assert_eq!(got.unwrap_or(0), 0, "a flushed row still counts");
}

/// `COUNTER.INFO name` on `node` as field → value (columns left out).
fn counter_info(
    node: &Server,
    name: &str,
) -> redis::RedisResult<std::collections::HashMap<String, redis::Value>> {
    redis::cmd("COUNTER.INFO")
        .arg(name)
        .query(&mut node.redis())
}

#[test]
fn counter_create_and_addcol_on_one_node_reach_every_group_of_the_cluster() {
    let nats = Nats::start();
    let dirs: Vec<tempfile::TempDir> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
    let nodes = placed_cluster(&nats, "s3", &dirs);
    let mut router = Router::new(nodes.iter().map(|n| n.resp.to_string()).collect());
    let ok: String = redis::cmd("COUNTER.CREATE")
        .arg("visits")
        .query(&mut nodes[0].redis())
        .unwrap();
    assert_eq!(ok, "OK");
    // Known on every node at once (COUNTER.INFO reads the schema again if need be).
    for node in &nodes {
        let info = counter_info(node, "visits").unwrap();
        assert_eq!(info["rows"], redis::Value::Int(0), "{info:?}");
    }
    // Refused as on a lone node, from any node.
    let err = redis::cmd("COUNTER.CREATE")
        .arg("visits")
        .query::<String>(&mut nodes[1].redis())
        .unwrap_err();
    assert!(err.to_string().contains("already exists"), "{err}");
    let ok: String = redis::cmd("COUNTER.ADDCOL")
        .arg("visits")
        .arg("n")
        .arg("BITS")
        .arg(8)
        .arg("MAX")
        .arg(32)
        .query(&mut nodes[1].redis())
        .unwrap();
    assert_eq!(ok, "OK");
    for (args, says) in [
        (vec!["visits", "n"], "already has a column"),
        (vec!["visits", "m", "BITS", "12"], "bits must be"),
        (vec!["nope", "n"], "does not exist"),
    ] {
        let err = redis::cmd("COUNTER.ADDCOL")
            .arg(&args)
            .query::<String>(&mut nodes[2].redis())
            .unwrap_err();
        assert!(err.to_string().contains(says), "{args:?}: {err}");
    }
    // Written at once, in every group: the column is there as COUNTER.ADDCOL made it
    // (MAX 32: 5e9 is refused everywhere), whether the group's node has read the schema
    // yet or not (a write that would make it with auto_create's defaults, which would
    // take 5e9, reads the schema first).
    let keys: Vec<String> = (0..64).map(|i| format!("visits:{{{i}}}")).collect();
    let groups: std::collections::HashSet<u16> =
        keys.iter().map(|k| slot(k) / (16384 / GROUPS)).collect();
    assert_eq!(
        groups.len(),
        usize::from(GROUPS),
        "the keys reach every group"
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    for key in &keys {
        let big = redis::cmd("HINCRBY")
            .arg(key)
            .arg("n")
            .arg(5_000_000_000i64)
            .clone();
        let addr = owner_of(&nodes[0], slot(key));
        let node = nodes.iter().find(|n| n.resp.to_string() == addr).unwrap();
        let answer: redis::RedisResult<i64> = big.query(&mut node.redis());
        let err = answer.expect_err(key);
        assert!(!err.to_string().contains("MOVED"), "{key}: {err}");
        let _: i64 = router.run(
            key,
            redis::cmd("HINCRBY").arg(key).arg("n").arg(1),
            deadline,
        );
    }
    // COUNTER.INFO answers for each node's groups: together, every row.
    let mut rows = 0;
    for node in &nodes {
        let info = counter_info(node, "visits").unwrap();
        let redis::Value::Int(n) = info["rows"] else {
            panic!("rows: {info:?}")
        };
        rows += n;
    }
    assert_eq!(rows, 64);
    assert!(counter_info(&nodes[0], "nope").is_err());
}

/// On a NATS cluster of three, groups keep three copies unless `[cluster]
/// stream_replicas` says otherwise, and `cluster status` shows each group's copies and
/// stream leader; on one NATS server they keep one, and the node says what that risks.
#[test]
fn groups_keep_three_copies_on_three_nats_servers_and_status_shows_them() {
    let nats = common::nats_cluster::NatsCluster::start(3);
    let urls = nats.urls.join(",");
    let dirs: Vec<tempfile::TempDir> = (0..2).map(|_| tempfile::tempdir().unwrap()).collect();
    let r3 = node_on(dirs[0].path(), &urls, "r3", "");
    let r1 = node_on(dirs[1].path(), &urls, "r1", "stream_replicas = 1");
    for (name, node, copies) in [("r3", &r3, 3), ("r1", &r1, 1)] {
        let placed = cli_on(&urls, name, &["rebalance"]);
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let status = cli_on(&urls, name, &["status"]);
            let streams = status["streams"].as_array().cloned().unwrap_or_default();
            let made = streams
                .iter()
                .filter(|s| s["replicas"] == copies && s["leader"].is_string())
                .count();
            if status["version"].as_u64() >= placed["version"].as_u64()
                && made == usize::from(GROUPS)
            {
                break;
            }
            if Instant::now() >= deadline {
                panic!(
                    "{name}: the groups were not placed with {copies} copies in 60 s: \
                     {status}\nnode log:\n{}",
                    node.log.lock().unwrap().join("\n")
                );
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        let log = node.log.lock().unwrap().join("\n");
        assert!(
            !log.contains("cluster.stream_replicas is not set"),
            "{name}: {log}"
        );
    }

    // The node's own settings file is enough for the command line: servers and name.
    let from_file = common::cli::output_within(
        Command::new(env!("CARGO_BIN_EXE_shardkit"))
            .args(["cluster", "status", "--config"])
            .arg(dirs[0].path().join("node.toml"))
            .env_remove("SHARDKIT_NATS_URL"),
        Duration::from_secs(60),
    )
    .unwrap_or_else(|e| panic!("shardkit cluster status --config: {e}"));
    assert!(
        from_file.status.success(),
        "{}",
        String::from_utf8_lossy(&from_file.stderr)
    );
    let status: serde_json::Value = serde_json::from_slice(&from_file.stdout).unwrap();
    assert_eq!(status["cluster"], "r3");
    assert_eq!(
        status["streams"].as_array().map(Vec::len),
        Some(usize::from(GROUPS))
    );

    // One NATS server: one copy, and the node says so.
    let single = Nats::start();
    let dir = tempfile::tempdir().unwrap();
    let lone = node(dir.path(), &single, "lone");
    let log = lone.log.lock().unwrap().join("\n");
    assert!(log.contains("cluster.stream_replicas is not set"), "{log}");
}

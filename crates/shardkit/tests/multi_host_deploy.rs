//! Deployed across hosts as docs/deploy.md shows it: three hosts (network namespaces
//! with their own addresses on one bridge, made and removed by the test), a
//! three-server NATS cluster whose clients must log in and speak TLS, and one shardkit
//! per host listening on all interfaces (`0.0.0.0`) and announcing its host's address,
//! every node given the whole NATS server list.
//!
//! Replication mode: every node names the leader by its announced address (ROLE, INFO,
//! SENTINEL, the HTTP 421); from the client host redis-py's Sentinel finds the leader
//! and writes through it; the NATS server on the leader's host is killed and the nodes
//! keep going through the others, every node ending with every acknowledged increment;
//! behind nginx on the third host (a trusted proxy), a client's own address, not the
//! proxy's, reaches the creation limit and a click's country.
//!
//! Cluster mode: `shardkit cluster rebalance` and `status --config` run from a host,
//! redis-py's RedisCluster and `redis-benchmark --cluster` from the client host, by
//! the announced addresses.

#![cfg(feature = "nats")]

mod common;

use common::hosts::nats::{Login, NatsOnHosts};
use common::hosts::{self, Hosts};
use common::pki::Pki;
use common::Server;
use serde_json::{json, Value};
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

const KEY: &str = "multi-host-admin-key-0123456789";
const NATS_USER: &str = "shardkit";
const NATS_PASSWORD: &str = "nats-secret-0123456789";
const RESP_PORT: u16 = 6380;
const HTTP_PORT: u16 = 8080;
const PROXY_PORT: u16 = 8088;
const STORE: &str = "deploy";
/// Slot groups of the cluster-mode nodes (few, so nodes open few stores).
const GROUPS: u16 = 8;

/// The hosts, the NATS cluster on them and the files every node is given.
struct Deployment {
    hosts: Hosts,
    nats: NatsOnHosts,
    pki: Pki,
    dir: tempfile::TempDir,
}

/// Makes the hosts and starts the NATS cluster; `None` (the test is skipped, saying
/// why) where namespaces cannot be made.
fn deploy() -> Option<Deployment> {
    if let Some(why) = hosts::unavailable() {
        eprintln!("skipped: {why}");
        return None;
    }
    let hosts = Hosts::make(3).expect("the hosts are made");
    let dir = tempfile::tempdir().unwrap();
    let addrs: Vec<&str> = hosts.hosts.iter().map(|h| h.addr.as_str()).collect();
    let pki = Pki::make_for(&dir.path().join("pki"), &addrs);
    std::fs::write(
        dir.path().join("nats-password"),
        format!("{NATS_PASSWORD}\n"),
    )
    .unwrap();
    let nats = NatsOnHosts::start_secured(
        &hosts,
        Path::new("nats-server"),
        Login {
            user: NATS_USER.into(),
            password: NATS_PASSWORD.into(),
            ca: pki.ca.clone(),
            cert: pki.server_cert.clone(),
            key: pki.server_key.clone(),
        },
    );
    nats.wait_jetstream(0, Duration::from_secs(60))
        .unwrap_or_else(|e| panic!("{e}\n{}", nats.log_tails(20)));
    Some(Deployment {
        hosts,
        nats,
        pki,
        dir,
    })
}

impl Deployment {
    fn addr(&self, i: usize) -> &str {
        &self.hosts.hosts[i].addr
    }

    fn resp(&self, i: usize) -> SocketAddr {
        format!("{}:{RESP_PORT}", self.addr(i)).parse().unwrap()
    }

    /// The `[nats]` section of every node's file: every server, the login (the
    /// password from a file), the servers' CA.
    fn nats_section(&self) -> String {
        let urls: Vec<String> = (0..3).map(|i| format!("{:?}", self.nats.url(i))).collect();
        format!(
            "[nats]\nurl = [{}]\nuser = {NATS_USER:?}\npassword_file = {:?}\ntls_ca = {:?}\n",
            urls.join(", "),
            self.dir.path().join("nats-password"),
            self.pki.ca
        )
    }

    /// Writes `body` as the settings file `{name}.toml` and starts shardkit on host `i`
    /// with it, trying again while JetStream settles (60 s at most).
    fn start_node(&self, i: usize, name: &str, body: &str) -> Server {
        let file = self.dir.path().join(format!("{name}.toml"));
        std::fs::write(&file, body).unwrap();
        let data = self.dir.path().join(format!("{name}-data"));
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            match Server::try_start_in(
                &self.hosts.exec(i),
                &data,
                &["--config", file.to_str().unwrap()],
                &[],
            ) {
                Ok(server) => return server,
                Err(log) if Instant::now() > deadline => {
                    panic!("{name} did not start: {log}\n{}", self.nats.log_tails(20))
                }
                Err(_) => std::thread::sleep(Duration::from_millis(500)),
            }
        }
    }

    /// Runs `program` with `args` on the client host; its stdout, or a panic with
    /// everything it said.
    fn on_client(&self, program: &Path, args: &[&str]) -> String {
        on_host(&self.hosts.client.ns, program, args)
    }
}

/// Runs `program` with `args` in namespace `ns`; its stdout, or a panic.
fn on_host(ns: &str, program: &Path, args: &[&str]) -> String {
    let output = Command::new("ip")
        .args(["netns", "exec", ns])
        .arg(program)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {program:?}: {e}"));
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "{program:?} {args:?}: {}\nstdout: {stdout}\nstderr: {}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

/// An authenticated connection to `addr`.
fn redis_at(addr: SocketAddr) -> redis::RedisResult<redis::Connection> {
    redis::Client::open(format!("redis://:{KEY}@{addr}/"))?
        .get_connection_with_timeout(Duration::from_secs(2))
}

fn eventually<T>(what: &str, within: Duration, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + within;
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Where `scripts/client-deps` installs redis-py.
fn python() -> PathBuf {
    let dir = std::env::var_os("SHARDKIT_CLIENTS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").expect("HOME")).join(".cache/shardkit/clients")
        });
    let python = dir.join("venv/bin/python");
    assert!(
        python.exists(),
        "needs the pinned clients: run `bash scripts/client-deps` (the test command does)"
    );
    python
}

/// `ROLE` in short: `master`, or the host a replica follows.
fn role(addr: SocketAddr) -> Option<String> {
    let reply: redis::Value = redis::cmd("ROLE").query(&mut redis_at(addr).ok()?).ok()?;
    let redis::Value::Array(items) = reply else {
        return None;
    };
    let text = |v: &redis::Value| match v {
        redis::Value::BulkString(b) => Some(String::from_utf8_lossy(b).into_owned()),
        redis::Value::SimpleString(s) => Some(s.clone()),
        _ => None,
    };
    match text(items.first()?)?.as_str() {
        "master" => Some("master".into()),
        "slave" => {
            let port = match items.get(2)? {
                redis::Value::Int(p) => p.to_string(),
                other => text(other)?,
            };
            Some(format!("{}:{port}", text(items.get(1)?)?))
        }
        _ => None,
    }
}

/// redis-py's Sentinel on the client host: finds the leader, increments `deploy:1`
/// `count` times from number `first` on (each with its own txid, resent on failure),
/// prints the leader before and after and `ok`.
const SENTINEL_CLIENT: &str = r#"
import sys, time
from redis.exceptions import ConnectionError, ResponseError, TimeoutError
from redis.sentinel import Sentinel
sentinels = [(h, int(p)) for h, p in (a.rsplit(":", 1) for a in sys.argv[1].split(","))]
key, store, first, count = sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
kw = {"socket_timeout": 2, "socket_connect_timeout": 1}
s = Sentinel(sentinels, sentinel_kwargs=dict(kw, password=key), password=key, **kw)
print("master %s:%d" % s.discover_master(store), flush=True)
m = s.master_for(store, **kw)
retries = 0
for n in range(first, first + count):
    deadline = time.monotonic() + 60
    while True:
        try:
            m.execute_command("COUNTER.INCRBY", "deploy:1", "hits", 1, f"mh-{n}")
            break
        except (ConnectionError, TimeoutError, ResponseError) as e:
            retries += 1
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)
print("master %s:%d" % s.discover_master(store), flush=True)
print(f"ok {count} {retries}", flush=True)
"#;

#[test]
fn replication_mode_across_three_hosts_on_a_nats_cluster_with_logins_and_tls() {
    let Some(mut d) = deploy() else { return };
    let proxy = d.addr(2).to_string();
    let client: Ipv4Addr = d.hosts.client.addr.parse().unwrap();
    let other_client: Ipv4Addr = d.addr(1).parse().unwrap();
    let geo = d.dir.path().join("countries.mmdb");
    std::fs::write(
        &geo,
        common::mmdb::country_db(&[(client, "NZ"), (other_client, "JP")]),
    )
    .unwrap();
    let nodes: Vec<Server> = (0..3)
        .map(|i| {
            let body = format!(
                "api_key = {KEY:?}\nresp = \"0.0.0.0:{RESP_PORT}\"\n\
                 [http]\nlisten = \"0.0.0.0:{HTTP_PORT}\"\ntrusted_proxies = [{proxy:?}]\n\
                 {nats}\
                 [counters]\nlog = \"jetstream\"\nrole = \"auto\"\nstore = {STORE:?}\n\
                 stream_replicas = 3\nlease_ms = 2000\nannounce = \"{addr}:{RESP_PORT}\"\n\
                 [links]\ngeoip_db = {geo:?}\nclick_flush_ms = 50\n\
                 create_per_second = 1\ncreate_burst = 1\n",
                nats = d.nats_section(),
                addr = d.addr(i),
            );
            d.start_node(i, &format!("repl-h{i}"), &body)
        })
        .collect();

    // One leader; every replica follows it by its announced address.
    let leader = eventually(
        "one node leads and the others follow it",
        Duration::from_secs(60),
        || {
            let roles: Vec<Option<String>> = (0..3).map(|i| role(d.resp(i))).collect();
            let leaders: Vec<usize> = (0..3)
                .filter(|&i| roles[i].as_deref() == Some("master"))
                .collect();
            let [leader] = leaders[..] else { return None };
            let announced = d.resp(leader).to_string();
            (0..3)
                .filter(|&i| i != leader)
                .all(|i| roles[i].as_deref() == Some(announced.as_str()))
                .then_some(leader)
        },
    );
    let leader_addr = d.addr(leader).to_string();
    for i in 0..3 {
        let mut con = redis_at(d.resp(i)).unwrap();
        let master: Vec<String> = redis::cmd("SENTINEL")
            .arg("get-master-addr-by-name")
            .arg(STORE)
            .query(&mut con)
            .unwrap();
        assert_eq!(
            master,
            [leader_addr.clone(), RESP_PORT.to_string()],
            "node h{i}"
        );
        let info: String = redis::cmd("INFO")
            .arg("replication")
            .query(&mut con)
            .unwrap();
        assert!(
            !info.contains("0.0.0.0"),
            "node h{i} hands out 0.0.0.0: {info}"
        );
        if i != leader {
            assert!(
                info.contains(&format!("master_host:{leader_addr}")),
                "node h{i}: {info}"
            );
            // A write over HTTP on a replica names the leader's announced HTTP address.
            let answer = reqwest::blocking::Client::new()
                .post(format!(
                    "http://{}:{HTTP_PORT}/api/counters/{STORE}/1/incr",
                    d.addr(i)
                ))
                .bearer_auth(KEY)
                .json(&json!({ "column": "hits" }))
                .send()
                .unwrap();
            assert_eq!(answer.status().as_u16(), 421);
            let body: Value = answer.json().unwrap();
            assert_eq!(
                body["leader"],
                format!("{leader_addr}:{HTTP_PORT}"),
                "{body}"
            );
        }
    }

    // redis-py's Sentinel, on the client host, by the announced addresses.
    let sentinels: Vec<String> = (0..3).map(|i| d.resp(i).to_string()).collect();
    let sentinels = sentinels.join(",");
    let py = python();
    let run = |d: &Deployment, first: usize, count: usize| {
        d.on_client(
            &py,
            &[
                "-c",
                SENTINEL_CLIENT,
                &sentinels,
                KEY,
                STORE,
                &first.to_string(),
                &count.to_string(),
            ],
        )
    };
    let out = run(&d, 0, 200);
    assert!(
        out.starts_with(&format!("master {leader_addr}:{RESP_PORT}\n")) && out.contains("ok 200"),
        "{out}"
    );

    // The NATS server on the leader's host goes down: every node keeps going through
    // the other two.
    d.nats.kill(leader);
    let out = run(&d, 200, 200);
    assert!(out.contains("ok 200"), "{out}");
    let values = eventually(
        "every node holds every increment",
        Duration::from_secs(60),
        || {
            let values: Vec<Option<i64>> = (0..3)
                .map(|i| {
                    redis::cmd("GET")
                        .arg(format!("{STORE}:1:hits"))
                        .query(&mut redis_at(d.resp(i)).ok()?)
                        .ok()
                })
                .collect();
            values.iter().all(|v| *v == Some(400)).then_some(values)
        },
    );
    eprintln!("after the NATS server on h{leader} died: {values:?}");
    let digests: Vec<String> = (0..3)
        .map(|i| {
            let v: redis::Value = redis::cmd("COUNTER.DIGEST")
                .query(&mut redis_at(d.resp(i)).unwrap())
                .unwrap();
            format!("{v:?}")
        })
        .collect();
    assert!(digests.windows(2).all(|w| w[0] == w[1]), "{digests:?}");
    d.nats.restart(leader);

    // nginx on the third host in front of the leader's HTTP API.
    let leader_now = (0..3)
        .find(|&i| role(d.resp(i)).as_deref() == Some("master"))
        .expect("a node leads");
    let nginx = Nginx::start(&d, 2, &format!("{}:{HTTP_PORT}", d.addr(leader_now)));
    let via_proxy = format!("http://{proxy}:{PROXY_PORT}");
    let create_from = |ns: &str, n: usize| -> u16 {
        let url = format!("{via_proxy}/api/links");
        d.hosts
            .in_ns(ns, move || {
                reqwest::blocking::Client::new()
                    .post(url)
                    .bearer_auth(KEY)
                    .json(&json!({ "url": format!("https://example.com/proxied/{n}") }))
                    .send()
                    .map(|r| r.status().as_u16())
                    .unwrap_or(0)
            })
            .join()
            .unwrap()
    };
    // The creation limit (one at a time) counts each client, not the proxy they share.
    let client_ns = d.hosts.client.ns.clone();
    let other_ns = d.hosts.hosts[1].ns.clone();
    assert_eq!(create_from(&client_ns, 0), 201, "{}", nginx.log());
    assert_eq!(create_from(&client_ns, 1), 429);
    assert_eq!(
        create_from(&other_ns, 2),
        201,
        "a second client is not the first"
    );
    // A click's country is the client's.
    let link: Value = reqwest::blocking::Client::new()
        .post(format!(
            "http://{}:{HTTP_PORT}/api/links",
            d.addr(leader_now)
        ))
        .bearer_auth(KEY)
        .json(&json!({ "url": "https://example.com/geo" }))
        .send()
        .unwrap()
        .json()
        .unwrap();
    let code = link["code"].as_str().expect("a code").to_string();
    for ns in [&client_ns, &other_ns] {
        let url = format!("{via_proxy}/{code}");
        let status = d
            .hosts
            .in_ns(ns, move || {
                reqwest::blocking::Client::builder()
                    .redirect(reqwest::redirect::Policy::none())
                    .build()
                    .unwrap()
                    .get(url)
                    .send()
                    .map(|r| r.status().as_u16())
                    .unwrap_or(0)
            })
            .join()
            .unwrap();
        assert_eq!(status, 302);
    }
    let stats_url = format!(
        "http://{}:{HTTP_PORT}/api/links/{code}/stats?by=country",
        d.addr(leader_now)
    );
    let countries = eventually("both clicks are counted", Duration::from_secs(20), || {
        let stats: Value = reqwest::blocking::Client::new()
            .get(&stats_url)
            .bearer_auth(KEY)
            .send()
            .ok()?
            .json()
            .ok()?;
        let mut seen: Vec<(String, u64)> = stats["values"]
            .as_array()?
            .iter()
            .map(|v| {
                (
                    v["value"].as_str().unwrap_or("").to_string(),
                    v["clicks"].as_u64().unwrap_or(0),
                )
            })
            .collect();
        seen.sort();
        (seen.iter().map(|(_, n)| n).sum::<u64>() >= 2).then_some(seen)
    });
    assert_eq!(countries, [("JP".to_string(), 1), ("NZ".to_string(), 1)]);
    drop(nodes);
}

/// nginx on one host, proxying to one node's HTTP API as docs/deploy.md configures it.
struct Nginx {
    child: std::process::Child,
    dir: PathBuf,
}

impl Nginx {
    fn start(d: &Deployment, host: usize, upstream: &str) -> Nginx {
        let dir = d.dir.path().join("nginx");
        std::fs::create_dir_all(dir.join("temp")).unwrap();
        let conf = dir.join("nginx.conf");
        std::fs::write(
            &conf,
            format!(
                "daemon off;\nuser root;\nworker_processes 1;\npid {pid};\nerror_log {err} info;\n\
                 events {{ worker_connections 64; }}\n\
                 http {{\n  access_log off;\n  client_body_temp_path {t}/body;\n  proxy_temp_path {t}/proxy;\n\
                   fastcgi_temp_path {t}/fastcgi;\n  uwsgi_temp_path {t}/uwsgi;\n  scgi_temp_path {t}/scgi;\n\
                   server {{\n    listen {addr}:{PROXY_PORT};\n    location / {{\n\
                       proxy_pass http://{upstream};\n      proxy_set_header Host $host;\n\
                       proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;\n\
                       proxy_set_header X-Forwarded-Proto $scheme;\n    }}\n  }}\n}}\n",
                pid = dir.join("nginx.pid").display(),
                err = dir.join("error.log").display(),
                t = dir.join("temp").display(),
                addr = d.addr(host),
            ),
        )
        .unwrap();
        let nginx = which("nginx").expect("nginx (the test command installs it)");
        let child = Command::new("ip")
            .args(["netns", "exec", &d.hosts.hosts[host].ns])
            .arg(nginx)
            .arg("-p")
            .arg(&dir)
            .arg("-c")
            .arg(&conf)
            .arg("-e")
            .arg(dir.join("error.log"))
            .spawn()
            .expect("nginx starts");
        let addr: SocketAddr = format!("{}:{PROXY_PORT}", d.addr(host)).parse().unwrap();
        let mut nginx = Nginx { child, dir };
        eventually("nginx listens", Duration::from_secs(20), || {
            if let Ok(Some(status)) = nginx.child.try_wait() {
                panic!("nginx exited ({status}): {}", nginx.log());
            }
            std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(200))
                .ok()
                .map(|_| ())
        });
        nginx
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("error.log")).unwrap_or_default()
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The first `name` on PATH, or in the sbin directories root's PATH has.
fn which(name: &str) -> Option<PathBuf> {
    let path = std::env::var("PATH").unwrap_or_default();
    let found = path
        .split(':')
        .chain(["/usr/sbin", "/sbin", "/usr/local/sbin"])
        .map(|d| Path::new(d).join(name))
        .find(|p| p.is_file());
    found
}

/// redis-py's RedisCluster on the client host, seeded with one node's announced
/// address: counts 200 keys over every group and prints their total.
const CLUSTER_CLIENT: &str = r#"
import sys
from redis.cluster import RedisCluster
host, port, key = sys.argv[1], int(sys.argv[2]), sys.argv[3]
rc = RedisCluster(host=host, port=port, password=key, decode_responses=True)
keys = [f"mh:{i}:likes" for i in range(200)]
for k in keys:
    rc.incr(k)
total = sum(int(rc.get(k)) for k in keys)
print("nodes", ",".join(sorted(f"{n.host}:{n.port}" for n in rc.get_primaries())))
print("ok", total)
"#;

#[test]
fn cluster_mode_across_three_hosts_on_a_nats_cluster_with_logins_and_tls() {
    let Some(d) = deploy() else { return };
    let body = |i: usize| {
        format!(
            "api_key = {KEY:?}\nresp = \"0.0.0.0:{RESP_PORT}\"\nhttp = \"0.0.0.0:{HTTP_PORT}\"\n\
             [cluster]\nenabled = true\nname = \"mh\"\ngroups = {GROUPS}\nstream_replicas = 3\n\
             announce = \"{}:{RESP_PORT}\"\n{}[counters]\nlease_ms = 2000\n",
            d.addr(i),
            d.nats_section(),
        )
    };
    let nodes: Vec<Server> = (0..3)
        .map(|i| d.start_node(i, &format!("cluster-h{i}"), &body(i)))
        .collect();
    // The CLI on host 0, reading the node's own file.
    let config = d.dir.path().join("cluster-h0.toml");
    let config = config.to_str().unwrap().to_string();
    let shardkit = Path::new(env!("CARGO_BIN_EXE_shardkit"));
    let host0 = d.hosts.hosts[0].ns.clone();
    let cli = |args: &[&str]| -> Value {
        let mut all = vec!["cluster"];
        all.extend_from_slice(args);
        all.extend(["--config", config.as_str()]);
        serde_json::from_str(&on_host(&host0, shardkit, &all)).unwrap()
    };
    eventually("the three nodes are live", Duration::from_secs(30), || {
        let status = cli(&["status"]);
        let live = status["nodes"]
            .as_array()?
            .iter()
            .filter(|n| n["live"] == true)
            .count();
        (live == 3).then_some(())
    });
    cli(&["rebalance"]);
    // Every group placed on a live node, its stream kept by three NATS servers.
    let status = eventually(
        "every group is placed and its stream led",
        Duration::from_secs(60),
        || {
            let status = cli(&["status"]);
            let streams = status["streams"].as_array()?;
            (status["state"] == "ok"
                && streams.len() == GROUPS as usize
                && streams
                    .iter()
                    .all(|g| g["replicas"] == 3 && g["leader"].is_string()))
            .then_some(status)
        },
    );
    let mut announced: Vec<String> = status["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["announce"].as_str().unwrap_or("").to_string())
        .collect();
    announced.sort();
    let mut expected: Vec<String> = (0..3).map(|i| d.resp(i).to_string()).collect();
    expected.sort();
    assert_eq!(announced, expected, "{status}");
    eventually("every node serves the map", Duration::from_secs(60), || {
        (0..3)
            .all(|i| {
                redis_at(d.resp(i))
                    .and_then(|mut c| redis::cmd("CLUSTER").arg("INFO").query::<String>(&mut c))
                    .is_ok_and(|info| info.contains("cluster_state:ok"))
            })
            .then_some(())
    });

    // redis-py's RedisCluster and redis-benchmark --cluster from the client host.
    let out = d.on_client(
        &python(),
        &["-c", CLUSTER_CLIENT, d.addr(0), &RESP_PORT.to_string(), KEY],
    );
    let mut primaries: Vec<String> = (0..3).map(|i| d.resp(i).to_string()).collect();
    primaries.sort();
    assert!(
        out.contains(&format!("nodes {}", primaries.join(","))),
        "{out}"
    );
    assert!(out.contains("ok 200"), "{out}");
    let bench = d.on_client(
        &which("redis-benchmark").expect("redis-benchmark (redis-tools)"),
        &[
            "--cluster",
            "-h",
            d.addr(1),
            "-p",
            &RESP_PORT.to_string(),
            "-a",
            KEY,
            "-t",
            "incr",
            "-n",
            "2000",
            "-r",
            "10000",
            "-c",
            "8",
            "-e",
            "-q",
        ],
    );
    assert_eq!(bench.matches("Master ").count(), 3, "{bench}");
    assert!(
        bench
            .lines()
            .any(|l| l.contains("INCR: ") && l.contains("requests per second")),
        "{bench}"
    );
    assert!(!bench.to_lowercase().contains("error"), "{bench}");
    drop(nodes);
}

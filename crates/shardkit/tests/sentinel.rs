//! The Sentinel subset every node answers, end to end: three real `shardkit serve`
//! nodes on a private `nats-server -js`, their membership announcements, Redis
//! Sentinel's reply shapes and errors, and redis-py's `Sentinel.master_for` riding a
//! failover (the pinned redis-py from `bash scripts/client-deps`; missing, the test
//! fails rather than skips).

#![cfg(feature = "nats")]

mod common;

use common::nats::Nats;
use common::raw_resp::{RawClient, Reply};
use common::replication::{eventually, get, kill, node, role};
use common::Server;
use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// One instance of a RESP2 `SENTINEL` reply (a flat field/value array) as a map.
fn fields(reply: &Reply) -> HashMap<String, String> {
    let Reply::Array(Some(items)) = reply else {
        panic!("an instance is an array: {reply:?}")
    };
    assert_eq!(items.len() % 2, 0, "fields come in pairs: {reply:?}");
    items
        .chunks(2)
        .map(|kv| (kv[0].text().unwrap(), kv[1].text().unwrap()))
        .collect()
}

/// A RESP2 list of instances.
fn instances(reply: Reply) -> Vec<HashMap<String, String>> {
    let Reply::Array(Some(items)) = reply else {
        panic!("a list of instances is an array: {reply:?}")
    };
    items.iter().map(fields).collect()
}

fn sentinel(server: &Server, args: &[&str]) -> Reply {
    let mut con = RawClient::connect(server.resp);
    let mut all: Vec<&[u8]> = vec![b"SENTINEL"];
    all.extend(args.iter().map(|a| a.as_bytes()));
    con.call(&all)
}

#[test]
fn every_node_names_the_leader_its_replicas_and_the_other_sentinels() {
    let nats = Nats::start();
    let dirs: Vec<_> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
    let leader = node(dirs[0].path(), &nats, "auto", 1_500);
    eventually(20, "the first node leads", || {
        role(&leader).as_deref() == Some("master")
    });
    let standby = node(dirs[1].path(), &nats, "auto", 1_500);
    let reader = node(dirs[2].path(), &nats, "replica", 1_500);
    let nodes = [&leader, &standby, &reader];
    eventually(20, "every node hears the two others", || {
        nodes.iter().all(|n| {
            instances(sentinel(n, &["replicas", "test"])).len() == 2
                && instances(sentinel(n, &["sentinels", "test"])).len() == 2
        })
    });
    let port = |s: &Server| s.resp.port().to_string();
    // ROLE and INFO on the leader list the replicas too, as Redis's master does.
    let mut con = RawClient::connect(leader.resp);
    let Reply::Array(Some(role_reply)) = con.call(&[b"ROLE"]) else {
        panic!("ROLE is an array")
    };
    let Reply::Array(Some(listed)) = &role_reply[2] else {
        panic!("a master's ROLE lists its replicas: {role_reply:?}")
    };
    let mut listed_ports: Vec<String> = listed
        .iter()
        .map(|r| match r {
            Reply::Array(Some(r)) => r[1].text().unwrap(),
            other => panic!("a replica is [host, port, offset]: {other:?}"),
        })
        .collect();
    listed_ports.sort();
    let mut replica_ports = vec![port(&standby), port(&reader)];
    replica_ports.sort();
    assert_eq!(listed_ports, replica_ports);
    let info = con.call(&[b"INFO", b"replication"]).text().unwrap();
    assert!(info.contains("connected_slaves:2\r\n"), "{info}");
    assert!(
        info.contains(&format!("port={},state=online", port(&standby))),
        "{info}"
    );
    for n in nodes {
        let addr = sentinel(n, &["get-master-addr-by-name", "test"]);
        assert_eq!(
            addr,
            Reply::Array(Some(vec![
                Reply::Bulk(Some(b"127.0.0.1".to_vec())),
                Reply::Bulk(Some(port(&leader).into_bytes())),
            ]))
        );
        let masters = instances(sentinel(n, &["masters"]));
        assert_eq!(masters.len(), 1);
        let master = &masters[0];
        assert_eq!(master["name"], "test");
        assert_eq!(master["ip"], "127.0.0.1");
        assert_eq!(master["port"], port(&leader));
        assert_eq!(master["flags"], "master");
        assert_eq!(master["role-reported"], "master");
        assert_eq!(master["num-slaves"], "2");
        assert_eq!(master["num-other-sentinels"], "2");
        assert_eq!(master["down-after-milliseconds"], "1500");
        assert_eq!(
            fields(&sentinel(n, &["master", "test"]))["port"],
            port(&leader)
        );

        let mut replicas = instances(sentinel(n, &["replicas", "test"]));
        replicas.sort_by_key(|r| r["port"].parse::<u16>().unwrap());
        let mut expected = vec![(port(&standby), "100"), (port(&reader), "0")];
        expected.sort_by_key(|(p, _)| p.parse::<u16>().unwrap());
        for (r, (p, priority)) in replicas.iter().zip(&expected) {
            assert_eq!(r["name"], format!("127.0.0.1:{p}"));
            assert_eq!(&r["port"], p);
            assert_eq!(r["flags"], "slave");
            assert_eq!(r["role-reported"], "slave");
            assert_eq!(r["master-link-status"], "ok");
            assert_eq!(r["master-port"], port(&leader));
            assert_eq!(&r["slave-priority"], priority, "role replica never leads");
            assert!(r["slave-repl-offset"].parse::<u64>().is_ok());
        }
        assert_eq!(
            instances(sentinel(n, &["slaves", "test"])).len(),
            2,
            "SLAVES is REPLICAS' old name"
        );
        let Reply::Bulk(Some(me)) = sentinel(n, &["myid"]) else {
            panic!("MYID is a bulk string")
        };
        let others: Vec<String> = instances(sentinel(n, &["sentinels", "test"]))
            .into_iter()
            .map(|s| {
                assert_eq!(s["flags"], "sentinel");
                assert_eq!(s["name"], s["runid"]);
                s["runid"].clone()
            })
            .collect();
        assert!(!others.contains(&String::from_utf8(me).unwrap()));
    }

    // Redis Sentinel's answers to what it does not know, word for word.
    let unknown = sentinel(&standby, &["get-master-addr-by-name", "nosuch"]);
    assert_eq!(unknown.to_bytes(), b"*-1\r\n");
    for args in [
        &["master", "nosuch"][..],
        &["replicas", "nosuch"],
        &["sentinels", "Test"],
    ] {
        assert_eq!(
            sentinel(&standby, args),
            Reply::Error("ERR No such master with that name".into()),
            "{args:?}"
        );
    }
    assert_eq!(
        sentinel(&standby, &["failover-now", "test"]),
        Reply::Error("ERR unknown subcommand 'failover-now'. Try SENTINEL HELP.".into())
    );
    assert_eq!(
        sentinel(&standby, &["replicas"]),
        Reply::Error("ERR wrong number of arguments for 'sentinel|replicas' command".into())
    );
    let mut con = RawClient::connect(standby.resp);
    assert_eq!(
        con.call(&[b"SENTINEL"]),
        Reply::Error("ERR wrong number of arguments for 'sentinel' command".into())
    );

    // A node that stops cleanly leaves at once (its last announcement, at most 0.5 s
    // old, would otherwise last 4.5 s).
    assert!(reader.terminate().success());
    let left = Instant::now();
    eventually(20, "the stopped node is no replica any more", || {
        instances(sentinel(&leader, &["replicas", "test"])).len() == 1
    });
    assert!(
        left.elapsed() < Duration::from_millis(3_000),
        "a clean stop removes the node: {:?}",
        left.elapsed()
    );
}

/// A real `redis-server --sentinel` (monitoring nothing) on a free loopback port.
struct RealSentinel {
    child: std::process::Child,
    addr: std::net::SocketAddr,
    _dir: tempfile::TempDir,
}

impl RealSentinel {
    fn start() -> RealSentinel {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let dir = tempfile::tempdir().unwrap();
        let conf = dir.path().join("sentinel.conf");
        std::fs::write(&conf, format!("port {port}\nbind 127.0.0.1\n")).unwrap();
        let child = Command::new("redis-server")
            .arg(&conf)
            .arg("--sentinel")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server on PATH");
        let addr: std::net::SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
        eventually(20, "redis-server --sentinel listens", || {
            std::net::TcpStream::connect(addr).is_ok()
        });
        RealSentinel {
            child,
            addr,
            _dir: dir,
        }
    }
}

impl Drop for RealSentinel {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn errors_and_command_info_are_redis_sentinels_word_for_word() {
    let nats = Nats::start();
    let dir = tempfile::tempdir().unwrap();
    let ours = node(dir.path(), &nats, "auto", 1_000);
    let real = RealSentinel::start();
    let (mut ours, mut theirs) = (RawClient::connect(ours.resp), RawClient::connect(real.addr));
    for line in [
        "SENTINEL",
        "SENTINEL nosuch",
        "SENTINEL replicas",
        "SENTINEL masters extra",
        "SENTINEL master nosuch",
        "SENTINEL sentinels nosuch",
        "SENTINEL get-master-addr-by-name nosuch",
        "SENTINEL masters",
    ] {
        let (mine, real) = (ours.cmd(line), theirs.cmd(line));
        if line == "SENTINEL masters" {
            // Ours monitors its store; the real one nothing: only the shape compares.
            assert!(matches!(mine, Reply::Array(Some(_))), "{mine:?}");
            assert_eq!(real, Reply::Array(Some(vec![])));
        } else {
            assert_eq!(mine, real, "{line}");
        }
    }
    // Name, arity, flags, keys and ACL categories as Redis Sentinel's own.
    let (Reply::Array(Some(mine)), Reply::Array(Some(real))) = (
        ours.cmd("COMMAND INFO sentinel"),
        theirs.cmd("COMMAND INFO sentinel"),
    ) else {
        panic!("COMMAND INFO answers arrays")
    };
    let (Reply::Array(Some(mine)), Reply::Array(Some(real))) = (&mine[0], &real[0]) else {
        panic!("both know SENTINEL")
    };
    assert_eq!(mine[..7], real[..7]);
}

/// Where `scripts/client-deps` installs the clients (missing: the test fails).
fn clients_dir() -> PathBuf {
    let dir = std::env::var_os("SHARDKIT_CLIENTS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").expect("HOME")).join(".cache/shardkit/clients")
        });
    assert!(
        dir.join("stamp").exists(),
        "this test needs the pinned clients: run `bash scripts/client-deps`"
    );
    dir
}

/// What a client script printed, and the addresses involved.
struct Run {
    out: Vec<String>,
    old: String,
    new: String,
    replicas: String,
}

/// Three nodes (lease 600 ms); runs `program args… SENTINELS test COUNT` (a script of
/// `tests/clients/`), SIGKILLs the leader when it prints `acked 100`, and checks that
/// it ended with `ok`, named the new leader last, and that every survivor counts each
/// increment once.
fn client_rides_a_failover(program: &Path, args: &[PathBuf], env: &[(&str, PathBuf)]) -> Run {
    const COUNT: i64 = 400;
    let nats = Nats::start();
    let dirs: Vec<_> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
    let mut first = node(dirs[0].path(), &nats, "auto", 600);
    eventually(20, "the first node leads", || {
        role(&first).as_deref() == Some("master")
    });
    let others = [
        node(dirs[1].path(), &nats, "auto", 600),
        node(dirs[2].path(), &nats, "auto", 600),
    ];
    eventually(20, "the others announce themselves", || {
        others.iter().all(|n| {
            let Reply::Array(Some(r)) = sentinel(n, &["replicas", "test"]) else {
                return false;
            };
            r.len() == 2
        })
    });
    let sentinels = [&first, &others[0], &others[1]]
        .iter()
        .map(|n| n.resp.to_string())
        .collect::<Vec<_>>()
        .join(",");
    let mut child = Command::new(program)
        .args(args)
        .args([sentinels.as_str(), "test", &COUNT.to_string()])
        .envs(env.iter().map(|(k, v)| (*k, v.as_os_str())))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {program:?}: {e}"));
    let stdout = BufReader::new(child.stdout.take().unwrap());
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut out = Vec::new();
    let mut killed = None;
    for line in stdout.lines().map_while(Result::ok) {
        assert!(
            Instant::now() < deadline,
            "the client ran past 120 s: {out:?}"
        );
        if line == "acked 100" {
            killed = Some(kill(&mut first));
        }
        out.push(line);
    }
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success() && out.last().is_some_and(|l| l.starts_with("ok ")),
        "{}\nstdout: {out:?}\nstderr: {stderr}",
        output.status
    );
    assert!(killed.is_some(), "the leader was killed mid-run: {out:?}");
    let new = others
        .iter()
        .find(|n| role(n).as_deref() == Some("master"))
        .expect("a node leads after the failover");
    assert_eq!(
        out[out.len() - 2],
        format!("master {}", new.resp),
        "the client found the new leader"
    );
    let tag = if program.ends_with("node") {
        "io"
    } else {
        "py"
    };
    for n in &others {
        eventually(20, "every node has every increment once", || {
            get(n, &format!("{tag}:1:hits")) == Some(COUNT)
        });
    }
    eprintln!(
        "{program:?}: {} (stderr lines: {})",
        out.last().unwrap(),
        stderr.lines().count()
    );
    let mut replicas = [others[0].resp.to_string(), others[1].resp.to_string()];
    replicas.sort();
    Run {
        out,
        old: first.resp.to_string(),
        new: new.resp.to_string(),
        replicas: replicas.join(","),
    }
}

fn script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/clients")
        .join(name)
}

#[test]
fn redis_py_sentinel_master_for_keeps_incrementing_across_a_failover() {
    let python = clients_dir().join("venv/bin/python");
    let run = client_rides_a_failover(&python, &[script("sentinel_failover.py")], &[]);
    for proto in [2, 3] {
        assert!(
            run.out
                .contains(&format!("discovered {proto} {} {}", run.old, run.replicas)),
            "RESP{proto}: {:?}",
            run.out
        );
    }
    assert_eq!(run.out[2], format!("master {}", run.old));
    assert_ne!(run.old, run.new);
}

#[test]
fn ioredis_sentinels_keep_incrementing_across_a_failover() {
    let modules = clients_dir().join("node/node_modules");
    let run = client_rides_a_failover(
        Path::new("node"),
        &[script("sentinel_failover.js")],
        &[("NODE_PATH", modules)],
    );
    assert_eq!(run.out[0], format!("master {}", run.old));
}

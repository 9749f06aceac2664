//! The counters' log on NATS JetStream, end to end: real `shardkit serve` nodes on
//! loopback against a private `nats-server -js` each test starts.

#![cfg(feature = "nats")]

mod common;

use common::nats::Nats;
use common::Server;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// Starts a node on the JetStream log of `nats`, store `store`.
fn node(data: &Path, nats: &Nats, role: &str, lease_ms: u64) -> Server {
    let lease = lease_ms.to_string();
    Server::start(
        data,
        &[
            ("SHARDKIT_COUNTERS_LOG", "jetstream"),
            ("SHARDKIT_NATS_URL", nats.url.as_str()),
            ("SHARDKIT_COUNTERS_STORE", "test"),
            ("SHARDKIT_COUNTERS_ROLE", role),
            ("SHARDKIT_COUNTERS_LEASE_MS", lease.as_str()),
        ],
    )
}

/// `ROLE`'s first element, or `None` while the node does not answer.
fn role(server: &Server) -> Option<String> {
    let client = redis::Client::open(format!("redis://{}/", server.resp)).ok()?;
    let mut con = client
        .get_connection_with_timeout(Duration::from_millis(500))
        .ok()?;
    con.set_read_timeout(Some(Duration::from_millis(500)))
        .ok()?;
    let reply: redis::Value = redis::cmd("ROLE").query(&mut con).ok()?;
    match reply {
        redis::Value::Array(items) => match items.first() {
            Some(redis::Value::BulkString(b)) => Some(String::from_utf8_lossy(b).into_owned()),
            _ => None,
        },
        _ => None,
    }
}

/// Polls `check` every 20 ms for up to `secs` seconds.
fn eventually(secs: u64, what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while !check() {
        assert!(Instant::now() < deadline, "timed out waiting for: {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn get(server: &Server, key: &str) -> Option<i64> {
    let mut con = server.redis();
    redis::cmd("GET").arg(key).query(&mut con).ok()
}

fn signal(server: &Server, sig: &str) {
    let pid = server.child.id().to_string();
    assert!(Command::new("kill")
        .args([sig, &pid])
        .status()
        .unwrap()
        .success());
}

#[test]
fn a_replica_serves_the_leaders_counts_and_refuses_writes() {
    let nats = Nats::start();
    let dirs = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let leader = node(dirs.0.path(), &nats, "auto", 1_000);
    eventually(20, "the first node leads", || {
        role(&leader).as_deref() == Some("master")
    });
    let replica = node(dirs.1.path(), &nats, "replica", 1_000);
    let mut con = leader.redis();
    for i in 0..300 {
        let _: i64 = redis::cmd("INCRBY")
            .arg(format!("weibo:{}", i % 10))
            .arg(i % 4 + 1)
            .query(&mut con)
            .unwrap();
    }
    let _: i64 = redis::cmd("HINCRBY")
        .arg("weibo:7")
        .arg("comments")
        .arg(5)
        .query(&mut con)
        .unwrap();
    for _ in 0..3 {
        let _: i64 = redis::cmd("COUNTER.INCRBY")
            .arg("weibo:8")
            .arg("likes")
            .arg(2)
            .arg("tx-1")
            .query(&mut con)
            .unwrap();
    }
    let expected: Vec<Option<i64>> = (0..10)
        .map(|i| get(&leader, &format!("weibo:{i}")))
        .collect();
    eventually(20, "the replica has the leader's counts", || {
        (0..10).all(|i| get(&replica, &format!("weibo:{i}")) == expected[i])
            && get(&replica, "weibo:8:likes") == Some(2)
    });
    assert_eq!(get(&replica, "weibo:7:comments"), Some(5));

    // Writes to the replica: Redis's READONLY over RESP, 421 naming the leader over HTTP.
    let mut rcon = replica.redis();
    let refused: redis::RedisResult<i64> = redis::cmd("INCR").arg("weibo:1").query(&mut rcon);
    let err = refused.unwrap_err();
    assert_eq!(err.code(), Some("READONLY"), "{err}");
    assert!(
        err.to_string()
            .contains("You can't write against a read only replica."),
        "{err}"
    );
    let ids: redis::RedisResult<i64> = redis::cmd("ID.NEXT").query(&mut rcon);
    assert_eq!(ids.unwrap_err().code(), Some("READONLY"));
    let answer = reqwest::blocking::Client::new()
        .post(replica.url("/api/counters/weibo/1/incr"))
        .json(&serde_json::json!({"by": 1}))
        .send()
        .unwrap();
    assert_eq!(answer.status().as_u16(), 421);
    let body: serde_json::Value = answer.json().unwrap();
    assert_eq!(body["leader"], leader.http.to_string());
    assert_eq!(
        get(&replica, "weibo:1"),
        expected[1],
        "the refused writes changed nothing"
    );
    for path in ["/api/ids?count=2", "/api/tickets/orders"] {
        let answer = reqwest::blocking::Client::new()
            .post(replica.url(path))
            .send()
            .unwrap();
        assert_eq!(answer.status().as_u16(), 421, "{path}");
    }

    // ROLE and INFO name the leader and the progress.
    let role_reply: redis::Value = redis::cmd("ROLE").query(&mut rcon).unwrap();
    let redis::Value::Array(items) = role_reply else {
        panic!("ROLE is an array")
    };
    assert_eq!(items[0], redis::Value::BulkString(b"slave".to_vec()));
    assert_eq!(items[2], redis::Value::Int(i64::from(leader.resp.port())));
    let info: String = redis::cmd("INFO").query(&mut rcon).unwrap();
    assert!(info.contains("role:slave"), "{info}");
    assert!(
        info.contains(&format!("master_port:{}", leader.resp.port())),
        "{info}"
    );
    assert!(info.contains("lag_records:0"), "{info}");
    let info: String = redis::cmd("INFO").query(&mut con).unwrap();
    assert!(
        info.contains("role:master") && info.contains("log:jetstream"),
        "{info}"
    );
}

#[test]
fn a_paused_leader_is_fenced_and_acknowledges_nothing() {
    let nats = Nats::start();
    let dirs = (
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
    );
    let mut old = node(dirs.0.path(), &nats, "auto", 600);
    eventually(20, "the first node leads", || {
        role(&old).as_deref() == Some("master")
    });
    let other = node(dirs.1.path(), &nats, "auto", 600);
    eventually(20, "the second node follows", || {
        role(&other).as_deref() == Some("slave")
    });
    let mut con = old.redis();
    for _ in 0..50 {
        let _: i64 = redis::cmd("INCR").arg("c:1").query(&mut con).unwrap();
    }
    signal(&old, "-STOP");
    eventually(20, "the other node leads", || {
        role(&other).as_deref() == Some("master")
    });
    let mut ocon = other.redis();
    let on_new: i64 = redis::cmd("INCRBY")
        .arg("c:1")
        .arg(1000)
        .query(&mut ocon)
        .unwrap();
    assert_eq!(
        on_new, 1050,
        "the new leader had every acknowledged increment"
    );

    // The old leader wakes up: whatever it is asked, nothing is acknowledged.
    con.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    signal(&old, "-CONT");
    let late: redis::RedisResult<i64> = redis::cmd("INCR").arg("c:1").query(&mut con);
    assert!(
        late.is_err(),
        "a deposed leader acknowledged a write: {late:?}"
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = old.child.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < deadline, "the deposed leader did not exit");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(75), "a deposed leader exits with 75");
    // It appended nothing: the new leader and a fresh replica agree on 1050.
    let _: i64 = redis::cmd("INCR").arg("c:2").query(&mut ocon).unwrap();
    assert_eq!(get(&other, "c:1"), Some(1050));
    drop(old);
    let rejoined = node(dirs.2.path(), &nats, "auto", 600);
    eventually(20, "a restarted node follows with the same count", || {
        role(&rejoined).as_deref() == Some("slave") && get(&rejoined, "c:2") == Some(1)
    });
    assert_eq!(get(&rejoined, "c:1"), Some(1050));
    old = rejoined;
    drop(old);
}

#[test]
fn a_killed_leader_loses_no_acknowledged_increment_and_counts_none_twice() {
    let nats = Nats::start();
    let dirs = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let first = node(dirs.0.path(), &nats, "auto", 600);
    eventually(20, "the first node leads", || {
        role(&first).as_deref() == Some("master")
    });
    let second = node(dirs.1.path(), &nats, "auto", 600);
    eventually(20, "the second node follows", || {
        role(&second).as_deref() == Some("slave")
    });
    let addrs = [first.resp, second.resp];
    const CLIENTS: usize = 4;
    const EACH: usize = 150;
    let clients: Vec<_> = (0..CLIENTS)
        .map(|c| {
            std::thread::spawn(move || {
                // Each increment has a txid; an unacknowledged one is sent again, with the
                // same txid, to whichever node leads, until one acknowledges it.
                let mut acknowledged = 0;
                for n in 0..EACH {
                    let txid = format!("c{c}-{n}");
                    let deadline = Instant::now() + Duration::from_secs(60);
                    'retry: loop {
                        assert!(
                            Instant::now() < deadline,
                            "increment {txid} never acknowledged"
                        );
                        for addr in addrs {
                            let Ok(client) = redis::Client::open(format!("redis://{addr}/")) else {
                                continue;
                            };
                            let Ok(mut con) =
                                client.get_connection_with_timeout(Duration::from_millis(300))
                            else {
                                continue;
                            };
                            let _ = con.set_read_timeout(Some(Duration::from_secs(3)));
                            let done: redis::RedisResult<i64> = redis::cmd("COUNTER.INCRBY")
                                .arg("load:1")
                                .arg("hits")
                                .arg(1)
                                .arg(&txid)
                                .query(&mut con);
                            if done.is_ok() {
                                acknowledged += 1;
                                break 'retry;
                            }
                        }
                        std::thread::sleep(Duration::from_millis(50));
                    }
                }
                acknowledged
            })
        })
        .collect();
    // Kill the leader while the clients are writing.
    eventually(30, "load is running", || {
        get(&second, "load:1:hits").unwrap_or(0) >= (CLIENTS * EACH / 4) as i64
    });
    let mut first = first;
    first.child.kill().unwrap();
    let _ = first.child.wait();
    let total: usize = clients.into_iter().map(|c| c.join().unwrap()).sum();
    assert_eq!(total, CLIENTS * EACH);
    assert_eq!(role(&second).as_deref(), Some("master"));
    assert_eq!(
        get(&second, "load:1:hits"),
        Some((CLIENTS * EACH) as i64),
        "every acknowledged increment is there, none twice"
    );
}

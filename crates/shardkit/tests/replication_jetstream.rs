//! The counters' log on NATS JetStream, end to end: real `shardkit serve` nodes on
//! loopback against a private `nats-server -js` each test starts.

#![cfg(feature = "nats")]

mod common;

use common::nats::Nats;
use common::replication::{
    eventually, failover_time, get, kill, load_total, node, role, signal, Load,
};
use std::time::Duration;

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
    let tickets: redis::RedisResult<i64> = redis::cmd("TICKET.NEXT").arg("t").query(&mut rcon);
    assert_eq!(tickets.unwrap_err().code(), Some("READONLY"));
    // Ids come from every node, each from the id shards it leases.
    eventually(10, "the replica issues ids", || {
        redis::cmd("ID.NEXT").query::<String>(&mut rcon).is_ok()
    });
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
    for (path, status) in [("/api/ids?count=2", 200), ("/api/tickets/orders", 421)] {
        let answer = reqwest::blocking::Client::new()
            .post(replica.url(path))
            .send()
            .unwrap();
        assert_eq!(answer.status().as_u16(), status, "{path}");
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

/// A leader paused past its lease while no other node may lead (the other one is a
/// replica by role) finds, when it wakes, its lease key gone as NATS expires it (here
/// its message is deleted from the bucket's stream while the leader is paused, as the
/// expiry does, rather than left to the expiry's timing): nobody took it, so it sets
/// it again and leads on in the same process, without starting over, and every
/// acknowledged increment is there once, on the replica too. With a missing key taken
/// for another holder it restarts in place and the test fails.
#[test]
fn a_leader_whose_lease_expired_while_paused_sets_it_again_when_nobody_took_it() {
    let nats = Nats::start();
    let dirs = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let leader = node(dirs.0.path(), &nats, "auto", 600);
    eventually(20, "the node leads", || {
        role(&leader).as_deref() == Some("master")
    });
    let replica = node(dirs.1.path(), &nats, "replica", 600);
    let mut con = leader.redis();
    for _ in 0..50 {
        let _: i64 = redis::cmd("INCR").arg("c:1").query(&mut con).unwrap();
    }
    signal(&leader, "-STOP");
    std::thread::sleep(Duration::from_millis(1500));
    expire_lease(&nats, "test");
    signal(&leader, "-CONT");
    con.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let after: i64 = redis::cmd("INCR").arg("c:1").query(&mut con).unwrap();
    assert_eq!(
        after, 51,
        "the increment after the pause counts once, after every other"
    );
    eventually(20, "the replica has every increment", || {
        get(&replica, "c:1") == Some(51)
    });
    // The renewal that finds the lease gone runs on its own timer after the pause, not
    // necessarily before the increment above is answered.
    let found_expired = || {
        leader
            .log
            .lock()
            .unwrap()
            .iter()
            .any(|l| l.contains("lease expired while it could not be renewed; set again"))
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !found_expired() && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let log = leader.log.lock().unwrap().join("\n");
    assert!(
        found_expired(),
        "the lease was not found expired (the test tested nothing): {log}"
    );
    assert!(
        !log.contains("restarting in place"),
        "the leader started over though nobody took its lease: {log}"
    );
    assert_eq!(role(&leader).as_deref(), Some("master"));
}

/// Removes store `store`'s lease key the way the bucket's `max_age` does: its messages
/// are purged from the bucket's stream, leaving no delete marker.
fn expire_lease(nats: &Nats, store: &str) {
    let names = shardkit_node::replication::jetstream::names::Names::new(store);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let client = async_nats::connect(nats.url.as_str()).await.unwrap();
        let js = async_nats::jetstream::new(client);
        let stream = js
            .get_stream(format!("KV_{}", names.lease_bucket))
            .await
            .unwrap();
        let subject = format!("$KV.{}.leader", names.lease_bucket);
        // As the bucket's `max_age` would, on time: NATS's own expiry runs late on a
        // loaded machine (and the bucket denies deleting one message), so the key's
        // messages are purged, and found gone before the leader goes on.
        stream.purge().filter(subject.as_str()).await.unwrap();
        assert!(
            stream
                .get_last_raw_message_by_subject(&subject)
                .await
                .is_err(),
            "the lease is still in the bucket after its purge"
        );
    });
}

#[test]
fn a_paused_leader_is_fenced_and_acknowledges_nothing() {
    let nats = Nats::start();
    let dirs = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
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

    // The socket it listens on, to tell a handed-over socket from a new one.
    let socket = common::replication::listening_socket(old.resp).expect("its RESP socket");
    // The old leader wakes up: whatever it is asked, nothing is acknowledged.
    con.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    signal(&old, "-CONT");
    let late: redis::RedisResult<i64> = redis::cmd("INCR").arg("c:1").query(&mut con);
    assert!(
        late.is_err(),
        "a deposed leader acknowledged a write: {late:?}"
    );
    // It starts over in place: the same process, the same ports, back as a replica;
    // what it applied before it was deposed does not survive the restart.
    let _: i64 = redis::cmd("INCR").arg("c:2").query(&mut ocon).unwrap();
    eventually(
        30,
        "the old leader restarts in place and follows with the same count",
        || {
            assert!(
                old.child.try_wait().unwrap().is_none(),
                "the deposed leader exited instead of restarting in place; its log:\n{}",
                old.log.lock().unwrap().join("\n")
            );
            role(&old).as_deref() == Some("slave") && get(&old, "c:2") == Some(1)
        },
    );
    assert_eq!(get(&old, "c:1"), Some(1050));
    assert_eq!(get(&other, "c:1"), Some(1050));
    let mut con = old.redis();
    let info: String = redis::cmd("INFO")
        .arg("replication")
        .query(&mut con)
        .unwrap();
    assert!(info.contains("restarts_in_place:1"), "{info}");
    assert_eq!(
        common::replication::listening_socket(old.resp),
        Some(socket),
        "the new image listens on the socket the old one handed over, not a new one"
    );
    let log = old.log.lock().unwrap().join("\n");
    assert!(
        log.contains("restarting in place as a replica"),
        "the log says why: {log}"
    );
    // It was deposed, not broken: no exit for a supervisor.
    assert!(old.child.try_wait().unwrap().is_none());
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
    const CLIENTS: usize = 4;
    const EACH: usize = 150;
    let load = Load::start(vec![first.resp, second.resp], CLIENTS, EACH);
    // Kill the leader while the clients are writing.
    eventually(30, "load is running", || {
        load_total(&second).unwrap_or(0) >= (CLIENTS * EACH / 4) as i64
    });
    let mut first = first;
    let killed = kill(&mut first);
    let acks = load.finish();
    assert_eq!(acks.len(), CLIENTS * EACH);
    assert_eq!(role(&second).as_deref(), Some("master"));
    assert_eq!(
        load_total(&second),
        Some((CLIENTS * EACH) as i64),
        "every acknowledged increment is there, none twice"
    );
    eprintln!(
        "failover: {:?} from SIGKILL to the first acknowledged increment (lease 600 ms)",
        failover_time(&acks, killed, 0)
    );
}

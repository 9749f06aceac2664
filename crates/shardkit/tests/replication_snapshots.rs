//! Snapshots in the JetStream object store, end to end: the leader stores its snapshots
//! and purges the stream below what the oldest kept one needs; a node with an empty
//! data directory starts from the newest snapshot plus the stream's tail, ends with the
//! leader's values (txid window included) and can take over; a replica that fell
//! behind the purge point exits to start over instead of missing records.

#![cfg(feature = "nats")]

mod common;

use common::nats::Nats;
use common::Server;
use futures_util::StreamExt;
use std::path::Path;
use std::time::{Duration, Instant};

/// Rows written; each gets several increments, so the log runs to a few MiB.
const ROWS: usize = 20_000;

/// Starts a node on store `snap` of `nats`, snapshotting every MiB of log.
fn node(data: &Path, nats: &Nats, role: &str) -> Server {
    let config = data.join("shardkit.toml");
    std::fs::create_dir_all(data).unwrap();
    std::fs::write(
        &config,
        "[counters]\nsnapshot_log_mib = 1\nsnapshot_seconds = 0\n",
    )
    .unwrap();
    Server::start(
        data,
        &[
            ("SHARDKIT_CONFIG", config.to_str().unwrap()),
            ("SHARDKIT_COUNTERS_LOG", "jetstream"),
            ("SHARDKIT_NATS_URL", nats.url.as_str()),
            ("SHARDKIT_COUNTERS_STORE", "snap"),
            ("SHARDKIT_COUNTERS_ROLE", role),
            ("SHARDKIT_COUNTERS_LEASE_MS", "1000"),
        ],
    )
}

/// `ROLE`: (first element, offset = applied stream sequence), or `None` while the node
/// does not answer.
fn role(server: &Server) -> Option<(String, i64)> {
    let client = redis::Client::open(format!("redis://{}/", server.resp)).ok()?;
    let mut con = client
        .get_connection_with_timeout(Duration::from_millis(500))
        .ok()?;
    con.set_read_timeout(Some(Duration::from_millis(500)))
        .ok()?;
    let reply: redis::Value = redis::cmd("ROLE").query(&mut con).ok()?;
    let redis::Value::Array(items) = reply else {
        return None;
    };
    let name = match items.first() {
        Some(redis::Value::BulkString(b)) => String::from_utf8_lossy(b).into_owned(),
        _ => return None,
    };
    let offset = match (name.as_str(), items.get(1), items.get(4)) {
        ("master", Some(redis::Value::Int(o)), _) | ("slave", _, Some(redis::Value::Int(o))) => *o,
        _ => return None,
    };
    Some((name, offset))
}

fn eventually(secs: u64, what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while !check() {
        assert!(Instant::now() < deadline, "timed out waiting for: {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Every row's value, in one MGET per thousand keys.
fn values(server: &Server) -> Vec<Option<i64>> {
    let mut con = server.redis();
    let mut out = Vec::with_capacity(ROWS);
    for chunk in (0..ROWS).collect::<Vec<_>>().chunks(1_000) {
        let keys: Vec<String> = chunk.iter().map(|i| format!("weibo:{i}")).collect();
        let got: Vec<Option<i64>> = redis::cmd("MGET").arg(&keys).query(&mut con).unwrap();
        out.extend(got);
    }
    out
}

fn get(server: &Server, key: &str) -> Option<i64> {
    let mut con = server.redis();
    redis::cmd("GET").arg(key).query(&mut con).ok()
}

/// Increments every row `rounds` times, a pipeline of 1,000 commands at a time.
fn write_rows(server: &Server, rounds: usize) {
    let mut con = server.redis();
    for round in 0..rounds {
        for chunk in (0..ROWS).collect::<Vec<_>>().chunks(1_000) {
            let mut pipe = redis::pipe();
            for i in chunk {
                pipe.cmd("INCRBY")
                    .arg(format!("weibo:{i}"))
                    .arg((i + round) % 7 + 1)
                    .ignore();
            }
            let () = pipe.query(&mut con).unwrap();
        }
    }
}

fn incr_tx(server: &Server, key: &str, txid: &str) -> redis::RedisResult<i64> {
    let mut con = server.redis();
    redis::cmd("COUNTER.INCRBY")
        .arg(key)
        .arg("likes")
        .arg(3)
        .arg(txid)
        .query(&mut con)
}

/// What NATS holds for store `snap`: (stream first sequence, last sequence, stored
/// snapshot names, newest first).
fn nats_state(nats: &Nats) -> (u64, u64, Vec<String>) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let js = async_nats::jetstream::new(async_nats::connect(nats.url.as_str()).await.unwrap());
        let state = js
            .get_stream("SHARDKIT_COUNTERS_snap")
            .await
            .unwrap()
            .get_info()
            .await
            .unwrap()
            .state;
        let bucket = js
            .get_object_store("shardkit_snapshots_snap")
            .await
            .unwrap();
        let mut names = Vec::new();
        let mut list = bucket.list().await.unwrap();
        while let Some(info) = list.next().await {
            names.push(info.unwrap().name);
        }
        names.sort();
        names.reverse();
        (state.first_sequence, state.last_sequence, names)
    })
}

/// Writes rows until two snapshots are stored and the stream was purged past sequence
/// `beyond` (the leader
/// stores only its newest snapshot each second, so the rounds are spaced out), then
/// waits until no snapshot arrived for a second and a half.
fn write_until_purged(leader: &Server, nats: &Nats, beyond: u64) {
    let mut rounds = 0;
    loop {
        let (first, _, names) = nats_state(nats);
        if names.len() == 2 && first > beyond {
            break;
        }
        assert!(
            rounds < 30,
            "no two snapshots stored and no purge: {names:?}"
        );
        write_rows(leader, 2);
        rounds += 2;
        std::thread::sleep(Duration::from_millis(1_200));
    }
    let mut seen = nats_state(nats).2;
    loop {
        std::thread::sleep(Duration::from_millis(1_500));
        let now = nats_state(nats).2;
        if now == seen {
            return;
        }
        seen = now;
    }
}

/// A few hundred increments, far below a snapshot's MiB of log.
fn tail(server: &Server) {
    let mut con = server.redis();
    let mut pipe = redis::pipe();
    for i in (0..ROWS).step_by(40) {
        pipe.cmd("INCRBY")
            .arg(format!("weibo:{i}"))
            .arg(100)
            .ignore();
    }
    let () = pipe.query(&mut con).unwrap();
}

/// The stream sequence a stored snapshot's name says its tail starts at.
fn from_seq(name: &str) -> u64 {
    name.rsplit("-seq-").next().unwrap().parse().unwrap()
}

#[test]
fn a_new_empty_node_starts_from_the_stored_snapshot_and_the_tail_and_can_lead() {
    let nats = Nats::start();
    let dirs = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let mut leader = node(dirs.0.path(), &nats, "auto");
    eventually(20, "the first node leads", || {
        role(&leader).is_some_and(|r| r.0 == "master")
    });
    // Transaction ids from before the snapshots, then enough rows for several of them.
    for n in 0..20 {
        incr_tx(&leader, &format!("tx:{n}"), &format!("early-{n}")).unwrap();
    }
    write_until_purged(&leader, &nats, 1);
    // The tail: writes after the newest stored snapshot, and late transaction ids
    // (written again, smaller, should a snapshot have taken the tail in).
    for n in 0..20 {
        incr_tx(&leader, &format!("tx:{n}"), &format!("late-{n}")).unwrap();
    }
    let (first, last, names) = loop {
        tail(&leader);
        std::thread::sleep(Duration::from_millis(1_500));
        let (first, last, names) = nats_state(&nats);
        if from_seq(&names[0]) <= last {
            break (first, last, names);
        }
    };
    assert_eq!(names.len(), 2, "two snapshots kept: {names:?}");
    assert_eq!(
        first,
        from_seq(&names[1]),
        "the stream starts where the oldest kept snapshot's tail does"
    );
    assert!(
        from_seq(&names[0]) <= last,
        "the newest snapshot leaves a tail to apply ({names:?}, last {last})"
    );
    let expected = values(&leader);
    assert!(expected.iter().all(|v| v.is_some()));

    // A node with an empty data directory: the snapshot plus the tail.
    let joined = node(dirs.1.path(), &nats, "auto");
    let leader_seq = role(&leader).unwrap().1;
    eventually(60, "the new node applied the whole stream", || {
        role(&joined).is_some_and(|r| r.0 == "slave" && r.1 == leader_seq)
    });
    assert!(
        joined
            .log
            .lock()
            .unwrap()
            .iter()
            .any(|l| l.contains("counters restored from the object store")),
        "the new node started from the stored snapshot"
    );
    assert_eq!(values(&joined), expected, "every row as on the leader");
    for n in 0..20 {
        assert_eq!(get(&joined, &format!("tx:{n}:likes")), Some(6), "tx:{n}");
    }

    // The leader dies; the node that started from the object store leads, and retried
    // increments, from before the snapshots and from the tail, are counted once.
    leader.child.kill().unwrap();
    let _ = leader.child.wait();
    eventually(20, "the new node leads", || {
        role(&joined).is_some_and(|r| r.0 == "master")
    });
    for n in 0..20 {
        for txid in [format!("early-{n}"), format!("late-{n}")] {
            assert_eq!(
                incr_tx(&joined, &format!("tx:{n}"), &txid).unwrap(),
                6,
                "retry of {txid}"
            );
        }
    }
    assert_eq!(incr_tx(&joined, "tx:0", "new-0").unwrap(), 9);
    let mut con = joined.redis();
    let v: i64 = redis::cmd("INCRBY")
        .arg("weibo:5")
        .arg(10)
        .query(&mut con)
        .unwrap();
    assert_eq!(Some(v), expected[5].map(|e| e + 10));
    drop(leader);
}

#[test]
fn a_replica_behind_the_purge_point_starts_over_from_the_newest_snapshot() {
    let nats = Nats::start();
    let dirs = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let leader = node(dirs.0.path(), &nats, "auto");
    eventually(20, "the first node leads", || {
        role(&leader).is_some_and(|r| r.0 == "master")
    });
    let mut replica = node(dirs.1.path(), &nats, "replica");
    write_rows(&leader, 1);
    let seq = role(&leader).unwrap().1;
    eventually(20, "the replica follows", || {
        role(&replica).is_some_and(|r| r.1 == seq)
    });
    // Paused, it misses everything the leader writes, snapshots and purges.
    let pid = replica.child.id().to_string();
    let signal = |sig: &str| {
        assert!(std::process::Command::new("kill")
            .args([sig, &pid])
            .status()
            .unwrap()
            .success());
    };
    signal("-STOP");
    write_until_purged(&leader, &nats, seq as u64 + 1);
    signal("-CONT");
    // It starts over in place (the same process and ports) from the newest snapshot.
    let seq = role(&leader).unwrap().1;
    eventually(60, "the replica restarted in place and caught up", || {
        assert!(
            replica.child.try_wait().unwrap().is_none(),
            "the replica behind the purge point exited instead of restarting in place; its log:\n{}",
            replica.log.lock().unwrap().join("\n")
        );
        role(&replica).is_some_and(|r| r.1 == seq)
    });
    let log = replica.log.lock().unwrap().join("\n");
    assert!(
        log.contains("starts over from the newest snapshot") && log.contains("restarting in place"),
        "it said why: {log}"
    );
    let mut con = replica.redis();
    let info: String = redis::cmd("INFO")
        .arg("replication")
        .query(&mut con)
        .unwrap();
    assert!(info.contains("restarts_in_place:1"), "{info}");
    assert_eq!(values(&replica), values(&leader));
}

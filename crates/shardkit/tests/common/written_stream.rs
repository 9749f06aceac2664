//! A JetStream-mode stream written by a real leader, and the hand-run engines and
//! publishers the tests of the log's checks write more into it with (a deposed
//! leader's late write, another branch, a snapshot's joint).

use super::nats::Nats;
use async_nats::jetstream::{self, stream};
use shardkit_counters::{Engine, FsyncPolicy, Options};
use shardkit_node::replication::jetstream::names::Names;
use shardkit_node::replication::jetstream::publisher::Lease;
use std::time::Duration;

/// Engine options of a test's hand-run engines: no fsync, no snapshot by log size.
pub fn opts() -> Options {
    Options {
        fsync: FsyncPolicy::No,
        snapshot_log_bytes: None,
        ..Options::default()
    }
}

/// A lease of term `term` whose publishes are held a few seconds at most.
pub fn lease(term: u64) -> Lease {
    Lease {
        term,
        hold: Duration::from_secs(5),
    }
}

/// Every message of the stream, in order: (sequence, payload).
pub async fn messages(stream: &stream::Stream) -> Vec<(u64, Vec<u8>)> {
    let last = stream.clone().info().await.unwrap().state.last_sequence;
    let mut out = Vec::new();
    for seq in 1..=last {
        let m = stream.get_raw_message(seq).await.unwrap();
        out.push((seq, m.payload.to_vec()));
    }
    out
}

/// A new engine that applies every batch of the stream, as a follower does.
pub fn follower_of(all: &[(u64, Vec<u8>)], dir: &std::path::Path) -> Engine {
    let f = Engine::open(dir, opts()).unwrap();
    f.set_read_only(true);
    for (_, payload) in all.iter().filter(|(_, p)| !p.is_empty()) {
        f.apply_replicated(payload).unwrap();
    }
    f
}

/// A stream a real leader wrote ten `INCR c:1` to before it was killed (store `test`),
/// and what a test needs to write more into it by hand.
pub struct Written {
    /// The private nats-server.
    pub nats: Nats,
    /// Where the test's NATS calls run.
    pub rt: tokio::runtime::Runtime,
    /// The store's stream, subject and bucket names.
    pub names: Names,
    /// A JetStream context on `nats`.
    pub js: jetstream::Context,
    /// The store's stream.
    pub stream: stream::Stream,
    /// Every message, in order.
    pub all: Vec<(u64, Vec<u8>)>,
    /// The data directory of a replica to start on it.
    pub replica_dir: tempfile::TempDir,
    _leader_dir: tempfile::TempDir,
}

impl Written {
    pub fn by_a_killed_leader() -> Written {
        use super::replication::{eventually, kill, node, role};
        let nats = Nats::start();
        let leader_dir = tempfile::tempdir().unwrap();
        let mut leader = node(leader_dir.path(), &nats, "auto", 1_000);
        eventually(20, "the node leads", || {
            role(&leader).as_deref() == Some("master")
        });
        let mut con = leader.redis();
        for _ in 0..10 {
            let _: i64 = redis::cmd("INCR").arg("c:1").query(&mut con).unwrap();
        }
        kill(&mut leader);
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let names = Names::new("test");
        let (js, stream) = rt.block_on(async {
            let js = jetstream::new(async_nats::connect(nats.url.as_str()).await.unwrap());
            let stream = js.get_stream(&names.stream).await.unwrap();
            (js, stream)
        });
        let all = rt.block_on(messages(&stream));
        Written {
            nats,
            rt,
            names,
            js,
            stream,
            all,
            replica_dir: tempfile::tempdir().unwrap(),
            _leader_dir: leader_dir,
        }
    }
}

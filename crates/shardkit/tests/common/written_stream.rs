//! A JetStream-mode stream written by a real leader, and the hand-run engines and
//! publishers the tests of the log's checks write more into it with (a deposed
//! leader's late write, another branch, a snapshot's joint).

use super::nats::Nats;
use async_nats::jetstream::{self, message::PublishMessage, stream};
use bytes::Bytes;
use shardkit_counters::{Engine, FsyncPolicy, Key, LogOfRecord, Options};
use shardkit_node::replication::jetstream::names::{Names, LSN_HEADER};
use shardkit_node::replication::jetstream::publisher::{JetStreamLog, Lease};
use shardkit_node::replication::jetstream::stamp::Stamp;
use shardkit_node::replication::jetstream::tasks::Tasks;
use shardkit_node::replication::log_chain::Head;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
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

    /// Adds `by` to `c:1` in `engine` (made writable) through the real publisher,
    /// writing as a leader of term `head.term` whose copy ends at `head`; `c:1` after.
    pub fn increment_through(&self, engine: &Engine, head: Head, by: i64) -> u64 {
        engine.set_read_only(false);
        let log = JetStreamLog::start(
            &Tasks::on(self.rt.handle().clone()),
            self.js.clone(),
            &self.names,
            head,
            lease(head.term),
            Arc::new(AtomicBool::new(false)),
            |_| {},
        );
        engine
            .set_log_of_record(Some(Arc::new(log) as Arc<dyn LogOfRecord>))
            .unwrap();
        engine.incr("c", Key::Id(1), "value", by, None).unwrap()
    }

    /// Writes on by hand what nats-server 2.9 was seen leaving after a partition
    /// healed: a new leader's marker (a newer term) continuing the stream's end, the
    /// deposed leader's late write of 100 to `c:1` stored after it, then the new
    /// leader's write of 1,000 continuing its marker (`c:1` is then 1,010 in the agreed
    /// log). `before_writes` sees the new leader's engine right after its marker (a
    /// test takes its snapshot there). Returns the marker's sequence.
    pub fn deposed_write_after_new_marker(&self, before_writes: impl FnOnce(&Engine)) -> u64 {
        let (rt, names, js, stream, all) =
            (&self.rt, &self.names, &self.js, &self.stream, &self.all);
        let last = all.last().unwrap().0;
        let end = rt.block_on(stream.get_raw_message(last)).unwrap();
        let end_stamp = Stamp::read(Some(&end.headers)).unwrap().unwrap();
        let (old_term, new_term) = (end_stamp.term, end_stamp.term + 100);

        // The new leader's marker, continuing the stream's end in a newer term.
        let dir_new = tempfile::tempdir().unwrap();
        let new_leader = follower_of(all, dir_new.path());
        let next = new_leader.next_lsn();
        let marker_stamp = Stamp::new(new_term, end_stamp.after, (next, next), b"");
        let (t, c) = marker_stamp.header_values();
        let marker_seq = rt.block_on(async {
            let m = PublishMessage::build()
                .payload(Bytes::new())
                .expected_last_sequence(last)
                .header(LSN_HEADER, format!("{next}-{next}").as_str())
                .header("Shardkit-Term", t.as_str())
                .header("Shardkit-Chain", c.as_str());
            js.send_publish(names.subject.clone(), m)
                .await
                .unwrap()
                .await
                .unwrap()
                .sequence
        });

        before_writes(&new_leader);

        // The deposed leader's late write: its own chain and term, stored after the marker.
        let dir_old = tempfile::tempdir().unwrap();
        let deposed = follower_of(all, dir_old.path());
        assert_eq!(
            self.increment_through(
                &deposed,
                Head {
                    seq: marker_seq,
                    term: old_term,
                    chain: end_stamp.after,
                },
                100
            ),
            110
        );
        drop(deposed);

        // The new leader's batch, continuing its marker.
        assert_eq!(
            self.increment_through(
                &new_leader,
                Head {
                    seq: marker_seq + 1,
                    term: new_term,
                    chain: marker_stamp.after,
                },
                1_000
            ),
            1_010
        );
        drop(new_leader);
        marker_seq
    }
}

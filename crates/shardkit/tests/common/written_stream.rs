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

    /// The stream's end, and a new leader of a newer term taking over there: its
    /// engine (every batch applied), its marker's stamp (continuing the end) and the
    /// marker's lsn header value. Nothing is published.
    fn new_leader_at_the_end(&self, dir: &std::path::Path) -> NewLeader {
        let last = self.all.last().unwrap().0;
        let end = self.rt.block_on(self.stream.get_raw_message(last)).unwrap();
        let end_stamp = Stamp::read(Some(&end.headers)).unwrap().unwrap();
        let engine = follower_of(&self.all, dir);
        let next = engine.next_lsn();
        let marker = Stamp::new(end_stamp.term + 100, end_stamp.after, (next, next), b"");
        NewLeader {
            engine,
            last,
            end: end_stamp,
            marker,
            marker_lsns: format!("{next}-{next}"),
        }
    }

    /// The deposed leader's late write of 100 to `c:1`: its own chain and term,
    /// continuing the stream's end (`end`), stored as stream message `seq`.
    fn deposed_write(&self, end: &Stamp, seq: u64) {
        let dir_old = tempfile::tempdir().unwrap();
        let deposed = follower_of(&self.all, dir_old.path());
        let head = Head {
            seq: seq - 1,
            term: end.term,
            chain: end.after,
        };
        assert_eq!(self.increment_through(&deposed, head, 100), 110);
    }

    /// Writes on by hand what nats-server 2.9 was seen leaving after a partition
    /// healed: a new leader's marker (a newer term) continuing the stream's end, the
    /// deposed leader's late write of 100 to `c:1` stored after it, then the new
    /// leader's write of 1,000 continuing its marker (`c:1` is then 1,010 in the agreed
    /// log). `before_writes` sees the new leader's engine right after its marker (a
    /// test takes its snapshot there). Returns the marker's sequence.
    pub fn deposed_write_after_new_marker(&self, before_writes: impl FnOnce(&Engine)) -> u64 {
        let dir_new = tempfile::tempdir().unwrap();
        let new = self.new_leader_at_the_end(dir_new.path());
        let (t, c) = new.marker.header_values();
        let marker_seq = self.rt.block_on(async {
            let m = PublishMessage::build()
                .payload(Bytes::new())
                .expected_last_sequence(new.last)
                .header(LSN_HEADER, new.marker_lsns.as_str())
                .header("Shardkit-Term", t.as_str())
                .header("Shardkit-Chain", c.as_str());
            self.js
                .send_publish(self.names.subject.clone(), m)
                .await
                .unwrap()
                .await
                .unwrap()
                .sequence
        });
        before_writes(&new.engine);
        self.deposed_write(&new.end, marker_seq + 1);
        let head = Head {
            seq: marker_seq + 1,
            term: new.marker.term,
            chain: new.marker.after,
        };
        assert_eq!(self.increment_through(&new.engine, head, 1_000), 1_010);
        marker_seq
    }

    /// What the stream leader's copy held in the partition round that nats-server 2.9
    /// failed: the deposed leader's never-acknowledged write of 100 to `c:1` where the
    /// other copies hold the new leader's marker, then the new leader's write of 1,000
    /// building on that marker, which this copy does not have (`c:1` is 1,010 in the
    /// agreed log; no replay of this copy gets past the new leader's write).
    /// `after_writes` sees the new leader's engine at the end (the agreed state).
    /// Returns the sequence of the new leader's write.
    pub fn deposed_write_in_place_of_new_marker(&self, after_writes: impl FnOnce(&Engine)) -> u64 {
        let dir_new = tempfile::tempdir().unwrap();
        let new = self.new_leader_at_the_end(dir_new.path());
        self.deposed_write(&new.end, new.last + 1);
        let head = Head {
            seq: new.last + 1,
            term: new.marker.term,
            chain: new.marker.after,
        };
        assert_eq!(self.increment_through(&new.engine, head, 1_000), 1_010);
        after_writes(&new.engine);
        new.last + 2
    }
}

/// A new leader about to take over at the end of a [`Written`] stream.
struct NewLeader {
    engine: Engine,
    /// The stream's last sequence.
    last: u64,
    /// The stamp of the stream's last message.
    end: Stamp,
    /// The new leader's marker, continuing `end` in a newer term.
    marker: Stamp,
    /// The marker's lsn header value.
    marker_lsns: String,
}

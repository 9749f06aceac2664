//! The stream's own fence, without the lease check in front of it: a leader that still
//! believes it leads (its pause fell between its lease check and its publish, or its
//! clock is wrong) writes after another node took over. JetStream must refuse its batch
//! (`Nats-Expected-Last-Sequence`), the deposed writer must acknowledge nothing from
//! then on, and the stream must hold exactly what was acknowledged.
//!
//! The server-level fault tests (`replication_jetstream.rs`) pause a leader with
//! SIGSTOP, but on SIGCONT its renewal notices the lapsed lease before any write
//! reaches the publisher, so they never reach this fence. Here the real publisher
//! (`JetStreamLog`) and the real engine run against a private `nats-server -js`, and the
//! take-over is a second writer's marker, as `election::take_over` publishes it.

#![cfg(feature = "nats")]

mod common;

use async_nats::jetstream::{self, message::PublishMessage, stream};
use bytes::Bytes;
use common::nats::Nats;
use common::written_stream::{follower_of, lease, messages, opts, Written};
use shardkit_counters::{ColumnOptions, Engine, Key, LogOfRecord};
use shardkit_node::replication::jetstream::names::{Names, LSN_HEADER};
use shardkit_node::replication::jetstream::publisher::JetStreamLog;
use shardkit_node::replication::jetstream::stamp::Stamp;
use shardkit_node::replication::jetstream::tasks::Tasks;
use shardkit_node::replication::log_chain::Head;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The stream's end at an unstamped marker `seq`, for a writer of term `term`.
fn head_at(seq: u64, term: u64) -> Head {
    Head {
        seq,
        term,
        chain: 0,
    }
}

/// A runtime, store `name`'s names, a JetStream context and the store's stream, made
/// empty on `nats`.
fn fresh_stream(
    nats: &Nats,
    name: &str,
) -> (
    tokio::runtime::Runtime,
    Names,
    jetstream::Context,
    stream::Stream,
) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let names = Names::new(name);
    let (js, stream) = rt.block_on(async {
        let js = jetstream::new(async_nats::connect(nats.url.as_str()).await.unwrap());
        let stream = js
            .get_or_create_stream(stream::Config {
                name: names.stream.clone(),
                subjects: vec![names.subject.clone()],
                storage: stream::StorageType::File,
                ..Default::default()
            })
            .await
            .unwrap();
        (js, stream)
    });
    (rt, names, js, stream)
}

/// Publishes an empty leader marker expecting `last`: the take-over's fence.
async fn marker(js: &jetstream::Context, names: &Names, last: u64, lsn: u64) -> u64 {
    let m = PublishMessage::build()
        .payload(Bytes::new())
        .expected_last_sequence(last)
        .header(LSN_HEADER, format!("{lsn}-{lsn}").as_str());
    js.send_publish(names.subject.clone(), m)
        .await
        .unwrap()
        .await
        .unwrap()
        .sequence
}

#[test]
fn a_deposed_writer_is_refused_by_the_stream_and_acknowledges_nothing_after() {
    let nats = Nats::start();
    let (rt, names, js, stream) = fresh_stream(&nats, "fence");

    // Writer A leads: its marker, then its engine writes through the stream.
    let a_marker = rt.block_on(marker(&js, &names, 0, 1));
    let a_fenced = Arc::new(AtomicBool::new(false));
    let a_log = JetStreamLog::start(
        &Tasks::on(rt.handle().clone()),
        js.clone(),
        &names,
        head_at(a_marker, 1),
        lease(1),
        Arc::clone(&a_fenced),
        |_| {},
    );
    let a_dir = tempfile::tempdir().unwrap();
    let a = Engine::open(a_dir.path(), opts()).unwrap();
    a.set_log_of_record(Some(Arc::new(a_log) as Arc<dyn LogOfRecord>))
        .unwrap();
    a.create_counter("weibo").unwrap();
    a.add_column("weibo", "likes", ColumnOptions::new(32, 64))
        .unwrap();
    for i in 1..=5u64 {
        assert_eq!(a.incr("weibo", Key::Id(7), "likes", 1, None).unwrap(), i);
    }

    // Writer B takes over: it reads the stream's end and appends its marker there.
    let (b_marker, a_batches) = rt.block_on(async {
        let last = stream.clone().info().await.unwrap().state.last_sequence;
        (
            marker(&js, &names, last, a.next_lsn()).await,
            last - a_marker,
        )
    });
    assert!(a_batches >= 3, "A's schema and increments were published");

    // A still thinks it leads: its next write is refused by the stream, not acknowledged.
    let refused = a.incr("weibo", Key::Id(7), "likes", 1, None);
    assert!(
        refused.is_err(),
        "a deposed writer acknowledged {refused:?}"
    );
    assert!(
        a_fenced.load(Ordering::Acquire),
        "the publisher fenced itself"
    );
    // And nothing after that, even a write to another row.
    assert!(a.incr("weibo", Key::Id(8), "likes", 1, None).is_err());

    // The stream ends with B's marker: nothing of A's after it.
    let all = rt.block_on(messages(&stream));
    assert_eq!(all.last().map(|m| m.0), Some(b_marker));
    assert!(all.last().unwrap().1.is_empty());

    // A follower of the stream holds exactly the five acknowledged increments.
    let f_dir = tempfile::tempdir().unwrap();
    let f = follower_of(&all, f_dir.path());
    assert_eq!(f.get("weibo", Key::Id(7), "likes").unwrap(), 5);
    assert_eq!(f.get("weibo", Key::Id(8), "likes").unwrap(), 0);

    // B writes on from there: its batch expects its own marker and lands.
    let b_log = JetStreamLog::start(
        &Tasks::on(rt.handle().clone()),
        js.clone(),
        &names,
        head_at(b_marker, 2),
        lease(2),
        Arc::new(AtomicBool::new(false)),
        |_| {},
    );
    f.set_log_of_record(Some(Arc::new(b_log) as Arc<dyn LogOfRecord>))
        .unwrap();
    f.set_read_only(false);
    assert_eq!(f.incr("weibo", Key::Id(7), "likes", 10, None).unwrap(), 15);
    let all = rt.block_on(messages(&stream));
    let g_dir = tempfile::tempdir().unwrap();
    let g = follower_of(&all, g_dir.path());
    assert_eq!(g.get("weibo", Key::Id(7), "likes").unwrap(), 15);
    drop((a, f, g));
}

/// The publisher repeats a send whose answer was lost with the same message id and the
/// same expected sequence: JetStream must answer the repeat with the first send's
/// sequence (its duplicate window) rather than refuse it for the sequence, or a leader
/// could not tell "stored, answer lost" from "another writer appended".
#[test]
fn a_repeated_publish_is_answered_with_the_first_ones_sequence() {
    let nats = Nats::start();
    let (rt, names, js, _) = fresh_stream(&nats, "repeat");
    rt.block_on(async {
        let send = |id: &'static str, last: u64| {
            let js = js.clone();
            let subject = names.subject.clone();
            async move {
                let m = PublishMessage::build()
                    .payload(Bytes::from_static(b"batch"))
                    .expected_last_sequence(last)
                    .message_id(id);
                js.send_publish(subject, m).await.unwrap().await
            }
        };
        let first = send("7.1.0", 0).await.unwrap();
        assert_eq!((first.sequence, first.duplicate), (1, false));
        let again = send("7.1.0", 0).await.unwrap();
        assert_eq!((again.sequence, again.duplicate), (1, true));
        // Another message expecting the old end is refused, as a deposed writer's is.
        let other = send("8.1.0", 0).await.unwrap_err();
        assert_eq!(
            other.kind(),
            jetstream::context::PublishErrorKind::WrongLastSequence
        );
    });
}

/// The stamps the real publisher writes chain: each message continues the one before
/// it, and a reader that starts at the writer's first head can check every one.
#[test]
fn published_messages_continue_each_other() {
    let nats = Nats::start();
    let (rt, names, js, stream) = fresh_stream(&nats, "chain");
    let start = Head {
        seq: rt.block_on(marker(&js, &names, 0, 1)),
        term: 5,
        chain: 42,
    };
    let log = JetStreamLog::start(
        &Tasks::on(rt.handle().clone()),
        js.clone(),
        &names,
        start,
        lease(5),
        Arc::new(AtomicBool::new(false)),
        |_| {},
    );
    let dir = tempfile::tempdir().unwrap();
    let e = Engine::open(dir.path(), opts()).unwrap();
    e.set_log_of_record(Some(Arc::new(log) as Arc<dyn LogOfRecord>))
        .unwrap();
    e.create_counter("c").unwrap();
    e.add_column("c", "n", ColumnOptions::new(32, 64)).unwrap();
    for i in 0..20u64 {
        e.incr("c", Key::Id(i), "n", 1, None).unwrap();
    }
    let mut head = Some(start);
    let last = rt.block_on(async { stream.clone().info().await.unwrap().state.last_sequence });
    assert!(last >= 5, "the writes were published");
    for seq in start.seq + 1..=last {
        let m = rt.block_on(stream.get_raw_message(seq)).unwrap();
        let stamp = Stamp::read(Some(&m.headers)).unwrap().expect("stamped");
        let lsns = shardkit_node::replication::jetstream::lsn_seq::lsn_range(&m.headers).unwrap();
        // A reader whose copy ends elsewhere refuses the message its copy does not lead to.
        let elsewhere = Head {
            chain: head.unwrap().chain ^ 1,
            ..head.unwrap()
        };
        assert!(Stamp::continues(&stamp, Some(elsewhere), seq, lsns, &m.payload).is_err());
        head = Some(Stamp::continues(&stamp, head, seq, lsns, &m.payload).unwrap());
    }
    assert_eq!(head.unwrap().term, 5);
}

/// A message that does not continue the log the replica holds: here a batch whose
/// lsns follow on and whose sequence is the stream's next, but whose chain is another
/// branch's (as a NATS server's copy that kept a deposed leader's write carries).
/// The replica must not apply it: it marks itself diverged and starts over (restarting
/// in place) rather than serve a count that is in no agreed log; the stream leader's
/// copy itself holds the message, so the restarted replica waits for a snapshot past
/// it (no leader here answers). With the chain check removed the replica applies it
/// and serves 1,010: the test then fails.
#[test]
fn a_replica_refuses_a_message_that_does_not_continue_its_chain() {
    use common::replication::{get, node};
    let written = Written::by_a_killed_leader();
    let (nats, all) = (&written.nats, &written.all);
    let last = all.last().unwrap().0;

    // Another branch: an engine that holds the same log, writing one more batch
    // through the real publisher from a head whose chain is not the stream's.
    let dir = tempfile::tempdir().unwrap();
    let branch = follower_of(all, dir.path());
    let forged = Head {
        seq: last,
        term: u64::MAX / 2,
        chain: 0x5eed,
    };
    assert_eq!(written.increment_through(&branch, forged, 1_000), 1_010);
    drop(branch);

    let mut replica = node(written.replica_dir.path(), nats, "replica", 1_000);
    let deadline = std::time::Instant::now() + Duration::from_secs(40);
    // It refuses the message and starts over in place, then waits for a snapshot past
    // it: never serving the forged count, never exiting.
    loop {
        assert!(
            replica.child.try_wait().unwrap().is_none(),
            "the diverged replica exited instead of restarting in place"
        );
        assert_ne!(
            get(&replica, "c:1"),
            Some(1_010),
            "the replica serves a count that is in no agreed log"
        );
        let log = replica.log.lock().unwrap().join("\n");
        if log.contains("restarting in place so this replica starts over")
            && log.contains("waiting for a snapshot past it")
        {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the replica applied a message that does not continue its log and did not start over"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let log = replica.log.lock().unwrap().join("\n");
    assert!(
        log.contains("does not continue this replica's log"),
        "the log says why: {log}"
    );
}

/// NATS (2.9, after a partition healed) was seen appending a deposed leader's write
/// after the new leader's marker, past its expected sequence. The new leader does not
/// build on it, so a replica must skip it (a write of an older term after a newer
/// term's marker), not apply it and not take the stream for another branch: it then
/// follows the new leader's batches and serves exactly the new leader's count.
#[test]
fn a_replica_skips_a_deposed_leaders_write_appended_after_the_new_leaders_marker() {
    use common::replication::{eventually, get, kill, node};
    let written = Written::by_a_killed_leader();
    written.deposed_write_after_new_marker(|_| {});
    let nats = &written.nats;

    let mut replica = node(written.replica_dir.path(), nats, "replica", 1_000);
    eventually(20, "the replica serves the new leader's count", || {
        get(&replica, "c:1") == Some(1_010)
    });
    assert!(
        replica.child.try_wait().unwrap().is_none(),
        "the replica took the late write for divergence"
    );
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(get(&replica, "c:1"), Some(1_010));
    kill(&mut replica);
}

//! `Engine::commit_then`: a batch handed to the log of record without waiting is
//! acknowledged only once it lands, in lsn order with the batches `commit` hands over;
//! a blocking commit of a record on its way waits for it; a refused or dropped batch
//! fails the log.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use shardkit_counters::{
    ColumnOptions, Engine, Error, FsyncPolicy, Key, LogOfRecord, Options, Pending, Stored,
};

/// While `hold` is set, holds every batch handed over until the test lands it, as a
/// stream whose ack has not come back yet; otherwise stores each at once, after every
/// batch still held (the order a stream keeps).
/// A batch as handed over: `(first lsn, end lsn, frames)`.
type Batch = (u64, u64, Vec<u8>);

#[derive(Default)]
struct Held {
    hold: AtomicBool,
    waiting: Mutex<Vec<(Batch, Stored)>>,
    stored: Mutex<Vec<Batch>>,
}

impl Held {
    /// Answers the oldest held batch with `outcome`.
    fn land(&self, outcome: Result<(), String>) {
        let (batch, stored) = self.waiting.lock().remove(0);
        self.answer(batch, stored, outcome);
    }

    fn answer(&self, batch: Batch, stored: Stored, outcome: Result<(), String>) {
        if outcome.is_ok() {
            self.stored.lock().push(batch);
        }
        stored(outcome);
    }

    fn held(&self) -> usize {
        self.waiting.lock().len()
    }
}

impl LogOfRecord for Held {
    fn append(&self, _: u64, _: u64, _: &[u8]) -> Result<(), String> {
        unreachable!("the engine hands every batch over with submit")
    }

    fn submit(&self, first: u64, end: u64, frames: &[u8], stored: Stored) {
        if self.hold.load(Ordering::SeqCst) {
            let batch = ((first, end, frames.to_vec()), stored);
            self.waiting.lock().push(batch);
            return;
        }
        while self.held() > 0 {
            self.land(Ok(()));
        }
        self.answer((first, end, frames.to_vec()), stored, Ok(()));
    }
}

fn leader(dir: &std::path::Path) -> (Engine, Arc<Held>) {
    let opts = Options {
        // As the server's JetStream mode: the stream, not an fsync, makes a write durable.
        fsync: FsyncPolicy::No,
        snapshot_log_bytes: None,
        ..Options::default()
    };
    let engine = Engine::open(dir, opts).unwrap();
    let sink = Arc::new(Held::default());
    engine.set_log_of_record(Some(sink.clone())).unwrap();
    engine.create_counter("c").unwrap();
    engine
        .add_column("c", "v", ColumnOptions::new(8, 64))
        .unwrap();
    sink.hold.store(true, Ordering::SeqCst);
    (engine, sink)
}

/// `commit_then` with a channel for its answer.
fn commit_then(engine: &Engine, pending: Pending) -> mpsc::Receiver<Result<(), String>> {
    let (tx, rx) = mpsc::channel();
    engine.commit_then(pending, move |r| {
        let _ = tx.send(r.map_err(|e| e.to_string()));
    });
    rx
}

fn incr(engine: &Engine, id: u64, by: i64) -> Pending {
    engine
        .incr_deferred("c", Key::Id(id), "v", by, None)
        .unwrap()
        .1
}

/// A leader whose first write (row 1 by 5) is handed over and held by its sink: the
/// engine, the sink, the write's position and where its `commit_then` answer comes.
type OnItsWay = (
    Arc<Engine>,
    Arc<Held>,
    Pending,
    mpsc::Receiver<Result<(), String>>,
);

fn one_on_its_way(dir: &std::path::Path) -> OnItsWay {
    let (engine, sink) = leader(dir);
    let engine = Arc::new(engine);
    let pending = incr(&engine, 1, 5);
    let answer = commit_then(&engine, pending);
    (engine, sink, pending, answer)
}

#[test]
fn a_handed_over_batch_is_acknowledged_when_it_lands_and_in_lsn_order() {
    let dirs = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (engine, sink) = leader(dirs.0.path());
    let first = incr(&engine, 1, 5);
    let answer1 = commit_then(&engine, first);
    assert_eq!(sink.held(), 1);
    assert!(
        answer1.try_recv().is_err(),
        "answered before the batch landed"
    );
    assert!(!engine.is_durable(first));

    // A second batch handed over while the first is on its way.
    let second = incr(&engine, 2, 7);
    let answer2 = commit_then(&engine, second);
    assert_eq!(sink.held(), 2);
    sink.land(Ok(()));
    assert_eq!(answer1.recv().unwrap(), Ok(()));
    assert!(engine.is_durable(first));
    assert!(!engine.is_durable(second));
    assert!(answer2.try_recv().is_err());
    sink.land(Ok(()));
    assert_eq!(answer2.recv().unwrap(), Ok(()));

    // A blocking commit after them: its batch follows theirs.
    sink.hold.store(false, Ordering::SeqCst);
    engine.incr("c", Key::Id(1), "v", 1, None).unwrap();
    // Nothing to wait for: answered at once.
    assert_eq!(commit_then(&engine, first).recv().unwrap(), Ok(()));

    let stored = sink.stored.lock().clone();
    let mut expect = 1;
    for (first, end, _) in &stored {
        assert_eq!(*first, expect, "batches not contiguous: {stored:?}");
        expect = *end;
    }
    assert_eq!(expect, engine.next_lsn());
    // A follower applying what landed has the leader's values.
    let follower = Engine::open(dirs.1.path(), Options::default()).unwrap();
    follower.set_read_only(true);
    for (_, _, frames) in &stored {
        follower.apply_replicated(frames).unwrap();
    }
    assert_eq!(follower.get("c", Key::Id(1), "v").unwrap(), 6);
    assert_eq!(follower.get("c", Key::Id(2), "v").unwrap(), 7);
}

#[test]
fn a_blocking_commit_of_a_record_on_its_way_waits_for_it() {
    let dir = tempfile::tempdir().unwrap();
    let (engine, sink, pending, answer) = one_on_its_way(dir.path());
    assert_eq!(sink.held(), 1);
    // The record is no longer in the log's buffer: a blocking commit of it has nothing
    // to hand over, and must wait for the batch that carries it.
    let (done, committed) = mpsc::channel();
    let blocking = {
        let engine = Arc::clone(&engine);
        std::thread::spawn(move || done.send(engine.commit(pending)).unwrap())
    };
    assert!(
        committed.recv_timeout(Duration::from_millis(200)).is_err(),
        "a blocking commit returned while its record was still on its way"
    );
    // From here on, batches land at once (closing the engine writes one).
    sink.hold.store(false, Ordering::SeqCst);
    sink.land(Ok(()));
    assert!(committed.recv().unwrap().is_ok());
    assert_eq!(answer.recv().unwrap(), Ok(()));
    blocking.join().unwrap();
}

#[test]
fn a_refused_batch_fails_the_log_and_its_waiters() {
    let dir = tempfile::tempdir().unwrap();
    let (engine, sink, pending, answer) = one_on_its_way(dir.path());
    let blocking = {
        let engine = Arc::clone(&engine);
        std::thread::spawn(move || engine.commit(pending))
    };
    std::thread::sleep(Duration::from_millis(50));
    sink.land(Err("wrong last sequence".into()));
    assert!(answer
        .recv()
        .unwrap()
        .unwrap_err()
        .contains("wrong last sequence"));
    assert!(blocking.join().unwrap().is_err());
    assert!(!engine.is_durable(pending));
    assert!(matches!(
        engine.incr("c", Key::Id(1), "v", 1, None),
        Err(Error::LogFailed(_))
    ));
}

#[test]
fn a_batch_dropped_unanswered_counts_as_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (engine, sink, _, answer) = one_on_its_way(dir.path());
    // The publisher went away with the batch: its callback is dropped, never called.
    let unanswered = sink.waiting.lock().remove(0);
    drop(unanswered);
    assert!(answer.recv().unwrap().is_err());
    assert!(engine.incr("c", Key::Id(2), "v", 1, None).is_err());
}

//! The restore seam: a snapshot's bytes seed an empty directory, the engine opened on
//! it plus the log-of-record batches from the snapshot's point on ends in the leader's
//! state (txid window included); damaged bytes and used directories are refused.

mod common;

use common::recording_leader;
use shardkit_counters::{
    restore_snapshot, snapshot_lsn, ColumnOptions, Engine, Error, FsyncPolicy, Key, Options,
};
use std::sync::Arc;

fn opts() -> Options {
    Options {
        fsync: FsyncPolicy::No,
        snapshot_log_bytes: None,
        ..Options::default()
    }
}

fn row(i: u64) -> Key<'static> {
    if i.is_multiple_of(3) {
        Key::Id(i)
    } else {
        Key::Name(Box::leak(format!("user:{i}").into_boxed_str()))
    }
}

#[test]
fn an_empty_node_restored_from_a_snapshot_plus_the_tail_has_the_leaders_state() {
    let dirs = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (leader, sink) = recording_leader(dirs.0.path(), opts(), "weibo", "likes");
    let leader = Arc::new(leader);
    for i in 0..3_000u64 {
        leader
            .incr("weibo", row(i % 1_000), "likes", 2, Some(&format!("a{i}")))
            .unwrap();
    }
    // The snapshot is taken while another thread keeps writing, so stripes are copied
    // at different lsns and the tail overlaps what some stripe copies already hold.
    let writer = {
        let leader = Arc::clone(&leader);
        std::thread::spawn(move || {
            for i in 0..3_000u64 {
                leader
                    .incr("weibo", row(i % 1_500), "likes", 1, Some(&format!("b{i}")))
                    .unwrap();
            }
        })
    };
    let info = leader.snapshot().unwrap();
    writer.join().unwrap();
    leader
        .add_column("weibo", "comments", ColumnOptions::new(16, 32))
        .unwrap();
    for i in 0..500u64 {
        leader
            .incr("weibo", row(i), "comments", 1, Some(&format!("c{i}")))
            .unwrap();
    }
    leader.delete("weibo", row(7)).unwrap();

    let files = leader.snapshot_files().unwrap();
    assert_eq!(
        files[0].0, info.lsn,
        "the newest file is the one just taken"
    );
    let bytes = std::fs::read(&files[0].1).unwrap();
    assert_eq!(snapshot_lsn(&bytes), Some(info.lsn));

    let restored = restore_snapshot(dirs.1.path(), &bytes).unwrap();
    assert_eq!(restored.lsn, info.lsn);
    let follower = Engine::open(dirs.1.path(), opts()).unwrap();
    assert_eq!(follower.next_lsn(), info.lsn, "the engine resumes at X");
    // Every batch whose records reach X or beyond, as a stream would deliver them
    // from the first message not wholly inside the snapshot.
    for (_, end, frames) in sink.batches.lock().iter() {
        if *end > info.lsn {
            follower.apply_replicated(frames).unwrap();
        }
    }
    assert_eq!(follower.next_lsn(), leader.next_lsn());
    for i in 0..1_500u64 {
        assert_eq!(
            follower.get_row("weibo", row(i)).unwrap(),
            leader.get_row("weibo", row(i)).unwrap(),
            "row {i}"
        );
    }
    assert!(!follower.exists("weibo", row(7)).unwrap());
    // The txid window came along: a retry of an increment from before the snapshot,
    // from across it and from after it is not counted again.
    let before = follower.get("weibo", row(5), "likes").unwrap();
    for txid in ["a5", "b5", "b1505"] {
        assert_eq!(
            follower
                .incr("weibo", row(5), "likes", 2, Some(txid))
                .unwrap(),
            before,
            "{txid}"
        );
    }
    assert_eq!(
        follower
            .incr("weibo", row(5), "comments", 1, Some("c5"))
            .unwrap(),
        leader.get("weibo", row(5), "comments").unwrap()
    );
}

#[test]
fn without_the_tail_the_restored_node_is_behind() {
    // The check above is not vacuous: the snapshot alone misses the later writes.
    let dirs = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let leader = Engine::open(dirs.0.path(), opts()).unwrap();
    leader.create_counter("c").unwrap();
    leader
        .add_column("c", "v", ColumnOptions::new(8, 64))
        .unwrap();
    leader.incr("c", Key::Id(1), "v", 5, None).unwrap();
    let info = leader.snapshot().unwrap();
    leader.incr("c", Key::Id(1), "v", 5, None).unwrap();
    let bytes = std::fs::read(&info.path).unwrap();
    restore_snapshot(dirs.1.path(), &bytes).unwrap();
    let follower = Engine::open(dirs.1.path(), opts()).unwrap();
    assert_eq!(follower.get("c", Key::Id(1), "v").unwrap(), 5);
    assert_eq!(leader.get("c", Key::Id(1), "v").unwrap(), 10);
}

#[test]
fn damaged_snapshots_and_used_directories_are_refused() {
    let dirs = (
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
    );
    let leader = Engine::open(dirs.0.path(), opts()).unwrap();
    leader.create_counter("c").unwrap();
    leader
        .add_column("c", "v", ColumnOptions::new(8, 64))
        .unwrap();
    for i in 0..100 {
        leader.incr("c", Key::Id(i), "v", 1, None).unwrap();
    }
    let info = leader.snapshot().unwrap();
    let bytes = std::fs::read(&info.path).unwrap();

    // A flipped byte in a frame fails its CRC; a cut copy has no end frame.
    let mut flipped = bytes.clone();
    let at = bytes.len() / 2;
    flipped[at] ^= 0x40;
    let cut = &bytes[..bytes.len() - 3];
    for (what, damaged) in [("flipped", &flipped[..]), ("cut", cut), ("junk", b"hello")] {
        let err = restore_snapshot(dirs.1.path(), damaged).unwrap_err();
        assert!(matches!(err, Error::Restore { .. }), "{what}: {err}");
    }
    assert!(
        std::fs::read_dir(dirs.1.path()).unwrap().next().is_none(),
        "a refused snapshot leaves nothing behind"
    );

    // A directory with its own history is not overwritten.
    let err = restore_snapshot(dirs.0.path(), &bytes).unwrap_err();
    assert!(err.to_string().contains("empty directory"), "{err}");

    // The intact bytes restore, and only once.
    restore_snapshot(dirs.2.path(), &bytes).unwrap();
    assert!(restore_snapshot(dirs.2.path(), &bytes).is_err());
    let engine = Engine::open(dirs.2.path(), opts()).unwrap();
    assert_eq!(engine.get("c", Key::Id(42), "v").unwrap(), 1);
}

//! A node starting from a snapshot in the object store goes on with the stream at the
//! snapshot's joint. Two ways that joint can be wrong, each made by hand on a stream a
//! real leader wrote: the message just before it is a deposed leader's late write (the
//! chain there is not the agreed one), and the snapshot names a joint the stream does
//! not continue. Either way the node must come up serving the agreed count, not start
//! over from the same snapshot forever. And the case no snapshot in the store mends:
//! the stream leader's own copy breaks, so the node waits for a snapshot past the break
//! and asks the leader for one.

#![cfg(feature = "nats")]

mod common;

use common::replication::{eventually, get, kill, node};
use common::written_stream::{follower_of, Written};
use futures_util::StreamExt;
use shardkit_node::replication::jetstream::snapshots;

/// The engine's snapshot of `engine` now: (its lsn, the file's bytes).
fn snapshot_of(engine: &shardkit_counters::Engine) -> (u64, Vec<u8>) {
    let info = engine.snapshot().unwrap();
    (info.lsn, std::fs::read(&info.path).unwrap())
}

/// Puts `bytes` into the store's snapshot object store as the snapshot at `lsn` whose
/// tail starts at stream sequence `from_seq`.
fn store_snapshot(written: &Written, lsn: u64, from_seq: u64, bytes: &[u8]) {
    written.rt.block_on(async {
        let bucket = snapshots::bucket(&written.js, &written.names, 1)
            .await
            .unwrap();
        let mut data = bytes;
        bucket
            .put(snapshots::object_name(lsn, from_seq).as_str(), &mut data)
            .await
            .unwrap();
    });
}

/// The stream: the killed leader's ten increments, a new leader's marker (newer term),
/// the deposed leader's late write of 100 stored after it (as nats-server 2.9 was seen
/// doing after a partition healed), then the new leader's write of 1,000. The snapshot
/// the new leader took right after its marker is stored with its joint at its own
/// write, so the message just before the joint is the deposed leader's. A node started
/// from it must take the marker's chain as its own (the new leader's write builds on
/// it), not the late write's: with the late write's chain the next message never
/// continues the copy and the node starts over from the same snapshot forever.
#[test]
fn a_start_from_a_snapshot_right_after_a_deposed_leaders_late_write() {
    let written = Written::by_a_killed_leader();
    let mut taken = None;
    let marker_seq = written.deposed_write_after_new_marker(|new_leader| {
        taken = Some(snapshot_of(new_leader));
    });
    let (snapshot_lsn, snapshot) = taken.unwrap();
    store_snapshot(&written, snapshot_lsn, marker_seq + 2, &snapshot);

    let mut replica = node(written.replica_dir.path(), &written.nats, "replica", 1_000);
    eventually(20, "the replica serves the new leader's count", || {
        get(&replica, "c:1") == Some(1_010)
    });
    let log = replica.log.lock().unwrap().join("\n");
    assert!(
        log.contains("counters restored from the object store"),
        "the replica started from the snapshot: {log}"
    );
    assert!(
        !log.contains("does not continue"),
        "the replica took the stream for another branch: {log}"
    );
    kill(&mut replica);
}

/// Two snapshots: an older one with the right joint, and a newer one whose joint is
/// one message late (the message before it, not in the snapshot, would be skipped).
/// The node restored from the newer one finds the stream does not continue it (a gap
/// in the records), marks that snapshot as not to start from, starts over in place
/// from the older one and serves the stream's count, never the count with a message
/// missing. Without the list of such snapshots it starts over from the newer one
/// again and again and never serves.
#[test]
fn a_snapshot_the_stream_does_not_continue_is_left_for_an_older_one() {
    let written = Written::by_a_killed_leader();
    let all = &written.all;
    assert!(all.len() >= 10, "{} messages", all.len());
    // Messages 1..=k are in the older snapshot, its tail starts at k + 1.
    let k = all.len() - 6;
    let dir_old = tempfile::tempdir().unwrap();
    let (old_lsn, old) = snapshot_of(&follower_of(&all[..k], dir_old.path()));
    store_snapshot(&written, old_lsn, all[k].0, &old);
    // Messages 1..=k+2 are in the newer one, which claims its tail starts at k + 4.
    let dir_new = tempfile::tempdir().unwrap();
    let (new_lsn, new) = snapshot_of(&follower_of(&all[..k + 2], dir_new.path()));
    store_snapshot(&written, new_lsn, all[k + 3].0, &new);

    let mut replica = node(written.replica_dir.path(), &written.nats, "replica", 1_000);
    eventually(30, "the replica serves the stream's count", || {
        get(&replica, "c:1") == Some(10)
    });
    let log = replica.log.lock().unwrap().join("\n");
    assert!(
        log.contains("the next start uses an older one"),
        "the replica did not meet the newer snapshot's mismatch: {log}"
    );
    assert!(
        log.contains("not starting from this snapshot"),
        "the restart did not leave the newer snapshot: {log}"
    );
    // The count with a message missing was never served: it is only ever read as 10.
    for _ in 0..20 {
        assert_eq!(get(&replica, "c:1"), Some(10));
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    kill(&mut replica);
}

/// The stream as the stream leader's copy held it in the nats-server 2.9 partition
/// round: the deposed leader's never-acknowledged write where the other copies hold
/// the new leader's marker, then the new leader's write building on that marker. A
/// replica replaying it breaks at the new leader's write, every time. It must note the
/// break, ask the leader for a snapshot past it (this test answers as the leader
/// does, storing the new leader's snapshot), start from that snapshot and serve the
/// agreed count. Without the note it replays into the same break forever and never
/// asks.
#[test]
fn a_stream_copy_that_cannot_be_replayed_is_left_for_a_snapshot_the_leader_takes() {
    let written = Written::by_a_killed_leader();
    let mut taken = None;
    let new_write = written.deposed_write_in_place_of_new_marker(|new_leader| {
        taken = Some(snapshot_of(new_leader));
    });
    let (snapshot_lsn, snapshot) = taken.unwrap();
    let mut asks = written.rt.block_on(async {
        written
            .js
            .client()
            .subscribe(written.names.snapshot_wanted.clone())
            .await
            .unwrap()
    });

    let mut replica = node(written.replica_dir.path(), &written.nats, "replica", 1_000);
    let ask = written.rt.block_on(async {
        tokio::time::timeout(std::time::Duration::from_secs(60), asks.next()).await
    });
    let Ok(Some(ask)) = ask else {
        panic!(
            "the replica did not ask for a snapshot: {}",
            replica.log.lock().unwrap().join("\n")
        );
    };
    assert_eq!(
        String::from_utf8_lossy(&ask.payload),
        new_write.to_string(),
        "the ask names the message the replay broke at"
    );
    store_snapshot(&written, snapshot_lsn, new_write + 1, &snapshot);

    eventually(30, "the replica serves the agreed count", || {
        get(&replica, "c:1") == Some(1_010)
    });
    let log = replica.log.lock().unwrap().join("\n");
    assert!(
        log.contains("waiting for a snapshot past it"),
        "the replica did not wait for the snapshot: {log}"
    );
    assert!(
        log.contains("counters restored from the object store"),
        "the replica did not start from the snapshot: {log}"
    );
    kill(&mut replica);
}

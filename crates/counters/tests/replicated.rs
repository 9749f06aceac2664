//! The log-of-record seam: a leader engine hands every written batch to a
//! `LogOfRecord`; a follower engine applies those batches and ends in the same state,
//! txid window included. A refused batch is not acknowledged and stops the leader.

mod common;

use std::sync::atomic::Ordering;

use common::{recording_leader, Recorded};
use shardkit_counters::{ColumnOptions, Engine, Error, FsyncPolicy, Key, Options};
use std::sync::Arc;

fn opts(fsync: FsyncPolicy) -> Options {
    Options {
        fsync,
        snapshot_log_bytes: None,
        ..Options::default()
    }
}

#[test]
fn a_follower_applying_the_batches_has_the_leaders_state() {
    let dirs = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (leader, sink) = recording_leader(dirs.0.path(), opts(FsyncPolicy::No), "weibo", "likes");
    for i in 0..200u64 {
        leader
            .incr("weibo", Key::Id(i % 7), "likes", 3, Some(&format!("t{i}")))
            .unwrap();
    }
    // A retried txid is not counted again and appends nothing.
    let before = sink.batches.lock().len();
    leader
        .incr("weibo", Key::Id(0), "likes", 3, Some("t0"))
        .unwrap();
    assert_eq!(sink.batches.lock().len(), before);
    leader.delete("weibo", Key::Name("gone")).unwrap();
    leader.set("weibo", Key::Name("home"), "likes", 77).unwrap();

    // Under a policy that does not fsync, writes still waited for the log of record:
    // one batch per acknowledged write here, lsns consecutive across batches.
    let batches = sink.batches.lock().clone();
    let mut expect = 1;
    for (first, end, _) in &batches {
        assert_eq!(*first, expect);
        assert!(end > first);
        expect = *end;
    }
    assert_eq!(expect, leader.next_lsn());

    let follower = Engine::open(dirs.1.path(), opts(FsyncPolicy::No)).unwrap();
    follower.set_read_only(true);
    for (_, _, frames) in &batches {
        follower.apply_replicated(frames).unwrap();
    }
    // Redelivery of an applied batch is skipped.
    let again = follower.apply_replicated(&batches[3].2).unwrap();
    assert_eq!((again.applied, again.skipped > 0), (0, true));
    assert_eq!(follower.next_lsn(), leader.next_lsn());
    for i in 0..7 {
        assert_eq!(
            follower.get("weibo", Key::Id(i), "likes").unwrap(),
            leader.get("weibo", Key::Id(i), "likes").unwrap()
        );
    }
    assert_eq!(
        follower.get("weibo", Key::Name("home"), "likes").unwrap(),
        77
    );
    // The follower refuses its own writes.
    assert!(matches!(
        follower.incr("weibo", Key::Id(1), "likes", 1, None),
        Err(Error::ReadOnly)
    ));

    // Promoted, it continues the leader's lsns and knows the txids applied there.
    follower.set_read_only(false);
    let sink2 = Arc::new(Recorded::default());
    follower.set_log_of_record(Some(sink2.clone())).unwrap();
    let v = follower.get("weibo", Key::Id(5), "likes").unwrap();
    assert_eq!(
        follower
            .incr("weibo", Key::Id(5), "likes", 3, Some("t5"))
            .unwrap(),
        v,
        "a txid applied on the old leader is not counted again"
    );
    follower
        .incr("weibo", Key::Id(5), "likes", 1, Some("new"))
        .unwrap();
    assert_eq!(sink2.batches.lock()[0].0, leader.next_lsn());
}

#[test]
fn a_damaged_or_gapped_batch_changes_nothing() {
    let dirs = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (leader, sink) = recording_leader(dirs.0.path(), opts(FsyncPolicy::No), "c", "v");
    leader.incr("c", Key::Id(1), "v", 5, None).unwrap();
    let batches = sink.batches.lock().clone();
    let follower = Engine::open(dirs.1.path(), opts(FsyncPolicy::No)).unwrap();
    // A gap: the first batch is missing.
    assert!(matches!(
        follower.apply_replicated(&batches[1].2),
        Err(Error::BadBatch(_))
    ));
    let mut damaged = batches[0].2.clone();
    let last = damaged.len() - 1;
    damaged[last] ^= 0x40;
    assert!(matches!(
        follower.apply_replicated(&damaged),
        Err(Error::BadBatch(_))
    ));
    assert_eq!(follower.next_lsn(), 1);
    for (_, _, frames) in &batches {
        follower.apply_replicated(frames).unwrap();
    }
    assert_eq!(follower.get("c", Key::Id(1), "v").unwrap(), 5);
}

#[test]
fn a_refused_batch_is_not_acknowledged_and_stops_writes() {
    let dir = tempfile::tempdir().unwrap();
    let (leader, sink) = recording_leader(dir.path(), opts(FsyncPolicy::Always), "c", "v");
    sink.refuse.store(true, Ordering::SeqCst);
    assert!(matches!(
        leader.incr("c", Key::Id(1), "v", 5, None),
        Err(Error::LogOfRecord(_))
    ));
    sink.refuse.store(false, Ordering::SeqCst);
    assert!(leader.incr("c", Key::Id(1), "v", 5, None).is_err());
    assert_eq!(sink.batches.lock().len(), 2);
}

/// A run of increments is one record per 4,096 items (`SetRun`): a follower applies it
/// item by item and ends with the leader's values, integer and string keys alike; a
/// refused item is in no record.
#[test]
fn a_follower_applies_runs_of_increments_as_the_leader_did() {
    let dirs = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (leader, sink) = recording_leader(dirs.0.path(), opts(FsyncPolicy::No), "weibo", "likes");
    let names: Vec<String> = (0..50).map(|i| format!("pageviews:/a/{i}")).collect();
    let mut items: Vec<(Key, i64)> = Vec::new();
    for i in 0..10_000u64 {
        items.push((Key::Id((i * 7919) % 3_000 + (1 << 40)), 1 + (i % 3) as i64));
        if i % 97 == 0 {
            items.push((Key::Name(&names[(i % 50) as usize]), 5));
        }
    }
    // Below zero: refused, logged nowhere.
    items.push((Key::Id(1 << 40), -1_000_000));
    let lsn_before = leader.next_lsn();
    let mut out = Vec::new();
    let p = leader.incr_run("weibo", "likes", &items, &mut out).unwrap();
    leader.commit(p).unwrap();
    assert!(out.last().unwrap().is_err());
    assert_eq!(out.iter().filter(|r| r.is_ok()).count(), items.len() - 1);
    // 10,104 applied items: three records.
    assert_eq!(leader.next_lsn() - lsn_before, 3);

    let follower = follower_of(dirs.1.path(), &sink);
    assert_eq!(follower.next_lsn(), leader.next_lsn());
    for (key, _) in &items {
        assert_eq!(
            follower.get("weibo", *key, "likes").unwrap(),
            leader.get("weibo", *key, "likes").unwrap()
        );
    }
    assert_eq!(
        follower.stats().counters[0].rows,
        leader.stats().counters[0].rows
    );
}

/// Several columns of many rows (`incr_rows`, `set_rows`) are one `SetRows` record per
/// 4,096 items: a follower applies them item by item and ends with the leader's values;
/// a refused item is in no record.
#[test]
fn a_follower_applies_rows_records_as_the_leader_did() {
    let dirs = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (leader, sink) = recording_leader(dirs.0.path(), opts(FsyncPolicy::No), "days", "a");
    for column in ["b", "c"] {
        leader
            .add_column("days", column, ColumnOptions::default())
            .unwrap();
    }
    let names = ["a", "b", "c"];
    let keys: Vec<String> = (0..3_000).map(|i| format!("{}:20418", i * 7919)).collect();
    let items: Vec<Vec<(usize, i64)>> = (0..keys.len())
        .map(|i| match i % 3 {
            0 => vec![(0, 1), (2, 4)],
            1 => vec![(1, 2), (0, 1), (2, 1)],
            // Below zero: refused, logged nowhere; the row's other item stays.
            _ => vec![(1, -5), (0, 3)],
        })
        .collect();
    let mut rows: Vec<(Key, &[(usize, i64)])> = keys
        .iter()
        .zip(&items)
        .map(|(k, items)| (Key::Name(k), items.as_slice()))
        .collect();
    let ids: Vec<(usize, i64)> = vec![(0, 9), (1, 9)];
    rows.push((Key::Id(1 << 40), &ids));
    let lsn_before = leader.next_lsn();
    let mut out = Vec::new();
    let p = leader.incr_rows("days", &names, &rows, &mut out).unwrap();
    leader.commit(p).unwrap();
    let refused = out.iter().filter(|r| r.is_err()).count();
    assert_eq!(refused, keys.len() / 3);
    // 6,002 applied items: two records.
    assert_eq!(out.len() - refused, 6_002);
    assert_eq!(leader.next_lsn() - lsn_before, 2);
    let owners: Vec<(usize, u64)> = vec![(2, 77), (0, 70_000)];
    let set: Vec<(Key, &[(usize, u64)])> = vec![(Key::Name("7:o"), &owners)];
    let p = leader.set_rows("days", &names, &set, &mut out).unwrap();
    leader.commit(p).unwrap();
    assert_eq!(leader.next_lsn() - lsn_before, 3);

    let follower = follower_of(dirs.1.path(), &sink);
    assert_eq!(follower.next_lsn(), leader.next_lsn());
    let all: Vec<Key> = rows
        .iter()
        .map(|(k, _)| *k)
        .chain([Key::Name("7:o")])
        .collect();
    assert_eq!(
        follower.mget_rows("days", &all).unwrap(),
        leader.mget_rows("days", &all).unwrap()
    );
    assert_eq!(leader.get("days", Key::Name("7:o"), "a").unwrap(), 70_000);
    // The third row: its refused item changed nothing, its other one counted.
    assert_eq!(leader.get("days", Key::Name(&keys[2]), "b").unwrap(), 0);
    assert_eq!(leader.get("days", Key::Name(&keys[2]), "a").unwrap(), 3);
    assert_eq!(
        follower.stats().counters[0].named_rows,
        leader.stats().counters[0].named_rows
    );
}

/// A read-only engine in `dir` that applied every batch `sink` recorded, in order.
fn follower_of(dir: &std::path::Path, sink: &Recorded) -> Engine {
    let follower = Engine::open(dir, opts(FsyncPolicy::No)).unwrap();
    follower.set_read_only(true);
    for (_, _, frames) in sink.batches.lock().iter() {
        follower.apply_replicated(frames).unwrap();
    }
    follower
}

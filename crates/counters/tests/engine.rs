//! Engine behaviour end to end: durability across reopen, snapshots and log rotation,
//! idempotent increments, many writer threads, and a model test with reopens.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use proptest::prelude::*;
use shardkit_counters::{ColumnOptions, Engine, Error, FsyncPolicy, Key, Options};

fn opts(fsync: FsyncPolicy) -> Options {
    Options {
        fsync,
        snapshot_log_bytes: None,
        ..Options::default()
    }
}

fn setup(e: &Engine) {
    e.create_counter("weibo").unwrap();
    e.add_column("weibo", "comments", ColumnOptions::new(16, 32))
        .unwrap();
    e.add_column("weibo", "likes", ColumnOptions::new(8, 64))
        .unwrap();
}

#[test]
fn values_survive_reopen_and_errors_say_what_is_wrong() {
    let dir = tempfile::tempdir().unwrap();
    {
        let e = Engine::open(dir.path(), opts(FsyncPolicy::Always)).unwrap();
        setup(&e);
        assert_eq!(e.incr("weibo", Key::Id(7), "comments", 5, None).unwrap(), 5);
        assert_eq!(
            e.incr("weibo", Key::Id(7), "likes", 1000, None).unwrap(),
            1000
        );
        assert_eq!(
            e.incr("weibo", Key::parse("home"), "likes", 3, None)
                .unwrap(),
            3
        );
        e.set("weibo", Key::Id(8), "comments", 9).unwrap();
        e.set("weibo", Key::Id(9), "comments", 1).unwrap();
        assert!(e.delete("weibo", Key::Id(9)).unwrap());
        assert!(!e.delete("weibo", Key::Id(9)).unwrap());
        let err = e
            .incr("weibo", Key::Id(7), "comments", -6, None)
            .unwrap_err();
        assert!(matches!(err, Error::Negative { current: 5, .. }));
        assert!(err.to_string().contains("never go negative"));
        assert!(matches!(
            e.incr("nope", Key::Id(1), "x", 1, None),
            Err(Error::NoSuchCounter(_))
        ));
        assert!(matches!(
            e.incr("weibo", Key::Id(1), "x", 1, None),
            Err(Error::NoSuchColumn { .. })
        ));
        assert!(matches!(
            e.create_counter("weibo"),
            Err(Error::CounterExists(_))
        ));
        assert!(matches!(
            e.create_counter("a:b"),
            Err(Error::BadName { .. })
        ));
        assert!(matches!(
            e.add_column(
                "weibo",
                "x",
                ColumnOptions {
                    bits: 12,
                    max_bits: 32,
                    default: 0
                }
            ),
            Err(Error::BadColumn { .. })
        ));
        assert!(matches!(
            e.incr("weibo", Key::Name(""), "likes", 1, None),
            Err(Error::BadKey(_))
        ));
        e.close().unwrap();
    }
    let e = Engine::open(dir.path(), opts(FsyncPolicy::Always)).unwrap();
    assert!(e.recovery().dropped.is_empty(), "{:?}", e.recovery());
    assert_eq!(e.get("weibo", Key::Id(7), "comments").unwrap(), 5);
    assert_eq!(e.get("weibo", Key::Id(7), "likes").unwrap(), 1000);
    assert_eq!(e.get("weibo", Key::parse("home"), "likes").unwrap(), 3);
    assert_eq!(e.get("weibo", Key::Id(8), "comments").unwrap(), 9);
    assert!(!e.exists("weibo", Key::Id(9)).unwrap());
    assert_eq!(
        e.get_row("weibo", Key::Id(7)).unwrap(),
        vec![("comments".into(), 5), ("likes".into(), 1000)]
    );
    assert_eq!(
        e.mget("weibo", &[Key::Id(7), Key::Id(8), Key::Id(100)], "comments")
            .unwrap(),
        vec![5, 9, 0]
    );
    let st = e.stats();
    assert_eq!(st.counters[0].rows, 3);
    assert_eq!(st.counters[0].overflow_entries, 1);
}

#[test]
fn snapshots_rotate_the_log_and_recovery_uses_them() {
    let dir = tempfile::tempdir().unwrap();
    {
        let e = Engine::open(dir.path(), opts(FsyncPolicy::No)).unwrap();
        setup(&e);
        for i in 0..3000u64 {
            e.incr(
                "weibo",
                Key::Id(i * 31),
                "comments",
                (i % 7) as i64 + 1,
                Some(&format!("t{i}")),
            )
            .unwrap();
        }
        let s1 = e.snapshot().unwrap();
        assert_eq!(s1.rows, 3000);
        for i in 0..3000u64 {
            e.incr("weibo", Key::Id(i * 31), "likes", 2, None).unwrap();
        }
        e.add_column("weibo", "late", ColumnOptions::default())
            .unwrap();
        e.incr("weibo", Key::Id(31), "late", 4, None).unwrap();
        e.snapshot().unwrap();
        e.incr("weibo", Key::Id(62), "late", 1, None).unwrap();
        e.snapshot().unwrap();
        e.close().unwrap();
    }
    let logs = std::fs::read_dir(dir.path()).unwrap().filter(|f| {
        f.as_ref()
            .unwrap()
            .file_name()
            .to_string_lossy()
            .starts_with("log-")
    });
    assert!(
        logs.count() <= 3,
        "old log segments are removed after snapshots"
    );
    let e = Engine::open(dir.path(), opts(FsyncPolicy::No)).unwrap();
    assert!(e.recovery().snapshot.is_some());
    assert!(e.recovery().dropped.is_empty(), "{:?}", e.recovery());
    for i in 0..3000u64 {
        assert_eq!(
            e.get("weibo", Key::Id(i * 31), "comments").unwrap(),
            (i % 7) + 1
        );
        assert_eq!(e.get("weibo", Key::Id(i * 31), "likes").unwrap(), 2);
    }
    assert_eq!(e.get("weibo", Key::Id(31), "late").unwrap(), 4);
    assert_eq!(e.get("weibo", Key::Id(62), "late").unwrap(), 1);
    // txids came back from the snapshot: a retry is not counted.
    assert_eq!(
        e.incr("weibo", Key::Id(31), "comments", 2, Some("t1"))
            .unwrap(),
        2
    );
}

#[test]
fn txid_retries_count_once_across_restarts_and_expire_after_the_window() {
    let dir = tempfile::tempdir().unwrap();
    {
        let e = Engine::open(dir.path(), opts(FsyncPolicy::Always)).unwrap();
        setup(&e);
        assert_eq!(
            e.incr("weibo", Key::Id(1), "comments", 3, Some("a"))
                .unwrap(),
            3
        );
        assert_eq!(
            e.incr("weibo", Key::Id(1), "comments", 3, Some("a"))
                .unwrap(),
            3
        );
        assert_eq!(e.incr("weibo", Key::Id(1), "comments", 1, None).unwrap(), 4);
        // a repeat returns the current value
        assert_eq!(
            e.incr("weibo", Key::Id(1), "comments", 3, Some("a"))
                .unwrap(),
            4
        );
        // the same txid on another row is another transaction
        assert_eq!(
            e.incr("weibo", Key::Id(2), "comments", 3, Some("a"))
                .unwrap(),
            3
        );
        // a refused decrement is not remembered
        assert!(e
            .incr("weibo", Key::Id(5), "comments", -1, Some("b"))
            .is_err());
        assert_eq!(
            e.incr("weibo", Key::Id(5), "comments", 1, Some("b"))
                .unwrap(),
            1
        );
        assert!(matches!(
            e.incr("weibo", Key::Id(5), "comments", 1, Some("")),
            Err(Error::BadTxid(_))
        ));
    }
    {
        let e = Engine::open(dir.path(), opts(FsyncPolicy::Always)).unwrap();
        assert_eq!(
            e.incr("weibo", Key::Id(1), "comments", 3, Some("a"))
                .unwrap(),
            4
        );
        assert_eq!(
            e.incr("weibo", Key::Id(5), "comments", 1, Some("b"))
                .unwrap(),
            1
        );
    }
    let short = Options {
        txid_window: Duration::from_millis(1),
        ..opts(FsyncPolicy::Always)
    };
    let e = Engine::open(dir.path(), short).unwrap();
    std::thread::sleep(Duration::from_millis(5));
    assert_eq!(
        e.incr("weibo", Key::Id(1), "comments", 3, Some("a"))
            .unwrap(),
        7
    );
}

#[test]
fn many_threads_share_fsyncs_and_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    {
        let e = Arc::new(Engine::open(dir.path(), opts(FsyncPolicy::Always)).unwrap());
        setup(&e);
        let hs: Vec<_> = (0..8u64)
            .map(|t| {
                let e = e.clone();
                std::thread::spawn(move || {
                    for i in 0..200u64 {
                        e.incr("weibo", Key::Id(i % 50), "comments", 1, None)
                            .unwrap();
                        e.incr("weibo", Key::Id(((t + 1) << 40) | i), "likes", 1, None)
                            .unwrap();
                    }
                })
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
    }
    let e = Engine::open(dir.path(), opts(FsyncPolicy::Always)).unwrap();
    for i in 0..50u64 {
        assert_eq!(e.get("weibo", Key::Id(i), "comments").unwrap(), 32);
    }
    assert_eq!(e.stats().counters[0].rows, 50 + 8 * 200);
}

#[test]
fn snapshot_in_background_while_writers_run() {
    let dir = tempfile::tempdir().unwrap();
    let o = Options {
        snapshot_log_bytes: Some(16 << 10),
        ..opts(FsyncPolicy::EverySec)
    };
    {
        let e = Arc::new(Engine::open(dir.path(), o.clone()).unwrap());
        setup(&e);
        let hs: Vec<_> = (0..2u64)
            .map(|t| {
                let e = e.clone();
                std::thread::spawn(move || {
                    for i in 0..20_000u64 {
                        e.incr(
                            "weibo",
                            Key::Id(t * 1_000_000 + i % 5000),
                            "comments",
                            1,
                            None,
                        )
                        .unwrap();
                    }
                })
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
        // make sure at least one snapshot happened, whatever the timing
        e.snapshot().unwrap();
        assert!(e.stats().last_background_error.is_none());
    }
    let e = Engine::open(dir.path(), o).unwrap();
    assert!(e.recovery().dropped.is_empty(), "{:?}", e.recovery());
    for t in 0..2u64 {
        for i in 0..5000u64 {
            assert_eq!(
                e.get("weibo", Key::Id(t * 1_000_000 + i), "comments")
                    .unwrap(),
                4
            );
        }
    }
}

#[derive(Debug, Clone)]
enum Op {
    Incr(usize, usize, i64, Option<u8>),
    Delete(usize),
    AddColumn,
    Snapshot,
    Reopen,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        12 => (0usize..40, 0usize..4, -50i64..400, proptest::option::of(0u8..6)).prop_map(|(k, c, d, t)| Op::Incr(k, c, d, t)),
        2 => (0usize..40).prop_map(Op::Delete),
        1 => Just(Op::AddColumn),
        1 => Just(Op::Snapshot),
        2 => Just(Op::Reopen),
    ]
}

fn key(i: usize) -> String {
    match i % 4 {
        0 => ((0x77u64 << 32) | i as u64).to_string(),
        1 => (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15).to_string(),
        2 => format!("name{i}"),
        _ => i.to_string(),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]
    /// The engine gives the model's answers across snapshots and reopens.
    #[test]
    fn engine_matches_model_across_reopens(ops in proptest::collection::vec(op(), 1..80)) {
        let dir = tempfile::tempdir().unwrap();
        let o = opts(FsyncPolicy::No);
        let mut e = Engine::open(dir.path(), o.clone()).unwrap();
        e.create_counter("c").unwrap();
        e.add_column("c", "c0", ColumnOptions::new(8, 32)).unwrap();
        let mut ncols = 1usize;
        let mut model: HashMap<(String, usize), u64> = HashMap::new();
        let mut seen: HashMap<(String, u8), ()> = HashMap::new();
        for op in ops {
            match op {
                Op::Incr(k, c, d, t) => {
                    let k = key(k);
                    let c = c % ncols;
                    let tx = t.map(|t| format!("tx{t}"));
                    let cur = *model.get(&(k.clone(), c)).unwrap_or(&0);
                    let got = e.incr("c", Key::parse(&k), &format!("c{c}"), d, tx.as_deref());
                    if let Some(t) = t {
                        if seen.contains_key(&(k.clone(), t)) {
                            prop_assert_eq!(got.ok(), Some(cur));
                            continue;
                        }
                    }
                    if (cur as i64) + d < 0 {
                        prop_assert!(got.is_err());
                    } else {
                        prop_assert_eq!(got.ok(), Some((cur as i64 + d) as u64));
                        model.insert((k.clone(), c), (cur as i64 + d) as u64);
                        if let Some(t) = t {
                            seen.insert((k, t), ());
                        }
                    }
                }
                Op::Delete(k) => {
                    let k = key(k);
                    let had = (0..ncols).any(|c| model.get(&(k.clone(), c)).is_some_and(|v| *v != 0));
                    prop_assert_eq!(e.delete("c", Key::parse(&k)).unwrap(), had);
                    for c in 0..ncols {
                        model.remove(&(k.clone(), c));
                    }
                }
                Op::AddColumn => {
                    if ncols < 4 {
                        e.add_column("c", &format!("c{ncols}"), ColumnOptions::new(16, 64)).unwrap();
                        ncols += 1;
                    }
                }
                Op::Snapshot => {
                    e.snapshot().unwrap();
                }
                Op::Reopen => {
                    drop(e);
                    e = Engine::open(dir.path(), o.clone()).unwrap();
                    prop_assert!(e.recovery().dropped.is_empty());
                }
            }
        }
        drop(e);
        let e = Engine::open(dir.path(), o).unwrap();
        for i in 0..40 {
            let k = key(i);
            for c in 0..ncols {
                prop_assert_eq!(e.get("c", Key::parse(&k), &format!("c{c}")).unwrap(), *model.get(&(k.clone(), c)).unwrap_or(&0));
            }
        }
    }
}

#[test]
fn a_second_engine_on_the_same_directory_is_refused_until_the_first_closes() {
    let dir = tempfile::tempdir().unwrap();
    let first =
        shardkit_counters::Engine::open(dir.path(), shardkit_counters::Options::default()).unwrap();
    let second = shardkit_counters::Engine::open(dir.path(), shardkit_counters::Options::default());
    assert!(
        matches!(second, Err(shardkit_counters::Error::Locked(_))),
        "a second engine must be refused"
    );
    first.close().unwrap();
    assert!(
        shardkit_counters::Engine::open(dir.path(), shardkit_counters::Options::default()).is_ok()
    );
}

#[test]
fn incr_batch_applies_every_good_item_with_one_commit_and_survives_reopen() {
    let dir = tempfile::tempdir().unwrap();
    {
        let e = Engine::open(dir.path(), opts(FsyncPolicy::Always)).unwrap();
        setup(&e);
        let items = [
            (Key::Id(1), 2),
            (Key::parse("page:2026"), 5),
            (Key::Id(1), 3),
            (Key::Id(2), -1),
        ];
        assert_eq!(
            e.incr_batch("weibo", "comments", &items).unwrap(),
            1,
            "the item going negative is skipped"
        );
        assert_eq!(e.get("weibo", Key::Id(1), "comments").unwrap(), 5);
        assert!(matches!(
            e.incr_batch("nope", "comments", &items),
            Err(Error::NoSuchCounter(_))
        ));
    }
    let e = Engine::open(dir.path(), opts(FsyncPolicy::Always)).unwrap();
    assert_eq!(e.get("weibo", Key::Id(1), "comments").unwrap(), 5);
    assert_eq!(
        e.get("weibo", Key::parse("page:2026"), "comments").unwrap(),
        5
    );
    assert_eq!(e.get("weibo", Key::Id(2), "comments").unwrap(), 0);
}

#[test]
fn incr_run_applies_in_order_refuses_alone_and_matches_the_log_after_reopen() {
    let dir = tempfile::tempdir().unwrap();
    {
        let e = Engine::open(dir.path(), opts(FsyncPolicy::Always)).unwrap();
        setup(&e);
        let long = "x".repeat(2000);
        let items = [
            (Key::Id(7), 4),
            (Key::Id(7), -5), // below zero: refused, 7 stays 4
            (Key::parse("page:2026"), 1),
            (Key::Id(7), 2),
            (Key::Name(&long), 1), // key too long
            (Key::parse("page:2026"), 1),
        ];
        let mut out = Vec::new();
        let pending = e.incr_run("weibo", "comments", &items, &mut out).unwrap();
        e.commit(pending).unwrap();
        assert_eq!(out.len(), items.len());
        assert_eq!(out[0].as_ref().ok(), Some(&4));
        assert!(
            matches!(out[1], Err(Error::Negative { .. })),
            "{:?}",
            out[1]
        );
        assert_eq!(out[2].as_ref().ok(), Some(&1));
        assert_eq!(out[3].as_ref().ok(), Some(&6));
        assert!(matches!(out[4], Err(Error::BadKey(_))), "{:?}", out[4]);
        assert_eq!(out[5].as_ref().ok(), Some(&2));
        assert!(matches!(
            e.incr_run("weibo", "nope", &items, &mut out),
            Err(Error::NoSuchColumn { .. })
        ));
        assert!(out.is_empty());
    }
    let e = Engine::open(dir.path(), opts(FsyncPolicy::Always)).unwrap();
    assert_eq!(e.get("weibo", Key::Id(7), "comments").unwrap(), 6);
    assert_eq!(
        e.get("weibo", Key::parse("page:2026"), "comments").unwrap(),
        2
    );
}

#[test]
fn concurrent_runs_over_shared_keys_lose_nothing_and_replay_to_the_same_values() {
    let dir = tempfile::tempdir().unwrap();
    let threads = 4;
    let runs = 300;
    let before = {
        let e = Arc::new(Engine::open(dir.path(), opts(FsyncPolicy::No)).unwrap());
        setup(&e);
        let workers: Vec<_> = (0..threads)
            .map(|t| {
                let e = Arc::clone(&e);
                std::thread::spawn(move || {
                    let mut out = Vec::new();
                    for r in 0..runs {
                        // Keys in many stripes, in a different order in every thread.
                        let items: Vec<(Key<'_>, i64)> = (0..16u64)
                            .map(|i| (Key::Id(((i * 7 + t * 3 + r) % 40) << 32), 1))
                            .collect();
                        let pending = e.incr_run("weibo", "likes", &items, &mut out).unwrap();
                        e.commit(pending).unwrap();
                        assert!(out.iter().all(|r| r.is_ok()));
                    }
                })
            })
            .collect();
        for w in workers {
            w.join().unwrap();
        }
        let values: Vec<u64> = (0..40u64)
            .map(|k| e.get("weibo", Key::Id(k << 32), "likes").unwrap())
            .collect();
        assert_eq!(values.iter().sum::<u64>(), threads * runs * 16);
        Arc::into_inner(e).unwrap().close().unwrap();
        values
    };
    // The log replays to exactly what memory held: records kept the order of the
    // changes they describe.
    let e = Engine::open(dir.path(), opts(FsyncPolicy::No)).unwrap();
    let after: Vec<u64> = (0..40u64)
        .map(|k| e.get("weibo", Key::Id(k << 32), "likes").unwrap())
        .collect();
    assert_eq!(after, before);
}

#[test]
fn deferred_writes_are_visible_at_once_and_durable_after_one_commit() {
    let dir = tempfile::tempdir().unwrap();
    {
        let e = Engine::open(dir.path(), opts(FsyncPolicy::Always)).unwrap();
        setup(&e);
        let mut newest = shardkit_counters::Pending::NONE;
        for i in 0..100u64 {
            let (v, p) = e
                .incr_deferred("weibo", Key::Id(i % 10), "comments", 1, None)
                .unwrap();
            assert_eq!(v, i / 10 + 1);
            assert!(p > newest, "positions grow in log order");
            newest = newest.max(p);
        }
        let p = e
            .set_deferred("weibo", Key::Id(500), "comments", 7)
            .unwrap();
        newest = newest.max(p);
        let (stored, p) = e.delete_deferred("weibo", Key::Id(9)).unwrap();
        assert!(stored);
        newest = newest.max(p);
        let (stored, nothing) = e.delete_deferred("weibo", Key::Id(9)).unwrap();
        assert!(!stored);
        assert!(
            nothing.is_none() && e.is_durable(nothing),
            "deleting an absent row waits for nothing"
        );
        // Readers see the writes before they are committed.
        assert_eq!(e.get("weibo", Key::Id(0), "comments").unwrap(), 10);
        e.commit(newest).unwrap();
        assert!(e.is_durable(newest));
        // A retried txid waits for whatever was appended before it.
        let (_, first) = e
            .incr_deferred("weibo", Key::Id(1), "comments", 5, Some("tx-1"))
            .unwrap();
        let (again, retry) = e
            .incr_deferred("weibo", Key::Id(1), "comments", 5, Some("tx-1"))
            .unwrap();
        assert_eq!(again, 15);
        assert!(retry >= first);
        e.commit(retry).unwrap();
        assert!(e.is_durable(first));
    }
    let e = Engine::open(dir.path(), opts(FsyncPolicy::Always)).unwrap();
    assert_eq!(e.get("weibo", Key::Id(0), "comments").unwrap(), 10);
    assert_eq!(e.get("weibo", Key::Id(1), "comments").unwrap(), 15);
    assert_eq!(e.get("weibo", Key::Id(9), "comments").unwrap(), 0);
    assert_eq!(e.get("weibo", Key::Id(500), "comments").unwrap(), 7);
}

#[test]
fn no_value_passes_i64_max_and_a_refused_increment_leaves_no_record() {
    let dir = tempfile::tempdir().unwrap();
    let max = i64::MAX as u64;
    {
        let e = Engine::open(dir.path(), opts(FsyncPolicy::Always)).unwrap();
        e.create_counter("c").unwrap();
        // Both a 64-bit inline column (the in-place path) and an overflowing one.
        e.add_column("c", "wide", ColumnOptions::new(64, 64))
            .unwrap();
        e.add_column("c", "small", ColumnOptions::new(16, 64))
            .unwrap();
        for column in ["wide", "small"] {
            assert_eq!(
                e.incr("c", Key::Id(1), column, i64::MAX - 1, None).unwrap(),
                max - 1
            );
            assert_eq!(e.incr("c", Key::Id(1), column, 1, None).unwrap(), max);
            let before = e.stats().next_lsn;
            let err = e.incr("c", Key::Id(1), column, 1, None).unwrap_err();
            assert!(
                matches!(err, Error::TooLarge { max: m, .. } if m == max),
                "{err:?}"
            );
            assert_eq!(
                e.stats().next_lsn,
                before,
                "a refused increment is not logged"
            );
            assert!(matches!(
                e.set("c", Key::Id(2), column, max + 1),
                Err(Error::TooLarge { .. })
            ));
        }
    }
    let e = Engine::open(dir.path(), opts(FsyncPolicy::Always)).unwrap();
    assert_eq!(e.get("c", Key::Id(1), "wide").unwrap(), max);
    assert_eq!(e.get("c", Key::Id(1), "small").unwrap(), max);
}

#[test]
fn clear_removes_every_row_and_survives_reopen_and_snapshots() {
    let dir = tempfile::tempdir().unwrap();
    {
        let e = Engine::open(dir.path(), opts(FsyncPolicy::Always)).unwrap();
        setup(&e);
        for id in 0..2_000u64 {
            e.incr("weibo", Key::Id(id * 977), "comments", 1, None)
                .unwrap();
        }
        e.incr("weibo", Key::parse("home"), "likes", 3, None)
            .unwrap();
        // Half the rows are in a snapshot, the clear and later writes in the log.
        e.snapshot().unwrap();
        let (rows, pending) = e.clear_deferred("weibo").unwrap();
        e.commit(pending).unwrap();
        assert_eq!(rows, 2_001);
        assert_eq!(e.clear_deferred("weibo").unwrap().0, 0, "nothing left");
        e.incr("weibo", Key::Id(5), "comments", 2, None).unwrap();
        assert_eq!(e.get("weibo", Key::Id(977), "comments").unwrap(), 0);
        assert_eq!(e.columns("weibo").unwrap().len(), 2, "columns stay");
    }
    for round in 0..2 {
        let e = Engine::open(dir.path(), opts(FsyncPolicy::Always)).unwrap();
        let stats = e.stats();
        assert_eq!(stats.counters[0].rows, 1, "round {round}");
        assert_eq!(e.get("weibo", Key::Id(5), "comments").unwrap(), 2);
        assert!(!e.exists("weibo", Key::parse("home")).unwrap());
        // The second open reads a snapshot taken after the clear.
        e.snapshot().unwrap();
    }
}

/// Waits (bounded) until `cond` holds; false if it never did.
fn eventually(mut cond: impl FnMut() -> bool) -> bool {
    for _ in 0..200 {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    cond()
}

/// Increments one row until the log since the last snapshot holds `bytes`.
fn write_log(e: &Engine, bytes: u64) {
    while e.stats().log_bytes_since_snapshot < bytes {
        for _ in 0..100 {
            e.incr("weibo", Key::Name("hot"), "comments", 1, None)
                .unwrap();
        }
    }
}

#[test]
fn a_big_store_waits_for_its_log_to_grow_by_the_percent_of_its_last_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let o = Options {
        snapshot_log_bytes: Some(4 << 10),
        snapshot_growth_percent: Some(100),
        ..opts(FsyncPolicy::EverySec)
    };
    let snapshot_bytes = |e: &Engine| {
        let files = e.snapshot_files().unwrap();
        std::fs::metadata(&files[0].1).unwrap().len()
    };
    let size;
    {
        let e = Engine::open(dir.path(), o.clone()).unwrap();
        setup(&e);
        // Keys with little in common: a snapshot stores string keys front-coded and
        // compressed, and this store must stay many times the trigger.
        for i in 0..20_000u64 {
            let key = format!("row:{:016x}", i.wrapping_mul(0x9E37_79B9_7F4A_7C15));
            e.incr("weibo", Key::Name(&key), "comments", 1, None)
                .unwrap();
        }
        e.snapshot().unwrap();
        size = snapshot_bytes(&e);
        assert!(
            size > 64 << 10,
            "the store is many times the 4 KiB trigger: {size}"
        );
        let before = e.stats().snapshots_written;
        write_log(&e, 16 << 10);
        std::thread::sleep(Duration::from_millis(600)); // six checks of the trigger
        assert_eq!(
            e.stats().snapshots_written,
            before,
            "16 KiB of log is past the 4 KiB trigger but far below the last snapshot's size"
        );
        write_log(&e, size);
        assert!(
            eventually(|| e.stats().snapshots_written > before),
            "the log grew by the snapshot's size: a snapshot follows"
        );
    }
    // After a reopen the base is the newest snapshot on disk.
    let e = Engine::open(dir.path(), o.clone()).unwrap();
    write_log(&e, 16 << 10);
    std::thread::sleep(Duration::from_millis(600));
    assert_eq!(
        e.stats().snapshots_written,
        0,
        "reopened: still waits for growth"
    );
    drop(e);
    // With the percent off, the byte trigger alone starts one.
    let e = Engine::open(
        dir.path(),
        Options {
            snapshot_growth_percent: None,
            ..o
        },
    )
    .unwrap();
    write_log(&e, 8 << 10);
    assert!(eventually(|| e.stats().snapshots_written > 0));
    let last = format!("row:{:016x}", 19_999u64.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    assert_eq!(e.get("weibo", Key::Name(&last), "comments").unwrap(), 1);
}

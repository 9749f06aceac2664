//! Snapshots write a stripe's rows as cold-tier blocks (integer keys: frame `8`, sorted
//! by id, the block format's byte planes and zstd; string keys: frame `10`, sorted by
//! key, front-coded): the rows come back whole, with wide values, deleted rows and a
//! column added late, and take a fraction of the bytes frame `3` took.

use shardkit_counters::{ColumnOptions, Engine, FsyncPolicy, Key, Options};

fn opts() -> Options {
    Options {
        fsync: FsyncPolicy::No,
        snapshot_log_bytes: None,
        ..Options::default()
    }
}

fn mix(i: u64) -> u64 {
    let z = i.wrapping_add(1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z ^ (z >> 31)
}

/// 100,000 time-ordered ids under one high half (one stripe: frames of 65,536 rows and
/// the rest), made in a shuffled order.
fn ids() -> Vec<u64> {
    let mut ids: Vec<u64> = (0..100_000u64)
        .map(|i| (7u64 << 32) | (i * 40_000 + (mix(i) % 1_000) * 8))
        .collect();
    ids.sort_unstable_by_key(|&id| mix(id));
    ids
}

fn a_of(id: u64) -> u64 {
    if id.is_multiple_of(997) {
        100_000 // wider than the column's 16 bits
    } else {
        1 + mix(id) % 7
    }
}

#[test]
fn integer_keyed_rows_snapshot_as_blocks_and_come_back_whole() {
    let dir = tempfile::tempdir().unwrap();
    let ids = ids();
    let deleted = |id: u64| mix(id).is_multiple_of(100);
    let late = |id: u64| mix(id) % 1000 == 1;
    let info = {
        let e = Engine::open(dir.path(), opts()).unwrap();
        e.create_counter("c").unwrap();
        e.add_column("c", "a", ColumnOptions::new(16, 64)).unwrap();
        e.add_column("c", "b", ColumnOptions::new(8, 32)).unwrap();
        for &id in &ids {
            e.set("c", Key::Id(id), "a", a_of(id)).unwrap();
            e.incr("c", Key::Id(id), "b", (id % 3) as i64, None)
                .unwrap();
        }
        for i in 0..100u64 {
            e.set("c", Key::parse(&format!("page:{i}")), "a", i + 1)
                .unwrap();
            e.set("c", Key::Id((i << 32) | 5), "b", i + 2).unwrap();
        }
        for &id in ids.iter().filter(|&&id| deleted(id)) {
            assert!(e.delete("c", Key::Id(id)).unwrap());
        }
        e.add_column(
            "c",
            "late",
            ColumnOptions {
                default: 3,
                ..ColumnOptions::new(8, 32)
            },
        )
        .unwrap();
        for &id in ids.iter().filter(|&&id| late(id)) {
            e.set("c", Key::Id(id), "late", 200).unwrap();
        }
        let info = e.snapshot().unwrap();
        e.close().unwrap();
        info
    };
    let kept = ids.iter().filter(|&&id| !deleted(id)).count() as u64;
    assert_eq!(info.rows, kept + 200);
    // Frame `3` spends ~12 bytes on one of these rows (a tagged key and three varints);
    // blocks ~2.3 (gaps of ~40,000 and small values).
    let bytes = std::fs::metadata(&info.path).unwrap().len();
    assert!(
        (bytes as f64) < 5.0 * info.rows as f64,
        "{bytes} bytes for {} rows",
        info.rows
    );

    for round in 0..2 {
        let e = Engine::open(dir.path(), opts()).unwrap();
        let r = e.recovery();
        if round == 0 {
            assert_eq!(r.snapshot.as_deref(), Some(info.path.as_path()));
        }
        assert!(r.dropped.is_empty() && r.anomalies == 0, "{round}: {r:?}");
        assert_eq!(r.snapshot_rows, kept + 200, "{round}");
        for &id in &ids {
            let get = |col| e.get("c", Key::Id(id), col).unwrap();
            if deleted(id) {
                assert_eq!((get("a"), get("b"), get("late")), (0, 0, 3), "{id}");
            } else {
                let l = if late(id) { 200 } else { 3 };
                assert_eq!((get("a"), get("b"), get("late")), (a_of(id), id % 3, l));
            }
        }
        for i in 0..100u64 {
            let page = format!("page:{i}");
            assert_eq!(e.get("c", Key::parse(&page), "a").unwrap(), i + 1);
            assert_eq!(e.get("c", Key::Id((i << 32) | 5), "b").unwrap(), i + 2);
        }
        if round == 0 {
            // A snapshot taken from rows that came from blocks is the same snapshot.
            assert_eq!(e.snapshot().unwrap().rows, kept + 200);
        }
        e.close().unwrap();
    }
}

/// String-keyed rows go as blocks of the cold tier's string-key format (frame `10`,
/// sorted by key, front-coded): they come back whole, and a snapshot of keys sharing a
/// prefix takes a fraction of what frame `3` took (a tagged key, its length, its bytes).
#[test]
fn string_keyed_rows_snapshot_as_blocks_and_come_back_whole() {
    let dir = tempfile::tempdir().unwrap();
    let key = |i: u64| format!("pageviews:/articles/{i:06}");
    let a_of = |i: u64| {
        if i.is_multiple_of(997) {
            100_000 // wider than the column's 16 bits
        } else {
            1 + i % 5
        }
    };
    let n = 100_000u64;
    let info = {
        let e = Engine::open(dir.path(), opts()).unwrap();
        e.create_counter("c").unwrap();
        e.add_column("c", "a", ColumnOptions::new(16, 64)).unwrap();
        e.add_column("c", "b", ColumnOptions::new(8, 32)).unwrap();
        for i in 0..n {
            let k = key(i);
            e.set("c", Key::Name(&k), "a", a_of(i)).unwrap();
            e.incr("c", Key::Name(&k), "b", (i % 3) as i64, None)
                .unwrap();
        }
        let info = e.snapshot().unwrap();
        e.close().unwrap();
        info
    };
    assert_eq!(info.rows, n);
    // Frame `3` spent ~31 bytes on one of these rows (a 26-byte key and its framing, two
    // varints); front-coded and compressed they take a few.
    let bytes = std::fs::metadata(&info.path).unwrap().len();
    assert!(
        (bytes as f64) < 8.0 * n as f64,
        "{bytes} bytes for {n} rows"
    );
    for round in 0..2 {
        let e = Engine::open(dir.path(), opts()).unwrap();
        let r = e.recovery();
        assert!(r.dropped.is_empty() && r.anomalies == 0, "{round}: {r:?}");
        assert_eq!(r.snapshot_rows, n, "{round}");
        for i in 0..n {
            let k = key(i);
            let get = |col| e.get("c", Key::Name(&k), col).unwrap();
            assert_eq!((get("a"), get("b")), (a_of(i), i % 3), "{k}");
        }
        if round == 0 {
            assert_eq!(e.snapshot().unwrap().rows, n);
        }
        e.close().unwrap();
    }
}

/// One snapshot of counters with different columns, keys of both kinds and stripes of
/// many rows and of few: the writer reuses its chunk buffers from stripe to stripe and
/// counter to counter, and no value of one leaks into another's rows.
#[test]
fn counters_of_different_columns_share_one_snapshot_without_mixing() {
    let dir = tempfile::tempdir().unwrap();
    let wide_key = |i: u64| format!("owner:{i:07}");
    let n = 70_000u64;
    let ids = ids();
    {
        let e = Engine::open(dir.path(), opts()).unwrap();
        e.create_counter("wide").unwrap();
        for col in ["a", "b", "c", "d", "e"] {
            e.add_column("wide", col, ColumnOptions::new(16, 64))
                .unwrap();
        }
        e.create_counter("narrow").unwrap();
        e.add_column("narrow", "n", ColumnOptions::new(8, 32))
            .unwrap();
        for i in 0..n {
            let k = wide_key(i);
            // Only some columns set: a stale value left in a reused buffer shows.
            e.set("wide", Key::Name(&k), "a", 1 + i % 11).unwrap();
            if i % 3 == 0 {
                e.set("wide", Key::Name(&k), "e", i).unwrap();
            }
            e.set("narrow", Key::Name(&k), "n", 1 + i % 5).unwrap();
        }
        for &id in &ids {
            e.set("narrow", Key::Id(id), "n", a_of(id)).unwrap();
        }
        let info = e.snapshot().unwrap();
        assert_eq!(info.rows, 2 * n + ids.len() as u64);
        e.close().unwrap();
    }
    let e = Engine::open(dir.path(), opts()).unwrap();
    let r = e.recovery();
    assert!(r.dropped.is_empty() && r.anomalies == 0, "{r:?}");
    for i in 0..n {
        let k = wide_key(i);
        let wide: Vec<u64> = ["a", "b", "c", "d", "e"]
            .iter()
            .map(|col| e.get("wide", Key::Name(&k), col).unwrap())
            .collect();
        let e_col = if i % 3 == 0 { i } else { 0 };
        assert_eq!(wide, [1 + i % 11, 0, 0, 0, e_col], "{k}");
        assert_eq!(
            e.get("narrow", Key::Name(&k), "n").unwrap(),
            1 + i % 5,
            "{k}"
        );
    }
    for &id in &ids {
        assert_eq!(e.get("narrow", Key::Id(id), "n").unwrap(), a_of(id), "{id}");
    }
    e.close().unwrap();
}

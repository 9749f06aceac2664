//! Criterion benchmarks: random increments on one core on a large table (one call per
//! increment, and batches of 1,000 through `Table::incr_many`), batch multi-get of 100
//! ids, and string-keyed rows of many columns written a row at a time (`incr_rows`)
//! against column by column (`incr_run`).
//!
//! `COUNTERS_BENCH_ROWS` sets the table size (default 10,000,000; the issue's target is
//! measured with 100,000,000 by `bench/counters-throughput.sh`).

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use shardkit_counters::{ColumnOptions, Engine, FsyncPolicy, Key, Options, Table};

fn splitmix(i: u64) -> u64 {
    let mut z = i
        .wrapping_add(0x9E37_79B9_7F4A_7C15)
        .wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn rows() -> u64 {
    std::env::var("COUNTERS_BENCH_ROWS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000_000)
}

fn incr(c: &mut Criterion) {
    let n = rows();
    let mut t = Table::new();
    t.add_column("c", ColumnOptions::new(16, 32)).unwrap();
    t.add_column("r", ColumnOptions::new(16, 32)).unwrap();
    for i in 0..n {
        t.incr(Key::Id(splitmix(i)), 0, 1).unwrap();
    }
    let mut g = c.benchmark_group("incr");
    g.throughput(Throughput::Elements(1));
    let mut i = 0u64;
    g.bench_function(format!("table_random_existing_{n}"), |b| {
        b.iter(|| {
            i = i.wrapping_add(1);
            let id = splitmix(splitmix(i) % n);
            t.incr(Key::Id(id), 1, 1).unwrap()
        })
    });
    // The batched path, the one the 10 M/s target is about: 1,000 random `+1`s per call,
    // counted per increment. The ids are made in the timed loop into one reused buffer,
    // as a caller's would be (and as `counters-mem speed` does): a few ns per op.
    const BATCH: usize = 1000;
    g.throughput(Throughput::Elements(BATCH as u64));
    let (mut ops, mut out) = (Vec::with_capacity(BATCH), Vec::with_capacity(BATCH));
    g.bench_function(
        format!("table_random_existing_{n}_incr_many_{BATCH}"),
        |b| {
            b.iter(|| {
                ops.clear();
                ops.extend((0..BATCH).map(|_| {
                    i = i.wrapping_add(1);
                    (splitmix(splitmix(i) % n), 1, 1)
                }));
                let refused = t.incr_many(&ops, &mut out);
                assert!(refused.is_empty());
            })
        },
    );
    drop(t);
    g.finish();
}

fn engine_ops(c: &mut Criterion) {
    let n = 1_000_000u64;
    let dir = tempfile::tempdir().unwrap();
    let o = Options {
        fsync: FsyncPolicy::No,
        snapshot_log_bytes: None,
        ..Options::default()
    };
    let e = Engine::open(dir.path(), o).unwrap();
    e.create_counter("w").unwrap();
    e.add_column("w", "c", ColumnOptions::new(16, 32)).unwrap();
    e.add_column("w", "r", ColumnOptions::new(16, 32)).unwrap();
    for i in 0..n {
        e.incr("w", Key::Id(splitmix(i)), "c", 1, None).unwrap();
    }
    let mut g = c.benchmark_group("engine");
    g.throughput(Throughput::Elements(1));
    let mut i = 0u64;
    g.bench_function("incr_logged_fsync_no_1M", |b| {
        b.iter(|| {
            i = i.wrapping_add(1);
            e.incr("w", Key::Id(splitmix(splitmix(i) % n)), "r", 1, None)
                .unwrap()
        })
    });
    g.throughput(Throughput::Elements(100));
    g.bench_function("mget_100_of_1M", |b| {
        b.iter_batched(
            || {
                i = i.wrapping_add(1);
                (0..100u64)
                    .map(|j| Key::Id(splitmix(splitmix(i * 100 + j) % n)))
                    .collect::<Vec<_>>()
            },
            |keys| e.mget("w", &keys, "c").unwrap(),
            BatchSize::SmallInput,
        )
    });
    g.bench_function("mget_rows_100_of_1M", |b| {
        b.iter_batched(
            || {
                i = i.wrapping_add(1);
                (0..100u64)
                    .map(|j| Key::Id(splitmix(splitmix(i * 100 + j) % n)))
                    .collect::<Vec<_>>()
            },
            |keys| e.mget_rows("w", &keys).unwrap(),
            BatchSize::SmallInput,
        )
    });
    g.finish();
}

/// The shape of a short link's click analytics (`link_day_stats`): string-keyed rows
/// `<link id>:<day>` of 87 16-bit columns, each flush adding to six of a row's columns
/// (people and one slot of each of five dimensions), 1,024 rows a call. `incr_rows`
/// (a row looked up and written once) against `incr_run` column by column (the
/// analytics' write before it), on rows made by the write (a link's first click of
/// the day) and on rows already there.
fn string_rows(c: &mut Criterion) {
    const COLUMNS: usize = 2 + 17 * 5;
    const RUN: usize = 1024;
    const POOL: u64 = 1_000_000;
    let dir = tempfile::tempdir().unwrap();
    let o = Options {
        fsync: FsyncPolicy::No,
        snapshot_log_bytes: None,
        ..Options::default()
    };
    let e = Engine::open(dir.path(), o).unwrap();
    e.create_counter("d").unwrap();
    let names: Vec<String> = (0..COLUMNS).map(|i| format!("c{i}")).collect();
    for n in &names {
        e.add_column("d", n, ColumnOptions::new(16, 64)).unwrap();
    }
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    // A row's six columns: people (0), then a slot (0..17) of each dimension.
    let columns_of = |i: u64| -> [usize; 6] {
        let slot = |d: u64| 2 + (d as usize) * 17 + (splitmix(i ^ d) % 17) as usize;
        [0, slot(0), slot(1), slot(2), slot(3), slot(4)]
    };
    let key = |i: u64| {
        format!(
            "{}:20418",
            7_300_000_000_000_000_000u64 + splitmix(i) % (1 << 40)
        )
    };
    let mut out = Vec::new();
    let by_rows = |keys: &[String], first: u64, out: &mut Vec<_>| {
        let items: Vec<Vec<(usize, i64)>> = (0..keys.len() as u64)
            .map(|r| columns_of(first + r).iter().map(|&c| (c, 1)).collect())
            .collect();
        let run: Vec<(Key<'_>, &[(usize, i64)])> = keys
            .iter()
            .zip(&items)
            .map(|(k, items)| (Key::Name(k), items.as_slice()))
            .collect();
        let pending = e.incr_rows("d", &names, &run, out).unwrap();
        e.commit(pending).unwrap();
    };
    let by_columns = |keys: &[String], first: u64, out: &mut Vec<_>| {
        let mut per_column: Vec<Vec<(Key<'_>, i64)>> = vec![Vec::new(); COLUMNS];
        for (r, k) in keys.iter().enumerate() {
            for c in columns_of(first + r as u64) {
                per_column[c].push((Key::Name(k), 1));
            }
        }
        let mut newest = shardkit_counters::Pending::NONE;
        for (c, items) in per_column.iter().enumerate().rev() {
            if !items.is_empty() {
                newest = newest.max(e.incr_run("d", names[c], items, out).unwrap());
            }
        }
        e.commit(newest).unwrap();
    };
    for start in (0..POOL).step_by(RUN) {
        let keys: Vec<String> = (start..start + RUN as u64).map(key).collect();
        by_rows(&keys, start, &mut out);
    }
    let mut g = c.benchmark_group("string_rows");
    g.throughput(Throughput::Elements(RUN as u64));
    let mut fresh = POOL;
    let mut next_fresh = |keys: &mut Vec<String>| {
        keys.clear();
        keys.extend((fresh..fresh + RUN as u64).map(key));
        fresh += RUN as u64;
        fresh - RUN as u64
    };
    let mut keys = Vec::new();
    g.bench_function("new_rows_incr_rows", |b| {
        b.iter(|| {
            let first = next_fresh(&mut keys);
            by_rows(&keys, first, &mut out)
        })
    });
    g.bench_function("new_rows_incr_run_per_column", |b| {
        b.iter(|| {
            let first = next_fresh(&mut keys);
            by_columns(&keys, first, &mut out)
        })
    });
    let mut at = 0u64;
    let mut next_old = |keys: &mut Vec<String>| {
        at = (at + 7919 * RUN as u64) % (POOL - RUN as u64);
        keys.clear();
        keys.extend((at..at + RUN as u64).map(key));
        at
    };
    g.bench_function("existing_rows_incr_rows", |b| {
        b.iter(|| {
            let first = next_old(&mut keys);
            by_rows(&keys, first, &mut out)
        })
    });
    g.bench_function("existing_rows_incr_run_per_column", |b| {
        b.iter(|| {
            let first = next_old(&mut keys);
            by_columns(&keys, first, &mut out)
        })
    });
    g.finish();
}

criterion_group!(benches, incr, engine_ops, string_rows);
criterion_main!(benches);

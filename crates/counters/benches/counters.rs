//! Criterion benchmarks: random increments on one core on a large table (one call per
//! increment, and batches of 1,000 through `Table::incr_many`), and batch multi-get of
//! 100 ids.
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

criterion_group!(benches, incr, engine_ops);
criterion_main!(benches);

//! UUIDv7 and ULID generation speed, side by side with the crates people would use
//! otherwise, in the same run: one thread, one shared generator each, ids per second.
//!
//! - `uuid7/*`: ours against `uuid::Uuid::now_v7()` (the `uuid` crate's process-wide
//!   monotonic context).
//! - `ulid/*`: ours against ferroid's `LockMonoUlidGenerator` (shared between threads
//!   like ours), ferroid's thread-local monotonic `Ulid::new_ulid_mono()`, and the
//!   `ulid` crate's `Generator` (monotonic, `&mut self`, so one per thread).
//!
//! Each iteration makes `BATCH` ids. Ours run twice: on the system clock (the
//! default: one clock read, a vDSO call, per id) and on a [`TickingClock`] (an atomic
//! load per id, as ferroid's clock is). Our UUIDv7 counter holds 4096 ids a
//! millisecond; past that the generator borrows milliseconds ahead of the clock up to
//! the 2 s lead and then waits, so its figure is at most 4,096,000/s, the format's
//! limit for one generator, once the warm-up has used the lead.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use ferroid::generator::thread_local::Ulid as FerroidThreadLocal;
use ferroid::generator::LockMonoUlidGenerator;
use ferroid::id::ULID as FerroidUlid;
use ferroid::rand::ThreadRandom;
use ferroid::time::MonotonicClock;
use shardkit_ids::{GeneratorOptions, TickingClock, UlidGenerator, Uuid7Generator};
use std::hint::black_box;

const BATCH: u64 = 10_000;

fn uuid7(c: &mut Criterion) {
    let mut group = c.benchmark_group("uuid7");
    group.throughput(Throughput::Elements(BATCH));
    let ours = Uuid7Generator::new().unwrap();
    group.bench_function(BenchmarkId::new("next", "shardkit"), |b| {
        b.iter(|| {
            for _ in 0..BATCH {
                black_box(ours.next_id().unwrap());
            }
        })
    });
    let ours_ticking =
        Uuid7Generator::with_clock(TickingClock::new().unwrap(), &GeneratorOptions::default())
            .unwrap();
    group.bench_function(BenchmarkId::new("next", "shardkit_ticking_clock"), |b| {
        b.iter(|| {
            for _ in 0..BATCH {
                black_box(ours_ticking.next_id().unwrap());
            }
        })
    });
    group.bench_function(BenchmarkId::new("next", "uuid_now_v7"), |b| {
        b.iter(|| {
            for _ in 0..BATCH {
                black_box(uuid::Uuid::now_v7());
            }
        })
    });
    group.finish();
}

fn ulid(c: &mut Criterion) {
    let mut group = c.benchmark_group("ulid");
    group.throughput(Throughput::Elements(BATCH));
    let ours = UlidGenerator::new().unwrap();
    group.bench_function(BenchmarkId::new("next", "shardkit"), |b| {
        b.iter(|| {
            for _ in 0..BATCH {
                black_box(ours.next_id().unwrap());
            }
        })
    });
    let ticking = TickingClock::new().unwrap();
    let ours_ticking =
        UlidGenerator::with_clock(ticking.clone(), &GeneratorOptions::default()).unwrap();
    group.bench_function(BenchmarkId::new("next", "shardkit_ticking_clock"), |b| {
        b.iter(|| {
            for _ in 0..BATCH {
                black_box(ours_ticking.next_id().unwrap());
            }
        })
    });
    let ferroid_lock: LockMonoUlidGenerator<FerroidUlid, _, _> =
        LockMonoUlidGenerator::new(MonotonicClock::default(), ThreadRandom);
    group.bench_function(BenchmarkId::new("next", "ferroid_lock_mono"), |b| {
        b.iter(|| {
            for _ in 0..BATCH {
                black_box(ferroid_lock.next_id(|_| std::thread::yield_now()));
            }
        })
    });
    group.bench_function(BenchmarkId::new("next", "ferroid_thread_local_mono"), |b| {
        b.iter(|| {
            for _ in 0..BATCH {
                black_box(FerroidThreadLocal::new_ulid_mono(|_| {
                    std::thread::yield_now()
                }));
            }
        })
    });
    let mut ulid_crate = ulid::Generator::new();
    group.bench_function(BenchmarkId::new("next", "ulid_generator"), |b| {
        b.iter(|| {
            for _ in 0..BATCH {
                black_box(ulid_crate.generate().unwrap());
            }
        })
    });
    group.finish();
}

criterion_group!(benches, uuid7, ulid);
criterion_main!(benches);

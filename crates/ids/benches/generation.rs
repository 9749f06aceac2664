//! Id generation speed, side by side with `ferroid` and `snowflaked` in the same run.
//!
//! - `per_shard_rate/*`: ids per second from one shard value, one thread, against the
//!   layout's limit (Instagram 1,024,000/s, Snowflake 4,096,000/s). Each iteration asks
//!   for 100 ms worth of ids at the limit, so a generator at 100% takes 100 ms an
//!   iteration and criterion's throughput divided by the limit is the share reached.
//!   shardkit runs twice: with its defaults (`default`: it may borrow up to 2 s ahead of
//!   the clock, used up during warm-up, so the measured rate is the sustained one) and
//!   with `max_lead = 0` (`no_lead`), held to the same per-millisecond rule as the
//!   references, where a millisecond the thread is descheduled is lost for good.
//! - `across_shards/*`: one thread, ids spread over Instagram's 8192 logical shards,
//!   where no per-shard limit binds: the raw cost of an id.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use ferroid::generator::AtomicSnowflakeGenerator;
use ferroid::id::{SnowflakeInstagramId, SnowflakeTwitterId};
use ferroid::time::{MonotonicClock, TWITTER_EPOCH};
use shardkit_ids::{GeneratorOptions, Layout, ShardGenerator, ShardedGenerator, SystemClock};
use std::hint::black_box;
use std::time::Duration;

fn no_lead() -> GeneratorOptions {
    GeneratorOptions {
        max_lead: Duration::ZERO,
        ..GeneratorOptions::default()
    }
}

fn per_shard_rate(c: &mut Criterion) {
    let mut group = c.benchmark_group("per_shard_rate");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4));

    let instagram_batch = Layout::instagram().ids_per_second_per_shard() / 10;
    group.throughput(Throughput::Elements(instagram_batch));
    for (name, options) in [
        ("shardkit_default", GeneratorOptions::default()),
        ("shardkit_no_lead", no_lead()),
    ] {
        let ours =
            ShardGenerator::with_clock(Layout::instagram(), 1, SystemClock, &options).unwrap();
        group.bench_function(BenchmarkId::new("instagram", name), |b| {
            b.iter(|| {
                for _ in 0..instagram_batch {
                    black_box(ours.next_id().unwrap());
                }
            })
        });
    }
    let theirs: AtomicSnowflakeGenerator<SnowflakeInstagramId, _> =
        AtomicSnowflakeGenerator::new(1, MonotonicClock::<1>::default());
    group.bench_function(BenchmarkId::new("instagram", "ferroid"), |b| {
        b.iter(|| {
            for _ in 0..instagram_batch {
                black_box(theirs.next_id(|_| std::thread::yield_now()));
            }
        })
    });

    let snowflake_batch = Layout::snowflake().ids_per_second_per_shard() / 10;
    group.throughput(Throughput::Elements(snowflake_batch));
    for (name, options) in [
        ("shardkit_default", GeneratorOptions::default()),
        ("shardkit_no_lead", no_lead()),
    ] {
        let ours =
            ShardGenerator::with_clock(Layout::snowflake(), 1, SystemClock, &options).unwrap();
        group.bench_function(BenchmarkId::new("snowflake", name), |b| {
            b.iter(|| {
                for _ in 0..snowflake_batch {
                    black_box(ours.next_id().unwrap());
                }
            })
        });
    }
    let theirs: AtomicSnowflakeGenerator<SnowflakeTwitterId, _> =
        AtomicSnowflakeGenerator::new(1, MonotonicClock::<1>::with_epoch(TWITTER_EPOCH));
    group.bench_function(BenchmarkId::new("snowflake", "ferroid"), |b| {
        b.iter(|| {
            for _ in 0..snowflake_batch {
                black_box(theirs.next_id(|_| std::thread::yield_now()));
            }
        })
    });
    let snowflaked_gen = snowflaked::sync::Generator::new(1);
    group.bench_function(BenchmarkId::new("snowflake", "snowflaked"), |b| {
        b.iter(|| {
            for _ in 0..snowflake_batch {
                black_box(snowflaked_gen.generate::<u64>());
            }
        })
    });
    group.finish();
}

fn across_shards(c: &mut Criterion) {
    let mut group = c.benchmark_group("across_shards");
    group
        .sample_size(30)
        .measurement_time(Duration::from_secs(3));
    let generator = ShardedGenerator::new(Layout::instagram()).unwrap();
    let keys: Vec<u64> = (0..8192u64).map(|k| k * 7919).collect();
    let mut out = vec![0u64; keys.len()];
    group.throughput(Throughput::Elements(keys.len() as u64));
    group.bench_function("fill_for_keys/8192", |b| {
        b.iter(|| generator.fill_for_keys(black_box(&keys), &mut out).unwrap())
    });
    group.bench_function("next_for_key/8192", |b| {
        b.iter(|| {
            for &key in &keys {
                black_box(generator.next_for_key(key).unwrap());
            }
        })
    });
    let mut run = vec![0u64; 1024];
    let mut shard = 0u64;
    group.throughput(Throughput::Elements(1024));
    group.bench_function("fill_one_shard_round_robin/1024", |b| {
        b.iter(|| {
            shard = (shard + 1) & 8191;
            generator.fill(shard, &mut run).unwrap();
        })
    });
    group.finish();
}

criterion_group!(benches, per_shard_rate, across_shards);
criterion_main!(benches);

//! Lookup time, side by side in one run: our ring (160 virtual nodes) against the
//! `hashring` crate with the same 160 virtual nodes per node, our jump hash (Lamping–Veach)
//! and JumpBack hashing against the `jumphash` crate, and logical shards, at 100 and 1000
//! nodes.
//!
//! Every function looks up consecutive integer keys, one per iteration, so criterion's
//! time per iteration is the time of one lookup. `bench/ring-stats.sh` turns the
//! results into ratios.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use hashring::HashRing;
use jumphash::JumpHasher;
use shardkit_ring::node::numbered_nodes;
use shardkit_ring::{JumpAlgorithm, JumpNodes, Ring, ShardMap, DEFAULT_SHARDS};
use std::hint::black_box;
use std::time::Duration;

const VNODES: u32 = 160;

fn lookups(c: &mut Criterion) {
    for n in [100u32, 1000] {
        let ring = Ring::new(numbered_nodes(n), VNODES).expect("valid ring");
        let mut theirs: HashRing<(u32, u32)> = HashRing::new();
        theirs.batch_add(
            (0..n)
                .flat_map(|i| (0..VNODES).map(move |v| (i, v)))
                .collect(),
        );
        let jump = JumpNodes::new(numbered_nodes(n)).expect("valid nodes");
        let jump_back = JumpNodes::with_algorithm(numbered_nodes(n), JumpAlgorithm::JumpBack)
            .expect("valid nodes");
        let jumphash = JumpHasher::new_with_keys(0, 0);
        let map = ShardMap::new(DEFAULT_SHARDS, numbered_nodes(n)).expect("valid map");
        let strings: Vec<String> = (0..4096).map(|i| format!("user:{i}")).collect();

        let mut group = c.benchmark_group(format!("lookup/{n}"));
        group
            .measurement_time(Duration::from_secs(2))
            .warm_up_time(Duration::from_secs(1));
        let mut k = 0u64;
        group.bench_function(BenchmarkId::from_parameter("ours_ring"), |b| {
            b.iter(|| {
                k = k.wrapping_add(1);
                ring.node_index_for_u64(black_box(k))
            })
        });
        group.bench_function(BenchmarkId::from_parameter("hashring"), |b| {
            b.iter(|| {
                k = k.wrapping_add(1);
                theirs.get(&black_box(k)).map(|node| node.0)
            })
        });
        group.bench_function(BenchmarkId::from_parameter("ours_jump"), |b| {
            b.iter(|| {
                k = k.wrapping_add(1);
                jump.node_index_for_u64(black_box(k))
            })
        });
        group.bench_function(BenchmarkId::from_parameter("ours_jump_back"), |b| {
            b.iter(|| {
                k = k.wrapping_add(1);
                jump_back.node_index_for_u64(black_box(k))
            })
        });
        group.bench_function(BenchmarkId::from_parameter("jumphash"), |b| {
            b.iter(|| {
                k = k.wrapping_add(1);
                jumphash.slot(&black_box(k), n)
            })
        });
        group.bench_function(BenchmarkId::from_parameter("ours_shards"), |b| {
            b.iter(|| {
                k = k.wrapping_add(1);
                map.node_index_for_u64(black_box(k))
            })
        });
        group.bench_function(BenchmarkId::from_parameter("ours_shards_str"), |b| {
            b.iter(|| {
                k = k.wrapping_add(1);
                map.node_for(black_box(strings[(k & 4095) as usize].as_bytes()))
                    .len()
            })
        });
        group.finish();
    }
}

criterion_group!(benches, lookups);
criterion_main!(benches);

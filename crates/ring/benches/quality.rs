//! Placement quality side by side in one run: peak-to-average load, fraction of keys
//! moved when a node is added and when the middle node is removed, and mean lookup time,
//! for our ring, jump (Lamping–Veach), JumpBack and logical shards against `hashring`
//! and `jumphash`, at 100 and 1000 nodes over the same keys (the integers 0..K, K = 1 000 000 unless
//! `RING_BENCH_KEYS` says otherwise). Prints a Markdown table with ours/theirs ratios.
//!
//! The figures for our schemes come from `shardkit_ring::stats`, the code behind
//! `shardkit ring stats`; the reference crates are driven the same way here.

use hashring::HashRing;
use jumphash::JumpHasher;
use shardkit_ring::stats::{self, Algorithm, Stats, StatsRequest};
use std::hint::black_box;
use std::time::{Duration, Instant};

const VNODES: u32 = 160;

/// Something that places integer keys on nodes `0..n` by number.
trait Placer {
    fn place(&self, key: u64) -> u32;
}

struct TheirRing(HashRing<(u32, u32)>);

impl TheirRing {
    fn new(nodes: impl Iterator<Item = u32>) -> Self {
        let mut ring = HashRing::new();
        ring.batch_add(
            nodes
                .flat_map(|i| (0..VNODES).map(move |v| (i, v)))
                .collect(),
        );
        Self(ring)
    }
}

impl Placer for TheirRing {
    fn place(&self, key: u64) -> u32 {
        self.0.get(&key).map_or(u32::MAX, |node| node.0)
    }
}

/// `jumphash` over buckets served by the named (numbered) nodes in `slots`.
struct TheirJump {
    hasher: JumpHasher,
    slots: Vec<u32>,
}

impl Placer for TheirJump {
    fn place(&self, key: u64) -> u32 {
        self.slots[self.hasher.slot(&key, self.slots.len() as u32) as usize]
    }
}

fn mean_ns(p: &impl Placer, keys: u64) -> f64 {
    let start = Instant::now();
    let (mut done, mut acc) = (0u64, 0u32);
    while start.elapsed() < Duration::from_millis(300) {
        for k in 0..keys {
            acc ^= p.place(black_box(k));
        }
        done += keys;
    }
    black_box(acc);
    start.elapsed().as_nanos() as f64 / done as f64
}

/// The same figures `stats::run` gives for our schemes, for a reference crate.
fn measure(
    n: u32,
    keys: u64,
    base: &impl Placer,
    grown: &impl Placer,
    shrunk: &impl Placer,
) -> Stats {
    let mut load = vec![0u64; n as usize];
    let owners: Vec<u32> = (0..keys)
        .map(|k| {
            let o = base.place(k);
            load[o as usize] += 1;
            o
        })
        .collect();
    let moved = |after: &dyn Fn(u64) -> u32| {
        owners
            .iter()
            .enumerate()
            .filter(|&(k, &o)| after(k as u64) != o)
            .count() as f64
            / keys as f64
    };
    Stats {
        peak_to_avg: *load.iter().max().unwrap_or(&0) as f64 / (keys as f64 / f64::from(n)),
        moved_on_add: moved(&|k| grown.place(k)),
        moved_on_remove: moved(&|k| shrunk.place(k)),
        optimal_move: 1.0 / f64::from(n + 1),
        lookup_ns: mean_ns(base, keys),
    }
}

fn row(name: &str, n: u32, s: &Stats) {
    println!(
        "| {name:<24} | {n:>5} | {:>9.1} | {:>11.4} | {:>12.5} | {:>15.5} | {:>12.5} |",
        s.lookup_ns, s.peak_to_avg, s.moved_on_add, s.moved_on_remove, s.optimal_move
    );
}

fn ratio(name: &str, n: u32, ours: &Stats, theirs: &Stats) {
    println!(
        "| {name:<24} | {n:>5} | {:>8.2}x | {:>10.3}x | {:>11.3}x | {:>14.3}x | {:>12} |",
        ours.lookup_ns / theirs.lookup_ns,
        ours.peak_to_avg / theirs.peak_to_avg,
        ours.moved_on_add / theirs.moved_on_add,
        ours.moved_on_remove / theirs.moved_on_remove,
        ""
    );
}

fn main() {
    // `cargo bench` passes harness flags such as `--bench`; a filter argument selects
    // nothing here, so only skip the run when cargo lists benches.
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let keys: u64 = std::env::var("RING_BENCH_KEYS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    println!("keys 0..{keys}, {VNODES} virtual nodes per ring node, 8192 logical shards");
    println!("| scheme                   | nodes | lookup ns | peak-to-avg | moved on add | moved on remove | optimal move |");
    println!("|--------------------------|------:|----------:|------------:|-------------:|----------------:|-------------:|");
    for n in [100u32, 1000] {
        let middle = n / 2;
        let ours = |algorithm| {
            let req = StatsRequest {
                vnodes: VNODES,
                ..StatsRequest::new(algorithm, n, keys)
            };
            stats::run(&req).expect("valid request")
        };
        let (ring, jump, jump_back, shards) = (
            ours(Algorithm::Ring),
            ours(Algorithm::Jump),
            ours(Algorithm::JumpBack),
            ours(Algorithm::Shards),
        );

        let base = TheirRing::new(0..n);
        let grown = TheirRing::new(0..=n);
        let shrunk = TheirRing::new((0..n).filter(|&i| i != middle));
        let their_ring = measure(n, keys, &base, &grown, &shrunk);

        let hasher = JumpHasher::new_with_keys(0, 0);
        let base = TheirJump {
            hasher,
            slots: (0..n).collect(),
        };
        let grown = TheirJump {
            hasher,
            slots: (0..=n).collect(),
        };
        // Same removal as ours: the last node takes over the removed node's bucket.
        let mut slots: Vec<u32> = (0..n).collect();
        slots.swap_remove(middle as usize);
        let shrunk = TheirJump { hasher, slots };
        let their_jump = measure(n, keys, &base, &grown, &shrunk);

        row("ours ring", n, &ring);
        row("hashring", n, &their_ring);
        row("ours jump", n, &jump);
        row("ours jump-back", n, &jump_back);
        row("jumphash", n, &their_jump);
        row("ours shards", n, &shards);
        ratio("ratio ring/hashring", n, &ring, &their_ring);
        ratio("ratio jump/jumphash", n, &jump, &their_jump);
        ratio("ratio jump-back/jumphash", n, &jump_back, &their_jump);
        ratio("ratio shards/jumphash", n, &shards, &their_jump);
    }
}

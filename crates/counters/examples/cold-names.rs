//! String-keyed rows in the cold tier, in process: what RAM keeps and the disk
//! holds once they go cold, and what reading and writing them back costs.
//!
//! `cargo run --release -p shardkit-counters --example cold-names -- DIR [ROWS]`
//! (default 10,000,000; `bench/cold-names.sh` runs it). Rows: ROWS rows of two 16-bit
//! columns (values 1-1000 and 1-100) under 18-byte keys (`/p/` + 15 hex digits of a
//! scrambled row number: the keys of `bench/counters-string-keys.sh`), written in
//! random order, one `incr_batch` per column per 65,536 rows (log on, fsync `no`).
//! Prints, each as a figure per row or a p50/p99 in µs:
//! - the engine's RAM count and the process's resident set, hot, then after
//!   `Engine::evict(ZERO)` moved every row to disk (and the time that took, and the
//!   latencies of one writer's increments to 4,096 other rows meanwhile: how long a
//!   write waits for a stripe the eviction holds);
//! - bytes on disk per row (blocks and their index);
//! - 100,000 random reads of rows while hot (the reference), cold with an empty block
//!   cache (each block read once from its file, through the page cache: DROP_CACHES=1 as
//!   root empties it first), the same again with the block cache warm, and of absent keys;
//! - 20,000 increments of random cold rows (each brings its row back), and the next
//!   eviction pass that sends them back (bytes it writes, runs merged);
//! - 40 more passes, each after writing 1% new rows and increments to 1% of the rows
//!   at random (brought back from the cold tier): runs per stripe, bytes on disk per
//!   live row, and the write amplification (bytes written to cold files, merges
//!   included, over the bytes of the rows the passes sent cold).
//!
//! With `SNAPSHOT_ONLY=1` it stops after the fill, snapshots every row while hot and
//! reopens: the snapshot's bytes per row and time, and the open's time.

use std::time::{Duration, Instant};

use shardkit_counters::{ColumnOptions, Engine, FsyncPolicy, Key, Options};

mod common;
use common::{drop_page_cache, percentiles, snapshot_then_open, status_bytes};

fn key(i: u64) -> String {
    format!("/p/{:015x}", i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 4)
}

fn timed_reads(e: &Engine, keys: &[String]) -> (f64, f64) {
    let mut t = Vec::with_capacity(keys.len());
    for k in keys {
        let s = Instant::now();
        std::hint::black_box(e.get("pv", Key::Name(k), "c").unwrap());
        t.push(s.elapsed());
    }
    percentiles(t)
}

/// The run's counter's figures.
fn pv_stats(e: &Engine) -> shardkit_counters::CounterStats {
    e.stats()
        .counters
        .into_iter()
        .find(|c| c.name == "pv")
        .unwrap()
}

fn engine_bytes(e: &Engine) -> (u64, u64, u64, u64) {
    let s = pv_stats(e);
    (s.bytes, s.bytes_disk, s.hot_rows, s.cold_rows)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let dir = args.get(1).expect("usage: cold-names DIR [ROWS]");
    let rows: u64 = args.get(2).map_or(10_000_000, |r| r.parse().expect("ROWS"));
    let opts = Options {
        fsync: FsyncPolicy::No,
        snapshot_log_bytes: None,
        ..Options::default()
    };
    let e = Engine::open(dir, opts.clone()).unwrap();
    e.create_counter("pv").unwrap();
    e.add_column("pv", "c", ColumnOptions::new(16, 32)).unwrap();
    e.add_column("pv", "r", ColumnOptions::new(16, 32)).unwrap();
    let rss0 = status_bytes("VmRSS:");
    let t = Instant::now();
    let mut order: Vec<u64> = (0..rows).collect();
    // A fixed shuffle (the keys are scrambled already; this spreads the writes).
    let mut x = 0x5EEDu64;
    for i in (1..order.len()).rev() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        order.swap(i, (x % (i as u64 + 1)) as usize);
    }
    for chunk in order.chunks(65_536) {
        let keys: Vec<String> = chunk.iter().map(|&i| key(i)).collect();
        for (col, modulo) in [("c", 1000), ("r", 100)] {
            let items: Vec<(Key, i64)> = keys
                .iter()
                .zip(chunk)
                .map(|(k, &i)| (Key::Name(k), (i % modulo + 1) as i64))
                .collect();
            assert_eq!(e.incr_batch("pv", col, &items).unwrap(), 0);
        }
    }
    drop(order);
    let (hot_bytes, _, hot_rows, _) = engine_bytes(&e);
    let rss_hot = status_bytes("VmRSS:");
    println!(
        "filled {rows} rows in {:.1} s: engine {:.1} bytes/row in RAM, process +{:.1} bytes/row ({hot_rows} hot)",
        t.elapsed().as_secs_f64(),
        hot_bytes as f64 / rows as f64,
        (rss_hot - rss0) as f64 / rows as f64
    );
    if std::env::var("SNAPSHOT_ONLY").as_deref() == Ok("1") {
        // Only a snapshot of every row while hot, and an open that loads it.
        snapshot_then_open(e, dir, opts);
        return;
    }
    let mut x = 0xC0FFEEu64;
    let mut pick = |n: usize, present: bool| -> Vec<String> {
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                if present {
                    key(x % rows)
                } else {
                    key(rows + x % rows)
                }
            })
            .collect()
    };
    let sample = pick(100_000, true);
    let absent = pick(100_000, false);
    let (p50, p99) = timed_reads(&e, &sample);
    println!("hot reads: p50 {p50:.2} µs, p99 {p99:.2} µs");
    let t = Instant::now();
    // A writer increments rows of its own (one at a time, bounded in count) while the
    // eviction runs: how long a write waits for a stripe the eviction holds.
    let done = std::sync::atomic::AtomicBool::new(false);
    let (out, stalls) = std::thread::scope(|scope| {
        let writer = scope.spawn(|| {
            let mut t = Vec::new();
            while !done.load(std::sync::atomic::Ordering::Relaxed) && t.len() < 50_000_000 {
                let k = format!("w:{}", t.len() % 4096);
                let s = Instant::now();
                e.incr("pv", Key::Name(&k), "c", 1, None).unwrap();
                t.push(s.elapsed());
            }
            t
        });
        // And a reader of hot rows: it takes no log, so its waits are the stripe locks'.
        let reader = scope.spawn(|| {
            let mut t = Vec::new();
            while !done.load(std::sync::atomic::Ordering::Relaxed) && t.len() < 50_000_000 {
                let k = format!("w:{}", t.len() % 4096);
                let s = Instant::now();
                e.get("pv", Key::Name(&k), "c").unwrap();
                t.push(s.elapsed());
            }
            t
        });
        let out = e.evict(Duration::ZERO).unwrap();
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        let reads = reader.join().unwrap();
        let longest = reads.iter().max().copied().unwrap_or_default();
        let n = reads.len();
        let (p50, p99) = percentiles(reads);
        println!(
            "reads meanwhile: {n}, p50 {p50:.2} µs, p99 {p99:.2} µs, longest {:.1} ms",
            longest.as_secs_f64() * 1e3
        );
        (out, writer.join().unwrap())
    });
    let took = t.elapsed().as_secs_f64();
    let (cold_bytes, disk, hot_rows, cold_rows) = engine_bytes(&e);
    println!(
        "evicted {} rows in {took:.1} s ({:.0} k rows/s): {hot_rows} hot, {cold_rows} cold",
        out.name_rows,
        out.name_rows as f64 / took / 1e3
    );
    let writes = stalls.len();
    let longest = stalls.iter().max().copied().unwrap_or_default();
    let (p50, p99) = percentiles(stalls);
    println!(
        "writes meanwhile: {writes}, p50 {p50:.2} µs, p99 {p99:.2} µs, longest {:.1} ms",
        longest.as_secs_f64() * 1e3
    );
    println!(
        "cold: engine {:.2} bytes/row in RAM ({:.3}x hot), process {:.1} bytes/row above the empty engine, {:.2} bytes/row on disk",
        cold_bytes as f64 / rows as f64,
        cold_bytes as f64 / hot_bytes as f64,
        status_bytes("VmRSS:").saturating_sub(rss0) as f64 / rows as f64,
        disk as f64 / rows as f64
    );
    drop_page_cache();
    let (p50, p99) = timed_reads(&e, &sample);
    println!("cold reads, block cache cold: p50 {p50:.2} µs, p99 {p99:.2} µs");
    let (p50, p99) = timed_reads(&e, &sample);
    println!("cold reads, block cache warm: p50 {p50:.2} µs, p99 {p99:.2} µs");
    let (p50, p99) = timed_reads(&e, &absent);
    println!("absent keys: p50 {p50:.2} µs, p99 {p99:.2} µs");
    let writes = pick(20_000, true);
    let t = Instant::now();
    for k in &writes {
        e.incr("pv", Key::Name(k), "c", 1, None).unwrap();
    }
    let took = t.elapsed().as_secs_f64();
    println!(
        "increments of random cold rows: {:.0} k/s ({} rows back in RAM)",
        writes.len() as f64 / took / 1e3,
        engine_bytes(&e).2
    );
    let t = Instant::now();
    let out = e.evict(Duration::ZERO).unwrap();
    let (_, disk_after, _, _) = engine_bytes(&e);
    println!(
        "evicted again: {} rows in {:.2} s, {} runs merged, disk {:.2} -> {:.2} bytes/row",
        out.name_rows,
        t.elapsed().as_secs_f64(),
        out.runs_merged,
        disk as f64 / rows as f64,
        disk_after as f64 / rows as f64
    );
    passes(&e, dir, rows, &mut pick);
}

/// Bytes of every cold file in `dir` now.
fn cold_file_bytes(dir: &str) -> u64 {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .filter(|e| e.file_name().to_string_lossy().starts_with("cold-"))
                .filter_map(|e| e.metadata().ok())
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(0)
}

/// The 40 passes of new rows and written-back rows (see the module doc).
fn passes(e: &Engine, dir: &str, rows: u64, pick: &mut impl FnMut(usize, bool) -> Vec<String>) {
    let step = (rows / 100) as usize;
    let mut next = rows * 2;
    let (mut written, mut evicted_rows, mut merged) = (0u64, 0u64, 0u64);
    let t = Instant::now();
    for pass in 1..=40 {
        let news: Vec<String> = (0..step as u64).map(|i| key(next + i)).collect();
        next += step as u64;
        let olds = pick(step, true);
        for (keys, by) in [(&news, 1), (&olds, 2)] {
            let items: Vec<(Key, i64)> = keys.iter().map(|k| (Key::Name(k), by)).collect();
            e.incr_batch("pv", "c", &items).unwrap();
        }
        let before = cold_file_bytes(dir);
        let out = e.evict(Duration::ZERO).unwrap();
        // New files only: a pass deletes none (garbage goes at the next snapshot).
        written += cold_file_bytes(dir) - before;
        evicted_rows += out.name_rows;
        merged += out.runs_merged;
        if pass % 10 == 0 {
            let s = pv_stats(e);
            let row_bytes = s.bytes_disk as f64 / s.cold_rows as f64;
            println!(
                "pass {pass}: {} cold rows, {} runs ({:.1} a stripe), {:.2} bytes/row on disk, \
                 {merged} runs merged so far; written {:.1} MB for {evicted_rows} rows sent \
                 cold: {:.1}x their {:.2} bytes/row ({:.1} s)",
                s.cold_rows,
                s.name_runs,
                s.name_runs as f64 / shardkit_counters::STRIPES as f64,
                row_bytes,
                written as f64 / 1e6,
                written as f64 / (evicted_rows as f64 * row_bytes),
                row_bytes,
                t.elapsed().as_secs_f64()
            );
        }
        e.snapshot().unwrap();
    }
}

//! The cold tier end to end, in process, up to a billion rows.
//!
//! `cargo run --release -p shardkit-counters --example cold-tier -- fill DIR ROWS
//! [MAX_MEMORY_MIB]`, then `... -- measure DIR ROWS [MAX_MEMORY_MIB]` in a new process (so
//! its resident set is what opening the directory costs, not what the fill left behind);
//! `... -- rows ROWS` writes the same rows to stdout for the RocksDB peer
//! (`bench/rocksdb-peer`). `bench/cold-tier.sh` and `bench/cold-tier-vs-rocksdb.sh` run
//! them.
//!
//! Rows: Instagram-layout ids (41-bit ms, 13-bit random shard, 10-bit sequence) made at
//! 2,000 ids per second of simulated time, two 16-bit columns of Pareto-skewed values, as in
//! `examples/cold-blocks.rs`, generated as they are written (a billion ids would be 8 GB as
//! a list; a run keeps about a million of the oldest to read back, and the newest 1%).
//! `fill` without a cap writes the oldest 99% (one `incr_batch` per column per 65,536
//! rows, fsync `no`), reads 100,000 random rows while everything is in RAM (the
//! reference), moves every partition to the cold tier (`Engine::evict`), writes the newest
//! 1%, and snapshots (which names the cold batches and lets the log go). With
//! `MAX_MEMORY_MIB` it opens the engine with that `max_memory` and writes every row while
//! the engine's own eviction thread keeps it under the cap (the set-up), printing
//! its progress. `measure` opens the directory and prints: resident memory, the engine's
//! own RAM count, bytes on disk per cold row, increments to the newest 1% per second,
//! random reads of cold rows with a cold block cache (every block read once) and a warm
//! one, `mget` of 100 cold ids, and 2,000 increments of random cold rows with the bytes
//! their re-eviction writes.

use std::time::{Duration, Instant};

use shardkit_counters::{ColumnOptions, Engine, FsyncPolicy, Key, Options};

mod common;
use common::{dir_bytes, drop_page_cache, percentiles, snapshot_then_open, status_bytes};

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn unit(&mut self) -> f64 {
        ((self.next() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }
    fn skewed(&mut self, alpha: f64) -> i64 {
        (self.unit().powf(-1.0 / alpha) as i64).min(65_534)
    }
}

/// Instagram-layout ids at 2,000 per simulated second, in the order they were made, one
/// at a time (a billion of them would be 8 GB as a list).
struct Ids {
    rng: Rng,
    i: u64,
    ms: u64,
    seq: std::collections::HashMap<u64, u64>,
}

impl Ids {
    fn new() -> Ids {
        Ids {
            rng: Rng(0x5EED),
            i: 0,
            ms: u64::MAX,
            seq: std::collections::HashMap::new(),
        }
    }
}

impl Iterator for Ids {
    type Item = u64;
    fn next(&mut self) -> Option<u64> {
        let ms = 6 * 365 * 86_400_000u64 + self.i / 2;
        self.i += 1;
        if ms != self.ms {
            self.seq.clear();
            self.ms = ms;
        }
        let shard = self.rng.next() % 8192;
        let s = self.seq.entry(shard).or_insert(0u64);
        let id = (ms << 23) | (shard << 10) | *s;
        *s += 1;
        Some(id)
    }
}

/// The rows of a run, 65,536 at a time: ids in order and both columns' values, from the
/// same seeds every time (so `rows` hands the RocksDB peer exactly what `fill` wrote).
/// `f` gets the index of the chunk's first row.
fn for_each_chunk(rows: usize, mut f: impl FnMut(usize, &[u64], &[i64], &[i64])) {
    let mut ids = Ids::new();
    let mut values = Rng(42);
    let mut at = 0;
    while at < rows {
        let n = (rows - at).min(65_536);
        let chunk: Vec<u64> = ids.by_ref().take(n).collect();
        let a: Vec<i64> = (0..n).map(|_| values.skewed(1.0)).collect();
        let b: Vec<i64> = (0..n).map(|_| values.skewed(1.5)).collect();
        f(at, &chunk, &a, &b);
        at += n;
    }
}

/// What a run keeps of its ids: about a million of the oldest 99% (every k-th, for
/// random reads of cold rows) and the newest 1% whole.
struct Kept {
    cold: Vec<u64>,
    newest: Vec<u64>,
}

fn kept(rows: usize) -> Kept {
    let hot_from = rows - rows / 100;
    let every = (hot_from / 1_000_000).max(1);
    let mut k = Kept {
        cold: Vec::new(),
        newest: Vec::new(),
    };
    for (i, id) in Ids::new().take(rows).enumerate() {
        if i >= hot_from {
            k.newest.push(id);
        } else if i % every == 0 {
            k.cold.push(id);
        }
    }
    k
}

/// `KEEP_SNAPSHOTS` (the engine's `keep_snapshots`, the server's `[counters]
/// snapshots_kept`; default 2) decides how much of the directory the older snapshot and
/// its log take.
fn opts() -> Options {
    Options {
        fsync: FsyncPolicy::No,
        snapshot_log_bytes: None,
        keep_snapshots: std::env::var("KEEP_SNAPSHOTS")
            .ok()
            .and_then(|k| k.parse().ok())
            .unwrap_or(2),
        ..Options::default()
    }
}

fn rss_bytes() -> u64 {
    status_bytes("VmRSS:")
}

/// The process's peak resident set.
fn peak_rss_bytes() -> u64 {
    status_bytes("VmHWM:")
}

/// A new engine in `dir` with the run's counter `c`: two 16-bit columns `a` and `b`.
fn new_run(dir: &str, o: Options) -> Engine {
    let e = Engine::open(dir, o).unwrap();
    e.create_counter("c").unwrap();
    e.add_column("c", "a", ColumnOptions::new(16, 64)).unwrap();
    e.add_column("c", "b", ColumnOptions::new(16, 64)).unwrap();
    e
}

/// Writes rows `from..to` of the run, one `incr_batch` per column per chunk.
fn fill(e: &Engine, rows: usize, from: usize, to: usize) {
    for_each_chunk(rows, |at, ids, a, b| {
        if at + ids.len() <= from || at >= to {
            return;
        }
        let (lo, hi) = (from.saturating_sub(at), (to - at).min(ids.len()));
        for (col, values) in [("a", a), ("b", b)] {
            let items: Vec<(Key, i64)> = ids[lo..hi]
                .iter()
                .zip(&values[lo..hi])
                .map(|(&id, &v)| (Key::Id(id), v))
                .collect();
            e.incr_batch("c", col, &items).unwrap();
        }
    });
}

fn timed_reads(e: &Engine, ids: &[u64]) -> (f64, f64) {
    let mut t = Vec::with_capacity(ids.len());
    for &id in ids {
        let s = Instant::now();
        std::hint::black_box(e.get("c", Key::Id(id), "a").unwrap());
        t.push(s.elapsed());
    }
    percentiles(t)
}

/// Increments of 1 to random rows of `newest`, in `incr_run`s of 1,024 each committed
/// (fsync `no`), bounded to 20 M and 10 s: (M/s, done, seconds). The random picks are
/// drawn before the clock starts (4 M of them, taken in turn), so the figure is the
/// engine's time, not the drawing's (a tenth of it at 10 M rows).
fn increments(e: &Engine, newest: &[u64], rng: &mut Rng) -> (f64, u64, f64) {
    let picks: Vec<(Key, i64)> = (0..1 << 22)
        .map(|_| {
            (
                Key::Id(newest[(rng.next() % newest.len() as u64) as usize]),
                1,
            )
        })
        .collect();
    let deadline = Instant::now() + Duration::from_secs(10);
    let t = Instant::now();
    let mut done = 0u64;
    let mut out = Vec::new();
    while done < 20_000_000 && Instant::now() < deadline {
        let at = (done as usize) % picks.len();
        let items = &picks[at..at + 1024];
        let p = e.incr_run("c", "a", items, &mut out).unwrap();
        e.commit(p).unwrap();
        done += items.len() as u64;
    }
    let secs = t.elapsed().as_secs_f64();
    (done as f64 / secs / 1e6, done, secs)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (mode, dir, rows) = match args.as_slice() {
        [_, mode, dir, rows, ..] => (mode.as_str(), dir.as_str(), rows.parse::<usize>().unwrap()),
        [_, mode, rows] if mode == "rows" => ("rows", "", rows.parse::<usize>().unwrap()),
        _ => panic!("usage: cold-tier fill|measure|hot DIR ROWS [MAX_MEMORY_MIB] | rows ROWS"),
    };
    // With a memory cap, the engine's own eviction thread keeps the rows within it as they
    // are written (the set-up); without one, everything is filled in RAM first (a
    // reference to compare with) and evicted in one call.
    let max_memory: Option<u64> = args.get(4).map(|m| m.parse::<u64>().unwrap() << 20);
    let opts = || Options {
        max_memory,
        // A billion rows of log would be ~40 GB: with a cap, snapshots let it go.
        snapshot_log_bytes: max_memory.map(|_| 1 << 30),
        ..opts()
    };
    let hot_from = rows - rows / 100;
    match mode {
        "rows" => {
            // The run's rows as 12-byte records (id big-endian, then both columns as u16
            // big-endian), for `bench/rocksdb-peer`.
            use std::io::Write;
            let mut out = std::io::BufWriter::with_capacity(1 << 20, std::io::stdout().lock());
            for_each_chunk(rows, |_, ids, a, b| {
                for i in 0..ids.len() {
                    out.write_all(&ids[i].to_be_bytes()).unwrap();
                    out.write_all(&(a[i] as u16).to_be_bytes()).unwrap();
                    out.write_all(&(b[i] as u16).to_be_bytes()).unwrap();
                }
            });
            out.flush().unwrap();
        }
        "fill" if max_memory.is_some() => {
            let e = new_run(dir, opts());
            let t = Instant::now();
            let step = (rows / 10).max(1);
            let mut at = 0;
            while at < rows {
                let to = (at + step).min(rows);
                fill(&e, rows, at, to);
                at = to;
                let s = &e.stats().counters[0];
                println!(
                    "{:.0} s: {} rows ({} hot, {} cold), engine {:.0} MiB, RSS {:.0} MiB (peak {:.0})",
                    t.elapsed().as_secs_f64(),
                    s.rows,
                    s.hot_rows,
                    s.cold_rows,
                    s.bytes as f64 / 1048576.0,
                    rss_bytes() as f64 / 1048576.0,
                    peak_rss_bytes() as f64 / 1048576.0
                );
            }
            println!(
                "filled {rows} rows under max_memory {} MiB in {:.0} s ({:.0} rows/s)",
                max_memory.unwrap() >> 20,
                t.elapsed().as_secs_f64(),
                rows as f64 / t.elapsed().as_secs_f64()
            );
            e.snapshot().unwrap();
            e.close().unwrap();
        }
        "fill" => {
            let e = new_run(dir, opts());
            let k = kept(rows);
            let mut rng = Rng(7);
            let rss0 = rss_bytes();
            let t = Instant::now();
            fill(&e, rows, 0, hot_from);
            let fill_s = t.elapsed().as_secs_f64();
            let s = &e.stats().counters[0];
            println!(
                "all in RAM: {} rows, engine {:.2} B/row, RSS growth {:.2} B/row, fill {:.0} rows/s",
                s.rows,
                s.bytes as f64 / s.rows as f64,
                (rss_bytes() - rss0) as f64 / s.rows as f64,
                s.rows as f64 / fill_s
            );
            let sample: Vec<u64> = (0..100_000)
                .map(|_| k.cold[(rng.next() % k.cold.len() as u64) as usize])
                .collect();
            let (p50, p99) = timed_reads(&e, &sample);
            println!("reference, reads of the same rows in RAM: p50 {p50:.2} us, p99 {p99:.2} us");
            // The reference for the increments: the newest 1% of the rows so far, while
            // every row is in RAM.
            let newest_so_far: Vec<u64> = Ids::new()
                .take(hot_from)
                .skip(hot_from - rows / 100)
                .collect();
            let (rate, done, secs) = increments(&e, &newest_so_far, &mut rng);
            println!(
                "reference, increments to the newest 1% with every row in RAM: {rate:.2} M/s ({done} in {secs:.1} s)"
            );
            let t = Instant::now();
            let ev = e.evict(Duration::ZERO).unwrap();
            println!(
                "evicted {} partitions, {} rows, {:.2} B/row on disk, in {:.1} s",
                ev.partitions,
                ev.rows,
                ev.bytes_disk as f64 / ev.rows as f64,
                t.elapsed().as_secs_f64()
            );
            fill(&e, rows, hot_from, rows);
            e.snapshot().unwrap();
            e.close().unwrap();
        }
        "hot" => {
            // Only the increments, over every row of a run held in RAM: what "increments
            // to the newest 1%" of a run a hundred times larger meets, without its fill.
            let e = new_run(dir, opts());
            fill(&e, rows, 0, rows);
            let all: Vec<u64> = Ids::new().take(rows).collect();
            println!("filled {rows} rows; increments start");
            let mut rng = Rng(7);
            let (rate, done, secs) = increments(&e, &all, &mut rng);
            println!(
                "increments to {rows} hot rows: {rate:.2} M/s ({done} in {secs:.1} s, incr_run of 1,024)"
            );
            // A snapshot of every row (all hot), then an open that loads it.
            snapshot_then_open(e, dir, opts());
        }
        "measure" => {
            let k = kept(rows);
            let mut rng = Rng(7);
            let rss0 = rss_bytes();
            let t = Instant::now();
            let e = Engine::open(dir, opts()).unwrap();
            let open_s = t.elapsed().as_secs_f64();
            let s = e.stats().counters[0].clone();
            let rss = rss_bytes();
            println!(
                "opened in {open_s:.1} s: {} rows ({} hot, {} cold); RSS {:.1} MiB, peak {:.1} MiB ({:.2} B/row of growth), \
                 engine count {:.1} MiB ({:.2} B/row), cold blocks {:.2} B per cold row",
                s.rows,
                s.hot_rows,
                s.cold_rows,
                rss as f64 / 1048576.0,
                peak_rss_bytes() as f64 / 1048576.0,
                (rss - rss0) as f64 / s.rows as f64,
                s.bytes as f64 / 1048576.0,
                s.bytes as f64 / s.rows as f64,
                s.bytes_disk as f64 / s.cold_rows.max(1) as f64
            );
            let (rate, done, secs) = increments(&e, &k.newest, &mut rng);
            let after = e.stats().counters[0].clone();
            println!(
                "increments to the newest 1%: {rate:.2} M/s ({done} in {secs:.1} s, incr_run of 1,024); \
                 meanwhile the engine's own passes moved {} rows to the cold tier ({} -> {} hot partitions, engine count {:.1} -> {:.1} MiB)",
                s.hot_rows.saturating_sub(after.hot_rows),
                s.dense_partitions,
                after.dense_partitions,
                s.bytes as f64 / 1048576.0,
                after.bytes as f64 / 1048576.0
            );
            println!(
                "RSS after the increments {:.1} MiB, peak {:.1} MiB",
                rss_bytes() as f64 / 1048576.0,
                peak_rss_bytes() as f64 / 1048576.0
            );
            // So that the opens below do not replay the increments from the log.
            e.snapshot().unwrap();
            e.close().unwrap();
            let parts: Vec<String> = dir_bytes(dir)
                .iter()
                .map(|(what, b)| format!("{what} {:.3}", *b as f64 / rows as f64))
                .collect();
            println!(
                "on disk after a snapshot, keep_snapshots {}, bytes per row: {}",
                opts().keep_snapshots,
                parts.join(", ")
            );
            // Cold reads with no block cache (a budget of one byte holds no block): every
            // get reads and decodes its block from the file (which the OS page cache
            // may hold: it was just written, unless DROP_CACHES=1 empties it first).
            drop_page_cache();
            let e = Engine::open(
                dir,
                Options {
                    block_cache_bytes: 1,
                    ..opts()
                },
            )
            .unwrap();
            let cold: Vec<u64> = (0..20_000)
                .map(|_| k.cold[(rng.next() % k.cold.len() as u64) as usize])
                .collect();
            let (p50, p99) = timed_reads(&e, &cold);
            let reads = e.stats().counters[0].cold_reads;
            println!("cold rows, cold block cache: p50 {p50:.1} us, p99 {p99:.1} us ({reads} block reads for 20,000 gets)");
            let mut t = Vec::new();
            for _ in 0..200 {
                let keys: Vec<Key> = (0..100)
                    .map(|_| Key::Id(k.cold[(rng.next() % k.cold.len() as u64) as usize]))
                    .collect();
                let s = Instant::now();
                std::hint::black_box(e.mget("c", &keys, "a").unwrap());
                t.push(s.elapsed());
            }
            let (p50, p99) = percentiles(t);
            println!(
                "mget of 100 random cold ids, cold block cache: p50 {p50:.0} us, p99 {p99:.0} us"
            );
            e.close().unwrap();
            // Warm: the default cache, 1,000 rows read once, then over and over.
            let e = Engine::open(dir, opts()).unwrap();
            let warm: Vec<u64> = cold[..1000].iter().cycle().take(20_000).copied().collect();
            timed_reads(&e, &warm[..1000]);
            let before = e.stats().counters[0].cold_reads;
            let (p50, p99) = timed_reads(&e, &warm);
            let reads = e.stats().counters[0].cold_reads - before;
            println!("cold rows, warm block cache (1,000 rows read over and over): p50 {p50:.1} us, p99 {p99:.1} us ({reads} block reads)");
            // Writes to cold rows: each brings its partition back; the next eviction
            // writes the partition again (the write amplification of that choice).
            e.evict(Duration::ZERO).unwrap();
            let mut t = Vec::new();
            for _ in 0..2_000 {
                let id = k.cold[(rng.next() % k.cold.len() as u64) as usize];
                let s = Instant::now();
                e.incr("c", Key::Id(id), "a", 1, None).unwrap();
                t.push(s.elapsed());
            }
            let (p50, p99) = percentiles(t);
            let again = e.evict(Duration::ZERO).unwrap();
            println!(
                "2,000 increments of random cold rows: p50 {p50:.0} us, p99 {p99:.0} us; the next eviction wrote {} partitions ({} rows) again: {:.0} bytes of blocks per write",
                again.partitions,
                again.rows,
                again.bytes_disk as f64 / 2000.0
            );
            println!(
                "RSS at the end {:.1} MiB, peak {:.1} MiB",
                rss_bytes() as f64 / 1048576.0,
                peak_rss_bytes() as f64 / 1048576.0
            );
        }
        other => panic!("unknown mode {other}"),
    }
}

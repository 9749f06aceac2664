//! The cold tier (issue 19) end to end, in process: toward the 1-billion-row
//! benchmark, at the row count given.
//!
//! `cargo run --release -p shardkit-counters --example cold-tier -- fill DIR ROWS`, then
//! `... -- measure DIR ROWS` in a new process (so its resident set is what opening the
//! directory costs, not what the fill left behind). `bench/cold-tier.sh` runs both.
//!
//! Rows: Instagram-layout ids (41-bit ms, 13-bit random shard, 10-bit sequence) made at
//! 2,000 ids per second of simulated time, two 16-bit columns of Pareto-skewed values, as in
//! `examples/cold-blocks.rs`. `fill` writes the oldest 99% (one `incr_batch` per column
//! per 65,536 rows, fsync `no`), reads 100,000 random rows while everything is in RAM (the
//! reference), moves every partition to the cold tier (`Engine::evict`), writes the newest
//! 1%, and snapshots (which names the cold batches and lets the log go). `measure` opens
//! the directory and prints: resident memory, the engine's own RAM count, bytes on disk
//! per cold row, increments to the newest 1% per second, random reads of cold rows with a
//! cold block cache (every block read once) and a warm one, `mget` of 100 cold ids, and
//! 2,000 increments of random cold rows with the bytes their re-eviction writes.

use std::time::{Duration, Instant};

use shardkit_counters::{ColumnOptions, Engine, FsyncPolicy, Key, Options};

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

/// Instagram-layout ids at 2,000 per simulated second, in the order they were made.
fn ids(n: usize) -> Vec<u64> {
    let mut rng = Rng(0x5EED);
    let mut seq = std::collections::HashMap::new();
    let mut last_ms = u64::MAX;
    let mut out = Vec::with_capacity(n);
    for i in 0..n as u64 {
        let ms = 6 * 365 * 86_400_000u64 + i / 2;
        if ms != last_ms {
            seq.clear();
            last_ms = ms;
        }
        let shard = rng.next() % 8192;
        let s = seq.entry(shard).or_insert(0u64);
        out.push((ms << 23) | (shard << 10) | *s);
        *s += 1;
    }
    out
}

fn opts() -> Options {
    Options {
        fsync: FsyncPolicy::No,
        snapshot_log_bytes: None,
        ..Options::default()
    }
}

fn rss_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .unwrap_or(0)
        * 1024
}

fn fill(e: &Engine, ids: &[u64], rng: &mut Rng) {
    for chunk in ids.chunks(65_536) {
        for (col, alpha) in [("a", 1.0), ("b", 1.5)] {
            let items: Vec<(Key, i64)> = chunk
                .iter()
                .map(|&id| (Key::Id(id), rng.skewed(alpha)))
                .collect();
            e.incr_batch("c", col, &items).unwrap();
        }
    }
}

/// p50 and p99 of per-call times, in µs.
fn percentiles(mut t: Vec<Duration>) -> (f64, f64) {
    t.sort_unstable();
    let at = |q: f64| t[((t.len() - 1) as f64 * q) as usize].as_secs_f64() * 1e6;
    (at(0.50), at(0.99))
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
/// (fsync `no`), bounded to 20 M and 10 s: (M/s, done, seconds).
fn increments(e: &Engine, newest: &[u64], rng: &mut Rng) -> (f64, u64, f64) {
    let deadline = Instant::now() + Duration::from_secs(10);
    let t = Instant::now();
    let mut done = 0u64;
    let mut out = Vec::new();
    while done < 20_000_000 && Instant::now() < deadline {
        let items: Vec<(Key, i64)> = (0..1024)
            .map(|_| {
                (
                    Key::Id(newest[(rng.next() % newest.len() as u64) as usize]),
                    1,
                )
            })
            .collect();
        let p = e.incr_run("c", "a", &items, &mut out).unwrap();
        e.commit(p).unwrap();
        done += items.len() as u64;
    }
    let secs = t.elapsed().as_secs_f64();
    (done as f64 / secs / 1e6, done, secs)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (mode, dir, rows) = match args.as_slice() {
        [_, mode, dir, rows] => (mode.as_str(), dir.as_str(), rows.parse::<usize>().unwrap()),
        _ => panic!("usage: cold-tier fill|measure DIR ROWS"),
    };
    let all = ids(rows);
    let hot_from = rows - rows / 100;
    let mut rng = Rng(42);
    match mode {
        "fill" => {
            let e = Engine::open(dir, opts()).unwrap();
            e.create_counter("c").unwrap();
            e.add_column("c", "a", ColumnOptions::new(16, 64)).unwrap();
            e.add_column("c", "b", ColumnOptions::new(16, 64)).unwrap();
            let rss0 = rss_bytes();
            let t = Instant::now();
            fill(&e, &all[..hot_from], &mut rng);
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
                .map(|_| all[(rng.next() % hot_from as u64) as usize])
                .collect();
            let (p50, p99) = timed_reads(&e, &sample);
            println!("reference, reads of the same rows in RAM: p50 {p50:.2} us, p99 {p99:.2} us");
            // The reference for the increments: the newest 1% of the rows so far, while
            // every row is in RAM.
            let (rate, done, secs) =
                increments(&e, &all[hot_from - rows / 100..hot_from], &mut rng);
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
            fill(&e, &all[hot_from..], &mut rng);
            e.snapshot().unwrap();
            e.close().unwrap();
        }
        "measure" => {
            let rss0 = rss_bytes();
            let t = Instant::now();
            let e = Engine::open(dir, opts()).unwrap();
            let open_s = t.elapsed().as_secs_f64();
            let s = e.stats().counters[0].clone();
            let rss = rss_bytes();
            println!(
                "opened in {open_s:.1} s: {} rows ({} hot, {} cold); RSS {:.1} MiB ({:.2} B/row), \
                 engine count {:.1} MiB ({:.2} B/row), cold blocks {:.2} B per cold row",
                s.rows,
                s.hot_rows,
                s.cold_rows,
                rss as f64 / 1048576.0,
                (rss - rss0) as f64 / s.rows as f64,
                s.bytes as f64 / 1048576.0,
                s.bytes as f64 / s.rows as f64,
                s.bytes_disk as f64 / s.cold_rows.max(1) as f64
            );
            let (rate, done, secs) = increments(&e, &all[hot_from..], &mut rng);
            println!(
                "increments to the newest 1%: {rate:.2} M/s ({done} in {secs:.1} s, incr_run of 1,024)"
            );
            e.close().unwrap();
            // Cold reads with no block cache (a budget of one byte holds no block): every
            // get reads and decodes its block from the file (which the OS page cache
            // may hold: it was just written).
            let e = Engine::open(
                dir,
                Options {
                    block_cache_bytes: 1,
                    ..opts()
                },
            )
            .unwrap();
            let cold: Vec<u64> = (0..20_000)
                .map(|_| all[(rng.next() % hot_from as u64) as usize])
                .collect();
            let (p50, p99) = timed_reads(&e, &cold);
            let reads = e.stats().counters[0].cold_reads;
            println!("cold rows, cold block cache: p50 {p50:.1} us, p99 {p99:.1} us ({reads} block reads for 20,000 gets)");
            let mut t = Vec::new();
            for _ in 0..200 {
                let keys: Vec<Key> = (0..100)
                    .map(|_| Key::Id(all[(rng.next() % hot_from as u64) as usize]))
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
                let id = all[(rng.next() % hot_from as u64) as usize];
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
            println!("RSS at the end {:.1} MiB", rss_bytes() as f64 / 1048576.0);
        }
        other => panic!("unknown mode {other}"),
    }
}

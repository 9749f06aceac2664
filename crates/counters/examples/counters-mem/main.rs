//! Memory benchmark driver for `bench/counters-memory.sh`.
//!
//! `counters-mem shardkit --ids instagram|random|string --rows N [--via table|engine] [--snapshot]` fills a
//! counter with N rows of two 16-bit columns and prints one JSON line with the process's
//! resident memory growth per row (from /proc/self/statm) and the engine's own count;
//! `--snapshot` then writes a snapshot and prints how long writers of one stripe waited.
//!
//! `counters-mem speed --rows N [--ops M] [--batch-only] [--rounds R] [--probe] [--collapse]`
//! times M (default 20 M) random `+1`s on existing rows of a `Table` (one call each, then
//! `incr_many` batches of 1,000, in R slices (default 1); it says `filled` on stderr when
//! the timed part starts). Before anything is timed every partition gets its second
//! column's values (the first write to a column a partition lacks copies the partition,
//! which used to land in the first timed pass). `--probe` alternates each slice with a
//! slice of the machine's own random-access rate for the same lines ([`probe`]) and
//! reports the medians and the ratio; `--collapse` repeats the batch run after moving
//! the table onto huge pages. The JSON line ends with the resident set and how much of
//! it is on transparent huge pages (`anon_huge_mb`).
//!
//! `counters-mem redis-resp --ids instagram|random|string --rows N [--prefix P]` writes the
//! same rows as Redis protocol `HSET <P><id> c <v1> r <v2>` commands to stdout, for
//! `redis-cli --pipe` (`--prefix pv:` makes them rows of counter `pv` for shardkit).
//!
//! `--ids string`: 18-byte string keys `/p/` + 15 hex digits (60 random bits), stored as
//! string-keyed rows (`Key::Name`); the same keys in both modes.
//!
//! Instagram-layout ids: 41-bit milliseconds since a custom epoch, 13-bit logical shard,
//! 10-bit sequence, generated at 2,000 ids per second of simulated time over 8,192 shards.
// Allowed here only (madvise on the benchmark's own buffers); the workspace denies unsafe code elsewhere.
#![allow(unsafe_code)]

use std::io::{BufWriter, Write};
use std::time::Instant;

use shardkit_counters::{ColumnOptions, Engine, FsyncPolicy, Key, Options, Table};

mod probe;

struct Ids {
    kind: String,
    n: u64,
    x: u64,
    seq: std::collections::HashMap<(u64, u64), u64>,
    last_ms: u64,
}

impl Ids {
    fn new(kind: &str) -> Ids {
        Ids {
            kind: kind.to_string(),
            n: 0,
            x: 0x9E37_79B9_7F4A_7C15,
            seq: Default::default(),
            last_ms: 0,
        }
    }
    fn rand(&mut self) -> u64 {
        // splitmix64
        self.x = self.x.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.x;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// The next string key: 18 bytes, `/p/` and 15 hex digits.
    fn string_key(&mut self) -> String {
        format!("/p/{:015x}", self.rand() >> 4)
    }
    fn next(&mut self) -> u64 {
        let i = self.n;
        self.n += 1;
        if self.kind == "random" {
            return self.rand();
        }
        // 2,000 ids per simulated second starting ~6 years after the epoch.
        let ms = 6 * 365 * 86_400_000u64 + i / 2;
        if ms != self.last_ms {
            self.seq.clear();
            self.last_ms = ms;
        }
        let shard = self.rand() % 8192;
        let s = self.seq.entry((ms, shard)).or_insert(0);
        let seq = *s;
        *s += 1;
        (ms << 23) | (shard << 10) | (seq & 1023)
    }
}

fn rss() -> u64 {
    let s = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = s
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    pages * 4096
}

/// Anonymous memory on transparent huge pages (AnonHugePages of /proc/self/smaps_rollup).
fn anon_huge_kb() -> u64 {
    let s = std::fs::read_to_string("/proc/self/smaps_rollup").unwrap_or_default();
    s.lines()
        .find_map(|l| l.strip_prefix("AnonHugePages:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

fn arg(args: &[String], name: &str, default: &str) -> String {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .cloned()
        .unwrap_or_else(|| default.to_string())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let mode = args.get(1).cloned().unwrap_or_default();
    let kind = arg(&args, "--ids", "instagram");
    let rows: u64 = arg(&args, "--rows", "1000000").parse()?;
    let via = arg(&args, "--via", "engine");
    let mut ids = Ids::new(&kind);
    if mode == "redis-resp" {
        let out = std::io::stdout();
        let mut w = BufWriter::with_capacity(1 << 20, out.lock());
        let prefix = arg(&args, "--prefix", "");
        for _ in 0..rows {
            let id = if kind == "string" {
                format!("{prefix}{}", ids.string_key())
            } else {
                format!("{prefix}{}", ids.next())
            };
            let v = ids.rand();
            let (a, b) = (
                (v % 1000 + 1).to_string(),
                ((v >> 20) % 100 + 1).to_string(),
            );
            write!(
                w,
                "*6\r\n$4\r\nHSET\r\n${}\r\n{}\r\n$1\r\nc\r\n${}\r\n{}\r\n$1\r\nr\r\n${}\r\n{}\r\n",
                id.len(),
                id,
                a.len(),
                a,
                b.len(),
                b
            )?;
        }
        w.flush()?;
        return Ok(());
    }
    if mode == "speed" {
        // Random +1 on existing rows of a Table of N random-id rows, one thread:
        // one call per increment, then batches of 1,000 through incr_many.
        let mut t = Table::new();
        t.add_column("c", ColumnOptions::new(16, 32))?;
        t.add_column("r", ColumnOptions::new(16, 32))?;
        let seed = ids.x;
        for _ in 0..rows {
            let id = ids.rand();
            t.incr(Key::Id(id), 0, 1)?;
        }
        eprintln!("filled {rows} rows");
        let ops: u64 = arg(&args, "--ops", "20000000").parse()?;
        // The m-th id the fill made, for a pseudo-random m (same splitmix64 as Ids::rand).
        let pick = |j: u64| {
            let m = ((j.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 32) * rows) >> 32;
            let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15u64.wrapping_mul(m + 1));
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        };
        let mut batch = Vec::with_capacity(1000);
        let mut out = Vec::with_capacity(1000);
        // Untimed: give every partition its second column (see the module doc).
        batch.extend((0..rows.min(2_000_000)).map(|j| (pick(j), 1usize, 1i64)));
        t.incr_many(&batch, &mut out);
        let t0 = Instant::now();
        let single_ops = if args.iter().any(|a| a == "--batch-only") {
            0
        } else {
            ops
        };
        for j in 0..single_ops {
            t.incr(Key::Id(pick(j)), 1, 1)?;
        }
        let single = single_ops as f64 / t0.elapsed().as_secs_f64();
        // `n` increments from op `from` in batches of 1,000 through incr_many; returns
        // increments per second.
        let mut misses = 0;
        let mut batched_run = |t: &mut Table, out: &mut Vec<_>, from: u64, n: u64| {
            let t1 = Instant::now();
            for j0 in (from..from + n).step_by(1000) {
                batch.clear();
                batch.extend((j0..(j0 + 1000).min(from + n)).map(|j| (pick(j), 1usize, 1i64)));
                misses += t.incr_many(&batch, out).len();
            }
            n as f64 / t1.elapsed().as_secs_f64()
        };
        let rounds: u64 = arg(&args, "--rounds", "1").parse::<u64>()?.max(1);
        let mut probe = if args.iter().any(|a| a == "--probe") {
            probe::Probe::new(t.bytes())
        } else {
            None
        };
        let (mut slices, mut probes) = (Vec::new(), Vec::new());
        let t1 = Instant::now();
        let mut probe_time = 0.0;
        for r in 0..rounds {
            slices.push(batched_run(
                &mut t,
                &mut out,
                r * ops / rounds,
                ops / rounds,
            ));
            if let Some(p) = probe.as_mut() {
                let tp = Instant::now();
                probes.push(p.run(ops / rounds));
                probe_time += tp.elapsed().as_secs_f64();
            }
        }
        let batched = ops as f64 / (t1.elapsed().as_secs_f64() - probe_time);
        let median = |v: &[f64]| {
            let mut v = v.to_vec();
            v.sort_by(f64::total_cmp);
            v.get(v.len() / 2).copied().unwrap_or(0.0)
        };
        let ratios: Vec<f64> = slices.iter().zip(&probes).map(|(s, p)| s / p).collect();
        let probe_json = match &probe {
            Some(p) => format!(
                ",\"incr_many_slice_median\":{:.0},\"probe_per_s_median\":{:.0},\"incr_many_to_probe_median\":{:.3},\"probe_mb\":{}",
                median(&slices),
                median(&probes),
                median(&ratios),
                p.bytes() >> 20
            ),
            None => String::new(),
        };
        if args.iter().any(|a| a == "--collapse") {
            eprintln!("on huge pages before collapse: {} MB", anon_huge_kb() >> 10);
            collapse_all();
            let after = batched_run(&mut t, &mut out, 0, ops);
            eprintln!("batch before collapse {batched:.0}/s, after {after:.0}/s");
        }
        println!(
            "{{\"rows\":{rows},\"incr_per_s_single\":{single:.0},\"incr_per_s_incr_many\":{batched:.0},\"errors\":{misses}{probe_json},\"rss_mb\":{},\"anon_huge_mb\":{}}}",
            rss() >> 20,
            anon_huge_kb() >> 10
        );
        return Ok(());
    }
    if mode != "shardkit" {
        return Err("usage: counters-mem shardkit|redis-resp --ids instagram|random|string --rows N [--via table|engine] [--prefix P]".into());
    }
    let dir = tempfile_dir()?;
    let before = rss();
    let t0 = Instant::now();
    let (bytes, stat_rows, dense, wide) = if via == "table" {
        let mut t = Table::new();
        t.add_column("c", ColumnOptions::new(16, 32))?;
        t.add_column("r", ColumnOptions::new(16, 32))?;
        let string = kind == "string";
        for _ in 0..rows {
            let name;
            let key = if string {
                name = ids.string_key();
                Key::Name(&name)
            } else {
                Key::Id(ids.next())
            };
            let v = ids.rand();
            t.incr(key, 0, (v % 1000 + 1) as i64)?;
            t.incr(key, 1, ((v >> 20) % 100 + 1) as i64)?;
        }
        let (d, w) = t.partitions();
        let out = (t.bytes() as u64, t.rows() as u64, d as u64, w as u64);
        let after = rss();
        report(&kind, &via, rows, before, after, out, t0);
        std::mem::forget(t);
        return Ok(());
    } else {
        let o = Options {
            fsync: FsyncPolicy::No,
            snapshot_log_bytes: None,
            ..Options::default()
        };
        let e = Engine::open(&dir, o)?;
        e.create_counter("w")?;
        e.add_column("w", "c", ColumnOptions::new(16, 32))?;
        e.add_column("w", "r", ColumnOptions::new(16, 32))?;
        let string = kind == "string";
        for _ in 0..rows {
            let name;
            let key = if string {
                name = ids.string_key();
                Key::Name(&name)
            } else {
                Key::Id(ids.next())
            };
            let v = ids.rand();
            e.incr("w", key, "c", (v % 1000 + 1) as i64, None)?;
            e.incr("w", key, "r", ((v >> 20) % 100 + 1) as i64, None)?;
        }
        let s = e.stats();
        let c = &s.counters[0];
        let out = (c.bytes, c.rows, c.dense_partitions, c.wide_partitions);
        let after = rss();
        report(&kind, &via, rows, before, after, out, t0);
        if args.iter().any(|a| a == "--snapshot") {
            let info = e.snapshot()?;
            println!(
                "{{\"snapshot_rows\":{},\"snapshot_seconds\":{:.2},\"longest_stripe_pause_ms\":{:.2}}}",
                info.rows,
                info.duration.as_secs_f64(),
                info.longest_stripe_pause.as_secs_f64() * 1000.0
            );
        }
        drop(e);
        let _ = std::fs::remove_dir_all(&dir);
        out
    };
    let _ = (bytes, stat_rows, dense, wide);
    Ok(())
}

fn report(
    kind: &str,
    via: &str,
    rows: u64,
    before: u64,
    after: u64,
    s: (u64, u64, u64, u64),
    t0: Instant,
) {
    println!(
        "{{\"system\":\"shardkit\",\"ids\":\"{kind}\",\"via\":\"{via}\",\"rows\":{rows},\"stored_rows\":{},\"rss_growth_bytes\":{},\"rss_bytes_per_row\":{:.2},\"engine_bytes_per_row\":{:.2},\"dense_partitions\":{},\"wide_partitions\":{},\"fill_seconds\":{:.1}}}",
        s.1,
        after.saturating_sub(before),
        after.saturating_sub(before) as f64 / rows as f64,
        s.0 as f64 / s.1.max(1) as f64,
        s.2,
        s.3,
        t0.elapsed().as_secs_f64()
    );
}

fn tempfile_dir() -> std::io::Result<std::path::PathBuf> {
    let d = std::env::temp_dir().join(format!("counters-mem-{}", std::process::id()));
    std::fs::create_dir_all(&d)?;
    Ok(d)
}

/// `speed --collapse`: after the timed batch run, asks the kernel to back every writable
/// anonymous mapping with huge pages (MADV_COLLAPSE, Linux 6.1+) and times the batch run
/// again, to show how much of an increment's cost is page walks (TLB misses).
fn collapse_all() {
    extern "C" {
        fn madvise(addr: *mut u8, len: usize, advice: i32) -> i32;
    }
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap_or_default();
    let t = Instant::now();
    let mut n = 0usize;
    for line in maps.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 2 || !f[1].starts_with("rw") || (f.len() > 5 && !f[5].starts_with('[')) {
            continue;
        }
        let Some((a, b)) = f[0].split_once('-') else {
            continue;
        };
        let (a, b) = (
            usize::from_str_radix(a, 16).unwrap_or(0),
            usize::from_str_radix(b, 16).unwrap_or(0),
        );
        let (a, b) = ((a + (2 << 20) - 1) & !((2 << 20) - 1), b & !((2 << 20) - 1));
        if b > a {
            // SAFETY: MADV_COLLAPSE (25) only changes how our own mapped pages are backed;
            // their contents stay the same. A kernel without it returns EINVAL, ignored.
            unsafe { madvise(a as *mut u8, b - a, 25) };
            n += b - a;
        }
    }
    eprintln!("collapsed {} MB in {:?}", n >> 20, t.elapsed());
}

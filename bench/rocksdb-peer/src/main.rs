//! The RocksDB peer of the counters' cold tier.
//!
//! `cold-tier rows ROWS | rocksdb-peer load DIR ROWS` stores the cold-tier benchmark's
//! rows as the issue asks (8-byte big-endian id -> the two u16 columns, zstd, RocksDB's
//! default block cache), then compacts; `rocksdb-peer measure DIR ROWS` opens it in a new
//! process and prints bytes on disk per row, resident memory, random reads of cold rows
//! (p50/p99), `multi_get` of 100 cold ids, and warm reads: the figures
//! `examples/cold-tier.rs` prints for shardkit, over the same rows.

use std::io::Read;
use std::time::{Duration, Instant};

use rocksdb::{DBCompressionType, Options, WriteBatch, WriteOptions, DB};

/// Picks `n` rows of `sample` at random (a 64-bit mix of the pick's number), the
/// `offset`-th pick on: as `cold-tier` picks its reads, every row equally likely.
fn spread(sample: &[[u8; 8]], n: usize, offset: usize) -> Vec<[u8; 8]> {
    let mix = |i: u64| {
        let z = (i + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let z = (z ^ (z >> 31)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z ^ (z >> 29)
    };
    (offset..offset + n)
        .map(|i| sample[(mix(i as u64) % sample.len() as u64) as usize])
        .collect()
}

fn options() -> Options {
    let mut o = Options::default();
    o.create_if_missing(true);
    o.set_compression_type(DBCompressionType::Zstd);
    o.set_bottommost_compression_type(DBCompressionType::Zstd);
    o
}

fn status_kib(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .unwrap_or(0)
}

/// Bytes of the store's table files (`*.sst`), what holds the rows once flushed.
fn sst_bytes(dir: &str) -> u64 {
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".sst"))
        .map(|e| e.metadata().unwrap().len())
        .sum()
}

fn percentiles(mut t: Vec<Duration>) -> (f64, f64) {
    t.sort_unstable();
    let at = |q: f64| t[((t.len() - 1) as f64 * q) as usize].as_secs_f64() * 1e6;
    (at(0.50), at(0.99))
}

/// About a million ids of the oldest 99% (every k-th), as `cold-tier` keeps them.
fn sample_path(dir: &str) -> String {
    format!("{dir}.sample")
}

fn load(dir: &str, rows: usize) {
    let db = DB::open(&options(), dir).unwrap();
    let hot_from = rows - rows / 100;
    let every = (hot_from / 1_000_000).max(1);
    let mut sample = Vec::new();
    let mut input = std::io::BufReader::with_capacity(1 << 20, std::io::stdin().lock());
    let mut rec = [0u8; 12];
    let mut wo = WriteOptions::default();
    wo.set_sync(false);
    let t = Instant::now();
    let mut n = 0usize;
    let mut batch = WriteBatch::default();
    while input.read_exact(&mut rec).is_ok() {
        batch.put(&rec[..8], &rec[8..]);
        if n < hot_from && n % every == 0 {
            sample.extend_from_slice(&rec[..8]);
        }
        n += 1;
        if batch.len() == 10_000 {
            db.write_opt(std::mem::take(&mut batch), &wo).unwrap();
        }
    }
    db.write_opt(batch, &wo).unwrap();
    assert_eq!(n, rows, "rows read from stdin");
    db.flush().unwrap();
    let loaded = t.elapsed().as_secs_f64();
    println!(
        "rocksdb: loaded {n} rows in {loaded:.0} s ({:.0} rows/s); table files {:.2} B/row before a full compaction",
        n as f64 / loaded,
        sst_bytes(dir) as f64 / n as f64
    );
    let t = Instant::now();
    db.compact_range::<&[u8], &[u8]>(None, None);
    println!(
        "rocksdb: full compaction {:.0} s; table files {:.2} B/row",
        t.elapsed().as_secs_f64(),
        sst_bytes(dir) as f64 / n as f64
    );
    std::fs::write(sample_path(dir), sample).unwrap();
}

fn measure(dir: &str, rows: usize) {
    let sample: Vec<[u8; 8]> = std::fs::read(sample_path(dir))
        .unwrap()
        .chunks_exact(8)
        .map(|c| c.try_into().unwrap())
        .collect();
    let rss0 = status_kib("VmRSS:");
    let t = Instant::now();
    let db = DB::open(&options(), dir).unwrap();
    println!(
        "rocksdb: opened in {:.1} s; RSS growth {:.2} B/row; table files {:.2} B/row",
        t.elapsed().as_secs_f64(),
        (status_kib("VmRSS:") - rss0) as f64 * 1024.0 / rows as f64,
        sst_bytes(dir) as f64 / rows as f64
    );
    let cold = spread(&sample, 20_000, 0);
    let mut t = Vec::with_capacity(cold.len());
    for id in &cold {
        let s = Instant::now();
        let v = db.get_pinned(id).unwrap();
        assert!(v.is_some(), "a row of the run is missing");
        t.push(s.elapsed());
    }
    let (p50, p99) = percentiles(t);
    println!("rocksdb: random reads of cold rows (default block cache): p50 {p50:.1} us, p99 {p99:.1} us");
    let mut t = Vec::new();
    for round in 0..200 {
        let keys = spread(&sample, 100, 20_000 + round * 100);
        let s = Instant::now();
        let got = db.multi_get(&keys);
        t.push(s.elapsed());
        assert!(got.iter().all(|r| matches!(r, Ok(Some(_)))));
    }
    let (p50, p99) = percentiles(t);
    println!("rocksdb: multi_get of 100 random cold ids: p50 {p50:.0} us, p99 {p99:.0} us");
    let warm: Vec<[u8; 8]> = cold[..1000].iter().cycle().take(21_000).copied().collect();
    let mut t = Vec::with_capacity(warm.len());
    for id in &warm {
        let s = Instant::now();
        std::hint::black_box(db.get_pinned(id).unwrap());
        t.push(s.elapsed());
    }
    let (p50, p99) = percentiles(t.split_off(1000));
    println!("rocksdb: 1,000 cold rows read over and over: p50 {p50:.1} us, p99 {p99:.1} us");
    println!(
        "rocksdb: RSS at the end {:.1} MiB, peak {:.1} MiB",
        status_kib("VmRSS:") as f64 / 1024.0,
        status_kib("VmHWM:") as f64 / 1024.0
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    match args.as_slice() {
        [_, mode, dir, rows] => {
            let rows: usize = rows.parse().expect("ROWS is a number");
            match mode.as_str() {
                "load" => load(dir, rows),
                "measure" => measure(dir, rows),
                _ => panic!("usage: rocksdb-peer load|measure DIR ROWS"),
            }
        }
        _ => panic!("usage: rocksdb-peer load|measure DIR ROWS"),
    }
}

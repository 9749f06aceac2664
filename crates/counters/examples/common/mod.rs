//! What the in-process benchmarks of the cold tier share (`cold-tier.rs`,
//! `cold-names.rs`): reading this process's memory, emptying the page cache, percentiles,
//! timing a snapshot and the open that loads it.

use std::time::{Duration, Instant};

use shardkit_counters::{Engine, Options};

/// Snapshots every row of `e`, closes it, and opens `dir` again from that snapshot,
/// printing the snapshot's bytes a row and time and the open's time.
pub fn snapshot_then_open(e: Engine, dir: &str, opts: Options) {
    let snap = e.snapshot().unwrap();
    let bytes = std::fs::metadata(&snap.path).unwrap().len();
    println!(
        "snapshot of {} hot rows: {:.2} B/row, {:.2} s",
        snap.rows,
        bytes as f64 / snap.rows as f64,
        snap.duration.as_secs_f64()
    );
    e.close().unwrap();
    let t = Instant::now();
    let e = Engine::open(dir, opts).unwrap();
    println!(
        "opened from the snapshot in {:.2} s ({} rows loaded)",
        t.elapsed().as_secs_f64(),
        e.recovery().snapshot_rows
    );
    e.close().unwrap();
}

/// A size line of /proc/self/status (`VmRSS:`, `VmHWM:`), in bytes.
pub fn status_bytes(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .unwrap_or(0)
        * 1024
}

/// With `DROP_CACHES=1` (root only): writes the dirty pages out and empties the OS page
/// cache, so the cold reads that follow come from the disk, not from memory the fill left
/// behind. Says so either way, so a run's figures tell which they are.
pub fn drop_page_cache() {
    if std::env::var("DROP_CACHES").as_deref() != Ok("1") {
        println!(
            "page cache kept (the cold files may be read from memory; DROP_CACHES=1 empties it)"
        );
        return;
    }
    let synced = std::process::Command::new("sync")
        .status()
        .is_ok_and(|s| s.success());
    match std::fs::write("/proc/sys/vm/drop_caches", "3") {
        Ok(()) if synced => println!("page cache emptied: the cold reads below come from the disk"),
        Ok(()) => println!("page cache emptied, but sync failed: dirty pages stayed in memory"),
        Err(e) => println!("page cache kept: /proc/sys/vm/drop_caches: {e}"),
    }
}

/// p50 and p99 of per-call times, in µs.
pub fn percentiles(mut t: Vec<Duration>) -> (f64, f64) {
    t.sort_unstable();
    let at = |q: f64| t[((t.len() - 1) as f64 * q) as usize].as_secs_f64() * 1e6;
    (at(0.50), at(0.99))
}

/// Bytes of the files in `dir` by kind (`cold-`, `snap-`, `log-`, the rest), and all of
/// them: what a data directory costs on disk, and what each part of it is.
// `cold-names` includes this module too and does not use it.
#[allow(dead_code)]
pub fn dir_bytes(dir: &str) -> Vec<(&'static str, u64)> {
    let mut by = vec![
        ("cold files", 0),
        ("snapshots", 0),
        ("log", 0),
        ("other", 0),
    ];
    for e in std::fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        let name = e.file_name().to_string_lossy().into_owned();
        let len = e.metadata().unwrap().len();
        let kind = ["cold-", "snap-", "log-"]
            .iter()
            .position(|p| name.starts_with(p))
            .unwrap_or(3);
        by[kind].1 += len;
    }
    let all = by.iter().map(|(_, b)| b).sum();
    by.push(("the whole directory", all));
    by
}

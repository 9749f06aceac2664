//! Child process for the SIGKILL crash test (`tests/crash.rs`).
//!
//! Usage: `counters-crash-child DIR SEED PENDING_FILE run|drain|run-cold|drain-cold
//! [always|everysec]`
//!
//! Opens the engine in DIR with fsync `always` and frequent background snapshots, first
//! re-sends every increment listed in PENDING_FILE (lines `txid key column delta`: ones
//! an earlier child started but did not acknowledge) with the same txid, then (`run`)
//! applies random increments from three threads until killed, printing `TRY txid key
//! column delta` before and `ACK txid value` after each; `drain` exits after the
//! re-sends. Errors are printed as `ERR …` and end the process with status 2.
//!
//! The `-cold` modes run the cold tier's crash test: `cold_after` of 1 ms (the eviction
//! pass runs every 10 ms and moves every partition not written since its last pass to
//! disk) and keys in 8 dense partitions of 150 ids and 400 string keys (`cold_key_of`), so batches
//! are written, partitions brought back and snapshots taken all the time.

use std::io::Write;
use std::sync::Arc;

use shardkit_counters::{ColumnOptions, Engine, Error, FsyncPolicy, Key, Options};

fn say(line: &str) {
    let out = std::io::stdout();
    let mut out = out.lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

fn fail(what: &str, e: impl std::fmt::Display) -> ! {
    say(&format!("ERR {what}: {e}"));
    std::process::exit(2)
}

/// Keys used by the test: clustered ids, scattered ids and string keys.
fn key_of(i: u64) -> String {
    match i % 3 {
        0 => ((0x0100_0000u64 << 32) | i).to_string(),
        1 => i.wrapping_mul(0x9E37_79B9_7F4A_7C15).to_string(),
        _ => format!("page:{i}"),
    }
}

/// Keys of the cold modes: 8 high-32 prefixes, 200 keys each: 150 ids, then 50
/// string keys (rows that go cold one by one rather than by partition).
fn cold_key_of(i: u64) -> String {
    let low = (i >> 3) % 200;
    if low >= 150 {
        return format!("n{}:{low}", i % 8);
    }
    (((0x0100_0000u64 + i % 8) << 32) | low).to_string()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let usage = "counters-crash-child DIR SEED PENDING_FILE run|drain|run-cold|drain-cold [always|everysec]";
    if !(5..=6).contains(&args.len()) {
        fail("usage", usage);
    }
    // `everysec` (the power-loss test) takes no snapshots: each would fsync the log and
    // hide what the once-a-second flusher leaves unsynced.
    let fsync = match args.get(5).map(String::as_str) {
        None | Some("always") => FsyncPolicy::Always,
        Some("everysec") => FsyncPolicy::EverySec,
        Some(_) => fail("usage", usage),
    };
    let seed: u64 = args[2].parse().unwrap_or_else(|e| fail("seed", e));
    let cold = args[4].ends_with("-cold");
    let opts = Options {
        fsync,
        snapshot_log_bytes: (fsync == FsyncPolicy::Always).then_some(8 << 10),
        // Snapshots every 8 KiB whatever their size: many crash points inside one.
        snapshot_growth_percent: None,
        cold_after: cold.then_some(std::time::Duration::from_millis(1)),
        ..Options::default()
    };
    let e = Arc::new(Engine::open(&args[1], opts).unwrap_or_else(|e| fail("open", e)));
    match e.create_counter("crash") {
        Ok(()) | Err(Error::CounterExists(_)) => {}
        Err(err) => fail("create", err),
    }
    for (col, bits) in [("a", 8u8), ("b", 16u8)] {
        match e.add_column("crash", col, ColumnOptions::new(bits, 64)) {
            Ok(()) | Err(Error::ColumnExists { .. }) => {}
            Err(err) => fail("add_column", err),
        }
    }
    say("READY");
    let pending = std::fs::read_to_string(&args[3]).unwrap_or_default();
    for line in pending.lines() {
        let f: Vec<&str> = line.split(' ').collect();
        if f.len() != 4 {
            continue;
        }
        let delta: i64 = f[3].parse().unwrap_or_else(|e| fail("pending delta", e));
        match e.incr("crash", Key::parse(f[1]), f[2], delta, Some(f[0])) {
            Ok(v) => say(&format!("ACK {} {v}", f[0])),
            Err(err) => fail("retry", err),
        }
    }
    if args[4].starts_with("drain") {
        say("DRAINED");
        return;
    }
    let threads: Vec<_> = (0..3u64)
        .map(|t| {
            let e = e.clone();
            std::thread::spawn(move || {
                let mut x = seed ^ (t + 1).wrapping_mul(0x2545_F491_4F6C_DD1D) | 1;
                for n in 0u64.. {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let key = if cold {
                        // One partition takes most writes; the others are written
                        // rarely, so they go cold and come back all the time.
                        if (x >> 40).is_multiple_of(64) {
                            cold_key_of(x % 1600)
                        } else {
                            cold_key_of((x % 200) * 8)
                        }
                    } else {
                        key_of(x % 30)
                    };
                    let col = if (x >> 20).is_multiple_of(2) {
                        "a"
                    } else {
                        "b"
                    };
                    let delta = ((x >> 32) % 300 + 1) as i64;
                    let txid = format!("{seed}-{t}-{n}");
                    say(&format!("TRY {txid} {key} {col} {delta}"));
                    match e.incr("crash", Key::parse(&key), col, delta, Some(&txid)) {
                        Ok(v) => say(&format!("ACK {txid} {v}")),
                        Err(err) => fail("incr", err),
                    }
                }
            })
        })
        .collect();
    for t in threads {
        let _ = t.join();
    }
}

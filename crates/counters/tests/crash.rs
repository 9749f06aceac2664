//! SIGKILL crash test: a child process applies random increments with fsync `always` and
//! prints each acknowledgement; it is killed at random moments, many times. After every
//! kill, every acknowledged increment must be there; at the end, after the unacknowledged
//! ones are re-sent with their txids, every increment must be counted exactly once.

use std::collections::{HashMap, HashSet};
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use shardkit_counters::{ColumnOptions, Engine, FsyncPolicy, Key, Options};

const CHILD: &str = env!("CARGO_BIN_EXE_counters-crash-child");
const KILLS: usize = 20;

struct Model {
    tried: HashMap<String, (String, String, u64)>,
    acked: HashSet<String>,
}

impl Model {
    fn pending(&self) -> String {
        let mut s = String::new();
        for (t, (k, c, d)) in &self.tried {
            if !self.acked.contains(t) {
                s.push_str(&format!("{t} {k} {c} {d}\n"));
            }
        }
        s
    }

    fn read(&mut self, out: &str) {
        for line in out.lines() {
            let f: Vec<&str> = line.split(' ').collect();
            match f.as_slice() {
                ["TRY", t, k, c, d] => {
                    self.tried.insert(
                        t.to_string(),
                        (k.to_string(), c.to_string(), d.parse().unwrap()),
                    );
                }
                ["ACK", t, _] => {
                    self.acked.insert(t.to_string());
                }
                _ => assert!(!line.starts_with("ERR"), "child failed: {line}"),
            }
        }
    }

    /// (sum of acknowledged deltas, sum of all tried deltas) per (key, column).
    fn bounds(&self) -> HashMap<(String, String), (u64, u64)> {
        let mut m: HashMap<(String, String), (u64, u64)> = HashMap::new();
        for (t, (k, c, d)) in &self.tried {
            let e = m.entry((k.clone(), c.clone())).or_default();
            e.1 += d;
            if self.acked.contains(t) {
                e.0 += d;
            }
        }
        m
    }
}

fn run_child(
    dir: &std::path::Path,
    seed: u64,
    pending: &str,
    mode: &str,
    kill_after: Option<Duration>,
) -> String {
    let pfile = dir.join("pending.txt");
    std::fs::write(&pfile, pending).unwrap();
    let mut child = Command::new(CHILD)
        .args([
            dir.join("data").to_str().unwrap(),
            &seed.to_string(),
            pfile.to_str().unwrap(),
            mode,
        ])
        .stdout(Stdio::piped())
        .spawn()
        .expect("start crash child");
    let stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut all = String::new();
        let mut r = BufReader::new(stdout);
        let mut line = String::new();
        while r.read_line(&mut line).unwrap_or(0) > 0 {
            // keep only whole lines: a kill may cut the last one
            if line.ends_with('\n') {
                all.push_str(&line);
            }
            line.clear();
        }
        all
    });
    if let Some(d) = kill_after {
        std::thread::sleep(d);
        child.kill().unwrap(); // SIGKILL on Unix
    }
    let status = child.wait().unwrap();
    let out = reader.join().unwrap();
    if kill_after.is_none() {
        assert!(status.success(), "child failed: {out}");
    }
    out
}

#[test]
fn sigkill_loses_no_acknowledged_increment_and_counts_none_twice() {
    let dir = tempfile::tempdir().unwrap();
    let m = Model {
        tried: HashMap::new(),
        acked: HashSet::new(),
    };
    crash_rounds(dir.path(), m, KILLS, false);
}

/// The child's keys in its cold modes (as `cold_key_of` there).
/// Of each 200, the last 50 are string keys (rows that go cold one by one).
fn cold_key_of(i: u64) -> String {
    let low = (i >> 3) % 200;
    if low >= 150 {
        return format!("n{}:{low}", i % 8);
    }
    (((0x0100_0000u64 + i % 8) << 32) | low).to_string()
}

/// The cold tier under SIGKILL: the directory starts with all 1,600 keys written and
/// evicted (a snapshot naming the batch), then the child writes with `cold_after` of 1 ms,
/// so it is killed while partitions are being written to disk, swapped, brought back and
/// snapshotted.
#[test]
fn sigkill_during_evictions_loses_no_acknowledged_increment_and_counts_none_twice() {
    let dir = tempfile::tempdir().unwrap();
    let mut m = Model {
        tried: HashMap::new(),
        acked: HashSet::new(),
    };
    {
        let e = Engine::open(dir.path().join("data"), Options::default()).unwrap();
        e.create_counter("crash").unwrap();
        e.add_column("crash", "a", ColumnOptions::new(8, 64))
            .unwrap();
        e.add_column("crash", "b", ColumnOptions::new(16, 64))
            .unwrap();
        let keys: Vec<String> = (0..1600).map(cold_key_of).collect();
        let items: Vec<(Key, i64)> = keys.iter().map(|k| (Key::parse(k), 1)).collect();
        assert_eq!(e.incr_batch("crash", "a", &items).unwrap(), 0);
        for (i, k) in keys.iter().enumerate() {
            let t = format!("seed-{i}");
            m.tried.insert(t.clone(), (k.clone(), "a".into(), 1));
            m.acked.insert(t);
        }
        assert_eq!(e.evict(Duration::ZERO).unwrap().rows, 1600);
        e.snapshot().unwrap();
    }
    let cold_seen = crash_rounds(dir.path(), m, 12, true);
    assert!(cold_seen, "no reopen found rows in the cold tier");
}

/// Kills the child `kills` times at random moments, checking after each kill that every
/// acknowledged increment is there and nothing untried is, then re-sends the
/// unacknowledged ones and checks each was counted exactly once. Returns whether any
/// reopen found cold rows.
fn crash_rounds(dir: &std::path::Path, mut m: Model, kills: usize, cold: bool) -> bool {
    let seed0 = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    println!("seed {seed0}");
    let (run, drain) = if cold {
        ("run-cold", "drain-cold")
    } else {
        ("run", "drain")
    };
    let mut cold_seen = false;
    let mut x = seed0 | 1;
    let mut acked_total = 0;
    for round in 0..kills {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let wait = Duration::from_millis(30 + x % 170);
        let out = run_child(
            dir,
            seed0.wrapping_add(round as u64),
            &m.pending(),
            run,
            Some(wait),
        );
        m.read(&out);
        // After every kill: all acknowledged increments are there, nothing beyond what
        // was tried.
        let e = Engine::open(
            dir.join("data"),
            Options {
                fsync: FsyncPolicy::Always,
                ..Options::default()
            },
        )
        .unwrap();
        if e.counters().is_empty() {
            continue; // killed before the counter was created
        }
        cold_seen |= e.stats().counters.iter().any(|c| c.cold_rows > 0);
        for ((k, c), (lo, hi)) in m.bounds() {
            let v = e.get("crash", Key::parse(&k), &c).unwrap();
            assert!(
                v >= lo && v <= hi,
                "round {round}: {k}/{c} = {v}, acknowledged {lo}, tried {hi} (seed {seed0})"
            );
        }
        acked_total = m.acked.len();
    }
    assert!(acked_total > 0, "the child never acknowledged anything");
    let out = run_child(dir, seed0 ^ 0xFFFF, &m.pending(), drain, None);
    m.read(&out);
    assert_eq!(m.acked.len(), m.tried.len());
    let e = Engine::open(dir.join("data"), Options::default()).unwrap();
    for ((k, c), (lo, hi)) in m.bounds() {
        assert_eq!(lo, hi);
        assert_eq!(
            e.get("crash", Key::parse(&k), &c).unwrap(),
            lo,
            "{k}/{c} (seed {seed0})"
        );
    }
    println!("{} increments, {kills} kills", m.tried.len());
    cold_seen
}

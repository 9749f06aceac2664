//! Power-loss tests: `counters-crash-child` writes on a LazyFS mount, then the power is
//! cut (the child SIGKILLed and every byte it wrote but did not fsync dropped) and the
//! engine reopens on what a disk would still hold.
//!
//! `crash.rs` kills the process only, so the page cache keeps every write; here only
//! what was fsynced survives. Under fsync `always` every acknowledged increment must
//! survive; under `everysec` at most about the last second of them may be lost, and
//! only as a cut tail of each row's history, never a hole in it (the child's fifth
//! argument `everysec` runs it so, with no byte-triggered snapshots). Without
//! `SHARDKIT_LAZYFS` (path to a LazyFS executable) the tests skip.

#[path = "common/lazyfs.rs"]
mod lazyfs;

use std::collections::{HashMap, HashSet};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use lazyfs::LazyFs;
use shardkit_counters::{ColumnOptions, Engine, Error, FsyncPolicy, Key, Options};

const CHILD: &str = env!("CARGO_BIN_EXE_counters-crash-child");
/// Cuts under `always`, all on one data directory (each recovery starts from the last).
const ALWAYS_ROUNDS: u64 = 6;
/// Cuts under `everysec`, each on a fresh data directory (a lost acknowledgement would
/// make the next round's lower bounds wrong).
const EVERYSEC_ROUNDS: u64 = 5;
/// What `everysec` may lose: its flusher sleeps a second between write+fsyncs; the
/// fsync through FUSE and a machine loaded by other tests (two cores) can delay it, so
/// the bound is generous, and the first round runs longer than it so that a flusher
/// that never syncs is still caught.
const LOSS_WINDOW: Duration = Duration::from_millis(2500);
/// The child's keys (as `key_of` there): 30 of them, in both columns.
const KEYS: u64 = 30;
const COLUMNS: [&str; 2] = ["a", "b"];

/// Key `i` as the child names it, so the keys it never tried are read too.
fn key_of(i: u64) -> String {
    match i % 3 {
        0 => ((0x0100_0000u64 << 32) | i).to_string(),
        1 => i.wrapping_mul(0x9E37_79B9_7F4A_7C15).to_string(),
        _ => format!("page:{i}"),
    }
}

/// What the children said: every increment tried, and the acknowledged ones with the
/// value they returned and when the line was read (never earlier than the ack itself).
#[derive(Default)]
struct Model {
    tried: HashMap<String, (String, String, u64)>,
    acked: HashMap<String, (u64, Instant)>,
}

impl Model {
    fn read(&mut self, out: &[(Instant, String)]) {
        for (at, line) in out {
            let f: Vec<&str> = line.split(' ').collect();
            match f.as_slice() {
                ["TRY", t, k, c, d] => {
                    self.tried.insert(
                        t.to_string(),
                        (k.to_string(), c.to_string(), d.parse().unwrap()),
                    );
                }
                ["ACK", t, v] => {
                    self.acked.insert(t.to_string(), (v.parse().unwrap(), *at));
                }
                _ => assert!(!line.starts_with("ERR"), "child failed: {line}"),
            }
        }
    }

    /// Tried and not acknowledged, as the child's pending file wants them.
    fn pending(&self) -> String {
        let mut s = String::new();
        for (t, (k, c, d)) in &self.tried {
            if !self.acked.contains_key(t) {
                s.push_str(&format!("{t} {k} {c} {d}\n"));
            }
        }
        s
    }

    /// (sum of acknowledged deltas, sum of all tried deltas) per (key, column).
    fn bounds(&self) -> HashMap<(String, String), (u64, u64)> {
        let mut m: HashMap<(String, String), (u64, u64)> = HashMap::new();
        for (t, (k, c, d)) in &self.tried {
            let e = m.entry((k.clone(), c.clone())).or_default();
            e.1 += d;
            if self.acked.contains_key(t) {
                e.0 += d;
            }
        }
        m
    }
}

/// What one child run printed, each whole line with the moment it was read.
struct Run {
    out: Vec<(Instant, String)>,
    /// When the power was cut (just before the kill).
    cut: Instant,
}

/// Runs the child on `data` with `pending` re-sent first; with `cut_after`, lets it write
/// that long, then SIGKILLs it and drops LazyFS's unsynced data. `fsync` is the child's
/// optional fifth argument.
fn run_child(
    fs: &mut LazyFs,
    data: &Path,
    seed: u64,
    pending: &str,
    mode: &str,
    fsync: Option<&str>,
    cut_after: Option<Duration>,
) -> Run {
    // Outside the mount: the test's own files must not be cut.
    let pfile = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(pfile.path(), pending).unwrap();
    let mut cmd = Command::new(CHILD);
    cmd.arg(data)
        .arg(seed.to_string())
        .arg(pfile.path())
        .arg(mode)
        .args(fsync)
        .stdout(Stdio::piped());
    let mut child = cmd.spawn().expect("start crash child");
    let stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut all = Vec::new();
        let mut r = BufReader::new(stdout);
        let mut line = String::new();
        while r.read_line(&mut line).unwrap_or(0) > 0 {
            // Whole lines only: the kill may cut the last one.
            if let Some(l) = line.strip_suffix('\n') {
                all.push((Instant::now(), l.to_string()));
            }
            line.clear();
        }
        all
    });
    let mut cut = Instant::now();
    if let Some(d) = cut_after {
        std::thread::sleep(d);
        cut = Instant::now();
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        fs.cut_power();
    }
    let status = child.wait().unwrap();
    let out = reader.join().unwrap();
    if let Some((_, usage)) = out.iter().find(|(_, l)| l.starts_with("ERR usage")) {
        panic!(
            "counters-crash-child does not take the fsync policy this test needs: an \
             optional fifth argument `always` (the default) or `everysec` (fsync \
             `EverySec` and no byte-triggered snapshots, whose rotations would fsync the \
             log every 100 ms and hide the flusher): {usage}"
        );
    }
    if cut_after.is_none() {
        assert!(status.success(), "child failed: {out:?}");
    }
    Run { out, cut }
}

/// The engine on what survived the cut; it must open (a torn tail is cut, not an
/// error), and may only have cut log segments, never a snapshot (those are fsynced
/// before they are renamed into place). Returns it with the bytes it cut.
fn reopen(data: &Path, fsync: FsyncPolicy, what: &str) -> (Engine, u64) {
    let opts = Options {
        fsync,
        ..Options::default()
    };
    let e = Engine::open(data, opts)
        .unwrap_or_else(|err| panic!("{what}: the engine does not open after the cut: {err}"));
    let mut cut = 0;
    for d in &e.recovery().dropped {
        let name = d.file.file_name().unwrap().to_string_lossy();
        assert!(
            name.starts_with("log-"),
            "{what}: recovery set aside more than a log tail: {d:?}"
        );
        cut += d.bytes;
    }
    (e, cut)
}

/// `column` of `key` in the child's counter, 0 if the cut took the counter or the column.
fn value(e: &Engine, key: &str, column: &str) -> u64 {
    match e.get("crash", Key::parse(key), column) {
        Ok(v) => v,
        Err(Error::NoSuchCounter(_) | Error::NoSuchColumn { .. }) => 0,
        Err(err) => panic!("get {key}/{column}: {err}"),
    }
}

fn xorshift(x: &mut u64) -> u64 {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    *x
}

fn seed() -> u64 {
    let s = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    println!("seed {s}");
    s
}

#[test]
fn power_cut_under_fsync_always_loses_no_acknowledged_increment() {
    let Some(bin) = lazyfs::binary("fsync always") else {
        return;
    };
    let mut fs = LazyFs::mount(&bin);
    let data = fs.path().join("data");
    let seed0 = seed();
    let mut x = seed0 | 1;
    let mut m = Model::default();
    let mut cut_bytes = 0;
    for round in 0..ALWAYS_ROUNDS {
        let wait = Duration::from_millis(300 + xorshift(&mut x) % 1700);
        let run = run_child(
            &mut fs,
            &data,
            seed0.wrapping_add(round),
            &m.pending(),
            "run",
            None,
            Some(wait),
        );
        m.read(&run.out);
        let what = format!("round {round} (seed {seed0})");
        let (e, cut) = reopen(&data, FsyncPolicy::Always, &what);
        cut_bytes += cut;
        let bounds = m.bounds();
        if run.out.iter().any(|(_, l)| l == "READY") {
            assert!(
                !e.counters().is_empty(),
                "{what}: the counter was created and fsynced, then lost"
            );
        }
        for k in (0..KEYS).map(key_of) {
            for c in COLUMNS {
                let (lo, hi) = bounds
                    .get(&(k.clone(), c.into()))
                    .copied()
                    .unwrap_or_default();
                let v = value(&e, &k, c);
                assert!(
                    v >= lo && v <= hi,
                    "{what}: {k}/{c} = {v}, acknowledged {lo}, tried {hi}"
                );
            }
        }
        println!(
            "always round {round}: cut after {wait:?}; {} tried, {} acknowledged so far; \
             recovery cut {cut} bytes",
            m.tried.len(),
            m.acked.len()
        );
    }
    assert!(!m.acked.is_empty(), "the child never acknowledged anything");
    // The unacknowledged ones, re-sent with their txids, count once each.
    let resent = m.tried.len() - m.acked.len();
    let run = run_child(
        &mut fs,
        &data,
        seed0 ^ 0xFFFF,
        &m.pending(),
        "drain",
        None,
        None,
    );
    m.read(&run.out);
    assert_eq!(m.acked.len(), m.tried.len());
    let (e, _) = reopen(&data, FsyncPolicy::Always, "after the drain");
    for ((k, c), (lo, hi)) in m.bounds() {
        assert_eq!(lo, hi);
        assert_eq!(value(&e, &k, &c), lo, "{k}/{c} (seed {seed0})");
    }
    println!(
        "always: {ALWAYS_ROUNDS} cuts, {} increments acknowledged, none lost; {resent} \
         re-sent after the last cut; recovery cut {cut_bytes} bytes in all",
        m.acked.len()
    );
}

#[test]
fn power_cut_under_fsync_everysec_loses_at_most_the_last_second() {
    let Some(bin) = lazyfs::binary("fsync everysec") else {
        return;
    };
    let mut fs = LazyFs::mount(&bin);
    let seed0 = seed();
    let mut x = seed0 | 1;
    let (mut acked_all, mut lost_all, mut checked_all) = (0, 0, 0);
    for round in 0..EVERYSEC_ROUNDS {
        let data = fs.path().join(format!("data-{round}"));
        // The first round writes past the window, so its bound is never vacuous.
        let wait = match round {
            0 => Duration::from_millis(3500 + xorshift(&mut x) % 1000),
            _ => Duration::from_millis(300 + xorshift(&mut x) % 2700),
        };
        let seed = seed0.wrapping_add(round);
        let run = run_child(
            &mut fs,
            &data,
            seed,
            "",
            "run",
            Some("everysec"),
            Some(wait),
        );
        let mut m = Model::default();
        m.read(&run.out);
        let what = format!("round {round} (seed {seed0})");
        let (e, cut_bytes) = reopen(&data, FsyncPolicy::EverySec, &what);
        let old = run.cut.checked_sub(LOSS_WINDOW);
        // Per row and column, in the order the engine applied them (the values it
        // returned grow with each), the acknowledged increments and the deltas of the
        // tried-but-unacknowledged ones (at most one per child thread).
        let mut acks: HashMap<(String, String), Vec<(u64, Instant)>> = HashMap::new();
        let mut unacked: HashMap<(String, String), Vec<u64>> = HashMap::new();
        for (t, (k, c, d)) in &m.tried {
            let rc = (k.clone(), c.clone());
            match m.acked.get(t) {
                Some(&a) => acks.entry(rc).or_default().push(a),
                None => unacked.entry(rc).or_default().push(*d),
            }
        }
        let bounds = m.bounds();
        let (mut lost, mut checked, mut oldest_lost) = (0, 0, Duration::ZERO);
        for k in (0..KEYS).map(key_of) {
            for c in COLUMNS {
                let rc = (k.clone(), c.to_string());
                let v = value(&e, &k, c);
                let hi = bounds.get(&rc).map_or(0, |b| b.1);
                assert!(
                    v <= hi,
                    "{what}: {k}/{c} = {v}, more than the {hi} ever tried"
                );
                let mine = acks.get(&rc).map_or(&[][..], |a| a);
                for &(acked_value, at) in mine {
                    let age = run.cut.saturating_duration_since(at);
                    if old.is_some_and(|o| at < o) {
                        checked += 1;
                        assert!(
                            acked_value <= v,
                            "{what}: {k}/{c} = {v}, but an increment acknowledged as \
                             {acked_value} {age:?} before the cut is lost"
                        );
                    }
                    if acked_value > v {
                        lost += 1;
                        oldest_lost = oldest_lost.max(age);
                    }
                }
                // A cut tail, not a hole: v is what the row held after some prefix of
                // its increments, i.e. an acknowledged value (or 0) plus some of the
                // unacknowledged deltas applied after it.
                let sums = subset_sums(unacked.get(&rc).map_or(&[][..], |u| u));
                let prefix = std::iter::once(0)
                    .chain(mine.iter().map(|a| a.0))
                    .any(|a| a <= v && sums.contains(&(v - a)));
                assert!(
                    prefix,
                    "{what}: {k}/{c} = {v} is no prefix of its increments"
                );
            }
        }
        // The counter and columns as the child makes them, in case the cut took them.
        match e.create_counter("crash") {
            Ok(()) | Err(Error::CounterExists(_)) => {}
            Err(err) => panic!("{what}: create the counter: {err}"),
        }
        for (c, bits) in [("a", 8), ("b", 16)] {
            match e.add_column("crash", c, ColumnOptions::new(bits, 64)) {
                Ok(()) | Err(Error::ColumnExists { .. }) => {}
                Err(err) => panic!("{what}: add column {c}: {err}"),
            }
        }
        // Every tried increment re-sent with its txid: the lost ones count now, the ones
        // that survived were remembered with their txids and do not count again.
        for (t, (k, c, d)) in &m.tried {
            e.incr("crash", Key::parse(k), c, *d as i64, Some(t))
                .unwrap_or_else(|err| panic!("{what}: re-send {t}: {err}"));
        }
        for ((k, c), (_, hi)) in &bounds {
            assert_eq!(
                value(&e, k, c),
                *hi,
                "{what}: {k}/{c} after re-sending everything"
            );
        }
        println!(
            "everysec round {round}: cut after {wait:?}; {} tried, {} acknowledged, {lost} \
             of them lost (oldest {oldest_lost:?} before the cut), {checked} older than \
             {LOSS_WINDOW:?} all there; recovery cut {cut_bytes} bytes",
            m.tried.len(),
            m.acked.len()
        );
        e.close().unwrap();
        // Frees LazyFS's cache for the next round.
        std::fs::remove_dir_all(&data).unwrap();
        acked_all += m.acked.len();
        lost_all += lost;
        checked_all += checked;
    }
    assert!(
        checked_all > 0,
        "no acknowledgement was older than {LOSS_WINDOW:?}"
    );
    println!(
        "everysec: {EVERYSEC_ROUNDS} cuts, {acked_all} increments acknowledged, {lost_all} \
         lost, {checked_all} past the window checked"
    );
}

/// Every sum of a subset of `d` (a handful of in-flight deltas).
fn subset_sums(d: &[u64]) -> HashSet<u64> {
    assert!(
        d.len() <= 16,
        "{} unacknowledged increments on one row",
        d.len()
    );
    let mut sums = HashSet::from([0]);
    for x in d {
        let more: Vec<u64> = sums.iter().map(|s| s + x).collect();
        sums.extend(more);
    }
    sums
}

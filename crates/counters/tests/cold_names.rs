//! String-keyed rows in the cold tier: rows evicted one by one when not
//! written since the last eviction pass, read and written back, deleted, snapshotted and
//! recovered; a damaged block named by its keys while the rest is served; a missing
//! batch reported with the rows it held; writers racing evictions. The model test across
//! hot and cold is `string_keys.rs` (its `Evict` op).

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use shardkit_counters::{ColumnOptions, CounterStats, Engine, Error, Key, Options, STRIPES};

const ROWS: usize = 20_000;

fn opts() -> Options {
    Options {
        snapshot_log_bytes: None,
        ..Options::default()
    }
}

fn key(i: usize) -> String {
    format!("pageviews:/articles/{i:07}")
}

/// Counter `s`, columns `a` (16 bits) and `b` (8 bits, so big values widen the row),
/// and [`ROWS`] rows: `a` = i % 1000 + 1, `b` = i % 3 (and 70,000 every 1,000th row).
fn filled(dir: &Path) -> Engine {
    let e = Engine::open(dir, opts()).unwrap();
    e.create_counter("s").unwrap();
    e.add_column("s", "a", ColumnOptions::new(16, 64)).unwrap();
    e.add_column("s", "b", ColumnOptions::new(8, 64)).unwrap();
    let keys: Vec<String> = (0..ROWS).map(key).collect();
    let a: Vec<(Key, i64)> = keys
        .iter()
        .enumerate()
        .map(|(i, k)| (Key::Name(k), (i % 1000 + 1) as i64))
        .collect();
    assert_eq!(e.incr_batch("s", "a", &a).unwrap(), 0);
    let b: Vec<(Key, i64)> = keys
        .iter()
        .enumerate()
        .map(|(i, k)| (Key::Name(k), want_b(i) as i64))
        .collect();
    assert_eq!(e.incr_batch("s", "b", &b).unwrap(), 0);
    e
}

fn want_b(i: usize) -> u64 {
    if i % 1000 == 7 {
        70_000
    } else {
        (i % 3) as u64
    }
}

fn check(e: &Engine, skip: &[usize]) {
    for i in (0..ROWS).filter(|i| !skip.contains(i)) {
        let row = e.get_row("s", Key::Name(&key(i))).unwrap();
        assert_eq!(
            row[..2],
            [("a".into(), (i % 1000 + 1) as u64), ("b".into(), want_b(i))],
            "row {i}"
        );
        // A column added while the row was cold reads as its default.
        assert!(row[2..].iter().all(|(_, v)| *v == 0), "row {i}");
    }
}

fn stats(e: &Engine) -> CounterStats {
    e.stats()
        .counters
        .into_iter()
        .find(|c| c.name == "s")
        .unwrap()
}

fn cold_files(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            name.starts_with("cold-") && name.ends_with(".blk")
        })
        .collect();
    files.sort();
    files
}

#[test]
fn evicted_string_rows_read_the_same_from_a_small_index_and_come_back_when_written() {
    let dir = tempfile::tempdir().unwrap();
    let e = filled(dir.path());
    let hot = stats(&e);
    assert_eq!((hot.hot_rows, hot.cold_rows), (ROWS as u64, 0));
    let out = e.evict(Duration::ZERO).unwrap();
    assert_eq!((out.rows, out.name_rows), (ROWS as u64, ROWS as u64));
    let cold = stats(&e);
    assert_eq!(
        (cold.hot_rows, cold.cold_rows, cold.rows),
        (0, ROWS as u64, ROWS as u64)
    );
    assert_eq!(cold.named_rows, ROWS as u64);
    // RAM keeps the blocks' first and last keys, a filter and nothing per row: a few
    // bytes a row, against the ~50 of the table (key, columns, index slot).
    println!(
        "bytes in RAM: hot {} cold {}, on disk {} ({:.2} a row)",
        hot.bytes,
        cold.bytes,
        cold.bytes_disk,
        cold.bytes_disk as f64 / ROWS as f64
    );
    assert!(
        cold.bytes * 8 < hot.bytes,
        "{} vs {}",
        cold.bytes,
        hot.bytes
    );
    assert!(cold.bytes_disk > 0 && cold.bytes_disk < (ROWS * 16) as u64);
    check(&e, &[]);
    assert!(stats(&e).cold_reads > 0);
    // Absent keys are answered (mostly from the filters) as absent.
    for i in ROWS..ROWS + 1000 {
        assert!(!e.exists("s", Key::Name(&key(i))).unwrap());
        assert_eq!(e.get("s", Key::Name(&key(i)), "a").unwrap(), 0);
    }
    // A write brings one row back; a delete of a cold row deletes it.
    assert_eq!(e.incr("s", Key::Name(&key(5)), "a", 10, None).unwrap(), 16);
    assert!(e.delete("s", Key::Name(&key(6))).unwrap());
    assert!(!e.delete("s", Key::Name(&key(6))).unwrap());
    assert!(!e.exists("s", Key::Name(&key(6))).unwrap());
    let s = stats(&e);
    assert_eq!((s.hot_rows, s.cold_rows), (1, ROWS as u64 - 2));
    // A column added while the rows are cold reads as its default, and writes to it
    // bring the row back with the rest of its values.
    e.add_column("s", "c", ColumnOptions::new(32, 64)).unwrap();
    assert_eq!(e.get("s", Key::Name(&key(9)), "c").unwrap(), 0);
    e.set("s", Key::Name(&key(9)), "c", 5).unwrap();
    assert_eq!(
        e.get_row("s", Key::Name(&key(9))).unwrap(),
        vec![("a".into(), 10), ("b".into(), 0), ("c".into(), 5)]
    );
    // SCAN's key walk lists hot and cold rows once each.
    let mut walked = 0;
    for s in 0..STRIPES {
        walked += e.row_keys("s", s).unwrap().len();
    }
    assert_eq!(walked, ROWS - 1);
    // Snapshot, reopen: the same rows, the cold ones still cold.
    e.snapshot().unwrap();
    e.incr("s", Key::Name(&key(11)), "a", 1, None).unwrap();
    drop(e);
    let e = Engine::open(dir.path(), opts()).unwrap();
    assert!(e.recovery().dropped.is_empty(), "{:?}", e.recovery());
    let s = stats(&e);
    assert_eq!((s.hot_rows, s.cold_rows), (3, ROWS as u64 - 4));
    assert_eq!(e.get("s", Key::Name(&key(5)), "a").unwrap(), 16);
    assert_eq!(e.get("s", Key::Name(&key(11)), "a").unwrap(), 13);
    assert!(!e.exists("s", Key::Name(&key(6))).unwrap());
    check(&e, &[5, 6, 9, 11]);
}

#[test]
fn a_row_goes_cold_only_after_a_whole_tick_without_writes() {
    let dir = tempfile::tempdir().unwrap();
    let e = filled(dir.path());
    let hour = Duration::from_secs(3600);
    // The first pass starts the clock: every row was written since it last ticked.
    assert_eq!(e.evict(hour).unwrap().name_rows, 0);
    // Not an hour since the tick: nothing happens.
    assert_eq!(e.evict(hour).unwrap().name_rows, 0);
    e.incr("s", Key::Name(&key(1)), "a", 1, None).unwrap();
    e.set("s", Key::Name(&key(2)), "b", 1).unwrap();
    // A tick now (0 ms old is old enough): every row not written since the last one.
    let out = e.evict(Duration::from_nanos(1)).unwrap();
    assert_eq!(out.name_rows, ROWS as u64 - 2);
    assert_eq!(stats(&e).hot_rows, 2);
    // The two written rows go at the next tick unless written again.
    e.incr("s", Key::Name(&key(1)), "a", 1, None).unwrap();
    assert_eq!(e.evict(Duration::from_nanos(1)).unwrap().name_rows, 1);
    assert_eq!(stats(&e).hot_rows, 1);
    assert_eq!(e.get("s", Key::Name(&key(1)), "a").unwrap(), 4);
    assert_eq!(e.get("s", Key::Name(&key(2)), "b").unwrap(), 1);
}

#[test]
fn a_damaged_block_is_named_by_its_keys_and_the_rest_is_served() {
    let dir = tempfile::tempdir().unwrap();
    {
        let e = filled(dir.path());
        e.evict(Duration::ZERO).unwrap();
        e.snapshot().unwrap();
    }
    let files = cold_files(dir.path());
    assert_eq!(files.len(), 1);
    let mut bytes = std::fs::read(&files[0]).unwrap();
    // The first block starts the file: flip bytes of its payload.
    assert_eq!(&bytes[..4], b"SKNB");
    for b in &mut bytes[40..48] {
        *b ^= 0x5A;
    }
    std::fs::write(&files[0], &bytes).unwrap();
    let e = Engine::open(dir.path(), opts()).unwrap();
    assert!(e.recovery().dropped.is_empty(), "damage is found when read");
    let mut damaged = Vec::new();
    for i in 0..ROWS {
        match e.get("s", Key::Name(&key(i)), "a") {
            Ok(v) => assert_eq!(v, (i % 1000 + 1) as u64),
            Err(err) => {
                assert!(matches!(err, Error::ColdBlock { .. }), "{err}");
                assert!(
                    err.to_string()
                        .contains("holding keys \"pageviews:/articles/"),
                    "{err}"
                );
                // A write is refused too, and changes nothing.
                assert!(e.incr("s", Key::Name(&key(i)), "a", 1, None).is_err());
                damaged.push(i);
            }
        }
    }
    // One block of one stripe's run (256 of its ~625 rows).
    assert!(
        !damaged.is_empty() && damaged.len() < ROWS / STRIPES * 2,
        "{}",
        damaged.len()
    );
    let first = key(damaged[0]);
    let last = key(*damaged.last().unwrap());
    let err = e.get("s", Key::Name(&first), "a").unwrap_err().to_string();
    assert!(err.contains(&format!("{first:?}..={last:?}")), "{err}");
    // Rows elsewhere are written as usual.
    e.incr("s", Key::Name("new"), "a", 1, None).unwrap();
}

#[test]
fn a_missing_batch_is_reported_at_open_with_the_rows_it_held() {
    let dir = tempfile::tempdir().unwrap();
    {
        let e = filled(dir.path());
        e.evict(Duration::ZERO).unwrap();
        e.snapshot().unwrap();
        e.incr("s", Key::Name("after"), "a", 4, None).unwrap();
    }
    for f in cold_files(dir.path()) {
        std::fs::remove_file(f).unwrap();
    }
    let e = Engine::open(dir.path(), opts()).unwrap();
    let lost: Vec<_> = e
        .recovery()
        .dropped
        .iter()
        .filter(|d| d.reason.contains("missing") && d.reason.contains("string-keyed rows"))
        .collect();
    assert_eq!(lost.len(), STRIPES, "{:?}", e.recovery().dropped);
    assert_eq!(e.get("s", Key::Name("after"), "a").unwrap(), 4);
}

#[test]
fn cold_batches_of_string_rows_brought_back_are_deleted_once_no_snapshot_needs_them() {
    let dir = tempfile::tempdir().unwrap();
    let e = filled(dir.path());
    e.evict(Duration::ZERO).unwrap();
    assert_eq!(cold_files(dir.path()).len(), 1);
    // Every row written: every run all dead and dropped.
    let keys: Vec<String> = (0..ROWS).map(key).collect();
    let items: Vec<(Key, i64)> = keys.iter().map(|k| (Key::Name(k), 1)).collect();
    assert_eq!(e.incr_batch("s", "a", &items).unwrap(), 0);
    assert_eq!(stats(&e).cold_rows, 0);
    e.snapshot().unwrap();
    e.snapshot().unwrap();
    assert!(cold_files(dir.path()).is_empty());
}

#[test]
fn writers_racing_evictions_of_string_rows_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let e = Arc::new(filled(dir.path()));
    let stop = Arc::new(AtomicBool::new(false));
    let evictor = {
        let (e, stop) = (e.clone(), stop.clone());
        std::thread::spawn(move || {
            let (mut passes, mut merged) = (0u64, 0u64);
            while !stop.load(Ordering::Relaxed) && passes < 100_000 {
                let older = if passes.is_multiple_of(2) {
                    Duration::ZERO
                } else {
                    Duration::from_nanos(1)
                };
                merged += e.evict(older).unwrap().runs_merged;
                passes += 1;
            }
            (passes, merged)
        })
    };
    // Three writers adding to their own rows (bounded in count): each knows what it added.
    let writers: Vec<_> = (0..3usize)
        .map(|t| {
            let e = e.clone();
            std::thread::spawn(move || {
                let mut added: HashMap<usize, u64> = HashMap::new();
                let mut x = 0x9E37_79B9u64 + t as u64;
                for _ in 0..3_000 {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let i = (x as usize % (ROWS / 3)) * 3 + t;
                    e.incr("s", Key::Name(&key(i)), "a", 1, None).unwrap();
                    *added.entry(i).or_default() += 1;
                }
                added
            })
        })
        .collect();
    let mut added: HashMap<usize, u64> = HashMap::new();
    for w in writers {
        added.extend(w.join().unwrap());
    }
    stop.store(true, Ordering::Relaxed);
    let (passes, merged) = evictor.join().unwrap();
    assert!(passes > 1, "{passes} passes");
    println!("{passes} eviction passes, {merged} runs merged");
    e.evict(Duration::ZERO).unwrap();
    let verify = |e: &Engine| {
        for i in 0..ROWS {
            let a = (i % 1000 + 1) as u64 + added.get(&i).copied().unwrap_or(0);
            assert_eq!(e.get("s", Key::Name(&key(i)), "a").unwrap(), a, "row {i}");
        }
        assert_eq!(stats(e).rows, ROWS as u64);
    };
    verify(&e);
    e.snapshot().unwrap();
    drop(Arc::try_unwrap(e).ok().unwrap());
    verify(&Engine::open(dir.path(), opts()).unwrap());
}

/// Pass after pass of new rows and rows brought back: each pass adds a run per stripe,
/// merges keep a stripe at a few runs, runs mostly dead are rewritten, and every row
/// reads the same before and after a reopen; the merged-away files are deleted.
#[test]
fn runs_merge_as_passes_add_them_and_every_row_stays_whole() {
    let dir = tempfile::tempdir().unwrap();
    let e = filled(dir.path());
    e.evict(Duration::ZERO).unwrap();
    let mut extra: HashMap<usize, u64> = HashMap::new();
    let mut merged = 0;
    for round in 0..24usize {
        // 300 new rows and 200 old ones written again (brought back from their runs).
        let news: Vec<String> = (0..300).map(|i| key(ROWS + round * 300 + i)).collect();
        let items: Vec<(Key, i64)> = news.iter().map(|k| (Key::Name(k), 1)).collect();
        assert_eq!(e.incr_batch("s", "a", &items).unwrap(), 0);
        let olds: Vec<usize> = (0..200).map(|i| (round * 7919 + i * 97) % ROWS).collect();
        let keys: Vec<String> = olds.iter().map(|&i| key(i)).collect();
        let items: Vec<(Key, i64)> = keys.iter().map(|k| (Key::Name(k), 2)).collect();
        assert_eq!(e.incr_batch("s", "a", &items).unwrap(), 0);
        for i in olds {
            *extra.entry(i).or_default() += 2;
        }
        let out = e.evict(Duration::ZERO).unwrap();
        merged += out.runs_merged;
        let s = stats(&e);
        assert!(
            s.name_runs <= (STRIPES * (8 + 1)) as u64,
            "round {round}: {} runs",
            s.name_runs
        );
        assert_eq!(s.hot_rows, 0);
    }
    assert!(merged > 0, "no run was merged");
    let total = ROWS + 24 * 300;
    let verify = |e: &Engine| {
        for i in 0..ROWS {
            let a = (i % 1000 + 1) as u64 + extra.get(&i).copied().unwrap_or(0);
            assert_eq!(e.get("s", Key::Name(&key(i)), "a").unwrap(), a, "row {i}");
            assert_eq!(
                e.get("s", Key::Name(&key(i)), "b").unwrap(),
                want_b(i),
                "row {i}"
            );
        }
        for i in ROWS..total {
            assert_eq!(e.get("s", Key::Name(&key(i)), "a").unwrap(), 1, "row {i}");
        }
        assert_eq!(stats(e).rows, total as u64);
        assert_eq!(stats(e).cold_rows, total as u64);
    };
    verify(&e);
    e.snapshot().unwrap();
    e.snapshot().unwrap();
    // Only the files the live runs are in remain.
    let runs = stats(&e).name_runs as usize;
    assert!(
        cold_files(dir.path()).len() <= runs,
        "{} files, {runs} runs",
        cold_files(dir.path()).len()
    );
    drop(e);
    let e = Engine::open(dir.path(), opts()).unwrap();
    assert!(e.recovery().dropped.is_empty(), "{:?}", e.recovery());
    verify(&e);
}

/// Under `max_memory`, string-keyed rows not written since the last pass go cold
/// without waiting for `cold_after` (here unset); with room to spare nothing moves.
#[test]
fn past_max_memory_string_rows_go_cold_at_the_next_passes() {
    let dir = tempfile::tempdir().unwrap();
    drop(filled(dir.path()));
    let roomy = Engine::open(
        dir.path(),
        Options {
            max_memory: Some(1 << 30),
            ..opts()
        },
    )
    .unwrap();
    std::thread::sleep(Duration::from_millis(2500));
    assert_eq!(stats(&roomy).cold_rows, 0);
    drop(roomy);
    let tight = Engine::open(
        dir.path(),
        Options {
            max_memory: Some(1),
            ..opts()
        },
    )
    .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while stats(&tight).cold_rows < ROWS as u64 {
        assert!(std::time::Instant::now() < deadline, "{:?}", stats(&tight));
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(stats(&tight).hot_rows, 0);
    check(&tight, &[]);
}

/// The fixture `fixtures/cold-names-v1` (written by [`write_the_fixture`] at the commit
/// that made this format): 300 rows `f:000`..`f:299` evicted, row 5 written back and
/// row 6 deleted before the snapshot, row 7 written after it (log only).
fn fixture_want(i: usize) -> Option<(u64, u64)> {
    match i {
        6 => None,
        5 => Some((16, 35)),
        7 => Some((108, 49)),
        _ => Some((i as u64 + 1, (i as u64 * 7) % 300)),
    }
}

fn fixture_dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/cold-names-v1")
}

/// Writes `fixtures/cold-names-v1` again: `cargo test --test cold_names -- --ignored`.
/// Run only when the format changes on purpose (and name the fixture after it).
#[test]
#[ignore]
fn write_the_fixture() {
    let dir = fixture_dir();
    let _ = std::fs::remove_dir_all(&dir);
    let e = Engine::open(&dir, opts()).unwrap();
    e.create_counter("s").unwrap();
    e.add_column("s", "a", ColumnOptions::new(16, 64)).unwrap();
    e.add_column("s", "b", ColumnOptions::new(8, 64)).unwrap();
    for i in 0..300usize {
        let k = format!("f:{i:03}");
        e.set("s", Key::Name(&k), "a", i as u64 + 1).unwrap();
        e.set("s", Key::Name(&k), "b", (i as u64 * 7) % 300)
            .unwrap();
    }
    e.evict(Duration::ZERO).unwrap();
    e.incr("s", Key::Name("f:005"), "a", 10, None).unwrap();
    e.delete("s", Key::Name("f:006")).unwrap();
    e.snapshot().unwrap();
    e.incr("s", Key::Name("f:007"), "a", 100, None).unwrap();
}

/// Cold string-keyed rows written by the first version of the format open whole: the
/// batch's runs, their dead rows, the log replayed over them.
#[test]
fn cold_string_rows_written_by_the_first_format_open_whole() {
    let dir = tempfile::tempdir().unwrap();
    for f in std::fs::read_dir(fixture_dir()).unwrap() {
        let f = f.unwrap();
        if f.file_name() != "LOCK" {
            std::fs::copy(f.path(), dir.path().join(f.file_name())).unwrap();
        }
    }
    for round in 0..2 {
        let e = Engine::open(dir.path(), opts()).unwrap();
        let r = e.recovery();
        assert!(
            r.dropped.is_empty() && r.repaired.is_empty(),
            "{round}: {r:?}"
        );
        for i in 0..300usize {
            let k = format!("f:{i:03}");
            let got = e.get_row("s", Key::Name(&k)).unwrap();
            let want = fixture_want(i).unwrap_or((0, 0));
            assert_eq!(
                got,
                vec![("a".into(), want.0), ("b".into(), want.1)],
                "{round}: {k}"
            );
            assert_eq!(
                e.exists("s", Key::Name(&k)).unwrap(),
                fixture_want(i).is_some()
            );
        }
        let s = stats(&e);
        assert_eq!((s.rows, s.hot_rows), (299, 2), "{round}: {s:?}");
        e.snapshot().unwrap();
    }
}

//! Corruption tests: truncate the log or a snapshot, or flip bytes in them; recovery keeps
//! the valid prefix, never applies what follows a damaged record, and reports the cut.

use std::fs;
use std::path::{Path, PathBuf};

use shardkit_counters::{ColumnOptions, Engine, FsyncPolicy, Key, Options};

fn opts() -> Options {
    Options {
        fsync: FsyncPolicy::Always,
        snapshot_log_bytes: None,
        keep_snapshots: 2,
        ..Options::default()
    }
}

fn files(dir: &Path, prefix: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with(prefix))
        .filter(|p| !p.to_string_lossy().ends_with(".corrupt"))
        .collect();
    v.sort();
    v
}

/// Writes `n` increments (key i % 17 += i % 5 + 1) and returns the log length after the
/// setup and after each increment, with the model state after each.
fn write_log(dir: &Path, n: u64) -> (PathBuf, Vec<u64>, Vec<Vec<u64>>) {
    let e = Engine::open(dir, opts()).unwrap();
    e.create_counter("c").unwrap();
    e.add_column("c", "v", ColumnOptions::new(8, 64)).unwrap();
    let log = files(dir, "log-").pop().unwrap();
    let mut ends = vec![fs::metadata(&log).unwrap().len()];
    let mut states = vec![vec![0u64; 17]];
    let mut cur = vec![0u64; 17];
    for i in 0..n {
        cur[(i % 17) as usize] += i % 5 + 1;
        e.incr("c", Key::Id(i % 17 * 1000), "v", (i % 5 + 1) as i64, None)
            .unwrap();
        ends.push(fs::metadata(&log).unwrap().len());
        states.push(cur.clone());
    }
    e.close().unwrap();
    (log, ends, states)
}

fn read_state(e: &Engine) -> Vec<u64> {
    (0..17u64)
        .map(|k| e.get("c", Key::Id(k * 1000), "v").unwrap())
        .collect()
}

#[test]
fn truncated_log_keeps_every_whole_record() {
    let src = tempfile::tempdir().unwrap();
    let (log, ends, states) = write_log(src.path(), 300);
    let bytes = fs::read(&log).unwrap();
    for cut in (ends[0]..=*ends.last().unwrap()).step_by(37) {
        let dir = tempfile::tempdir().unwrap();
        let copy = dir.path().join(log.file_name().unwrap());
        fs::write(&copy, &bytes[..cut as usize]).unwrap();
        let e = Engine::open(dir.path(), opts()).unwrap();
        let whole = ends.iter().rposition(|&end| end <= cut).unwrap();
        assert_eq!(read_state(&e), states[whole], "cut at {cut}");
        let torn = ends[whole] != cut;
        assert_eq!(
            !e.recovery().dropped.is_empty(),
            torn,
            "cut at {cut}: {:?}",
            e.recovery()
        );
        if torn {
            let d = &e.recovery().dropped[0];
            assert_eq!(d.offset, ends[whole]);
            assert_eq!(d.bytes, cut - ends[whole]);
        }
        // the log goes on from the cut and the next open is clean
        e.incr("c", Key::Id(0), "v", 1, None).unwrap();
        drop(e);
        let e = Engine::open(dir.path(), opts()).unwrap();
        assert!(e.recovery().dropped.is_empty());
        assert_eq!(read_state(&e)[0], states[whole][0] + 1);
    }
}

#[test]
fn flipped_byte_in_log_cuts_from_the_damaged_record() {
    let src = tempfile::tempdir().unwrap();
    let (log, ends, states) = write_log(src.path(), 200);
    let bytes = fs::read(&log).unwrap();
    for pos in (ends[0]..*ends.last().unwrap()).step_by(29) {
        let dir = tempfile::tempdir().unwrap();
        let mut b = bytes.clone();
        b[pos as usize] ^= 0x5A;
        fs::write(dir.path().join(log.file_name().unwrap()), &b).unwrap();
        let e = Engine::open(dir.path(), opts()).unwrap();
        let before = ends.iter().rposition(|&end| end <= pos).unwrap();
        assert_eq!(read_state(&e), states[before], "flip at {pos}");
        let d = &e.recovery().dropped;
        assert_eq!(d.len(), 1, "{d:?}");
        assert_eq!(d[0].offset, ends[before]);
        assert!(!d[0].reason.is_empty());
    }
}

fn snapshot_setup(dir: &Path, keep: usize) -> Vec<u64> {
    let o = Options {
        keep_snapshots: keep,
        ..opts()
    };
    let e = Engine::open(dir, o).unwrap();
    e.create_counter("c").unwrap();
    e.add_column("c", "v", ColumnOptions::new(8, 64)).unwrap();
    let mut cur = vec![0u64; 17];
    for round in 0..3u64 {
        for i in 0..170u64 {
            cur[(i % 17) as usize] += round + 1;
            e.incr("c", Key::Id(i % 17 * 1000), "v", (round + 1) as i64, None)
                .unwrap();
        }
        e.snapshot().unwrap();
    }
    for i in 0..17u64 {
        cur[i as usize] += 1;
        e.incr("c", Key::Id(i * 1000), "v", 1, None).unwrap();
    }
    e.close().unwrap();
    cur
}

#[test]
fn damaged_newest_snapshot_falls_back_to_the_previous_one() {
    for damage in ["flip", "truncate"] {
        let dir = tempfile::tempdir().unwrap();
        let want = snapshot_setup(dir.path(), 2);
        let snaps = files(dir.path(), "snap-");
        assert_eq!(snaps.len(), 2);
        let newest = snaps.last().unwrap();
        let mut b = fs::read(newest).unwrap();
        if damage == "flip" {
            let mid = b.len() / 2;
            b[mid] ^= 0xFF;
        } else {
            b.truncate(b.len() - 5);
        }
        fs::write(newest, &b).unwrap();
        let e = Engine::open(dir.path(), opts()).unwrap();
        assert_eq!(read_state(&e), want, "{damage}");
        let r = e.recovery();
        assert_eq!(r.snapshot.as_deref(), Some(snaps[0].as_path()), "{damage}");
        assert!(
            r.dropped.iter().any(|d| &d.file == newest),
            "{damage}: {r:?}"
        );
    }
}

#[test]
fn damaged_only_snapshot_keeps_its_valid_prefix_and_reports() {
    let dir = tempfile::tempdir().unwrap();
    snapshot_setup(dir.path(), 1);
    let snaps = files(dir.path(), "snap-");
    assert_eq!(snaps.len(), 1);
    let mut b = fs::read(&snaps[0]).unwrap();
    let n = b.len();
    b[n - 20] ^= 0x01;
    fs::write(&snaps[0], &b).unwrap();
    let e = Engine::open(dir.path(), opts()).unwrap();
    let r = e.recovery();
    assert!(r.dropped.iter().any(|d| d.file == snaps[0]), "{r:?}");
    // what is read must not be more than what was written
    let _ = e.stats();
}

#[test]
fn garbage_files_do_not_panic() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(
        dir.path().join("snap-00000000000000000009.snap"),
        b"SKCSNAP1garbage",
    )
    .unwrap();
    fs::write(
        dir.path().join("log-00000000000000000001.log"),
        [0xFFu8; 100],
    )
    .unwrap();
    let e = Engine::open(dir.path(), opts()).unwrap();
    assert!(!e.recovery().dropped.is_empty());
    e.create_counter("c").unwrap();
}

//! SIGKILL while the segment store writes and folds: a child process (this test binary,
//! running the ignored `writer_child`) inserts batches of links and folds the id and
//! URL indexes into runs every few batches, printing each batch it has been answered
//! for; the parent kills it at a random moment, reopens the store and checks that
//! every acknowledged link is there by code, by id, by URL and in the listing, that
//! nothing is there twice, and that no run file is left that the store does not name.

use shardkit_links::conformance::sample_link;
use shardkit_links::{segments_dir, Codec, Feistel, Link, LinkStore, SegmentLinkStore};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const PER_BATCH: u64 = 500;

fn codec() -> Codec {
    Codec::scrambled(Feistel::new([9; 16]))
}

fn link(n: u64) -> Link {
    let code = codec().encode((n % 62) as u8, n / 62).unwrap();
    sample_link(
        1 + n,
        &code,
        &format!("https://crash.example/{}", n % 7_000),
    )
}

fn batch(b: u64) -> Vec<Link> {
    (b * PER_BATCH..(b + 1) * PER_BATCH).map(link).collect()
}

#[test]
#[ignore = "the child process of sigkill_during_writes_and_folds_loses_nothing_acknowledged"]
fn writer_child() {
    let dir = std::env::var("FOLD_CRASH_DIR").unwrap();
    let first: u64 = std::env::var("FOLD_CRASH_FIRST").unwrap().parse().unwrap();
    let store =
        SegmentLinkStore::open(Path::new(&dir).join("links.redb"), codec(), 1 << 20).unwrap();
    for b in first.. {
        store.insert_batch(&batch(b)).unwrap();
        println!("acked {b}");
        if b % 3 == 2 {
            store.fold_now().unwrap();
        }
    }
}

/// A small generator for the kill times (no dependency for one number).
fn next(seed: &mut u64) -> u64 {
    *seed ^= *seed << 13;
    *seed ^= *seed >> 7;
    *seed ^= *seed << 17;
    *seed
}

#[test]
fn sigkill_during_writes_and_folds_loses_nothing_acknowledged() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("links.redb");
    let mut seed = u64::from(std::process::id()) | 1;
    let mut first = 0u64;
    let deadline = Instant::now() + Duration::from_secs(60);
    for round in 0..8 {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "writer_child", "--ignored", "--nocapture"])
            .env("FOLD_CRASH_DIR", dir.path())
            .env("FOLD_CRASH_FIRST", first.to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut out = BufReader::new(child.stdout.take().unwrap());
        // Wait for the child's first answer, then let it run a random while longer.
        let mut line = String::new();
        let mut acked = None;
        while out.read_line(&mut line).unwrap() > 0 {
            if let Some(b) = line.trim().strip_prefix("acked ") {
                acked = Some(b.parse::<u64>().unwrap());
                break;
            }
            line.clear();
        }
        assert!(acked.is_some(), "round {round}: the child answered nothing");
        std::thread::sleep(Duration::from_millis(20 + next(&mut seed) % 400));
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        for line in out.lines() {
            if let Some(b) = line.unwrap().trim().strip_prefix("acked ") {
                acked = Some(b.parse::<u64>().unwrap());
            }
        }
        let acked = acked.unwrap();

        let store = SegmentLinkStore::open(&path, codec(), 1 << 20).unwrap();
        // A batch committed but not yet answered may be there too, whole or not at all.
        let stored = if store.get(1 + (acked + 1) * PER_BATCH).unwrap().is_some() {
            acked + 2
        } else {
            acked + 1
        };
        assert_eq!(store.count().unwrap(), stored * PER_BATCH, "round {round}");
        for _ in 0..300 {
            let want = link(next(&mut seed) % (stored * PER_BATCH));
            assert_eq!(store.resolve(&want.code).unwrap().as_ref(), Some(&want));
            assert_eq!(
                store.get(want.id).unwrap().as_ref(),
                Some(&want),
                "round {round}"
            );
            let reused = store.find_reusable(&want.url, None).unwrap().map(|l| l.id);
            assert_eq!(reused, Some(1 + (want.id - 1) % 7_000), "round {round}");
        }
        let listed = store.list(None, None, usize::MAX).unwrap();
        assert_eq!(listed.len() as u64, stored * PER_BATCH, "round {round}");
        assert!(listed.windows(2).all(|w| w[0].id < w[1].id));
        let stats = store.fold_stats();
        assert!(stats.id_pairs <= stored * PER_BATCH && stats.url_pairs <= stored * PER_BATCH);
        let files = std::fs::read_dir(segments_dir(&path))
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .path()
                    .extension()
                    .is_some_and(|x| x == "run")
            })
            .count() as u64;
        assert_eq!(
            files, stats.runs,
            "round {round}: run files the store does not name"
        );
        drop(store);
        first = stored;
        if Instant::now() > deadline {
            break;
        }
    }
    assert!(
        first >= 10,
        "too few batches written to test anything: {first}"
    );
}

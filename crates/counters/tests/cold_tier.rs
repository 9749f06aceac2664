//! The cold tier: partitions moved to disk and read, written, deleted and
//! recovered there, against a model; damaged blocks named by their id range while the
//! rest is served; cold files nobody needs deleted.

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use proptest::prelude::*;
use shardkit_counters::{ColumnOptions, Engine, Error, Key, Options};

const HIGHS: [u64; 3] = [0x0100_0001, 0x0100_0002, 0x0200_0007];

fn opts() -> Options {
    Options {
        snapshot_log_bytes: None,
        ..Options::default()
    }
}

fn id(high: u64, low: u64) -> u64 {
    (high << 32) | low
}

/// A counter `c` with column `a` (8 bits inline, so values from 255 on overflow) and
/// `b` (16 bits), and 300 rows in each of the [`HIGHS`]: enough for dense partitions.
fn filled(dir: &Path) -> Engine {
    let e = Engine::open(dir, opts()).unwrap();
    e.create_counter("c").unwrap();
    e.add_column("c", "a", ColumnOptions::new(8, 64)).unwrap();
    e.add_column("c", "b", ColumnOptions::new(16, 64)).unwrap();
    for h in HIGHS {
        let items: Vec<(Key, i64)> = (0..300u64)
            .map(|i| (Key::Id(id(h, i * 3)), (i % 7 + 1) as i64))
            .collect();
        assert_eq!(e.incr_batch("c", "a", &items).unwrap(), 0);
        let items: Vec<(Key, i64)> = (0..300u64)
            .map(|i| (Key::Id(id(h, i * 3)), (i % 5) as i64 * 1000))
            .collect();
        assert_eq!(e.incr_batch("c", "b", &items).unwrap(), 0);
    }
    // An overflow value in a row that goes cold.
    e.set("c", Key::Id(id(HIGHS[0], 3)), "a", 100_000).unwrap();
    e
}

/// The one cold file in `dir`.
fn cold_file(dir: &Path) -> std::path::PathBuf {
    let files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            name.starts_with("cold-") && name.ends_with(".blk")
        })
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    files[0].clone()
}

/// Where the blocks of a cold file end and its index begins (from its footer).
fn blocks_end(bytes: &[u8]) -> usize {
    let footer = &bytes[bytes.len() - 24..];
    assert_eq!(
        &footer[16..],
        b"SKCOLDIX",
        "a cold file ends with its index's footer"
    );
    u64::from_le_bytes(footer[..8].try_into().unwrap()) as usize
}

/// Every value `filled` wrote (after the overflow `set`), as `get_row` gives it.
fn check_filled(e: &Engine) {
    for h in HIGHS {
        for i in 0..300u64 {
            let a = if h == HIGHS[0] && i == 1 {
                100_000
            } else {
                i % 7 + 1
            };
            let row = e.get_row("c", Key::Id(id(h, i * 3))).unwrap();
            assert_eq!(row, vec![("a".into(), a), ("b".into(), (i % 5) * 1000)]);
        }
    }
}

fn stats(e: &Engine) -> shardkit_counters::CounterStats {
    e.stats()
        .counters
        .into_iter()
        .find(|c| c.name == "c")
        .unwrap()
}

#[test]
fn evicted_rows_read_the_same_and_only_the_index_stays_in_ram() {
    let dir = tempfile::tempdir().unwrap();
    let e = filled(dir.path());
    let before = stats(&e);
    assert_eq!(before.rows, 900);
    let ev = e.evict(Duration::ZERO).unwrap();
    assert_eq!(ev.partitions, 3, "{ev:?}");
    assert_eq!(ev.rows, 900);
    let after = stats(&e);
    assert_eq!((after.rows, after.hot_rows, after.cold_rows), (900, 0, 900));
    assert!(
        after.bytes_disk > 0 && after.bytes_disk < 900 * 8,
        "{after:?}"
    );
    assert!(
        after.bytes < before.bytes,
        "{} -> {}",
        before.bytes,
        after.bytes
    );

    assert_eq!(e.get("c", Key::Id(id(HIGHS[0], 3)), "a").unwrap(), 100_000);
    for h in HIGHS {
        for i in [0u64, 1, 150, 299] {
            let want_b = (i % 5) * 1000;
            let row = e.get_row("c", Key::Id(id(h, i * 3))).unwrap();
            let want_a = if h == HIGHS[0] && i == 1 {
                100_000
            } else {
                i % 7 + 1
            };
            assert_eq!(row, vec![("a".into(), want_a), ("b".into(), want_b)]);
        }
        // Absent ids inside and outside the partition's range.
        assert_eq!(e.get("c", Key::Id(id(h, 1)), "a").unwrap(), 0);
        assert!(!e.exists("c", Key::Id(id(h, 1))).unwrap());
        assert!(e.exists("c", Key::Id(id(h, 3))).unwrap());
        assert_eq!(e.get("c", Key::Id(id(h, 5_000_000)), "b").unwrap(), 0);
    }
    let s = stats(&e);
    assert!(s.cold_reads > 0, "{s:?}");
    let reads = s.cold_reads;
    e.get("c", Key::Id(id(HIGHS[1], 0)), "a").unwrap();
    let s = stats(&e);
    assert_eq!(
        s.cold_reads, reads,
        "a second read of a block comes from the cache"
    );
    assert!(s.block_cache_hits > 0);
    assert_eq!(
        e.row_keys("c", 0).unwrap().len()
            + (1..32)
                .map(|s| e.row_keys("c", s).unwrap().len())
                .sum::<usize>(),
        900
    );
}

#[test]
fn writes_deletes_and_new_columns_on_cold_rows() {
    let dir = tempfile::tempdir().unwrap();
    let e = filled(dir.path());
    e.evict(Duration::ZERO).unwrap();
    e.add_column(
        "c",
        "late",
        ColumnOptions {
            bits: 16,
            max_bits: 64,
            default: 5,
        },
    )
    .unwrap();
    assert_eq!(e.get("c", Key::Id(id(HIGHS[2], 0)), "late").unwrap(), 5);
    // A write brings its partition back, the others stay cold.
    assert_eq!(
        e.incr("c", Key::Id(id(HIGHS[0], 6)), "a", 10, None)
            .unwrap(),
        13
    );
    let s = stats(&e);
    assert_eq!((s.hot_rows, s.cold_rows), (300, 600));
    assert_eq!(e.get("c", Key::Id(id(HIGHS[0], 3)), "a").unwrap(), 100_000);
    assert!(e.delete("c", Key::Id(id(HIGHS[1], 9))).unwrap());
    assert!(!e.delete("c", Key::Id(id(HIGHS[1], 10))).unwrap());
    assert_eq!(e.get("c", Key::Id(id(HIGHS[1], 9)), "a").unwrap(), 0);
    e.incr("c", Key::Id(id(HIGHS[2], 1)), "late", 1, None)
        .unwrap();
    assert_eq!(e.get("c", Key::Id(id(HIGHS[2], 1)), "late").unwrap(), 6);
    assert_eq!(e.get("c", Key::Id(id(HIGHS[2], 0)), "late").unwrap(), 5);
    // Decrement below zero of a cold row is refused and changes nothing.
    e.evict(Duration::ZERO).unwrap();
    assert!(matches!(
        e.incr("c", Key::Id(id(HIGHS[2], 0)), "a", -100, None),
        Err(Error::Negative { .. })
    ));
    assert_eq!(e.get("c", Key::Id(id(HIGHS[2], 0)), "a").unwrap(), 1);
    // Idempotent increments on a cold row count once.
    e.evict(Duration::ZERO).unwrap();
    assert_eq!(
        e.incr("c", Key::Id(id(HIGHS[1], 0)), "b", 7, Some("t1"))
            .unwrap(),
        7
    );
    e.evict(Duration::ZERO).unwrap();
    assert_eq!(
        e.incr("c", Key::Id(id(HIGHS[1], 0)), "b", 7, Some("t1"))
            .unwrap(),
        7
    );
}

#[test]
fn snapshots_name_cold_batches_and_recovery_keeps_them_cold() {
    let dir = tempfile::tempdir().unwrap();
    {
        let e = filled(dir.path());
        e.evict(Duration::ZERO).unwrap();
        e.snapshot().unwrap();
        // After the snapshot: a write to a cold row (replayed from the log on open).
        e.incr("c", Key::Id(id(HIGHS[1], 3)), "b", 1, None).unwrap();
        e.delete("c", Key::Id(id(HIGHS[2], 3))).unwrap();
        e.close().unwrap();
    }
    let e = Engine::open(dir.path(), opts()).unwrap();
    assert!(
        e.recovery().dropped.is_empty(),
        "{:?}",
        e.recovery().dropped
    );
    let s = stats(&e);
    assert_eq!((s.rows, s.hot_rows, s.cold_rows), (899, 599, 300), "{s:?}");
    assert_eq!(e.get("c", Key::Id(id(HIGHS[0], 3)), "a").unwrap(), 100_000);
    assert_eq!(e.get("c", Key::Id(id(HIGHS[1], 3)), "b").unwrap(), 1001);
    assert!(!e.exists("c", Key::Id(id(HIGHS[2], 3))).unwrap());
}

#[test]
fn cold_files_no_snapshot_or_partition_needs_are_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let cold_files = |d: &Path| {
        std::fs::read_dir(d)
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .file_name()
                    .to_string_lossy()
                    .starts_with("cold-")
            })
            .count()
    };
    let e = filled(dir.path());
    e.evict(Duration::ZERO).unwrap();
    assert_eq!(cold_files(dir.path()), 1);
    e.snapshot().unwrap();
    // Every partition back in RAM, and two snapshots later nobody needs the batch.
    for h in HIGHS {
        e.incr("c", Key::Id(id(h, 0)), "a", 1, None).unwrap();
    }
    e.snapshot().unwrap();
    assert_eq!(
        cold_files(dir.path()),
        1,
        "the older kept snapshot still names it"
    );
    e.incr("c", Key::Id(id(HIGHS[0], 0)), "a", 1, None).unwrap();
    e.snapshot().unwrap();
    assert_eq!(cold_files(dir.path()), 0);
    // A batch a crash left unnamed (no snapshot, no partition) goes at the next open.
    e.evict(Duration::ZERO).unwrap();
    drop(e);
    assert_eq!(cold_files(dir.path()), 1);
    let e = Engine::open(dir.path(), opts()).unwrap();
    assert_eq!(cold_files(dir.path()), 0);
    assert_eq!(e.get("c", Key::Id(id(HIGHS[0], 0)), "a").unwrap(), 3);
}

#[test]
fn a_damaged_block_is_named_by_its_id_range_and_the_rest_is_served() {
    let dir = tempfile::tempdir().unwrap();
    {
        let e = filled(dir.path());
        e.evict(Duration::ZERO).unwrap();
        e.snapshot().unwrap();
    }
    let file = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("cold-")
        })
        .unwrap();
    let mut bytes = std::fs::read(&file).unwrap();
    let len = blocks_end(&bytes);
    // Partitions are written in stripe order; flip bytes in the middle of the blocks and
    // find which partition that hit by reading each.
    for b in &mut bytes[len / 2..len / 2 + 8] {
        *b ^= 0x5A;
    }
    std::fs::write(&file, &bytes).unwrap();
    let e = Engine::open(dir.path(), opts()).unwrap();
    let mut damaged = Vec::new();
    let mut served = 0;
    for h in HIGHS {
        match e.get("c", Key::Id(id(h, 3)), "b") {
            Ok(v) => {
                assert_eq!(v, 1000);
                served += 1;
            }
            Err(err) => {
                let text = err.to_string();
                let (lo, hi) = (id(h, 0), id(h, 299 * 3));
                assert!(text.contains(&format!("{lo}..={hi}")), "{text}");
                assert!(matches!(err, Error::ColdBlock { .. }));
                // Writes to it are refused too, and change nothing.
                assert!(e.incr("c", Key::Id(id(h, 3)), "b", 1, None).is_err());
                damaged.push(h);
            }
        }
    }
    assert_eq!(damaged.len(), 1, "one block was damaged");
    assert_eq!(served, 2);
    // Rows in RAM are unaffected.
    e.incr("c", Key::Id(id(HIGHS[0] + 100, 1)), "a", 1, None)
        .unwrap();
}

/// A snapshot names each cold partition in a few bytes; the filters and block entries
/// stay in the batch file, written once (before, every snapshot carried them again: 1.3
/// GB each at a billion rows).
#[test]
fn snapshots_name_cold_partitions_and_their_index_stays_in_the_batch() {
    let dir = tempfile::tempdir().unwrap();
    let rows = 200_000u64;
    {
        let e = Engine::open(dir.path(), opts()).unwrap();
        e.create_counter("c").unwrap();
        e.add_column("c", "a", ColumnOptions::new(16, 64)).unwrap();
        for h in 0..4u64 {
            let items: Vec<(Key, i64)> = (0..rows / 4)
                .map(|i| (Key::Id(id(0x0300_0000 + h, i * 7)), (i % 9 + 1) as i64))
                .collect();
            e.incr_batch("c", "a", &items).unwrap();
        }
        assert_eq!(e.evict(Duration::ZERO).unwrap().rows, rows);
        for _ in 0..2 {
            let snap = e.snapshot().unwrap();
            let len = std::fs::metadata(&snap.path).unwrap().len();
            // The filters alone are 10 bits a row: 250,000 bytes here.
            assert!(len < 2_000, "snapshot of {len} bytes for {rows} cold rows");
        }
        let bytes = std::fs::read(cold_file(dir.path())).unwrap();
        let index = bytes.len() - blocks_end(&bytes);
        assert!(index > rows as usize * 10 / 8, "index of {index} bytes");
        // `bytes_disk` counts blocks and index entries (not the footer and the count).
        let s = stats(&e);
        let gap = bytes.len() as u64 - s.bytes_disk;
        assert!((24..=34).contains(&gap), "{s:?}, file of {}", bytes.len());
    }
    let e = Engine::open(dir.path(), opts()).unwrap();
    assert!(e.recovery().dropped.is_empty(), "{:?}", e.recovery());
    assert!(e.recovery().repaired.is_empty(), "{:?}", e.recovery());
    let s = stats(&e);
    assert_eq!((s.rows, s.cold_rows), (rows, rows), "{s:?}");
    for h in 0..4u64 {
        for i in [0, 1, 4_999, rows / 4 - 1] {
            let key = Key::Id(id(0x0300_0000 + h, i * 7));
            assert_eq!(e.get("c", key, "a").unwrap(), i % 9 + 1);
            assert!(!e
                .exists("c", Key::Id(id(0x0300_0000 + h, i * 7 + 1)))
                .unwrap());
        }
    }
}

/// A cold file whose own index (or its footer) is damaged: recovery rebuilds the index
/// from the blocks, loses nothing and says so; the next snapshot carries the rebuilt
/// index, so the file is never needed whole again.
#[test]
fn a_damaged_cold_index_is_rebuilt_from_the_blocks_and_nothing_is_lost() {
    for (what, at) in [("index", 0.5f64), ("footer", 1.0)] {
        let dir = tempfile::tempdir().unwrap();
        {
            let e = filled(dir.path());
            e.evict(Duration::ZERO).unwrap();
            e.snapshot().unwrap();
        }
        let file = cold_file(dir.path());
        let mut bytes = std::fs::read(&file).unwrap();
        let (start, end) = (blocks_end(&bytes), bytes.len());
        let i = (start + ((end - start) as f64 * at) as usize).min(end - 4);
        for b in &mut bytes[i..i + 4] {
            *b ^= 0xA5;
        }
        std::fs::write(&file, &bytes).unwrap();
        {
            let e = Engine::open(dir.path(), opts()).unwrap();
            let r = e.recovery();
            assert!(r.dropped.is_empty(), "{what}: {r:?}");
            assert_eq!(r.repaired.len(), 1, "{what}: {r:?}");
            assert!(r.repaired[0].contains("rebuilt from its blocks"), "{r:?}");
            assert_eq!(stats(&e).cold_rows, 900);
            check_filled(&e);
            e.snapshot().unwrap();
        }
        let e = Engine::open(dir.path(), opts()).unwrap();
        let r = e.recovery();
        assert!(
            r.dropped.is_empty() && r.repaired.is_empty(),
            "{what}: {r:?}"
        );
        assert_eq!(stats(&e).cold_rows, 900);
        check_filled(&e);
    }
}

/// Index and one block damaged: the partition that block belonged to is reported lost
/// with its id range; the others are rebuilt and served.
#[test]
fn a_damaged_cold_index_and_block_lose_only_that_blocks_partition() {
    let dir = tempfile::tempdir().unwrap();
    {
        let e = filled(dir.path());
        e.evict(Duration::ZERO).unwrap();
        e.snapshot().unwrap();
    }
    let file = cold_file(dir.path());
    let mut bytes = std::fs::read(&file).unwrap();
    let blocks = blocks_end(&bytes);
    let len = bytes.len();
    // In the middle of the blocks (inside a block's payload), and in the index.
    for i in [blocks / 2, blocks + (len - blocks) / 2] {
        for b in &mut bytes[i..i + 4] {
            *b ^= 0x5A;
        }
    }
    std::fs::write(&file, &bytes).unwrap();
    let e = Engine::open(dir.path(), opts()).unwrap();
    let r = e.recovery();
    assert_eq!(r.dropped.len(), 1, "{r:?}");
    assert_eq!(r.repaired.len(), 1, "{r:?}");
    let lost = HIGHS
        .iter()
        .copied()
        .filter(|&h| {
            r.dropped[0]
                .reason
                .contains(&format!("{}..={}", id(h, 0), id(h, 299 * 3)))
        })
        .collect::<Vec<_>>();
    assert_eq!(lost.len(), 1, "{:?}", r.dropped);
    assert!(r.dropped[0].reason.contains("300 rows"), "{:?}", r.dropped);
    assert_eq!(stats(&e).cold_rows, 600);
    for h in HIGHS {
        let got = e.get("c", Key::Id(id(h, 3)), "b").unwrap();
        assert_eq!(got, if h == lost[0] { 0 } else { 1000 });
    }
}

/// A data directory written before cold files held their own index (main at 123c6c2:
/// `filled`, evicted, snapshotted, closed): its snapshot carries the index (frame `5`),
/// it opens whole, and a snapshot taken now carries it again (the file has no index of
/// its own to point at).
#[test]
fn a_cold_tier_written_before_batch_indexes_opens_whole() {
    let dir = tempfile::tempdir().unwrap();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/cold-123c6c2");
    for f in std::fs::read_dir(&fixture).unwrap() {
        let f = f.unwrap();
        std::fs::copy(f.path(), dir.path().join(f.file_name())).unwrap();
    }
    for round in 0..2 {
        let e = Engine::open(dir.path(), opts()).unwrap();
        let r = e.recovery();
        assert!(
            r.dropped.is_empty() && r.repaired.is_empty(),
            "{round}: {r:?}"
        );
        let s = stats(&e);
        assert_eq!((s.rows, s.cold_rows), (900, 900), "{round}: {s:?}");
        check_filled(&e);
        e.snapshot().unwrap();
    }
}

#[derive(Debug, Clone)]
enum Op {
    Fill {
        high: usize,
    },
    Incr {
        key: usize,
        col: usize,
        delta: i64,
    },
    /// One `incr_run` over several keys (pool keys and fresh ones, whose inserts grow
    /// and promote partitions in the middle of a run's groups).
    Run {
        col: usize,
        items: Vec<(usize, i64)>,
    },
    Set {
        key: usize,
        col: usize,
        value: u64,
    },
    Delete {
        key: usize,
    },
    Get {
        key: usize,
        col: usize,
    },
    AddColumn {
        default: u64,
    },
    Evict,
    Reopen {
        snapshot: bool,
    },
}

fn key_pool() -> Vec<u64> {
    let mut v = Vec::new();
    for h in HIGHS {
        for i in 0..6u64 {
            v.push(id(h, i * 3 + 1));
        }
        v.push(id(h, 0xFFFF_FFFF));
    }
    v.push(0x9E37_79B9_7F4A_7C15);
    v
}

/// Key `k` of a [`Op::Run`]: the pool's below 22, else one of 400 fresh ids in two
/// highs of their own (200 each: past the 128 rows that promote a group to a dense
/// partition).
fn run_key(pool: &[u64], k: usize) -> u64 {
    match pool.get(k) {
        Some(&id) => id,
        None => id(
            0x0300_0000 + (k as u64 - 22) / 200,
            (k as u64 - 22) % 200 * 5,
        ),
    }
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        2 => (0usize..3).prop_map(|high| Op::Fill { high }),
        8 => (0usize..22, 0usize..4, prop_oneof![-300i64..300, -70_000i64..70_000])
            .prop_map(|(key, col, delta)| Op::Incr { key, col, delta }),
        3 => (
            0usize..4,
            proptest::collection::vec(
                (prop_oneof![0usize..22, 22usize..422], prop_oneof![-300i64..300, 1i64..3]),
                1..100
            )
        )
            .prop_map(|(col, items)| Op::Run { col, items }),
        3 => (0usize..22, 0usize..4, prop_oneof![0u64..3, 0u64..100_000])
            .prop_map(|(key, col, value)| Op::Set { key, col, value }),
        2 => (0usize..22).prop_map(|key| Op::Delete { key }),
        5 => (0usize..22, 0usize..4).prop_map(|(key, col)| Op::Get { key, col }),
        1 => (0u64..3).prop_map(|default| Op::AddColumn { default }),
        3 => Just(Op::Evict),
        1 => any::<bool>().prop_map(|snapshot| Op::Reopen { snapshot }),
    ]
}

/// Rows by id; each row's values per column (shorter rows: defaults).
struct Model {
    defaults: Vec<u64>,
    rows: HashMap<u64, Vec<u64>>,
}

impl Model {
    /// Checks what the engine answered to adding `delta` to column `c` of row `id`
    /// against the model (a new value, or refused below zero), and applies it.
    fn check_incr(
        &mut self,
        id: u64,
        c: usize,
        delta: i64,
        got: Result<u64, Error>,
    ) -> Result<(), TestCaseError> {
        match self.get(id, c).checked_add_signed(delta) {
            Some(v) => {
                prop_assert_eq!(got.unwrap(), v);
                self.put(id, c, v);
            }
            None => {
                let refused = matches!(got, Err(Error::Negative { .. }));
                prop_assert!(refused);
            }
        }
        Ok(())
    }

    fn get(&self, id: u64, c: usize) -> u64 {
        self.rows
            .get(&id)
            .and_then(|r| r.get(c).copied())
            .unwrap_or(self.defaults[c])
    }
    fn put(&mut self, id: u64, c: usize, v: u64) {
        let defaults = self.defaults.clone();
        let row = self.rows.entry(id).or_insert_with(|| defaults.clone());
        let have = row.len();
        row.extend_from_slice(&defaults[have..]);
        row[c] = v;
        if row.iter().zip(&defaults).all(|(a, b)| a == b) {
            self.rows.remove(&id);
        }
    }
}

fn run(ops: Vec<Op>) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().unwrap();
    let mut e = Engine::open(dir.path(), opts()).unwrap();
    e.create_counter("c").unwrap();
    e.add_column("c", "c0", ColumnOptions::new(8, 64)).unwrap();
    e.add_column("c", "c1", ColumnOptions::new(16, 64)).unwrap();
    let mut m = Model {
        defaults: vec![0, 0],
        rows: HashMap::new(),
    };
    let keys = key_pool();
    let cname = |c: usize| format!("c{c}");
    for op in ops {
        match op {
            Op::Fill { high } => {
                let items: Vec<(Key, i64)> = (0..200u64)
                    .map(|i| (Key::Id(id(HIGHS[high], 1000 + i)), 1))
                    .collect();
                e.incr_batch("c", "c0", &items).unwrap();
                for i in 0..200u64 {
                    let k = id(HIGHS[high], 1000 + i);
                    let v = m.get(k, 0) + 1;
                    m.put(k, 0, v);
                }
            }
            Op::Incr { key, col, delta } => {
                let col = col % m.defaults.len();
                let k = keys[key];
                let got = e.incr("c", Key::Id(k), &cname(col), delta, None);
                m.check_incr(k, col, delta, got)?;
            }
            Op::Run { col, items } => {
                let col = col % m.defaults.len();
                let ids: Vec<u64> = items.iter().map(|&(k, _)| run_key(&keys, k)).collect();
                let run: Vec<(Key, i64)> = ids
                    .iter()
                    .zip(&items)
                    .map(|(&k, &(_, d))| (Key::Id(k), d))
                    .collect();
                let mut out = Vec::new();
                let pending = e.incr_run("c", &cname(col), &run, &mut out).unwrap();
                e.commit(pending).unwrap();
                prop_assert_eq!(out.len(), run.len());
                for ((&k, &(_, delta)), got) in ids.iter().zip(&items).zip(out) {
                    m.check_incr(k, col, delta, got)?;
                }
            }
            Op::Set { key, col, value } => {
                let col = col % m.defaults.len();
                e.set("c", Key::Id(keys[key]), &cname(col), value).unwrap();
                m.put(keys[key], col, value);
            }
            Op::Delete { key } => {
                let stored = e.delete("c", Key::Id(keys[key])).unwrap();
                prop_assert_eq!(stored, m.rows.remove(&keys[key]).is_some());
            }
            Op::Get { key, col } => {
                let col = col % m.defaults.len();
                prop_assert_eq!(
                    e.get("c", Key::Id(keys[key]), &cname(col)).unwrap(),
                    m.get(keys[key], col)
                );
            }
            Op::AddColumn { default } => {
                let c = m.defaults.len();
                if c < 4 {
                    e.add_column(
                        "c",
                        &cname(c),
                        ColumnOptions {
                            bits: 16,
                            max_bits: 64,
                            default,
                        },
                    )
                    .unwrap();
                    m.defaults.push(default);
                }
            }
            Op::Evict => {
                e.evict(Duration::ZERO).unwrap();
            }
            Op::Reopen { snapshot } => {
                if snapshot {
                    e.snapshot().unwrap();
                }
                e.close().unwrap();
                e = Engine::open(dir.path(), opts()).unwrap();
                prop_assert!(e.recovery().dropped.is_empty());
            }
        }
    }
    // Everything, hot or cold, matches the model at the end.
    let s = e.stats().counters.into_iter().next().unwrap();
    prop_assert_eq!(s.rows as usize, m.rows.len());
    for (k, row) in &m.rows {
        for c in 0..m.defaults.len() {
            prop_assert_eq!(
                e.get("c", Key::Id(*k), &cname(c)).unwrap(),
                row.get(c).copied().unwrap_or(m.defaults[c])
            );
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]
    #[test]
    fn engine_matches_model_across_hot_and_cold(ops in proptest::collection::vec(op(), 1..80)) {
        run(ops)?;
    }
}

#[test]
fn past_max_memory_the_least_recently_written_partitions_go_cold() {
    let dir = tempfile::tempdir().unwrap();
    drop(filled(dir.path()));
    // A limit far above the table: nothing moves (a pass runs every second).
    let roomy = Engine::open(
        dir.path(),
        Options {
            max_memory: Some(1 << 30),
            ..opts()
        },
    )
    .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(stats(&roomy).cold_rows, 0);
    drop(roomy);
    // A limit below what the rows need: every dense partition goes, read back whole.
    let tight = Engine::open(
        dir.path(),
        Options {
            max_memory: Some(1),
            ..opts()
        },
    )
    .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while stats(&tight).cold_rows < 900 {
        assert!(std::time::Instant::now() < deadline, "{:?}", stats(&tight));
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(stats(&tight).hot_rows, 0);
    assert_eq!(
        tight.get("c", Key::Id(id(HIGHS[0], 3)), "a").unwrap(),
        100_000
    );
    assert_eq!(tight.get("c", Key::Id(id(HIGHS[2], 6)), "b").unwrap(), 2000);
}

#[test]
fn a_missing_cold_file_is_reported_at_open_with_the_rows_it_held() {
    let dir = tempfile::tempdir().unwrap();
    {
        let e = filled(dir.path());
        e.evict(Duration::ZERO).unwrap();
        e.snapshot().unwrap();
        e.incr("c", Key::Id(id(HIGHS[0] + 100, 1)), "a", 4, None)
            .unwrap();
    }
    for entry in std::fs::read_dir(dir.path()).unwrap() {
        let p = entry.unwrap().path();
        if p.file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("cold-")
        {
            std::fs::remove_file(p).unwrap();
        }
    }
    let e = Engine::open(dir.path(), opts()).unwrap();
    let lost: Vec<_> = e
        .recovery()
        .dropped
        .iter()
        .filter(|d| d.reason.contains("missing"))
        .collect();
    assert_eq!(lost.len(), 3, "{:?}", e.recovery().dropped);
    let (lo, hi) = (id(HIGHS[1], 0), id(HIGHS[1], 299 * 3));
    assert!(
        lost.iter()
            .any(|d| d.reason.contains(&format!("{lo}..={hi}"))),
        "{lost:?}"
    );
    // What the log holds after the snapshot is there.
    assert_eq!(e.get("c", Key::Id(id(HIGHS[0] + 100, 1)), "a").unwrap(), 4);
}

#[test]
fn writers_racing_evictions_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let e = std::sync::Arc::new(filled(dir.path()));
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let evictor = {
        let (e, stop) = (e.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut passes = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) && passes < 100_000 {
                e.evict(Duration::ZERO).unwrap();
                passes += 1;
            }
        })
    };
    // Three writers, each adding 1 to its own column-`b` rows of every partition in turn:
    // bounded in count, and each knows exactly what it added.
    let writers: Vec<_> = (0..3u64)
        .map(|t| {
            let e = e.clone();
            std::thread::spawn(move || {
                let mut added: HashMap<u64, u64> = HashMap::new();
                let mut x = 0x9E37_79B9u64 + t;
                for _ in 0..2_000 {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let row = id(HIGHS[(x % 3) as usize], ((x >> 8) % 100 * 3 + t) * 3);
                    e.incr("c", Key::Id(row), "b", 1, None).unwrap();
                    *added.entry(row).or_default() += 1;
                }
                added
            })
        })
        .collect();
    let mut added: HashMap<u64, u64> = HashMap::new();
    for w in writers {
        for (row, n) in w.join().unwrap() {
            *added.entry(row).or_default() += n;
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    evictor.join().unwrap();
    e.evict(Duration::ZERO).unwrap();
    let check = |e: &Engine| {
        for (row, n) in &added {
            let i = (row & 0xFFFF_FFFF) / 3;
            let base = (i % 5) * 1000;
            assert_eq!(
                e.get("c", Key::Id(*row), "b").unwrap(),
                base + n,
                "row {row}"
            );
        }
    };
    check(&e);
    e.snapshot().unwrap();
    drop(std::sync::Arc::try_unwrap(e).ok().unwrap());
    check(&Engine::open(dir.path(), opts()).unwrap());
}

#[test]
fn a_big_eviction_goes_out_in_several_bounded_batches_and_reads_back_whole() {
    // 3.2 M rows of two columns: more copies (24 bytes a row) than one batch holds.
    let dir = tempfile::tempdir().unwrap();
    let rows = 3_200_000u64;
    let row = |i: u64| id(0x0100_0000 + i / 50_000, i % 50_000 * 3);
    {
        let e = Engine::open(dir.path(), opts()).unwrap();
        e.create_counter("c").unwrap();
        e.add_column("c", "a", ColumnOptions::new(8, 64)).unwrap();
        e.add_column("c", "b", ColumnOptions::new(16, 64)).unwrap();
        for chunk in (0..rows).collect::<Vec<_>>().chunks(100_000) {
            let a: Vec<(Key, i64)> = chunk
                .iter()
                .map(|&i| (Key::Id(row(i)), (i % 7 + 1) as i64))
                .collect();
            let b: Vec<(Key, i64)> = chunk
                .iter()
                .map(|&i| (Key::Id(row(i)), (i % 5) as i64 * 1000))
                .collect();
            assert_eq!(e.incr_batch("c", "a", &a).unwrap(), 0);
            assert_eq!(e.incr_batch("c", "b", &b).unwrap(), 0);
        }
        let ev = e.evict(Duration::ZERO).unwrap();
        assert_eq!(ev.rows as u64, rows);
        assert_eq!(stats(&e).hot_rows, 0);
        e.snapshot().unwrap();
    }
    let batches = std::fs::read_dir(dir.path())
        .unwrap()
        .filter(|f| {
            f.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .starts_with("cold-")
        })
        .count();
    assert!(batches >= 2, "one batch of {rows} rows: {batches} files");
    let e = Engine::open(dir.path(), opts()).unwrap();
    assert!(e.recovery().dropped.is_empty(), "{:?}", e.recovery());
    assert_eq!((stats(&e).rows, stats(&e).cold_rows), (rows, rows));
    for i in (0..rows).step_by(997).chain([rows - 1]) {
        assert_eq!(
            e.get("c", Key::Id(row(i)), "a").unwrap(),
            i % 7 + 1,
            "row {i}"
        );
        assert_eq!(
            e.get("c", Key::Id(row(i)), "b").unwrap(),
            i % 5 * 1000,
            "row {i}"
        );
    }
}

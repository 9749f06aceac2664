//! String-keyed rows (`Key::Name`) against a plain model: the compact index and arena
//! through growth, deletes and compaction, new columns, values past the inline width
//! (widening), and, through the engine, transaction ids, snapshots, log replay, restore
//! into another directory and `SCAN`'s key walk. Plus the memory bound: a row of an
//! 18-byte key and two 16-bit columns costs at most 32 bytes plus the key.

use std::collections::{BTreeSet, HashMap};

use proptest::prelude::*;
use shardkit_counters::{
    restore_snapshot, ColumnOptions, Engine, Error, FsyncPolicy, Key, Options, OwnedKey, Table,
    STRIPES,
};

/// Key `i` of the pool: short, long (one- and two-byte length headers), up to the
/// 1024-byte limit, non-ASCII, and texts that look numeric but are not canonical ids.
fn key(i: usize) -> String {
    match i % 8 {
        0 => format!("pageviews:/home/{i}"),
        1 => format!("u{i}"),
        2 => format!("{i:0>127}x"),
        3 => format!("{}-{i}", "k".repeat(200 + i % 50)),
        4 => format!("{}{i}", "é".repeat(20)),
        5 => format!("0{i}"),
        6 => format!("{i}{}", "z".repeat(1024 - i.to_string().len())),
        _ => format!("https://example.com/a/{i}?q=1"),
    }
}

/// A key's row in the model: one value per column (defaults included).
struct Model {
    /// (default, max) per column.
    cols: Vec<(u64, u64)>,
    rows: HashMap<String, Vec<u64>>,
}

impl Model {
    fn new() -> Model {
        Model {
            cols: Vec::new(),
            rows: HashMap::new(),
        }
    }
    fn add(&mut self, o: ColumnOptions) {
        let max = if o.max_bits == 64 {
            i64::MAX as u64
        } else {
            u32::MAX as u64
        };
        self.cols.push((o.default, max));
    }
    fn get(&self, k: &str, c: usize) -> u64 {
        self.rows
            .get(k)
            .and_then(|r| r.get(c).copied())
            .unwrap_or(self.cols[c].0)
    }
    fn row(&self, k: &str) -> Vec<u64> {
        (0..self.cols.len()).map(|c| self.get(k, c)).collect()
    }
    fn put(&mut self, k: &str, c: usize, v: u64) {
        let mut row = self.row(k);
        row[c] = v;
        if row.iter().zip(&self.cols).all(|(v, (d, _))| v == d) {
            self.rows.remove(k);
        } else {
            self.rows.insert(k.to_string(), row);
        }
    }
    fn delete(&mut self, k: &str) -> bool {
        self.rows.remove(k).is_some()
    }
}

fn column() -> impl Strategy<Value = ColumnOptions> {
    (
        prop_oneof![Just(8u8), Just(16u8), Just(32u8), Just(64u8)],
        any::<bool>(),
        0u64..3,
    )
        .prop_map(|(bits, max64, default)| ColumnOptions {
            bits,
            max_bits: if max64 || bits == 64 { 64 } else { 32 },
            default,
        })
}

#[derive(Debug, Clone)]
enum TableOp {
    AddColumn(ColumnOptions),
    Incr(usize, usize, i64),
    Set(usize, usize, u64),
    Delete(usize),
    Get(usize, usize),
    /// Writes `n` keys from `base` on (index growth, many records).
    Fill(usize, usize),
    /// Deletes every `step`-th key below `n` (dead bytes, compaction).
    Thin(usize, usize),
}

const POOL: usize = 600;

fn delta() -> impl Strategy<Value = i64> {
    prop_oneof![
        4 => -300i64..300,
        2 => -70_000i64..70_000,
        1 => -(1i64 << 40)..(1i64 << 40),
        1 => Just(i64::MAX),
        1 => Just(i64::MIN),
    ]
}

fn table_op() -> impl Strategy<Value = TableOp> {
    prop_oneof![
        1 => column().prop_map(TableOp::AddColumn),
        12 => (0..POOL, 0usize..6, delta()).prop_map(|(k, c, d)| TableOp::Incr(k, c, d)),
        3 => (0..POOL, 0usize..6, prop_oneof![0u64..3, 0u64..100_000, Just(u32::MAX as u64 + 1), Just(i64::MAX as u64), Just(u64::MAX)])
            .prop_map(|(k, c, v)| TableOp::Set(k, c, v)),
        3 => (0..POOL).prop_map(TableOp::Delete),
        4 => (0..POOL, 0usize..6).prop_map(|(k, c)| TableOp::Get(k, c)),
        1 => (0..POOL, 50usize..400).prop_map(|(b, n)| TableOp::Fill(b, n)),
        1 => (1usize..4, 100usize..POOL).prop_map(|(s, n)| TableOp::Thin(s, n)),
    ]
}

fn check_incr(
    got: Result<u64, Error>,
    m: &mut Model,
    k: &str,
    c: usize,
    d: i64,
) -> Result<(), TestCaseError> {
    let want = m.get(k, c) as i128 + d as i128;
    if want < 0 {
        prop_assert!(matches!(got, Err(Error::Negative { .. })), "{got:?}");
    } else if want > m.cols[c].1 as i128 {
        prop_assert!(matches!(got, Err(Error::TooLarge { .. })), "{got:?}");
    } else {
        prop_assert_eq!(got.ok(), Some(want as u64));
        m.put(k, c, want as u64);
    }
    Ok(())
}

fn run_table(ops: Vec<TableOp>) -> Result<(), TestCaseError> {
    let mut t = Table::new();
    let mut m = Model::new();
    let first = ColumnOptions::new(16, 32);
    t.add_column("c0", first).unwrap();
    m.add(first);
    for op in ops {
        match op {
            TableOp::AddColumn(o) => {
                if m.cols.len() < 6 {
                    t.add_column(&format!("c{}", m.cols.len()), o).unwrap();
                    m.add(o);
                }
            }
            TableOp::Incr(k, c, d) => {
                let (k, c) = (key(k), c % m.cols.len());
                let got = t.incr(Key::Name(&k), c, d);
                check_incr(got, &mut m, &k, c, d)?;
            }
            TableOp::Set(k, c, v) => {
                let (k, c) = (key(k), c % m.cols.len());
                let got = t.set(Key::Name(&k), c, v);
                if v > m.cols[c].1 {
                    prop_assert!(matches!(got, Err(Error::TooLarge { .. })), "{got:?}");
                } else {
                    prop_assert!(got.is_ok());
                    m.put(&k, c, v);
                }
            }
            TableOp::Delete(k) => {
                let k = key(k);
                prop_assert_eq!(t.delete(Key::Name(&k)), m.delete(&k));
            }
            TableOp::Get(k, c) => {
                let (k, c) = (key(k), c % m.cols.len());
                prop_assert_eq!(t.get(Key::Name(&k), c).ok(), Some(m.get(&k, c)));
                prop_assert_eq!(t.get_row(Key::Name(&k)), m.row(&k));
            }
            TableOp::Fill(base, n) => {
                for i in base..base + n {
                    let k = key(i % POOL);
                    let c = i % m.cols.len();
                    let got = t.incr(Key::Name(&k), c, 1 + (i as i64 % 7));
                    check_incr(got, &mut m, &k, c, 1 + (i as i64 % 7))?;
                }
            }
            TableOp::Thin(step, n) => {
                for i in (0..n).step_by(step) {
                    let k = key(i);
                    prop_assert_eq!(t.delete(Key::Name(&k)), m.delete(&k));
                }
            }
        }
        prop_assert_eq!(t.rows(), m.rows.len());
    }
    for i in 0..POOL {
        let k = key(i);
        prop_assert_eq!(t.get_row(Key::Name(&k)), m.row(&k), "key {}", k);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]
    /// A `Table` of string keys gives the model's answers through growth, deletes,
    /// compaction, new columns and widening.
    #[test]
    fn string_keyed_table_matches_the_model(ops in proptest::collection::vec(table_op(), 1..120)) {
        run_table(ops)?;
    }
}

/// One row's `(column, delta)` items of an `incr_rows`.
type RowItems = Vec<(usize, i64)>;

#[derive(Debug, Clone)]
enum EngineOp {
    Incr(usize, usize, i64, Option<u8>),
    /// One `incr_rows`: per row a key (`None`: an empty key, refused) and its
    /// `(column, delta)` items, columns repeating and in any order.
    IncrRows(Vec<(Option<usize>, RowItems)>),
    /// One `set_rows`: per row a key and its `(column, value)` items.
    SetRows(Vec<(usize, Vec<(usize, u64)>)>),
    Set(usize, usize, u64),
    Delete(usize),
    AddColumn(ColumnOptions),
    Fill(usize, usize),
    Snapshot,
    Reopen,
    /// `Engine::evict`: every string-keyed row (`true`), or those not written since the
    /// last eviction pass (`false`).
    Evict(bool),
}

const EPOOL: usize = 300;

fn engine_op() -> impl Strategy<Value = EngineOp> {
    prop_oneof![
        12 => (0..EPOOL, 0usize..4, delta(), proptest::option::of(0u8..5))
            .prop_map(|(k, c, d, t)| EngineOp::Incr(k, c, d, t)),
        4 => proptest::collection::vec(
            (
                proptest::option::weighted(0.95, 0..EPOOL),
                proptest::collection::vec((0usize..4, delta()), 0..6),
            ),
            0..12,
        )
        .prop_map(EngineOp::IncrRows),
        2 => proptest::collection::vec(
            (
                0..EPOOL,
                proptest::collection::vec(
                    (0usize..4, prop_oneof![0u64..5, Just(70_000u64), Just(u32::MAX as u64 + 1)]),
                    0..5,
                ),
            ),
            0..8,
        )
        .prop_map(EngineOp::SetRows),
        2 => (0..EPOOL, 0usize..4, prop_oneof![0u64..5, Just(70_000u64), Just(u32::MAX as u64)])
            .prop_map(|(k, c, v)| EngineOp::Set(k, c, v)),
        3 => (0..EPOOL).prop_map(EngineOp::Delete),
        1 => column().prop_map(EngineOp::AddColumn),
        1 => (0..EPOOL, 20usize..200).prop_map(|(b, n)| EngineOp::Fill(b, n)),
        1 => Just(EngineOp::Snapshot),
        2 => Just(EngineOp::Reopen),
        3 => any::<bool>().prop_map(EngineOp::Evict),
    ]
}

fn engine_opts() -> Options {
    Options {
        fsync: FsyncPolicy::No,
        snapshot_log_bytes: None,
        ..Options::default()
    }
}

/// Every row of the model, read back from `e`, plus the keys `SCAN` would walk.
fn engine_equals_model(e: &Engine, m: &Model) -> Result<(), TestCaseError> {
    for i in 0..EPOOL {
        let k = key(i);
        let row: Vec<u64> = e
            .get_row("s", Key::Name(&k))
            .unwrap()
            .into_iter()
            .map(|(_, v)| v)
            .collect();
        prop_assert_eq!(row, m.row(&k), "key {}", k);
        prop_assert_eq!(
            e.exists("s", Key::Name(&k)).unwrap(),
            m.rows.contains_key(&k)
        );
    }
    let mut walked = BTreeSet::new();
    for s in 0..STRIPES {
        for k in e.row_keys("s", s).unwrap() {
            match k {
                OwnedKey::Name(n) => prop_assert!(walked.insert(n.to_string()), "twice: {}", n),
                OwnedKey::Id(id) => prop_assert!(false, "an id {} in a string-keyed counter", id),
            }
        }
    }
    let want: BTreeSet<String> = m.rows.keys().cloned().collect();
    prop_assert_eq!(walked, want);
    let rows: u64 = e.stats().counters.iter().map(|c| c.named_rows).sum();
    prop_assert_eq!(rows, m.rows.len() as u64);
    Ok(())
}

fn run_engine(ops: Vec<EngineOp>) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().unwrap();
    let o = engine_opts();
    let mut e = Engine::open(dir.path(), o.clone()).unwrap();
    let mut m = Model::new();
    e.create_counter("s").unwrap();
    let first = ColumnOptions::new(16, 64);
    e.add_column("s", "c0", first).unwrap();
    m.add(first);
    let mut applied: HashMap<(String, u8), ()> = HashMap::new();
    for op in ops {
        match op {
            EngineOp::Incr(k, c, d, t) => {
                let (k, c) = (key(k), c % m.cols.len());
                let tx = t.map(|t| format!("tx{t}"));
                let got = e.incr("s", Key::Name(&k), &format!("c{c}"), d, tx.as_deref());
                if let Some(t) = t {
                    if applied.contains_key(&(k.clone(), t)) {
                        // A retry: the current value, nothing counted.
                        prop_assert_eq!(got.ok(), Some(m.get(&k, c)));
                        continue;
                    }
                }
                let want = m.get(&k, c) as i128 + d as i128;
                check_incr(got, &mut m, &k, c, d)?;
                // A txid is remembered only when its increment went through.
                if let (Some(t), true) = (t, want >= 0 && want <= m.cols[c].1 as i128) {
                    applied.insert((k, t), ());
                }
            }
            EngineOp::IncrRows(rows) => {
                let names: Vec<String> = (0..m.cols.len()).map(|c| format!("c{c}")).collect();
                let names: Vec<&str> = names.iter().map(String::as_str).collect();
                let keys: Vec<String> = rows
                    .iter()
                    .map(|(k, _)| k.map(key).unwrap_or_default())
                    .collect();
                let items: Vec<Vec<(usize, i64)>> = rows
                    .iter()
                    .map(|(_, items)| items.iter().map(|&(c, d)| (c % names.len(), d)).collect())
                    .collect();
                let run: Vec<(Key<'_>, &[(usize, i64)])> = keys
                    .iter()
                    .zip(&items)
                    .map(|(k, items)| (Key::Name(k), items.as_slice()))
                    .collect();
                let mut out = Vec::new();
                let pending = e.incr_rows("s", &names, &run, &mut out).unwrap();
                e.commit(pending).unwrap();
                prop_assert_eq!(out.len(), items.iter().map(Vec::len).sum::<usize>());
                let mut got = out.into_iter();
                for (k, items) in keys.iter().zip(&items) {
                    for &(c, d) in items {
                        let result = got.next().unwrap();
                        if k.is_empty() {
                            prop_assert!(matches!(result, Err(Error::BadKey(_))), "{result:?}");
                        } else {
                            check_incr(result, &mut m, k, c, d)?;
                        }
                    }
                }
                // A place past the end of the names is refused whole.
                let mut out = Vec::new();
                let past = [(names.len(), 1i64)];
                let refused = e.incr_rows("s", &names, &[(Key::Name("x"), &past[..])], &mut out);
                prop_assert!(
                    matches!(refused, Err(Error::NoSuchColumn { .. })),
                    "{refused:?}"
                );
                prop_assert!(out.is_empty());
            }
            EngineOp::SetRows(rows) => {
                let names: Vec<String> = (0..m.cols.len()).map(|c| format!("c{c}")).collect();
                let names: Vec<&str> = names.iter().map(String::as_str).collect();
                let keys: Vec<String> = rows.iter().map(|(k, _)| key(*k)).collect();
                let items: Vec<Vec<(usize, u64)>> = rows
                    .iter()
                    .map(|(_, items)| items.iter().map(|&(c, v)| (c % names.len(), v)).collect())
                    .collect();
                let run: Vec<(Key<'_>, &[(usize, u64)])> = keys
                    .iter()
                    .zip(&items)
                    .map(|(k, items)| (Key::Name(k), items.as_slice()))
                    .collect();
                let mut out = Vec::new();
                let pending = e.set_rows("s", &names, &run, &mut out).unwrap();
                e.commit(pending).unwrap();
                let mut got = out.into_iter();
                for (k, items) in keys.iter().zip(&items) {
                    for &(c, v) in items {
                        let result = got.next().unwrap();
                        if v > m.cols[c].1 {
                            prop_assert!(
                                matches!(result, Err(Error::TooLarge { .. })),
                                "{result:?}"
                            );
                        } else {
                            prop_assert_eq!(result.ok(), Some(v));
                            m.put(k, c, v);
                        }
                    }
                }
                prop_assert!(got.next().is_none());
            }
            EngineOp::Set(k, c, v) => {
                let (k, c) = (key(k), c % m.cols.len());
                let got = e.set("s", Key::Name(&k), &format!("c{c}"), v);
                if v > m.cols[c].1 {
                    prop_assert!(got.is_err());
                } else {
                    prop_assert!(got.is_ok());
                    m.put(&k, c, v);
                }
            }
            EngineOp::Delete(k) => {
                let k = key(k);
                prop_assert_eq!(e.delete("s", Key::Name(&k)).unwrap(), m.delete(&k));
            }
            EngineOp::AddColumn(o) => {
                if m.cols.len() < 4 {
                    e.add_column("s", &format!("c{}", m.cols.len()), o).unwrap();
                    m.add(o);
                }
            }
            EngineOp::Fill(base, n) => {
                for i in base..base + n {
                    let k = key(i % EPOOL);
                    let c = i % m.cols.len();
                    let got = e.incr("s", Key::Name(&k), &format!("c{c}"), 3, None);
                    check_incr(got, &mut m, &k, c, 3)?;
                }
            }
            EngineOp::Snapshot => {
                e.snapshot().unwrap();
            }
            EngineOp::Evict(all) => {
                // Zero: every row; a nanosecond rounds to 0 ms, so the clock ticks at
                // once and takes the rows not written since its last tick.
                let older = if all {
                    std::time::Duration::ZERO
                } else {
                    std::time::Duration::from_nanos(1)
                };
                let before = e.stats().counters[0].named_rows;
                let out = e.evict(older).unwrap();
                if all {
                    prop_assert_eq!(e.stats().counters[0].hot_rows, 0);
                }
                prop_assert_eq!(e.stats().counters[0].named_rows, before);
                prop_assert!(out.name_rows <= before);
            }
            EngineOp::Reopen => {
                drop(e);
                e = Engine::open(dir.path(), o.clone()).unwrap();
                prop_assert!(e.recovery().dropped.is_empty(), "{:?}", e.recovery());
                engine_equals_model(&e, &m)?;
            }
        }
    }
    engine_equals_model(&e, &m)?;
    // A snapshot restored into an empty directory holds the same rows; one that relies
    // on cold batch files (not in its bytes) is refused.
    e.snapshot().unwrap();
    let (_, newest) = e.snapshot_files().unwrap().into_iter().next().unwrap();
    let bytes = std::fs::read(newest).unwrap();
    let other = tempfile::tempdir().unwrap();
    let cold = e.stats().counters[0].cold_rows;
    match restore_snapshot(other.path(), &bytes) {
        Ok(_) => {
            prop_assert_eq!(cold, 0);
            let restored = Engine::open(other.path(), o.clone()).unwrap();
            engine_equals_model(&restored, &m)?;
        }
        Err(err) => {
            prop_assert!(cold > 0, "{err}");
            prop_assert!(err.to_string().contains("cold batch files"), "{err}");
        }
    }
    // And the log replayed over the older snapshot (kill-like reopen) agrees too.
    drop(e);
    let e = Engine::open(dir.path(), o).unwrap();
    engine_equals_model(&e, &m)?;
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]
    /// The engine's string-keyed rows give the model's answers across txid retries,
    /// snapshots, reopens (log replay), a restore elsewhere and the key walk.
    #[test]
    fn string_keyed_engine_matches_the_model_across_snapshots_and_replay(
        ops in proptest::collection::vec(engine_op(), 1..60)
    ) {
        run_engine(ops)?;
    }
}

/// The rows of the fixture snapshot `fixtures/string-keys-698c091.snap`: written by the
/// engine of main at commit 698c091 (string keys in a `HashMap`), read back by this one.
fn fixture_rows() -> Vec<(String, [u64; 3])> {
    (0..300u64)
        .map(|i| {
            let key = match i % 5 {
                0 => format!("pageviews:/home/{i}"),
                1 => format!("{}{i}", "é".repeat(70)),
                2 => format!("u{i}"),
                3 => format!("{i:0>900}"),
                _ => format!("https://example.com/{i}?x=y"),
            };
            let c1 = if i % 7 == 0 {
                (1u64 << 40) + i
            } else {
                i % 300
            };
            (
                key,
                [i % 1000 + 1, c1, if i % 3 == 0 { 2 } else { 70_000 + i }],
            )
        })
        .collect()
}

/// The snapshot format did not change: a snapshot written by the engine before compact
/// string keys (main at 698c091, string keys in a `HashMap`) loads into the arena and
/// index with every row, column (one added after half the rows), wide value and the
/// numeric row beside them, and a snapshot written now from it reads the same.
#[test]
fn a_snapshot_written_before_compact_string_keys_loads_whole() {
    let bytes = include_bytes!("fixtures/string-keys-698c091.snap");
    let dir = tempfile::tempdir().unwrap();
    restore_snapshot(dir.path(), bytes).unwrap();
    let check = |e: &Engine| {
        let rows = fixture_rows();
        for (k, v) in &rows {
            let got: Vec<u64> = e
                .get_row("s", Key::Name(k))
                .unwrap()
                .into_iter()
                .map(|(_, v)| v)
                .collect();
            assert_eq!(got, v.to_vec(), "key {k}");
        }
        assert_eq!(e.get("s", Key::Id(42), "c0").unwrap(), 7);
        let stats = &e.stats().counters[0];
        assert_eq!((stats.rows, stats.named_rows), (301, 300));
    };
    {
        let e = Engine::open(dir.path(), engine_opts()).unwrap();
        assert!(e.recovery().dropped.is_empty(), "{:?}", e.recovery());
        assert_eq!(e.recovery().snapshot_rows, 301);
        check(&e);
        e.snapshot().unwrap();
    }
    let e = Engine::open(dir.path(), engine_opts()).unwrap();
    check(&e);
}

/// A transaction id is remembered per string key as per id: across a reopen that
/// replays it from the log and one that loads it from a snapshot.
#[test]
fn txids_on_string_keys_count_once_across_replay_and_snapshots() {
    let dir = tempfile::tempdir().unwrap();
    let o = engine_opts();
    {
        let e = Engine::open(dir.path(), o.clone()).unwrap();
        e.create_counter("s").unwrap();
        e.add_column("s", "v", ColumnOptions::default()).unwrap();
        assert_eq!(
            e.incr("s", Key::Name("a/b"), "v", 5, Some("t1")).unwrap(),
            5
        );
        assert_eq!(
            e.incr("s", Key::Name("a/b"), "v", 5, Some("t1")).unwrap(),
            5
        );
        assert_eq!(
            e.incr("s", Key::Name("a/c"), "v", 5, Some("t1")).unwrap(),
            5
        );
    }
    {
        let e = Engine::open(dir.path(), o.clone()).unwrap();
        assert_eq!(
            e.incr("s", Key::Name("a/b"), "v", 5, Some("t1")).unwrap(),
            5
        );
        assert_eq!(
            e.incr("s", Key::Name("a/b"), "v", 5, Some("t2")).unwrap(),
            10
        );
        e.snapshot().unwrap();
    }
    let e = Engine::open(dir.path(), o).unwrap();
    assert_eq!(
        e.incr("s", Key::Name("a/b"), "v", 5, Some("t2")).unwrap(),
        10
    );
    assert_eq!(
        e.incr("s", Key::Name("a/c"), "v", 5, Some("t1")).unwrap(),
        5
    );
    assert_eq!(e.get("s", Key::Name("a/b"), "v").unwrap(), 10);
}

/// The issue's bound: two 16-bit columns under an 18-byte key cost at most 32 bytes
/// plus the key, by the table's own count of what it holds (index, arena chunks).
#[test]
fn a_row_costs_at_most_32_bytes_plus_its_key() {
    let mut t = Table::new();
    t.add_column("c", ColumnOptions::new(16, 32)).unwrap();
    t.add_column("r", ColumnOptions::new(16, 32)).unwrap();
    let n = 300_000u64;
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    for i in 0..n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let k = format!("pv:/p/{:012x}", x & 0xFFFF_FFFF_FFFF);
        assert_eq!(k.len(), 18);
        t.set(Key::Name(&k), 0, x % 1000 + 1).unwrap();
        t.set(Key::Name(&k), 1, i % 100 + 1).unwrap();
    }
    let per_row = t.bytes() as f64 / t.rows() as f64;
    assert!(t.rows() as u64 > n - 10, "{} rows", t.rows());
    assert!(per_row <= 32.0 + 18.0, "{per_row:.1} bytes per row");
}

/// The values of row `key` of `counter`, column by column.
fn row_values(e: &Engine, counter: &str, key: &str) -> Vec<u64> {
    e.get_row(counter, Key::Name(key))
        .unwrap()
        .into_iter()
        .map(|(_, v)| v)
        .collect()
}

/// `incr_rows` writes several columns of a row with one look-up: in place, by one move
/// when the row gains columns or widens, a refused item alone left out, and a row
/// brought back to all its defaults removed; the log replays to the same rows.
#[test]
fn incr_rows_writes_in_place_moves_once_and_frees_a_row_back_at_its_defaults() {
    let dir = tempfile::tempdir().unwrap();
    let e = Engine::open(dir.path(), engine_opts()).unwrap();
    e.create_counter("s").unwrap();
    let names = ["c0", "c1", "c2", "c3"];
    for n in names {
        e.add_column("s", n, ColumnOptions::new(16, 64)).unwrap();
    }
    let run = |e: &Engine, key: &str, items: &[(usize, i64)]| -> Vec<Option<u64>> {
        let mut out = Vec::new();
        let pending = e
            .incr_rows("s", &names, &[(Key::Name(key), items)], &mut out)
            .unwrap();
        e.commit(pending).unwrap();
        out.into_iter().map(Result::ok).collect()
    };
    let row = |e: &Engine, key: &str| row_values(e, "s", key);
    let named = |e: &Engine| -> u64 { e.stats().counters.iter().map(|c| c.named_rows).sum() };
    // A new row, two columns.
    assert_eq!(run(&e, "a", &[(0, 5), (2, 7)]), [Some(5), Some(7)]);
    assert_eq!(row(&e, "a"), [5, 0, 7, 0]);
    // In place, a column twice (the second sees the first).
    assert_eq!(
        run(&e, "a", &[(1, 1), (0, -5), (0, 2)]),
        [Some(1), Some(0), Some(2)]
    );
    assert_eq!(row(&e, "a"), [2, 1, 7, 0]);
    // A column past the stored ones, and past its 16-bit width: one move, widened.
    assert_eq!(
        run(&e, "a", &[(3, 70_000), (1, 1)]),
        [Some(70_000), Some(2)]
    );
    assert_eq!(row(&e, "a"), [2, 2, 7, 70_000]);
    // A refused item (below zero) changes nothing; the others go through.
    assert_eq!(run(&e, "b", &[(0, -1), (1, 3)]), [None, Some(3)]);
    assert_eq!(row(&e, "b"), [0, 3, 0, 0]);
    assert_eq!(named(&e), 2);
    // Back to all defaults, in place: the row is gone.
    assert_eq!(run(&e, "b", &[(1, -3)]), [Some(0)]);
    assert!(!e.exists("s", Key::Name("b")).unwrap());
    // Back to all defaults while widened (a move back to narrow is not needed to free it).
    assert_eq!(
        run(&e, "a", &[(0, -2), (1, -2), (2, -7), (3, -70_000)]),
        [Some(0), Some(0), Some(0), Some(0)]
    );
    assert!(!e.exists("s", Key::Name("a")).unwrap());
    assert_eq!(named(&e), 0);
    // An empty key is refused for each of its items.
    let mut out = Vec::new();
    let _ = e
        .incr_rows(
            "s",
            &names,
            &[(Key::Name(""), &[(0, 1), (1, 1)][..])],
            &mut out,
        )
        .unwrap();
    assert_eq!(out.len(), 2);
    assert!(
        out.iter().all(|r| matches!(r, Err(Error::BadKey(_)))),
        "{out:?}"
    );
    // Rows that stay, then a reopen: the log replays to them.
    assert_eq!(run(&e, "c", &[(3, 1), (0, 9)]), [Some(1), Some(9)]);
    drop(e);
    let e = Engine::open(dir.path(), engine_opts()).unwrap();
    assert_eq!(row(&e, "c"), [9, 0, 0, 1]);
    assert!(!e.exists("s", Key::Name("a")).unwrap());
    assert_eq!(named(&e), 1);
}

/// `update_rows` sets some columns of a row and adds to others in one write: a new row
/// made with both at once, an existing one where a set replaces and an add adds, a
/// refused item (an add below zero) alone left out; the log replays to the same rows.
#[test]
fn update_rows_sets_and_adds_in_one_row_and_replays() {
    use shardkit_counters::RowOp::{Add, Set};
    let dir = tempfile::tempdir().unwrap();
    let e = Engine::open(dir.path(), engine_opts()).unwrap();
    e.create_counter("s").unwrap();
    let names = ["total", "o0", "o1"];
    e.add_column("s", "total", ColumnOptions::default())
        .unwrap();
    for n in &names[1..] {
        e.add_column("s", n, ColumnOptions::new(64, 64)).unwrap();
    }
    let run = |e: &Engine, key: &str, items: &[(usize, shardkit_counters::RowOp)]| {
        let mut out = Vec::new();
        let pending = e
            .update_rows("s", &names, &[(Key::Name(key), items)], &mut out)
            .unwrap();
        e.commit(pending).unwrap();
        out.into_iter().map(Result::ok).collect::<Vec<_>>()
    };
    let row = |e: &Engine, key: &str| row_values(e, "s", key);
    let hash = (1 << 60) + 12_345;
    assert_eq!(
        run(&e, "7:t", &[(1, Set(hash)), (0, Add(3))]),
        [Some(hash), Some(3)]
    );
    assert_eq!(row(&e, "7:t"), [3, hash, 0]);
    assert_eq!(
        run(&e, "7:t", &[(0, Add(2)), (2, Set(9)), (1, Set(hash))]),
        [Some(5), Some(9), Some(hash)]
    );
    assert_eq!(
        run(&e, "7:t", &[(0, Add(-6)), (2, Set(4))]),
        [None, Some(4)],
        "below zero: refused, the set goes through"
    );
    assert_eq!(row(&e, "7:t"), [5, hash, 4]);
    drop(e);
    let e = Engine::open(dir.path(), engine_opts()).unwrap();
    assert_eq!(row(&e, "7:t"), [5, hash, 4]);
}

//! Property test: any sequence of operations on a `Table` gives the same answers as a
//! plain `HashMap` model, including columns added mid-way, values past the inline width
//! (overflow), refused decrements and deletes.

use std::collections::HashMap;

use proptest::prelude::*;
use shardkit_counters::{ColumnOptions, Error, Key, Table};

#[derive(Debug, Clone)]
enum Op {
    AddColumn {
        bits: u8,
        max64: bool,
        default: u64,
    },
    Incr {
        key: usize,
        col: usize,
        delta: i64,
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
    /// Increments a run of ids sharing their high 32 bits (enough to create a dense
    /// partition) so promotion is exercised.
    Burst {
        base: usize,
        n: usize,
        col: usize,
    },
}

/// Keys: clustered ids, random ids, ids on the sentinel patterns, string keys.
fn key_pool() -> Vec<String> {
    let mut v = Vec::new();
    for i in 0..12u64 {
        v.push(((0x1234_5678u64 << 32) | (i * 977)).to_string());
    }
    for i in 0..8u64 {
        v.push((i.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0xABCD).to_string());
    }
    v.push(((0x1234_5678u64 << 32) | 0xFFFF_FFFF).to_string());
    v.push(((1u64 << 56) - 1).to_string());
    v.push(u64::MAX.to_string());
    v.push("0".into());
    v.push("pageviews:home".into());
    v.push("007".into());
    v
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        1 => (prop_oneof![Just(8u8), Just(16u8), Just(32u8)], any::<bool>(), 0u64..3)
            .prop_map(|(bits, max64, default)| Op::AddColumn { bits, max64, default }),
        10 => (0usize..26, 0usize..6, prop_oneof![-300i64..300, -70_000i64..70_000, Just(i64::MAX), Just(i64::MIN)])
            .prop_map(|(key, col, delta)| Op::Incr { key, col, delta }),
        3 => (0usize..26, 0usize..6, prop_oneof![0u64..3, 0u64..100_000, Just(u64::MAX), Just(u32::MAX as u64 + 1)])
            .prop_map(|(key, col, value)| Op::Set { key, col, value }),
        2 => (0usize..26).prop_map(|key| Op::Delete { key }),
        4 => (0usize..26, 0usize..6).prop_map(|(key, col)| Op::Get { key, col }),
        1 => (0usize..4, 130usize..300, 0usize..3).prop_map(|(base, n, col)| Op::Burst { base, n, col }),
    ]
}

struct Model {
    cols: Vec<(u64, u64)>, // (default, max)
    rows: HashMap<String, Vec<u64>>,
}

impl Model {
    fn get(&self, key: &str, col: usize) -> u64 {
        self.rows
            .get(key)
            .and_then(|r| r.get(col).copied())
            .unwrap_or(self.cols[col].0)
    }
    fn put(&mut self, key: &str, col: usize, v: u64) {
        let defaults: Vec<u64> = self.cols.iter().map(|c| c.0).collect();
        let row = self
            .rows
            .entry(key.to_string())
            .or_insert_with(|| defaults.clone());
        while row.len() < defaults.len() {
            row.push(defaults[row.len()]);
        }
        row[col] = v;
        if row.iter().zip(&defaults).all(|(a, b)| a == b) {
            self.rows.remove(key);
        }
    }
}

fn run(ops: Vec<Op>) -> Result<(), TestCaseError> {
    let keys = key_pool();
    let mut t = Table::new();
    let mut m = Model {
        cols: Vec::new(),
        rows: HashMap::new(),
    };
    t.add_column("c0", ColumnOptions::new(16, 32))
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
    m.cols.push((0, u32::MAX as u64));
    for op in ops {
        match op {
            Op::AddColumn {
                bits,
                max64,
                default,
            } => {
                let n = m.cols.len();
                let o = ColumnOptions {
                    bits,
                    max_bits: if max64 { 64 } else { 32 },
                    default,
                };
                t.add_column(&format!("c{n}"), o)
                    .map_err(|e| TestCaseError::fail(e.to_string()))?;
                m.cols.push((
                    default,
                    if max64 {
                        i64::MAX as u64
                    } else {
                        u32::MAX as u64
                    },
                ));
            }
            Op::Incr { key, col, delta } => {
                let col = col % m.cols.len();
                let k = &keys[key];
                let cur = m.get(k, col);
                let want = cur as i128 + delta as i128;
                let got = t.incr(Key::parse(k), col, delta);
                if want < 0 {
                    prop_assert!(matches!(got, Err(Error::Negative { .. })), "{got:?}");
                } else if want > m.cols[col].1 as i128 {
                    prop_assert!(matches!(got, Err(Error::TooLarge { .. })), "{got:?}");
                } else {
                    prop_assert_eq!(got.ok(), Some(want as u64));
                    m.put(k, col, want as u64);
                }
            }
            Op::Set { key, col, value } => {
                let col = col % m.cols.len();
                let k = &keys[key];
                let got = t.set(Key::parse(k), col, value);
                if value > m.cols[col].1 {
                    prop_assert!(matches!(got, Err(Error::TooLarge { .. })), "{got:?}");
                } else {
                    prop_assert!(got.is_ok());
                    m.put(k, col, value);
                }
            }
            Op::Delete { key } => {
                let k = &keys[key];
                prop_assert_eq!(t.delete(Key::parse(k)), m.rows.remove(k.as_str()).is_some());
            }
            Op::Get { key, col } => {
                let col = col % m.cols.len();
                let k = &keys[key];
                prop_assert_eq!(t.get(Key::parse(k), col).ok(), Some(m.get(k, col)));
            }
            Op::Burst { base, n, col } => {
                let col = col % m.cols.len();
                for i in 0..n as u64 {
                    let id = ((0x4000_0000u64 + base as u64) << 32) | (i * 7919);
                    let k = id.to_string();
                    let want = m.get(&k, col) + 1;
                    if want <= m.cols[col].1 {
                        prop_assert_eq!(t.incr(Key::Id(id), col, 1).ok(), Some(want));
                        m.put(&k, col, want);
                    }
                }
            }
        }
        prop_assert_eq!(t.rows(), m.rows.len());
    }
    // Full comparison at the end, every key and column, burst keys included.
    for (k, row) in &m.rows {
        for (c, v) in row.iter().enumerate() {
            prop_assert_eq!(
                t.get(Key::parse(k), c).ok(),
                Some(*v),
                "key {} col {}",
                k,
                c
            );
        }
    }
    for k in &keys {
        for c in 0..m.cols.len() {
            prop_assert_eq!(t.get(Key::parse(k), c).ok(), Some(m.get(k, c)));
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]
    #[test]
    fn table_matches_hashmap_model(ops in proptest::collection::vec(op(), 1..120)) {
        run(ops)?;
    }
}

#[test]
fn overflow_and_return_to_default_free_the_row() {
    let mut t = Table::new();
    t.add_column("likes", ColumnOptions::new(8, 32)).unwrap();
    t.add_column("reposts", ColumnOptions::new(16, 64)).unwrap();
    let k = Key::Id(42);
    assert_eq!(t.incr(k, 0, 300).unwrap(), 300);
    assert_eq!(t.overflow_entries(), 1);
    assert_eq!(t.incr(k, 0, -299).unwrap(), 1);
    assert_eq!(t.overflow_entries(), 0);
    assert!(matches!(
        t.incr(k, 0, -2),
        Err(Error::Negative { current: 1, .. })
    ));
    assert_eq!(t.incr(k, 0, -1).unwrap(), 0);
    assert_eq!(t.rows(), 0);
    assert!(matches!(
        t.incr(k, 0, u32::MAX as i64 + 1),
        Err(Error::TooLarge { .. })
    ));
    assert_eq!(t.incr(k, 1, i64::MAX).unwrap(), i64::MAX as u64);
}

#[test]
fn clustered_ids_get_dense_partitions() {
    let mut t = Table::new();
    t.add_column("a", ColumnOptions::new(16, 32)).unwrap();
    let base = 0x1655_0000_0000_0000u64;
    for i in 0..10_000u64 {
        t.incr(Key::Id(base + ((i / 1000) << 32) + i % 1000), 0, 1)
            .unwrap();
    }
    let (dense, _) = t.partitions();
    assert!(dense >= 8, "dense partitions: {dense}");
    for i in 0..10_000u64 {
        assert_eq!(
            t.get(Key::Id(base + ((i / 1000) << 32) + i % 1000), 0)
                .unwrap(),
            1
        );
    }
}

#[test]
fn add_column_touches_no_rows() {
    let mut t = Table::new();
    t.add_column("a", ColumnOptions::new(16, 32)).unwrap();
    for i in 0..50_000u64 {
        t.incr(Key::Id(i.wrapping_mul(0x9E37_79B9_7F4A_7C15)), 0, 1)
            .unwrap();
    }
    let before = t.bytes();
    let b = t
        .add_column(
            "b",
            ColumnOptions {
                bits: 8,
                max_bits: 32,
                default: 5,
            },
        )
        .unwrap();
    assert_eq!(
        t.bytes(),
        before,
        "adding a column must not allocate per row"
    );
    assert_eq!(t.get(Key::Id(0x9E37_79B9_7F4A_7C15), b).unwrap(), 5);
    assert_eq!(t.incr(Key::Id(0x9E37_79B9_7F4A_7C15), b, 1).unwrap(), 6);
    assert_eq!(t.get(Key::Id(0x9E37_79B9_7F4A_7C15), 0).unwrap(), 1);
}

/// Runs `ops` through `a.incr_many` and one by one through `b.incr`, and asserts every
/// answer and every refusal (by its message) are the same.
fn assert_incr_many_matches_one_by_one(a: &mut Table, b: &mut Table, ops: &[(u64, usize, i64)]) {
    let mut out = Vec::new();
    let mut refused = a.incr_many(ops, &mut out).into_iter().peekable();
    for (j, (op, got)) in ops.iter().zip(&out).enumerate() {
        let want = b.incr(Key::Id(op.0), op.1, op.2);
        let err = refused.next_if(|(i, _)| *i == j).map(|(_, e)| e);
        assert_eq!(
            err.map(|e| e.to_string()),
            want.as_ref().err().map(|e| e.to_string()),
            "op {j}: {op:?}"
        );
        assert_eq!(*got, want.unwrap_or(0), "op {j}: {op:?}");
    }
    assert!(refused.next().is_none());
}

#[test]
fn incr_many_matches_one_by_one() {
    let mut a = Table::new();
    let mut b = Table::new();
    for t in [&mut a, &mut b] {
        t.add_column("x", ColumnOptions::new(8, 32)).unwrap();
    }
    let ops: Vec<(u64, usize, i64)> = (0..5000u64)
        .map(|i| {
            (
                (i % 300).wrapping_mul(0x9E37_79B9_7F4A_7C15),
                (i % 3) as usize,
                (i % 7) as i64 - 2,
            )
        })
        .collect();
    assert_incr_many_matches_one_by_one(&mut a, &mut b, &ops);
    assert_eq!(a.rows(), b.rows());
}

/// `incr_many`'s in-place path must hand every case it does not cover to `incr`: values
/// reaching the inline marker (overflow) and coming back, a row returning to its
/// defaults (freed), refused decrements, a column a partition has no values for yet, a
/// non-zero default, ids of the odd map, an unknown column.
#[test]
fn incr_many_edge_cases_match_one_by_one() {
    let mut a = Table::new();
    let mut b = Table::new();
    for t in [&mut a, &mut b] {
        t.add_column("x", ColumnOptions::new(8, 32)).unwrap();
        t.add_column(
            "y",
            ColumnOptions {
                bits: 16,
                max_bits: 32,
                default: 5,
            },
        )
        .unwrap();
    }
    let ids: Vec<u64> = (0..40u64)
        .map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15))
        .chain([u64::MAX, (1u64 << 56) - 1, 7, 8])
        .collect();
    let deltas = [
        1i64, 200, 60, -250, -11, 3, -5, 100_000, -100_000, 254, -254, 0,
    ];
    let mut ops = Vec::new();
    for r in 0..60usize {
        for (k, &id) in ids.iter().enumerate() {
            let col = (r + k) % 3; // 2 is no column
            ops.push((id, col, deltas[(r * 7 + k) % deltas.len()]));
        }
    }
    for chunk in ops.chunks(97) {
        assert_incr_many_matches_one_by_one(&mut a, &mut b, chunk);
    }
    assert_eq!(a.rows(), b.rows());
    assert!(a.overflow_entries() > 0 || b.overflow_entries() == 0);
    for &id in &ids {
        assert_eq!(a.get_row(Key::Id(id)), b.get_row(Key::Id(id)), "id {id:#x}");
    }
}

/// `incr_many` finds a whole group's rows before it applies the group's first op, so an
/// op that inserts or frees a row shifts the slots of rows later ops of the group have
/// already found. All ids here share one partition (same top byte) and its runs are
/// long, and rows are freed (back to 0) and re-inserted in every group: each answer and
/// every row must match one-by-one `incr`.
#[test]
fn incr_many_stays_right_when_its_group_shifts_rows_it_has_found() {
    let mut a = Table::new();
    let mut b = Table::new();
    for t in [&mut a, &mut b] {
        t.add_column("x", ColumnOptions::new(16, 32)).unwrap();
        t.add_column("y", ColumnOptions::new(8, 32)).unwrap();
    }
    let id = |i: u64| (0x42u64 << 56) | (i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 8);
    let n = 3000u64;
    let fill: Vec<(u64, usize, i64)> = (0..n).map(|i| (id(i), 0, 1)).collect();
    assert_incr_many_matches_one_by_one(&mut a, &mut b, &fill);
    let mut ops = Vec::new();
    for r in 0..40u64 {
        for k in 0..n / 10 {
            let i = (k * 7 + r * 13) % n;
            // Frees rows (x back to 0), brings them back, and bumps neighbours in between.
            let delta = match (k + r) % 4 {
                0 => -1,
                1 => 1,
                _ => 2,
            };
            ops.push((id(i), 0usize, delta));
            ops.push((id((i + 1) % n), (k % 2) as usize, 1));
        }
    }
    for chunk in ops.chunks(999) {
        assert_incr_many_matches_one_by_one(&mut a, &mut b, chunk);
    }
    assert_eq!(a.rows(), b.rows());
    for i in 0..n {
        assert_eq!(
            a.get_row(Key::Id(id(i))),
            b.get_row(Key::Id(id(i))),
            "row {i}"
        );
    }
}

/// `incr_many` works out where each row is before it applies the op; rows
/// inserted in between grow partitions and move a clustered group into a dense
/// partition of its own (promotion) under those pending look-ups. Every answer and
/// every row must still match one-by-one `incr`.
#[test]
fn incr_many_stays_right_while_its_batch_grows_and_promotes_partitions() {
    let mut a = Table::new();
    let mut b = Table::new();
    for t in [&mut a, &mut b] {
        t.add_column("x", ColumnOptions::new(16, 32)).unwrap();
    }
    // Ids sharing their high 32 bits (one group per 2^32 range), interleaved with a
    // random-looking stream, revisited so pending look-ups hit rows that moved.
    let mut ops = Vec::new();
    for i in 0..6000u64 {
        let clustered = (0x1234_5678u64 << 32) | (i % 2000);
        let spread = (i % 700).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        ops.push((clustered, 0usize, 1i64));
        ops.push((
            spread,
            0usize,
            if (i / 700) % 2 == 1 && i % 5 == 4 {
                -1
            } else {
                2
            },
        ));
    }
    let mut out = Vec::new();
    let promoted_before = a.partitions().0;
    for chunk in ops.chunks(500) {
        let refused = a.incr_many(chunk, &mut out);
        assert!(refused.is_empty(), "{refused:?}");
        for (op, got) in chunk.iter().zip(&out) {
            assert_eq!(
                *got,
                b.incr(Key::Id(op.0), op.1, op.2).unwrap(),
                "op {op:?}"
            );
        }
    }
    assert!(
        a.partitions().0 > promoted_before,
        "the clustered ids must have been promoted to a dense partition: {:?} {:?}",
        a.partitions(),
        b.partitions()
    );
    assert_eq!(a.rows(), b.rows());
    for &(id, _, _) in &ops {
        assert_eq!(a.get_row(Key::Id(id)), b.get_row(Key::Id(id)), "id {id:#x}");
    }
}

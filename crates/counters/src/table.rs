//! An in-memory counter table without durability or locking.
//!
//! Exists for callers that keep counts they can rebuild (caches, tests, benchmarks) and
//! as the measure of the engine's raw table: the same stripe code the [`crate::Engine`]
//! uses, in one piece, behind `&mut self`.

use crate::column::{apply_delta, check_name, check_set, ColumnSpec};
use crate::error::{Error, Result};
use crate::key::Key;
use crate::stripe::{Located, Stripe};
use crate::ColumnOptions;

/// Ops per group in [`Table::incr_many`]: enough that the first op's lines have
/// arrived when the group's second pass reaches it (32 ops of the first pass take about
/// half a microsecond, a random miss with its page walk ~0.2-0.35 µs on the test VM);
/// few enough that the group's lines (3 per op) stay in L1 and its pages in the TLB.
/// Measured: 32 to 256 alike at 100 M rows; 32 costs least on tables that fit in cache.
const GROUP: usize = 32;

/// One counter's rows in memory: columns by index, no log.
#[derive(Debug, Clone, Default)]
pub struct Table {
    specs: Vec<ColumnSpec>,
    rows: Stripe,
}

impl Table {
    /// An empty table with no columns.
    pub fn new() -> Table {
        Table::default()
    }

    /// Adds a column; returns its index. Existing rows are not touched.
    pub fn add_column(&mut self, name: &str, opts: ColumnOptions) -> Result<usize> {
        check_name(name)?;
        let spec = ColumnSpec {
            name: name.to_string(),
            bits: opts.bits,
            max_bits: opts.max_bits,
            default: opts.default,
        };
        spec.check().map_err(|reason| Error::BadColumn {
            column: name.to_string(),
            reason,
        })?;
        if self.specs.iter().any(|s| s.name == name) {
            return Err(Error::ColumnExists {
                counter: "(table)".into(),
                column: name.to_string(),
            });
        }
        self.specs.push(spec);
        Ok(self.specs.len() - 1)
    }

    /// The columns, by index.
    pub fn columns(&self) -> &[ColumnSpec] {
        &self.specs
    }

    fn spec(&self, col: usize) -> Result<&ColumnSpec> {
        self.specs.get(col).ok_or_else(|| Error::NoSuchColumn {
            counter: "(table)".into(),
            column: format!("#{col}"),
        })
    }

    /// Adds `delta` to column `col` of a row; same refusals as [`crate::Engine::incr`].
    #[inline]
    pub fn incr(&mut self, key: Key<'_>, col: usize, delta: i64) -> Result<u64> {
        key.validate()?;
        self.spec(col)?;
        if let Key::Id(id) = key {
            return self.rows.incr_id(id, col, delta, &self.specs);
        }
        let specs = &self.specs;
        let spec = &specs[col];
        self.rows
            .update(key, col, specs, |cur| apply_delta(cur, delta, spec))
    }

    /// Applies many increments of numeric rows in one call, in order, as fast as the
    /// memory allows. Ops go in groups of 32, in three passes: (1) route and hash each id
    /// and ask the CPU for its key lines and the likely line of its value (prefetch); (2)
    /// find each row in those lines and ask for the exact line of its value; (3) apply the
    /// ops in order. The first pass is short, so the page walks and cache misses of a
    /// whole group overlap; the later passes read lines that are there by then. The
    /// common case (row there, value stays inline) is updated in place; anything else
    /// goes through [`Table::incr`], and a row that a pass found but an earlier op of the
    /// group moved (insert, removal, growth) is looked up again.
    ///
    /// `out` receives one value per op: the column's new value, or 0 for an op that was
    /// refused. The refusals come back as `(op index, error)`, in order (an empty `Vec`,
    /// which does not allocate, when all went through): per-op `Result`s cost about a
    /// fifth of the time on a table that fits in cache.
    pub fn incr_many(
        &mut self,
        ops: &[(u64, usize, i64)],
        out: &mut Vec<u64>,
    ) -> Vec<(usize, Error)> {
        let mut refused = Vec::new();
        out.clear();
        out.reserve(ops.len());
        let ncols = self.specs.len();
        let mut looks = [None::<Located>; GROUP];
        for (group_no, group) in ops.chunks(GROUP).enumerate() {
            for (look, &(id, col, _)) in looks.iter_mut().zip(group) {
                *look = if col < ncols {
                    self.rows.aim(id, col)
                } else {
                    None
                };
            }
            for (look, &(_, col, _)) in looks.iter_mut().zip(group) {
                if let Some(located) = look.as_mut() {
                    self.rows.locate(located, col);
                }
            }
            for (in_group, (look, &(id, col, delta))) in looks.iter_mut().zip(group).enumerate() {
                let fast = match (look.take(), self.specs.get(col)) {
                    (Some(located), Some(spec)) => self.rows.incr_found(located, col, delta, spec),
                    _ => None,
                };
                let result = match fast {
                    Some(next) => Ok(next),
                    // The in-place attempt missed: straight to the general path (an
                    // unknown column gets its error from `incr`).
                    None if col < ncols => self.rows.incr_id_general(id, col, delta, &self.specs),
                    None => self.incr(Key::Id(id), col, delta),
                };
                out.push(result.unwrap_or_else(|e| {
                    refused.push((group_no * GROUP + in_group, e));
                    0
                }));
            }
        }
        refused
    }

    /// Sets column `col` of a row.
    pub fn set(&mut self, key: Key<'_>, col: usize, value: u64) -> Result<()> {
        key.validate()?;
        check_set(value, self.spec(col)?)?;
        self.rows.set(key, col, value, &self.specs);
        Ok(())
    }

    /// Column `col` of a row (its default if the row is not stored).
    #[inline]
    pub fn get(&self, key: Key<'_>, col: usize) -> Result<u64> {
        self.spec(col)?;
        Ok(self.rows.get(key, col, &self.specs))
    }

    /// Every column of a row.
    pub fn get_row(&self, key: Key<'_>) -> Vec<u64> {
        self.rows.get_row(key, &self.specs)
    }

    /// Deletes a row; returns whether it was stored.
    pub fn delete(&mut self, key: Key<'_>) -> bool {
        self.rows.delete(key, &self.specs)
    }

    /// Rows stored.
    pub fn rows(&self) -> usize {
        self.rows.rows()
    }

    /// Heap bytes held (exact for the tables, estimated for the side maps).
    pub fn bytes(&self) -> usize {
        self.rows.bytes()
    }

    /// Values kept in the overflow map.
    pub fn overflow_entries(&self) -> usize {
        self.rows.overflow_len()
    }

    /// (dense, wide) partitions in use.
    pub fn partitions(&self) -> (usize, usize) {
        self.rows.partitions()
    }
}

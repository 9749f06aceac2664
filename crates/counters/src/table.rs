//! An in-memory counter table without durability or locking.
//!
//! Exists for callers that keep counts they can rebuild (caches, tests, benchmarks) and
//! as the measure of the engine's raw table: the same stripe code the [`crate::Engine`]
//! uses, in one piece, behind `&mut self`.

use crate::column::{apply_delta, check_name, check_set, ColumnSpec};
use crate::error::{Error, Result};
use crate::key::Key;
use crate::stripe::Stripe;
use crate::ColumnOptions;

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
        let spec = ColumnSpec { name: name.to_string(), bits: opts.bits, max_bits: opts.max_bits, default: opts.default };
        spec.check().map_err(|reason| Error::BadColumn { column: name.to_string(), reason })?;
        if self.specs.iter().any(|s| s.name == name) {
            return Err(Error::ColumnExists { counter: "(table)".into(), column: name.to_string() });
        }
        self.specs.push(spec);
        Ok(self.specs.len() - 1)
    }

    /// The columns, by index.
    pub fn columns(&self) -> &[ColumnSpec] {
        &self.specs
    }

    fn spec(&self, col: usize) -> Result<&ColumnSpec> {
        self.specs
            .get(col)
            .ok_or_else(|| Error::NoSuchColumn { counter: "(table)".into(), column: format!("#{col}") })
    }

    /// Adds `delta` to column `col` of a row; same refusals as [`crate::Engine::incr`].
    #[inline]
    pub fn incr(&mut self, key: Key<'_>, col: usize, delta: i64) -> Result<u64> {
        key.validate()?;
        let spec = self.spec(col)?;
        if let Key::Id(id) = key {
            return self.rows.incr_id(id, col, delta, &self.specs);
        }
        let cur = self.rows.get(key, col, &self.specs);
        let next = apply_delta(cur, delta, spec)?;
        self.rows.set(key, col, next, &self.specs);
        Ok(next)
    }

    /// Applies many increments of numeric rows in one call, in order, with the memory
    /// look-ups of the op 16 places ahead started early (prefetch) so cache misses
    /// overlap. `out` receives one result per op. The common case (row there, value stays
    /// inline) goes straight to the partition without building an error path; anything
    /// else is [`Table::incr`].
    pub fn incr_many(&mut self, ops: &[(u64, usize, i64)], out: &mut Vec<Result<u64>>) {
        const AHEAD: usize = 16;
        out.clear();
        out.reserve(ops.len());
        for &(id, col, _) in ops.iter().take(AHEAD) {
            if col < self.specs.len() {
                self.rows.prefetch(id, col);
            }
        }
        for (j, &(id, col, delta)) in ops.iter().enumerate() {
            if let Some(&(nid, ncol, _)) = ops.get(j + AHEAD) {
                if ncol < self.specs.len() {
                    self.rows.prefetch(nid, ncol);
                }
            }
            let fast = match self.specs.get(col) {
                Some(spec) => self.rows.incr_inline(id, col, delta, spec),
                None => None,
            };
            out.push(match fast {
                Some(next) => Ok(next),
                None => self.incr(Key::Id(id), col, delta),
            });
        }
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

//! Merging a stripe's runs of cold string-keyed rows ([`crate::cold_names`]).
//!
//! Each eviction pass adds at most one run per stripe, and a write or delete of a cold
//! row leaves a dead entry behind; without merges a stripe would collect runs (each a
//! filter to ask on every look-up of an absent key, and RAM for its index) and disk
//! holding rows long gone. So after a pass's evictions, a stripe with more than
//! [`MAX_RUNS`] runs has its [`MERGE_WIDTH`] smallest (by live rows) merged into one,
//! and a run more than half dead is rewritten (merged with nothing). Size-tiered: a row
//! is rewritten about log4 of (its stripe's cold rows / a pass's rows) times in all.
//!
//! A merge streams: one block of each source at a time, read past the block cache, the
//! smallest key next, blocks written as they fill, the filter sized from the live rows
//! counted up front. So its memory is a few blocks whatever the runs' sizes. It works on
//! copies of the runs taken under the stripe's lock and writes with no lock held; then,
//! under the lock, the rows that died in the sources meanwhile (brought back by a write,
//! or deleted) are marked dead in the new run too, and the new run replaces the sources.
//! The new file is fsynced (with its directory) before anything points at it; until the
//! swap the sources serve, and a snapshot names whichever set it saw, both durable.

use std::io::Write;
use std::sync::Arc;

use crate::bloom::Bloom;
use crate::cold::{ColdShared, ColdStats};
use crate::cold_names::{encode_at, encode_index, NameRun, BLOCK_ROWS};
use crate::column::ColumnSpec;
use crate::error::{io_err, Result};
use crate::hash::hash_bytes;
use crate::name_block::{NameBlock, NameBlockEntry};

/// Runs a stripe may hold before its smallest are merged.
pub(crate) const MAX_RUNS: usize = 8;
/// Runs merged at once.
pub(crate) const MERGE_WIDTH: usize = 4;

/// The runs of a stripe to merge now (copies), or none.
pub(crate) fn pick(runs: &[NameRun]) -> Vec<NameRun> {
    if runs.len() > MAX_RUNS {
        let mut order: Vec<&NameRun> = runs.iter().collect();
        order.sort_by_key(|r| r.live_rows());
        return order.into_iter().take(MERGE_WIDTH).cloned().collect();
    }
    runs.iter()
        .filter(|r| u64::from(r.dead_rows()) * 2 > u64::from(r.rows()))
        .take(MERGE_WIDTH)
        .cloned()
        .collect()
}

/// Where a merge source is: its current block and row.
struct Cursor<'a> {
    run: &'a NameRun,
    block: Option<NameBlock>,
    bi: usize,
    r: usize,
}

impl Cursor<'_> {
    /// Moves to the next live row (from the current position on); false at the end.
    fn settle(&mut self) -> Result<bool> {
        loop {
            if self.block.is_none() {
                let Some(entry) = self.run.blocks().get(self.bi) else {
                    return Ok(false);
                };
                self.block = Some(self.run.file().read_name_block(entry)?);
                self.r = 0;
            }
            let len = self.block.as_ref().map_or(0, NameBlock::len);
            while self.r < len && self.run.is_dead(self.run.pos(self.bi, self.r)) {
                self.r += 1;
            }
            if self.r < len {
                return Ok(true);
            }
            self.block = None;
            self.bi += 1;
        }
    }

    fn key(&self) -> &[u8] {
        self.block.as_ref().map_or(&[], |b| b.key(self.r))
    }
}

/// Rows gathered for the next output block.
#[derive(Default)]
struct Pending {
    bytes: Vec<u8>,
    ends: Vec<usize>,
    columns: Vec<Vec<u64>>,
}

/// Merges `sources` (copies of runs of stripe `stripe`) into one new run in a new
/// batch file, every row with the columns of `specs` (missing ones at their defaults).
/// `None` when the sources hold no live row.
pub(crate) fn merge(
    shared: &Arc<ColdShared>,
    stats: &Arc<ColdStats>,
    stripe: usize,
    sources: &[NameRun],
    specs: &[ColumnSpec],
) -> Result<Option<NameRun>> {
    let live: u64 = sources.iter().map(NameRun::live_rows).sum();
    if live == 0 {
        return Ok(None);
    }
    let widths: Vec<u8> = specs.iter().map(|s| s.bits).collect();
    let (seq, path, file) = shared.create_batch()?;
    let mut out = std::io::BufWriter::with_capacity(1 << 20, file);
    let mut filter = Bloom::with_capacity(live as usize);
    let mut blocks: Vec<NameBlockEntry> = Vec::new();
    let mut offset = 0u64;
    let mut rows = 0u32;
    let mut cursors: Vec<Cursor<'_>> = sources
        .iter()
        .map(|run| Cursor {
            run,
            block: None,
            bi: 0,
            r: 0,
        })
        .collect();
    let mut alive = Vec::new();
    for c in cursors.iter_mut() {
        alive.push(c.settle()?);
    }
    let mut pending = Pending {
        columns: vec![Vec::with_capacity(BLOCK_ROWS); specs.len()],
        ..Pending::default()
    };
    let mut flush = |p: &mut Pending, out: &mut std::io::BufWriter<std::fs::File>| -> Result<()> {
        let keys: Vec<&[u8]> = (0..p.ends.len())
            .map(|r| &p.bytes[if r == 0 { 0 } else { p.ends[r - 1] }..p.ends[r]])
            .collect();
        let cols: Vec<&[u64]> = p.columns.iter().map(Vec::as_slice).collect();
        let (bytes, entry) = encode_at(&keys, &cols, &widths, offset, &path)?;
        out.write_all(&bytes).map_err(io_err(&path))?;
        blocks.push(entry);
        offset += bytes.len() as u64;
        p.bytes.clear();
        p.ends.clear();
        p.columns.iter_mut().for_each(Vec::clear);
        Ok(())
    };
    loop {
        // The smallest key among the sources (a key is live in at most one of them).
        let mut next: Option<usize> = None;
        for (i, c) in cursors.iter().enumerate() {
            if alive[i] && next.is_none_or(|n| c.key() < cursors[n].key()) {
                next = Some(i);
            }
        }
        let Some(i) = next else { break };
        let c = &mut cursors[i];
        let block = c.block.as_ref().expect("a settled cursor has a block");
        let key = block.key(c.r);
        filter.insert(hash_bytes(key));
        pending.bytes.extend_from_slice(key);
        pending.ends.push(pending.bytes.len());
        for (ci, (col, spec)) in pending.columns.iter_mut().zip(specs).enumerate() {
            col.push(block.columns.get(ci).map_or(spec.default, |vals| vals[c.r]));
        }
        rows += 1;
        c.r += 1;
        alive[i] = c.settle()?;
        if pending.ends.len() == BLOCK_ROWS {
            flush(&mut pending, &mut out)?;
        }
    }
    if !pending.ends.is_empty() {
        flush(&mut pending, &mut out)?;
    }
    let (tail, sizes) = encode_index(&[(stripe, rows, &filter, &blocks)], offset);
    out.write_all(&tail).map_err(io_err(&path))?;
    let file = out
        .into_inner()
        .map_err(|e| io_err(&path)(e.into_error()))?;
    file.sync_all().map_err(io_err(&path))?;
    crate::log::sync_dir(shared.dir())?;
    let file = crate::cold::ColdFile::written(shared, stats, seq, path, file);
    Ok(Some(NameRun::new(file, 0, blocks, filter, rows, sizes[0])))
}

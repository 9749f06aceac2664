//! Snapshot files: a point-in-time image of every counter, written in the background.
//!
//! `snap-<X, 20 digits>.snap`, where X is the lsn at which the log was rotated just
//! before the snapshot began. Layout: the magic `SKCSNAP2` (`SKCSNAP1` before frame `8`,
//! still read), then framed records
//! (`[len][crc32][payload]`, as in the log):
//!
//! - `1` header: X, stripes per counter;
//! - `3` rows of one stripe (chunked): counter index, stripe, stripe lsn L, columns, rows
//!   (each: key, then its columns as varints). Since 2026-11-26 written only as every
//!   stripe's last frame, with no rows (it marks the stripe's L), or for rows a block
//!   refused; still read with rows;
//! - `10` string-keyed rows of one stripe (chunked): counter index, stripe, L, the first
//!   and the last key (each its length, then its bytes), then the rows sorted by key as
//!   one block of the cold tier's string-key format ([`crate::name_block`]: keys
//!   front-coded, columns as varints, zstd, its own CRC);
//! - `8` integer-keyed rows of one stripe (chunked): counter index, stripe, L, then the
//!   rows sorted by id as one cold-tier block ([`crate::cold_block`]: id gaps in byte
//!   planes, columns as varints, zstd, its own CRC), ~4.7x smaller than the same rows
//!   in `3` on time-ordered ids (bench/notes/runs.md, "Snapshots as blocks");
//! - `4` transaction ids of one stripe: counter index, stripe, L, entries;
//! - `6` the cold partitions of one stripe: counter index, stripe, L, count,
//!   then per partition its high 32 bits, cold batch number, rows, and the low 32 bits of
//!   its first and last id. Their filters and block entries are in the batch file's own
//!   index ([`crate::cold_index`]), read at recovery; the rows let recovery tell a
//!   partition the file no longer holds whole, the ids name what was lost if so.
//! - `5` the same for partitions in batch files that have no index of their own (written
//!   before there was one, or whose index was damaged and rebuilt): per partition its
//!   high 32 bits, cold batch number, rows, filter words (count, then each as u64) and
//!   block index entries (count, then first id u64, last id u64, offset, length).
//!
//!   The batches `5` and `6` name are listed beside the snapshot in `coldrefs-X.list`
//!   (written first), so garbage collection keeps them while the snapshot is kept;
//! - `7` the string-keyed runs of one stripe ([`crate::cold_names`]): counter
//!   index, stripe, L, count, then per run its cold batch number, its place in the
//!   batch's index, rows, and its dead rows (count, then positions as gaps). The batch
//!   is listed in `coldrefs-X.list` as for `5` and `6`;
//! - `2` a counter: index, name, column specs (written after its stripes, so it names
//!   every column any stripe copy can hold);
//! - `9` end: the number of frames before it.
//!
//! Each stripe is copied under its read lock at its own moment; L is the log's next lsn
//! at that moment, so the copy holds exactly the stripe's records below L and recovery
//! replays the stripe's records from L on. Writers of a stripe wait only for its copy.

use std::fs::{self, File};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::codec::{frame, Put};
use crate::cold_block::{encode_block, Codec};
use crate::column::ColumnSpec;
use crate::error::{io_err, Result};
use crate::key::{Key, OwnedKey};
use crate::record::{write_key, write_spec};
use crate::stripe::Stripe;

/// Magic bytes at the start of every snapshot written now.
///
/// `2` since row frames `8` and `10` (2026-11-26): a build that knows only frame `3` would skip
/// them and load a snapshot without its integer-keyed rows, without a word; the new magic
/// makes it refuse the file instead (recovery reports it, `restore_snapshot` errs).
pub(crate) const MAGIC: &[u8; 8] = b"SKCSNAP2";

/// Magic bytes of snapshots written before frame `8` (rows as frame `3` only), still read.
pub(crate) const MAGIC_1: &[u8; 8] = b"SKCSNAP1";
/// Rows per row frame, so one damaged frame costs a bounded number of rows.
const CHUNK_ROWS: usize = 65_536;

/// The column values of a chunk of rows, column by column, and the columns' widths:
/// what both block frames gather before sorting. A column holds values up to its last
/// non-zero one; the rows past that are zeros (a string-keyed row of a counter of 80
/// columns often uses five, so most of its columns are never touched).
#[derive(Default)]
struct Columns {
    cols: Vec<Vec<u64>>,
    widths: Vec<u8>,
    /// Rows pushed.
    rows: usize,
}

impl Columns {
    /// Empties the columns (keeping what they have allocated) for a counter of `specs`.
    fn reset(&mut self, specs: &[ColumnSpec]) {
        self.cols.resize_with(specs.len(), Vec::new);
        self.clear();
        self.widths.clear();
        self.widths.extend(specs.iter().map(|s| s.bits));
    }

    /// Adds a row (`vals` may be shorter than the columns: the rest are zeros).
    fn push(&mut self, vals: &[u64]) {
        let row = self.rows;
        for (c, &v) in self.cols.iter_mut().zip(vals) {
            if v != 0 {
                c.resize(row, 0);
                c.push(v);
            }
        }
        self.rows += 1;
    }

    /// Each column's values in `order` (the chunk's rows sorted for its block), into
    /// `out` (its buffers reused); a column of zeros alone stays empty there (see
    /// [`SortedChunk::sort`]).
    fn permute_into(&self, order: &[usize], out: &mut Vec<Vec<u64>>) {
        out.resize_with(self.cols.len(), Vec::new);
        for (c, o) in self.cols.iter().zip(out.iter_mut()) {
            o.clear();
            if !c.is_empty() {
                o.extend(order.iter().map(|&i| c.get(i).copied().unwrap_or(0)));
            }
        }
    }

    fn clear(&mut self) {
        self.cols.iter_mut().for_each(Vec::clear);
        self.rows = 0;
    }
}

/// A chunk's rows in key order: the buffers one chunk sorts into, kept for the next.
#[derive(Default)]
struct SortedChunk {
    /// The chunk's row order.
    order: Vec<usize>,
    /// The chunk's columns in that order (an all-zero one empty, see `zeros`).
    cols: Vec<Vec<u64>>,
    /// Zeros, as many as the largest chunk's rows: every all-zero column's values.
    zeros: Vec<u64>,
}

impl SortedChunk {
    /// Orders `rows` rows by `cmp` and `values` the same way: the order, and each column
    /// as the block encoders take it (an all-zero column a run of `zeros`).
    fn sort(
        &mut self,
        rows: usize,
        cmp: impl FnMut(&usize, &usize) -> std::cmp::Ordering,
        values: &Columns,
    ) -> (&[usize], Vec<&[u64]>) {
        self.order.clear();
        self.order.extend(0..rows);
        self.order.sort_unstable_by(cmp);
        values.permute_into(&self.order, &mut self.cols);
        if self.zeros.len() < rows {
            self.zeros.resize(rows, 0);
        }
        let zeros = &self.zeros[..rows];
        let refs = self
            .cols
            .iter()
            .map(|c| if c.is_empty() { zeros } else { c.as_slice() })
            .collect();
        (&self.order, refs)
    }
}

/// Sorted columns copied whole, for a frame `3`.
fn whole(refs: &[&[u64]]) -> Vec<Vec<u64>> {
    refs.iter().map(|c| c.to_vec()).collect()
}

/// A chunk of a stripe's integer-keyed rows on their way into a frame `8`.
#[derive(Default)]
struct IdRows {
    ids: Vec<u64>,
    values: Columns,
}

/// The start of a row frame: its kind, the counter's index, the stripe, the stripe's L.
fn row_head(kind: u8, counter: usize, stripe: usize, lsn: u64) -> Vec<u8> {
    let mut p = vec![kind];
    p.put_var(counter as u64);
    p.put_var(stripe as u64);
    p.put_u64(lsn);
    p
}

/// `head` followed by the rest of a frame `3`: the columns, the rows, each its key and
/// its values (what a block that refused rows falls back to, and every stripe's last
/// frame, with no rows).
fn rows_frame3(
    mut head: Vec<u8>,
    keys: impl ExactSizeIterator<Item = OwnedKey>,
    cols: &[Vec<u64>],
) -> Vec<u8> {
    head.put_var(cols.len() as u64);
    head.put_var(keys.len() as u64);
    for (r, key) in keys.enumerate() {
        write_key(&mut head, key.as_key());
        cols.iter().for_each(|c| head.put_var(c[r]));
    }
    head
}

/// A chunk of a stripe's string-keyed rows on their way into a frame `10`: the keys'
/// bytes back to back.
#[derive(Default)]
struct NameRows {
    bytes: Vec<u8>,
    ends: Vec<usize>,
    values: Columns,
}

impl NameRows {
    fn push(&mut self, key: &[u8], vals: &[u64]) {
        self.bytes.extend_from_slice(key);
        self.ends.push(self.bytes.len());
        self.values.push(vals);
    }

    fn key(&self, r: usize) -> &[u8] {
        let start = if r == 0 { 0 } else { self.ends[r - 1] };
        &self.bytes[start..self.ends[r]]
    }

    fn clear(&mut self) {
        self.bytes.clear();
        self.ends.clear();
        self.values.clear();
    }
}

/// File name of the snapshot taken at rotation point `x`.
pub(crate) fn snapshot_name(x: u64) -> String {
    format!("snap-{x:020}.snap")
}

/// Lists finished snapshots as (X, path), newest first.
pub(crate) fn list(dir: &Path) -> Result<Vec<(u64, PathBuf)>> {
    let mut out = crate::numbered::numbered_files(dir, "snap-", ".snap")?;
    out.reverse();
    Ok(out)
}

/// Streams frames to a temporary file; [`SnapWriter::finish`] makes it durable and
/// renames it into place.
pub(crate) struct SnapWriter {
    out: BufWriter<File>,
    tmp: PathBuf,
    path: PathBuf,
    frames: u64,
    scratch: Vec<u8>,
    /// The chunk buffers, kept from stripe to stripe for the snapshot's life: made anew
    /// for each of a counter's 32 stripes they were allocated, grown and zero-filled by
    /// the kernel each time (a counter of 80 columns gathers 40 MiB a 65,536-row
    /// chunk), which was half of a big snapshot's CPU (bench/notes/runs.md).
    chunks: Chunks,
}

/// [`SnapWriter`]'s reusable buffers for one chunk of rows.
#[derive(Default)]
struct Chunks {
    ids: IdRows,
    names: NameRows,
    sorted: SortedChunk,
}

impl SnapWriter {
    /// Starts `snap-X.snap` (as a `.tmp` until finished).
    pub(crate) fn create(dir: &Path, x: u64, stripes: usize) -> Result<SnapWriter> {
        let path = dir.join(snapshot_name(x));
        let tmp = path.with_extension("tmp");
        let file = File::create(&tmp).map_err(io_err(&tmp))?;
        let mut w = SnapWriter {
            out: BufWriter::with_capacity(1 << 20, file),
            tmp,
            path,
            frames: 0,
            scratch: Vec::new(),
            chunks: Chunks::default(),
        };
        w.out.write_all(MAGIC).map_err(io_err(&w.tmp))?;
        let mut p = Vec::new();
        p.put_u8(1);
        p.put_u64(x);
        p.put_var(stripes as u64);
        w.frame(&p)?;
        Ok(w)
    }

    fn frame(&mut self, payload: &[u8]) -> Result<()> {
        self.scratch.clear();
        frame(&mut self.scratch, payload);
        self.frames += 1;
        self.out.write_all(&self.scratch).map_err(io_err(&self.tmp))
    }

    /// Writes the rows of one stripe copy, in frames of at most `CHUNK_ROWS` rows.
    pub(crate) fn stripe_rows(
        &mut self,
        counter: usize,
        stripe: usize,
        lsn: u64,
        copy: &Stripe,
        specs: &[ColumnSpec],
    ) -> Result<u64> {
        let mut total = 0u64;
        let mut err = None;
        // Only these two out: `name_rows` and `id_rows` use the others meanwhile.
        let mut ids = std::mem::take(&mut self.chunks.ids);
        let mut names = std::mem::take(&mut self.chunks.names);
        ids.ids.clear();
        ids.values.reset(specs);
        names.clear();
        names.values.reset(specs);
        copy.for_each_row(specs, |k, vals| {
            total += 1;
            let written = match k {
                Key::Id(id) => {
                    ids.ids.push(id);
                    ids.values.push(vals);
                    if ids.ids.len() < CHUNK_ROWS || err.is_some() {
                        return;
                    }
                    self.id_rows(counter, stripe, lsn, &mut ids)
                }
                Key::Name(name) => {
                    names.push(name.as_bytes(), vals);
                    if names.ends.len() < CHUNK_ROWS || err.is_some() {
                        return;
                    }
                    self.name_rows(counter, stripe, lsn, &mut names)
                }
            };
            if let Err(e) = written {
                err = Some(e);
            }
        });
        if let Some(e) = err {
            return Err(e);
        }
        if !ids.ids.is_empty() {
            self.id_rows(counter, stripe, lsn, &mut ids)?;
        }
        if !names.ends.is_empty() {
            self.name_rows(counter, stripe, lsn, &mut names)?;
        }
        self.chunks.ids = ids;
        self.chunks.names = names;
        // Every stripe ends with a frame `3` (no rows now): it marks the stripe's L even
        // when the stripe holds no row.
        let no_rows = vec![Vec::new(); specs.len()];
        let p = rows_frame3(
            row_head(3, counter, stripe, lsn),
            std::iter::empty(),
            &no_rows,
        );
        self.frame(&p)?;
        Ok(total)
    }

    /// Writes `rows` (then empties them) as a frame `10`: sorted by key, one block of
    /// the cold tier's string-key format, its first and last key before it (the block
    /// is checked against them). Should the block refuse them, they go as a frame `3`.
    fn name_rows(
        &mut self,
        counter: usize,
        stripe: usize,
        lsn: u64,
        rows: &mut NameRows,
    ) -> Result<()> {
        let (order, refs) = self.chunks.sorted.sort(
            rows.ends.len(),
            |&a, &b| rows.key(a).cmp(rows.key(b)),
            &rows.values,
        );
        let keys: Vec<&[u8]> = order.iter().map(|&i| rows.key(i)).collect();
        let widths = &rows.values.widths;
        let p = match crate::name_block::encode_at_level(&keys, &refs, widths, Codec::Zstd, 1) {
            Ok(block) => {
                let mut p = row_head(10, counter, stripe, lsn);
                for key in [keys[0], keys[keys.len() - 1]] {
                    p.put_var(key.len() as u64);
                    p.extend_from_slice(key);
                }
                p.extend_from_slice(&block);
                p
            }
            Err(_) => {
                let names = keys
                    .iter()
                    .map(|k| OwnedKey::Name(String::from_utf8_lossy(k).into_owned().into()));
                rows_frame3(row_head(3, counter, stripe, lsn), names, &whole(&refs))
            }
        };
        rows.clear();
        self.frame(&p)
    }

    /// Writes `rows` (then empties them) as a frame `8`: sorted by id, one block. Should
    /// the block refuse them (ids repeated: never in a stripe), they go as a frame `3`.
    fn id_rows(
        &mut self,
        counter: usize,
        stripe: usize,
        lsn: u64,
        rows: &mut IdRows,
    ) -> Result<()> {
        let (order, refs) = self.chunks.sorted.sort(
            rows.ids.len(),
            |&a, &b| rows.ids[a].cmp(&rows.ids[b]),
            &rows.values,
        );
        let ids: Vec<u64> = order.iter().map(|&i| rows.ids[i]).collect();
        let p = match encode_block(&ids, &refs, &rows.values.widths, Codec::Zstd) {
            Ok(block) => {
                let mut p = row_head(8, counter, stripe, lsn);
                p.extend_from_slice(&block);
                p
            }
            Err(_) => rows_frame3(
                row_head(3, counter, stripe, lsn),
                ids.iter().map(|&id| OwnedKey::Id(id)),
                &whole(&refs),
            ),
        };
        rows.ids.clear();
        rows.values.clear();
        self.frame(&p)
    }

    /// Writes the cold partitions of one stripe copy (nothing if it has none): frame `6`
    /// naming those whose batch file holds their index, frame `5` carrying the index of
    /// the others.
    pub(crate) fn cold_parts(
        &mut self,
        counter: usize,
        stripe: usize,
        lsn: u64,
        copy: &Stripe,
    ) -> Result<()> {
        let (named, carried): (Vec<_>, Vec<_>) = copy
            .cold_parts()
            .partition(|(_, part)| part.file().indexed());
        let head = |kind: u8, count: usize| {
            let mut p = Vec::new();
            p.put_u8(kind);
            p.put_var(counter as u64);
            p.put_var(stripe as u64);
            p.put_u64(lsn);
            p.put_var(count as u64);
            p
        };
        if !named.is_empty() {
            let mut p = head(6, named.len());
            for (high, part) in &named {
                p.put_var(u64::from(*high));
                p.put_var(part.file().seq());
                p.put_var(part.rows());
                let (first, last) = part.id_range();
                p.put_var(first & 0xFFFF_FFFF);
                p.put_var(last & 0xFFFF_FFFF);
            }
            self.frame(&p)?;
        }
        if !carried.is_empty() {
            let mut p = head(5, carried.len());
            for (high, part) in &carried {
                p.put_var(u64::from(*high));
                p.put_var(part.file().seq());
                p.put_var(part.rows());
                let words = part.filter().words();
                p.put_var(words.len() as u64);
                for w in words {
                    p.put_u64(*w);
                }
                p.put_var(part.blocks().len() as u64);
                for b in part.blocks() {
                    p.put_u64(b.first_id);
                    p.put_u64(b.last_id);
                    p.put_var(b.offset);
                    p.put_var(u64::from(b.len));
                }
            }
            self.frame(&p)?;
        }
        Ok(())
    }

    /// Writes the string-keyed runs of one stripe copy (nothing if it has none): frame
    /// `7`, per run its cold batch number, place in the batch's index, rows, and the
    /// positions of its dead rows (count, then each as the gap from the previous one).
    pub(crate) fn name_runs(
        &mut self,
        counter: usize,
        stripe: usize,
        lsn: u64,
        runs: &[crate::cold_names::NameRun],
    ) -> Result<()> {
        if runs.is_empty() {
            return Ok(());
        }
        let mut p = Vec::new();
        p.put_u8(7);
        p.put_var(counter as u64);
        p.put_var(stripe as u64);
        p.put_u64(lsn);
        p.put_var(runs.len() as u64);
        for run in runs {
            p.put_var(run.file().seq());
            p.put_var(u64::from(run.place()));
            p.put_var(u64::from(run.rows()));
            let dead: Vec<u32> = run.dead().collect();
            p.put_var(dead.len() as u64);
            let mut prev = 0;
            for d in dead {
                p.put_var(u64::from(d - prev));
                prev = d;
            }
        }
        self.frame(&p)
    }

    /// Writes the transaction-id window of one stripe copy.
    pub(crate) fn txids<'a>(
        &mut self,
        counter: usize,
        stripe: usize,
        lsn: u64,
        entries: impl Iterator<Item = &'a (u64, crate::key::OwnedKey, Box<str>)>,
    ) -> Result<()> {
        let entries: Vec<_> = entries.collect();
        if entries.is_empty() {
            return Ok(());
        }
        let mut p = Vec::new();
        p.put_u8(4);
        p.put_var(counter as u64);
        p.put_var(stripe as u64);
        p.put_u64(lsn);
        p.put_var(entries.len() as u64);
        for (at, k, t) in entries {
            p.put_var(*at);
            write_key(&mut p, k.as_key());
            p.put_str(t);
        }
        self.frame(&p)
    }

    /// Writes a counter's name and columns.
    pub(crate) fn counter(
        &mut self,
        counter: usize,
        name: &str,
        specs: &[ColumnSpec],
    ) -> Result<()> {
        let mut p = Vec::new();
        p.put_u8(2);
        p.put_var(counter as u64);
        p.put_str(name);
        p.put_var(specs.len() as u64);
        for s in specs {
            write_spec(&mut p, s);
        }
        self.frame(&p)
    }

    /// Writes the end frame, fsyncs, renames into place and fsyncs the directory.
    pub(crate) fn finish(mut self, dir: &Path) -> Result<PathBuf> {
        let mut p = Vec::new();
        p.put_u8(9);
        p.put_var(self.frames);
        self.frame(&p)?;
        let file = self
            .out
            .into_inner()
            .map_err(|e| io_err(&self.tmp)(e.into_error()))?;
        file.sync_all().map_err(io_err(&self.tmp))?;
        drop(file);
        fs::rename(&self.tmp, &self.path).map_err(io_err(&self.tmp))?;
        crate::log::sync_dir(dir)?;
        Ok(self.path)
    }
}

//! String-keyed rows in the cold tier: runs of rows on disk, their files and
//! their in-RAM index.
//!
//! A string-keyed row not written for `cold_after` (or, under `max_memory`, one not
//! written since the last pass) leaves its stripe's [`crate::names::NameTable`] for a
//! *run*: the evicted rows of one stripe, sorted by key, in blocks of at most
//! [`BLOCK_ROWS`] ([`crate::name_block`]). Rows go one by one, not by partition as
//! numeric ids do: a key says nothing about its age (`<link id>:<day>` of yesterday and
//! of today hash anywhere), so each row carries its own written bit.
//!
//! One eviction pass writes the runs of one counter's stripes into one cold batch file
//! (`cold-<seq>.blk`, numbered with the id batches, so the snapshot's `coldrefs-X.list`
//! and garbage collection cover both): the blocks, then the index, then a footer:
//!
//! ```text
//! index:  runs var, then per run: stripe var | rows var | rows a block var
//!         | filter words var | each u64
//!         | blocks var | each: first key (len var, bytes) | last key | offset var | len var
//! footer: index offset u64 | index length u32 | crc32 of the index u32 | "SKNAMEIX"
//! ```
//!
//! RAM keeps per run its blocks' first and last keys, a Bloom filter of its keys' hashes
//! and a *dead* bitmap: a key is in at most one place (the stripe's table, or one run
//! where it is not dead). A write to a cold row brings it back into the table and marks
//! its run entry dead; so does a delete (the write path brings the row back first). A
//! run all dead is dropped. Snapshots name each run by batch and place and carry its dead
//! entries (frame `7`); the file itself is never written again.
//!
//! Left for later: merging a stripe's runs (each pass adds at most one per stripe; a
//! look-up of an absent key asks every run's filter, ~1% false positives each).

use std::io::Write;
use std::sync::Arc;

use crate::bloom::Bloom;
use crate::codec::{crc, Put, Reader};
use crate::cold::{ColdFile, ColdShared, ColdStats};
use crate::cold_block::Codec;
use crate::error::{io_err, Error, Result};
use crate::hash::hash_bytes;
use crate::name_block::{encode, NameBlockEntry};
use crate::names::CopiedRow;

/// Rows per block at most: far fewer than the id blocks' 4,096, because a read of one
/// row decodes its whole block and string keys cost more to decode than id gaps
/// (front-coded keys rebuilt one by one). Measured (bench/notes/runs.md, "String-keyed rows
/// in the cold tier", 10 M rows of 18-byte keys): a cold read p50/p99 of ~290-370/~510-550 µs at
/// 4,096 rows, 70/142 µs at 1,024 and 28/54 µs at 256, for 12.08 bytes a row on disk at
/// 1,024 and 12.68 at 256 (+5%).
pub(crate) const BLOCK_ROWS: usize = 256;
/// Last bytes of a string-key batch file.
const MAGIC: &[u8; 8] = b"SKNAMEIX";
const FOOTER_BYTES: usize = 24;

/// The rows of one stripe taken out of RAM, sorted by key.
pub(crate) struct FrozenNames {
    /// The stripe they came from.
    pub stripe: usize,
    /// Every key's bytes, back to back, in key order.
    pub bytes: Vec<u8>,
    /// Where key `r` ends in `bytes`.
    pub ends: Vec<usize>,
    /// `columns[c][r]`: column `c` of row `r`.
    pub columns: Vec<Vec<u64>>,
}

impl FrozenNames {
    /// Key of row `r`.
    pub(crate) fn key(&self, r: usize) -> &[u8] {
        let start = if r == 0 { 0 } else { self.ends[r - 1] };
        &self.bytes[start..self.ends[r]]
    }

    /// Rows held.
    pub(crate) fn len(&self) -> usize {
        self.ends.len()
    }

    /// Rows `(key, values)` in any order, sorted by key into a frozen run.
    pub(crate) fn sorted(stripe: usize, mut rows: Vec<CopiedRow>, ncols: usize) -> Self {
        rows.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        // A copy taken in steps may hold a row twice (the index moved between steps).
        rows.dedup_by(|a, b| a.0 == b.0);
        let mut out = FrozenNames {
            stripe,
            bytes: Vec::with_capacity(rows.iter().map(|r| r.0.len()).sum()),
            ends: Vec::with_capacity(rows.len()),
            columns: vec![Vec::with_capacity(rows.len()); ncols],
        };
        for (k, vals) in rows {
            out.bytes.extend_from_slice(&k);
            out.ends.push(out.bytes.len());
            for (c, col) in out.columns.iter_mut().enumerate() {
                col.push(vals[c]);
            }
        }
        out
    }

    /// Bytes this copy holds (what bounds an eviction batch).
    pub(crate) fn bytes(&self) -> usize {
        self.bytes.len() + self.len() * 8 * (1 + self.columns.len())
    }
}

/// One run as RAM keeps it. The blocks and filter are shared, so a snapshot's copy of a
/// stripe costs a few pointers and the dead bitmap.
#[derive(Clone)]
pub(crate) struct NameRun {
    file: Arc<ColdFile>,
    /// The run's place in its file's index.
    place: u32,
    blocks: Arc<[NameBlockEntry]>,
    filter: Arc<Bloom>,
    rows: u32,
    /// Rows a block holds (every block but the last is full): [`BLOCK_ROWS`] when it
    /// was written, kept in the batch's index so positions keep their meaning if that
    /// changes.
    block_rows: u32,
    /// Bit `i` set: row `i` of the run (block `i / block_rows`, row `i % block_rows`) is
    /// dead. Empty until the first death.
    dead: Vec<u64>,
    dead_count: u32,
    index_bytes: u32,
}

impl std::fmt::Debug for NameRun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NameRun")
            .field("file", &self.file.path())
            .field("place", &self.place)
            .field("rows", &self.rows)
            .field("dead", &self.dead_count)
            .finish()
    }
}

/// A row found in a run: where (to mark it dead) and its values.
pub(crate) struct Found {
    /// Its position in the run.
    pub pos: u32,
    /// Its values, as many as the counter had columns when it was evicted.
    pub values: Vec<u64>,
}

impl NameRun {
    /// A run just written (no row dead).
    pub(crate) fn new(
        file: Arc<ColdFile>,
        place: u32,
        blocks: Vec<NameBlockEntry>,
        filter: Bloom,
        rows: u32,
        index_bytes: u32,
    ) -> NameRun {
        NameRun {
            file,
            place,
            blocks: blocks.into(),
            filter: Arc::new(filter),
            rows,
            block_rows: BLOCK_ROWS as u32,
            dead: Vec::new(),
            dead_count: 0,
            index_bytes,
        }
    }

    /// Whether `other` is this run (the same place of the same batch), whatever rows
    /// either has seen die since.
    pub(crate) fn same(&self, other: &NameRun) -> bool {
        self.id() == other.id()
    }

    /// Its batch number and place: who it is, whatever its dead rows.
    pub(crate) fn id(&self) -> (u64, u32) {
        (self.file.seq(), self.place)
    }

    /// The run with every row dead: how an eviction puts a new run in its stripe, before
    /// it replaces the rows in RAM one by one ([`NameRun::revive`]), so a key is never
    /// in neither place.
    pub(crate) fn into_all_dead(mut self) -> NameRun {
        let mut dead = vec![0u64; (self.slots() as usize).div_ceil(64)];
        for pos in 0..self.rows as usize {
            dead[pos / 64] |= 1 << (pos % 64);
        }
        self.dead = dead;
        self.dead_count = self.rows;
        self
    }

    /// Marks row `pos` live again (its row in RAM was just dropped for it).
    pub(crate) fn revive(&mut self, pos: u32) {
        if self.is_dead(pos) {
            self.dead[pos as usize / 64] &= !(1 << (pos % 64));
            self.dead_count -= 1;
        }
    }

    /// Its blocks' index entries, in key order.
    pub(crate) fn blocks(&self) -> &[NameBlockEntry] {
        &self.blocks
    }

    /// Rows marked dead.
    pub(crate) fn dead_rows(&self) -> u32 {
        self.dead_count
    }

    /// The key at position `pos` (read from its block, through the cache).
    pub(crate) fn key_at(&self, pos: u32) -> Result<Option<Box<[u8]>>> {
        let n = self.block_rows as usize;
        let (bi, r) = (pos as usize / n, pos as usize % n);
        let Some(entry) = self.blocks.get(bi) else {
            return Ok(None);
        };
        let block = self.file.name_block(entry)?;
        Ok((r < block.len()).then(|| block.key(r).into()))
    }

    /// The batch file it is in.
    pub(crate) fn file(&self) -> &ColdFile {
        &self.file
    }

    /// Its place in the file's index.
    pub(crate) fn place(&self) -> u32 {
        self.place
    }

    /// Rows written to it.
    pub(crate) fn rows(&self) -> u32 {
        self.rows
    }

    /// Rows not dead: the ones it still holds.
    pub(crate) fn live_rows(&self) -> u64 {
        u64::from(self.rows - self.dead_count)
    }

    /// Positions of the dead rows, ascending (for a snapshot).
    pub(crate) fn dead(&self) -> impl Iterator<Item = u32> + '_ {
        self.dead.iter().enumerate().flat_map(|(w, &bits)| {
            (0..64)
                .filter(move |b| bits & (1 << b) != 0)
                .map(move |b| (w * 64 + b) as u32)
        })
    }

    /// Positions live in `earlier` (a copy of this run taken before) and dead in this
    /// one: the rows that died since the copy. With `gone` (the run itself was dropped,
    /// all dead), every position live in `earlier`.
    pub(crate) fn died_since(earlier: &NameRun, now: Option<&NameRun>) -> Vec<u32> {
        let words = (earlier.slots() as usize).div_ceil(64);
        let mut out = Vec::new();
        for w in 0..words {
            let before = earlier.dead.get(w).copied().unwrap_or(0);
            let after = match now {
                Some(n) => n.dead.get(w).copied().unwrap_or(0),
                None => u64::MAX,
            };
            let mut bits = after & !before;
            while bits != 0 {
                let b = bits.trailing_zeros();
                bits &= bits - 1;
                let pos = (w * 64) as u32 + b;
                if pos < earlier.slots() {
                    out.push(pos);
                }
            }
        }
        out
    }

    /// The position of row `r` of block `bi`.
    pub(crate) fn pos(&self, bi: usize, r: usize) -> u32 {
        (bi * self.block_rows as usize + r) as u32
    }

    /// The run with the rows a snapshot says are dead marked so; `None` when a position
    /// is past its end (the snapshot does not describe this run).
    pub(crate) fn with_dead(mut self, dead: &[u32]) -> Option<NameRun> {
        for &pos in dead {
            if pos >= self.slots() {
                return None;
            }
            self.kill(pos);
        }
        Some(self)
    }

    /// Whether row `pos` is dead.
    pub(crate) fn is_dead(&self, pos: u32) -> bool {
        self.dead
            .get(pos as usize / 64)
            .is_some_and(|w| w & (1 << (pos % 64)) != 0)
    }

    /// Marks row `pos` dead (its row is in the table again, or deleted). Returns whether
    /// the run is now all dead.
    pub(crate) fn kill(&mut self, pos: u32) -> bool {
        if pos >= self.slots() || self.is_dead(pos) {
            return self.dead_count == self.rows;
        }
        if self.dead.is_empty() {
            self.dead = vec![0; (self.slots() as usize).div_ceil(64)];
        }
        self.dead[pos as usize / 64] |= 1 << (pos % 64);
        self.dead_count += 1;
        self.dead_count == self.rows
    }

    /// Positions a run of these blocks may use.
    fn slots(&self) -> u32 {
        (self.blocks.len() * self.block_rows as usize) as u32
    }

    /// The live row of `key`, if this run holds one: the filter, then the one block
    /// whose range covers it.
    pub(crate) fn find(&self, key: &[u8]) -> Result<Option<Found>> {
        if !self.filter.may_hold(hash_bytes(key)) {
            return Ok(None);
        }
        let i = self.blocks.partition_point(|b| *b.first_key <= *key);
        let Some(bi) = i.checked_sub(1) else {
            return Ok(None);
        };
        let entry = &self.blocks[bi];
        if !entry.covers(key) {
            return Ok(None);
        }
        let block = self.file.name_block(entry)?;
        let Some(r) = block.find(key) else {
            return Ok(None);
        };
        let pos = self.pos(bi, r);
        if self.is_dead(pos) {
            return Ok(None);
        }
        Ok(Some(Found {
            pos,
            values: block.columns.iter().map(|c| c[r]).collect(),
        }))
    }

    /// Calls `f` with every live row's key and values, in key order (`SCAN`).
    pub(crate) fn for_each_live(&self, mut f: impl FnMut(&[u8], &[u64])) -> Result<()> {
        let mut vals = Vec::new();
        for (bi, entry) in self.blocks.iter().enumerate() {
            let block = self.file.name_block(entry)?;
            for r in 0..block.len() {
                if self.is_dead(self.pos(bi, r)) {
                    continue;
                }
                vals.clear();
                vals.extend(block.columns.iter().map(|c| c[r]));
                f(block.key(r), &vals);
            }
        }
        Ok(())
    }

    /// RAM its index takes (block keys, filter, dead bitmap, the struct).
    pub(crate) fn bytes_ram(&self) -> usize {
        std::mem::size_of::<NameRun>()
            + self
                .blocks
                .iter()
                .map(|b| {
                    std::mem::size_of::<NameBlockEntry>() + b.first_key.len() + b.last_key.len()
                })
                .sum::<usize>()
            + self.filter.bytes()
            + self.dead.len() * 8
    }

    /// Bytes of its blocks and index entry on disk.
    pub(crate) fn bytes_disk(&self) -> u64 {
        self.blocks.iter().map(|b| u64::from(b.len)).sum::<u64>() + u64::from(self.index_bytes)
    }

    /// Its first and last key (to name what is lost when it cannot be read back).
    pub(crate) fn key_range(&self) -> (String, String) {
        let first = self
            .blocks
            .first()
            .map(|b| &b.first_key[..])
            .unwrap_or_default();
        let last = self
            .blocks
            .last()
            .map(|b| &b.last_key[..])
            .unwrap_or_default();
        (
            String::from_utf8_lossy(first).into_owned(),
            String::from_utf8_lossy(last).into_owned(),
        )
    }
}

/// Writes the runs of one eviction pass over one counter (`widths`: its columns) as a
/// new cold batch file, blocks then index then footer, fsyncs it and its directory, and
/// returns each run in order. Nothing points at the file until this returns, so a crash
/// part-way leaves only an unnamed file for garbage collection.
pub(crate) fn write_batch(
    shared: &Arc<ColdShared>,
    stats: &Arc<ColdStats>,
    runs: &[FrozenNames],
    widths: &[u8],
) -> Result<Vec<NameRun>> {
    let (seq, path, mut file) = shared.create_batch()?;
    let mut out = Vec::new();
    let mut indexes = Vec::with_capacity(runs.len());
    for run in runs {
        let mut blocks = Vec::new();
        for start in (0..run.len()).step_by(BLOCK_ROWS) {
            let end = (start + BLOCK_ROWS).min(run.len());
            let keys: Vec<&[u8]> = (start..end).map(|r| run.key(r)).collect();
            let cols: Vec<&[u64]> = run.columns.iter().map(|c| &c[start..end]).collect();
            let (bytes, entry) = encode_at(&keys, &cols, widths, out.len() as u64, &path)?;
            blocks.push(entry);
            out.extend_from_slice(&bytes);
        }
        let filter = Bloom::of((0..run.len()).map(|r| hash_bytes(run.key(r))));
        indexes.push((blocks, filter));
    }
    let listed: Vec<_> = runs
        .iter()
        .zip(&indexes)
        .map(|(run, (blocks, filter))| (run.stripe, run.len() as u32, filter, blocks.as_slice()))
        .collect();
    let (tail, sizes) = encode_index(&listed, out.len() as u64);
    out.extend_from_slice(&tail);
    file.write_all(&out).map_err(io_err(&path))?;
    file.sync_all().map_err(io_err(&path))?;
    crate::log::sync_dir(shared.dir())?;
    let file = ColdFile::written(shared, stats, seq, path, file);
    Ok(runs
        .iter()
        .zip(indexes)
        .zip(sizes)
        .enumerate()
        .map(|(place, ((run, (blocks, filter)), size))| {
            NameRun::new(
                file.clone(),
                place as u32,
                blocks,
                filter,
                run.len() as u32,
                size,
            )
        })
        .collect())
}

/// One block of `keys` (at least one, in order) and `cols`, to be written at `offset`
/// of the batch file `path`, with its index entry. What eviction and merges share.
pub(crate) fn encode_at(
    keys: &[&[u8]],
    cols: &[&[u64]],
    widths: &[u8],
    offset: u64,
    path: &std::path::Path,
) -> Result<(Vec<u8>, NameBlockEntry)> {
    let bytes = encode(keys, cols, widths, Codec::Zstd).map_err(|e| Error::Corrupt {
        path: path.to_path_buf(),
        reason: e.to_string(),
    })?;
    let entry = NameBlockEntry {
        first_key: keys[0].into(),
        last_key: keys[keys.len() - 1].into(),
        offset,
        len: bytes.len() as u32,
    };
    Ok((bytes, entry))
}

/// The index and footer of a string-key batch whose blocks end at `index_offset`, for
/// runs `(stripe, rows, filter, blocks)`, and each run's share of the index in bytes.
pub(crate) fn encode_index(
    runs: &[(usize, u32, &Bloom, &[NameBlockEntry])],
    index_offset: u64,
) -> (Vec<u8>, Vec<u32>) {
    let mut index = Vec::new();
    let mut sizes = Vec::with_capacity(runs.len());
    index.put_var(runs.len() as u64);
    for (stripe, rows, filter, blocks) in runs {
        let start = index.len();
        index.put_var(*stripe as u64);
        index.put_var(u64::from(*rows));
        index.put_var(BLOCK_ROWS as u64);
        index.put_var(filter.words().len() as u64);
        for w in filter.words() {
            index.put_u64(*w);
        }
        index.put_var(blocks.len() as u64);
        for b in *blocks {
            index.put_var(b.first_key.len() as u64);
            index.extend_from_slice(&b.first_key);
            index.put_var(b.last_key.len() as u64);
            index.extend_from_slice(&b.last_key);
            index.put_var(b.offset);
            index.put_var(u64::from(b.len));
        }
        sizes.push((index.len() - start) as u32);
    }
    let mut out = index.clone();
    out.put_u64(index_offset);
    out.put_u32(index.len() as u32);
    out.put_u32(crc(&index));
    out.extend_from_slice(MAGIC);
    (out, sizes)
}

/// A run as a batch file's index lists it.
pub(crate) struct IndexedRun {
    /// The stripe it belongs to.
    pub stripe: usize,
    /// The run itself, no row dead yet.
    pub run: NameRun,
}

/// Reads the index of string-key batch `file` (recovery, for a snapshot that names its
/// runs). A missing or damaged index is an error: the caller reports the runs it named
/// as lost, with their keys where it knows them.
pub(crate) fn read_index(file: &Arc<ColdFile>) -> Result<Vec<IndexedRun>> {
    let path = file.path().to_path_buf();
    let bad = |reason: &str| Error::Corrupt {
        path: path.clone(),
        reason: format!("string-key batch index: {reason}"),
    };
    let h = file.handle();
    let len = h.metadata().map_err(io_err(&path))?.len();
    if len < FOOTER_BYTES as u64 {
        return Err(bad("the file is shorter than its footer"));
    }
    let mut footer = [0u8; FOOTER_BYTES];
    std::os::unix::fs::FileExt::read_exact_at(h, &mut footer, len - FOOTER_BYTES as u64)
        .map_err(io_err(&path))?;
    if &footer[16..] != MAGIC {
        return Err(bad("no footer"));
    }
    let off = u64::from_le_bytes(footer[..8].try_into().expect("8 bytes"));
    let n = u32::from_le_bytes(footer[8..12].try_into().expect("4 bytes")) as u64;
    let sum = u32::from_le_bytes(footer[12..16].try_into().expect("4 bytes"));
    if off.checked_add(n) != Some(len - FOOTER_BYTES as u64) {
        return Err(bad("the footer's offsets do not fit the file"));
    }
    let mut index = vec![0; n as usize];
    std::os::unix::fs::FileExt::read_exact_at(h, &mut index, off).map_err(io_err(&path))?;
    if crc(&index) != sum {
        return Err(bad("checksum mismatch"));
    }
    let mut r = Reader::new(&index);
    let parsed = (|| {
        let runs = r.var()?;
        let mut out = Vec::new();
        for place in 0..runs {
            let start = r.pos();
            let stripe = usize::try_from(r.var()?).ok()?;
            let rows = u32::try_from(r.var()?).ok()?;
            let block_rows = u32::try_from(r.var()?)
                .ok()
                .filter(|n| (1..=crate::cold_block::MAX_ROWS).contains(n))?;
            let words = r.var()?;
            let mut w = Vec::new();
            for _ in 0..words {
                w.push(r.u64()?);
            }
            let nblocks = r.var()?;
            let mut blocks = Vec::new();
            for _ in 0..nblocks {
                let n = usize::try_from(r.var()?).ok()?;
                let first_key: Box<[u8]> = r.bytes(n)?.into();
                let n = usize::try_from(r.var()?).ok()?;
                let last_key: Box<[u8]> = r.bytes(n)?.into();
                let offset = r.var()?;
                let len = u32::try_from(r.var()?).ok()?;
                blocks.push(NameBlockEntry {
                    first_key,
                    last_key,
                    offset,
                    len,
                });
            }
            if blocks.len() * (block_rows as usize) < rows as usize {
                return None;
            }
            out.push(IndexedRun {
                stripe,
                run: NameRun {
                    file: file.clone(),
                    place: u32::try_from(place).ok()?,
                    blocks: blocks.into(),
                    filter: Arc::new(Bloom::from_words(w)?),
                    rows,
                    block_rows,
                    dead: Vec::new(),
                    dead_count: 0,
                    index_bytes: (r.pos() - start) as u32,
                },
            });
        }
        r.is_empty().then_some(out)
    })();
    parsed.ok_or_else(|| bad("it does not parse"))
}

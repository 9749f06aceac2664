//! One immutable file of `(a, b)` pairs of `u64`s sorted by `a` then `b`, packed in
//! checksummed blocks: where the segment store keeps its id index (`a` the link id, `b`
//! the record key) and its reuse index (`a` the URL's hash, `b` the record key) once
//! they leave redb, at a few bytes a pair instead of redb's ~32 (16 bytes of key and
//! value in half-full leaves, plus the file's unallocated tail).
//!
//! Layout:
//!
//! ```text
//! magic    "SKRUN001"
//! blocks   each up to ~4 KiB: per pair varint(a - previous a), varint(zigzag(b - previous b)),
//!          the "previous" pair of a block's first pair being the block's first pair itself
//! index    per block: first a, first b (u64 LE each), offset (u64), length, pairs, CRC-32 (u32 each)
//! footer   index offset, blocks, pairs (u64 LE each), CRC-32 of the index (u32), "SKRUNEND"
//! ```
//!
//! The index is read into memory at open (36 bytes a block: under 0.1 byte a pair);
//! a look-up is a binary search there and one `pread` of one block. A file is written
//! whole, fsynced, and only then named in redb: a run is never changed after.

use crate::error::StoreError;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

const MAGIC: &[u8; 8] = b"SKRUN001";
const END_MAGIC: &[u8; 8] = b"SKRUNEND";
const FOOTER: usize = 8 * 3 + 4 + 8;
const INDEX_ENTRY: usize = 8 * 3 + 4 * 3;
/// A block is closed once it holds this many bytes.
const BLOCK_BYTES: usize = 4096;

fn io(what: &str, path: &Path, e: std::io::Error) -> StoreError {
    StoreError::Backend(format!("cannot {what} {}: {e}", path.display()))
}

fn damaged(path: &Path, reason: impl std::fmt::Display) -> StoreError {
    StoreError::Backend(format!(
        "{} is damaged ({reason}); restore the data directory from a backup",
        path.display()
    ))
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn get_varint(bytes: &[u8], at: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = *bytes.get(*at)?;
        *at += 1;
        v |= u64::from(byte & 0x7f) << shift;
        if byte < 0x80 {
            return Some(v);
        }
    }
    None
}

fn zigzag(d: i64) -> u64 {
    ((d << 1) ^ (d >> 63)) as u64
}

fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

/// Where one block sits and what it starts with.
#[derive(Debug, Clone, Copy)]
struct BlockMeta {
    first: (u64, u64),
    offset: u64,
    len: u32,
    pairs: u32,
    crc: u32,
}

/// An open run: its block index in memory, its blocks read on demand.
#[derive(Debug)]
pub(crate) struct SortedRun {
    path: PathBuf,
    file: File,
    blocks: Vec<BlockMeta>,
    pairs: u64,
    bytes: u64,
}

impl SortedRun {
    /// Opens the run at `path`, checking its footer and index.
    pub(crate) fn open(path: &Path) -> Result<Self, StoreError> {
        let file = File::open(path).map_err(|e| io("open", path, e))?;
        let bytes = file.metadata().map_err(|e| io("stat", path, e))?.len();
        if bytes < (MAGIC.len() + FOOTER) as u64 {
            return Err(damaged(path, format!("{bytes} bytes, shorter than a run")));
        }
        let mut head = [0u8; 8];
        file.read_exact_at(&mut head, 0)
            .map_err(|e| io("read", path, e))?;
        let mut foot = [0u8; FOOTER];
        file.read_exact_at(&mut foot, bytes - FOOTER as u64)
            .map_err(|e| io("read", path, e))?;
        if &head != MAGIC || &foot[FOOTER - 8..] != END_MAGIC {
            return Err(damaged(path, "not a finished run file"));
        }
        let u64_at = |b: &[u8], i: usize| u64::from_le_bytes(b[i..i + 8].try_into().unwrap());
        let u32_at = |b: &[u8], i: usize| u32::from_le_bytes(b[i..i + 4].try_into().unwrap());
        let index_at = u64_at(&foot, 0);
        let count = u64_at(&foot, 8);
        let pairs = u64_at(&foot, 16);
        let index_crc = u32_at(&foot, 24);
        let index_len = count
            .checked_mul(INDEX_ENTRY as u64)
            .filter(|&len| index_at.checked_add(len) == Some(bytes - FOOTER as u64))
            .ok_or_else(|| damaged(path, "its index does not fit the file"))?;
        let mut index = vec![0u8; index_len as usize];
        file.read_exact_at(&mut index, index_at)
            .map_err(|e| io("read", path, e))?;
        if crc32fast::hash(&index) != index_crc {
            return Err(damaged(path, "its block index fails its checksum"));
        }
        let blocks: Vec<BlockMeta> = index
            .chunks_exact(INDEX_ENTRY)
            .map(|e| BlockMeta {
                first: (u64_at(e, 0), u64_at(e, 8)),
                offset: u64_at(e, 16),
                len: u32_at(e, 24),
                pairs: u32_at(e, 28),
                crc: u32_at(e, 32),
            })
            .collect();
        let counted: u64 = blocks.iter().map(|b| u64::from(b.pairs)).sum();
        let inside = blocks
            .iter()
            .all(|b| b.offset >= 8 && b.offset + u64::from(b.len) <= index_at);
        if counted != pairs || !inside {
            return Err(damaged(path, "its block index disagrees with the file"));
        }
        Ok(Self {
            path: path.to_path_buf(),
            file,
            blocks,
            pairs,
            bytes,
        })
    }

    /// How many pairs the run holds.
    pub(crate) fn pairs(&self) -> u64 {
        self.pairs
    }

    /// The file's size in bytes.
    pub(crate) fn bytes(&self) -> u64 {
        self.bytes
    }

    /// The file's path.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// The largest `a` in the run (`None` when empty).
    pub(crate) fn last_a(&self) -> Result<Option<u64>, StoreError> {
        match self.blocks.len() {
            0 => Ok(None),
            n => Ok(self.block(n - 1)?.last().map(|p| p.0)),
        }
    }

    /// The pairs of block `i`, checked against its checksum.
    fn block(&self, i: usize) -> Result<Vec<(u64, u64)>, StoreError> {
        let mut out = Vec::with_capacity(self.blocks[i].pairs as usize);
        self.scan_block(i, |pair| {
            out.push(pair);
            true
        })?;
        Ok(out)
    }

    /// Hands the pairs of block `i` (checked against its checksum) to `each` in order
    /// until it answers false.
    fn scan_block(
        &self,
        i: usize,
        mut each: impl FnMut((u64, u64)) -> bool,
    ) -> Result<(), StoreError> {
        let meta = self.blocks[i];
        let mut buf = vec![0u8; meta.len as usize];
        self.file
            .read_exact_at(&mut buf, meta.offset)
            .map_err(|e| io("read", &self.path, e))?;
        let corrupt = |reason: &str| StoreError::Corrupt {
            id: 0,
            reason: format!(
                "{}: block {i} (pairs from {:#x}) {reason}",
                self.path.display(),
                meta.first.0
            ),
        };
        if crc32fast::hash(&buf) != meta.crc {
            return Err(corrupt("fails its checksum"));
        }
        let (mut a, mut b) = meta.first;
        let mut at = 0;
        for _ in 0..meta.pairs {
            let da = get_varint(&buf, &mut at).ok_or_else(|| corrupt("is cut short"))?;
            let db = get_varint(&buf, &mut at).ok_or_else(|| corrupt("is cut short"))?;
            a = a.wrapping_add(da);
            b = b.wrapping_add(unzigzag(db) as u64);
            if !each((a, b)) {
                break;
            }
        }
        Ok(())
    }

    /// The first block that may hold a pair with `a` at or above `from`.
    fn first_block(&self, from: u64) -> usize {
        self.blocks
            .partition_point(|m| m.first.0 < from)
            .saturating_sub(1)
    }

    /// Every `b` paired with `a`.
    pub(crate) fn get(&self, a: u64) -> Result<Vec<u64>, StoreError> {
        let mut out = Vec::new();
        let mut i = self.first_block(a);
        let mut past = false;
        while i < self.blocks.len() && self.blocks[i].first.0 <= a && !past {
            self.scan_block(i, |p| {
                if p.0 == a {
                    out.push(p.1);
                }
                past = p.0 > a;
                !past
            })?;
            i += 1;
        }
        Ok(out)
    }

    /// The pairs with `a` at or above `from`, in order, a block at a time.
    pub(crate) fn cursor(self: &Arc<Self>, from: u64) -> RunCursor {
        RunCursor {
            run: Arc::clone(self),
            next_block: self.first_block(from),
            pairs: Vec::new(),
            at: 0,
            from,
        }
    }
}

/// Reads a run in order from some `a` on.
pub(crate) struct RunCursor {
    run: Arc<SortedRun>,
    next_block: usize,
    pairs: Vec<(u64, u64)>,
    at: usize,
    from: u64,
}

impl RunCursor {
    /// The next pair, or `None` at the end of the run.
    pub(crate) fn next_pair(&mut self) -> Result<Option<(u64, u64)>, StoreError> {
        loop {
            if let Some(&pair) = self.pairs.get(self.at) {
                self.at += 1;
                if pair.0 >= self.from {
                    return Ok(Some(pair));
                }
                continue;
            }
            if self.next_block >= self.run.blocks.len() {
                return Ok(None);
            }
            self.pairs = self.run.block(self.next_block)?;
            self.next_block += 1;
            self.at = 0;
        }
    }
}

/// Writes a run: pairs pushed in order, then [`RunWriter::finish`].
pub(crate) struct RunWriter {
    path: PathBuf,
    out: BufWriter<File>,
    written: u64,
    blocks: Vec<BlockMeta>,
    block: Vec<u8>,
    block_pairs: u32,
    first: (u64, u64),
    last: Option<(u64, u64)>,
    pairs: u64,
}

impl RunWriter {
    /// A new run file at `path` (an existing file there is replaced).
    pub(crate) fn create(path: &Path) -> Result<Self, StoreError> {
        let file = File::create(path).map_err(|e| io("create", path, e))?;
        let mut out = BufWriter::with_capacity(1 << 20, file);
        out.write_all(MAGIC).map_err(|e| io("write", path, e))?;
        Ok(Self {
            path: path.to_path_buf(),
            out,
            written: MAGIC.len() as u64,
            blocks: Vec::new(),
            block: Vec::with_capacity(BLOCK_BYTES + 20),
            block_pairs: 0,
            first: (0, 0),
            last: None,
            pairs: 0,
        })
    }

    /// Adds a pair; pairs must come in strictly increasing order.
    pub(crate) fn push(&mut self, a: u64, b: u64) -> Result<(), StoreError> {
        if self.last.is_some_and(|last| last >= (a, b)) {
            return Err(StoreError::Backend(format!(
                "{}: pairs written out of order (a bug)",
                self.path.display()
            )));
        }
        let prev = if self.block_pairs == 0 {
            self.first = (a, b);
            (a, b)
        } else {
            self.last.unwrap_or((a, b))
        };
        put_varint(&mut self.block, a - prev.0);
        put_varint(&mut self.block, zigzag(b.wrapping_sub(prev.1) as i64));
        self.block_pairs += 1;
        self.pairs += 1;
        self.last = Some((a, b));
        if self.block.len() >= BLOCK_BYTES {
            self.close_block()?;
        }
        Ok(())
    }

    fn close_block(&mut self) -> Result<(), StoreError> {
        if self.block_pairs == 0 {
            return Ok(());
        }
        self.out
            .write_all(&self.block)
            .map_err(|e| io("write", &self.path, e))?;
        self.blocks.push(BlockMeta {
            first: self.first,
            offset: self.written,
            len: self.block.len() as u32,
            pairs: self.block_pairs,
            crc: crc32fast::hash(&self.block),
        });
        self.written += self.block.len() as u64;
        self.block.clear();
        self.block_pairs = 0;
        Ok(())
    }

    /// Writes the index and footer, fsyncs the file, and opens it for reading. The
    /// caller fsyncs the directory.
    pub(crate) fn finish(mut self) -> Result<SortedRun, StoreError> {
        self.close_block()?;
        let mut index = Vec::with_capacity(self.blocks.len() * INDEX_ENTRY);
        for b in &self.blocks {
            index.extend_from_slice(&b.first.0.to_le_bytes());
            index.extend_from_slice(&b.first.1.to_le_bytes());
            index.extend_from_slice(&b.offset.to_le_bytes());
            index.extend_from_slice(&b.len.to_le_bytes());
            index.extend_from_slice(&b.pairs.to_le_bytes());
            index.extend_from_slice(&b.crc.to_le_bytes());
        }
        let mut foot = Vec::with_capacity(FOOTER);
        foot.extend_from_slice(&self.written.to_le_bytes());
        foot.extend_from_slice(&(self.blocks.len() as u64).to_le_bytes());
        foot.extend_from_slice(&self.pairs.to_le_bytes());
        foot.extend_from_slice(&crc32fast::hash(&index).to_le_bytes());
        foot.extend_from_slice(END_MAGIC);
        let path = self.path.clone();
        self.out
            .write_all(&index)
            .and_then(|()| self.out.write_all(&foot))
            .map_err(|e| io("write", &path, e))?;
        let file = self
            .out
            .into_inner()
            .map_err(|e| io("write", &path, e.into_error()))?;
        file.sync_all().map_err(|e| io("fsync", &path, e))?;
        drop(file);
        SortedRun::open(&path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(path: &Path, pairs: &[(u64, u64)]) -> Arc<SortedRun> {
        let mut w = RunWriter::create(path).unwrap();
        for &(a, b) in pairs {
            w.push(a, b).unwrap();
        }
        Arc::new(w.finish().unwrap())
    }

    #[test]
    fn pairs_come_back_by_a_and_in_order_across_many_blocks() {
        let dir = tempfile::tempdir().unwrap();
        // Runs of equal `a` that straddle blocks, keys going up and down.
        let mut pairs: Vec<(u64, u64)> = (0..50_000u64)
            .map(|i| ((i / 3) * 1_000_003, (i * 7919) % 65_537 + (i % 3)))
            .collect();
        pairs.sort_unstable();
        pairs.dedup();
        let run = write(&dir.path().join("r.run"), &pairs);
        assert_eq!(run.pairs(), pairs.len() as u64);
        assert!(run.blocks.len() > 10, "{} blocks", run.blocks.len());
        for probe in [
            0u64,
            1_000_003,
            7 * 1_000_003,
            16_000 * 1_000_003,
            5,
            u64::MAX,
        ] {
            let want: Vec<u64> = pairs.iter().filter(|p| p.0 == probe).map(|p| p.1).collect();
            assert_eq!(run.get(probe).unwrap(), want, "a = {probe}");
        }
        let from = 9_999 * 1_000_003 + 1;
        let mut cursor = run.cursor(from);
        let mut seen = Vec::new();
        while let Some(p) = cursor.next_pair().unwrap() {
            seen.push(p);
        }
        let want: Vec<_> = pairs.iter().copied().filter(|p| p.0 >= from).collect();
        assert_eq!(seen, want);
        assert_eq!(run.last_a().unwrap(), pairs.last().map(|p| p.0));
        // Small deltas pack into a few bytes a pair.
        assert!(
            run.bytes() < 6 * pairs.len() as u64,
            "{} bytes",
            run.bytes()
        );
    }

    #[test]
    fn a_flipped_byte_is_reported_with_its_block_and_a_torn_file_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.run");
        let pairs: Vec<(u64, u64)> = (0..10_000u64).map(|i| (i * 13, i)).collect();
        let run = write(&path, &pairs);
        let at = run.blocks[2].offset + 5;
        drop(run);
        let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        let mut byte = [0u8];
        std::fs::File::open(&path)
            .unwrap()
            .read_exact_at(&mut byte, at)
            .unwrap();
        file.write_all_at(&[byte[0] ^ 0x40], at).unwrap();
        let run = Arc::new(SortedRun::open(&path).unwrap());
        let in_block_2 = (run.blocks[0].pairs + run.blocks[1].pairs + 1) as usize;
        let err = run.get(pairs[in_block_2].0).unwrap_err();
        assert!(err.to_string().contains("block 2"), "{err}");
        assert_eq!(run.get(13).unwrap(), vec![1], "other blocks still serve");
        let len = std::fs::metadata(&path).unwrap().len();
        file.set_len(len - 3).unwrap();
        let err = SortedRun::open(&path).unwrap_err();
        assert!(err.to_string().contains("damaged"), "{err}");
    }

    #[test]
    fn out_of_order_pairs_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = RunWriter::create(&dir.path().join("r.run")).unwrap();
        w.push(5, 1).unwrap();
        assert!(w.push(5, 1).is_err());
        assert!(w.push(4, 9).is_err());
        w.push(5, 2).unwrap();
        let run = w.finish().unwrap();
        assert_eq!(run.get(5).unwrap(), vec![1, 2]);
    }
}

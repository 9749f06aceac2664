//! The index at the end of a cold batch file: the partitions the file holds,
//! each with its rows, its Bloom filter and its blocks' index entries.
//!
//! Written with the blocks (one write, one fsync), so a snapshot names a cold partition
//! by its high bits and batch number alone and recovery reads the index from the batch.
//! The index of rows that no longer change is then written once, not again by every
//! snapshot: before, at a billion rows, each snapshot carried 1.3 GB of cold index beside
//! 1 GB of hot rows (bench/notes/runs.md, "A billion rows").
//!
//! Layout after the last block (integers little-endian, `var` = LEB128):
//!
//! ```text
//! index:  parts var, then per partition: high var | rows var
//!         | filter words var | each word u64
//!         | blocks var | each block: first id u64 | last id u64 | offset var | length var
//! footer: index offset u64 | index length u32 | crc32 of the index u32 | "SKCOLDIX"
//! ```
//!
//! A file without a good footer was written before this index existed (its snapshot
//! frames carry the index, as they always did) or has a damaged tail. Either way
//! [`read`] walks the blocks instead (each block's header gives its length, and each is
//! decoded and checked) and rebuilds the index from what it finds; only partitions whose
//! blocks cannot all be found are lost, and the caller names them.

use std::fs::File;
use std::os::unix::fs::FileExt;

use crate::bloom::Bloom;
use crate::codec::{crc, Put, Reader};
use crate::cold_block::{decode_block, entry_from_header, BlockIndexEntry, HEADER_BYTES};

/// Bytes of the footer that ends an indexed cold file.
pub(crate) const FOOTER_BYTES: usize = 24;
/// Last bytes of an indexed cold file.
const MAGIC: &[u8; 8] = b"SKCOLDIX";

/// One partition of a cold file, as its index (or a walk of its blocks) gives it.
pub(crate) struct IndexedPart {
    /// The partition's high 32 bits.
    pub high: u32,
    /// Rows held.
    pub rows: u32,
    /// Filter of its ids.
    pub filter: Bloom,
    /// Its blocks, in id order.
    pub blocks: Vec<BlockIndexEntry>,
    /// Bytes its entry takes in the file's index (for `bytes_disk`).
    pub index_bytes: u32,
}

/// What [`read`] found.
pub(crate) struct Index {
    /// The partitions, in file order.
    pub parts: Vec<IndexedPart>,
    /// Whether they came from the file's own index (false: rebuilt from the blocks).
    pub from_footer: bool,
    /// Set when the blocks were walked: the first damaged block met, or else where the
    /// walk stopped (the end of the blocks).
    pub walk_stopped: Option<String>,
}

/// The index and footer for `parts` (high, rows, filter, blocks) whose blocks end at
/// `index_offset`, and each part's share of the index in bytes.
pub(crate) fn encode(
    parts: &[(u32, u32, &Bloom, &[BlockIndexEntry])],
    index_offset: u64,
) -> (Vec<u8>, Vec<u32>) {
    let mut out = Vec::new();
    let mut sizes = Vec::with_capacity(parts.len());
    out.put_var(parts.len() as u64);
    for (high, rows, filter, blocks) in parts {
        let start = out.len();
        out.put_var(u64::from(*high));
        out.put_var(u64::from(*rows));
        out.put_var(filter.words().len() as u64);
        for w in filter.words() {
            out.put_u64(*w);
        }
        out.put_var(blocks.len() as u64);
        for b in *blocks {
            out.put_u64(b.first_id);
            out.put_u64(b.last_id);
            out.put_var(b.offset);
            out.put_var(u64::from(b.len));
        }
        sizes.push((out.len() - start) as u32);
    }
    let len = out.len() as u32;
    let sum = crc(&out);
    out.put_u64(index_offset);
    out.put_u32(len);
    out.put_u32(sum);
    out.extend_from_slice(MAGIC);
    (out, sizes)
}

/// The index of `file` (`file_len` bytes): from its footer when that is whole, else
/// rebuilt by walking its blocks.
pub(crate) fn read(file: &File, file_len: u64) -> std::io::Result<Index> {
    if let Some(parts) = from_footer(file, file_len)? {
        return Ok(Index {
            parts,
            from_footer: true,
            walk_stopped: None,
        });
    }
    walk(file, file_len)
}

/// Whether the file ends with a good footer (its index is then read by [`read`]).
pub(crate) fn has_footer(file: &File, file_len: u64) -> std::io::Result<bool> {
    Ok(footer(file, file_len)?.is_some())
}

/// (index offset, index length, crc) from a footer that is present and consistent.
fn footer(file: &File, file_len: u64) -> std::io::Result<Option<(u64, u32, u32)>> {
    if file_len < FOOTER_BYTES as u64 {
        return Ok(None);
    }
    let mut tail = [0u8; FOOTER_BYTES];
    file.read_exact_at(&mut tail, file_len - FOOTER_BYTES as u64)?;
    if &tail[16..] != MAGIC {
        return Ok(None);
    }
    let mut r = Reader::new(&tail);
    let (Some(offset), Some(len), Some(sum)) = (r.u64(), r.u32(), r.u32()) else {
        return Ok(None);
    };
    let fits = offset
        .checked_add(u64::from(len))
        .is_some_and(|end| end + FOOTER_BYTES as u64 == file_len);
    Ok(fits.then_some((offset, len, sum)))
}

fn from_footer(file: &File, file_len: u64) -> std::io::Result<Option<Vec<IndexedPart>>> {
    let Some((offset, len, sum)) = footer(file, file_len)? else {
        return Ok(None);
    };
    let mut bytes = vec![0; len as usize];
    file.read_exact_at(&mut bytes, offset)?;
    if crc(&bytes) != sum {
        return Ok(None);
    }
    Ok(decode(&bytes, offset))
}

/// Parses an index whose checksum matched; `None` if it does not parse whole or names
/// blocks outside `0..blocks_end`.
fn decode(bytes: &[u8], blocks_end: u64) -> Option<Vec<IndexedPart>> {
    let mut r = Reader::new(bytes);
    let n = r.var()?;
    let mut parts = Vec::new();
    for _ in 0..n {
        let start = r.pos();
        let high = u32::try_from(r.var()?).ok()?;
        let rows = u32::try_from(r.var()?).ok()?;
        let nw = usize::try_from(r.var()?).ok()?;
        let mut words = Vec::with_capacity(nw.min(bytes.len() / 8));
        for _ in 0..nw {
            words.push(r.u64()?);
        }
        let nb = r.var()?;
        let mut blocks = Vec::new();
        for _ in 0..nb {
            let b = BlockIndexEntry {
                first_id: r.u64()?,
                last_id: r.u64()?,
                offset: r.var()?,
                len: u32::try_from(r.var()?).ok()?,
            };
            if b.offset + u64::from(b.len) > blocks_end {
                return None;
            }
            blocks.push(b);
        }
        parts.push(IndexedPart {
            high,
            rows,
            filter: Bloom::from_words(words)?,
            blocks,
            index_bytes: (r.pos() - start) as u32,
        });
    }
    r.is_empty().then_some(parts)
}

/// Rebuilds the index by reading every block from the start of the file: each header
/// gives the block's length, each block is decoded and checked, and consecutive blocks
/// with the same high 32 bits are one partition (a batch writes each partition's blocks
/// back to back, in id order). A block whose header is sound but whose contents are
/// damaged is skipped; the walk stops at the first thing that is not a block header (the
/// end of the blocks, or damage). A partition missing a block has fewer rows than its
/// snapshot says, which is how the caller tells it from a whole one.
fn walk(file: &File, file_len: u64) -> std::io::Result<Index> {
    let mut parts: Vec<IndexedPart> = Vec::new();
    let mut ids: Vec<u64> = Vec::new();
    let mut open: Option<(u32, u32, Vec<BlockIndexEntry>)> = None;
    let mut offset = 0u64;
    let mut damage = None;
    let mut header = [0u8; HEADER_BYTES];
    let close = |open: Option<(u32, u32, Vec<BlockIndexEntry>)>,
                 ids: &mut Vec<u64>,
                 parts: &mut Vec<IndexedPart>| {
        if let Some((high, rows, blocks)) = open {
            parts.push(IndexedPart {
                high,
                rows,
                filter: Bloom::of(ids.iter().copied()),
                blocks,
                index_bytes: 0,
            });
        }
        ids.clear();
    };
    while offset < file_len {
        if offset + HEADER_BYTES as u64 > file_len {
            damage.get_or_insert(format!(
                "{} stray bytes at offset {offset}",
                file_len - offset
            ));
            break;
        }
        file.read_exact_at(&mut header, offset)?;
        let Some(entry) =
            entry_from_header(&header, offset).filter(|e| offset + u64::from(e.len) <= file_len)
        else {
            damage.get_or_insert(format!("no cold block at offset {offset}"));
            break;
        };
        let mut bytes = vec![0; entry.len as usize];
        file.read_exact_at(&mut bytes, offset)?;
        let block = match decode_block(&bytes, &entry) {
            Ok(b) => b,
            Err(e) => {
                // Its header still says how long it is: skip it. Its partition comes
                // out short of rows, so the caller reports it lost; the others stand.
                damage.get_or_insert(e.to_string());
                offset += u64::from(entry.len);
                continue;
            }
        };
        let high = (entry.first_id >> 32) as u32;
        if open.as_ref().is_none_or(|o| o.0 != high) {
            close(open.take(), &mut ids, &mut parts);
            open = Some((high, 0, Vec::new()));
        }
        let o = open.as_mut().expect("set above");
        o.1 += block.ids.len() as u32;
        o.2.push(entry);
        ids.extend_from_slice(&block.ids);
        offset += u64::from(entry.len);
    }
    close(open, &mut ids, &mut parts);
    Ok(Index {
        parts,
        from_footer: false,
        walk_stopped: damage,
    })
}

//! The payload of a version-2 cold block: id gaps split into byte planes and
//! each column, compressed one section at a time.
//!
//! Version 1 (`cold_block.rs`) wrote the id gaps and the columns as one stream of varints
//! under one zstd frame. Two things cost bytes there, measured on Weibo-like rows
//! (bench/notes/runs.md, "Cold tier block format, version 2"): a varint spreads a gap's random
//! low bits and its skewed high bits over bytes that all share one Huffman table with the
//! columns' bytes, and ids made by a layout with low bits that are mostly zero (a sequence
//! that rarely passes 0) carry those zeros in every gap. So:
//!
//! - the gaps are shifted right by the number of trailing zero bits they all share (the
//!   block's `shift`), then written as fixed-width little-endian integers split into
//!   byte planes: plane `k` holds byte `k` of every gap, so a plane of uniform bytes and a
//!   plane of skewed ones get their own entropy tables;
//! - each plane and each column (varints, as in version 1) is compressed on its own, and
//!   kept as is when compressing would not make it smaller.
//!
//! # Layout
//!
//! ```text
//! shift u8 | gap_width u8 | section * (gap_width + columns)
//! section := raw_len varint | stored_len varint | bytes [u8; stored_len]
//! ```
//!
//! `stored_len == raw_len`: the bytes are the section as is; `stored_len < raw_len`: a
//! zstd frame of it. The first `gap_width` sections are the gap planes (`rows - 1` bytes
//! each; `gap_width` is 0 for a block of one row), then one section of varints per column.

use crate::cold_block::{put_varint, unzstd, BlockError, Codec, Damage, Reader, ZSTD_LEVEL};

thread_local! {
    /// One zstd compression context per thread, kept: a block is written as several small
    /// frames, and making a context per frame would cost more than compressing it.
    static COMPRESSOR: std::cell::RefCell<Option<zstd::bulk::Compressor<'static>>> =
        const { std::cell::RefCell::new(None) };
}

fn zstd_frame(raw: &[u8]) -> std::io::Result<Vec<u8>> {
    COMPRESSOR.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.is_none() {
            *slot = Some(zstd::bulk::Compressor::new(ZSTD_LEVEL)?);
        }
        slot.as_mut().expect("set above").compress(raw)
    })
}

/// Appends one section: `raw` compressed if `codec` allows it and that makes it smaller.
fn put_section(out: &mut Vec<u8>, raw: &[u8], codec: Codec) -> Result<(), BlockError> {
    let packed = match codec {
        Codec::Zstd => {
            let z =
                zstd_frame(raw).map_err(|e| BlockError::BadInput(format!("zstd failed: {e}")))?;
            (z.len() < raw.len()).then_some(z)
        }
        Codec::None => None,
    };
    let stored = packed.as_deref().unwrap_or(raw);
    put_varint(out, raw.len() as u64);
    put_varint(out, stored.len() as u64);
    out.extend_from_slice(stored);
    Ok(())
}

/// The payload of a block of strictly increasing `ids` (checked by the caller) and its
/// columns, and the sum of its sections' raw lengths (the header's `raw_len`).
pub(crate) fn encode(
    ids: &[u64],
    columns: &[&[u64]],
    codec: Codec,
) -> Result<(Vec<u8>, usize), BlockError> {
    let gaps: Vec<u64> = ids.windows(2).map(|w| w[1] - w[0]).collect();
    let shift = gaps.iter().fold(0u64, |a, &g| a | g).trailing_zeros() % 64;
    let widest = gaps.iter().map(|&g| g >> shift).max().unwrap_or(0);
    let width = if gaps.is_empty() {
        0
    } else {
        (64 - widest.leading_zeros()).div_ceil(8).max(1)
    };
    let mut out = vec![shift as u8, width as u8];
    let mut raw_total = 0;
    let mut plane = Vec::with_capacity(gaps.len());
    for k in 0..width {
        plane.clear();
        plane.extend(gaps.iter().map(|&g| ((g >> shift) >> (8 * k)) as u8));
        put_section(&mut out, &plane, codec)?;
        raw_total += plane.len();
    }
    let mut raw = Vec::with_capacity(ids.len() * 2);
    for values in columns {
        raw.clear();
        values.iter().for_each(|&v| put_varint(&mut raw, v));
        put_section(&mut out, &raw, codec)?;
        raw_total += raw.len();
    }
    Ok((out, raw_total))
}

/// Reads the next section, never allocating more than `budget` (what is left of the
/// header's `raw_len`) allows.
fn section(r: &mut Reader<'_>, budget: &mut usize, what: &str) -> Result<Vec<u8>, Damage> {
    let raw_len = r.varint(what)?;
    let stored_len = r.varint(what)?;
    if raw_len > *budget as u64 {
        return Err(Damage(format!(
            "{what} is {raw_len} bytes, more than the header's raw length leaves"
        )));
    }
    let raw_len = raw_len as usize;
    *budget -= raw_len;
    if stored_len > raw_len as u64 {
        return Err(Damage(format!(
            "{what} is stored in {stored_len} bytes, more than its {raw_len}"
        )));
    }
    let stored = r.take(stored_len as usize, what)?;
    if stored.len() == raw_len {
        return Ok(stored.to_vec());
    }
    let raw =
        unzstd(stored, raw_len).map_err(|e| Damage(format!("{what} does not decode: {e}")))?;
    if raw.len() != raw_len {
        return Err(Damage(format!(
            "{what} is {} bytes, its length says {raw_len}",
            raw.len()
        )));
    }
    Ok(raw)
}

/// The ids and columns of a version-2 payload, every rule checked: `rows` rows starting
/// at `first_id` and ending at `last_id`, `ncols` columns, sections adding up to `raw_len`.
pub(crate) fn decode(
    payload: &[u8],
    rows: usize,
    (first_id, last_id): (u64, u64),
    ncols: usize,
    raw_len: usize,
) -> Result<(Vec<u64>, Vec<Vec<u64>>), Damage> {
    let mut r = Reader {
        buf: payload,
        pos: 0,
    };
    let head = r.take(2, "the gap layout")?;
    let (shift, width) = (u32::from(head[0]), usize::from(head[1]));
    if shift > 63 {
        return Err(Damage(format!("gap shift {shift} is more than 63")));
    }
    if (rows == 1) != (width == 0) || width > 8 {
        return Err(Damage(format!("gap width {width} for {rows} rows")));
    }
    let mut budget = raw_len;
    let mut gaps = vec![0u64; rows - 1];
    for k in 0..width {
        let plane = section(&mut r, &mut budget, "a gap plane")?;
        if plane.len() != rows - 1 {
            return Err(Damage(format!(
                "a gap plane holds {} bytes for {rows} rows",
                plane.len()
            )));
        }
        for (g, &b) in gaps.iter_mut().zip(&plane) {
            *g |= u64::from(b) << (8 * k);
        }
    }
    let mut ids = Vec::with_capacity(rows);
    ids.push(first_id);
    let mut id = first_id;
    for g in gaps {
        if g == 0 || g.leading_zeros() < shift {
            return Err(Damage(format!("id gap {g} << {shift} is not a valid gap")));
        }
        id = id
            .checked_add(g << shift)
            .ok_or("an id gap overflows 64 bits")?;
        ids.push(id);
    }
    if id != last_id {
        return Err(Damage(format!("last id is {id}, header says {last_id}")));
    }
    let mut cols = Vec::with_capacity(ncols);
    for _ in 0..ncols {
        let raw = section(&mut r, &mut budget, "a column")?;
        let mut c = Reader { buf: &raw, pos: 0 };
        let mut col = Vec::with_capacity(rows);
        for _ in 0..rows {
            col.push(c.varint("a column value")?);
        }
        if c.pos != raw.len() {
            return Err(Damage(format!(
                "{} stray bytes after a column",
                raw.len() - c.pos
            )));
        }
        cols.push(col);
    }
    if r.pos != payload.len() || budget != 0 {
        return Err(Damage(format!(
            "{} stray payload bytes, {budget} raw bytes unaccounted for",
            payload.len() - r.pos
        )));
    }
    Ok((ids, cols))
}

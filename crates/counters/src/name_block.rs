//! The on-disk block of string-keyed cold rows: one sorted run of rows of one
//! stripe, keys in byte order.
//!
//! The string-keyed counterpart of [`crate::cold_block`]: the engine writes these blocks
//! into its cold batch files ([`crate::cold_names`]); this module is the format and its
//! codec alone.
//!
//! # Layout (version 1, integers little-endian)
//!
//! ```text
//! magic "SKNB" | version u8 | codec u8 | columns u16 | rows u32 | raw_len u32
//! | payload_len u32 | widths [u8; columns] | payload [u8; payload_len] | crc32 u32
//! ```
//!
//! The CRC32 covers every byte before it; the payload is the raw part compressed with
//! the codec (as in [`crate::cold_block::Codec`]). The raw part:
//!
//! - per row, its key front-coded against the previous one: bytes shared with it
//!   (LEB128), then the length of the rest (LEB128) and the rest;
//! - per column, its values as LEB128 varints, row after row (as the id blocks).
//!
//! Keys sorted by bytes rather than by hash: front coding and zstd both feed on the
//! prefixes keys share (`pageviews:/…`, `<link id>:<day>`), and the in-RAM index is
//! the first and last key per block, found by binary search. Decoding checks the
//! length, the CRC, the header, every bound, the keys' order and the index entry's first
//! and last key, and reports a damaged block naming the keys it held.

use crate::cold_block::MAX_RAW_LEN;
use crate::cold_block::{checked_body, put_varint, unzstd, BlockError, Codec, Damage, Reader};
use crate::cold_block::{MAX_COLUMNS, MAX_ROWS, ZSTD_LEVEL};

/// First bytes of every string-key block.
const MAGIC: [u8; 4] = *b"SKNB";
/// The only format version.
const VERSION: u8 = 1;
/// Fixed header bytes before the column widths.
const FIXED_HEADER: usize = 4 + 1 + 1 + 2 + 4 + 4 + 4;

/// Where one block is in its file and which keys it holds: what RAM keeps per block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NameBlockEntry {
    /// Smallest key in the block.
    pub first_key: Box<[u8]>,
    /// Largest key in the block.
    pub last_key: Box<[u8]>,
    /// Byte offset of the block in its file.
    pub offset: u64,
    /// Length of the block in bytes.
    pub len: u32,
}

impl NameBlockEntry {
    /// Whether `key` falls in the block's range (it may still be absent from it).
    pub(crate) fn covers(&self, key: &[u8]) -> bool {
        *self.first_key <= *key && *key <= *self.last_key
    }
}

/// The rows of one decoded block: keys in byte order, values column-major.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NameBlock {
    /// Every key's bytes, back to back.
    bytes: Vec<u8>,
    /// Where key `r` ends in `bytes` (it starts where key `r - 1` ends).
    ends: Vec<u32>,
    /// Each column's inline width in bits.
    pub widths: Vec<u8>,
    /// `columns[c][r]` is column `c` of row `r`.
    pub columns: Vec<Vec<u64>>,
}

impl NameBlock {
    /// Rows held.
    pub(crate) fn len(&self) -> usize {
        self.ends.len()
    }

    /// Key of row `r`.
    pub(crate) fn key(&self, r: usize) -> &[u8] {
        let start = if r == 0 { 0 } else { self.ends[r - 1] as usize };
        &self.bytes[start..self.ends[r] as usize]
    }

    /// The row holding `key`, if any.
    pub(crate) fn find(&self, key: &[u8]) -> Option<usize> {
        let (mut lo, mut hi) = (0, self.len());
        while lo < hi {
            let mid = (lo + hi) / 2;
            match self.key(mid).cmp(key) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Some(mid),
            }
        }
        None
    }

    /// Bytes this block holds in RAM (what the block cache weighs).
    pub(crate) fn bytes(&self) -> usize {
        64 + self.bytes.len() + self.ends.len() * 4 + self.len() * 8 * self.columns.len()
    }
}

/// Encodes one block from `keys` (strictly increasing bytes) and one slice of values per
/// column (each as long as `keys`), column `c` of width `widths[c]` bits.
pub(crate) fn encode(
    keys: &[&[u8]],
    columns: &[&[u64]],
    widths: &[u8],
    codec: Codec,
) -> Result<Vec<u8>, BlockError> {
    encode_at_level(keys, columns, widths, codec, ZSTD_LEVEL)
}

/// [`encode`] with zstd at `level`: snapshots write their string-keyed rows at level 1
/// (measured on 10 M rows: 2.6% bigger than level 3, the snapshot about half the time; the
/// cold tier keeps level 3, written once and read many times).
pub(crate) fn encode_at_level(
    keys: &[&[u8]],
    columns: &[&[u64]],
    widths: &[u8],
    codec: Codec,
    level: i32,
) -> Result<Vec<u8>, BlockError> {
    let bad = |m: String| Err(BlockError::BadInput(m));
    if keys.is_empty() || keys.len() > MAX_ROWS as usize {
        return bad(format!("{} rows, expected 1 to {MAX_ROWS}", keys.len()));
    }
    if columns.len() != widths.len() || columns.len() > usize::from(MAX_COLUMNS) {
        return bad(format!(
            "{} columns and {} widths (at most {MAX_COLUMNS})",
            columns.len(),
            widths.len()
        ));
    }
    if let Some(c) = columns.iter().position(|c| c.len() != keys.len()) {
        return bad(format!(
            "column {c} has {} values for {} keys",
            columns[c].len(),
            keys.len()
        ));
    }
    if let Some(i) = keys.windows(2).position(|w| w[0] >= w[1]) {
        return bad(format!("keys are not strictly increasing at row {}", i + 1));
    }
    let mut raw = Vec::with_capacity(keys.len() * (8 + 2 * columns.len()));
    let mut prev: &[u8] = &[];
    for k in keys {
        let shared = prev
            .iter()
            .zip(k.iter())
            .take_while(|(a, b)| a == b)
            .count();
        put_varint(&mut raw, shared as u64);
        put_varint(&mut raw, (k.len() - shared) as u64);
        raw.extend_from_slice(&k[shared..]);
        prev = k;
    }
    for values in columns {
        values.iter().for_each(|&v| put_varint(&mut raw, v));
    }
    if raw.len() > MAX_RAW_LEN as usize {
        return bad(format!("raw block of {} bytes is too large", raw.len()));
    }
    let (codec_byte, payload) = match codec {
        Codec::None => (0u8, raw.clone()),
        Codec::Zstd => (
            1u8,
            zstd::bulk::compress(&raw, level)
                .map_err(|e| BlockError::BadInput(format!("zstd failed: {e}")))?,
        ),
    };
    let mut out = Vec::with_capacity(FIXED_HEADER + widths.len() + payload.len() + 4);
    out.extend_from_slice(&MAGIC);
    out.push(VERSION);
    out.push(codec_byte);
    out.extend_from_slice(&(columns.len() as u16).to_le_bytes());
    out.extend_from_slice(&(keys.len() as u32).to_le_bytes());
    out.extend_from_slice(&(raw.len() as u32).to_le_bytes());
    out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    out.extend_from_slice(widths);
    out.extend_from_slice(&payload);
    let crc = crc32fast::hash(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    Ok(out)
}

/// Decodes and checks a block read at `entry`; a damaged one is
/// [`BlockError::CorruptKeys`], naming the keys the entry says it held.
pub(crate) fn decode(bytes: &[u8], entry: &NameBlockEntry) -> Result<NameBlock, BlockError> {
    decode_inner(bytes, entry).map_err(|Damage(reason)| corrupt(entry, reason))
}

/// The error for a damaged block at `entry`.
pub(crate) fn corrupt(entry: &NameBlockEntry, reason: String) -> BlockError {
    BlockError::CorruptKeys {
        first_key: String::from_utf8_lossy(&entry.first_key).into_owned(),
        last_key: String::from_utf8_lossy(&entry.last_key).into_owned(),
        offset: entry.offset,
        len: entry.len,
        reason,
    }
}

fn decode_inner(bytes: &[u8], entry: &NameBlockEntry) -> Result<NameBlock, Damage> {
    let body = checked_body(bytes, entry.len, FIXED_HEADER)?;
    let mut h = Reader { buf: body, pos: 0 };
    let fixed = h.take(FIXED_HEADER, "the header")?;
    let u32_at = |i: usize| u32::from_le_bytes(fixed[i..i + 4].try_into().expect("4 bytes"));
    if fixed[..4] != MAGIC {
        return Err(Damage("not a string-key block (bad magic)".into()));
    }
    if fixed[4] != VERSION {
        return Err(Damage(format!("unknown format version {}", fixed[4])));
    }
    let ncols = u16::from_le_bytes([fixed[6], fixed[7]]);
    let (rows, raw_len, payload_len) = (u32_at(8), u32_at(12), u32_at(16));
    if ncols > MAX_COLUMNS || rows == 0 || rows > MAX_ROWS || raw_len > MAX_RAW_LEN {
        return Err(Damage(format!(
            "header out of bounds: {ncols} columns, {rows} rows, raw length {raw_len}"
        )));
    }
    let widths = h.take(usize::from(ncols), "the column widths")?.to_vec();
    let payload = h.take(payload_len as usize, "the payload")?;
    if h.pos != body.len() {
        return Err(Damage(format!(
            "{} stray bytes after the payload",
            body.len() - h.pos
        )));
    }
    let raw = match fixed[5] {
        0 => payload.to_vec(),
        1 => unzstd(payload, raw_len as usize)
            .map_err(|e| Damage(format!("zstd payload does not decode: {e}")))?,
        c => return Err(Damage(format!("unknown codec {c}"))),
    };
    if raw.len() != raw_len as usize {
        return Err(Damage(format!(
            "raw part is {} bytes, header says {raw_len}",
            raw.len()
        )));
    }
    let rows = rows as usize;
    let mut r = Reader { buf: &raw, pos: 0 };
    let mut out = NameBlock {
        bytes: Vec::with_capacity(raw.len()),
        ends: Vec::with_capacity(rows),
        widths,
        columns: Vec::with_capacity(usize::from(ncols)),
    };
    let mut prev_start = 0usize;
    for row in 0..rows {
        let shared = r.varint("a key's shared length")? as usize;
        let rest = r.varint("a key's length")? as usize;
        let prev_len = out.bytes.len() - prev_start;
        if shared > prev_len {
            return Err(Damage(format!(
                "row {row} shares more than the previous key holds"
            )));
        }
        let suffix = r.take(rest, "a key")?;
        if shared + rest > crate::MAX_KEY_LEN {
            return Err(Damage(format!(
                "row {row}'s key is longer than a key may be"
            )));
        }
        // The key is the previous one's first `shared` bytes, then `suffix`: it is larger
        // when the previous key ends there and `suffix` is not empty, or when `suffix`
        // starts above the previous key's next byte (all the encoder writes); anything
        // else is compared whole.
        let prev = &out.bytes[prev_start..];
        let in_order = row == 0
            || match (suffix.first(), prev.get(shared)) {
                (Some(_), None) => true,
                (Some(&a), Some(&b)) if a > b => true,
                _ => {
                    let mut key = prev[..shared].to_vec();
                    key.extend_from_slice(suffix);
                    key.as_slice() > prev
                }
            };
        if !in_order {
            return Err(Damage(format!("keys are not in order at row {row}")));
        }
        let start = out.bytes.len();
        out.bytes
            .extend_from_within(prev_start..prev_start + shared);
        out.bytes.extend_from_slice(suffix);
        out.ends.push(out.bytes.len() as u32);
        prev_start = start;
    }
    for _ in 0..ncols {
        let mut col = Vec::with_capacity(rows);
        for _ in 0..rows {
            col.push(r.varint("a value")?);
        }
        out.columns.push(col);
    }
    if r.pos != raw.len() {
        return Err(Damage(format!(
            "{} stray bytes after the values",
            raw.len() - r.pos
        )));
    }
    if out.key(0) != &*entry.first_key || out.key(rows - 1) != &*entry.last_key {
        return Err(Damage("its keys are not the index's range".into()));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(keys: &[&[u8]], bytes: &[u8]) -> NameBlockEntry {
        NameBlockEntry {
            first_key: keys[0].into(),
            last_key: keys[keys.len() - 1].into(),
            offset: 0,
            len: bytes.len() as u32,
        }
    }

    #[test]
    fn front_coded_keys_and_values_round_trip_under_both_codecs() {
        let owned: Vec<String> = (0..3000).map(|i| format!("pageviews:/p/{i:06}")).collect();
        let keys: Vec<&[u8]> = owned.iter().map(|k| k.as_bytes()).collect();
        let a: Vec<u64> = (0..3000).map(|i| i % 7).collect();
        let b: Vec<u64> = (0..3000)
            .map(|i| if i == 5 { u64::MAX } else { i * 3 })
            .collect();
        for codec in [Codec::None, Codec::Zstd] {
            let bytes = encode(&keys, &[&a, &b], &[16, 16], codec).unwrap();
            let block = decode(&bytes, &entry(&keys, &bytes)).unwrap();
            assert_eq!(block.len(), 3000);
            for (i, k) in keys.iter().enumerate() {
                assert_eq!(block.key(i), *k);
                let r = block.find(k).expect("present");
                assert_eq!((block.columns[0][r], block.columns[1][r]), (a[i], b[i]));
            }
            assert_eq!(block.find(b"pageviews:/p/0000001"), None);
            assert_eq!(block.find(b"a"), None);
            assert_eq!(block.find(b"z"), None);
        }
        let zstd = encode(&keys, &[&a, &b], &[16, 16], Codec::Zstd).unwrap();
        assert!(
            zstd.len() < 3000 * 4,
            "{} bytes: the shared prefixes are not stored again",
            zstd.len()
        );
    }

    #[test]
    fn every_flipped_byte_is_reported_with_the_keys_the_block_held() {
        let keys: Vec<&[u8]> = vec![b"a:1", b"a:2", b"b"];
        let bytes = encode(&keys, &[&[1, 2, 3]], &[8], Codec::Zstd).unwrap();
        let e = entry(&keys, &bytes);
        for i in 0..bytes.len() {
            let mut bad = bytes.clone();
            bad[i] ^= 0x40;
            match decode(&bad, &e) {
                Err(BlockError::CorruptKeys {
                    first_key,
                    last_key,
                    ..
                }) => {
                    assert_eq!((first_key.as_str(), last_key.as_str()), ("a:1", "b"));
                }
                other => panic!("byte {i}: {other:?}"),
            }
        }
        let mut wrong = e.clone();
        wrong.last_key = b"c".as_slice().into();
        assert!(
            decode(&bytes, &wrong).is_err(),
            "an index entry that does not match"
        );
        assert!(decode(&bytes[..bytes.len() - 1], &e).is_err());
    }

    #[test]
    fn keys_out_of_order_or_mismatched_columns_are_refused() {
        assert!(encode(&[b"b", b"a"], &[&[1, 2]], &[8], Codec::None).is_err());
        assert!(encode(&[b"a", b"a"], &[&[1, 2]], &[8], Codec::None).is_err());
        assert!(encode(&[b"a"], &[&[1, 2]], &[8], Codec::None).is_err());
        assert!(encode(&[], &[], &[], Codec::None).is_err());
    }
}

//! The on-disk block of the cold tier: one sorted run of rows of one partition.
//!
//! The engine writes these blocks into its cold batch files (`cold.rs`); this module is
//! the format and its codec alone, so it can be tested and measured on its own.
//!
//! # Layout (all integers little-endian)
//!
//! ```text
//! magic "SKCB" | version u8 | codec u8 | columns u16 | rows u32 | first_id u64 | last_id u64
//! | raw_len u32 | payload_len u32 | widths [u8; columns] | payload [u8; payload_len] | crc32 u32
//! ```
//!
//! The CRC32 covers every byte before it. Version 2, written since 2026-11-26, keeps this
//! header and lays out its payload as `sections.rs` says (id gaps in byte
//! planes, each section compressed on its own; `raw_len` is the sum of the sections' raw
//! lengths): 0.75x the bytes of version 1 on Weibo-like rows. Version 1 blocks are still
//! read. In version 1 the payload is the raw part compressed with `codec` (0: stored as
//! is, 1: zstd); the raw part (`raw_len` bytes) is:
//!
//! - the ids after the first, as LEB128 varints of the gap to the previous id (at least 1:
//!   ids are strictly increasing);
//! - per column, its values as LEB128 varints, row after row. Values wider than the
//!   column's width (the engine's overflow values) need nothing special.
//!
//! The column widths are kept so a partition brought back into RAM gets its widths again.
//! Varints rather than values packed at the widths: measured on realistic rows (bench/notes/runs.md,
//! "Cold tier block format"), zstd shrinks varint columns 7% more than packed ones, and a
//! read decompresses the whole block either way, so packing's random access buys nothing.
//!
//! Decoding checks everything (length, CRC, header against the caller's index entry,
//! every section's bounds, the ids' order) and reports a damaged block as
//! [`BlockError::Corrupt`] naming the ids it held.

mod sections;

/// First bytes of every block.
///
/// Exists so a block read from the wrong offset is told from a damaged one at once.
pub const MAGIC: [u8; 4] = *b"SKCB";

/// Format version written by [`encode_block`]; [`decode_block`] reads it and version 1.
pub const VERSION: u8 = 2;

/// The first format, still read (cold files written before version 2 stay in use).
const VERSION_1: u8 = 1;

/// Most rows one block holds.
///
/// Exists to bound what a (damaged or hostile) header can make the decoder allocate.
pub const MAX_ROWS: u32 = 1 << 20;

/// Most columns one block holds (the engine's own limit per counter).
pub const MAX_COLUMNS: u16 = 1024;

/// The zstd level [`Codec::Zstd`] encodes at; chosen by measurement (bench/notes/runs.md,
/// "Cold tier block format"): higher levels gained little on these blocks.
pub const ZSTD_LEVEL: i32 = 3;

/// Fixed header bytes before the column widths.
const FIXED_HEADER: usize = 4 + 1 + 1 + 2 + 4 + 8 + 8 + 4 + 4;
/// Largest raw part a header may announce (bounds the decompression buffer).
pub(crate) const MAX_RAW_LEN: u32 = 256 << 20;

/// How a block's payload is compressed.
///
/// Exists so the codec is named in every block (old blocks stay readable if the default
/// changes) and so tests and the measurement can write uncompressed blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Codec {
    /// The raw part as is.
    None,
    /// zstd at [`ZSTD_LEVEL`]: the default, chosen by measurement.
    Zstd,
}

impl Codec {
    fn byte(self) -> u8 {
        match self {
            Codec::None => 0,
            Codec::Zstd => 1,
        }
    }
    fn from_byte(b: u8) -> Option<Codec> {
        match b {
            0 => Some(Codec::None),
            1 => Some(Codec::Zstd),
            _ => None,
        }
    }
}

/// Where one block lives in its file and which ids it holds: what a caller keeps in RAM
/// per block (the cold tier's index), and what [`decode_block`] checks the block against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockIndexEntry {
    /// Smallest id in the block.
    pub first_id: u64,
    /// Largest id in the block.
    pub last_id: u64,
    /// Byte offset of the block in its file.
    pub offset: u64,
    /// Length of the block in bytes.
    pub len: u32,
}

impl BlockIndexEntry {
    /// Whether `id` falls in this block's range (it may still be absent from the block).
    pub fn covers(&self, id: u64) -> bool {
        self.first_id <= id && id <= self.last_id
    }
}

/// Why a block could not be written or read.
///
/// Exists so a damaged block is reported with the ids it held (the rest of the cold tier
/// keeps serving), apart from a caller's mistake when encoding.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum BlockError {
    /// The rows given to [`encode_block`] cannot form a block.
    #[error("cannot encode a cold block: {0}")]
    BadInput(String),
    /// The block's bytes are damaged or not a block.
    #[error(
        "cold block at offset {offset} ({len} bytes) holding ids {first_id}..={last_id} is \
         corrupt: {reason}"
    )]
    Corrupt {
        /// Smallest id the block held (from the caller's index entry).
        first_id: u64,
        /// Largest id the block held (from the caller's index entry).
        last_id: u64,
        /// Byte offset of the block in its file.
        offset: u64,
        /// Length of the block as the index entry gives it.
        len: u32,
        /// What was found wrong.
        reason: String,
    },
    /// A block of string-keyed rows is damaged or not a block.
    #[error(
        "cold block at offset {offset} ({len} bytes) holding keys {first_key:?}..={last_key:?} \
         is corrupt: {reason}"
    )]
    CorruptKeys {
        /// Smallest key the block held (from the caller's index entry).
        first_key: String,
        /// Largest key the block held (from the caller's index entry).
        last_key: String,
        /// Byte offset of the block in its file.
        offset: u64,
        /// Length of the block as the index entry gives it.
        len: u32,
        /// What was found wrong.
        reason: String,
    },
}

/// The rows of one decoded block.
///
/// Exists so a reader gets ids and columns back in one piece, column-major as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodedBlock {
    /// Strictly increasing ids.
    pub ids: Vec<u64>,
    /// Each column's inline width in bits (1 to 64).
    pub widths: Vec<u8>,
    /// `columns[c][r]` is column `c` of row `r`.
    pub columns: Vec<Vec<u64>>,
}

impl DecodedBlock {
    /// The values of row `id` (one per column), if the block holds it.
    pub fn get(&self, id: u64) -> Option<Vec<u64>> {
        let r = self.ids.binary_search(&id).ok()?;
        Some(self.columns.iter().map(|c| c[r]).collect())
    }
}

pub(crate) fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Encodes one block from strictly increasing `ids` and one slice of values per column
/// (each as long as `ids`), packing column `c` at `widths[c]` bits (1 to 64).
///
/// Values may exceed their column's width (the engine's overflow values): they are kept whole.
pub fn encode_block(
    ids: &[u64],
    columns: &[&[u64]],
    widths: &[u8],
    codec: Codec,
) -> Result<Vec<u8>, BlockError> {
    encode_version(ids, columns, widths, codec, VERSION)
}

/// [`encode_block`] in the first format (version 1).
///
/// Exists so the reading of version-1 blocks (cold files written before version 2) stays
/// tested block by block, and so `examples/cold-blocks.rs` can size both formats on the
/// same rows; the engine never writes it.
#[doc(hidden)]
pub fn encode_block_version_1(
    ids: &[u64],
    columns: &[&[u64]],
    widths: &[u8],
    codec: Codec,
) -> Result<Vec<u8>, BlockError> {
    encode_version(ids, columns, widths, codec, VERSION_1)
}

fn encode_version(
    ids: &[u64],
    columns: &[&[u64]],
    widths: &[u8],
    codec: Codec,
    version: u8,
) -> Result<Vec<u8>, BlockError> {
    let bad = |m: String| Err(BlockError::BadInput(m));
    if ids.is_empty() {
        return bad("a block holds at least one row".into());
    }
    if ids.len() > MAX_ROWS as usize {
        return bad(format!("{} rows, at most {MAX_ROWS} per block", ids.len()));
    }
    if columns.len() != widths.len() {
        return bad(format!(
            "{} columns but {} widths",
            columns.len(),
            widths.len()
        ));
    }
    if columns.len() > usize::from(MAX_COLUMNS) {
        return bad(format!("{} columns, at most {MAX_COLUMNS}", columns.len()));
    }
    if let Some(w) = widths.iter().find(|w| !(1..=64).contains(*w)) {
        return bad(format!("column width {w} is not between 1 and 64 bits"));
    }
    if let Some(c) = columns.iter().position(|c| c.len() != ids.len()) {
        return bad(format!(
            "column {c} has {} values for {} ids",
            columns[c].len(),
            ids.len()
        ));
    }
    if let Some(i) = ids.windows(2).position(|w| w[0] >= w[1]) {
        return bad(format!("ids are not strictly increasing at row {}", i + 1));
    }

    let (payload, raw_len) = if version == VERSION {
        sections::encode(ids, columns, codec)?
    } else {
        encode_v1(ids, columns, codec)?
    };
    if raw_len > MAX_RAW_LEN as usize {
        return bad(format!("raw block of {raw_len} bytes is too large"));
    }

    let mut out = Vec::with_capacity(FIXED_HEADER + widths.len() + payload.len() + 4);
    out.extend_from_slice(&MAGIC);
    out.push(version);
    out.push(codec.byte());
    out.extend_from_slice(&(columns.len() as u16).to_le_bytes());
    out.extend_from_slice(&(ids.len() as u32).to_le_bytes());
    out.extend_from_slice(&ids[0].to_le_bytes());
    out.extend_from_slice(&ids[ids.len() - 1].to_le_bytes());
    out.extend_from_slice(&(raw_len as u32).to_le_bytes());
    out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    out.extend_from_slice(widths);
    out.extend_from_slice(&payload);
    let crc = crc32fast::hash(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    Ok(out)
}

/// A version-1 payload (one stream of varints, compressed whole) and its raw length.
fn encode_v1(
    ids: &[u64],
    columns: &[&[u64]],
    codec: Codec,
) -> Result<(Vec<u8>, usize), BlockError> {
    let mut raw = Vec::with_capacity(ids.len() * (3 + 2 * columns.len()));
    for w in ids.windows(2) {
        put_varint(&mut raw, w[1] - w[0]);
    }
    for values in columns {
        values.iter().for_each(|&v| put_varint(&mut raw, v));
    }
    let payload = match codec {
        Codec::None => raw.clone(),
        Codec::Zstd => zstd::bulk::compress(&raw, ZSTD_LEVEL)
            .map_err(|e| BlockError::BadInput(format!("zstd failed: {e}")))?,
    };
    Ok((payload, raw.len()))
}

/// A failure while reading a block, before it is given the index entry's range.
pub(crate) struct Damage(pub(crate) String);

impl From<&str> for Damage {
    fn from(m: &str) -> Self {
        Damage(m.to_string())
    }
}

/// Reads varints and packed bits from a byte slice without ever reading past it.
pub(crate) struct Reader<'a> {
    pub(crate) buf: &'a [u8],
    pub(crate) pos: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], Damage> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.buf.len());
        let end = end.ok_or_else(|| Damage(format!("{what} runs past the end of the block")))?;
        let s = &self.buf[self.pos..end];
        self.pos = end;
        Ok(s)
    }

    /// A varint; the common shapes (one byte, or a whole varint with 10 bytes to spare)
    /// are decoded inline without a bound check per byte, as a cold read decodes every
    /// varint of its block (3,000 for a block of 1,000 rows and two columns).
    #[inline]
    pub(crate) fn varint(&mut self, what: &str) -> Result<u64, Damage> {
        let rest = &self.buf[self.pos.min(self.buf.len())..];
        if let Some(&b) = rest.first() {
            if b < 0x80 {
                self.pos += 1;
                return Ok(u64::from(b));
            }
        }
        if rest.len() >= 10 {
            let mut v: u64 = 0;
            for (i, &b) in rest[..9].iter().enumerate() {
                v |= u64::from(b & 0x7f) << (7 * i);
                if b < 0x80 {
                    self.pos += i + 1;
                    return Ok(v);
                }
            }
        }
        self.varint_checked(what)
    }

    #[cold]
    fn varint_checked(&mut self, what: &str) -> Result<u64, Damage> {
        let mut v: u64 = 0;
        for shift in (0..64).step_by(7) {
            let b = *self
                .buf
                .get(self.pos)
                .ok_or_else(|| Damage(format!("{what} runs past the end of the block")))?;
            self.pos += 1;
            let part = u64::from(b & 0x7f);
            if shift == 63 && part > 1 {
                return Err(Damage(format!("{what} overflows 64 bits")));
            }
            v |= part << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(Damage(format!("{what} is longer than 10 bytes")))
    }
}

/// A block's header and its payload, checked for length, CRC and agreement with the
/// index entry.
struct Opened<'a> {
    version: u8,
    codec: Codec,
    rows: usize,
    first_id: u64,
    last_id: u64,
    widths: Vec<u8>,
    raw_len: usize,
    payload: &'a [u8],
}

/// A block's bytes without their CRC32, once their length is the `len` its index entry
/// gives, at least `header` bytes plus the CRC, and the CRC matches: what every cold
/// block (of ids or of string keys) checks first.
pub(crate) fn checked_body(bytes: &[u8], len: u32, header: usize) -> Result<&[u8], Damage> {
    if bytes.len() != len as usize {
        return Err(Damage(format!(
            "{} bytes read where the index says {len}",
            bytes.len(),
        )));
    }
    if bytes.len() < header + 4 {
        return Err(Damage(format!(
            "{} bytes is shorter than a block header",
            bytes.len()
        )));
    }
    let (body, tail) = bytes.split_at(bytes.len() - 4);
    let stored = u32::from_le_bytes(tail.try_into().expect("4 bytes"));
    let computed = crc32fast::hash(body);
    if stored != computed {
        return Err(Damage(format!(
            "checksum mismatch (stored {stored:#010x}, computed {computed:#010x})"
        )));
    }
    Ok(body)
}

fn open<'a>(bytes: &'a [u8], entry: &BlockIndexEntry) -> Result<Opened<'a>, Damage> {
    let body = checked_body(bytes, entry.len, FIXED_HEADER)?;
    let mut h = Reader { buf: body, pos: 0 };
    let fixed = h.take(FIXED_HEADER, "the header")?;
    let u16_at = |i: usize| u16::from_le_bytes([fixed[i], fixed[i + 1]]);
    let u32_at = |i: usize| u32::from_le_bytes(fixed[i..i + 4].try_into().expect("4 bytes"));
    let u64_at = |i: usize| u64::from_le_bytes(fixed[i..i + 8].try_into().expect("8 bytes"));
    if fixed[..4] != MAGIC {
        return Err(Damage("not a cold block (bad magic)".into()));
    }
    let version = fixed[4];
    if version != VERSION && version != VERSION_1 {
        return Err(Damage(format!("unknown format version {version}")));
    }
    let codec =
        Codec::from_byte(fixed[5]).ok_or_else(|| Damage(format!("unknown codec {}", fixed[5])))?;
    let ncols = u16_at(6);
    let rows = u32_at(8);
    let (first_id, last_id) = (u64_at(12), u64_at(20));
    let (raw_len, payload_len) = (u32_at(28), u32_at(32));
    if ncols > MAX_COLUMNS {
        return Err(Damage(format!("{ncols} columns, at most {MAX_COLUMNS}")));
    }
    if rows == 0 || rows > MAX_ROWS {
        return Err(Damage(format!("{rows} rows, expected 1 to {MAX_ROWS}")));
    }
    if raw_len > MAX_RAW_LEN {
        return Err(Damage(format!("raw length {raw_len} is too large")));
    }
    if (first_id, last_id) != (entry.first_id, entry.last_id) {
        return Err(Damage(format!(
            "header holds ids {first_id}..={last_id}, not the index's range"
        )));
    }
    if first_id > last_id || (rows == 1) != (first_id == last_id) {
        return Err(Damage(format!(
            "{rows} rows cannot span ids {first_id}..={last_id}"
        )));
    }
    let widths = h.take(usize::from(ncols), "the column widths")?.to_vec();
    if let Some(w) = widths.iter().find(|w| !(1..=64).contains(*w)) {
        return Err(Damage(format!("column width {w} is not between 1 and 64")));
    }
    let payload = h.take(payload_len as usize, "the payload")?;
    if h.pos != body.len() {
        return Err(Damage(format!(
            "{} stray bytes after the payload",
            body.len() - h.pos
        )));
    }
    Ok(Opened {
        version,
        codec,
        rows: rows as usize,
        first_id,
        last_id,
        widths,
        raw_len: raw_len as usize,
        payload,
    })
}

thread_local! {
    /// One zstd decompression context per thread, kept: `zstd::bulk::decompress` makes a
    /// new one per call, and making one (an allocation above the mmap threshold, its pages
    /// faulted in and zeroed) cost more than decoding a cold block itself.
    static DECOMPRESSOR: std::cell::RefCell<Option<zstd::bulk::Decompressor<'static>>> =
        const { std::cell::RefCell::new(None) };
}

/// Decompresses a zstd payload of `raw_len` bytes with this thread's kept context.
pub(crate) fn unzstd(payload: &[u8], raw_len: usize) -> std::io::Result<Vec<u8>> {
    DECOMPRESSOR.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.is_none() {
            *slot = Some(zstd::bulk::Decompressor::new()?);
        }
        slot.as_mut()
            .expect("set above")
            .decompress(payload, raw_len)
    })
}

/// Decodes the payload into ids and columns, checking every rule of the format.
fn parse(o: &Opened) -> Result<(Vec<u64>, Vec<Vec<u64>>), Damage> {
    if o.version == VERSION {
        let range = (o.first_id, o.last_id);
        return sections::decode(o.payload, o.rows, range, o.widths.len(), o.raw_len);
    }
    let raw = match o.codec {
        Codec::None => o.payload.to_vec(),
        Codec::Zstd => unzstd(o.payload, o.raw_len)
            .map_err(|e| Damage(format!("zstd payload does not decode: {e}")))?,
    };
    if raw.len() != o.raw_len {
        return Err(Damage(format!(
            "raw part is {} bytes, header says {}",
            raw.len(),
            o.raw_len
        )));
    }
    parse_v1(o, &raw)
}

/// Decodes a version-1 raw part: varint gaps, then each column's varints.
fn parse_v1(o: &Opened, raw: &[u8]) -> Result<(Vec<u64>, Vec<Vec<u64>>), Damage> {
    let mut r = Reader { buf: raw, pos: 0 };
    let mut ids = Vec::with_capacity(o.rows);
    ids.push(o.first_id);
    let mut id = o.first_id;
    for _ in 1..o.rows {
        let gap = r.varint("an id gap")?;
        if gap == 0 {
            return Err(Damage("ids are not strictly increasing".into()));
        }
        id = id.checked_add(gap).ok_or("an id gap overflows 64 bits")?;
        ids.push(id);
    }
    if id != o.last_id {
        return Err(Damage(format!(
            "last id is {id}, header says {}",
            o.last_id
        )));
    }
    let mut cols = Vec::with_capacity(o.widths.len());
    for _ in &o.widths {
        let mut col = Vec::with_capacity(o.rows);
        for _ in 0..o.rows {
            col.push(r.varint("a column value")?);
        }
        cols.push(col);
    }
    if r.pos != raw.len() {
        return Err(Damage(format!(
            "{} stray bytes in the raw part",
            raw.len() - r.pos
        )));
    }
    Ok((ids, cols))
}

fn corrupt(entry: &BlockIndexEntry, d: Damage) -> BlockError {
    BlockError::Corrupt {
        first_id: entry.first_id,
        last_id: entry.last_id,
        offset: entry.offset,
        len: entry.len,
        reason: d.0,
    }
}

fn decode_inner(bytes: &[u8], entry: &BlockIndexEntry) -> Result<DecodedBlock, Damage> {
    let opened = open(bytes, entry)?;
    let (ids, columns) = parse(&opened)?;
    Ok(DecodedBlock {
        ids,
        widths: opened.widths,
        columns,
    })
}

/// Bytes of a block's header before its column widths: what [`entry_from_header`] reads.
pub const HEADER_BYTES: usize = FIXED_HEADER;

/// The index entry of the block whose first [`HEADER_BYTES`] bytes are `header`, found at
/// `offset`, or `None` if they are not a block header of a version this one reads.
///
/// Exists so a cold file whose index was lost can be walked block by block (each header
/// says how long its block is) and its index rebuilt; the entry is only a claim until
/// [`decode_block`] has checked the whole block against it.
pub fn entry_from_header(header: &[u8], offset: u64) -> Option<BlockIndexEntry> {
    let fixed = header.get(..FIXED_HEADER)?;
    if fixed[..4] != MAGIC || (fixed[4] != VERSION && fixed[4] != VERSION_1) {
        return None;
    }
    let ncols = u16::from_le_bytes([fixed[6], fixed[7]]);
    let first_id = u64::from_le_bytes(fixed[12..20].try_into().ok()?);
    let last_id = u64::from_le_bytes(fixed[20..28].try_into().ok()?);
    let payload_len = u32::from_le_bytes(fixed[32..36].try_into().ok()?);
    if ncols > MAX_COLUMNS || first_id > last_id {
        return None;
    }
    let len = u32::try_from(FIXED_HEADER + usize::from(ncols) + payload_len as usize + 4).ok()?;
    Some(BlockIndexEntry {
        first_id,
        last_id,
        offset,
        len,
    })
}

/// Decodes a whole block read from `entry.offset`, checking it against `entry`.
///
/// A damaged block is a [`BlockError::Corrupt`] naming the entry's id range; never a panic.
pub fn decode_block(bytes: &[u8], entry: &BlockIndexEntry) -> Result<DecodedBlock, BlockError> {
    decode_inner(bytes, entry).map_err(|d| corrupt(entry, d))
}

/// The values of row `id` (one per column) in the block, or `None` if the block does not
/// hold it: what a cold read does after the index picked the block.
///
/// The block is checked as a whole, as [`decode_block`] does.
pub fn get(bytes: &[u8], entry: &BlockIndexEntry, id: u64) -> Result<Option<Vec<u64>>, BlockError> {
    let inner = || -> Result<Option<Vec<u64>>, Damage> {
        if !entry.covers(id) {
            return Ok(None);
        }
        let opened = open(bytes, entry)?;
        let (ids, cols) = parse(&opened)?;
        let Ok(r) = ids.binary_search(&id) else {
            return Ok(None);
        };
        Ok(Some(cols.iter().map(|col| col[r]).collect()))
    };
    inner().map_err(|d| corrupt(entry, d))
}

//! String-keyed rows of one stripe: a compact index of `u64` slots into an arena of
//! records, instead of a general hash map of boxed keys.
//!
//! Exists because a counter keyed by strings (`pageviews:/home`, user names, URLs) cost
//! 88 bytes a row in a `HashMap<Box<str>, SmallVec<[u64; 2]>>` (entry, key allocation,
//! allocator headers, 64-bit values): more than Redis. Here a row costs its record in the
//! arena (two small length bytes, the key, each column at its inline width) plus one
//! 8-byte slot at 70-88% load: 24 + 10 bytes for an 18-byte key and two 16-bit columns.
//!
//! Layout:
//! - **Slot** (`u64`, 0 = empty): the top 28 bits are a tag (28 bits of the key's hash,
//!   not the ones that chose the stripe), the low 36 bits the record's arena offset.
//!   The home slot of a tag is `tag * cap >> 28`, a function of the tag alone, so the
//!   index can be rebuilt or shifted without reading a key. Robin Hood linear probing
//!   with wrap-around; a look-up stops at an empty slot or at an occupant nearer its own
//!   home than the probe is; only a slot whose tag matches sends it to the arena to
//!   compare the key (a false match costs one read per 2^28 probes). Deletion shifts
//!   the following run back: no tombstones in the index. Grows by 1.25x past 7/8 full.
//! - **Record** (in [`Arena`]): key length (1 byte below 128, else 2), `ncols << 1 |
//!   wide` (same encoding), the key's bytes, then `ncols` values: at each column's
//!   inline width (1, 2, 4 or 8 bytes), or all 8 bytes wide in a *wide* record. A row
//!   written before a column was added has fewer columns (they read as defaults); a value
//!   that does not fit its column's width makes the row wide (widening, instead of the
//!   numeric tables' overflow map). A new row holds the columns up to the one written
//!   and a move adds those up to the one written: a row of many columns written one at
//!   a time (a link's 16 analytics slots) costs only the columns it uses.
//! - **Moves and deletes**: a row that gains columns or widens is written again at the
//!   arena's end and its slot pointed there; a deleted row's slot is removed. Both leave
//!   dead bytes in the arena; when they pass a third of it the live records are copied
//!   into a fresh arena (compaction, amortised O(1) a write; wide rows whose values fit
//!   again are narrowed on the way).
//!
//! Invariants:
//! - every slot's record holds the key whose hash gave the slot's tag, and the key is in
//!   at most one slot;
//! - every record reachable from a slot has a value away from its column's default
//!   (rows at all defaults are removed, as in the numeric tables);
//! - `dead` = bytes of the arena no slot points into (apart from its unused byte 0).
//!
//! Why one file of this size: the index and the record codec above share one layout; a
//! change to either is a change to both.

use smallvec::SmallVec;

use crate::arena::{Arena, OFFSET_BITS};
use crate::column::ColumnSpec;
use crate::hugemem::HugeBuf;

const TAG_BITS: u32 = 64 - OFFSET_BITS;
const TAG_MASK: u64 = (1 << TAG_BITS) - 1;
const OFF_MASK: u64 = (1 << OFFSET_BITS) - 1;
/// Smallest index.
const MIN_CAP: usize = 8;
/// Dead arena bytes before a compaction is considered (keeps small tables from copying
/// their few records over and over).
const COMPACT_MIN: usize = 4096;

/// A row copied out for eviction: its key and its values (every column).
pub(crate) type CopiedRow = (Box<[u8]>, Vec<u64>);

/// A row's values: the counter's columns, a few inline. Eight: a short link's first
/// click makes a day row of seven columns and a total row of five, and at four each
/// spilled to the heap (a `malloc` and a `free` a row, ~700 instructions of a first
/// click's flush, callgrind `analytics_flush`).
type Values = SmallVec<[u64; 8]>;

/// Where a key's row is, or that it is absent: valid until the table next changes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Spot {
    tag: u64,
    /// Slot and record offset.
    found: Option<(usize, u64)>,
}

impl Spot {
    /// Whether the row is stored.
    pub(crate) fn found(&self) -> bool {
        self.found.is_some()
    }
}

/// The string-keyed rows of a stripe; see the module doc.
#[derive(Debug, Clone)]
pub(crate) struct NameTable {
    /// `cap` slots of 8 bytes, little-endian.
    slots: HugeBuf,
    cap: usize,
    len: usize,
    arena: Arena,
    /// Arena bytes no slot points into.
    dead: usize,
}

impl Default for NameTable {
    fn default() -> Self {
        NameTable {
            slots: HugeBuf::zeroed(0),
            cap: 0,
            len: 0,
            arena: Arena::default(),
            dead: 0,
        }
    }
}

/// The tag of a key: 28 bits of its hash that do not pick the stripe (those are the
/// top bits, [`crate::counter::stripe_of`]).
#[inline(always)]
fn tag_of(key: &[u8]) -> u64 {
    crate::hash::hash_bytes(key) & TAG_MASK
}

/// Home slot of a tag in an index of `cap` slots.
#[inline(always)]
fn home(tag: u64, cap: usize) -> usize {
    ((tag * cap as u64) >> TAG_BITS) as usize
}

/// Reads a small number (below 2^15): one byte below 128, else two, high byte first
/// with its top bit set. Returns it and the position after it.
#[inline(always)]
fn small(b: &[u8], pos: usize) -> (usize, usize) {
    let x = b[pos];
    if x < 0x80 {
        (x as usize, pos + 1)
    } else {
        ((((x & 0x7F) as usize) << 8) | b[pos + 1] as usize, pos + 2)
    }
}

fn small_len(v: usize) -> usize {
    if v < 0x80 {
        1
    } else {
        2
    }
}

fn put_small(b: &mut [u8], pos: usize, v: usize) -> usize {
    debug_assert!(v < 1 << 15);
    if v < 0x80 {
        b[pos] = v as u8;
        pos + 1
    } else {
        b[pos] = 0x80 | (v >> 8) as u8;
        b[pos + 1] = v as u8;
        pos + 2
    }
}

/// A record's header, read.
#[derive(Debug, Clone, Copy)]
struct Rec {
    key: usize,
    ncols: usize,
    wide: bool,
    /// Whether the row was written since the last eviction pass looked at it.
    written: bool,
    /// The byte holding the written bit (bit 1).
    meta_at: usize,
    /// Where the values start.
    vals: usize,
}

#[inline(always)]
fn parse(b: &[u8]) -> Rec {
    let (key_len, p) = small(b, 0);
    let (meta, key) = small(b, p);
    Rec {
        key,
        ncols: meta >> 2,
        wide: meta & 1 == 1,
        written: meta & 2 != 0,
        // The bit is in the low byte: the last of the meta's one or two bytes.
        meta_at: key - 1,
        vals: key + key_len,
    }
}

#[inline(always)]
fn width(spec: &ColumnSpec) -> usize {
    spec.bits as usize / 8
}

/// Whether `v` fits a narrow record's slot for the column (every value up to
/// `2^bits - 1`: no marker is needed, a value that does not fit widens the row).
#[inline(always)]
fn fits(v: u64, spec: &ColumnSpec) -> bool {
    v <= spec.marker()
}

impl Rec {
    /// Offset of column `c`'s value and its width.
    #[inline(always)]
    fn col(&self, c: usize, specs: &[ColumnSpec]) -> (usize, usize) {
        if self.wide {
            (self.vals + c * 8, 8)
        } else {
            let off: usize = specs[..c].iter().map(width).sum();
            (self.vals + off, width(&specs[c]))
        }
    }

    /// The record's length in bytes.
    fn len(&self, specs: &[ColumnSpec]) -> usize {
        if self.wide {
            self.vals + self.ncols * 8
        } else {
            self.vals + specs[..self.ncols].iter().map(width).sum::<usize>()
        }
    }
}

#[inline(always)]
fn read(b: &[u8], pos: usize, w: usize) -> u64 {
    match w {
        1 => b[pos] as u64,
        2 => u16::from_le_bytes([b[pos], b[pos + 1]]) as u64,
        4 => u32::from_le_bytes(b[pos..pos + 4].try_into().expect("4 bytes")) as u64,
        _ => u64::from_le_bytes(b[pos..pos + 8].try_into().expect("8 bytes")),
    }
}

/// Writes `v` little-endian in `w` bytes (1, 2, 4 or 8) at `pos`: one store of that
/// width, where a copy of `w` bytes was a `memcpy` call a value (~100 instructions of
/// a new row of seven columns, callgrind `analytics_flush`).
#[inline(always)]
fn write(b: &mut [u8], pos: usize, w: usize, v: u64) {
    match w {
        1 => b[pos] = v as u8,
        2 => b[pos..pos + 2].copy_from_slice(&(v as u16).to_le_bytes()),
        4 => b[pos..pos + 4].copy_from_slice(&(v as u32).to_le_bytes()),
        _ => b[pos..pos + 8].copy_from_slice(&v.to_le_bytes()),
    }
}

impl NameTable {
    #[inline(always)]
    fn slot(&self, i: usize) -> u64 {
        u64::from_le_bytes(self.slots[i * 8..i * 8 + 8].try_into().expect("8 bytes"))
    }

    #[inline(always)]
    fn set_slot(&mut self, i: usize, s: u64) {
        self.slots[i * 8..i * 8 + 8].copy_from_slice(&s.to_le_bytes());
    }

    /// How far slot `i` is from the home of `tag`, walking up with wrap-around.
    #[inline(always)]
    fn dist(&self, i: usize, tag: u64) -> usize {
        let h = home(tag, self.cap);
        if i >= h {
            i - h
        } else {
            i + self.cap - h
        }
    }

    /// Asks the CPU for the index line where a key hashed to `hash` would be found
    /// ([`crate::hash::hash_bytes`]), and for the record of the first key there with
    /// its tag when that line is already at hand: a write of many rows calls this
    /// some rows ahead of each, so the look-up finds its lines in the cache instead of
    /// waiting for memory twice (a table of millions of rows is far larger than the
    /// cache; the numeric rows do the same, `Table::incr_many`).
    #[inline]
    pub(crate) fn prefetch(&self, hash: u64, record: bool) {
        if self.cap == 0 {
            return;
        }
        let tag = hash & TAG_MASK;
        let i = home(tag, self.cap);
        if !record {
            crate::partition::prefetch(self.slots.as_ptr().wrapping_add(i * 8));
            return;
        }
        let s = self.slot(i);
        if s != 0 && s >> OFFSET_BITS == tag {
            crate::partition::prefetch(self.arena.at(s & OFF_MASK).as_ptr());
        }
    }

    /// The slot and record offset of `key`, if stored.
    #[inline]
    fn find(&self, key: &[u8], tag: u64) -> Option<(usize, u64)> {
        if self.len == 0 {
            return None;
        }
        let mut i = home(tag, self.cap);
        let mut d = 0;
        loop {
            let s = self.slot(i);
            if s == 0 {
                return None;
            }
            let st = s >> OFFSET_BITS;
            if st == tag {
                let off = s & OFF_MASK;
                let b = self.arena.at(off);
                let r = parse(b);
                if b[r.key..r.vals] == *key {
                    return Some((i, off));
                }
            } else if self.dist(i, st) < d {
                return None;
            }
            i += 1;
            if i == self.cap {
                i = 0;
            }
            d += 1;
        }
    }

    /// Column `c` of the row of `key` (the column's default if not stored).
    #[inline]
    pub(crate) fn get(&self, key: &str, c: usize, specs: &[ColumnSpec]) -> u64 {
        let k = key.as_bytes();
        match self.find(k, tag_of(k)) {
            Some((_, off)) => self.value(off, c, specs),
            None => specs[c].default,
        }
    }

    #[inline(always)]
    fn value(&self, off: u64, c: usize, specs: &[ColumnSpec]) -> u64 {
        let b = self.arena.at(off);
        let r = parse(b);
        if c >= r.ncols {
            return specs[c].default;
        }
        let (pos, w) = r.col(c, specs);
        read(b, pos, w)
    }

    /// Every column of a record, the missing ones at their defaults.
    fn values(&self, off: u64, specs: &[ColumnSpec]) -> Values {
        let b = self.arena.at(off);
        let r = parse(b);
        let mut out = Values::with_capacity(specs.len());
        let mut pos = r.vals;
        for (c, spec) in specs.iter().enumerate() {
            if c < r.ncols {
                let w = if r.wide { 8 } else { width(spec) };
                out.push(read(b, pos, w));
                pos += w;
            } else {
                out.push(spec.default);
            }
        }
        out
    }

    /// Every column of the row of `key` (defaults if not stored), with one look-up.
    pub(crate) fn row(&self, key: &str, specs: &[ColumnSpec]) -> Vec<u64> {
        self.row_at(&self.spot(key), specs)
    }

    /// Every column at `spot` (defaults when the row is not stored).
    pub(crate) fn row_at(&self, spot: &Spot, specs: &[ColumnSpec]) -> Vec<u64> {
        match spot.found {
            Some((_, off)) => self.values(off, specs).into_vec(),
            None => specs.iter().map(|s| s.default).collect(),
        }
    }

    /// Whether a row is stored for `key`.
    pub(crate) fn contains(&self, key: &str) -> bool {
        let k = key.as_bytes();
        self.find(k, tag_of(k)).is_some()
    }

    /// Sets column `c` of the row of `key` to `value` (already checked against the
    /// column's max): in place when the row has the column and the value fits, else by
    /// writing the row again (new column, widening), inserting it if absent; a row back
    /// at all defaults is removed.
    pub(crate) fn set(&mut self, key: &str, c: usize, value: u64, specs: &[ColumnSpec]) {
        let spot = self.spot(key);
        self.set_at(key, spot, c, value, specs);
    }

    /// Looks `key` up once, for a read and the write that follows it
    /// ([`NameTable::value_at`], [`NameTable::set_at`]): an increment's one look-up.
    #[inline]
    pub(crate) fn spot(&self, key: &str) -> Spot {
        let k = key.as_bytes();
        let tag = tag_of(k);
        Spot {
            tag,
            found: self.find(k, tag),
        }
    }

    /// Column `c` at `spot` (its default when the row is not stored).
    #[inline]
    pub(crate) fn value_at(&self, spot: &Spot, c: usize, specs: &[ColumnSpec]) -> u64 {
        match spot.found {
            Some((_, off)) => self.value(off, c, specs),
            None => specs[c].default,
        }
    }

    /// [`NameTable::set`] at a `spot` taken from this table for `key` with no change
    /// in between.
    pub(crate) fn set_at(
        &mut self,
        key: &str,
        spot: Spot,
        c: usize,
        value: u64,
        specs: &[ColumnSpec],
    ) {
        let k = key.as_bytes();
        let tag = spot.tag;
        let spec = &specs[c];
        let Some((i, off)) = spot.found else {
            if value == spec.default {
                return;
            }
            // Only the columns up to `c`: the ones after it read as their defaults
            // until written (a 16-column row set one column at a time starts at one).
            let mut vals: Values = specs[..=c].iter().map(|s| s.default).collect();
            vals[c] = value;
            self.reserve_one();
            let off = self.write_record(k, &vals, specs);
            self.insert_slot((tag << OFFSET_BITS) | off);
            self.len += 1;
            return;
        };
        let r = parse(self.arena.at(off));
        if c < r.ncols && (r.wide || fits(value, spec)) {
            let (pos, w) = r.col(c, specs);
            let b = self.arena.at_mut(off);
            write(b, pos, w, value);
            b[r.meta_at] |= 2;
            // Only a write of the default can free the row.
            if value == spec.default && self.all_default(off, specs) {
                self.remove_at(i, off, specs);
            }
            return;
        }
        if c >= r.ncols && value == spec.default {
            return; // the missing column already reads as its default
        }
        let mut vals = self.values(off, specs);
        vals[c] = value;
        vals.truncate(r.ncols.max(c + 1));
        let old = r.len(specs);
        let new = self.write_record(k, &vals, specs);
        self.set_slot(i, (tag << OFFSET_BITS) | new);
        self.dead += old;
        self.maybe_compact(specs);
    }

    /// Writes `changes` (`(column, value)`, in order: a column given twice keeps the
    /// last) to the row of `key` at a `spot` taken from this table with no change in
    /// between: several columns of one row with one look-up. In place when every
    /// column changed is stored and its value fits (the common case: only those columns
    /// are touched, however wide the row), else the row is written again once with room
    /// for all of them ([`NameTable::put_row_at`]); a row back at all defaults is removed.
    pub(crate) fn put_columns_at(
        &mut self,
        key: &str,
        spot: Spot,
        changes: &[(usize, u64)],
        specs: &[ColumnSpec],
    ) {
        if let Some((i, off)) = spot.found {
            let r = parse(self.arena.at(off));
            let in_place = changes
                .iter()
                .all(|&(c, v)| c < r.ncols && (r.wide || fits(v, &specs[c])));
            if in_place {
                let mut to_default = false;
                let b = self.arena.at_mut(off);
                b[r.meta_at] |= 2;
                for &(c, v) in changes {
                    let (pos, w) = r.col(c, specs);
                    write(b, pos, w, v);
                    to_default |= v == specs[c].default;
                }
                // Only a write of a default can free the row.
                if to_default && self.all_default(off, specs) {
                    self.remove_at(i, off, specs);
                }
                return;
            }
        }
        // The row's values up to the last column stored or changed (not every column
        // of the counter: a new analytics row of 87 columns uses its first few).
        let changed = changes.iter().map(|&(c, _)| c + 1).max().unwrap_or(0);
        let mut vals = match spot.found {
            Some((_, off)) => {
                let stored = parse(self.arena.at(off)).ncols;
                self.values(off, &specs[..changed.max(stored)])
            }
            None => specs[..changed].iter().map(|s| s.default).collect(),
        };
        for &(c, v) in changes {
            vals[c] = v;
        }
        self.put_row_at(key, spot, &vals, specs);
    }

    /// Writes a whole row of `key` (`vals`: one value per column of `specs`, or fewer
    /// but at least as many as the row stores; the ones left out read as defaults) at a
    /// `spot` taken from this table with no change in between: several columns of one
    /// row written with one look-up, and the record moved at most once. As
    /// [`NameTable::set_at`] column by column: in place when every column already stored
    /// keeps fitting and no column past the stored ones leaves its default; a row at all
    /// defaults is removed.
    fn put_row_at(&mut self, key: &str, spot: Spot, vals: &[u64], specs: &[ColumnSpec]) {
        let used = vals
            .iter()
            .zip(specs)
            .rposition(|(v, s)| *v != s.default)
            .map_or(0, |c| c + 1);
        let tag = spot.tag;
        let Some((i, off)) = spot.found else {
            if used > 0 {
                self.reserve_one();
                let off = self.write_record(key.as_bytes(), &vals[..used], specs);
                self.insert_slot((tag << OFFSET_BITS) | off);
                self.len += 1;
            }
            return;
        };
        if used == 0 {
            self.remove_at(i, off, specs);
            return;
        }
        let r = parse(self.arena.at(off));
        let fits_in_place = used <= r.ncols
            && (r.wide || vals[..r.ncols].iter().zip(specs).all(|(v, s)| fits(*v, s)));
        if fits_in_place {
            let b = self.arena.at_mut(off);
            b[r.meta_at] |= 2;
            for (c, v) in vals[..r.ncols].iter().enumerate() {
                let (pos, w) = r.col(c, specs);
                write(b, pos, w, *v);
            }
            return;
        }
        let old = r.len(specs);
        let new = self.write_record(key.as_bytes(), &vals[..used.max(r.ncols)], specs);
        self.set_slot(i, (tag << OFFSET_BITS) | new);
        self.dead += old;
        self.maybe_compact(specs);
    }

    fn all_default(&self, off: u64, specs: &[ColumnSpec]) -> bool {
        let b = self.arena.at(off);
        let r = parse(b);
        let mut pos = r.vals;
        specs[..r.ncols].iter().all(|spec| {
            let w = if r.wide { 8 } else { width(spec) };
            let v = read(b, pos, w);
            pos += w;
            v == spec.default
        })
    }

    /// Appends a record for `key` with `vals` (one per column of `specs`, or fewer),
    /// wide only if some value does not fit its column. Returns its offset.
    fn write_record(&mut self, key: &[u8], vals: &[u64], specs: &[ColumnSpec]) -> u64 {
        let wide = vals.iter().zip(specs).any(|(v, s)| !fits(*v, s));
        let ncols = vals.len();
        // Written: a new record is a write (compaction clears the bit again when the
        // record it copies had it clear).
        let meta = (ncols << 2) | 2 | wide as usize;
        let body: usize = if wide {
            ncols * 8
        } else {
            specs[..ncols].iter().map(width).sum()
        };
        let len = small_len(key.len()) + small_len(meta) + key.len() + body;
        let (off, b) = self.arena.alloc(len);
        let mut pos = put_small(b, 0, key.len());
        pos = put_small(b, pos, meta);
        b[pos..pos + key.len()].copy_from_slice(key);
        pos += key.len();
        for (v, s) in vals.iter().zip(specs) {
            let w = if wide { 8 } else { width(s) };
            write(b, pos, w, *v);
            pos += w;
        }
        off
    }

    /// Makes room for one more slot (growing by 1.25x past 7/8 full).
    fn reserve_one(&mut self) {
        if (self.len + 1) * 8 <= self.cap * 7 {
            return;
        }
        self.rebuild((self.cap + self.cap / 4 + 1).max(MIN_CAP));
    }

    /// Moves every slot into a new index of `cap` slots (room for all of them).
    fn rebuild(&mut self, cap: usize) {
        let old = std::mem::replace(&mut self.slots, HugeBuf::zeroed(cap * 8));
        let old_cap = std::mem::replace(&mut self.cap, cap);
        for i in 0..old_cap {
            let s = u64::from_le_bytes(old[i * 8..i * 8 + 8].try_into().expect("8 bytes"));
            if s != 0 {
                self.insert_slot(s);
            }
        }
    }

    /// Gives back index memory after many rows left at once (an eviction): below a
    /// quarter full, the index is rebuilt at about 70% load.
    pub(crate) fn shrink(&mut self) {
        if self.cap <= MIN_CAP || self.len * 4 >= self.cap {
            return;
        }
        self.rebuild((self.len * 10 / 7 + 1).max(MIN_CAP));
    }

    /// Robin Hood insertion of a slot value (the index has room).
    fn insert_slot(&mut self, mut s: u64) {
        let mut i = home(s >> OFFSET_BITS, self.cap);
        let mut d = 0;
        loop {
            let here = self.slot(i);
            if here == 0 {
                self.set_slot(i, s);
                return;
            }
            let hd = self.dist(i, here >> OFFSET_BITS);
            if hd < d {
                self.set_slot(i, s);
                s = here;
                d = hd;
            }
            i += 1;
            if i == self.cap {
                i = 0;
            }
            d += 1;
        }
    }

    /// Removes the row in slot `i` (record at `off`): backward-shift deletion.
    fn remove_at(&mut self, i: usize, off: u64, specs: &[ColumnSpec]) {
        self.unlink(i, off, specs);
        self.maybe_compact(specs);
    }

    /// [`NameTable::remove_at`] without the compaction that may follow (an eviction
    /// removes many rows in steps, and compacts once at the end: [`NameTable::settle`]).
    fn unlink(&mut self, mut i: usize, off: u64, specs: &[ColumnSpec]) {
        self.dead += parse(self.arena.at(off)).len(specs);
        self.len -= 1;
        if self.len == 0 {
            *self = NameTable::default();
            return;
        }
        loop {
            let j = if i + 1 == self.cap { 0 } else { i + 1 };
            let next = self.slot(j);
            if next == 0 || self.dist(j, next >> OFFSET_BITS) == 0 {
                self.set_slot(i, 0);
                break;
            }
            self.set_slot(i, next);
            i = j;
        }
    }

    /// After an eviction's removals: compacts the arena if they left it a third dead and
    /// shrinks the index if they left it a quarter full. One compaction of the rows that
    /// stayed, instead of one every time a third of the arena had gone (each copying
    /// every row left, under the stripe's lock: 0.25 s stalls at 10 M rows).
    pub(crate) fn settle(&mut self, specs: &[ColumnSpec]) {
        self.maybe_compact(specs);
        self.shrink();
    }

    /// Deletes the row of `key`; returns whether it was stored.
    pub(crate) fn remove(&mut self, key: &str, specs: &[ColumnSpec]) -> bool {
        let k = key.as_bytes();
        match self.find(k, tag_of(k)) {
            Some((i, off)) => {
                self.remove_at(i, off, specs);
                true
            }
            None => false,
        }
    }

    /// Compacts when dead bytes pass a third of the arena.
    fn maybe_compact(&mut self, specs: &[ColumnSpec]) {
        if self.dead >= COMPACT_MIN && self.dead * 3 >= self.arena.used() {
            self.compact(specs);
        }
    }

    /// Copies every live record into a fresh arena (narrowing wide rows whose values
    /// fit again) and points the slots there.
    fn compact(&mut self, specs: &[ColumnSpec]) {
        let old = std::mem::take(&mut self.arena);
        for i in 0..self.cap {
            let s = self.slot(i);
            if s == 0 {
                continue;
            }
            let off = s & OFF_MASK;
            let b = old.at(off);
            let r = parse(b);
            let new = if r.wide {
                let vals: Values = {
                    let mut pos = r.vals;
                    (0..r.ncols)
                        .map(|_| {
                            let v = read(b, pos, 8);
                            pos += 8;
                            v
                        })
                        .collect()
                };
                let key = &b[r.key..r.vals];
                let new = self.write_record(key, &vals, specs);
                if !r.written {
                    let at = parse(self.arena.at(new)).meta_at;
                    self.arena.at_mut(new)[at] &= !2;
                }
                new
            } else {
                let len = r.len(specs);
                let (new, dst) = self.arena.alloc(len);
                dst.copy_from_slice(&b[..len]);
                new
            };
            self.set_slot(i, (s & !OFF_MASK) | new);
        }
        self.dead = 0;
    }

    /// Copies for eviction the rows not written since the clock's last tick (every row
    /// when `all`), as `(key, values)` with every column of `specs`, walking the index
    /// from slot `from` and stopping after `max` rows copied or `4 * max` slots walked
    /// (so one call holds the stripe's lock for a bounded time); clears the written bit
    /// of every row it walks: the clock's tick. Returns the copies and the slot to go on
    /// from (`None`: the walk is done). The index may change between calls, so a walk in
    /// steps may see a row twice or miss one: the caller drops repeats, and a missed row
    /// waits for the next tick. Whether a copy may replace its row is decided later by
    /// its values ([`NameTable::drop_if_same`]), not by this bit.
    pub(crate) fn copy_for_eviction(
        &mut self,
        specs: &[ColumnSpec],
        all: bool,
        from: usize,
        max: usize,
    ) -> (Vec<CopiedRow>, Option<usize>) {
        let mut out = Vec::new();
        let mut i = from;
        let mut walked = 0;
        while i < self.cap {
            if out.len() >= max || walked >= max.saturating_mul(4) {
                return (out, Some(i));
            }
            let s = self.slot(i);
            i += 1;
            walked += 1;
            if s == 0 {
                continue;
            }
            let off = s & OFF_MASK;
            let r = parse(self.arena.at(off));
            if all || !r.written {
                let key: Box<[u8]> = self.arena.at(off)[r.key..r.vals].into();
                out.push((key, self.values(off, specs).into_vec()));
            }
            self.arena.at_mut(off)[r.meta_at] &= !2;
        }
        (out, None)
    }

    /// Removes the row of `key` if its values are `vals` (the columns of `specs`; those
    /// past the end of `vals` at their defaults): a copy on disk with the same values
    /// then holds it. Returns whether it did. A row written since the copy (other
    /// values), or gone (deleted), stays as it is.
    pub(crate) fn drop_if_same(&mut self, key: &[u8], vals: &[u64], specs: &[ColumnSpec]) -> bool {
        let Some((i, off)) = self.find(key, tag_of(key)) else {
            return false;
        };
        let now = self.values(off, specs);
        let same = now
            .iter()
            .zip(specs)
            .enumerate()
            .all(|(c, (v, spec))| *v == vals.get(c).copied().unwrap_or(spec.default));
        if !same {
            return false;
        }
        self.unlink(i, off, specs);
        true
    }

    /// Puts a row back from the cold tier (`vals`: its stored columns, at most one per
    /// column of `specs`); the row must not be in the table. It counts as written.
    pub(crate) fn insert_thawed(&mut self, key: &str, vals: &[u64], specs: &[ColumnSpec]) {
        let spot = self.spot(key);
        debug_assert!(spot.found.is_none());
        let n = vals.len().min(specs.len());
        self.put_row_at(key, spot, &vals[..n], specs);
    }

    /// Rows stored.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Bytes held: the index and the arena's chunks.
    pub(crate) fn bytes(&self) -> usize {
        self.slots.bytes() + self.arena.bytes()
    }

    /// Calls `f` with every row's key and values (every column of `specs`), in slot order.
    pub(crate) fn for_each(&self, specs: &[ColumnSpec], mut f: impl FnMut(&str, &[u64])) {
        for i in 0..self.cap {
            let s = self.slot(i);
            if s == 0 {
                continue;
            }
            let off = s & OFF_MASK;
            let b = self.arena.at(off);
            let r = parse(b);
            // Keys are stored from `&str`s, so this always holds.
            if let Ok(key) = std::str::from_utf8(&b[r.key..r.vals]) {
                f(key, &self.values(off, specs));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(name: &str, bits: u8, max_bits: u8, default: u64) -> ColumnSpec {
        ColumnSpec {
            name: name.into(),
            bits,
            max_bits,
            default,
        }
    }

    fn two() -> Vec<ColumnSpec> {
        vec![spec("a", 16, 64, 0), spec("b", 16, 64, 0)]
    }

    #[test]
    fn small_numbers_round_trip_in_one_or_two_bytes() {
        let mut b = [0u8; 4];
        for v in [0usize, 1, 127, 128, 1024, 2049, (1 << 15) - 1] {
            let end = put_small(&mut b, 1, v);
            assert_eq!(end - 1, small_len(v));
            assert_eq!(small(&b, 1), (v, end));
        }
    }

    #[test]
    fn a_row_of_two_16_bit_columns_costs_its_key_plus_the_columns_written() {
        let specs = two();
        let mut t = NameTable::default();
        t.set("pageviews:/home/ab", 0, 5, &specs);
        assert_eq!(
            t.arena.used(),
            1 + 2 + 18 + 2,
            "column b is not written yet"
        );
        assert_eq!(t.get("pageviews:/home/ab", 0, &specs), 5);
        assert_eq!(t.get("pageviews:/home/ab", 1, &specs), 0);
        assert_eq!(t.row("pageviews:/home/ab", &specs), vec![5, 0]);
        t.set("pageviews:/home/cd", 1, 6, &specs);
        assert_eq!(
            t.arena.used(),
            1 + (2 + 18 + 2) + (2 + 18 + 4),
            "a: 0 then b: 6"
        );
        assert_eq!(t.row("pageviews:/home/cd", &specs), vec![0, 6]);
    }

    #[test]
    fn a_wide_row_written_a_column_at_a_time_holds_only_the_columns_up_to_the_last() {
        // A link's analytics slots: 16 columns of 64 bits, most links use one or two.
        let specs: Vec<ColumnSpec> = (0..16).map(|i| spec(&format!("s{i}"), 64, 64, 0)).collect();
        let mut t = NameTable::default();
        t.set("k", 0, u64::MAX / 3, &specs);
        assert_eq!(t.arena.used(), 1 + 2 + 1 + 8);
        t.set("k", 1, 7, &specs);
        assert_eq!(
            t.arena.used() - t.dead,
            1 + 2 + 1 + 16,
            "moved with two columns"
        );
        t.set("k", 0, 9, &specs); // in place
        assert_eq!(t.arena.used() - t.dead, 1 + 2 + 1 + 16);
        let mut want = vec![0; 16];
        want[0] = 9;
        want[1] = 7;
        assert_eq!(t.row("k", &specs), want);
        t.set("k", 15, 1, &specs);
        want[15] = 1;
        assert_eq!(t.row("k", &specs), want);
        let mut rows = Vec::new();
        t.for_each(&specs, |k, v| rows.push((k.to_string(), v.to_vec())));
        assert_eq!(rows, vec![("k".to_string(), want)]);
        t.compact(&specs);
        assert_eq!(t.arena.used(), 1 + 2 + 1 + 16 * 8);
        for c in 0..16 {
            t.set("k", c, 0, &specs);
        }
        assert!(!t.contains("k"), "all defaults: removed");
    }

    #[test]
    fn many_rows_grow_delete_and_compact_without_losing_any() {
        let specs = two();
        let mut t = NameTable::default();
        let key = |i: usize| format!("key-{i}-{}", "x".repeat(i % 40));
        for i in 0..20_000 {
            t.set(&key(i), i % 2, (i as u64 % 1000) + 1, &specs);
        }
        assert_eq!(t.len(), 20_000);
        // Delete two thirds: compaction must run and keep the rest.
        for i in (0..20_000).filter(|i| i % 3 != 0) {
            assert!(t.remove(&key(i), &specs));
            assert!(!t.remove(&key(i), &specs));
        }
        assert!(t.dead * 3 < t.arena.used(), "compacted");
        for i in 0..20_000 {
            let want = if i % 3 == 0 { (i as u64 % 1000) + 1 } else { 0 };
            assert_eq!(t.get(&key(i), i % 2, &specs), want, "key {i}");
            assert_eq!(t.contains(&key(i)), i % 3 == 0);
        }
        let mut seen = 0;
        t.for_each(&specs, |k, v| {
            seen += 1;
            assert!(k.starts_with("key-"));
            assert_eq!(v.len(), 2);
        });
        assert_eq!(seen, t.len());
    }

    #[test]
    fn values_past_the_inline_width_widen_the_row_and_narrow_again_on_compaction() {
        let specs = vec![spec("a", 8, 32, 0), spec("b", 16, 64, 3)];
        let mut t = NameTable::default();
        t.set("k", 0, 255, &specs);
        assert!(!parse(t.arena.at(t.find(b"k", tag_of(b"k")).unwrap().1)).wide);
        t.set("k", 0, 256, &specs);
        t.set("k", 1, u32::MAX as u64 * 9, &specs);
        assert_eq!(t.get("k", 0, &specs), 256);
        assert_eq!(t.get("k", 1, &specs), u32::MAX as u64 * 9);
        let off = t.find(b"k", tag_of(b"k")).unwrap().1;
        assert!(parse(t.arena.at(off)).wide);
        t.set("k", 0, 7, &specs);
        t.set("k", 1, 3, &specs);
        assert_eq!(t.get("k", 0, &specs), 7);
        t.compact(&specs);
        let off = t.find(b"k", tag_of(b"k")).unwrap().1;
        assert!(!parse(t.arena.at(off)).wide);
        assert_eq!(t.row("k", &specs), vec![7, 3]);
        t.set("k", 0, 0, &specs);
        assert_eq!(t.len(), 0, "a row back at its defaults is removed");
        assert_eq!(t.bytes(), 0, "an empty table holds nothing");
    }

    #[test]
    fn a_column_added_later_reads_as_its_default_until_written() {
        let mut specs = two();
        let mut t = NameTable::default();
        t.set("a", 1, 9, &specs);
        specs.push(spec("c", 32, 64, 2));
        assert_eq!(t.row("a", &specs), vec![0, 9, 2]);
        t.set("a", 2, 2, &specs); // the default of a missing column: nothing to do
        assert_eq!(t.arena.used(), 1 + 2 + 1 + 4);
        t.set("a", 2, 40, &specs);
        assert_eq!(t.row("a", &specs), vec![0, 9, 40]);
        t.set("a", 1, 0, &specs);
        t.set("a", 2, 2, &specs);
        assert!(!t.contains("a"));
    }

    #[test]
    fn rows_leaving_for_the_cold_tier_shrink_the_index_and_written_rows_stay() {
        let specs = two();
        let mut t = NameTable::default();
        let key = |i: usize| format!("row-{i}");
        for i in 0..2000 {
            t.set(&key(i), 0, i as u64 + 1, &specs);
        }
        // The clock ticks (copying no row: all were written since it last ticked), ten
        // rows are written, and at the next tick the rest leave.
        let (none, done) = t.copy_for_eviction(&specs, false, 0, usize::MAX);
        assert_eq!((none.len(), done), (0, None), "all written since");
        for i in 0..10 {
            t.set(&key(i), 1, 7, &specs);
        }
        // In steps of at most 300 rows: every row not written is copied once.
        let mut copied = Vec::new();
        let mut from = Some(0);
        while let Some(at) = from {
            let (rows, next) = t.copy_for_eviction(&specs, false, at, 300);
            assert!(rows.len() <= 300);
            copied.extend(rows);
            from = next;
        }
        assert_eq!(copied.len(), 1990);
        // Row 10 is written between the copy and the swap: it stays too.
        t.set(&key(10), 1, 8, &specs);
        for (k, vals) in &copied {
            let stays = **k == *key(10).as_bytes();
            assert_eq!(t.drop_if_same(k, vals, &specs), !stays);
            assert_eq!(vals[1], 0);
        }
        let wide = t.cap;
        t.shrink();
        assert!(t.cap * 50 < wide, "{} slots of {wide}", t.cap);
        for i in 0..10 {
            assert_eq!(t.row(&key(i), &specs), vec![i as u64 + 1, 7]);
        }
        assert_eq!(t.row(&key(10), &specs), vec![11, 8]);
        assert!(!t.contains(&key(11)));
        assert_eq!(t.len(), 11);
    }

    #[test]
    fn colliding_tags_are_told_apart_by_the_key() {
        // Force every key onto one tag: the look-up must compare keys.
        let specs = two();
        let mut t = NameTable::default();
        for i in 0..200usize {
            let k = format!("k{i}");
            let vals: Values = [i as u64 + 1, 0].into_iter().collect();
            t.reserve_one();
            let off = t.write_record(k.as_bytes(), &vals, &specs);
            t.insert_slot((7u64 << OFFSET_BITS) | off);
            t.len += 1;
        }
        for i in 0..200usize {
            let k = format!("k{i}");
            let (_, off) = t.find(k.as_bytes(), 7).expect("found");
            assert_eq!(t.value(off, 0, &specs), i as u64 + 1);
        }
        assert!(t.find(b"k200", 7).is_none());
        for i in (0..200usize).step_by(2) {
            let k = format!("k{i}");
            let (slot, off) = t.find(k.as_bytes(), 7).expect("found");
            t.remove_at(slot, off, &specs);
        }
        for i in 0..200usize {
            let k = format!("k{i}");
            assert_eq!(t.find(k.as_bytes(), 7).is_some(), i % 2 == 1, "k{i}");
        }
    }

    /// Every occupied slot is at most one farther from its home than the slot before
    /// it, and none sits past its home after an empty slot: the order a look-up that
    /// stops early relies on.
    fn assert_robin_hood_order(t: &NameTable) {
        for i in 0..t.cap {
            let s = t.slot(i);
            if s == 0 {
                continue;
            }
            let d = t.dist(i, s >> OFFSET_BITS);
            let before = t.slot((i + t.cap - 1) % t.cap);
            let max = if before == 0 {
                0
            } else {
                t.dist((i + t.cap - 1) % t.cap, before >> OFFSET_BITS) + 1
            };
            assert!(
                d <= max,
                "slot {i} of {}: {d} from its home, at most {max}",
                t.cap
            );
        }
    }

    /// A growing index, one rebuilt larger and smaller, and one of few tags crowded at
    /// both ends (clusters that wrap round) keep the Robin Hood order, and every key is
    /// found.
    #[test]
    fn a_rebuilt_index_keeps_the_robin_hood_order_and_finds_every_key() {
        let specs = two();
        let mut t = NameTable::default();
        let key = |i: usize| format!("row:{i}");
        for i in 0..50_000 {
            t.set(&key(i), 0, i as u64 + 1, &specs);
            if i.is_power_of_two() || i % 9_973 == 0 {
                assert_robin_hood_order(&t);
            }
        }
        assert_robin_hood_order(&t);
        for cap in [t.cap * 2, t.len * 10 / 7 + 1, t.cap + 1] {
            t.rebuild(cap);
            assert_robin_hood_order(&t);
            for i in 0..50_000 {
                assert_eq!(
                    t.get(&key(i), 0, &specs),
                    i as u64 + 1,
                    "cap {cap}, key {i}"
                );
            }
        }
        // Tags crowded at the top and bottom of the range and shared by many keys: the
        // clusters wrap round the index's end.
        let mut crowded = NameTable::default();
        let tags = [0, 1, TAG_MASK - 1, TAG_MASK, TAG_MASK / 2];
        for i in 0..3_000usize {
            let k = format!("k{i}");
            let vals: Values = [i as u64 + 1, 0].into_iter().collect();
            crowded.reserve_one();
            let off = crowded.write_record(k.as_bytes(), &vals, &specs);
            crowded.insert_slot((tags[i % tags.len()] << OFFSET_BITS) | off);
            crowded.len += 1;
            assert_robin_hood_order(&crowded);
        }
        for cap in [
            crowded.cap + 7,
            crowded.len + crowded.len / 7 + 1,
            crowded.cap * 3,
        ] {
            crowded.rebuild(cap);
            assert_robin_hood_order(&crowded);
            for i in 0..3_000usize {
                let k = format!("k{i}");
                let (_, off) = crowded
                    .find(k.as_bytes(), tags[i % tags.len()])
                    .unwrap_or_else(|| panic!("cap {cap}: k{i} lost"));
                assert_eq!(crowded.value(off, 0, &specs), i as u64 + 1);
            }
        }
    }
}

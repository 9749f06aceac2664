//! One open-addressing table: keys once, packed, and each column at its own width. A
//! big partition (1 MiB or more) keeps them all in one buffer (keys, then column 0,
//! column 1, ...), so it is one region of huge pages ([`HugeBuf`]) rather than several
//! smaller ones; a small one keeps each column in a buffer of its own, which the
//! allocator packs better (one block per partition cost ~0.6 bytes/row more resident
//! memory at 10 M random ids in 8,192 partitions).
//!
//! The table is an *ordered* linear-probing table (Amble and Knuth's ordered hash
//! table, which is Robin Hood hashing with ties broken by key). Each key is stored
//! scrambled by a bijection of its `8 * key_bytes` bits ([`crate::scramble::scramble`]);
//! the scrambled value is at once the stored key and the hash, and its home slot is its top bits scaled onto
//! the home range, a few slots short of the capacity. Slots never wrap around: runs near
//! the top spill into those last slots, and the array grows by a few slots in the rare
//! case a run reaches its end. So the whole table is sorted by stored key,
//! and a look-up walks up from the home slot until it meets a key not below its own
//! (an empty slot holds all ones, the largest value, so it stops there too): one load
//! and one compare per probe, no hash per probe. Deletion shifts the following run back
//! (no tombstones). Capacity is any size, not a power of two, so growth steps can be
//! small (x1.06) and the table stays between ~90% and 96% full (a big partition, whose
//! look-ups miss the cache, between ~81% and 86%: shorter runs, fewer lines per look-up).
//!
//! Invariants:
//! - a slot is empty iff its stored key equals `empty` (all ones in `key_bytes` bytes);
//!   the scramble maps all ones to all ones, so callers never insert the all-ones key (the
//!   stripe routes such ids elsewhere);
//! - every stored key sits at or after its home slot, every slot between its home and
//!   it is occupied, and stored keys increase strictly from slot to slot across the
//!   whole table (empty slots aside);
//! - the last physical slot is always empty (the scan's sentinel);
//! - `cols.len()` may be shorter than the counter's schema: missing columns read as the
//!   column default (this is how `add_column` avoids touching existing rows);
//! - every occupied slot holds a row with at least one column away from its default.
//!
//! Why one file of this size: the invariants above bind every function of the table
//! (probe, insert, shift-back delete, growth); they are checked in one place.
// Allowed here only (unchecked key and value reads on the look-up path; each block says why it is sound); the workspace denies unsafe code elsewhere.
#![allow(unsafe_code)]

use crate::column::ColumnSpec;
use crate::hugemem::HugeBuf;
use crate::scramble::{mix, scramble, unscramble};
use smallvec::SmallVec;

/// Prefetch hint; a no-op where the architecture has none wired up.
#[inline(always)]
pub(crate) fn prefetch(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch never faults and reads nothing into the program; any address is allowed.
    unsafe {
        core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(p as *const i8)
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// A fresh value for [`Partition::moves`]: each call returns a number no earlier call in
/// the process returned. Each thread takes stamps from a block of 2^20 of its own and
/// touches the shared counter once per block, so inserts on many stripes at once do not
/// all write one cache line.
#[inline]
fn next_moves() -> u64 {
    const BLOCK: u64 = 1 << 20;
    static BLOCKS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    thread_local! {
        /// Next stamp of this thread's block; a multiple of `BLOCK` means the block is used up.
        static NEXT: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    }
    NEXT.with(|next| {
        let mut n = next.get();
        if n % BLOCK == 0 {
            // Block 0 is never handed out, so 0 (the initial value) always asks for one.
            n = (BLOCKS.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1) * BLOCK + 1;
        }
        next.set(n + 1);
        n
    })
}

/// Highest load before growing, in 1/100, of a small partition (under
/// [`crate::hugemem::MAP_MIN`] bytes): one that a cache holds whole, or one of thousands
/// whose bytes per row the memory targets are about (10 M random ids in the engine).
const MAX_LOAD_PCT: usize = 96;

/// Highest load before growing, in 1/100, of a big partition: one whose look-ups miss
/// the cache. Fewer slots per run mean fewer lines per look-up (at 96% a run ends ~13
/// slots past its home, often in the next key line and another value line); measured at
/// 100 M random rows, one process, alternating: 87% against 93% average load 1.13x the
/// increments per second for ~0.7 bytes per row, 83% against 87% another 1.23x for ~0.6.
const BIG_MAX_LOAD_PCT: usize = 86;

/// Where a partition's columns live and which buffers hold them, inline for the first
/// [`INLINE_COLS`]: a look-up reads them from the partition's own lines (in the map entry
/// that holds it) instead of two more heap blocks, each on a page of its own. At 10 M
/// newest rows of a billion that was two more cache and TLB misses per increment.
type Cols = SmallVec<[Col; INLINE_COLS]>;
/// See [`Cols`].
type ColBufs = SmallVec<[HugeBuf; INLINE_COLS]>;

/// Columns whose places a partition holds inline ([`Cols`]); a counter with more puts
/// them on the heap, as before.
const INLINE_COLS: usize = 2;

/// An open-addressing table of rows keyed by the low `8 * key_bytes` bits of an id.
///
/// `repr(C)`, fields in the order a look-up reads them: the key buffer and the scramble's
/// constants, then the column places, so an increment's look-up reads a few adjacent
/// lines of the map entry that holds the partition.
#[derive(Debug, Clone)]
#[repr(C)]
pub(crate) struct Partition {
    /// Stored (scrambled) keys, `key_bytes` bytes each, at the start: `slots * key_bytes + 8` bytes (8
    /// bytes of padding so every slot can be read as a whole `u64`); then, in a big
    /// partition, each column's values, `slots` of them, where `cols` says.
    buf: HugeBuf,
    key_bytes: usize,
    empty: u64,
    /// `mix(empty) ^ empty`, the constant half of [`crate::scramble::scramble`], kept so a
    /// look-up mixes once.
    flip: u64,
    /// Home slots are `0..homes` (`homes < cap`: the slots above are for spilling runs).
    homes: usize,
    /// Renewed ([`next_moves`]) by every change that moves keys or buffers (insert,
    /// remove, rebuild, relayout), so no two states of any partitions share it: a slot
    /// found ahead of time ([`Partition::locate`]) is still right exactly while the
    /// partition it was found in still has the same value, even if it was replaced by
    /// another partition in between.
    moves: u64,
    /// Physical slots: `cap`, or a few more once a run has reached the end.
    slots: usize,
    bits: u32,
    /// Set by every write; the cold tier's aging pass clears it and notes the time
    /// (`last_write_ms`), so the hot path pays one store, not a clock read.
    pub(crate) written: bool,
    /// Where each present column lives (in `col_bufs[c]` if there is one, else in `buf`).
    cols: Cols,
    /// In a small partition, column `c`'s values (from offset 0); empty in a big one.
    col_bufs: ColBufs,
    /// Nominal capacity, the base of the load bound.
    cap: usize,
    len: usize,
    /// When the aging pass last saw `written` set (Unix ms; 0 before it first looked).
    pub(crate) last_write_ms: u64,
}

/// One column's region of its buffer: `slots` little-endian values of `width` bytes (1, 2,
/// 4 or 8) from byte `off`.
#[derive(Debug, Clone, Copy)]
struct Col {
    off: usize,
    width: usize,
    /// All ones in `width` bytes: the overflow marker ([`ColumnSpec::marker`]), kept here so
    /// the in-place increment does not work it out per op.
    marker: u64,
    /// The first value the in-place increment must not write: the marker, or one past
    /// the column's max when that is lower (a 64-bit column stops at 2^63 - 1).
    limit: u64,
}

impl Col {
    /// Column `spec` from byte `off` of its buffer.
    fn new(off: usize, spec: &ColumnSpec) -> Col {
        Col {
            off,
            width: spec.bits as usize / 8,
            marker: spec.marker(),
            limit: spec.marker().min(spec.max_value().saturating_add(1)),
        }
    }

    /// Value at slot `i`, read without a bounds check: the in-place increment's read.
    ///
    /// # Safety
    /// `buf` must be the column's buffer and `i` below the partition's `slots`.
    #[inline(always)]
    unsafe fn get_unchecked(self, buf: *const u8, i: usize) -> u64 {
        // SAFETY: by the caller's promise `off + (i + 1) * width` is within the buffer.
        unsafe {
            let p = buf.add(self.off + i * self.width);
            match self.width {
                1 => *p as u64,
                2 => (p as *const u16).read_unaligned() as u64,
                4 => (p as *const u32).read_unaligned() as u64,
                _ => (p as *const u64).read_unaligned(),
            }
        }
    }

    /// Sets slot `i` to `x` without a bounds check; see [`Col::get_unchecked`].
    ///
    /// # Safety
    /// As for [`Col::get_unchecked`].
    #[inline(always)]
    unsafe fn set_unchecked(self, buf: *mut u8, i: usize, x: u64) {
        // SAFETY: by the caller's promise `off + (i + 1) * width` is within the buffer.
        unsafe {
            let p = buf.add(self.off + i * self.width);
            match self.width {
                1 => *p = x as u8,
                2 => (p as *mut u16).write_unaligned(x as u16),
                4 => (p as *mut u32).write_unaligned(x as u32),
                _ => (p as *mut u64).write_unaligned(x),
            }
        }
    }

    #[inline(always)]
    fn get(self, buf: &[u8], i: usize) -> u64 {
        let start = self.off + i * self.width;
        match self.width {
            1 => buf[start] as u64,
            2 => u16::from_le_bytes([buf[start], buf[start + 1]]) as u64,
            4 => u32::from_le_bytes(buf[start..start + 4].try_into().expect("4 bytes")) as u64,
            _ => u64::from_le_bytes(buf[start..start + 8].try_into().expect("8 bytes")),
        }
    }

    #[inline(always)]
    fn set(self, buf: &mut [u8], i: usize, x: u64) {
        let start = self.off + i * self.width;
        match self.width {
            1 => buf[start] = x as u8,
            2 => buf[start..start + 2].copy_from_slice(&(x as u16).to_le_bytes()),
            4 => buf[start..start + 4].copy_from_slice(&(x as u32).to_le_bytes()),
            _ => buf[start..start + 8].copy_from_slice(&x.to_le_bytes()),
        }
    }

    /// Sets slots `from..to` to `x`.
    fn fill(self, buf: &mut [u8], from: usize, to: usize, x: u64) {
        let region = &mut buf[self.off + from * self.width..self.off + to * self.width];
        if x == 0 {
            region.fill(0);
        } else {
            let b = x.to_le_bytes();
            for v in region.chunks_exact_mut(self.width) {
                v.copy_from_slice(&b[..self.width]);
            }
        }
    }

    /// Moves slots `from..to` one place up (to `from+1..=to`): the column half of
    /// inserting a row into a sorted run.
    #[inline]
    fn shift_up(self, buf: &mut [u8], from: usize, to: usize) {
        buf.copy_within(
            self.off + from * self.width..self.off + to * self.width,
            self.off + (from + 1) * self.width,
        );
    }

    /// Moves slots `from+1..to` one place down (to `from..to-1`): the column half of
    /// removing a row from a sorted run.
    #[inline]
    fn shift_down(self, buf: &mut [u8], from: usize, to: usize) {
        buf.copy_within(
            self.off + (from + 1) * self.width..self.off + to * self.width,
            self.off + from * self.width,
        );
    }
}

/// A key's look-up done in steps over a group of ops ([`Partition::aim`],
/// [`Partition::locate`], [`Partition::incr_found`]), so that each step reads only cache
/// lines an earlier step asked for and the memory waits of many ops overlap.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Look {
    /// Stored form of the key.
    stored_key: u64,
    /// The home slot at first; the row's slot once found; where the scan stopped if it
    /// ran past the lines asked for.
    at: usize,
    /// [`Partition::moves`] when `at` was worked out.
    moves: u64,
    step: Step,
}

/// How far a [`Look`] has come.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    /// Home worked out, its key lines asked for.
    Aimed,
    /// The scan reached the end of the lines asked for; the next two are asked for.
    Partial,
    /// The row is at slot `at`; its column line is asked for.
    Found,
    /// The key is not stored.
    Absent,
}

/// Buffers for `slots` keys of `key_bytes` bytes and the given columns, keys all empty and every
/// column at its default: one buffer if that is at least [`crate::hugemem::MAP_MIN`]
/// bytes, else one for the keys and one per column.
fn alloc(key_bytes: usize, slots: usize, specs: &[ColumnSpec]) -> (HugeBuf, ColBufs, Cols) {
    let keys = slots * key_bytes + 8;
    let total = joined_bytes(
        key_bytes,
        slots,
        specs.iter().map(|s| s.bits as usize / 8).sum(),
    );
    let joined = total >= crate::hugemem::MAP_MIN;
    let mut off = keys;
    let cols: Cols = specs
        .iter()
        .map(|s| {
            let col = Col::new(if joined { off } else { 0 }, s);
            off += slots * col.width;
            col
        })
        .collect();
    let mut buf = HugeBuf::zeroed(if joined { total } else { keys });
    buf[..keys].fill(0xFF);
    let mut col_bufs: ColBufs = if joined {
        SmallVec::new()
    } else {
        cols.iter()
            .map(|c| HugeBuf::zeroed(slots * c.width))
            .collect()
    };
    for (c, (col, s)) in cols.iter().zip(specs).enumerate() {
        col.fill(colbuf_mut(&mut buf, &mut col_bufs, c), 0, slots, s.default);
    }
    (buf, col_bufs, cols)
}

/// Bytes of one buffer holding `slots` keys of `key_bytes` bytes (with the scan's 8 bytes of
/// padding) and columns of `col_bytes` bytes per slot in all: a table is big, one buffer
/// with a lower load bound, iff this is at least [`crate::hugemem::MAP_MIN`].
fn joined_bytes(key_bytes: usize, slots: usize, col_bytes: usize) -> usize {
    slots * (key_bytes + col_bytes) + 8
}

/// The buffer column `c` lives in.
#[inline(always)]
fn colbuf<'a>(buf: &'a HugeBuf, col_bufs: &'a [HugeBuf], c: usize) -> &'a [u8] {
    match col_bufs.get(c) {
        Some(b) => b,
        None => buf,
    }
}

/// The buffer column `c` lives in, to write.
#[inline(always)]
fn colbuf_mut<'a>(buf: &'a mut HugeBuf, col_bufs: &'a mut [HugeBuf], c: usize) -> &'a mut [u8] {
    match col_bufs.get_mut(c) {
        Some(b) => b,
        None => buf,
    }
}

impl Partition {
    /// An empty table with keys of `key_bytes` bytes (1..=8) and room for about `rows` rows.
    pub(crate) fn new(
        key_bytes: usize,
        rows: usize,
        specs: &[ColumnSpec],
        ncols: usize,
    ) -> Partition {
        let cap = Self::cap_for(rows);
        let bits = 8 * key_bytes as u32;
        let empty = if key_bytes >= 8 {
            u64::MAX
        } else {
            (1u64 << bits) - 1
        };
        let slots = cap;
        let (buf, col_bufs, cols) = alloc(key_bytes, slots, &specs[..ncols]);
        let flip = mix(empty, bits, empty) ^ empty;
        Partition {
            key_bytes,
            bits,
            empty,
            flip,
            buf,
            col_bufs,
            cap,
            homes: Self::homes_for(cap),
            slots,
            len: 0,
            moves: next_moves(),
            cols,
            written: true,
            last_write_ms: 0,
        }
    }

    /// Home range for a capacity: a run at 96% load ends about a dozen slots past its
    /// start, so the top 16 slots (fewer in tiny tables) are left for spilling runs.
    fn homes_for(cap: usize) -> usize {
        cap - (cap / 8).clamp(1, 16)
    }

    fn cap_for(rows: usize) -> usize {
        (rows * 100 / 80 + 1).max(4)
    }

    /// Slots added when the last run reaches the end of the array.
    fn tail_for(slots: usize) -> usize {
        8 + slots / 4096
    }

    /// The key that marks an empty slot: ids whose low part equals it must live elsewhere.
    #[cfg(test)]
    pub(crate) fn empty_key(&self) -> u64 {
        self.empty
    }

    /// Rows stored.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Bytes held by this table (keys and inline columns).
    pub(crate) fn bytes(&self) -> usize {
        self.buf.bytes() + self.col_bufs.iter().map(HugeBuf::bytes).sum::<usize>()
    }

    /// Stored key at slot `i` (`empty` if the slot is free).
    #[inline(always)]
    fn key_at(&self, i: usize) -> u64 {
        let p = i * self.key_bytes;
        let mut b = [0u8; 8];
        b.copy_from_slice(&self.buf[p..p + 8]);
        u64::from_le_bytes(b) & self.empty
    }

    /// Stored key at slot `i` without a bounds check: the look-up scans' read.
    ///
    /// # Safety
    /// `i` must be below `self.slots` (the key array has 8 bytes of padding after the
    /// last slot, so an 8-byte read of any slot stays inside the buffer).
    #[inline(always)]
    unsafe fn key_unchecked(&self, i: usize) -> u64 {
        debug_assert!(i < self.slots);
        // SAFETY: `i * key_bytes + 8 <= slots * key_bytes + 8 <= buf.len()` by the caller's promise.
        unsafe {
            (self.buf.as_ptr().add(i * self.key_bytes) as *const u64).read_unaligned() & self.empty
        }
    }

    #[inline]
    fn set_key(&mut self, i: usize, stored_key: u64) {
        let p = i * self.key_bytes;
        let key_bytes = self.key_bytes;
        self.buf[p..p + key_bytes].copy_from_slice(&stored_key.to_le_bytes()[..key_bytes]);
    }

    #[inline(always)]
    fn stored(&self, key: u64) -> u64 {
        let stored_key = mix(key & self.empty, self.bits, self.empty) ^ self.flip;
        debug_assert_eq!(
            stored_key,
            scramble(key & self.empty, self.bits, self.empty)
        );
        stored_key
    }

    /// Home slot of stored key `stored_key`: its top bits scaled onto `0..homes`, so homes grow
    /// with the stored key (the ordering the table relies on).
    #[inline(always)]
    fn home(&self, stored_key: u64) -> usize {
        let top = stored_key << (64 - self.bits);
        ((top as u128 * self.homes as u128) >> 64) as usize
    }

    /// Slot holding `key`, if present.
    #[inline]
    pub(crate) fn find(&self, key: u64) -> Option<usize> {
        let stored_key = self.stored(key);
        if stored_key == self.empty {
            return None;
        }
        self.find_from(stored_key, self.home(stored_key))
    }

    /// Slot holding stored key `stored_key`, walking up from slot `from` (below `slots`). Any
    /// start finds no wrong row: stored keys are unique and sorted, so meeting `stored_key` is its
    /// row, and a start past it only misses (meets a larger key or the empty sentinel).
    #[inline(always)]
    fn find_from(&self, stored_key: u64, from: usize) -> Option<usize> {
        assert!(from < self.slots);
        let mut i = from;
        loop {
            // SAFETY: `i < slots`: it starts below and stops at the last slot at the
            // latest, which is always empty (the largest stored value, so `slot_key >= stored_key`).
            let slot_key = unsafe { self.key_unchecked(i) };
            if slot_key >= stored_key {
                return (slot_key == stored_key).then_some(i);
            }
            i += 1;
        }
    }

    /// First step of a look-up of key `key` for an increment of column `c`: works out its
    /// stored form and home slot, and asks the CPU for the two key lines from the home on
    /// and for the column line the row most likely sits in (runs end about a dozen slots
    /// past their home, so home + 8). Meant to run for a whole group of ops in a row: this
    /// is where the page walks of a random op happen, and in a short loop many of them
    /// overlap (in a loop that does the whole op, at most one or two do).
    #[inline(always)]
    pub(crate) fn aim(&self, key: u64, c: usize) -> Look {
        let stored_key = self.stored(key);
        let home = self.home(stored_key);
        let p = self.buf.as_ptr().wrapping_add(home * self.key_bytes);
        prefetch(p);
        prefetch(p.wrapping_add(64));
        if let Some(col) = self.cols.get(c) {
            let cb = colbuf(&self.buf, &self.col_bufs, c).as_ptr();
            prefetch(cb.wrapping_add(col.off + (home + 8) * col.width));
        }
        Look {
            stored_key,
            at: home,
            moves: self.moves,
            step: Step::Aimed,
        }
    }

    /// Second step: scans the keys as far as the lines asked for reach. Found: asks for
    /// the exact line of column `c` that holds the row's value. Scan not finished: asks
    /// for the next two key lines. Does nothing if keys moved since the look-up began
    /// (the last step then starts again).
    #[inline(always)]
    pub(crate) fn locate(&self, look: &mut Look, c: usize) {
        if look.moves != self.moves || !matches!(look.step, Step::Aimed | Step::Partial) {
            return;
        }
        if look.stored_key == self.empty {
            look.step = Step::Absent;
            return;
        }
        let key_bytes = self.key_bytes;
        // Read only keys whose 8-byte read stays inside the two lines asked for; the
        // empty last slot stops the scan before the end of the keys in any case.
        let end = ((look.at * key_bytes) & !63) + 128 - 8;
        assert!(look.at < self.slots);
        let mut i = look.at;
        let mut key_offset = i * key_bytes;
        while key_offset <= end {
            // SAFETY: `i < slots`: it starts below, and it stops at the last slot at the
            // latest, which is always empty (the largest stored value).
            let slot_key = unsafe { self.key_unchecked(i) };
            if slot_key >= look.stored_key {
                if slot_key == look.stored_key {
                    look.at = i;
                    look.step = Step::Found;
                    if let Some(col) = self.cols.get(c) {
                        prefetch(
                            colbuf(&self.buf, &self.col_bufs, c)
                                .as_ptr()
                                .wrapping_add(col.off + i * col.width),
                        );
                    }
                } else {
                    look.step = Step::Absent;
                }
                return;
            }
            i += 1;
            key_offset += key_bytes;
        }
        look.at = i;
        look.step = Step::Partial;
        let p = self.buf.as_ptr().wrapping_add(key_offset);
        prefetch(p);
        prefetch(p.wrapping_add(64));
    }

    /// Last step: adds `delta` to column `c` of the row the look-up found, when that is a
    /// plain in-place update: the row and the column's values are there, the value is
    /// inline, and the result stays inline, not negative and away from the default (which
    /// would free the row). Returns the new value, or `None` (nothing changed) to leave
    /// the op to the general path. Inline means below `2^bits - 1`, which is within the
    /// column's max. If keys moved since the look-up began, it starts again from the
    /// home; a slot found earlier is used only while [`Partition::moves`] is unchanged.
    #[inline(always)]
    pub(crate) fn incr_found(
        &mut self,
        look: Look,
        c: usize,
        delta: i64,
        spec: &ColumnSpec,
    ) -> Option<u64> {
        let col = *self.cols.get(c)?;
        if look.stored_key == self.empty {
            return None;
        }
        let i = if look.moves == self.moves {
            match look.step {
                Step::Found => look.at,
                Step::Absent => return None,
                // `at` is at or below the row's slot: any such start finds it.
                Step::Aimed | Step::Partial => self.find_from(look.stored_key, look.at)?,
            }
        } else {
            self.find_from(look.stored_key, self.home(look.stored_key))?
        };
        // SAFETY: `i` is an occupied slot (a scan found the key there), so below `slots`,
        // and the buffer is column `c`'s.
        let raw = unsafe { col.get_unchecked(colbuf(&self.buf, &self.col_bufs, c).as_ptr(), i) };
        if raw == col.marker {
            return None;
        }
        let next = raw.checked_add_signed(delta)?;
        if next >= col.limit || next == spec.default {
            return None;
        }
        // SAFETY: as for the read.
        unsafe {
            col.set_unchecked(
                colbuf_mut(&mut self.buf, &mut self.col_bufs, c).as_mut_ptr(),
                i,
                next,
            )
        };
        self.written = true;
        Some(next)
    }

    /// Adds `delta` to column `c` of the row keyed `key` in place, all steps at once; see
    /// [`Partition::incr_found`].
    #[inline(always)]
    pub(crate) fn incr_inline(
        &mut self,
        key: u64,
        c: usize,
        delta: i64,
        spec: &ColumnSpec,
    ) -> Option<u64> {
        let stored_key = self.stored(key);
        let look = Look {
            stored_key,
            at: self.home(stored_key),
            moves: self.moves,
            step: Step::Aimed,
        };
        self.incr_found(look, c, delta, spec)
    }

    /// Raw inline value of column `c` at slot `i` (the default if the array is not there).
    #[inline]
    pub(crate) fn raw(&self, i: usize, c: usize, spec: &ColumnSpec) -> u64 {
        match self.cols.get(c) {
            Some(col) => col.get(colbuf(&self.buf, &self.col_bufs, c), i),
            None => spec.default,
        }
    }

    /// Stores a raw inline value, creating lazily-added column arrays up to `c`.
    #[inline]
    pub(crate) fn set_raw(&mut self, i: usize, c: usize, x: u64, specs: &[ColumnSpec]) {
        if c >= self.cols.len() {
            self.ensure_cols(c + 1, specs);
        }
        self.written = true;
        self.cols[c].set(colbuf_mut(&mut self.buf, &mut self.col_bufs, c), i, x);
    }

    fn ensure_cols(&mut self, n: usize, specs: &[ColumnSpec]) {
        if self.cols.len() < n {
            self.relayout(self.slots, n, specs);
        }
    }

    /// Moves everything into a new buffer of `slots` slots and `ncols` columns (neither
    /// fewer than now); new slots are empty, new columns at their defaults.
    fn relayout(&mut self, slots: usize, ncols: usize, specs: &[ColumnSpec]) {
        let (mut buf, mut col_bufs, cols) = alloc(self.key_bytes, slots, &specs[..ncols]);
        let n = self.slots * self.key_bytes;
        buf[..n].copy_from_slice(&self.buf[..n]);
        for (c, (new, old)) in cols.iter().zip(&self.cols).enumerate() {
            let n = self.slots * old.width;
            colbuf_mut(&mut buf, &mut col_bufs, c)[new.off..new.off + n]
                .copy_from_slice(&colbuf(&self.buf, &self.col_bufs, c)[old.off..old.off + n]);
        }
        self.buf = buf;
        self.col_bufs = col_bufs;
        self.cols = cols;
        self.slots = slots;
        self.moves = next_moves();
    }

    /// Whether every column of the row at `i` is at its default.
    pub(crate) fn all_default(&self, i: usize, specs: &[ColumnSpec]) -> bool {
        self.cols
            .iter()
            .zip(specs)
            .enumerate()
            .all(|(c, (col, s))| col.get(colbuf(&self.buf, &self.col_bufs, c), i) == s.default)
    }

    /// Inserts a new key (not present, not `empty`) with every column at its default;
    /// grows first if needed. Returns its slot.
    pub(crate) fn insert(&mut self, key: u64, specs: &[ColumnSpec]) -> usize {
        if self.full() {
            self.grow(self.next_cap(), specs);
        }
        let n = self.cols.len();
        let mut stack = [0u64; 8];
        let mut heap = Vec::new();
        let carry: &mut [u64] = if n <= 8 {
            &mut stack[..n]
        } else {
            heap.resize(n, 0);
            &mut heap
        };
        for (c, s) in carry.iter_mut().zip(specs) {
            *c = s.default;
        }
        let stored_key = self.stored(key);
        self.place(stored_key, carry, specs)
    }

    /// Puts stored key `stored_key` with its raw column values at its place in the sorted order,
    /// moving the rest of its run up one slot; room is guaranteed by the load bound.
    fn place(&mut self, stored_key: u64, carry: &[u64], specs: &[ColumnSpec]) -> usize {
        debug_assert!(stored_key != self.empty);
        let mut p = self.home(stored_key);
        while self.key_at(p) < stored_key {
            p += 1;
        }
        debug_assert!(self.key_at(p) != stored_key, "place: key already present");
        let mut e = p;
        while self.key_at(e) != self.empty {
            e += 1;
        }
        if e + 1 >= self.slots {
            self.extend_tail(specs);
        }
        let key_bytes = self.key_bytes;
        self.buf
            .copy_within(p * key_bytes..e * key_bytes, (p + 1) * key_bytes);
        self.set_key(p, stored_key);
        for (c, col) in self.cols.iter().enumerate() {
            let b = colbuf_mut(&mut self.buf, &mut self.col_bufs, c);
            col.shift_up(b, p, e);
            col.set(b, p, carry[c]);
        }
        self.len += 1;
        self.moves = next_moves();
        p
    }

    /// Adds spare slots at the end so the last run can move up and a sentinel stays.
    fn extend_tail(&mut self, specs: &[ColumnSpec]) {
        let slots = self.slots + Self::tail_for(self.slots);
        self.relayout(slots, self.cols.len(), specs);
    }

    /// Removes the row at slot `i`, shifting the following run back by one.
    pub(crate) fn remove(&mut self, hole: usize) {
        self.written = true;
        let mut end = hole + 1;
        loop {
            let nk = self.key_at(end);
            if nk == self.empty || self.home(nk) == end {
                break;
            }
            end += 1;
        }
        let key_bytes = self.key_bytes;
        self.buf
            .copy_within((hole + 1) * key_bytes..end * key_bytes, hole * key_bytes);
        let last = end - 1;
        let empty = self.empty;
        self.set_key(last, empty);
        for (c, col) in self.cols.iter().enumerate() {
            col.shift_down(colbuf_mut(&mut self.buf, &mut self.col_bufs, c), hole, end);
        }
        self.len -= 1;
        self.moves = next_moves();
    }

    /// Capacity after one growth step: x1.06, so the table stays 90-96% full (81-86% if
    /// big; a small partition that grows into a big one goes to ~83% at once).
    fn next_cap(&self) -> usize {
        let cap = self.cap + self.cap / 16 + 1;
        let col_bytes = self.cols.iter().map(|c| c.width).sum();
        if self.max_load_pct() == MAX_LOAD_PCT
            && joined_bytes(self.key_bytes, cap, col_bytes) >= crate::hugemem::MAP_MIN
        {
            // Growing into a big partition: straight to 3 points under its bound (~83%).
            cap.max((self.len + 1) * 100 / (BIG_MAX_LOAD_PCT - 3))
        } else {
            cap
        }
    }

    /// Rebuilds an under-filled table at 3 points below its highest load (93% for a small
    /// one). Used on partitions that have stopped growing (an Instagram-layout prefix
    /// whose half second has passed).
    pub(crate) fn compact(&mut self, specs: &[ColumnSpec]) {
        let max = self.max_load_pct();
        if self.len * 100 < self.cap * (max - 8) {
            self.grow(self.len * 100 / (max - 3) + 1, specs);
        }
    }

    /// Highest load before growing: [`BIG_MAX_LOAD_PCT`] for a partition whose arrays
    /// share one buffer of at least [`crate::hugemem::MAP_MIN`] bytes, else
    /// [`MAX_LOAD_PCT`].
    #[inline]
    fn max_load_pct(&self) -> usize {
        if self.buf.len() >= crate::hugemem::MAP_MIN {
            BIG_MAX_LOAD_PCT
        } else {
            MAX_LOAD_PCT
        }
    }

    /// Rebuilds the table with `new_cap` home slots. The old table is sorted, so each
    /// key goes to `max(its new home, the previous key's slot + 1)`: one pass, no probing.
    fn grow(&mut self, new_cap: usize, specs: &[ColumnSpec]) {
        let cap = new_cap.max(4);
        let mut next = Partition {
            cap,
            homes: Self::homes_for(cap),
            buf: HugeBuf::zeroed(0),
            col_bufs: SmallVec::new(),
            slots: 0,
            len: 0,
            moves: next_moves(),
            cols: SmallVec::new(),
            ..*self
        };
        // First pass: where the last key lands, so the arrays are allocated once.
        let mut last: Option<usize> = None;
        for i in 0..self.slots {
            let stored_key = self.key_at(i);
            if stored_key != self.empty {
                let home = next.home(stored_key);
                last = Some(last.map_or(home, |l| home.max(l + 1)));
            }
        }
        let needed = last.map_or(0, |l| l + 2);
        next.slots = needed.max(next.cap);
        (next.buf, next.col_bufs, next.cols) =
            alloc(next.key_bytes, next.slots, &specs[..self.cols.len()]);
        let mut prev: Option<usize> = None;
        for i in 0..self.slots {
            let stored_key = self.key_at(i);
            if stored_key != self.empty {
                let home = next.home(stored_key);
                let at = prev.map_or(home, |l| home.max(l + 1));
                next.set_key(at, stored_key);
                for (c, (new, old)) in next.cols.iter().zip(&self.cols).enumerate() {
                    let x = old.get(colbuf(&self.buf, &self.col_bufs, c), i);
                    new.set(colbuf_mut(&mut next.buf, &mut next.col_bufs, c), at, x);
                }
                prev = Some(at);
                next.len += 1;
            }
        }
        *self = next;
    }

    /// Whether the next insert would rebuild the table.
    #[inline]
    pub(crate) fn full(&self) -> bool {
        (self.len + 1) * 100 > self.cap * self.max_load_pct()
    }

    /// Every occupied slot with its key.
    pub(crate) fn slots(&self) -> impl Iterator<Item = (usize, u64)> + '_ {
        (0..self.slots).filter_map(move |i| {
            let stored_key = self.key_at(i);
            (stored_key != self.empty).then(|| (i, unscramble(stored_key, self.bits, self.empty)))
        })
    }

    /// Inserts a key with given raw values (for moving rows between tables).
    pub(crate) fn insert_raw(&mut self, key: u64, raw: &[u64], specs: &[ColumnSpec]) {
        self.ensure_cols(raw.len(), specs);
        if self.full() {
            self.grow(self.next_cap(), specs);
        }
        let carry: Vec<u64> = (0..self.cols.len())
            .map(|c| raw.get(c).copied().unwrap_or(specs[c].default))
            .collect();
        let stored_key = self.stored(key);
        self.place(stored_key, &carry, specs);
    }

    /// Raw values of every present column array at slot `i`.
    pub(crate) fn raw_row(&self, i: usize) -> Vec<u64> {
        self.cols
            .iter()
            .enumerate()
            .map(|(c, col)| col.get(colbuf(&self.buf, &self.col_bufs, c), i))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hash::mix64;
    use crate::scramble::unscramble;

    fn specs() -> Vec<ColumnSpec> {
        vec![ColumnSpec {
            name: "a".into(),
            bits: 16,
            max_bits: 32,
            default: 0,
        }]
    }

    #[test]
    fn moves_stamps_are_unique_across_threads_and_blocks() {
        // Each thread uses up more than one block of stamps.
        let per_thread = (1usize << 20) + 1000;
        let handles: Vec<_> = (0..3)
            .map(|_| {
                std::thread::spawn(move || {
                    (0..per_thread).map(|_| next_moves()).collect::<Vec<u64>>()
                })
            })
            .collect();
        let mut all: Vec<u64> = handles
            .into_iter()
            .flat_map(|h| h.join().expect("thread"))
            .collect();
        all.sort_unstable();
        let n = all.len();
        all.dedup();
        assert_eq!(all.len(), n, "a stamp was handed out twice");
        assert!(all[0] > 0);
    }

    fn check_sorted(p: &Partition) {
        let mut prev = None;
        let mut n = 0;
        for i in 0..p.slots {
            let stored_key = p.key_at(i);
            if stored_key == p.empty {
                continue;
            }
            n += 1;
            assert!(p.home(stored_key) <= i, "key before its home");
            for j in p.home(stored_key)..i {
                assert_ne!(p.key_at(j), p.empty, "gap between home and key");
            }
            if let Some(q) = prev {
                assert!(stored_key > q, "not sorted at {i}");
            }
            prev = Some(stored_key);
        }
        assert_eq!(n, p.len());
        assert_eq!(p.key_at(p.slots - 1), p.empty, "sentinel");
    }

    #[test]
    fn insert_find_remove_many() {
        let s = specs();
        for key_bytes in [4usize, 7] {
            let mut p = Partition::new(key_bytes, 0, &s, 1);
            let n = 5000u64;
            for k in 0..n {
                let key = mix64(k) & p.empty_key() & !1;
                if p.find(key).is_none() {
                    let i = p.insert(key, &s);
                    p.set_raw(i, 0, k % 100 + 1, &s);
                }
            }
            check_sorted(&p);
            assert_eq!(
                p.col_bufs.len(),
                1,
                "a small partition keeps its column in a buffer of its own"
            );
            for k in 0..n {
                let key = mix64(k) & p.empty_key() & !1;
                let i = p.find(key).expect("present");
                assert_eq!(p.raw(i, 0, &s[0]), k % 100 + 1);
            }
            for k in (0..n).step_by(2) {
                let key = mix64(k) & p.empty_key() & !1;
                let i = p.find(key).expect("present");
                p.remove(i);
            }
            check_sorted(&p);
            for k in 0..n {
                let key = mix64(k) & p.empty_key() & !1;
                assert_eq!(p.find(key).is_some(), k % 2 == 1, "k={k}");
                if let Some(i) = p.find(key) {
                    assert_eq!(p.raw(i, 0, &s[0]), k % 100 + 1);
                }
            }
            assert_eq!(p.len(), (n / 2) as usize);
            p.compact(&s);
            check_sorted(&p);
            let mut keys: Vec<u64> = p.slots().map(|(_, k)| k).collect();
            keys.sort_unstable();
            let mut want: Vec<u64> = (1..n)
                .step_by(2)
                .map(|k| mix64(k) & p.empty_key() & !1)
                .collect();
            want.sort_unstable();
            assert_eq!(keys, want);
        }
    }

    #[test]
    fn big_partitions_on_mapped_buffers_keep_rows_through_growth_new_columns_and_removal() {
        // 250,000 rows of 7-byte keys pass the mapping threshold several growth steps
        // before the end; a 32-bit default column added late (relayout) and removals
        // must keep every value.
        let s = vec![
            ColumnSpec {
                name: "a".into(),
                bits: 16,
                max_bits: 32,
                default: 0,
            },
            ColumnSpec {
                name: "b".into(),
                bits: 32,
                max_bits: 64,
                default: 7,
            },
        ];
        let mut p = Partition::new(7, 0, &s, 0);
        let n = 250_000u64;
        let key = |k: u64| mix64(k) & p_mask(7) & !1;
        for k in 0..n {
            let i = p.insert(key(k), &s);
            p.set_raw(i, 0, k % 1000 + 1, &s);
        }
        assert!(p.buf.is_mapped() || !cfg!(target_os = "linux"));
        assert!(
            p.col_bufs.is_empty(),
            "a big partition keeps its columns in its one buffer"
        );
        for k in (0..n).step_by(5) {
            let i = p.find(key(k)).expect("present");
            assert_eq!(
                p.raw(i, 1, &s[1]),
                7,
                "column not there yet reads as its default"
            );
            p.set_raw(i, 1, k, &s);
        }
        for k in (0..n).step_by(3) {
            let i = p.find(key(k)).expect("present");
            p.remove(i);
        }
        check_sorted(&p);
        for k in 0..n {
            let got = p
                .find(key(k))
                .map(|i| (p.raw(i, 0, &s[0]), p.raw(i, 1, &s[1])));
            let want = (k % 3 != 0).then(|| (k % 1000 + 1, if k % 5 == 0 { k } else { 7 }));
            assert_eq!(got, want, "k={k}");
        }
        let copy = p.clone();
        p.compact(&s);
        check_sorted(&p);
        assert_eq!(copy.len(), p.len());
        for (i, k) in copy.slots() {
            let j = p.find(k).expect("kept by compact");
            assert_eq!(copy.raw_row(i), p.raw_row(j));
        }
    }

    #[test]
    fn big_partitions_grow_at_a_lower_load_than_small_ones() {
        // Small partitions fill to 96% before they grow; once the one buffer reaches the
        // mapping size, to 86% (fewer lines per look-up where look-ups miss the cache).
        let s = specs();
        let mut p = Partition::new(7, 0, &s, 1);
        let key = |k: u64| mix64(k) & p_mask(7) & !1;
        let (mut small_peak, mut big_peak) = (0.0f64, 0.0f64);
        for k in 0..200_000u64 {
            p.insert(key(k), &s);
            let load = p.len() as f64 / p.cap as f64;
            if p.buf.len() >= crate::hugemem::MAP_MIN {
                assert!(load <= 0.86, "big partition at {load:.3} load");
                big_peak = big_peak.max(load);
            } else {
                assert!(load <= 0.96, "small partition at {load:.3} load");
                small_peak = small_peak.max(load);
            }
        }
        assert!(
            small_peak > 0.95,
            "small partitions fill to 96%: peak {small_peak:.3}"
        );
        assert!(
            big_peak > 0.85,
            "big partitions fill to 86%: peak {big_peak:.3}"
        );
        check_sorted(&p);
        let copy = p.clone();
        for k in (0..200_000u64).step_by(4) {
            let i = p.find(key(k)).expect("present");
            p.remove(i);
        }
        p.compact(&s);
        let load = p.len() as f64 / p.cap as f64;
        assert!(
            (0.82..=0.84).contains(&load),
            "compacted big partition at {load:.3}"
        );
        for k in 0..200_000u64 {
            assert_eq!(
                p.find(key(k)).is_some(),
                k % 4 != 0 && copy.find(key(k)).is_some(),
                "k={k}"
            );
        }
    }

    fn p_mask(key_bytes: u32) -> u64 {
        (1u64 << (8 * key_bytes)) - 1
    }

    #[test]
    fn sequential_keys_spill_into_the_tail_and_back() {
        // Keys whose stored forms crowd the top of the range force the last run into
        // the tail, which must grow and keep its sentinel.
        let s = specs();
        let mut p = Partition::new(4, 0, &s, 1);
        let mask = p.empty_key();
        let mut inserted = Vec::new();
        let mut stored_key = mask - 1;
        while inserted.len() < 3000 {
            let k = unscramble(stored_key, 32, mask);
            let i = p.insert(k, &s);
            p.set_raw(i, 0, 1, &s);
            inserted.push(k);
            stored_key -= 1;
        }
        check_sorted(&p);
        for &k in &inserted {
            assert!(p.find(k).is_some());
        }
        for &k in inserted.iter().step_by(3) {
            let i = p.find(k).expect("present");
            p.remove(i);
        }
        check_sorted(&p);
    }
}

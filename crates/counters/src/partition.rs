//! One open-addressing table: keys once, in a packed byte array, and each column in its
//! own array at its own width.
//!
//! Probing is linear with Robin Hood displacement (a lookup stops as soon as it meets a
//! resident closer to its home than the probe is), deletion shifts the following run
//! back (no tombstones), and capacity is any size, not a power of two, so growth steps
//! can be small (x1.06) and the table stays between ~90% and 96% full.
//!
//! Invariants:
//! - a slot is empty iff its key equals `empty` (all ones in `kw` bytes); callers never
//!   insert that key (the stripe routes such ids elsewhere);
//! - `cols.len()` may be shorter than the counter's schema: missing columns read as the
//!   column default (this is how `add_column` avoids touching existing rows);
//! - every occupied slot holds a row with at least one column away from its default.

use crate::column::{ColumnArray, ColumnSpec};
use crate::hash::{mix64, reduce};

/// Prefetch hint; a no-op where the architecture has none wired up.
#[inline(always)]
fn prefetch(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch never faults and reads nothing into the program; any address is allowed.
    unsafe {
        core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(p as *const i8)
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// Highest load before growing, in 1/100.
const MAX_LOAD_PCT: usize = 96;

/// An open-addressing table of rows keyed by the low `8 * kw` bits of an id.
#[derive(Debug, Clone)]
pub(crate) struct Partition {
    kw: usize,
    empty: u64,
    keys: Vec<u8>,
    cap: usize,
    len: usize,
    cols: Vec<ColumnArray>,
}

impl Partition {
    /// An empty table with keys of `kw` bytes (1..=8) and room for about `rows` rows.
    pub(crate) fn new(kw: usize, rows: usize, specs: &[ColumnSpec], ncols: usize) -> Partition {
        let cap = Self::cap_for(rows);
        let empty = if kw >= 8 { u64::MAX } else { (1u64 << (8 * kw)) - 1 };
        let mut keys = vec![0xFFu8; cap * kw + 8];
        keys.shrink_to_fit();
        let cols = specs[..ncols].iter().map(|s| ColumnArray::new(s.bits, cap, s.default)).collect();
        Partition { kw, empty, keys, cap, len: 0, cols }
    }

    fn cap_for(rows: usize) -> usize {
        (rows * 100 / 80 + 1).max(4)
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

    /// Heap bytes held by this table (keys and inline columns).
    pub(crate) fn bytes(&self) -> usize {
        self.keys.capacity() + self.cols.iter().map(ColumnArray::bytes).sum::<usize>()
    }

    #[inline]
    fn key_at(&self, i: usize) -> u64 {
        let p = i * self.kw;
        let mut b = [0u8; 8];
        b.copy_from_slice(&self.keys[p..p + 8]);
        u64::from_le_bytes(b) & self.empty
    }

    #[inline]
    fn set_key(&mut self, i: usize, k: u64) {
        let p = i * self.kw;
        let kw = self.kw;
        self.keys[p..p + kw].copy_from_slice(&k.to_le_bytes()[..kw]);
    }

    #[inline]
    fn home(&self, k: u64) -> usize {
        reduce(mix64(k), self.cap)
    }

    #[inline]
    fn dist(&self, k: u64, i: usize) -> usize {
        let h = self.home(k);
        if i >= h {
            i - h
        } else {
            i + self.cap - h
        }
    }

    /// Slot holding `k`, if present.
    #[inline]
    pub(crate) fn find(&self, k: u64) -> Option<usize> {
        let mut i = self.home(k);
        let mut d = 0;
        loop {
            let sk = self.key_at(i);
            if sk == k {
                return Some(i);
            }
            if sk == self.empty || self.dist(sk, i) < d {
                return None;
            }
            i += 1;
            if i == self.cap {
                i = 0;
            }
            d += 1;
        }
    }

    /// Asks the CPU to start loading the cache lines a look-up of `k` in column `c` will
    /// touch, so a batch of look-ups overlaps its memory misses.
    #[inline]
    pub(crate) fn prefetch(&self, k: u64, c: usize) {
        let h = self.home(k);
        prefetch(self.keys.as_ptr().wrapping_add(h * self.kw));
        if let Some(col) = self.cols.get(c) {
            prefetch(col.addr(h));
        }
    }

    /// Raw inline value of column `c` at slot `i` (the default if the array is not there).
    #[inline]
    pub(crate) fn raw(&self, i: usize, c: usize, spec: &ColumnSpec) -> u64 {
        match self.cols.get(c) {
            Some(a) => a.get(i),
            None => spec.default,
        }
    }

    /// Stores a raw inline value, creating lazily-added column arrays up to `c`.
    pub(crate) fn set_raw(&mut self, i: usize, c: usize, x: u64, specs: &[ColumnSpec]) {
        self.ensure_cols(c + 1, specs);
        self.cols[c].set(i, x);
    }

    fn ensure_cols(&mut self, n: usize, specs: &[ColumnSpec]) {
        while self.cols.len() < n {
            let s = &specs[self.cols.len()];
            self.cols.push(ColumnArray::new(s.bits, self.cap, s.default));
        }
    }

    /// Whether every column of the row at `i` is at its default.
    pub(crate) fn all_default(&self, i: usize, specs: &[ColumnSpec]) -> bool {
        self.cols.iter().zip(specs).all(|(a, s)| a.get(i) == s.default)
    }

    /// Inserts a new key (not present, not `empty`) with every column at its default;
    /// grows first if needed. Returns its slot.
    pub(crate) fn insert(&mut self, k: u64, specs: &[ColumnSpec]) -> usize {
        if (self.len + 1) * 100 > self.cap * MAX_LOAD_PCT {
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
        self.place(k, carry)
    }

    /// Robin Hood placement of `k` with its raw column values; room is guaranteed.
    fn place(&mut self, mut k: u64, carry: &mut [u64]) -> usize {
        let mut i = self.home(k);
        let mut d = 0;
        let mut placed = None;
        loop {
            let sk = self.key_at(i);
            if sk == self.empty {
                self.set_key(i, k);
                for (c, v) in carry.iter().enumerate() {
                    self.cols[c].set(i, *v);
                }
                self.len += 1;
                return placed.unwrap_or(i);
            }
            let sd = self.dist(sk, i);
            if sd < d {
                self.set_key(i, k);
                k = sk;
                for (c, v) in carry.iter_mut().enumerate() {
                    let old = self.cols[c].get(i);
                    self.cols[c].set(i, *v);
                    *v = old;
                }
                placed.get_or_insert(i);
                d = sd;
            }
            i += 1;
            if i == self.cap {
                i = 0;
            }
            d += 1;
        }
    }

    /// Removes the row at slot `i`, shifting the following run back by one.
    pub(crate) fn remove(&mut self, mut hole: usize) {
        loop {
            let next = if hole + 1 == self.cap { 0 } else { hole + 1 };
            let nk = self.key_at(next);
            if nk == self.empty || self.dist(nk, next) == 0 {
                self.set_key(hole, self.empty);
                break;
            }
            self.set_key(hole, nk);
            for col in &mut self.cols {
                let v = col.get(next);
                col.set(hole, v);
            }
            hole = next;
        }
        self.len -= 1;
    }

    /// Capacity after one growth step: x1.06, so the table stays 90-96% full.
    fn next_cap(&self) -> usize {
        self.cap + self.cap / 16 + 1
    }

    /// Rebuilds an under-filled table at about 93% load. Used on partitions that have
    /// stopped growing (an Instagram-layout prefix whose half second has passed).
    pub(crate) fn compact(&mut self, specs: &[ColumnSpec]) {
        if self.len * 100 < self.cap * 88 {
            self.grow(self.len * 100 / 93 + 1, specs);
        }
    }

    /// Rebuilds the table with `new_cap` slots.
    fn grow(&mut self, new_cap: usize, specs: &[ColumnSpec]) {
        let mut next = Partition::new(self.kw, 0, specs, self.cols.len());
        next.cap = new_cap;
        next.keys = vec![0xFFu8; new_cap * self.kw + 8];
        next.cols = self.cols.iter().zip(specs).map(|(_, s)| ColumnArray::new(s.bits, new_cap, s.default)).collect();
        let mut carry = vec![0u64; self.cols.len()];
        for i in 0..self.cap {
            let k = self.key_at(i);
            if k != self.empty {
                for (c, v) in carry.iter_mut().enumerate() {
                    *v = self.cols[c].get(i);
                }
                next.place(k, &mut carry);
            }
        }
        *self = next;
    }

    /// Whether the next insert would rebuild the table.
    pub(crate) fn full(&self) -> bool {
        (self.len + 1) * 100 > self.cap * MAX_LOAD_PCT
    }

    /// Every occupied slot with its key.
    pub(crate) fn slots(&self) -> impl Iterator<Item = (usize, u64)> + '_ {
        (0..self.cap).filter_map(move |i| {
            let k = self.key_at(i);
            (k != self.empty).then_some((i, k))
        })
    }

    /// Inserts a key with given raw values (for moving rows between tables).
    pub(crate) fn insert_raw(&mut self, k: u64, raw: &[u64], specs: &[ColumnSpec]) {
        self.ensure_cols(raw.len(), specs);
        if self.full() {
            self.grow(self.next_cap(), specs);
        }
        let mut carry: Vec<u64> = (0..self.cols.len())
            .map(|c| raw.get(c).copied().unwrap_or(specs[c].default))
            .collect();
        self.place(k, &mut carry);
    }

    /// Raw values of every present column array at slot `i`.
    pub(crate) fn raw_row(&self, i: usize) -> Vec<u64> {
        self.cols.iter().map(|a| a.get(i)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn specs() -> Vec<ColumnSpec> {
        vec![ColumnSpec { name: "a".into(), bits: 16, max_bits: 32, default: 0 }]
    }

    #[test]
    fn insert_find_remove_many() {
        let s = specs();
        for kw in [4usize, 7] {
            let mut p = Partition::new(kw, 0, &s, 1);
            let n = 5000u64;
            for k in 0..n {
                let key = mix64(k) & p.empty_key() & !1;
                if p.find(key).is_none() {
                    let i = p.insert(key, &s);
                    p.set_raw(i, 0, k % 100 + 1, &s);
                }
            }
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
            for k in 0..n {
                let key = mix64(k) & p.empty_key() & !1;
                assert_eq!(p.find(key).is_some(), k % 2 == 1, "k={k}");
            }
            assert_eq!(p.len(), (n / 2) as usize);
        }
    }
}

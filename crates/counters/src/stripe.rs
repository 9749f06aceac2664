//! One lock stripe of a counter: the compact tables for numeric ids, the overflow map,
//! the string-keyed rows ([`NameTable`]) and the transaction-id window of the keys hashed to it.
//!
//! Numeric ids are placed by these rules (the only ones; every lookup follows them):
//! 1. if a *dense* partition exists for the id's high 32 bits and the low 32 bits are
//!    not all ones, the row is there, keyed by its low 32 bits (4-byte keys: prefix
//!    compression for ids that cluster, such as Instagram-layout ids);
//! 2. otherwise, if the low 56 bits are not all ones, it is in the *wide* partition of
//!    its top byte, keyed by its low 56 bits (7-byte keys);
//! 3. otherwise (256 possible ids) it is in the `odd` map.
//!
//! A wide partition that has to grow first looks for high-32 groups of at least
//! [`PROMOTE_MIN`] rows and moves each into a new dense partition, so clustered ids end
//! up with 4-byte keys without anyone declaring the id layout.
//!
//! A value that does not fit its column's inline width is stored inline as the
//! all-ones marker and in full in `overflow`, keyed by (id, column).
//!
//! Why one file of this size: the placement rules above are the only ones and every
//! look-up, insert, promotion and delete follows them; they are kept in one file so no
//! path can drift from the others.

use crate::cold::{ColdPart, Frozen};
use crate::cold_names::{FrozenNames, NameRun};
use crate::column::ColumnSpec;
use crate::hash::FastMap;
use crate::key::Key;
use crate::names::{CopiedRow, NameTable};
use crate::partition::{Look, Partition};
use crate::txwindow::TxWindow;

/// Rows with one high-32 prefix needed before they get their own dense partition.
pub(crate) const PROMOTE_MIN: usize = 128;

const LOW56: u64 = (1u64 << 56) - 1;

/// Where an id lives, per the rules in the module doc.
#[derive(Debug, Clone, Copy)]
enum Loc {
    /// In the dense partition of the id's high 32 bits, keyed by its low 32 bits.
    Dense { high: u32, low: u64 },
    /// In the wide partition of the id's top byte, keyed by its low 56 bits.
    Wide { top: u8, low: u64 },
    /// In the `odd` map, keyed by the whole id.
    Odd,
}

/// A numeric id's row being looked up in steps over a group of ops ([`Stripe::aim`],
/// [`Stripe::locate`], [`Stripe::incr_found`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Located {
    loc: Loc,
    look: Look,
}

/// All rows of a counter whose key hashes to this stripe.
#[derive(Debug, Clone, Default)]
pub(crate) struct Stripe {
    dense: FastMap<u32, Partition>,
    wide: Vec<Option<Box<Partition>>>,
    odd: FastMap<u64, Vec<u64>>,
    overflow: FastMap<(u64, u16), u64>,
    names: NameTable,
    /// Applied transaction ids of this stripe's keys.
    pub(crate) txids: TxWindow,
    /// Dense partitions on disk (the cold tier), by high 32 bits. A high is either here
    /// or in `dense`, never both: a write to a cold row brings its partition back first
    /// ([`Stripe::thaw_for`]).
    cold: FastMap<u32, ColdPart>,
    /// String-keyed rows on disk ([`crate::cold_names`]), oldest run first. A key is in
    /// `names` or live in at most one run, never both.
    name_runs: Vec<NameRun>,
}

/// A dense partition the aging pass looked at: what eviction chooses from.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Aged {
    /// Its high 32 bits.
    pub high: u32,
    /// When it was last seen written (Unix ms).
    pub last_write_ms: u64,
    /// Its heap bytes.
    pub bytes: usize,
}

impl Stripe {
    #[inline(always)]
    fn loc(&self, id: u64) -> Loc {
        let lo = id & 0xFFFF_FFFF;
        if lo != 0xFFFF_FFFF
            && !self.dense.is_empty()
            && self.dense.contains_key(&((id >> 32) as u32))
        {
            return Loc::Dense {
                high: (id >> 32) as u32,
                low: lo,
            };
        }
        let low = id & LOW56;
        if low != LOW56 {
            Loc::Wide {
                top: (id >> 56) as u8,
                low,
            }
        } else {
            Loc::Odd
        }
    }

    #[inline(always)]
    fn part(&self, loc: &Loc) -> Option<&Partition> {
        match *loc {
            Loc::Dense { high, .. } => self.dense.get(&high),
            Loc::Wide { top, .. } => self.wide.get(top as usize).and_then(|p| p.as_deref()),
            Loc::Odd => None,
        }
    }

    #[inline(always)]
    fn part_mut(&mut self, loc: &Loc) -> Option<&mut Partition> {
        match *loc {
            Loc::Dense { high, .. } => self.dense.get_mut(&high),
            Loc::Wide { top, .. } => self
                .wide
                .get_mut(top as usize)
                .and_then(|p| p.as_deref_mut()),
            Loc::Odd => None,
        }
    }

    fn low(loc: &Loc) -> u64 {
        match *loc {
            Loc::Dense { low, .. } | Loc::Wide { low, .. } => low,
            Loc::Odd => 0,
        }
    }

    /// Value of column `c` of a numeric row.
    #[inline]
    pub(crate) fn get_id(&self, id: u64, c: usize, specs: &[ColumnSpec]) -> u64 {
        let spec = &specs[c];
        let loc = self.loc(id);
        if let Loc::Odd = loc {
            return self
                .odd
                .get(&id)
                .and_then(|r| r.get(c).copied())
                .unwrap_or(spec.default);
        }
        let Some(p) = self.part(&loc) else {
            return spec.default;
        };
        let Some(i) = p.find(Self::low(&loc)) else {
            return spec.default;
        };
        let raw = p.raw(i, c, spec);
        if raw == spec.marker() {
            self.overflow.get(&(id, c as u16)).copied().unwrap_or(raw)
        } else {
            raw
        }
    }

    /// First step of a look-up of a numeric id's row for column `c` (see
    /// [`Partition::aim`]); `None` if the id has no partition in RAM (yet), or its
    /// partition is cold. A high in `dense` is never cold, so the cold map is asked only
    /// for the others: at a billion rows under a 2 GiB cap it holds ~900,000 partitions,
    /// and asking it first cost every increment of a hot row one more cache miss.
    #[inline(always)]
    pub(crate) fn aim(&self, id: u64, c: usize) -> Option<Located> {
        let loc = self.loc(id);
        if !matches!(loc, Loc::Dense { .. }) && self.cold_of(Key::Id(id)).is_some() {
            return None;
        }
        self.part(&loc).map(|p| Located {
            loc,
            look: p.aim(Self::low(&loc), c),
        })
    }

    /// Second step (see [`Partition::locate`]).
    #[inline(always)]
    pub(crate) fn locate(&self, located: &mut Located, c: usize) {
        if let Some(p) = self.part(&located.loc) {
            p.locate(&mut located.look, c);
        }
    }

    /// Last step: the in-place increment (see [`Partition::incr_found`]). The look-up
    /// may be stale (rows inserted, a partition grown or a group promoted since): then
    /// it starts again or misses, leaving the op to the general path.
    #[inline(always)]
    pub(crate) fn incr_found(
        &mut self,
        located: Located,
        c: usize,
        delta: i64,
        spec: &ColumnSpec,
    ) -> Option<u64> {
        self.part_mut(&located.loc)?
            .incr_found(located.look, c, delta, spec)
    }

    /// The common case of an increment of a numeric row, with one look-up and no
    /// `Result`: see [`Partition::incr_found`]. `None` (nothing changed) leaves the op to
    /// [`Stripe::incr_id`].
    #[inline(always)]
    pub(crate) fn incr_inline(
        &mut self,
        id: u64,
        c: usize,
        delta: i64,
        spec: &ColumnSpec,
    ) -> Option<u64> {
        let loc = self.loc(id);
        let low = Self::low(&loc);
        self.part_mut(&loc)?.incr_inline(low, c, delta, spec)
    }

    /// Adds `delta` to column `c` of a numeric row with one look-up when the row exists
    /// and stays inline (the common case); anything else takes the general path.
    #[inline]
    pub(crate) fn incr_id(
        &mut self,
        id: u64,
        c: usize,
        delta: i64,
        specs: &[ColumnSpec],
    ) -> crate::Result<u64> {
        let spec = &specs[c];
        if let Some(next) = self.incr_inline(id, c, delta, spec) {
            return Ok(next);
        }
        self.incr_id_general(id, c, delta, specs)
    }

    /// [`Stripe::incr_id`] past its in-place attempt: read, check, write back, which
    /// inserts, frees or overflows the row as the new value needs. For callers whose own
    /// in-place attempt has just missed, so the row is not looked up in place twice.
    pub(crate) fn incr_id_general(
        &mut self,
        id: u64,
        c: usize,
        delta: i64,
        specs: &[ColumnSpec],
    ) -> crate::Result<u64> {
        let spec = &specs[c];
        let cur = self.get_id(id, c, specs);
        let next = crate::column::apply_delta(cur, delta, spec)?;
        self.set_id(id, c, next, specs);
        Ok(next)
    }

    /// The cold partition holding id `id`'s row, if its partition is on disk (ids whose
    /// low 32 bits are all ones never are: they live in the wide partition or `odd`).
    #[inline]
    fn cold_of(&self, key: Key<'_>) -> Option<&ColdPart> {
        match key {
            Key::Id(id) if !self.cold.is_empty() && id & 0xFFFF_FFFF != 0xFFFF_FFFF => {
                self.cold.get(&((id >> 32) as u32))
            }
            _ => None,
        }
    }

    /// The live cold row of string key `n`, as (run, its position there, values): for
    /// callers that found it absent from the table (a key is in one place or the other).
    fn cold_name(&self, n: &str) -> crate::Result<Option<(usize, crate::cold_names::Found)>> {
        for (i, run) in self.name_runs.iter().enumerate().rev() {
            if let Some(found) = run.find(n.as_bytes())? {
                return Ok(Some((i, found)));
            }
        }
        Ok(None)
    }

    /// Column `c` of any row, hot or cold (a cold read may fail: a damaged block).
    pub(crate) fn read(&self, key: Key<'_>, c: usize, specs: &[ColumnSpec]) -> crate::Result<u64> {
        if let Key::Name(n) = key {
            let spot = self.names.spot(n);
            if !spot.found() {
                if let Some((_, found)) = self.cold_name(n)? {
                    return Ok(found.values.get(c).copied().unwrap_or(specs[c].default));
                }
            }
            return Ok(self.names.value_at(&spot, c, specs));
        }
        match self.cold_of(key) {
            None => Ok(self.get(key, c, specs)),
            Some(part) => {
                let row = part.row(key_id(key))?;
                Ok(row
                    .and_then(|r| r.get(c).copied())
                    .unwrap_or(specs[c].default))
            }
        }
    }

    /// Every column of any row, hot or cold, in schema order.
    pub(crate) fn read_row(&self, key: Key<'_>, specs: &[ColumnSpec]) -> crate::Result<Vec<u64>> {
        if let Key::Name(n) = key {
            let spot = self.names.spot(n);
            if !spot.found() {
                if let Some((_, found)) = self.cold_name(n)? {
                    return Ok(specs
                        .iter()
                        .enumerate()
                        .map(|(c, s)| found.values.get(c).copied().unwrap_or(s.default))
                        .collect());
                }
            }
            return Ok(self.names.row_at(&spot, specs));
        }
        match self.cold_of(key) {
            None => Ok(self.get_row(key, specs)),
            Some(part) => {
                let row = part.row(key_id(key))?.unwrap_or_default();
                Ok(specs
                    .iter()
                    .enumerate()
                    .map(|(c, s)| row.get(c).copied().unwrap_or(s.default))
                    .collect())
            }
        }
    }

    /// Whether any row, hot or cold, is stored.
    pub(crate) fn read_exists(&self, key: Key<'_>) -> crate::Result<bool> {
        if let Key::Name(n) = key {
            return Ok(self.names.contains(n) || self.cold_name(n)?.is_some());
        }
        match self.cold_of(key) {
            None => Ok(self.exists(key)),
            Some(part) => Ok(part.row(key_id(key))?.is_some()),
        }
    }

    /// Brings the partition of `key` back into RAM if it is cold, so the write that
    /// follows finds the row where the placement rules say. Called before the write's
    /// log record is appended: a damaged block refuses the write and logs nothing.
    pub(crate) fn thaw_for(&mut self, key: Key<'_>, specs: &[ColumnSpec]) -> crate::Result<()> {
        if let Key::Name(n) = key {
            if self.name_runs.is_empty() || self.names.contains(n) {
                return Ok(());
            }
            if let Some((i, found)) = self.cold_name(n)? {
                self.names.insert_thawed(n, &found.values, specs);
                if self.name_runs[i].kill(found.pos) {
                    self.name_runs.remove(i);
                }
            }
            return Ok(());
        }
        // A high in `dense` is never cold: the common case asks the (large) cold map nothing.
        if self.cold.is_empty() || matches!(self.loc(key_id(key)), Loc::Dense { .. }) {
            return Ok(());
        }
        let Some(part) = self.cold_of(key) else {
            return Ok(());
        };
        let high = (key_id(key) >> 32) as u32;
        let blocks = part.all_blocks()?;
        let rows = part.rows() as usize;
        self.cold.remove(&high);
        self.dense.insert(high, Partition::new(4, rows, specs, 0));
        for b in blocks {
            for (r, &id) in b.ids.iter().enumerate() {
                for (c, col) in b.columns.iter().enumerate().take(specs.len()) {
                    if col[r] != specs[c].default {
                        self.set_id(id, c, col[r], specs);
                    }
                }
            }
        }
        Ok(())
    }

    /// The aging pass over the dense partitions: a partition written since the last pass
    /// is stamped `now_ms`. Returns every non-empty dense partition with its stamp.
    pub(crate) fn age(&mut self, now_ms: u64) -> Vec<Aged> {
        let part = std::mem::size_of::<Partition>();
        self.dense
            .iter_mut()
            .filter(|(_, p)| p.len() > 0)
            .map(|(high, p)| {
                if p.written || p.last_write_ms == 0 {
                    p.written = false;
                    p.last_write_ms = now_ms;
                }
                Aged {
                    high: *high,
                    last_write_ms: p.last_write_ms,
                    bytes: p.bytes() + part + 8,
                }
            })
            .collect()
    }

    /// Copies dense partition `high` for eviction (ids ascending, every column with
    /// overflow values whole) and clears its written flag, so [`Stripe::freeze`] can tell
    /// whether a write came in between.
    pub(crate) fn copy_for_eviction(&mut self, high: u32, specs: &[ColumnSpec]) -> Option<Frozen> {
        let p = self.dense.get_mut(&high)?;
        if p.len() == 0 {
            return None;
        }
        p.written = false;
        let p = &self.dense[&high];
        let mut ids: Vec<u64> = p
            .slots()
            .map(|(_, low)| ((high as u64) << 32) | low)
            .collect();
        ids.sort_unstable();
        let columns = (0..specs.len())
            .map(|c| ids.iter().map(|&id| self.get_id(id, c, specs)).collect())
            .collect();
        Some(Frozen { high, ids, columns })
    }

    /// Swaps dense partition `high` for its cold copy, unless it was written since
    /// [`Stripe::copy_for_eviction`] (then it stays, and the copy on disk is garbage).
    /// Returns whether it went cold.
    pub(crate) fn freeze(&mut self, high: u32, part: ColdPart, specs: &[ColumnSpec]) -> bool {
        let Some(p) = self.dense.get(&high) else {
            return false;
        };
        if p.written || p.len() as u64 != part.rows() {
            return false;
        }
        if !self.overflow.is_empty() {
            for (slot, low) in p.slots() {
                for (c, s) in specs.iter().enumerate() {
                    if p.raw(slot, c, s) == s.marker() {
                        self.overflow
                            .remove(&((((high as u64) << 32) | low), c as u16));
                    }
                }
            }
        }
        self.dense.remove(&high);
        self.cold.insert(high, part);
        true
    }

    /// The cold partitions, by high 32 bits (snapshots, stats, garbage collection).
    pub(crate) fn cold_parts(&self) -> impl Iterator<Item = (u32, &ColdPart)> {
        self.cold.iter().map(|(h, p)| (*h, p))
    }

    /// Puts a cold partition a snapshot named back in place (recovery).
    pub(crate) fn insert_cold(&mut self, high: u32, part: ColdPart) {
        self.dense.remove(&high);
        self.cold.insert(high, part);
    }

    /// Rows held on disk.
    pub(crate) fn cold_rows(&self) -> usize {
        self.cold.values().map(|p| p.rows() as usize).sum::<usize>()
            + self
                .name_runs
                .iter()
                .map(|r| r.live_rows() as usize)
                .sum::<usize>()
    }

    /// One step of copying the string-keyed rows not written since the clock's last
    /// tick (all of them when `all`) for eviction, in table order (the caller sorts them
    /// once the lock is let go: [`FrozenNames::sorted`]); see
    /// [`NameTable::copy_for_eviction`].
    pub(crate) fn copy_names_for_eviction(
        &mut self,
        specs: &[ColumnSpec],
        all: bool,
        from: usize,
        max: usize,
    ) -> (Vec<CopiedRow>, Option<usize>) {
        self.names.copy_for_eviction(specs, all, from, max)
    }

    /// Puts a new run of evicted rows in place with every row dead (the rows are still
    /// in RAM); [`Stripe::freeze_names`] then swaps them in, a bounded number per call.
    pub(crate) fn attach_name_run(&mut self, run: NameRun) {
        self.name_runs.push(run.into_all_dead());
    }

    /// Swaps rows `rows` of `frozen` into run `id` (attached by
    /// [`Stripe::attach_name_run`]): each row whose values in RAM are still its copy's
    /// is dropped from the table and made live in the run; one written since (or
    /// deleted) stays as it is, dead in the run. Returns the rows that went cold. Does
    /// nothing if the run is no longer here.
    pub(crate) fn freeze_names(
        &mut self,
        frozen: &FrozenNames,
        rows: std::ops::Range<usize>,
        id: (u64, u32),
        specs: &[ColumnSpec],
    ) -> u64 {
        let Some(ri) = self.name_runs.iter().position(|r| r.id() == id) else {
            return 0;
        };
        let mut cold = 0;
        let mut vals = Vec::with_capacity(frozen.columns.len());
        for r in rows {
            vals.clear();
            vals.extend(frozen.columns.iter().map(|c| c[r]));
            if self.names.drop_if_same(frozen.key(r), &vals, specs) {
                // Rows fill each block but the last, so row r is at position r.
                self.name_runs[ri].revive(r as u32);
                cold += 1;
            }
        }
        cold
    }

    /// Ends an eviction's swap into run `id`: drops the run if no row went into it, and
    /// gives back the arena and index memory the rows that left no longer need
    /// ([`NameTable::settle`]).
    pub(crate) fn end_freeze(&mut self, id: (u64, u32), specs: &[ColumnSpec]) {
        self.name_runs.retain(|r| r.id() != id || r.live_rows() > 0);
        self.names.settle(specs);
    }

    /// Copies of the runs of string-keyed rows to merge now ([`crate::name_merge`]).
    pub(crate) fn runs_to_merge(&self) -> Vec<NameRun> {
        crate::name_merge::pick(&self.name_runs)
    }

    /// Replaces `sources` (copies from [`Stripe::runs_to_merge`]) with `merged`, their
    /// merge, once the rows that died in the sources since the copies (brought back by a
    /// write, or deleted) are marked dead in it too. On an error (a source block that
    /// cannot be read) nothing changes and the merged file is left to garbage collection.
    pub(crate) fn swap_merged(
        &mut self,
        sources: &[NameRun],
        mut merged: Option<NameRun>,
    ) -> crate::Result<()> {
        let mut all_dead = false;
        for src in sources {
            let now = self.name_runs.iter().find(|r| r.same(src));
            for pos in NameRun::died_since(src, now) {
                let (Some(key), Some(m)) = (src.key_at(pos)?, merged.as_mut()) else {
                    continue;
                };
                if let Some(found) = m.find(&key)? {
                    all_dead = m.kill(found.pos);
                }
            }
        }
        self.name_runs
            .retain(|r| !sources.iter().any(|s| s.same(r)));
        if let Some(m) = merged.filter(|_| !all_dead) {
            self.name_runs.push(m);
        }
        Ok(())
    }

    /// The runs of string-keyed rows on disk (snapshots, stats, garbage collection).
    pub(crate) fn name_runs(&self) -> &[NameRun] {
        &self.name_runs
    }

    /// Puts a run a snapshot named back in place (recovery).
    pub(crate) fn insert_name_run(&mut self, run: NameRun) {
        self.name_runs.push(run);
    }

    /// The string keys of the live cold rows (for `SCAN`).
    pub(crate) fn cold_names(&self) -> crate::Result<Vec<String>> {
        let mut out = Vec::new();
        for run in &self.name_runs {
            run.for_each_live(|k, _| out.push(String::from_utf8_lossy(k).into_owned()))?;
        }
        Ok(out)
    }

    /// Bytes of this stripe's blocks on disk.
    pub(crate) fn cold_bytes_disk(&self) -> u64 {
        self.cold.values().map(ColdPart::bytes_disk).sum::<u64>()
            + self.name_runs.iter().map(NameRun::bytes_disk).sum::<u64>()
    }

    /// The ids of the cold rows, read from their blocks (for `SCAN`).
    pub(crate) fn cold_ids(&self) -> crate::Result<Vec<u64>> {
        let mut out = Vec::new();
        for p in self.cold.values() {
            for b in p.all_blocks()? {
                out.extend_from_slice(&b.ids);
            }
        }
        Ok(out)
    }

    /// Value of column `c` of any row.
    pub(crate) fn get(&self, key: Key<'_>, c: usize, specs: &[ColumnSpec]) -> u64 {
        match key {
            Key::Id(id) => self.get_id(id, c, specs),
            Key::Name(n) => self.names.get(n, c, specs),
        }
    }

    /// Every column of a row, in schema order.
    pub(crate) fn get_row(&self, key: Key<'_>, specs: &[ColumnSpec]) -> Vec<u64> {
        if let Key::Name(n) = key {
            return self.names.row(n, specs);
        }
        (0..specs.len()).map(|c| self.get(key, c, specs)).collect()
    }

    /// Whether a row is stored (some column away from its default).
    pub(crate) fn exists(&self, key: Key<'_>) -> bool {
        match key {
            Key::Name(n) => self.names.contains(n),
            Key::Id(id) => {
                let loc = self.loc(id);
                match loc {
                    Loc::Odd => self.odd.contains_key(&id),
                    _ => self
                        .part(&loc)
                        .and_then(|p| p.find(Self::low(&loc)))
                        .is_some(),
                }
            }
        }
    }

    /// Sets column `c` of a row to `value` (already checked against the column's max).
    /// Inserts the row if needed and frees it when it returns to all defaults.
    pub(crate) fn set(&mut self, key: Key<'_>, c: usize, value: u64, specs: &[ColumnSpec]) {
        match key {
            Key::Id(id) => self.set_id(id, c, value, specs),
            Key::Name(n) => self.names.set(n, c, value, specs),
        }
    }

    /// Reads column `c` of a row, lets `f` turn it into the new value (or refuse, which
    /// changes nothing), and writes that: a string-keyed row is looked up once for both.
    /// `f` may do anything but touch this stripe (the engine appends its log record there).
    #[inline]
    pub(crate) fn update(
        &mut self,
        key: Key<'_>,
        c: usize,
        specs: &[ColumnSpec],
        f: impl FnOnce(u64) -> crate::Result<u64>,
    ) -> crate::Result<u64> {
        if let Key::Name(n) = key {
            let spot = self.names.spot(n);
            let next = f(self.names.value_at(&spot, c, specs))?;
            self.names.set_at(n, spot, c, next, specs);
            return Ok(next);
        }
        let next = f(self.get(key, c, specs))?;
        self.set(key, c, next, specs);
        Ok(next)
    }

    /// [`NameTable::prefetch`] of this stripe's string-keyed rows.
    #[inline]
    pub(crate) fn prefetch_name(&self, hash: u64, record: bool) {
        self.names.prefetch(hash, record);
    }

    /// [`Stripe::update`] for several columns of one row: for each `(column, item)`, in
    /// the order given, `f(column, item, current)` gives the column's new value (or
    /// refuses it, which leaves that column as it was), and `out` gets one answer per
    /// item. A string-keyed row is looked up once and written once (moved at most once
    /// when it gains columns), instead of once per column. `f` may do anything but
    /// touch this stripe.
    pub(crate) fn update_row<T>(
        &mut self,
        key: Key<'_>,
        items: impl Iterator<Item = (usize, T)>,
        specs: &[ColumnSpec],
        mut f: impl FnMut(usize, T, u64) -> crate::Result<u64>,
        out: &mut Vec<crate::Result<u64>>,
    ) {
        let Key::Name(n) = key else {
            for (c, item) in items {
                out.push(self.update(key, c, specs, |cur| f(c, item, cur)));
            }
            return;
        };
        let spot = self.names.spot(n);
        // Only the columns written are read and written, however wide the row.
        let mut changes: smallvec::SmallVec<[(usize, u64); 8]> = smallvec::SmallVec::new();
        for (c, item) in items {
            let cur = match changes.iter().rev().find(|(changed, _)| *changed == c) {
                Some(&(_, v)) => v,
                None => self.names.value_at(&spot, c, specs),
            };
            let result = f(c, item, cur);
            if let Ok(v) = result {
                if v != cur {
                    changes.push((c, v));
                }
            }
            out.push(result);
        }
        if !changes.is_empty() {
            self.names.put_columns_at(n, spot, &changes, specs);
        }
    }

    fn set_vec<R>(row: &mut R, c: usize, value: u64, specs: &[ColumnSpec])
    where
        R: std::ops::DerefMut<Target = [u64]> + Extend<u64>,
    {
        let len = row.len();
        if len <= c {
            row.extend(specs[len..=c].iter().map(|s| s.default));
        }
        row[c] = value;
    }

    fn set_id(&mut self, id: u64, c: usize, value: u64, specs: &[ColumnSpec]) {
        let spec = &specs[c];
        let mut loc = self.loc(id);
        if let Loc::Odd = loc {
            if let Some(row) = self.odd.get_mut(&id) {
                Self::set_vec(row, c, value, specs);
                if row.iter().zip(specs).all(|(v, s)| *v == s.default) {
                    self.odd.remove(&id);
                }
            } else if value != spec.default {
                let mut row = Vec::new();
                Self::set_vec(&mut row, c, value, specs);
                self.odd.insert(id, row);
            }
            return;
        }
        let low = Self::low(&loc);
        let slot = self.part(&loc).and_then(|p| p.find(low));
        let slot = match slot {
            Some(i) => i,
            None => {
                if value == spec.default {
                    return;
                }
                if let Loc::Wide { top, .. } = loc {
                    if self.wide_needs_growth(top) && self.promote(top, specs) {
                        loc = self.loc(id);
                    }
                }
                self.ensure_part(&loc, specs);
                let Some(p) = self.part_mut(&loc) else { return };
                p.insert(Self::low(&loc), specs)
            }
        };
        let marker = spec.marker();
        let Some(p) = self.part_mut(&loc) else { return };
        let old_raw = p.raw(slot, c, spec);
        if value >= marker {
            p.set_raw(slot, c, marker, specs);
            self.overflow.insert((id, c as u16), value);
            return;
        }
        p.set_raw(slot, c, value, specs);
        // Only a write of the default can free the row; checking the other columns
        // otherwise would read a line of each (a cache miss apiece on a big table).
        let freed = value == spec.default && p.all_default(slot, specs);
        if freed {
            p.remove(slot);
        }
        if old_raw == marker {
            self.overflow.remove(&(id, c as u16));
        }
    }

    fn ensure_part(&mut self, loc: &Loc, specs: &[ColumnSpec]) {
        if let Loc::Wide { top, .. } = *loc {
            if self.wide.is_empty() {
                self.wide.resize_with(256, || None);
            }
            if self.wide[top as usize].is_none() {
                self.wide[top as usize] = Some(Box::new(Partition::new(7, 0, specs, 0)));
            }
        }
    }

    fn wide_needs_growth(&self, top: u8) -> bool {
        self.wide
            .get(top as usize)
            .and_then(|p| p.as_deref())
            .is_some_and(|p| p.full() && p.len() >= PROMOTE_MIN)
    }

    /// Moves every high-32 group of at least [`PROMOTE_MIN`] rows of wide partition
    /// `top` into its own dense partition. Returns whether anything moved.
    fn promote(&mut self, top: u8, specs: &[ColumnSpec]) -> bool {
        let Some(Some(wide)) = self.wide.get(top as usize) else {
            return false;
        };
        let mut prefixes: Vec<u32> = wide
            .slots()
            .map(|(_, k)| ((top as u32) << 24) | (k >> 32) as u32)
            .collect();
        prefixes.sort_unstable();
        let mut groups: FastMap<u32, usize> = FastMap::default();
        let mut i = 0;
        while i < prefixes.len() {
            let mut j = i;
            while j < prefixes.len() && prefixes[j] == prefixes[i] {
                j += 1;
            }
            if j - i >= PROMOTE_MIN {
                groups.insert(prefixes[i], j - i);
            }
            i = j;
        }
        if groups.is_empty() {
            return false;
        }
        let remaining = wide.len() - groups.values().sum::<usize>();
        let mut rest = Partition::new(7, remaining, specs, 0);
        let mut dense: FastMap<u32, Partition> = FastMap::default();
        for (slot, k) in wide.slots() {
            let raw = wide.raw_row(slot);
            let high = ((top as u32) << 24) | (k >> 32) as u32;
            let low = k & 0xFFFF_FFFF;
            match groups.get(&high) {
                Some(&n) if low != 0xFFFF_FFFF => {
                    dense
                        .entry(high)
                        .or_insert_with(|| Partition::new(4, n, specs, 0))
                        .insert_raw(low, &raw, specs);
                }
                _ => rest.insert_raw(k, &raw, specs),
            }
        }
        self.wide[top as usize] = Some(Box::new(rest));
        // Prefixes promoted earlier have usually stopped growing (time-ordered ids move
        // on): pack them tight.
        for p in self.dense.values_mut() {
            p.compact(specs);
        }
        self.dense.extend(dense);
        true
    }

    /// Deletes a row; returns whether it was stored.
    pub(crate) fn delete(&mut self, key: Key<'_>, specs: &[ColumnSpec]) -> bool {
        let id = match key {
            Key::Name(n) => return self.names.remove(n, specs),
            Key::Id(id) => id,
        };
        let loc = self.loc(id);
        if let Loc::Odd = loc {
            return self.odd.remove(&id).is_some();
        }
        let low = Self::low(&loc);
        let Some(p) = self.part_mut(&loc) else {
            return false;
        };
        let Some(slot) = p.find(low) else {
            return false;
        };
        let overflowed: Vec<usize> = specs
            .iter()
            .enumerate()
            .filter(|(c, s)| p.raw(slot, *c, s) == s.marker())
            .map(|(c, _)| c)
            .collect();
        p.remove(slot);
        for c in overflowed {
            self.overflow.remove(&(id, c as u16));
        }
        true
    }

    /// Rows stored (numeric and string keys), hot and cold.
    pub(crate) fn rows(&self) -> usize {
        self.hot_rows() + self.cold_rows()
    }

    /// Rows stored in RAM.
    pub(crate) fn hot_rows(&self) -> usize {
        self.dense.values().map(Partition::len).sum::<usize>()
            + self.wide.iter().flatten().map(|p| p.len()).sum::<usize>()
            + self.odd.len()
            + self.names.len()
    }

    /// Rows stored under string keys.
    pub(crate) fn named_rows(&self) -> usize {
        self.names.len()
            + self
                .name_runs
                .iter()
                .map(|r| r.live_rows() as usize)
                .sum::<usize>()
    }

    /// Values held in the overflow map.
    pub(crate) fn overflow_len(&self) -> usize {
        self.overflow.len()
    }

    /// Partitions (dense, wide) in use.
    pub(crate) fn partitions(&self) -> (usize, usize) {
        (self.dense.len(), self.wide.iter().flatten().count())
    }

    /// Estimated heap bytes: exact for the tables, estimated for the side maps.
    pub(crate) fn bytes(&self) -> usize {
        let part = std::mem::size_of::<Partition>();
        self.dense
            .values()
            .map(|p| p.bytes() + part + 8)
            .sum::<usize>()
            + self
                .wide
                .iter()
                .flatten()
                .map(|p| p.bytes() + part)
                .sum::<usize>()
            + self.wide.capacity() * 8
            + self.odd.values().map(|r| 48 + r.len() * 8).sum::<usize>()
            + self.overflow.capacity() * 24
            + self.names.bytes()
            + self.txids.bytes()
            + self.cold.values().map(|p| p.bytes_ram() + 8).sum::<usize>()
            + self.name_runs.iter().map(NameRun::bytes_ram).sum::<usize>()
    }

    /// Drops every row; the transaction ids stay, so a retried idempotent increment
    /// from before the clear is still recognised.
    pub(crate) fn clear(&mut self) {
        let txids = std::mem::take(&mut self.txids);
        *self = Stripe {
            txids,
            ..Stripe::default()
        };
    }

    /// Calls `f` with every hot row's key and its full values (for snapshots; the cold
    /// rows are named by [`Stripe::cold_parts`]).
    pub(crate) fn for_each_row(&self, specs: &[ColumnSpec], mut f: impl FnMut(Key<'_>, &[u64])) {
        let mut row = Vec::with_capacity(specs.len());
        let emit = |id: u64, row: &mut Vec<u64>, f: &mut dyn FnMut(Key<'_>, &[u64])| {
            row.clear();
            row.extend((0..specs.len()).map(|c| self.get_id(id, c, specs)));
            f(Key::Id(id), row);
        };
        for (high, p) in &self.dense {
            for (_, low) in p.slots() {
                emit(((*high as u64) << 32) | low, &mut row, &mut f);
            }
        }
        for (top, p) in self.wide.iter().enumerate() {
            if let Some(p) = p {
                for (_, low) in p.slots() {
                    emit(((top as u64) << 56) | low, &mut row, &mut f);
                }
            }
        }
        for id in self.odd.keys() {
            emit(*id, &mut row, &mut f);
        }
        self.names
            .for_each(specs, |name, row| f(Key::Name(name), row));
    }
}

/// The id of a numeric key (callers checked it is one).
fn key_id(key: Key<'_>) -> u64 {
    match key {
        Key::Id(id) => id,
        Key::Name(_) => 0,
    }
}

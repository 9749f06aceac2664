//! Which label owns each of a link's slots, and the labels' names: a slot's owner is
//! stored as the label's hash ([`label_hash`]) in the link's `link_totals` row, and
//! [`Labels`] turns hashes back into names and keeps the owner rows a write reads, so
//! that a link clicked in two flushes is read from the engine once.

use super::{owner_column, owner_name, KeyText, SlotRow, DIMS, LABELS, OWNER_COLUMNS, TOTALS};
use crate::analytics::classify::Dim;
use crate::analytics::FastHash;
use parking_lot::Mutex;
use shardkit_counters::{Engine, Error, Key, OwnedKey};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// Links whose owner rows are cached before the cache is emptied, to bound its memory.
const MAX_CACHED: usize = 200_000;

/// The number a label is known by in [`TOTALS`]: nonzero, at most the engine's largest value.
pub fn label_hash(dim: Dim, label: &str) -> u64 {
    // XXH3 of `<tag>:<label>`, stored in owner rows: it must never change. Streamed in
    // two parts (the same digest as one buffer) so no buffer is built.
    let mut hasher = xxhash_rust::xxh3::Xxh3Default::new();
    hasher.update(&[dim.tag() as u8, b':']);
    hasher.update(label.as_bytes());
    (hasher.digest() & shardkit_counters::MAX_VALUE).max(1)
}

/// Labels by hash and the owner rows read so far.
#[derive(Debug, Default)]
pub struct Labels {
    inner: Mutex<LabelsInner>,
}

#[derive(Debug, Default)]
struct LabelsInner {
    names: HashMap<u64, Arc<str>, FastHash>,
    /// A link's owner row, as a write leaves it.
    owners: HashMap<u64, OwnerRow, FastHash>,
}

/// One link's [`TOTALS`] owner columns up to its last owned slot; the columns past
/// its end are free ([`owner_at`]). Most links own a handful: a slot of each
/// dimension fits inline, 48 bytes and no allocation a link. (Every column, 640
/// bytes a link, made a flush of thousands of new links write and scan that many
/// cold lines: at the server, ~20% of `store::write`'s own time went to scanning a
/// row for its last owned slot; bench/notes/runs.md.)
pub(super) type OwnerRow = smallvec::SmallVec<[u64; DIMS]>;

/// The owner in column `column` of `row` (0: free).
#[inline]
fn owner_at(row: &[u64], column: usize) -> u64 {
    row.get(column).copied().unwrap_or(0)
}

/// Sets the owner in column `column` of `row`, widening it to that column.
pub(super) fn set_owner(row: &mut OwnerRow, column: usize, hash: u64) {
    if row.len() <= column {
        row.resize(column + 1, 0);
    }
    row[column] = hash;
}

/// Owner rows of the links of one write, by link id (the rows side by side, so the
/// map moves small entries). The writer keeps one from write to write
/// ([`write()`](super::write()); up to `KEPT_OWNER_ROWS`, 16,384) so a flush reuses the
/// last one's rows.
#[derive(Default)]
pub struct OwnerRows {
    at: HashMap<u64, usize, FastHash>,
    pub(super) rows: Vec<OwnerRow>,
    /// Links whose stored row could not be read (a damaged cold block): which slots
    /// they hold is unknown, so no write gives them one.
    pub(super) unreadable: HashSet<u64, FastHash>,
    /// Why the first of `unreadable` could not be read.
    pub(super) unreadable_why: Option<Error>,
}

impl std::fmt::Debug for OwnerRows {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OwnerRows")
            .field("rows", &self.rows.len())
            .finish()
    }
}

impl OwnerRows {
    /// Empties the rows, keeping what they allocated.
    fn clear(&mut self) {
        self.at.clear();
        self.rows.clear();
        self.unreadable.clear();
        self.unreadable_why = None;
    }
    /// The row of `id` (all free if it was never read).
    pub(super) fn get(&self, id: u64) -> &[u64] {
        self.at.get(&id).map_or(&[], |&i| &self.rows[i])
    }

    /// The row of `id`, made all free if absent.
    pub(super) fn get_mut(&mut self, id: u64) -> &mut OwnerRow {
        let next = self.rows.len();
        let i = *self.at.entry(id).or_insert(next);
        if i == next {
            self.rows.push(OwnerRow::new());
        }
        &mut self.rows[i]
    }
}

impl Labels {
    /// Every label in [`LABELS`] (none while the counter does not exist yet).
    pub fn load(engine: &Engine) -> Result<Labels, Error> {
        Ok(Labels {
            inner: Mutex::new(LabelsInner {
                names: read_labels(engine)?,
                owners: HashMap::default(),
            }),
        })
    }

    /// Reads the labels again: on a replica the leader adds them.
    pub fn refresh(&self, engine: &Engine) -> Result<(), Error> {
        let names = read_labels(engine)?;
        self.inner.lock().names.extend(names);
        Ok(())
    }

    /// The label known by `hash`.
    pub fn name(&self, hash: u64) -> Option<Arc<str>> {
        self.inner.lock().names.get(&hash).cloned()
    }

    /// The slot owners of link `id` in `dim`, from the cache or the engine.
    pub fn slots(&self, engine: &Engine, id: u64, dim: Dim) -> Result<SlotRow, Error> {
        let mut rows = OwnerRows::default();
        self.owner_rows(engine, [id], &mut rows)?;
        if let Some(e) = rows.unreadable_why {
            return Err(e);
        }
        let row = rows.get(id);
        Ok(std::array::from_fn(|slot| {
            owner_at(row, owner_column(dim, slot))
        }))
    }

    /// The owner rows of `ids` into `rows` (emptied first): cached ones copied, the
    /// others read from the engine in one call (a flush of many new links asks once,
    /// not once per link). A row that cannot be read is put in `rows.unreadable`, not
    /// in `Err`: one damaged block must not stop every link's write (the write was
    /// retried, and refused again, every flush, holding every click in memory).
    pub(super) fn owner_rows(
        &self,
        engine: &Engine,
        ids: impl IntoIterator<Item = u64>,
        rows: &mut OwnerRows,
    ) -> Result<(), Error> {
        // A replica's owners change under it (the leader writes them): no cache there.
        let cached = !engine.is_read_only();
        let ids = ids.into_iter();
        // Sized for every id the caller may name (a filtered list's upper bound), so
        // neither the map nor the rows are moved as they grow.
        let (low, high) = ids.size_hint();
        let expect = high.unwrap_or(low);
        rows.clear();
        rows.at.reserve(expect);
        rows.rows.reserve(expect);
        let mut missing: Vec<u64> = Vec::new();
        {
            let inner = self.inner.lock();
            for id in ids {
                if rows.at.contains_key(&id) {
                    continue;
                }
                match inner.owners.get(&id).filter(|_| cached) {
                    Some(known) => rows.get_mut(id).clone_from(known),
                    None => {
                        rows.get_mut(id);
                        missing.push(id);
                    }
                }
            }
        }
        if missing.is_empty() {
            return Ok(());
        }
        let mut keys = KeyText::with_capacity(missing.len());
        for &id in &missing {
            keys.push_total(id);
        }
        // Only the rows stored are read (a link's first click has none: its row is all
        // free, as `rows` already holds it): a read makes every column of the row, 80,
        // ~2,000 instructions a new link where the look-up alone is a few hundred.
        let asked: Vec<Key<'_>> = keys.iter().map(Key::Name).collect();
        let mut stored: Vec<u64> = Vec::new();
        let mut parsed: Vec<Key<'_>> = Vec::new();
        let exists = engine.exists_many(TOTALS, &asked)?;
        for ((&id, key), exists) in missing.iter().zip(asked).zip(exists) {
            match exists {
                Ok(true) => {
                    stored.push(id);
                    parsed.push(key);
                }
                Ok(false) => {}
                Err(e) => {
                    rows.unreadable.insert(id);
                    rows.unreadable_why.get_or_insert(e);
                }
            }
        }
        if parsed.is_empty() {
            return Ok(());
        }
        let (names, read) = engine.mget_rows(TOTALS, &parsed)?;
        // Columns by name, so a store whose columns were made in another order reads right.
        let place: Vec<Option<usize>> = names
            .iter()
            .map(|n| (0..OWNER_COLUMNS).find(|&i| owner_name(i) == n))
            .collect();
        let mut inner = self.inner.lock();
        if inner.owners.len() + stored.len() > MAX_CACHED {
            inner.owners.clear();
        }
        for (id, values) in stored.iter().zip(read) {
            let row = rows.get_mut(*id);
            for (at, value) in place.iter().zip(values) {
                if let Some(i) = at.filter(|_| value != 0) {
                    set_owner(row, i, value);
                }
            }
            if cached {
                inner.owners.insert(*id, row.clone());
            }
        }
        Ok(())
    }

    /// Forgets the cached owner rows of the links given `new` slots (not all stored:
    /// the next write reads them again from the engine) and learns the slots' labels.
    pub(super) fn forget_owners(&self, new: &[NewSlot]) {
        let mut inner = self.inner.lock();
        for s in new {
            inner.owners.remove(&s.id);
            learn_name(&mut inner.names, s);
        }
    }

    /// Updates the cached owner row of link `id` after a write stored its `new` slots,
    /// and learns their labels. A link not cached is not cached here: its next write
    /// reads its row from the engine once and caches it then ([`Labels::owner_rows`]),
    /// so the cache holds links clicked in two flushes, not every link clicked once
    /// (a uniform draw over 100 M links: a cold insert a first click into a map of up
    /// to `MAX_CACHED` rows, never read again).
    pub(super) fn learn(&self, id: u64, row: &[u64], new: &[NewSlot]) {
        let mut inner = self.inner.lock();
        if let Some(cached) = inner.owners.get_mut(&id) {
            *cached = OwnerRow::from_slice(row);
        }
        for s in new {
            learn_name(&mut inner.names, s);
        }
    }
}

/// Learns the label of slot `s` unless known: a flush's new slots name a few labels
/// thousands of times, and replacing one took an atomic count up and down.
fn learn_name(names: &mut HashMap<u64, Arc<str>, FastHash>, s: &NewSlot) {
    names.entry(s.hash).or_insert_with(|| Arc::clone(&s.label));
}

/// Every label in [`LABELS`], read stripe by stripe (none while it does not exist).
/// A stripe whose keys cannot be read (a damaged cold block) is left out, with a
/// warning: its labels read as unknown in the stats, and the server still starts.
fn read_labels(engine: &Engine) -> Result<HashMap<u64, Arc<str>, FastHash>, Error> {
    let mut names = HashMap::default();
    if !engine.counters().iter().any(|c| c == LABELS) {
        return Ok(names);
    }
    for stripe in 0..shardkit_counters::STRIPES {
        let keys = match engine.row_keys(LABELS, stripe) {
            Ok(keys) => keys,
            Err(e) => {
                tracing::warn!(stripe, error = %e, "click analytics labels that cannot be read are left out (they read as unknown)");
                continue;
            }
        };
        for key in keys {
            let OwnedKey::Name(name) = key else { continue };
            let mut chars = name.chars();
            let (Some(tag), Some(':')) = (chars.next(), chars.next()) else {
                continue;
            };
            if let Some(dim) = Dim::from_tag(tag) {
                let label = chars.as_str();
                names.insert(label_hash(dim, label), Arc::from(label));
            }
        }
    }
    Ok(names)
}

/// A slot given to a label in this write.
pub(super) struct NewSlot {
    pub(super) id: u64,
    pub(super) dim: Dim,
    /// Its [`TOTALS`] column.
    pub(super) column: usize,
    pub(super) hash: u64,
    pub(super) label: Arc<str>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_label_hash_is_xxh3_of_tag_colon_label_as_stored() {
        // Slot rows on disk hold these values: the streamed digest must be the one-shot one.
        for (dim, label) in [
            (Dim::Browser, "Chrome"),
            (Dim::Referrer, "direct"),
            (
                Dim::Referrer,
                "a-very-long-referrer-host.example.com".repeat(8).as_str(),
            ),
            (Dim::Country, ""),
        ] {
            let bytes = format!("{}:{label}", dim.tag());
            let want = (xxhash_rust::xxh3::xxh3_64(bytes.as_bytes())
                & shardkit_counters::MAX_VALUE)
                .max(1);
            assert_eq!(label_hash(dim, label), want, "{bytes}");
        }
    }
}

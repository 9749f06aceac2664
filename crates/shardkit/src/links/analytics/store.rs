//! Where click analytics live in the counter engine, and the one write path to them.
//!
//! Counters (each with one column `clicks`, except `link_slots`):
//! - `link_visits`: `<id>:<day>:p` (people) and `<id>:<day>:b` (bots) per link and UTC
//!   day; the bots are kept apart and in no other row.
//! - `link_slots`: `<id>:<tag>` with columns `s0`..`s15`, the label (as its hash) that
//!   owns each of the link's 16 slots of dimension `tag`; a slot is given to a new label
//!   while one is free and never taken back, so a link has at most 16 values per
//!   dimension and the rest count as `other`.
//! - `link_stats`: `<id>:<day>:<tag><slot>` (slot 0 to 15, 16 = `other`): people's
//!   clicks per link, day, dimension and value.
//! - `site_stats`: `<day>:<tag>:<label>` (label `other` for a link's overflow) and
//!   `<day>:p`: the same clicks summed over every link, for the site-wide tops.
//! - `link_labels`: `<tag>:<label>`, one row per label any link holds (its value: how
//!   many slots took it), read at start to turn slot hashes back into labels.
//!
//! Rows are bounded per link and day by 2 + 5 x 17; no row holds an address.

use super::classify::Dim;
use super::{FastHash, Tally};
use parking_lot::Mutex;
use shardkit_counters::{ColumnOptions, Engine, Error, Key, OwnedKey, Pending};
use std::collections::HashMap;
use std::sync::Arc;

/// People and bots per link and day.
pub const VISITS: &str = "link_visits";
/// Slot owners per link and dimension.
pub const SLOTS: &str = "link_slots";
/// People's clicks per link, day, dimension and slot.
pub const STATS: &str = "link_stats";
/// People's clicks per day, dimension and label, over every link.
pub const SITE: &str = "site_stats";
/// Every label some link holds.
pub const LABELS: &str = "link_labels";
/// The column of every counter but [`SLOTS`].
pub const COLUMN: &str = "clicks";
/// Values a link keeps apart per dimension; the rest count as [`OTHER`].
pub const SLOTS_PER_DIM: usize = 16;
/// The label of a link's values past its [`SLOTS_PER_DIM`].
pub const OTHER: &str = "other";

/// The slot owners of one link and dimension (0: free).
pub type SlotRow = [u64; SLOTS_PER_DIM];

/// Slot rows cached before the cache is emptied, to bound its memory.
const MAX_CACHED: usize = 200_000;

/// The column of slot `i` in [`SLOTS`] (no allocation a new slot).
fn slot_column(i: usize) -> &'static str {
    const NAMES: [&str; SLOTS_PER_DIM] = [
        "s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9", "s10", "s11", "s12", "s13",
        "s14", "s15",
    ];
    NAMES[i]
}

/// Makes the counters and columns if they do not exist yet.
pub fn ensure_counters(engine: &Engine) -> Result<(), Error> {
    let make = |counter: &str, column: &str, opts: ColumnOptions| -> Result<(), Error> {
        match engine.create_counter(counter) {
            Ok(()) | Err(Error::CounterExists(_)) => {}
            Err(e) => return Err(e),
        }
        match engine.add_column(counter, column, opts) {
            Ok(()) | Err(Error::ColumnExists { .. }) => Ok(()),
            Err(e) => Err(e),
        }
    };
    for counter in [VISITS, STATS, SITE, LABELS] {
        make(counter, COLUMN, ColumnOptions::default())?;
    }
    for i in 0..SLOTS_PER_DIM {
        make(SLOTS, slot_column(i), ColumnOptions::new(64, 64))?;
    }
    Ok(())
}

/// The number a label is known by in [`SLOTS`]: nonzero, at most the engine's largest value.
pub fn label_hash(dim: Dim, label: &str) -> u64 {
    // XXH3 of `<tag>:<label>`, stored in slot rows: it must never change. Streamed in
    // two parts (the same digest as one buffer) so no buffer is built.
    let mut hasher = xxhash_rust::xxh3::Xxh3Default::new();
    hasher.update(&[dim.tag() as u8, b':']);
    hasher.update(label.as_bytes());
    (hasher.digest() & shardkit_counters::MAX_VALUE).max(1)
}

/// The `link_visits` row of people (`bot` false) or bots.
pub fn visits_key(id: u64, day: u64, bot: bool) -> String {
    format!("{id}:{day}:{}", if bot { 'b' } else { 'p' })
}

/// The `link_stats` row of a slot (`SLOTS_PER_DIM` for `other`).
pub fn stats_key(id: u64, day: u64, dim: Dim, slot: usize) -> String {
    format!("{id}:{day}:{}{slot}", dim.tag())
}

/// The `site_stats` row of a label on a day.
pub fn site_key(day: u64, dim: Dim, label: &str) -> String {
    format!("{day}:{}:{label}", dim.tag())
}

/// Labels by hash and the slot rows read so far.
#[derive(Debug, Default)]
pub struct Labels {
    inner: Mutex<LabelsInner>,
}

#[derive(Debug, Default)]
struct LabelsInner {
    names: HashMap<u64, Arc<str>, FastHash>,
    slots: HashMap<(u64, Dim), SlotRow, FastHash>,
}

impl Labels {
    /// Every label in [`LABELS`] (none while the counter does not exist yet).
    pub fn load(engine: &Engine) -> Result<Labels, Error> {
        Ok(Labels {
            inner: Mutex::new(LabelsInner {
                names: read_labels(engine)?,
                slots: HashMap::default(),
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
        // A replica's slots change under it (the leader writes them): no cache there.
        let cached = !engine.is_read_only();
        if let Some(row) = self.inner.lock().slots.get(&(id, dim)).filter(|_| cached) {
            return Ok(*row);
        }
        let key = format!("{id}:{}", dim.tag());
        let (_, rows) = engine.mget_rows(SLOTS, &[Key::Name(&key)])?;
        let mut row = [0; SLOTS_PER_DIM];
        if let Some(values) = rows.first() {
            for (slot, value) in row.iter_mut().zip(values) {
                *slot = *value;
            }
        }
        let mut inner = self.inner.lock();
        if inner.slots.len() >= MAX_CACHED {
            inner.slots.clear();
        }
        inner.slots.insert((id, dim), row);
        Ok(row)
    }

    fn learn(&self, id: u64, dim: Dim, row: SlotRow, new: &[Learned]) {
        let mut inner = self.inner.lock();
        inner.slots.insert((id, dim), row);
        for (_, hash, label) in new {
            inner.names.insert(*hash, Arc::clone(label));
        }
    }
}

/// Every label in [`LABELS`], read stripe by stripe (none while it does not exist).
fn read_labels(engine: &Engine) -> Result<HashMap<u64, Arc<str>, FastHash>, Error> {
    let mut names = HashMap::default();
    if !engine.counters().iter().any(|c| c == LABELS) {
        return Ok(names);
    }
    for stripe in 0..shardkit_counters::STRIPES {
        for key in engine.row_keys(LABELS, stripe)? {
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

/// A slot given in a write, as the cache learns it: (slot, hash, label).
type Learned = (usize, u64, Arc<str>);

/// A slot given to a label in this write.
struct NewSlot {
    id: u64,
    dim: Dim,
    slot: usize,
    hash: u64,
    label: Arc<str>,
}

/// Writes `tally` to the engine (durable when this returns): new slot owners first
/// (their labels, then the slots), then the counts. Callers serialize writes.
pub fn write(engine: &Engine, labels: &Labels, tally: &Tally) -> Result<(), Error> {
    let mut rows: HashMap<(u64, Dim), SlotRow, FastHash> = HashMap::default();
    let mut new_slots: Vec<NewSlot> = Vec::new();
    let mut stats: HashMap<(u64, u64, Dim, usize), u64, FastHash> = HashMap::default();
    // Site rows by (day, dimension, label): few distinct ones, their keys made once.
    let mut site_labels: HashMap<(u64, Dim, &str), u64, FastHash> = HashMap::default();
    for ((id, day, dim, label), &n) in &tally.dims {
        let row = match rows.get_mut(&(*id, *dim)) {
            Some(row) => row,
            None => {
                let loaded = labels.slots(engine, *id, *dim)?;
                rows.entry((*id, *dim)).or_insert(loaded)
            }
        };
        let hash = label_hash(*dim, label);
        let slot = match row.iter().position(|&h| h == hash) {
            Some(slot) => slot,
            None => match row.iter().position(|&h| h == 0) {
                Some(free) => {
                    row[free] = hash;
                    new_slots.push(NewSlot {
                        id: *id,
                        dim: *dim,
                        slot: free,
                        hash,
                        label: Arc::clone(label),
                    });
                    free
                }
                None => SLOTS_PER_DIM,
            },
        };
        *stats.entry((*id, *day, *dim, slot)).or_default() += n;
        let site_label = if slot == SLOTS_PER_DIM { OTHER } else { label };
        *site_labels.entry((*day, *dim, site_label)).or_default() += n;
    }
    let stats: Vec<(String, u64)> = stats
        .into_iter()
        .map(|((id, day, dim, slot), n)| (stats_key(id, day, dim, slot), n))
        .collect();
    let mut site: HashMap<String, u64, FastHash> = site_labels
        .into_iter()
        .map(|((day, dim, label), n)| (site_key(day, dim, label), n))
        .collect();
    if !new_slots.is_empty() {
        // Summed per label: a flush of many new links gives each label once.
        let mut label_counts: HashMap<(Dim, &str), u64, FastHash> = HashMap::default();
        for s in &new_slots {
            *label_counts.entry((s.dim, &*s.label)).or_default() += 1;
        }
        let label_keys: Vec<(String, u64)> = label_counts
            .into_iter()
            .map(|((dim, label), n)| (format!("{}:{label}", dim.tag()), n))
            .collect();
        incr(
            engine,
            LABELS,
            label_keys.iter().map(|(k, n)| (k.as_str(), *n)),
        )?;
        // Appended one by one, made durable by one commit (one fsync for them all).
        let mut newest = Pending::NONE;
        for s in &new_slots {
            let key = format!("{}:{}", s.id, s.dim.tag());
            let pending =
                engine.set_deferred(SLOTS, Key::Name(&key), slot_column(s.slot), s.hash)?;
            newest = newest.max(pending);
        }
        engine.commit(newest)?;
        let mut learned: HashMap<(u64, Dim), Vec<Learned>> = HashMap::new();
        for s in &new_slots {
            learned
                .entry((s.id, s.dim))
                .or_default()
                .push((s.slot, s.hash, Arc::clone(&s.label)));
        }
        for ((id, dim), new) in learned {
            if let Some(row) = rows.get(&(id, dim)) {
                labels.learn(id, dim, *row, &new);
            }
        }
    }
    let mut visits: Vec<(String, u64)> = Vec::new();
    let mut people_by_day: HashMap<u64, u64, FastHash> = HashMap::default();
    for (&(id, day), &(people, bots)) in &tally.visits {
        if people > 0 {
            visits.push((visits_key(id, day, false), people));
            *people_by_day.entry(day).or_default() += people;
        }
        if bots > 0 {
            visits.push((visits_key(id, day, true), bots));
        }
    }
    for (day, people) in people_by_day {
        *site.entry(format!("{day}:p")).or_default() += people;
    }
    incr(engine, STATS, stats.iter().map(|(k, n)| (k.as_str(), *n)))?;
    incr(engine, SITE, site.iter().map(|(k, &n)| (k.as_str(), n)))?;
    incr(engine, VISITS, visits.iter().map(|(k, n)| (k.as_str(), *n)))?;
    Ok(())
}

/// One `incr_batch` of `(row key, count)` pairs on [`COLUMN`] (none: no write).
fn incr<'a>(
    engine: &Engine,
    counter: &str,
    items: impl Iterator<Item = (&'a str, u64)>,
) -> Result<(), Error> {
    let items: Vec<(Key<'a>, i64)> = items
        .map(|(k, n)| (Key::Name(k), i64::try_from(n).unwrap_or(i64::MAX)))
        .collect();
    if !items.is_empty() {
        engine.incr_batch(counter, COLUMN, &items)?;
    }
    Ok(())
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

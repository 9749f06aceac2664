//! Click counting without a storage write on the redirect path.
//!
//! A redirect adds one click to an in-memory slot (a sharded mutex-guarded map);
//! a flusher takes the accumulated clicks every `links.click_flush_ms`
//! ([`ClickBook::flush_with`]) and writes them with the click analytics, into the same
//! rows and with one commit (one fsync per flush, `analytics::store::write`): column
//! `clicks` of counter `link_totals` row `<id>:t` (the total) and of counter
//! `link_daily` row `<id>:<day>` (UTC days since 1970). A SIGKILL loses at most the
//! clicks of one flush interval; a clean stop flushes everything.
//!
//! For a link with `max_visits` the slot's `total` is the authoritative count while
//! the slot exists (engine value at load + every click since), so the limit is
//! enforced exactly: the check and the increment happen under one lock. A link without
//! a limit does not read its stored total on its first click (a counter-engine lookup,
//! ~0.7 µs of a first click at 10 million links): its slot holds only what is
//! unflushed, and a reader of its total ([`ClickBook::total`]) waits for a flush in
//! progress, then adds the slot's unflushed clicks to the engine's. A slot with nothing
//! unflushed is dropped at the next flush; flushes run one at a time, so by then the
//! engine holds every earlier click and a reload from it is exact.

use super::store::{self, total_key, Backlog, Clicks, KeyText, Labels, OwnerRows};
use super::FastHash;
use parking_lot::Mutex;
use shardkit_counters::{Engine, Error, Key};
use std::collections::HashMap;

/// Counter holding each link's total clicks (row = `<id>:t`, with its analytics' slot
/// owners).
pub const TOTAL_COUNTER: &str = store::TOTALS;
/// Counter holding clicks per link and day (row = `<id>:<day>`, with that day's
/// analytics).
pub const DAILY_COUNTER: &str = store::DAILY;
/// The column of both counters.
pub const COLUMN: &str = store::CLICKS;

const SHARDS: usize = 64;

/// One link's clicks. The unflushed clicks of the current day sit inline (no
/// allocation on the redirect path); other days, rare, go to `older`.
#[derive(Debug, Default)]
struct Slot {
    /// With `known`, the link's whole total; without, not kept.
    total: u64,
    /// Whether `total` was read from the engine (a link with a visit limit).
    known: bool,
    pending: u64,
    day: u64,
    day_pending: u64,
    older: Vec<(u64, u64)>,
}

impl Slot {
    fn add_day(&mut self, day: u64, n: u64) {
        if self.day_pending == 0 || self.day == day {
            self.day = day;
            self.day_pending += n;
        } else {
            match self.older.iter_mut().find(|(d, _)| *d == day) {
                Some((_, m)) => *m += n,
                None => self.older.push((day, n)),
            }
        }
    }

    fn days(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        (self.day_pending > 0)
            .then_some((self.day, self.day_pending))
            .into_iter()
            .chain(self.older.iter().copied())
    }
}

/// In-memory clicks in front of the counter engine.
#[derive(Debug)]
pub struct ClickBook {
    shards: Box<[Mutex<HashMap<u64, Slot, FastHash>>]>,
    flushing: Mutex<()>,
}

impl Default for ClickBook {
    fn default() -> Self {
        Self {
            shards: (0..SHARDS)
                .map(|_| Mutex::new(HashMap::default()))
                .collect(),
            flushing: Mutex::new(()),
        }
    }
}

/// The engine's stored total of a link (0 if none or unreadable).
fn stored_total(engine: &Engine, id: u64) -> u64 {
    engine
        .get(TOTAL_COUNTER, Key::Name(&total_key(id)), COLUMN)
        .unwrap_or(0)
}

/// The `link_daily` row of a link and day, `<id>:<day>`: its clicks and its analytics
/// (one function spells it for both).
pub use super::store::day_key;

/// Makes the two counters (the analytics' ones, which hold the clicks too) if they do
/// not exist yet, moving the rows of earlier layouts into them.
pub fn ensure_counters(engine: &Engine) -> Result<(), Error> {
    store::ensure_counters(engine)
}

/// Adds one click of `id` on `day` to its slot in `shard` (made if absent: with the
/// stored total when `max` is set) unless the slot's known total reached `max`.
fn count(
    shard: &mut HashMap<u64, Slot, FastHash>,
    engine: &Engine,
    id: u64,
    day: u64,
    max: Option<u64>,
) -> bool {
    let slot = shard.entry(id).or_insert_with(|| match max {
        Some(_) => Slot {
            total: stored_total(engine, id),
            known: true,
            ..Slot::default()
        },
        None => Slot::default(),
    });
    if max.is_some_and(|m| slot.known && slot.total >= m) {
        return false;
    }
    slot.total += 1;
    slot.pending += 1;
    slot.add_day(day, 1);
    true
}

impl ClickBook {
    fn shard(&self, id: u64) -> &Mutex<HashMap<u64, Slot, FastHash>> {
        &self.shards[(id as usize ^ (id >> 17) as usize) % SHARDS]
    }

    /// Counts one click of link `id` on `day` unless `max` clicks were reached;
    /// answers whether it was counted (`false`: the link is used up).
    pub fn hit(&self, engine: &Engine, id: u64, day: u64, max: Option<u64>) -> bool {
        let mut shard = self.shard(id).lock();
        if max.is_some() && shard.get(&id).is_some_and(|slot| !slot.known) {
            // A limit on a link first clicked without one (set by an update since): its
            // total is read with no flush in progress, so none of its clicks is in
            // flight between the slot and the engine. Same lock order as `flush`.
            drop(shard);
            let _settled = self.flushing.lock();
            shard = self.shard(id).lock();
            if let Some(slot) = shard.get_mut(&id).filter(|slot| !slot.known) {
                slot.total = stored_total(engine, id) + slot.pending;
                slot.known = true;
            }
            return count(&mut shard, engine, id, day, max);
        }
        count(&mut shard, engine, id, day, max)
    }

    /// Total clicks of link `id`, counted or still in memory.
    pub fn total(&self, engine: &Engine, id: u64) -> u64 {
        match self.shard(id).lock().get(&id) {
            None => return stored_total(engine, id),
            Some(slot) if slot.known => return slot.total,
            Some(_) => {}
        }
        // Its unflushed clicks on top of the engine's, with no flush in progress (one
        // would have taken them from the slot and not yet added them to the engine).
        let _settled = self.flushing.lock();
        let shard = self.shard(id).lock();
        match shard.get(&id) {
            Some(slot) if slot.known => slot.total,
            slot => stored_total(engine, id) + slot.map_or(0, |s| s.pending),
        }
    }

    /// Clicks per day for `days` (in order), stored plus not yet flushed, read with
    /// no flush in progress (as [`ClickBook::total`]: one would have taken them from
    /// the slot and not yet added them to the engine).
    pub fn daily(&self, engine: &Engine, id: u64, days: &[u64]) -> Vec<u64> {
        let _settled = self.flushing.lock();
        let keys: Vec<String> = days.iter().map(|&d| day_key(id, d)).collect();
        let parsed: Vec<Key<'_>> = keys.iter().map(|k| Key::parse(k)).collect();
        let mut counts = engine
            .mget(DAILY_COUNTER, &parsed, COLUMN)
            .unwrap_or_else(|_| vec![0; days.len()]);
        if let Some(slot) = self.shard(id).lock().get(&id) {
            for (i, day) in days.iter().enumerate() {
                counts[i] += slot
                    .days()
                    .filter(|(d, _)| d == day)
                    .map(|(_, n)| n)
                    .sum::<u64>();
            }
        }
        counts
    }

    /// Adds restored click totals `(link id, clicks)` and daily clicks `(link id, day,
    /// clicks)` of imported links to the engine (durable when this returns). The links
    /// are new, so no slot holds them yet.
    pub fn restore(
        &self,
        engine: &Engine,
        totals: &[(u64, u64)],
        days: &[(u64, u64, u64)],
    ) -> Result<(), Error> {
        let clamp = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
        if !totals.is_empty() {
            let mut keys = KeyText::with_capacity(totals.len());
            for &(id, _) in totals {
                keys.push_total(id);
            }
            let items: Vec<(Key<'_>, i64)> = keys
                .iter()
                .zip(totals)
                .map(|(k, &(_, n))| (Key::Name(k), clamp(n)))
                .collect();
            engine.incr_batch(TOTAL_COUNTER, COLUMN, &items)?;
        }
        if !days.is_empty() {
            let keys: Vec<String> = days.iter().map(|&(id, d, _)| day_key(id, d)).collect();
            let items: Vec<(Key<'_>, i64)> = keys
                .iter()
                .zip(days)
                .map(|(k, &(_, _, n))| (Key::parse(k), clamp(n)))
                .collect();
            engine.incr_batch(DAILY_COUNTER, COLUMN, &items)?;
        }
        Ok(())
    }

    /// Every link's clicks per day, `(day, clicks)` oldest first, for the days that had
    /// any: unflushed clicks are written first, then the whole `link_daily` counter is
    /// read stripe by stripe. Exists for the export, which carries each link's series.
    pub fn all_daily(&self, engine: &Engine) -> Result<HashMap<u64, Vec<(u64, u64)>>, Error> {
        self.flush(engine)?;
        let mut series: HashMap<u64, Vec<(u64, u64)>> = HashMap::new();
        for stripe in 0..shardkit_counters::STRIPES {
            let keys = engine.row_keys(DAILY_COUNTER, stripe)?;
            let names: Vec<String> = keys
                .iter()
                .filter_map(|k| match k {
                    shardkit_counters::OwnedKey::Name(name) => Some(name.to_string()),
                    shardkit_counters::OwnedKey::Id(_) => None,
                })
                .collect();
            let parsed: Vec<Key<'_>> = names.iter().map(|k| Key::parse(k)).collect();
            let counts = engine.mget(DAILY_COUNTER, &parsed, COLUMN)?;
            for (name, n) in names.iter().zip(counts) {
                let Some((id, day)) = name.split_once(':') else {
                    continue;
                };
                if let (Ok(id), Ok(day), true) = (id.parse(), day.parse(), n > 0) {
                    series.entry(id).or_default().push((day, n));
                }
            }
        }
        for days in series.values_mut() {
            days.sort_unstable();
        }
        Ok(series)
    }

    /// Drops the clicks of a deleted link (memory, and the engine's total row with its
    /// analytics' slot owners).
    pub fn forget(&self, engine: &Engine, id: u64) {
        self.shard(id).lock().remove(&id);
        let _ = engine.delete(TOTAL_COUNTER, Key::Name(&total_key(id)));
    }

    /// Writes every unflushed click to the engine (durable when this returns), with no
    /// analytics: [`ClickBook::flush_with`] writing them alone. On failure the clicks
    /// stay in memory for the next try.
    pub fn flush(&self, engine: &Engine) -> Result<usize, Error> {
        self.flush_with(|clicks| {
            if clicks.is_empty() {
                return store::Written::default();
            }
            store::write(
                engine,
                &Labels::default(),
                &Backlog::default(),
                clicks,
                &mut OwnerRows::default(),
            )
        })
    }

    /// Takes every unflushed click and hands them to `write` (the analytics' write,
    /// which stores them with the clicks' analytics, durable when it returns, and
    /// answers the clicks it did not store: rows it could not write, and, when it
    /// stopped at a refused engine call, the rows it did not reach); answers the links
    /// whose clicks it wrote, or why it stopped. `write` runs even with no click (it
    /// may have analytics to write). The clicks `write` did not store go back to
    /// memory for the next try, and only those: none is counted twice. One flush at a
    /// time: a reader of a total waits for the one in progress.
    pub fn flush_with(
        &self,
        write: impl FnOnce(&Clicks) -> store::Written,
    ) -> Result<usize, Error> {
        let _one_at_a_time = self.flushing.lock();
        let mut clicks = Clicks::default();
        for shard in self.shards.iter() {
            let mut shard = shard.lock();
            shard.retain(|&id, slot| {
                // A slot may hold day clicks alone: a write that stored the link's
                // total but not its day row gave back only the day's.
                if slot.pending == 0 && slot.day_pending == 0 && slot.older.is_empty() {
                    return false;
                }
                if slot.pending > 0 {
                    clicks.totals.push((id, std::mem::take(&mut slot.pending)));
                }
                clicks.days.extend(slot.days().map(|(d, n)| (id, d, n)));
                slot.day_pending = 0;
                slot.older.clear();
                true
            });
        }
        let written = write(&clicks);
        self.put_back(&written.left);
        match written.stopped {
            Some(e) => Err(e),
            None => Ok(clicks.totals.len() - written.left.totals.len()),
        }
    }

    /// Puts clicks taken by a flush back in memory, for the next one.
    fn put_back(&self, clicks: &Clicks) {
        for &(id, n) in &clicks.totals {
            let mut shard = self.shard(id).lock();
            let slot = shard.entry(id).or_default();
            slot.pending += n;
        }
        for &(id, d, n) in &clicks.days {
            let mut shard = self.shard(id).lock();
            shard.entry(id).or_default().add_day(d, n);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clicks_count_limit_and_survive_a_flush_and_reopen() {
        let dir = tempfile::tempdir().unwrap();
        {
            let engine = Engine::open(dir.path(), shardkit_counters::Options::default()).unwrap();
            ensure_counters(&engine).unwrap();
            let book = ClickBook::default();
            assert!(book.hit(&engine, 7, 100, Some(2)));
            assert!(book.hit(&engine, 7, 101, Some(2)));
            assert!(!book.hit(&engine, 7, 101, Some(2)));
            assert_eq!(book.total(&engine, 7), 2);
            assert_eq!(book.flush(&engine).unwrap(), 1);
            assert_eq!(book.daily(&engine, 7, &[100, 101, 102]), [1, 1, 0]);
            assert_eq!(
                book.flush(&engine).unwrap(),
                0,
                "nothing new; the idle slot is dropped"
            );
            assert_eq!(book.total(&engine, 7), 2);
            assert!(
                !book.hit(&engine, 7, 101, Some(2)),
                "the limit holds after a reload from the engine"
            );
            book.hit(&engine, 8, 100, None);
        }
        let engine = Engine::open(dir.path(), shardkit_counters::Options::default()).unwrap();
        let book = ClickBook::default();
        assert_eq!(book.total(&engine, 7), 2);
        assert_eq!(book.total(&engine, 8), 0, "never flushed");
    }

    /// A link without a limit keeps no total in memory; its total still adds up across
    /// flushes, and a limit set later counts every click made before it.
    #[test]
    fn a_link_without_a_limit_totals_exactly_and_takes_a_limit_later() {
        let dir = tempfile::tempdir().unwrap();
        let engine = Engine::open(dir.path(), shardkit_counters::Options::default()).unwrap();
        ensure_counters(&engine).unwrap();
        engine
            .incr(TOTAL_COUNTER, Key::Name("9:t"), COLUMN, 5, None)
            .expect("clicks from before this book");
        let book = ClickBook::default();
        assert!(book.hit(&engine, 9, 100, None));
        assert!(book.hit(&engine, 9, 100, None));
        assert_eq!(book.total(&engine, 9), 7, "stored 5 + 2 unflushed");
        assert_eq!(book.flush(&engine).unwrap(), 1);
        assert_eq!(book.total(&engine, 9), 7, "all flushed, slot kept");
        assert!(book.hit(&engine, 9, 100, None));
        assert_eq!(book.total(&engine, 9), 8, "stored 7 + 1 unflushed");
        // A limit of 9 now: one more click, then used up.
        assert!(book.hit(&engine, 9, 100, Some(9)));
        assert!(!book.hit(&engine, 9, 100, Some(9)));
        assert_eq!(book.total(&engine, 9), 9);
        book.flush(&engine).unwrap();
        assert_eq!(
            engine.get(TOTAL_COUNTER, Key::Name("9:t"), COLUMN).unwrap(),
            9
        );
        assert_eq!(book.daily(&engine, 9, &[100]), [4]);
    }

    /// A row the engine refuses (its cold block damaged) costs its own clicks a retry,
    /// never the others a second count: every other link's total reads exactly its
    /// clicks however many flushes follow, and the refused ones stay in memory.
    #[test]
    fn a_refused_row_keeps_its_clicks_and_the_rest_are_counted_once() {
        const LINKS: u64 = 4_000;
        let dir = tempfile::tempdir().unwrap();
        let options = || shardkit_counters::Options {
            snapshot_log_bytes: None,
            ..shardkit_counters::Options::default()
        };
        {
            let engine = Engine::open(dir.path(), options()).unwrap();
            ensure_counters(&engine).unwrap();
            let book = ClickBook::default();
            for id in 0..LINKS {
                assert!(book.hit(&engine, id, 100, None));
            }
            assert_eq!(book.flush(&engine).unwrap(), LINKS as usize);
            engine.evict(std::time::Duration::ZERO).unwrap();
            engine.snapshot().unwrap();
        }
        assert!(
            store::damage_cold_blocks(dir.path()) > 0,
            "the rows went cold"
        );
        let engine = Engine::open(dir.path(), options()).unwrap();
        let book = ClickBook::default();
        for id in 0..LINKS {
            assert!(book.hit(&engine, id, 101, None));
        }
        for _ in 0..3 {
            let _ = book.flush(&engine);
        }
        let (mut sound, mut refused) = (0, 0);
        for id in 0..LINKS {
            match engine.get(TOTAL_COUNTER, Key::Name(&total_key(id)), COLUMN) {
                Ok(total) => {
                    assert_eq!(total, 2, "link {id} counted twice");
                    sound += 1;
                }
                Err(_) => {
                    // Still in memory for a later flush: one click before, one now.
                    assert_eq!(book.shard(id).lock().get(&id).map(|s| s.pending), Some(1));
                    refused += 1;
                }
            }
        }
        assert!(
            refused > 0 && sound > refused,
            "{sound} sound, {refused} refused"
        );
    }
}

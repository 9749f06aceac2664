//! Where a link's clicks and their analytics live in the counter engine, and the one
//! write path to them.
//!
//! Two rows per link, so a link's first click makes two rows, not four (each
//! row a first click makes is a table insert, ~1,300-4,800 instructions):
//! - `link_totals`: `<id>:t`, column `clicks` (the link's total clicks), then the label
//!   (as its hash) that owns each of the link's 16 slots per dimension, in columns
//!   `<tag><slot>` (`r0 b0 o0 d0 c0 r1 … c15`, slot by slot, so a link with one value
//!   per dimension uses the first five); a slot is given to a new label while one is
//!   free and never taken back, so a link has at most 16 values per dimension and the
//!   rest count as `other`.
//! - `link_daily`: `<id>:<day>` per link and UTC day, columns `clicks` (every counted
//!   click), `people`, `bots` (the classified ones, kept apart and in no other column;
//!   a click whose analytics were dropped is in `clicks` only), then people's clicks
//!   per dimension and slot, `r0 b0 o0 d0 c0 r1 … c16` (slot 16 = `other`). A row holds
//!   only the columns up to the last one written (the engine's string rows), so a
//!   typical day costs a handful.
//! - `site_stats`: `<day>:<tag>:<label>` (label `other` for a link's overflow) and
//!   `<day>:p`: the same clicks summed over every link, for the site-wide tops.
//! - `link_labels`: `<tag>:<label>`, one row per label any link holds (its value: how
//!   many slots took it), read at start to turn slot hashes back into labels.
//!
//! Data of the earlier layouts is moved into these rows once, when the counters are
//! ensured: the first (`link_visits`, `link_slots`, `link_stats`, one row per dimension;
//! [`migrate_old_layout`]) and the second (`links` and `link_days` beside
//! `link_owners` and `link_day_stats`, four rows per link; [`migrate_four_rows`]).
//! No row holds an address.
//!
//! Why one file of this size: the row layout (columns, keys, slot owners) and the one
//! write path that keeps it, with the moves of the earlier layouts into it, change
//! together; a change to one that the others do not follow loses clicks. The moves of
//! earlier layouts and `Labels` are the parts that could leave first.

use super::classify::Dim;
use super::{FastHash, Tally};
use parking_lot::Mutex;
use shardkit_counters::{ColumnOptions, Engine, Error, Key, OwnedKey, Pending, RowOp};
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, LazyLock};

/// Total clicks and slot owners per link, every dimension in one row.
pub const TOTALS: &str = "link_totals";
/// Clicks, people, bots and people's clicks per dimension and slot, per link and day.
pub const DAILY: &str = "link_daily";
/// The column of every counted click in [`TOTALS`] and [`DAILY`] (the first of each).
pub const CLICKS: &str = "clicks";
/// People's clicks per day, dimension and label, over every link.
pub const SITE: &str = "site_stats";
/// Every label some link holds.
pub const LABELS: &str = "link_labels";
/// The column of [`SITE`] and [`LABELS`].
pub const COLUMN: &str = "clicks";
/// The [`DAILY`] column of people's clicks.
pub const PEOPLE: &str = "people";
/// The [`DAILY`] column of bots' clicks.
pub const BOTS: &str = "bots";
/// Values a link keeps apart per dimension; the rest count as [`OTHER`].
pub const SLOTS_PER_DIM: usize = 16;
/// The label of a link's values past its [`SLOTS_PER_DIM`].
pub const OTHER: &str = "other";

/// The slot owners of one link and dimension (0: free).
pub type SlotRow = [u64; SLOTS_PER_DIM];

/// Dimensions side by side in a slot's columns.
const DIMS: usize = Dim::ALL.len();
/// Owner columns of [`TOTALS`]: one per dimension and slot (after [`CLICKS`]).
const OWNER_COLUMNS: usize = SLOTS_PER_DIM * DIMS;
/// [`DAILY`] columns before the slots' ([`CLICKS`], [`PEOPLE`], [`BOTS`]).
const DAY_FIRST_SLOT: usize = 3;
/// Columns of [`DAILY`]: clicks, people, bots, then every dimension's slots and `other`.
const DAY_COLUMNS: usize = DAY_FIRST_SLOT + (SLOTS_PER_DIM + 1) * DIMS;

/// Links whose owner rows are cached before the cache is emptied, to bound its memory.
const MAX_CACHED: usize = 200_000;

/// Where `dim` sits among a slot's columns (the order of [`Dim::ALL`]).
fn dim_index(dim: Dim) -> usize {
    match dim {
        Dim::Referrer => 0,
        Dim::Browser => 1,
        Dim::Os => 2,
        Dim::Device => 3,
        Dim::Country => 4,
    }
}

/// Which owner column of [`TOTALS`] slot `slot` of `dim` is (below [`SLOTS_PER_DIM`];
/// the row's column is one more, after [`CLICKS`]).
pub fn owner_column(dim: Dim, slot: usize) -> usize {
    slot * DIMS + dim_index(dim)
}

/// The column of slot `slot` of `dim` in [`DAILY`] ([`SLOTS_PER_DIM`]: `other`).
pub fn day_column(dim: Dim, slot: usize) -> usize {
    DAY_FIRST_SLOT + slot * DIMS + dim_index(dim)
}

/// Column names of [`DAILY`] in order; those of [`TOTALS`] are [`CLICKS`] and its slot
/// columns without the last slot's. Made once, so a write names columns without
/// allocating.
static DAY_NAMES: LazyLock<Vec<String>> = LazyLock::new(|| {
    let mut names = vec![CLICKS.to_string(), PEOPLE.to_string(), BOTS.to_string()];
    for slot in 0..=SLOTS_PER_DIM {
        for dim in Dim::ALL {
            names.push(format!("{}{slot}", dim.tag()));
        }
    }
    debug_assert_eq!(names.len(), DAY_COLUMNS);
    names
});

/// [`DAY_NAMES`] as the engine's `incr_rows` takes them: a day row's items name a
/// column by its place, [`day_column`]'s.
static DAY_NAME_REFS: LazyLock<Vec<&'static str>> =
    LazyLock::new(|| DAY_NAMES.iter().map(String::as_str).collect());

/// [`TOTALS`]' columns as the engine's `update_rows` and `set_rows` take them: clicks
/// (place 0), then owner column `i` at place `1 + i`.
static TOTAL_NAME_REFS: LazyLock<Vec<&'static str>> = LazyLock::new(|| {
    std::iter::once(CLICKS)
        .chain(
            DAY_NAME_REFS[DAY_FIRST_SLOT..DAY_FIRST_SLOT + OWNER_COLUMNS]
                .iter()
                .copied(),
        )
        .collect()
});

/// The name of [`DAILY`] column `i`.
fn day_name(i: usize) -> &'static str {
    &DAY_NAMES[i]
}

/// The name of [`TOTALS`] column `i` (the same `<tag><slot>` as in [`DAILY`]).
fn owner_name(i: usize) -> &'static str {
    &DAY_NAMES[DAY_FIRST_SLOT + i]
}

/// Makes the counters and columns if they do not exist yet (in order: [`CLICKS`]
/// first), and moves data of the earlier layouts into them ([`migrate_old_layout`],
/// [`migrate_four_rows`]).
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
    for counter in [SITE, LABELS] {
        make(counter, COLUMN, ColumnOptions::default())?;
    }
    for i in 0..DAY_COLUMNS {
        make(DAILY, day_name(i), ColumnOptions::default())?;
    }
    make(TOTALS, CLICKS, ColumnOptions::default())?;
    for i in 0..OWNER_COLUMNS {
        make(TOTALS, owner_name(i), ColumnOptions::new(64, 64))?;
    }
    migrate_old_layout(engine)?;
    migrate_four_rows(engine)?;
    Ok(())
}

/// Counters of the earlier layout: people and bots per link and day.
const OLD_VISITS: &str = "link_visits";
/// Counters of the earlier layout: slot owners per link and dimension.
const OLD_SLOTS: &str = "link_slots";
/// Counters of the earlier layout: people's clicks per link, day, dimension and slot.
const OLD_STATS: &str = "link_stats";

/// Moves the rows of the earlier layout (one row per link and dimension, and per link,
/// day, dimension and slot) into [`TOTALS`] and [`DAILY`], then empties the old
/// counters (they stay, empty). Every value is *set*, not added, so a move cut short by
/// a crash is simply done again at the next start; nothing counts twice. Answers the
/// rows moved.
pub fn migrate_old_layout(engine: &Engine) -> Result<u64, Error> {
    let old = present(engine, &[OLD_VISITS, OLD_SLOTS, OLD_STATS]);
    let mut moved = 0;
    let mut newest = Pending::NONE;
    for &counter in &old {
        for stripe in 0..shardkit_counters::STRIPES {
            let keys = name_keys(engine, counter, stripe)?;
            let parsed: Vec<Key<'_>> = keys.iter().map(|k| Key::Name(k)).collect();
            let (names, rows) = engine.mget_rows(counter, &parsed)?;
            for (key, row) in keys.iter().zip(rows) {
                for (name, value) in names.iter().zip(row).filter(|(_, v)| *v > 0) {
                    let Some((to, column, target)) = old_place(counter, key, name) else {
                        continue;
                    };
                    let pending = engine.set_deferred(to, Key::Name(&target), column, value)?;
                    newest = newest.max(pending);
                }
                moved += 1;
            }
        }
    }
    finish_move(engine, newest, &old, moved)
}

/// The counters of `names` the engine has.
fn present<'a>(engine: &Engine, names: &[&'a str]) -> Vec<&'a str> {
    let counters = engine.counters();
    names
        .iter()
        .copied()
        .filter(|c| counters.iter().any(|have| have == c))
        .collect()
}

/// The end of a move of `moved` rows: what it wrote made durable (`newest`), then the
/// `old` counters emptied (after, so a crash before leaves them to be moved again).
fn finish_move(engine: &Engine, newest: Pending, old: &[&str], moved: u64) -> Result<u64, Error> {
    engine.commit(newest)?;
    for counter in old {
        let (_, pending) = engine.clear_deferred(counter)?;
        engine.commit(pending)?;
    }
    if moved > 0 {
        tracing::info!(
            rows = moved,
            from = ?old,
            "link clicks and analytics moved to link_totals and link_daily"
        );
    }
    Ok(moved)
}

/// The second layout: total clicks by link id (an id key).
const FOUR_TOTAL: &str = "links";
/// The second layout: clicks per link and day, `<id>:<day>`.
const FOUR_DAYS: &str = "link_days";
/// The second layout: slot owners per link, `<id>:o`.
const FOUR_OWNERS: &str = "link_owners";
/// The second layout: people, bots and slots per link and day, `<id>:<day>`.
const FOUR_DAY_STATS: &str = "link_day_stats";

/// Moves the rows of the second layout (four rows per link: `links`, `link_days`,
/// `link_owners`, `link_day_stats`) into [`TOTALS`] and [`DAILY`], each value into the
/// column of the same name, then empties the old counters (they stay, empty). As in
/// [`migrate_old_layout`], every value is *set*, so a move cut short by a crash is done
/// again at the next start and nothing counts twice. Answers the rows moved.
pub fn migrate_four_rows(engine: &Engine) -> Result<u64, Error> {
    let old = present(
        engine,
        &[FOUR_TOTAL, FOUR_DAYS, FOUR_OWNERS, FOUR_DAY_STATS],
    );
    let mut moved = 0;
    let mut newest = Pending::NONE;
    let mut results = Vec::new();
    for &counter in &old {
        let (to, columns): (&str, &[&str]) = match counter {
            FOUR_TOTAL | FOUR_OWNERS => (TOTALS, &TOTAL_NAME_REFS),
            _ => (DAILY, &DAY_NAME_REFS),
        };
        for stripe in 0..shardkit_counters::STRIPES {
            let keys = engine.row_keys(counter, stripe)?;
            let (from, targets): (Vec<Key<'_>>, Vec<String>) = keys
                .iter()
                .filter_map(|key| Some((key.as_key(), four_rows_key(counter, key)?)))
                .unzip();
            if from.is_empty() {
                continue;
            }
            let (names, rows) = engine.mget_rows(counter, &from)?;
            let place: Vec<Option<usize>> = names
                .iter()
                .map(|n| columns.iter().position(|c| c == n))
                .collect();
            let items: Vec<Vec<(usize, u64)>> = rows
                .iter()
                .map(|values| {
                    place
                        .iter()
                        .zip(values)
                        .filter_map(|(at, &v)| Some((*at.as_ref()?, v)).filter(|_| v > 0))
                        .collect()
                })
                .collect();
            let rows: Vec<(Key<'_>, &[(usize, u64)])> = targets
                .iter()
                .zip(&items)
                .filter(|(_, items)| !items.is_empty())
                .map(|(key, items)| (Key::Name(key), items.as_slice()))
                .collect();
            for run in rows.chunks(RUN) {
                newest = newest.max(engine.set_rows(to, columns, run, &mut results)?);
                // The same columns at the same widths: any refusal is an error.
                for result in results.drain(..) {
                    result?;
                }
            }
            moved += rows.len() as u64;
        }
    }
    finish_move(engine, newest, &old, moved)
}

/// Where a row of the second layout's `counter` goes: its [`TOTALS`] or [`DAILY`] key
/// (`None` for a key that layout never wrote).
fn four_rows_key(counter: &str, key: &OwnedKey) -> Option<String> {
    match (counter, key) {
        (FOUR_TOTAL, OwnedKey::Id(id)) => Some(total_key(*id)),
        (FOUR_OWNERS, OwnedKey::Name(name)) => {
            Some(total_key(name.strip_suffix(":o")?.parse().ok()?))
        }
        (FOUR_DAYS | FOUR_DAY_STATS, OwnedKey::Name(name)) => {
            let (id, day) = name.split_once(':')?;
            Some(day_key(id.parse().ok()?, day.parse().ok()?))
        }
        _ => None,
    }
}

/// The string keys of the rows in `stripe` of `counter` (the analytics' rows are all
/// named; an id key, which they never write, is skipped).
pub fn name_keys(engine: &Engine, counter: &str, stripe: usize) -> Result<Vec<String>, Error> {
    Ok(engine
        .row_keys(counter, stripe)?
        .into_iter()
        .filter_map(|k| match k {
            OwnedKey::Name(name) => Some(name.into_string()),
            OwnedKey::Id(_) => None,
        })
        .collect())
}

/// Where one value of the earlier layout goes: (counter, column, row key); `None` for
/// a key or column that layout never wrote.
fn old_place(
    counter: &str,
    key: &str,
    column: &str,
) -> Option<(&'static str, &'static str, String)> {
    let parts: Vec<&str> = key.split(':').collect();
    match (counter, parts.as_slice()) {
        (OLD_VISITS, [id, day, kind]) if column == COLUMN => {
            let column = match *kind {
                "p" => PEOPLE,
                "b" => BOTS,
                _ => return None,
            };
            Some((
                DAILY,
                column,
                format!("{}:{}", id.parse::<u64>().ok()?, day.parse::<u64>().ok()?),
            ))
        }
        (OLD_SLOTS, [id, tag]) => {
            let dim = Dim::from_tag(single_char(tag)?)?;
            let slot: usize = column.strip_prefix('s')?.parse().ok()?;
            (slot < SLOTS_PER_DIM).then_some(())?;
            Some((
                TOTALS,
                owner_name(owner_column(dim, slot)),
                total_key(id.parse().ok()?),
            ))
        }
        (OLD_STATS, [id, day, tag_slot]) if column == COLUMN => {
            let mut chars = tag_slot.chars();
            let dim = Dim::from_tag(chars.next()?)?;
            let slot: usize = chars.as_str().parse().ok()?;
            (slot <= SLOTS_PER_DIM).then_some(())?;
            Some((
                DAILY,
                day_name(day_column(dim, slot)),
                format!("{}:{}", id.parse::<u64>().ok()?, day.parse::<u64>().ok()?),
            ))
        }
        _ => None,
    }
}

/// The one character of `text`, if it has exactly one.
fn single_char(text: &str) -> Option<char> {
    let mut chars = text.chars();
    let c = chars.next()?;
    chars.next().is_none().then_some(c)
}

/// The number a label is known by in [`TOTALS`]: nonzero, at most the engine's largest value.
pub fn label_hash(dim: Dim, label: &str) -> u64 {
    // XXH3 of `<tag>:<label>`, stored in owner rows: it must never change. Streamed in
    // two parts (the same digest as one buffer) so no buffer is built.
    let mut hasher = xxhash_rust::xxh3::Xxh3Default::new();
    hasher.update(&[dim.tag() as u8, b':']);
    hasher.update(label.as_bytes());
    (hasher.digest() & shardkit_counters::MAX_VALUE).max(1)
}

/// The [`TOTALS`] row of a link.
pub fn total_key(id: u64) -> String {
    id_and(id, "t")
}

/// `<id>:<tail>`, written with `itoa`: a first click makes three such keys, and
/// `format!` took ~1,000 instructions for each (callgrind, `examples/analytics_flush`).
fn id_and(id: u64, tail: &str) -> String {
    let mut key = String::with_capacity(20 + 1 + tail.len());
    push_id_and(&mut key, id, tail);
    key
}

/// Appends `<id>:<tail>` to `text`.
fn push_id_and(text: &mut String, id: u64, tail: &str) {
    text.push_str(itoa::Buffer::new().format(id));
    text.push(':');
    text.push_str(tail);
}

/// Row keys of one write side by side in one string: a flush of thousands of new
/// links allocates one buffer for its owner or day keys, not a `String` a key (each
/// was a `malloc` and a `free` of a first click's flush, callgrind).
#[derive(Debug, Default)]
pub(crate) struct KeyText {
    text: String,
    ends: Vec<usize>,
}

impl KeyText {
    /// Room for `n` keys of about `<id>:<day>`'s length.
    pub(crate) fn with_capacity(n: usize) -> KeyText {
        KeyText {
            text: String::with_capacity(n * 26),
            ends: Vec::with_capacity(n),
        }
    }

    /// Adds the key `<id>:<tail>`.
    fn push(&mut self, id: u64, tail: &str) {
        push_id_and(&mut self.text, id, tail);
        self.ends.push(self.text.len());
    }

    /// Adds [`total_key`]`(id)`.
    pub(crate) fn push_total(&mut self, id: u64) {
        self.push(id, "t");
    }

    /// Adds [`day_key`]`(id, day)`.
    pub(crate) fn push_day(&mut self, id: u64, day: u64) {
        self.push(id, itoa::Buffer::new().format(day));
    }

    /// Key `i`, in the order pushed.
    pub(crate) fn get(&self, i: usize) -> &str {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.text[start..self.ends[i]]
    }

    /// Every key, in the order pushed.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &str> {
        (0..self.ends.len()).map(|i| self.get(i))
    }
}

/// The [`DAILY`] row of a link and day (`clicks::DAILY_COUNTER` is the same counter:
/// the clicks and the analytics share the row).
pub fn day_key(id: u64, day: u64) -> String {
    id_and(id, itoa::Buffer::new().format(day))
}

/// The [`DAILY`] (and [`TOTALS`]) column of every counted click, by position.
pub const CLICKS_AT: usize = 0;
/// The [`DAILY`] column of people's clicks, by position.
pub const PEOPLE_AT: usize = 1;
/// The [`DAILY`] column of bots' clicks, by position.
pub const BOTS_AT: usize = 2;
/// The [`TOTALS`] column of the first owner column ([`owner_column`] 0), by position.
const FIRST_OWNER_AT: usize = 1;

/// The [`DAILY`] rows of `keys`, each as its values in column order, by column
/// name (0 for a row or a column not stored).
pub fn day_rows(engine: &Engine, keys: &[String]) -> Result<Vec<Vec<u64>>, Error> {
    let parsed: Vec<Key<'_>> = keys.iter().map(|k| Key::Name(k)).collect();
    let (names, rows) = engine.mget_rows(DAILY, &parsed)?;
    let place: Vec<Option<usize>> = names
        .iter()
        .map(|n| DAY_NAMES.iter().position(|d| d == n))
        .collect();
    Ok(rows
        .into_iter()
        .map(|values| {
            let mut row = vec![0; DAY_COLUMNS];
            for (at, value) in place.iter().zip(values) {
                if let Some(i) = at {
                    row[*i] = value;
                }
            }
            row
        })
        .collect())
}

/// The `site_stats` row of a label on a day.
pub fn site_key(day: u64, dim: Dim, label: &str) -> String {
    format!("{day}:{}:{label}", dim.tag())
}

/// Labels by hash and the owner rows read so far.
#[derive(Debug, Default)]
pub struct Labels {
    inner: Mutex<LabelsInner>,
}

/// Owner rows a write leaves allocated for the next: made anew each flush, the rows of
/// a flush of thousands of new links were fresh pages the kernel zero-filled (0.3 µs
/// of a first click at 100 M links when a row was 640 bytes, bench/notes/runs.md); past
/// this many a flush's rows are freed instead (an import's analytics).
const KEPT_OWNER_ROWS: usize = 16_384;

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
type OwnerRow = smallvec::SmallVec<[u64; DIMS]>;

/// The owner in column `column` of `row` (0: free).
#[inline]
fn owner_at(row: &[u64], column: usize) -> u64 {
    row.get(column).copied().unwrap_or(0)
}

/// Sets the owner in column `column` of `row`, widening it to that column.
fn set_owner(row: &mut OwnerRow, column: usize, hash: u64) {
    if row.len() <= column {
        row.resize(column + 1, 0);
    }
    row[column] = hash;
}

/// Owner rows of the links of one write, by link id (the rows side by side, so the
/// map moves small entries). The writer keeps one from write to write ([`write()`];
/// up to `KEPT_OWNER_ROWS`, 16,384) so a flush reuses the last one's rows.
#[derive(Default)]
pub struct OwnerRows {
    at: HashMap<u64, usize, FastHash>,
    rows: Vec<OwnerRow>,
    /// Links whose stored row could not be read (a damaged cold block): which slots
    /// they hold is unknown, so no write gives them one.
    unreadable: HashSet<u64, FastHash>,
    /// Why the first of `unreadable` could not be read.
    unreadable_why: Option<Error>,
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
    fn get(&self, id: u64) -> &[u64] {
        self.at.get(&id).map_or(&[], |&i| &self.rows[i])
    }

    /// The row of `id`, made all free if absent.
    fn get_mut(&mut self, id: u64) -> &mut OwnerRow {
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
    fn owner_rows(
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
    fn forget_owners(&self, new: &[NewSlot]) {
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
    fn learn(&self, id: u64, row: &[u64], new: &[NewSlot]) {
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
struct NewSlot {
    id: u64,
    dim: Dim,
    /// Its [`TOTALS`] column.
    column: usize,
    hash: u64,
    label: Arc<str>,
}

/// Counted clicks of one flush (the click book's, `links::clicks`), written into the
/// rows the analytics write: a link's first click makes its two rows once, not four.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Clicks {
    /// `(link id, clicks)`, each link once: added to its [`TOTALS`] `clicks`.
    pub totals: Vec<(u64, u64)>,
    /// `(link id, day, clicks)`, each link and day once: added to its [`DAILY`] `clicks`.
    pub days: Vec<(u64, u64, u64)>,
}

impl Clicks {
    /// No click to write.
    pub fn is_empty(&self) -> bool {
        self.totals.is_empty() && self.days.is_empty()
    }
}

/// Classified clicks a [`write()`] is to store: the new ones, and what an earlier
/// write stopped before storing ([`Written::backlog`]), kept apart by how far they got
/// so that a retry stores each part once.
#[derive(Debug, Default, Clone)]
pub struct Backlog {
    /// Clicks none of whose rows were written: their day rows and site rows to write.
    pub tally: Tally,
    /// Clicks whose site rows are counted already (written, or in `site`) but whose
    /// day rows were not written: their day rows only (their slots were given out).
    pub day_only: Tally,
    /// [`SITE`] rows and the counts not written to them yet.
    pub site: HashMap<String, u64, FastHash>,
}

impl Backlog {
    /// Nothing to write.
    pub fn is_empty(&self) -> bool {
        self.tally.is_empty() && self.day_only.is_empty() && self.site.is_empty()
    }

    /// Adds `other` to this backlog, each part to its own.
    pub fn merge(&mut self, other: Backlog) {
        self.tally.merge(other.tally);
        self.day_only.merge(other.day_only);
        for (key, n) in other.site {
            *self.site.entry(key).or_default() += n;
        }
    }
}

impl From<Tally> for Backlog {
    fn from(tally: Tally) -> Backlog {
        Backlog {
            tally,
            ..Backlog::default()
        }
    }
}

/// What a [`write()`] did not store, for the caller to keep and hand to the next one:
/// exact, so that the retry adds nothing twice.
#[derive(Debug, Default)]
pub struct Written {
    /// Clicks added nowhere: those of the rows the engine refused one by one and,
    /// when the write stopped, those of the rows it did not reach.
    pub left: Clicks,
    /// Analytics not stored because the write stopped (empty otherwise: the analytics
    /// of a row refused one by one are dropped, and logged).
    pub backlog: Backlog,
    /// Why the first row was refused (`None`: no row was).
    pub refused: Option<Error>,
    /// The whole engine call the write stopped at (a follower's engine, a failed log):
    /// what the calls before it stored is committed and not owed again. Or the commit
    /// that failed: then the log refuses every later write, and nothing is owed.
    pub stopped: Option<Error>,
}

/// Writes `clicks` and `backlog` to the engine (durable when this returns): new slot
/// owners first (their labels, then the slots), then the counts, all made durable by
/// one commit at the end (one fsync a flush): the log keeps records in the order they
/// were appended and a crash loses only a suffix of them, so a count is never kept
/// without its slot's owner, nor an owner without its label. A link and day's clicks
/// and analytics go to its one [`DAILY`] row in one write. Callers serialize writes;
/// `owners` is the rows the last write left (emptied here, freed at the end past
/// `KEPT_OWNER_ROWS`).
///
/// Nothing is written twice by a caller that keeps what [`Written`] hands back and
/// retries it: a row the engine refuses (its cold block cannot be read) is left out
/// and the rest written, its clicks handed back; a whole engine call refused stops the
/// write there, and every click and count the calls before it did not store is handed
/// back, split by how far it got ([`Backlog`]).
pub fn write(
    engine: &Engine,
    labels: &Labels,
    backlog: &Backlog,
    clicks: &Clicks,
    owners: &mut OwnerRows,
) -> Written {
    let mut out = Written::default();
    let mut newest = Pending::NONE;
    let with_labels =
        |(&(id, _), d): (&(u64, u64), &super::LinkDay)| d.labels().next().is_some().then_some(id);
    let ids = backlog
        .tally
        .days
        .iter()
        .chain(&backlog.day_only.days)
        .filter_map(with_labels);
    if let Err(e) = labels.owner_rows(engine, ids, owners) {
        out.left = clicks.clone();
        out.backlog = backlog.clone();
        return stop(engine, newest, out, e);
    }
    if let Some(e) = owners.unreadable_why.take() {
        out.refused.get_or_insert(e);
    }
    // A link's new slots are pushed together (its day's labels in one go), so they
    // reach the owner rows grouped by link without a sort.
    let mut new_slots: Vec<NewSlot> = Vec::new();
    let rows_hint = backlog.tally.days.len() + backlog.day_only.days.len();
    // Each day row's key and its counts by column (a few each: a plain list, summed in
    // place), in the tally's order.
    let mut keys = KeyText::with_capacity(rows_hint.max(clicks.days.len()));
    let mut by_row: Vec<DayCounts> = Vec::with_capacity(rows_hint.max(clicks.days.len()));
    // The counted clicks' rows first; the analytics of the same link and day join them.
    let mut row_at: HashMap<(u64, u64), usize, FastHash> = HashMap::default();
    row_at.reserve(clicks.days.len());
    for &(id, day, n) in &clicks.days {
        row_at.insert((id, day), by_row.len());
        keys.push_day(id, day);
        by_row.push(smallvec::smallvec![(CLICKS_AT, clamp(n))]);
    }
    // Site rows by (day, dimension, label hash; 0 for `other`), with the label: few
    // distinct ones, their keys made once, found by number (not by hashing and
    // comparing the label's text, a click's every label).
    let mut site_labels: HashMap<(u64, Dim, u64), (u64, &str), FastHash> = HashMap::default();
    let mut people_by_day: HashMap<u64, u64, FastHash> = HashMap::default();
    // Label hashes by (dimension, the tally's one copy of the label): a flush's labels
    // are few, its (link, label) pairs many.
    let mut hashes: HashMap<(Dim, usize), u64, FastHash> = HashMap::default();
    // A day row met twice (in both tallies) is found again only when there are two.
    let two_tallies = !backlog.day_only.is_empty();
    for (tally, counts_site) in [(&backlog.tally, true), (&backlog.day_only, false)] {
        for (&(id, day), link_day) in &tally.days {
            let mut counts = DayCounts::new();
            if link_day.people > 0 {
                add_count(&mut counts, PEOPLE_AT, clamp(link_day.people));
                if counts_site {
                    *people_by_day.entry(day).or_default() += link_day.people;
                }
            }
            if link_day.bots > 0 {
                add_count(&mut counts, BOTS_AT, clamp(link_day.bots));
            }
            // The owner row only for a link with labels (bots' clicks have none). A
            // link whose row cannot be read has its labels dropped, as a refused row's
            // are: which slots it holds is unknown.
            let mut labelled = link_day.labels().peekable();
            if labelled.peek().is_some()
                && (owners.unreadable.is_empty() || !owners.unreadable.contains(&id))
            {
                let row = owners.get_mut(id);
                for (dim, label, n) in labelled {
                    let hash = *hashes
                        .entry((dim, Arc::as_ptr(label) as *const u8 as usize))
                        .or_insert_with(|| label_hash(dim, label));
                    let column = |slot| owner_column(dim, slot);
                    // The slots the row holds; those past its end are free.
                    let held = (0..SLOTS_PER_DIM).take_while(|&s| column(s) < row.len());
                    let slot = match held.clone().find(|&s| row[column(s)] == hash) {
                        Some(slot) => slot,
                        None => match (0..SLOTS_PER_DIM)
                            .find(|&s| column(s) >= row.len() || row[column(s)] == 0)
                        {
                            Some(free) => {
                                set_owner(row, column(free), hash);
                                new_slots.push(NewSlot {
                                    id,
                                    dim,
                                    column: column(free),
                                    hash,
                                    label: Arc::clone(label),
                                });
                                free
                            }
                            None => SLOTS_PER_DIM,
                        },
                    };
                    add_count(&mut counts, day_column(dim, slot), clamp(n));
                    if counts_site {
                        let (site_hash, site_label) = match slot {
                            SLOTS_PER_DIM => (0, OTHER),
                            _ => (hash, &**label),
                        };
                        site_labels
                            .entry((day, dim, site_hash))
                            .or_insert((0, site_label))
                            .0 += n;
                    }
                }
            }
            if counts.is_empty() {
                continue;
            }
            match row_at.get(&(id, day)) {
                // Columns apart from the clicks': no sum needed, unless both tallies
                // count this row (a search a column, ~300 instructions a click).
                Some(&i) if !two_tallies => by_row[i].extend(counts),
                Some(&i) => {
                    for (column, n) in counts {
                        add_count(&mut by_row[i], column, n);
                    }
                }
                None => {
                    if two_tallies {
                        row_at.insert((id, day), by_row.len());
                    }
                    keys.push_day(id, day);
                    by_row.push(counts);
                }
            }
        }
    }
    let mut site: HashMap<String, u64, FastHash> = site_labels
        .into_iter()
        .map(|((day, dim, _), (n, label))| (site_key(day, dim, label), n))
        .collect();
    for (day, people) in people_by_day {
        *site.entry(format!("{day}:p")).or_default() += people;
    }
    for (key, n) in &backlog.site {
        *site.entry(key.clone()).or_default() += n;
    }
    if !new_slots.is_empty() {
        // Summed per label: a flush of many new links gives each label once. A write
        // stopped after these were counted counts them again when retried: a label's
        // count only says that some slot took it.
        let mut label_counts: HashMap<(Dim, &str), u64, FastHash> = HashMap::default();
        for s in &new_slots {
            *label_counts.entry((s.dim, &*s.label)).or_default() += 1;
        }
        let label_keys: Vec<(String, u64)> = label_counts
            .into_iter()
            .map(|((dim, label), n)| (format!("{}:{label}", dim.tag()), n))
            .collect();
        match incr_column(engine, LABELS, &label_keys, &mut out.refused, &mut 0) {
            Ok(pending) => newest = newest.max(pending),
            Err(e) => {
                out.left = clicks.clone();
                out.backlog = backlog.clone();
                labels.forget_owners(&new_slots);
                return stop(engine, newest, out, e);
            }
        }
    }
    // Each link's total row, written once for all its columns: its clicks added, its
    // new slot owners set (a link's first click makes the row once, with every column,
    // not once and then again to widen it). Every key in one string: no allocation a
    // link.
    let mut total_at: HashMap<u64, usize, FastHash> = HashMap::default();
    total_at.reserve(clicks.totals.len());
    let mut total_ids: Vec<u64> = Vec::with_capacity(clicks.totals.len());
    let mut total_items: Vec<TotalItems> = Vec::with_capacity(clicks.totals.len());
    for &(id, n) in &clicks.totals {
        total_at.insert(id, total_items.len());
        total_ids.push(id);
        total_items.push(smallvec::smallvec![(CLICKS_AT, RowOp::Add(clamp(n)))]);
    }
    // A link's new slots side by side: its total row looked up once for them all.
    for new in new_slots.chunk_by(|a, b| a.id == b.id) {
        let id = new[0].id;
        let i = match total_at.get(&id) {
            Some(&i) => i,
            None => {
                total_at.insert(id, total_items.len());
                total_ids.push(id);
                total_items.push(TotalItems::new());
                total_items.len() - 1
            }
        };
        total_items[i].extend(
            new.iter()
                .map(|s| (FIRST_OWNER_AT + s.column, RowOp::Set(s.hash))),
        );
    }
    let mut total_keys = KeyText::with_capacity(total_ids.len());
    for &id in &total_ids {
        total_keys.push_total(id);
    }
    let rows: Vec<(Key<'_>, &[(usize, RowOp)])> = total_keys
        .iter()
        .zip(&total_items)
        .map(|(key, items)| (Key::Name(key), items.as_slice()))
        .collect();
    let mut results = Vec::new();
    // Links whose total row was refused: the owners the write gave them are not stored.
    // (A set: a damaged block may refuse thousands of a flush's links.)
    let mut refused_links: HashSet<u64, FastHash> = HashSet::default();
    for (k, run) in rows.chunks(RUN).enumerate() {
        before_call(engine);
        match engine.update_rows(TOTALS, &TOTAL_NAME_REFS, run, &mut results) {
            Ok(pending) => newest = newest.max(pending),
            Err(e) => {
                // The runs before are stored; the owners they set are read again by
                // the retry (the cache forgets them), which finds them taken.
                out.left
                    .totals
                    .extend_from_slice(&clicks.totals[(k * RUN).min(clicks.totals.len())..]);
                out.left.days = clicks.days.clone();
                out.backlog = backlog.clone();
                labels.forget_owners(&new_slots);
                return stop(engine, newest, out, e);
            }
        }
        // The first rows are the counted clicks', in their order.
        for i in refused_rows(run, &mut results, &mut out.refused) {
            refused_links.insert(total_ids[k * RUN + i]);
            if let Some(&total) = clicks.totals.get(k * RUN + i) {
                out.left.totals.push(total);
            }
        }
    }
    for new in new_slots.chunk_by(|a, b| a.id == b.id) {
        if refused_links.contains(&new[0].id) {
            labels.forget_owners(new);
        } else {
            labels.learn(new[0].id, owners.get(new[0].id), new);
        }
    }
    if !refused_links.is_empty() {
        leave_out_unowned(&keys, &mut by_row, &new_slots, &refused_links);
    }
    // Each day row's counts together: the engine looks a row up and writes it once
    // for all its columns.
    let rows: Vec<(Key<'_>, &[(usize, i64)])> = keys
        .iter()
        .zip(&by_row)
        .map(|(key, items)| (Key::Name(key), items.as_slice()))
        .collect();
    for (k, run) in rows.chunks(RUN).enumerate() {
        before_call(engine);
        match engine.incr_rows(DAILY, &DAY_NAME_REFS, run, &mut results) {
            Ok(pending) => newest = newest.max(pending),
            Err(e) => {
                // The totals and the day rows before are stored; the site rows not yet.
                out.left
                    .days
                    .extend_from_slice(&clicks.days[(k * RUN).min(clicks.days.len())..]);
                out.backlog.day_only = unwritten_days(&keys, k * RUN, backlog);
                out.backlog.site = site;
                return stop(engine, newest, out, e);
            }
        }
        // As above: the counted clicks' day rows first, in their order.
        for i in refused_rows(run, &mut results, &mut out.refused) {
            if let Some(&day) = clicks.days.get(k * RUN + i) {
                out.left.days.push(day);
            }
        }
    }
    let site: Vec<(String, u64)> = site.into_iter().collect();
    let mut from = 0;
    match incr_column(engine, SITE, &site, &mut out.refused, &mut from) {
        Ok(pending) => newest = newest.max(pending),
        Err(e) => {
            out.backlog.site = site[from..].iter().cloned().collect();
            return stop(engine, newest, out, e);
        }
    }
    if let Err(e) = engine.commit(newest) {
        tracing::error!(error = %e, "click rows could not be made durable; the counter log takes no more writes");
        out.stopped = Some(e);
        return out;
    }
    if let Some(e) = out.refused.as_ref().filter(|_| REFUSED_LOG.due()) {
        tracing::warn!(
            totals = out.left.totals.len(),
            days = out.left.days.len(),
            error = %e,
            "click rows refused by the counter engine; their clicks are kept for the next flush"
        );
    }
    if owners.rows.capacity() > KEPT_OWNER_ROWS {
        *owners = OwnerRows::default();
    }
    out
}

/// When a refused row was last logged: a damaged row is retried every flush, and
/// logged once a minute.
static REFUSED_LOG: shardkit_util::log_every::LogEvery =
    shardkit_util::log_every::LogEvery::minute();

/// Ends a write stopped by `e` at a whole engine call: what the calls before it
/// stored (behind `newest`) is committed, so that what `out` does not hand back is
/// durable as a finished write's would be.
fn stop(engine: &Engine, newest: Pending, mut out: Written, e: Error) -> Written {
    if let Err(commit) = engine.commit(newest) {
        tracing::error!(error = %commit, "the part of a click write stored before it stopped could not be made durable");
    }
    // The caller reports `stopped` (the click flusher: once, then once a minute).
    out.stopped = Some(e);
    out
}

/// The analytics of the day rows `keys[from..]` (not written), for their day rows
/// only: their site rows are counted in the write's site map.
fn unwritten_days(keys: &KeyText, from: usize, backlog: &Backlog) -> Tally {
    let mut left = Tally::default();
    for key in (from..keys.ends.len()).map(|i| keys.get(i)) {
        let Some((id, day)) = parse_day_key(key) else {
            continue;
        };
        for tally in [&backlog.tally, &backlog.day_only] {
            if let Some(link_day) = tally.days.get(&(id, day)) {
                left.add_visits(id, day, link_day.people, link_day.bots);
                for (dim, label, n) in link_day.labels() {
                    left.add_label(id, day, dim, label, n);
                }
            }
        }
    }
    left
}

/// The link and day of a [`DAILY`] row key (`<id>:<day>`, [`day_key`]): a failure
/// path reads them back from the write's keys rather than keep a list beside them.
fn parse_day_key(key: &str) -> Option<(u64, u64)> {
    let (id, day) = key.split_once(':')?;
    Some((id.parse().ok()?, day.parse().ok()?))
}

/// Takes out of the day rows of `refused` links (whose [`TOTALS`] row the engine
/// refused) the counts of the slots this write gave them: their owners were not
/// stored, so those counts would read as nobody's, and a later write may give the
/// slots to other labels. They are dropped, as a refused row's analytics are (and
/// logged with it); the rows' other columns (clicks, people, bots, slots already
/// owned) are written.
fn leave_out_unowned(
    keys: &KeyText,
    by_row: &mut [DayCounts],
    new_slots: &[NewSlot],
    refused: &HashSet<u64, FastHash>,
) {
    // A slot's day column is its owner column's place after the day row's first
    // columns (`day_column`, `owner_column`).
    let unowned: HashSet<(u64, usize), FastHash> = new_slots
        .iter()
        .filter(|s| refused.contains(&s.id))
        .map(|s| (s.id, DAY_FIRST_SLOT + s.column))
        .collect();
    for (i, counts) in by_row.iter_mut().enumerate() {
        match parse_day_key(keys.get(i)) {
            Some((id, _)) if refused.contains(&id) => {
                counts.retain(|(column, _)| !unowned.contains(&(id, *column)));
            }
            _ => {}
        }
    }
}

/// Test hook: makes the engine refuse writes (a follower's engine) before this
/// thread's write's `n`th engine write call from now (0: the next), so that a test
/// can stop a write between any two of its calls.
#[cfg(test)]
pub(crate) fn stop_before_call(n: Option<usize>) -> Option<usize> {
    STOP_BEFORE_CALL.with(|at| at.replace(n))
}

#[cfg(test)]
thread_local! {
    /// See [`stop_before_call`].
    static STOP_BEFORE_CALL: std::cell::Cell<Option<usize>> = const { std::cell::Cell::new(None) };
}

/// Where a [`write()`] may be stopped by [`stop_before_call`]: before each engine
/// write call.
#[cfg(test)]
fn before_call(engine: &Engine) {
    STOP_BEFORE_CALL.with(|at| match at.get() {
        Some(0) => {
            engine.set_read_only(true);
            at.set(None);
        }
        Some(n) => at.set(Some(n - 1)),
        None => {}
    });
}

/// Where a [`write()`] may be stopped in tests: nothing here.
#[cfg(not(test))]
fn before_call(_: &Engine) {}

/// One link's total row items of a flush: its clicks added and its new slot owners
/// set (one a dimension, most often).
type TotalItems = smallvec::SmallVec<[(usize, RowOp); 1 + DIMS]>;

/// One day row's counts of a flush, `(column, count)`: people, bots and a slot of
/// each dimension seen, most often.
type DayCounts = smallvec::SmallVec<[(usize, i64); 8]>;

/// Adds `n` to `column` in `counts` (two values past a link's slots share `other`).
fn add_count(counts: &mut DayCounts, column: usize, n: i64) {
    match counts.iter_mut().find(|(c, _)| *c == column) {
        Some((_, sum)) => *sum = sum.saturating_add(n),
        None => counts.push((column, n)),
    }
}

/// Rows (day rows) or increments (one column) handed to the engine at once (its
/// stripes stay locked that long).
const RUN: usize = 1024;

/// A count as the engine's delta.
fn clamp(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// The rows of `run` (indices) the engine refused for a reason other than a value,
/// from its `results` (one an item, rows in order), keeping the first such error in
/// `first`. Value refusals (below zero, past a column's max) leave that value as it
/// was, as `incr_batch` does; a row refused otherwise (its cold block unreadable)
/// changed nothing.
fn refused_rows<T>(
    run: &[(Key<'_>, &[T])],
    results: &mut Vec<Result<u64, Error>>,
    first: &mut Option<Error>,
) -> Vec<usize> {
    let mut rows = Vec::new();
    let mut results = results.drain(..);
    for (i, (_, items)) in run.iter().enumerate() {
        let mut whole = true;
        for result in results.by_ref().take(items.len()) {
            match result {
                Ok(_) | Err(Error::Negative { .. } | Error::TooLarge { .. }) => {}
                Err(e) => {
                    whole = false;
                    first.get_or_insert(e);
                }
            }
        }
        if !whole {
            rows.push(i);
        }
    }
    rows
}

/// Adds each `(row key, count)` to [`COLUMN`] of `counter`, not yet durable (the
/// write's one commit covers them), in runs of [`RUN`]. A key the engine refuses (a
/// label past its 1,024 bytes) or a count past the column's max is left out, as
/// `incr_batch` leaves it; a row refused otherwise (its cold block unreadable) is left
/// out too, its error kept in `refused` if it is the first. `Err` is a whole call
/// refused: the items from `reached` on are not stored, those before it are.
fn incr_column(
    engine: &Engine,
    counter: &str,
    items: &[(String, u64)],
    refused: &mut Option<Error>,
    reached: &mut usize,
) -> Result<Pending, Error> {
    let mut newest = Pending::NONE;
    let mut results = Vec::new();
    for (k, run) in items.chunks(RUN).enumerate() {
        let run: Vec<(Key<'_>, i64)> = run
            .iter()
            .map(|(key, n)| (Key::Name(key), clamp(*n)))
            .collect();
        *reached = k * RUN;
        before_call(engine);
        let pending = engine.incr_run(counter, COLUMN, &run, &mut results)?;
        newest = newest.max(pending);
        for result in results.drain(..) {
            match result {
                Ok(_) | Err(Error::BadKey(_) | Error::Negative { .. } | Error::TooLarge { .. }) => {
                }
                Err(e) => {
                    refused.get_or_insert(e);
                }
            }
        }
    }
    Ok(newest)
}

/// Test helper: damages the first block of every cold file in `dir` (as
/// counters/tests/cold_names.rs does), so that the rows it holds are refused; answers
/// how many files it damaged.
#[cfg(test)]
pub(crate) fn damage_cold_blocks(dir: &std::path::Path) -> usize {
    let mut damaged = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if name.starts_with("cold-") && name.ends_with(".blk") {
            let mut bytes = std::fs::read(&path).unwrap();
            for b in &mut bytes[40..48] {
                *b ^= 0x5A;
            }
            std::fs::write(&path, &bytes).unwrap();
            damaged += 1;
        }
    }
    damaged
}

#[cfg(test)]
mod tests {
    use super::*;

    /// [`write()`] of `tally` and `clicks`, which must store every row.
    fn write_whole(engine: &Engine, labels: &Labels, tally: Tally, clicks: &Clicks) {
        let written = write(
            engine,
            labels,
            &Backlog::from(tally),
            clicks,
            &mut OwnerRows::default(),
        );
        assert!(
            written.stopped.is_none() && written.refused.is_none(),
            "{written:?}"
        );
    }

    /// The row keys are part of the files on disk (docs/design.md): `<id>:t` and
    /// `<id>:<day>`, the numbers in decimal, the largest id included.
    #[test]
    fn row_keys_are_the_id_a_colon_and_t_or_the_day() {
        assert_eq!(total_key(7), "7:t");
        assert_eq!(day_key(7, 20_418), "7:20418");
        assert_eq!(day_key(0, 0), "0:0");
        assert_eq!(total_key(u64::MAX), format!("{}:t", u64::MAX));
        // The write spells them in one shared string: the same keys.
        let mut keys = KeyText::with_capacity(2);
        keys.push_total(7);
        keys.push_day(u64::MAX, 20_418);
        keys.push_day(0, 0);
        let spelled: Vec<&str> = keys.iter().collect();
        assert_eq!(
            spelled,
            [total_key(7), day_key(u64::MAX, 20_418), day_key(0, 0)]
        );
        assert_eq!(
            day_key(u64::MAX, u64::MAX),
            format!("{}:{}", u64::MAX, u64::MAX)
        );
    }

    /// One damaged cold block must not stop the others' clicks, nor leave counts in
    /// slots nobody owns. Links whose rows went cold and were damaged: (1) with their
    /// owner rows cached, a new label's slot is given in the write but the total row
    /// that would name its owner is refused: the day row must not count that slot;
    /// (2) without a cache, the owner row cannot be read: the write goes on for every
    /// other link (it stopped whole, and was retried and refused every flush, holding
    /// every click in memory), and the damaged links' clicks are handed back.
    #[test]
    fn a_damaged_block_costs_only_its_own_links_analytics() {
        const LINKS: u64 = 4_000;
        let dir = tempfile::tempdir().unwrap();
        let options = || shardkit_counters::Options {
            snapshot_log_bytes: None,
            ..shardkit_counters::Options::default()
        };
        let labelled = |day: u64, label: &str| {
            let mut tally = Tally::default();
            for id in 0..LINKS {
                tally.add_visits(id, day, 1, 0);
                tally.add_label(id, day, Dim::Referrer, label, 1);
            }
            tally
        };
        let clicks = |day: u64| Clicks {
            totals: (0..LINKS).map(|id| (id, 1)).collect(),
            days: (0..LINKS).map(|id| (id, day, 1)).collect(),
        };
        // Day 100 written twice: the second write reads the owner rows and caches them.
        let cached = Labels::default();
        {
            let engine = Engine::open(dir.path(), options()).unwrap();
            ensure_counters(&engine).unwrap();
            write_whole(&engine, &cached, labelled(100, "a.example"), &clicks(100));
            write_whole(&engine, &cached, labelled(100, "a.example"), &clicks(100));
            engine.evict(std::time::Duration::ZERO).unwrap();
            engine.snapshot().unwrap();
        }
        assert!(damage_cold_blocks(dir.path()) > 0, "the rows went cold");
        let engine = Engine::open(dir.path(), options()).unwrap();
        let value = |counter: &str, key: &str, column: &str| {
            engine.get(counter, Key::Name(key), column).ok()
        };
        let r = |slot| DAY_NAMES[day_column(Dim::Referrer, slot)].as_str();
        // (1) b.example takes slot 1 of each link, from the cached owner rows.
        let written = write(
            &engine,
            &cached,
            &Backlog::from(labelled(101, "b.example")),
            &Clicks::default(),
            &mut OwnerRows::default(),
        );
        assert!(written.stopped.is_none(), "{:?}", written.stopped);
        assert!(written.refused.is_some(), "the damaged rows were refused");
        let damaged: Vec<u64> = (0..LINKS)
            .filter(|&id| value(TOTALS, &total_key(id), CLICKS).is_none())
            .collect();
        assert!(
            !damaged.is_empty() && damaged.len() < LINKS as usize / 2,
            "{} of {LINKS} damaged",
            damaged.len()
        );
        // A day row may be damaged too (its key among a damaged block's): then it
        // reads as an error (`None`), its counts refused with it.
        let mut counted = 0;
        for id in 0..LINKS {
            let day = day_key(id, 101);
            if damaged.contains(&id) {
                assert_eq!(value(DAILY, &day, r(1)).unwrap_or(0), 0, "link {id}");
            } else {
                let slot = value(DAILY, &day, r(1));
                assert_ne!(slot, Some(0), "link {id}");
                counted += usize::from(slot == Some(1));
                assert_eq!(value(TOTALS, &total_key(id), CLICKS), Some(2));
            }
        }
        assert!(counted > LINKS as usize / 2, "{counted} counted");
        // (2) No cache: the damaged links' owner rows cannot be read. (The labels load
        // though one of theirs is damaged too.)
        let fresh = Labels::load(&engine).expect("the readable labels");
        let mut owners = OwnerRows::default();
        let mut written = write(
            &engine,
            &fresh,
            &Backlog::from(labelled(102, "a.example")),
            &clicks(102),
            &mut owners,
        );
        assert!(written.stopped.is_none(), "{:?}", written.stopped);
        assert!(written.refused.is_some());
        let left: Vec<u64> = written.left.totals.iter().map(|&(id, _)| id).collect();
        assert_eq!(
            left, damaged,
            "exactly the damaged links' clicks handed back"
        );
        // Retried as a flusher does: refused again, nothing else counted twice.
        for _ in 0..2 {
            written = write(
                &engine,
                &fresh,
                &Backlog::default(),
                &written.left,
                &mut owners,
            );
            assert!(written.stopped.is_none(), "{:?}", written.stopped);
        }
        let mut counted = 0;
        for id in (0..LINKS).filter(|id| !damaged.contains(id)) {
            let day = day_key(id, 102);
            assert_eq!(value(TOTALS, &total_key(id), CLICKS), Some(3), "link {id}");
            if value(DAILY, &day, CLICKS).is_some() {
                assert_eq!(value(DAILY, &day, CLICKS), Some(1), "link {id}");
                assert_eq!(value(DAILY, &day, PEOPLE), Some(1), "link {id}");
                assert_eq!(value(DAILY, &day, r(0)), Some(1), "link {id}");
                counted += 1;
            }
        }
        assert!(counted > LINKS as usize / 2, "{counted} counted");
    }

    /// Writes rows as the earlier layout did: link 7 on day 10, three people (two from
    /// `a.example`, one from `b.example`, all Firefox) and one bot.
    fn old_rows(engine: &Engine) {
        for (counter, columns) in [
            (OLD_VISITS, vec!["clicks".to_string()]),
            (OLD_STATS, vec!["clicks".to_string()]),
            (OLD_SLOTS, (0..16).map(|i| format!("s{i}")).collect()),
        ] {
            let _ = engine.create_counter(counter);
            for column in columns {
                let opts = if counter == OLD_SLOTS {
                    ColumnOptions::new(64, 64)
                } else {
                    ColumnOptions::default()
                };
                let _ = engine.add_column(counter, &column, opts);
            }
        }
        let set = |counter: &str, key: &str, column: &str, value: u64| {
            engine.set(counter, Key::Name(key), column, value).unwrap()
        };
        set(OLD_VISITS, "7:10:p", COLUMN, 3);
        set(OLD_VISITS, "7:10:b", COLUMN, 1);
        set(
            OLD_SLOTS,
            "7:r",
            "s0",
            label_hash(Dim::Referrer, "a.example"),
        );
        set(
            OLD_SLOTS,
            "7:r",
            "s1",
            label_hash(Dim::Referrer, "b.example"),
        );
        set(OLD_SLOTS, "7:b", "s0", label_hash(Dim::Browser, "Firefox"));
        set(OLD_STATS, "7:10:r0", COLUMN, 2);
        set(OLD_STATS, "7:10:r1", COLUMN, 1);
        set(OLD_STATS, "7:10:b0", COLUMN, 3);
        // Labels are kept as they are; the site rows too.
        let _ = engine.create_counter(LABELS);
        let _ = engine.add_column(LABELS, COLUMN, ColumnOptions::default());
        for label in ["r:a.example", "r:b.example", "b:Firefox"] {
            set(LABELS, label, COLUMN, 1);
        }
    }

    /// The rows of `counter`, every stripe's.
    fn rows_in(engine: &Engine, counter: &str) -> usize {
        (0..shardkit_counters::STRIPES)
            .map(|s| engine.row_keys(counter, s).unwrap().len())
            .sum()
    }

    /// Writes rows as the four-row layout did: link 7, five clicks on day 10, four
    /// people (all from `a.example`) and one bot; link 8, two clicks and nothing else.
    fn four_rows(engine: &Engine) {
        for (counter, columns) in [
            (FOUR_TOTAL, vec![COLUMN.to_string()]),
            (FOUR_DAYS, vec![COLUMN.to_string()]),
            (FOUR_OWNERS, vec!["r0".to_string(), "b0".to_string()]),
            (
                FOUR_DAY_STATS,
                ["people", "bots", "r0", "b0"].map(String::from).to_vec(),
            ),
        ] {
            let _ = engine.create_counter(counter);
            for column in columns {
                let opts = if counter == FOUR_OWNERS {
                    ColumnOptions::new(64, 64)
                } else {
                    ColumnOptions::default()
                };
                let _ = engine.add_column(counter, &column, opts);
            }
        }
        let set = |counter: &str, key: Key<'_>, column: &str, value: u64| {
            engine.set(counter, key, column, value).unwrap()
        };
        set(FOUR_TOTAL, Key::Id(7), COLUMN, 5);
        set(FOUR_TOTAL, Key::Id(8), COLUMN, 2);
        set(FOUR_DAYS, Key::Name("7:10"), COLUMN, 5);
        set(FOUR_DAYS, Key::Name("8:10"), COLUMN, 2);
        let a = label_hash(Dim::Referrer, "a.example");
        set(FOUR_OWNERS, Key::Name("7:o"), "r0", a);
        set(FOUR_DAY_STATS, Key::Name("7:10"), "people", 4);
        set(FOUR_DAY_STATS, Key::Name("7:10"), "bots", 1);
        set(FOUR_DAY_STATS, Key::Name("7:10"), "r0", 4);
        let _ = engine.create_counter(LABELS);
        let _ = engine.add_column(LABELS, COLUMN, ColumnOptions::default());
        set(LABELS, Key::Name("r:a.example"), COLUMN, 1);
    }

    /// The four-row layout's clicks, owners and day counts read the same from the
    /// two-row one, the old counters are emptied, a move done again counts nothing
    /// twice, and new clicks add to the moved ones.
    #[test]
    fn the_four_row_layout_moves_into_two_rows_once_and_a_redo_counts_nothing_twice() {
        use super::super::clicks::ClickBook;
        use super::super::query::{self, Days};
        let dir = tempfile::tempdir().unwrap();
        let days = Days::new(10, 10).unwrap();
        let check = |engine: &Engine| {
            let labels = Labels::load(engine).unwrap();
            let book = ClickBook::default();
            assert_eq!(book.total(engine, 7), 5);
            assert_eq!(book.daily(engine, 7, &[9, 10]), [0, 5]);
            assert_eq!(book.total(engine, 8), 2);
            assert_eq!(query::link_days(engine, 7, days).unwrap(), [(10, 4, 1)]);
            assert_eq!(
                query::link_values(engine, &labels, 7, Dim::Referrer, days).unwrap(),
                [("a.example".to_string(), 4)]
            );
            for old in [FOUR_TOTAL, FOUR_DAYS, FOUR_OWNERS, FOUR_DAY_STATS] {
                assert_eq!(rows_in(engine, old), 0, "{old} emptied");
            }
        };
        {
            let engine = Engine::open(dir.path(), shardkit_counters::Options::default()).unwrap();
            four_rows(&engine);
            ensure_counters(&engine).unwrap();
            check(&engine);
            four_rows(&engine);
            assert_eq!(migrate_four_rows(&engine).unwrap(), 6);
            check(&engine);
            assert_eq!(
                migrate_four_rows(&engine).unwrap(),
                0,
                "nothing left to move"
            );
        }
        let engine = Engine::open(dir.path(), shardkit_counters::Options::default()).unwrap();
        ensure_counters(&engine).unwrap();
        check(&engine);
        let analytics = super::super::Analytics::open(&engine, None).unwrap();
        let book = ClickBook::default();
        book.hit(&engine, 7, 10, None);
        let mut tally = Tally::default();
        tally.add_visits(7, 10, 1, 0);
        tally.add_label(7, 10, Dim::Referrer, "b.example", 1);
        analytics.write(&engine, tally).unwrap();
        book.flush(&engine).unwrap();
        assert_eq!(
            query::link_values(&engine, &analytics.labels, 7, Dim::Referrer, days).unwrap(),
            [("a.example".to_string(), 4), ("b.example".to_string(), 1)]
        );
        assert_eq!(book.total(&engine, 7), 6);
        assert_eq!(book.daily(&engine, 7, &[10]), [6]);
    }

    #[test]
    fn the_earlier_layout_moves_into_owner_and_day_rows_once_and_a_redo_counts_nothing_twice() {
        use super::super::query::{self, Days};
        let dir = tempfile::tempdir().unwrap();
        let days = Days::new(10, 10).unwrap();
        let check = |engine: &Engine| {
            let labels = Labels::load(engine).unwrap();
            assert_eq!(query::link_days(engine, 7, days).unwrap(), [(10, 3, 1)]);
            assert_eq!(
                query::link_values(engine, &labels, 7, Dim::Referrer, days).unwrap(),
                [("a.example".to_string(), 2), ("b.example".to_string(), 1)]
            );
            assert_eq!(
                query::link_values(engine, &labels, 7, Dim::Browser, days).unwrap(),
                [("Firefox".to_string(), 3)]
            );
            assert_eq!(query::site_links(engine, days).unwrap(), [(7, 3)]);
            for old in [OLD_VISITS, OLD_SLOTS, OLD_STATS] {
                assert_eq!(rows_in(engine, old), 0, "{old} emptied");
            }
        };
        {
            let engine = Engine::open(dir.path(), shardkit_counters::Options::default()).unwrap();
            old_rows(&engine);
            ensure_counters(&engine).unwrap();
            check(&engine);
            // A move cut short before the old rows were emptied is done again: the
            // values are set, so nothing counts twice.
            old_rows(&engine);
            assert_eq!(migrate_old_layout(&engine).unwrap(), 7);
            check(&engine);
            assert_eq!(
                migrate_old_layout(&engine).unwrap(),
                0,
                "nothing left to move"
            );
        }
        let engine = Engine::open(dir.path(), shardkit_counters::Options::default()).unwrap();
        ensure_counters(&engine).unwrap();
        check(&engine);
        // New clicks land beside the moved ones, in the same slots.
        let analytics = super::super::Analytics::open(&engine, None).unwrap();
        let mut tally = Tally::default();
        tally.add_visits(7, 10, 1, 0);
        tally.add_label(7, 10, Dim::Referrer, "b.example", 1);
        analytics.write(&engine, tally).unwrap();
        assert_eq!(
            query::link_values(&engine, &analytics.labels, 7, Dim::Referrer, days).unwrap(),
            [("a.example".to_string(), 2), ("b.example".to_string(), 2)]
        );
        assert_eq!(query::link_days(&engine, 7, days).unwrap(), [(10, 4, 1)]);
    }

    /// A link's first click, counted and classified, makes two rows: its total row
    /// (clicks, then the owners) and its day row (clicks, people, then the slots).
    #[test]
    fn a_first_click_makes_one_total_row_and_one_day_row_holding_only_the_columns_used() {
        let dir = tempfile::tempdir().unwrap();
        let engine = Engine::open(dir.path(), shardkit_counters::Options::default()).unwrap();
        ensure_counters(&engine).unwrap();
        let labels = Labels::load(&engine).unwrap();
        let mut tally = Tally::default();
        tally.add_visits(9, 20, 1, 0);
        for (dim, label) in [
            (Dim::Referrer, "direct"),
            (Dim::Browser, "Chrome"),
            (Dim::Os, "Linux"),
            (Dim::Device, "desktop"),
        ] {
            tally.add_label(9, 20, dim, label, 1);
        }
        let clicks = Clicks {
            totals: vec![(9, 1)],
            days: vec![(9, 20, 1)],
        };
        write_whole(&engine, &labels, tally, &clicks);
        let rows = |counter: &str| -> Vec<String> {
            (0..shardkit_counters::STRIPES)
                .flat_map(|s| engine.row_keys(counter, s).unwrap())
                .map(|k| match k {
                    OwnedKey::Name(n) => n.to_string(),
                    OwnedKey::Id(id) => id.to_string(),
                })
                .collect()
        };
        assert_eq!(rows(TOTALS), ["9:t"]);
        assert_eq!(rows(DAILY), ["9:20"]);
        let day = engine.get_row(DAILY, Key::Name("9:20")).unwrap();
        let used: Vec<&str> = day
            .iter()
            .filter(|(_, v)| *v > 0)
            .map(|(c, _)| c.as_str())
            .collect();
        assert_eq!(used, ["clicks", "people", "r0", "b0", "o0", "d0"]);
        let total = engine.get_row(TOTALS, Key::Name("9:t")).unwrap();
        assert_eq!(total[0], ("clicks".to_string(), 1));
        assert_eq!(
            total[1],
            ("r0".to_string(), label_hash(Dim::Referrer, "direct"))
        );
        assert_eq!(
            total[4],
            ("d0".to_string(), label_hash(Dim::Device, "desktop"))
        );
        // A second click of the same day and a bot's of the next add to those rows.
        let mut again = Tally::default();
        again.add_visits(9, 21, 0, 1);
        let clicks = Clicks {
            totals: vec![(9, 2)],
            days: vec![(9, 20, 1), (9, 21, 1)],
        };
        write_whole(&engine, &labels, again, &clicks);
        assert_eq!(rows(TOTALS), ["9:t"]);
        assert_eq!(engine.get(TOTALS, Key::Name("9:t"), CLICKS).unwrap(), 3);
        let day = |key: &str, column: &str| engine.get(DAILY, Key::Name(key), column).unwrap();
        assert_eq!(
            (
                day("9:20", CLICKS),
                day("9:20", PEOPLE),
                day("9:21", CLICKS)
            ),
            (2, 1, 1)
        );
        assert_eq!(day("9:21", BOTS), 1);
    }

    /// A link's owner row read back from the engine (not the cache: a fresh start) goes
    /// on where it stopped: the next new value takes the last free slot, the one after
    /// it counts as `other`, and the values already owned keep their slots.
    #[test]
    fn an_owner_row_read_after_a_restart_gives_out_its_last_free_slot_then_other() {
        use super::super::query::{self, Days};
        let dir = tempfile::tempdir().unwrap();
        let host = |i: usize| format!("h{i:02}.example");
        let tally = |hosts: std::ops::Range<usize>| {
            let mut tally = Tally::default();
            for i in hosts {
                tally.add_visits(9, 20, 1, 0);
                tally.add_label(9, 20, Dim::Referrer, &host(i), 1);
            }
            tally
        };
        {
            let engine = Engine::open(dir.path(), shardkit_counters::Options::default()).unwrap();
            ensure_counters(&engine).unwrap();
            let labels = Labels::load(&engine).unwrap();
            write_whole(&engine, &labels, tally(0..15), &Clicks::default());
        }
        let engine = Engine::open(dir.path(), shardkit_counters::Options::default()).unwrap();
        ensure_counters(&engine).unwrap();
        let labels = Labels::load(&engine).unwrap();
        let mut again = tally(14..17);
        again.add_label(9, 20, Dim::Referrer, &host(0), 1);
        write_whole(&engine, &labels, again, &Clicks::default());
        let slots = labels.slots(&engine, 9, Dim::Referrer).unwrap();
        assert_eq!(slots[14], label_hash(Dim::Referrer, &host(14)));
        assert_eq!(slots[15], label_hash(Dim::Referrer, &host(15)));
        let values = query::link_values(
            &engine,
            &labels,
            9,
            Dim::Referrer,
            Days::new(20, 20).unwrap(),
        )
        .unwrap();
        let count = |name: &str| values.iter().find(|(v, _)| v == name).map(|(_, n)| *n);
        assert_eq!(count(&host(0)), Some(2), "{values:?}");
        assert_eq!(count(&host(14)), Some(2), "{values:?}");
        assert_eq!(count(&host(15)), Some(1), "{values:?}");
        assert_eq!(count(&host(16)), None, "{values:?}");
        assert_eq!(count(OTHER), Some(1), "{values:?}");
    }

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

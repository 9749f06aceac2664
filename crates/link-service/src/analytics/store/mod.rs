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
//! The layout and the code that keeps it change together (a change to one that the
//! others do not follow loses clicks), so they sit side by side in this folder:
//! - this file: the counters, their columns and places, the row keys, and
//!   [`ensure_counters`], which makes them;
//! - `migrate.rs`: the moves of the earlier layouts into these rows;
//! - `labels.rs`: which label owns each of a link's slots ([`Labels`], [`OwnerRows`])
//!   and the labels' names;
//! - `write.rs`: the one write path ([`write()`]) and what it hands back when the
//!   engine refuses part of it ([`Written`]);
//! - `engine_calls.rs`: how the write hands the engine its items (in runs, each
//!   result sorted into stored or refused), and the hooks with which tests make the
//!   engine refuse.

mod engine_calls;
mod labels;
mod migrate;
mod write;

pub use labels::{label_hash, Labels, OwnerRows};
pub use migrate::{migrate_four_rows, migrate_old_layout};
pub use write::{write, Backlog, Clicks, Written};

// The hooks with which tests make the engine refuse a write's call or rows.
#[cfg(test)]
pub(crate) use engine_calls::{damage_cold_blocks, stop_before_call};

use super::classify::Dim;
use shardkit_counters::{ColumnOptions, Engine, Error, Key, OwnedKey};
use std::sync::LazyLock;

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

/// The link and day of a [`DAILY`] row key (`<id>:<day>`, [`day_key`]): a failure
/// path reads them back from the write's keys rather than keep a list beside them.
fn parse_day_key(key: &str) -> Option<(u64, u64)> {
    let (id, day) = key.split_once(':')?;
    Some((id.parse().ok()?, day.parse().ok()?))
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

#[cfg(test)]
mod tests {
    use super::*;

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
}

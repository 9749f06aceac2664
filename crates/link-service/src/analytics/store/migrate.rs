//! The moves of the earlier layouts into the two rows per link that `mod.rs`
//! describes: run when the counters are ensured, and safe to run again (every value is
//! set, not added), so a move cut short by a crash is simply done again at the next
//! start.

use super::engine_calls::RUN;
use super::{
    day_column, day_key, day_name, name_keys, owner_column, owner_name, total_key, BOTS, COLUMN,
    DAILY, DAY_NAME_REFS, PEOPLE, SLOTS_PER_DIM, TOTALS, TOTAL_NAME_REFS,
};
use crate::analytics::classify::Dim;
use shardkit_counters::{Engine, Error, Key, OwnedKey, Pending};

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analytics::store::{ensure_counters, label_hash, Labels, LABELS};
    use crate::analytics::Tally;
    use shardkit_counters::ColumnOptions;

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
        use crate::analytics::clicks::ClickBook;
        use crate::analytics::query::{self, Days};
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
        let analytics = crate::analytics::Analytics::open(&engine, None).unwrap();
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
        use crate::analytics::query::{self, Days};
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
        let analytics = crate::analytics::Analytics::open(&engine, None).unwrap();
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
}

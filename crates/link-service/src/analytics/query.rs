//! Reading the analytics back: one link's values per dimension or its days, and the
//! site-wide tops. A link's reads are bounded (one row a day); the site-wide ones
//! walk `site_stats` or `link_day_stats` stripe by stripe.

use super::classify::Dim;
use super::store::{
    self, Labels, BOTS_AT, COLUMN, DAILY, OTHER, PEOPLE, PEOPLE_AT, SITE, SLOTS_PER_DIM,
};
use shardkit_counters::{Engine, Error, Key};
use std::collections::HashMap;

/// Most days one question may span.
pub const MAX_DAYS: u64 = 366;

/// A span of UTC days, both ends included.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Days {
    /// First day.
    pub from: u64,
    /// Last day.
    pub to: u64,
}

impl Days {
    /// The span, checked: `from` not after `to`, at most [`MAX_DAYS`] days.
    pub fn new(from: u64, to: u64) -> Result<Days, String> {
        if from > to {
            return Err("from must not be after to".into());
        }
        if to - from + 1 > MAX_DAYS {
            return Err(format!("from..to spans more than {MAX_DAYS} days"));
        }
        Ok(Days { from, to })
    }

    /// Every day of the span.
    pub fn iter(self) -> impl Iterator<Item = u64> {
        self.from..=self.to
    }

    fn holds(self, day: u64) -> bool {
        (self.from..=self.to).contains(&day)
    }
}

/// Column `column` of rows `keys` in `counter`.
fn mget(engine: &Engine, counter: &str, column: &str, keys: &[String]) -> Result<Vec<u64>, Error> {
    let parsed: Vec<Key<'_>> = keys.iter().map(|k| Key::Name(k)).collect();
    engine.mget(counter, &parsed, column)
}

/// The [`DAILY`] rows of link `id` over `days`, in order.
fn day_rows(engine: &Engine, id: u64, days: Days) -> Result<Vec<Vec<u64>>, Error> {
    let keys: Vec<String> = days.iter().map(|d| store::day_key(id, d)).collect();
    store::day_rows(engine, &keys)
}

/// People and bots of link `id` on each day of `days`, in order.
pub fn link_days(engine: &Engine, id: u64, days: Days) -> Result<Vec<(u64, u64, u64)>, Error> {
    let rows = day_rows(engine, id, days)?;
    Ok(days
        .iter()
        .zip(rows)
        .map(|(d, row)| (d, row[PEOPLE_AT], row[BOTS_AT]))
        .collect())
}

/// People's clicks of link `id` per value of `dim` over `days`, most first (ties by
/// value), values with none left out; `other` holds the values past the link's 16.
pub fn link_values(
    engine: &Engine,
    labels: &Labels,
    id: u64,
    dim: Dim,
    days: Days,
) -> Result<Vec<(String, u64)>, Error> {
    let slots = labels.slots(engine, id, dim)?;
    let mut sums = [0u64; SLOTS_PER_DIM + 1];
    for row in day_rows(engine, id, days)? {
        for (slot, sum) in sums.iter_mut().enumerate() {
            *sum += row[store::day_column(dim, slot)];
        }
    }
    let unknown = |slot: usize| slots.get(slot).is_some_and(|&h| labels.name(h).is_none());
    if (0..SLOTS_PER_DIM).any(|s| sums[s] > 0 && unknown(s)) {
        labels.refresh(engine)?;
    }
    let mut values: HashMap<String, u64> = HashMap::new();
    for (slot, n) in sums.iter().enumerate().filter(|(_, n)| **n > 0) {
        let label = slots
            .get(slot)
            .and_then(|&h| labels.name(h))
            .map(|l| l.to_string())
            .unwrap_or_else(|| OTHER.to_string());
        *values.entry(label).or_default() += n;
    }
    Ok(ranked(values, usize::MAX))
}

/// `values` most first, ties by value, at most `limit`.
fn ranked(values: HashMap<String, u64>, limit: usize) -> Vec<(String, u64)> {
    let mut values: Vec<(String, u64)> = values.into_iter().filter(|(_, n)| *n > 0).collect();
    values.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    values.truncate(limit);
    values
}

/// Every row key of `counter` that is a name, with its `column`, stripe by stripe.
fn names(
    engine: &Engine,
    counter: &str,
    column: &str,
    mut each: impl FnMut(&str, u64),
) -> Result<(), Error> {
    for stripe in 0..shardkit_counters::STRIPES {
        let keys = store::name_keys(engine, counter, stripe)?;
        let counts = mget(engine, counter, column, &keys)?;
        for (key, n) in keys.iter().zip(counts) {
            each(key, n);
        }
    }
    Ok(())
}

/// People's clicks per value of `dim` over every link and `days`, the `limit` most.
pub fn site_values(
    engine: &Engine,
    dim: Dim,
    days: Days,
    limit: usize,
) -> Result<Vec<(String, u64)>, Error> {
    let mut values: HashMap<String, u64> = HashMap::new();
    names(engine, SITE, COLUMN, |key, n| {
        let mut parts = key.splitn(3, ':');
        let (Some(day), Some(tag), Some(label)) = (parts.next(), parts.next(), parts.next()) else {
            return;
        };
        let day_ok = day.parse().is_ok_and(|d| days.holds(d));
        if day_ok && tag.len() == 1 && tag.starts_with(dim.tag()) {
            *values.entry(label.to_string()).or_default() += n;
        }
    })?;
    Ok(ranked(values, limit))
}

/// People's clicks per link id over `days`, most first (all of them; the caller
/// filters and cuts).
pub fn site_links(engine: &Engine, days: Days) -> Result<Vec<(u64, u64)>, Error> {
    let mut links: HashMap<u64, u64> = HashMap::new();
    names(engine, DAILY, PEOPLE, |key, n| {
        let Some((id, day)) = key.split_once(':') else {
            return;
        };
        if let (Ok(id), Ok(day)) = (id.parse::<u64>(), day.parse::<u64>()) {
            if days.holds(day) {
                *links.entry(id).or_default() += n;
            }
        }
    })?;
    let mut links: Vec<(u64, u64)> = links.into_iter().filter(|(_, n)| *n > 0).collect();
    links.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    Ok(links)
}

/// People's and bots' clicks over every link on `days` (people from `site_stats`).
pub fn site_people(engine: &Engine, days: Days) -> Result<u64, Error> {
    let keys: Vec<String> = days.iter().map(|d| format!("{d}:p")).collect();
    Ok(mget(engine, SITE, COLUMN, &keys)?.iter().sum())
}

#[cfg(test)]
mod tests {
    use super::super::{Analytics, RawClick};
    use super::*;
    use std::net::{IpAddr, Ipv4Addr};

    fn click(id: u64, day: u64, referrer: &str, agent: &str) -> RawClick {
        RawClick {
            id,
            day,
            referrer: (!referrer.is_empty()).then(|| referrer.into()),
            agent: Some(agent.into()),
            ip: IpAddr::V4(Ipv4Addr::LOCALHOST),
        }
    }

    const FIREFOX: &str = "Mozilla/5.0 (X11; Linux x86_64; rv:120.0) Gecko/20100101 Firefox/120.0";
    const BOT: &str = "Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)";

    #[test]
    fn values_past_sixteen_count_as_other_and_survive_a_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let days = Days::new(10, 11).unwrap();
        {
            let engine = Engine::open(dir.path(), shardkit_counters::Options::default()).unwrap();
            store::ensure_counters(&engine).unwrap();
            let analytics = Analytics::open(&engine, None).unwrap();
            for i in 0..16 {
                analytics.record(click(7, 10, &format!("https://h{i:02}.example/"), FIREFOX));
            }
            assert_eq!(analytics.flush(&engine, &Default::default()).unwrap(), 16);
            for i in 16..20 {
                analytics.record(click(7, 10, &format!("https://h{i:02}.example/"), FIREFOX));
            }
            analytics.record(click(7, 11, "", FIREFOX));
            analytics.record(click(7, 11, "", BOT));
            assert_eq!(analytics.flush(&engine, &Default::default()).unwrap(), 6);
            let values = link_values(&engine, &analytics.labels, 7, Dim::Referrer, days).unwrap();
            assert_eq!(values[0], ("other".to_string(), 5), "{values:?}");
            assert_eq!(values.len(), 1 + 16, "16 hosts of their own: {values:?}");
        }
        let engine = Engine::open(dir.path(), shardkit_counters::Options::default()).unwrap();
        let analytics = Analytics::open(&engine, None).unwrap();
        let values = link_values(&engine, &analytics.labels, 7, Dim::Referrer, days).unwrap();
        assert_eq!(values.iter().map(|v| v.1).sum::<u64>(), 21, "bots left out");
        assert!(
            values.contains(&("h00.example".to_string(), 1)),
            "{values:?}"
        );
        assert_eq!(
            link_days(&engine, 7, days).unwrap(),
            [(10, 20, 0), (11, 1, 1)]
        );
        let browsers = link_values(&engine, &analytics.labels, 7, Dim::Browser, days).unwrap();
        assert_eq!(browsers, [("Firefox".to_string(), 21)]);
        assert_eq!(site_links(&engine, days).unwrap(), [(7, 21)]);
        assert_eq!(site_people(&engine, days).unwrap(), 21);
        let site = site_values(&engine, Dim::Referrer, days, 3).unwrap();
        assert_eq!(site[0], ("other".to_string(), 5));
        assert_eq!(site.len(), 3);
        assert!(Days::new(11, 10).is_err() && Days::new(0, 366).is_err());
    }

    /// A write stopped before any one of its engine calls (the engine turned follower
    /// there) and retried once it leads again, with more clicks come meanwhile, stores
    /// every click and count exactly once: totals, days, people, slots, labels and the
    /// site's rows, and the part stored before the stop survives a reopen. The links
    /// were clicked and flushed once before (rows stored, owners cached).
    #[test]
    fn a_write_stopped_at_any_engine_call_stores_each_click_once_when_retried() {
        use super::super::clicks::ClickBook;
        // Three runs of total rows and three of day rows (runs of 1,024).
        const LINKS: u64 = 2_500;
        let days = Days::new(10, 10).unwrap();
        let [a, b, c] =
            ["a", "b", "c"].map(|h| store::label_hash(Dim::Referrer, &format!("{h}.example")));
        let mut stops = 0;
        for stop_at in 0.. {
            let dir = tempfile::tempdir().unwrap();
            let engine = Engine::open(dir.path(), shardkit_counters::Options::default()).unwrap();
            store::ensure_counters(&engine).unwrap();
            let analytics = Analytics::open(&engine, None).unwrap();
            let book = ClickBook::default();
            for host in ["a", "b"] {
                for id in 0..LINKS {
                    assert!(book.hit(&engine, id, 10, None));
                    analytics.record(click(id, 10, &format!("https://{host}.example/"), FIREFOX));
                }
                if host == "a" {
                    analytics.flush(&engine, &book).unwrap();
                }
            }
            store::stop_before_call(Some(stop_at));
            let first = analytics.flush(&engine, &book);
            if store::stop_before_call(None).is_some() {
                // Fewer calls than `stop_at`: every one was a stop.
                first.unwrap();
                break;
            }
            assert!(
                matches!(first, Err(Error::ReadOnly)),
                "stop {stop_at}: {first:?}"
            );
            stops += 1;
            engine.set_read_only(false);
            // More clicks before the retry: every other link from c.example.
            for id in (0..LINKS).step_by(2) {
                assert!(book.hit(&engine, id, 10, None));
                analytics.record(click(id, 10, "https://c.example/", FIREFOX));
            }
            analytics.flush(&engine, &book).unwrap();
            let check = |engine: &Engine, book: &ClickBook| {
                let labels = store::Labels::load(engine).unwrap();
                for id in 0..LINKS {
                    let twice = id % 2 == 0;
                    let want = 2 + u64::from(twice);
                    let at = format!("stop {stop_at}, link {id}");
                    assert_eq!(book.total(engine, id), want, "{at}");
                    assert_eq!(book.daily(engine, id, &[10]), [want], "{at}");
                    assert_eq!(
                        link_days(engine, id, days).unwrap(),
                        [(10, want, 0)],
                        "{at}"
                    );
                    let slots = labels.slots(engine, id, Dim::Referrer).unwrap();
                    assert_eq!(slots[..4], [a, b, if twice { c } else { 0 }, 0], "{at}");
                    let mut values =
                        vec![("a.example".to_string(), 1), ("b.example".to_string(), 1)];
                    if twice {
                        values.push(("c.example".to_string(), 1));
                    }
                    assert_eq!(
                        link_values(engine, &labels, id, Dim::Referrer, days).unwrap(),
                        values,
                        "{at}"
                    );
                }
                assert_eq!(site_people(engine, days).unwrap(), 2 * LINKS + LINKS / 2);
                assert_eq!(
                    site_values(engine, Dim::Referrer, days, 3).unwrap(),
                    [
                        ("a.example".to_string(), LINKS),
                        ("b.example".to_string(), LINKS),
                        ("c.example".to_string(), LINKS / 2)
                    ],
                    "stop {stop_at}"
                );
                assert_eq!(
                    site_values(engine, Dim::Browser, days, 3).unwrap(),
                    [("Firefox".to_string(), 2 * LINKS + LINKS / 2)],
                    "stop {stop_at}"
                );
            };
            check(&engine, &book);
            assert_eq!(book.flush(&engine).unwrap(), 0, "nothing left over");
            drop(analytics);
            drop(engine);
            let engine = Engine::open(dir.path(), shardkit_counters::Options::default()).unwrap();
            check(&engine, &ClickBook::default());
        }
        assert!(
            stops >= 8,
            "labels, 3 total runs, 3 day runs, site: {stops}"
        );
    }
}

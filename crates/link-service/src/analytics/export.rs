//! The analytics in an export line, and back: per UTC day, people and bots and each
//! dimension's values (`{"2026-11-23": {"people": 6, "bots": 4, "referrer":
//! {"direct": 2, …}, "browser": {…}, …}}`). An import adds them to the restored link
//! through the same write path as the clicks, so its stats and page read as exported.

use super::classify::{self, Dim};
use super::query::{self, Days};
use super::store::{self, Labels, BOTS, DAILY, PEOPLE};
use super::Tally;
use serde::{Deserialize, Serialize};
use shardkit_counters::{Engine, Error, Key};
use shardkit_links::{format_day, parse_day};
use std::collections::{BTreeMap, HashMap};

/// Values per dimension of one day.
pub type Values = BTreeMap<String, u64>;

/// One link's analytics of one day.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DayLine {
    /// People's clicks.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub people: u64,
    /// Bots' clicks.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub bots: u64,
    /// By referrer host.
    #[serde(default, skip_serializing_if = "Values::is_empty")]
    pub referrer: Values,
    /// By browser family.
    #[serde(default, skip_serializing_if = "Values::is_empty")]
    pub browser: Values,
    /// By OS.
    #[serde(default, skip_serializing_if = "Values::is_empty")]
    pub os: Values,
    /// By device type.
    #[serde(default, skip_serializing_if = "Values::is_empty")]
    pub device: Values,
    /// By country.
    #[serde(default, skip_serializing_if = "Values::is_empty")]
    pub country: Values,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl DayLine {
    fn values_mut(&mut self, dim: Dim) -> &mut Values {
        match dim {
            Dim::Referrer => &mut self.referrer,
            Dim::Browser => &mut self.browser,
            Dim::Os => &mut self.os,
            Dim::Device => &mut self.device,
            Dim::Country => &mut self.country,
        }
    }

    fn values(&self, dim: Dim) -> &Values {
        match dim {
            Dim::Referrer => &self.referrer,
            Dim::Browser => &self.browser,
            Dim::Os => &self.os,
            Dim::Device => &self.device,
            Dim::Country => &self.country,
        }
    }
}

/// A link's analytics by day (`YYYY-MM-DD`).
pub type LinkAnalytics = BTreeMap<String, DayLine>;

/// Every link's analytics as stored (the caller flushes first): the days come from
/// `link_daily` (those with people or bots: a day of dropped analytics has clicks
/// only), each day's values from the link's slots.
pub fn all(engine: &Engine, labels: &Labels) -> Result<HashMap<u64, LinkAnalytics>, Error> {
    let mut visits: HashMap<(u64, u64), (u64, u64)> = HashMap::new();
    for stripe in 0..shardkit_counters::STRIPES {
        let keys = store::name_keys(engine, DAILY, stripe)?;
        let parsed: Vec<Key<'_>> = keys.iter().map(|k| Key::Name(k)).collect();
        let people = engine.mget(DAILY, &parsed, PEOPLE)?;
        let bots = engine.mget(DAILY, &parsed, BOTS)?;
        for ((key, p), b) in keys.iter().zip(people).zip(bots) {
            let Some((id, day)) = key.split_once(':') else {
                continue;
            };
            let (Ok(id), Ok(day)) = (id.parse::<u64>(), day.parse::<u64>()) else {
                continue;
            };
            if p > 0 || b > 0 {
                let entry = visits.entry((id, day)).or_default();
                entry.0 += p;
                entry.1 += b;
            }
        }
    }
    let mut out: HashMap<u64, LinkAnalytics> = HashMap::new();
    for ((id, day), (people, bots)) in visits {
        let mut line = DayLine {
            people,
            bots,
            ..DayLine::default()
        };
        if people > 0 {
            let one = Days { from: day, to: day };
            for dim in Dim::ALL {
                for (label, n) in query::link_values(engine, labels, id, dim, one)? {
                    line.values_mut(dim).insert(label, n);
                }
            }
        }
        out.entry(id).or_default().insert(format_day(day), line);
    }
    Ok(out)
}

/// The tally that restores `analytics` on link `id`; the error names the bad day or value.
pub fn tally(id: u64, analytics: &LinkAnalytics) -> Result<Tally, String> {
    let mut tally = Tally::default();
    for (day, line) in analytics {
        let day = parse_day(day).map_err(|e| format!("analytics: {e}"))?;
        if line.people > 0 || line.bots > 0 {
            tally.add_visits(id, day, line.people, line.bots);
        }
        for dim in Dim::ALL {
            for (label, &n) in line.values(dim) {
                let clean = classify::label(label);
                if clean.is_empty() {
                    return Err(format!("analytics: an empty {} value", dim.name()));
                }
                if n > 0 {
                    tally.add_label(id, day, dim, &clean, n);
                }
            }
        }
    }
    Ok(tally)
}

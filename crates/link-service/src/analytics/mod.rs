//! Click analytics: where clicks come from (referrer host), what reads them (browser,
//! OS, device), from which country (with `[links] geoip_db`), and which are bots.
//!
//! The redirect only queues a [`RawClick`] (its referrer, User-Agent and address) in
//! a bounded queue; the click flusher, every `click_flush_ms`, classifies the queued
//! clicks ([`classify`]), adds them up per link, day and value ([`Tally`]) and writes
//! them to the counter engine ([`store`]) with the clicks the click book ([`clicks`])
//! counted, into
//! the same rows, so a SIGKILL loses at most one flush interval of them, as it does of
//! the clicks themselves. The address is used for the
//! country look-up and dropped; nothing that identifies a person is kept. A full
//! queue drops the click's analytics (never the click) and counts it in
//! `shardkit_link_analytics_dropped_total`.

pub mod classify;
pub mod clicks;
pub mod export;
pub mod geo;
pub mod query;
pub mod store;

use classify::{Agent, Dim};
use clicks::ClickBook;
use geo::GeoIp;
use parking_lot::Mutex;
use shardkit_counters::{Engine, Error};
use std::collections::{HashMap, HashSet};
use std::net::IpAddr;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};
use std::sync::Arc;
use store::Clicks;

/// Clicks waiting for the classifier; past this the newest ones' analytics are dropped.
pub const QUEUE: usize = 65_536;

/// The referrer of a click without a `Referer` header, made once.
static DIRECT: std::sync::LazyLock<Arc<str>> =
    std::sync::LazyLock::new(|| classify::referrer(None).into());

/// User-Agents whose reading is remembered (most traffic has few distinct ones).
const AGENTS_CACHED: usize = 10_000;

/// `Referer` headers whose host is remembered: a popular page sends many clicks, and
/// parsing the URL (`url::Url::parse`, IDNA included) costs ~5,000 instructions a
/// click, most of what a click's classification costs.
const REFERRERS_CACHED: usize = 16_384;

/// What the redirect hands over: just the request's parts the classifier reads.
#[derive(Debug)]
pub struct RawClick {
    /// The link.
    pub id: u64,
    /// UTC day of the click.
    pub day: u64,
    /// The `Referer` header.
    pub referrer: Option<Box<str>>,
    /// The `User-Agent` header.
    pub agent: Option<Box<str>>,
    /// The client's address: for the country look-up only, never stored.
    pub ip: IpAddr,
}

/// The hasher of the click path's in-memory maps: keys are ids and labels the server
/// made, so a fast hash serves (SipHash was 5% of a redirect's CPU at 1 M links).
pub type FastHash = foldhash::fast::RandomState;

/// Classified clicks added up, waiting for their write: by link and day, so the write
/// finds each link's owner row and each day row once, with no second map of its own.
#[derive(Debug, Default, Clone)]
pub struct Tally {
    /// (link id, day) -> that link's clicks on that day.
    pub days: HashMap<(u64, u64), LinkDay, FastHash>,
    /// Each label once: most clicks share a handful of labels, so a click adds a
    /// reference, not a copy.
    names: HashSet<Arc<str>, FastHash>,
}

/// One link's clicks on one day, as a flush adds them up.
#[derive(Debug, Default, Clone)]
pub struct LinkDay {
    /// People's clicks.
    pub people: u64,
    /// Bots' clicks (in no dimension).
    pub bots: u64,
    /// People's clicks by dimension and value, each pair once.
    labels: smallvec::SmallVec<[(Dim, Arc<str>, u64); 5]>,
    /// Where each pair sits in `labels`, kept once a link has more than
    /// [`LINEAR_LABELS`] of them in one flush (a page linked from everywhere).
    index: Option<Box<LabelIndex>>,
}

/// Where each (dimension, value) pair sits in a [`LinkDay`]'s labels.
type LabelIndex = HashMap<(Dim, Arc<str>), usize, FastHash>;

/// Label pairs of one link and day found by a scan before an index is kept.
const LINEAR_LABELS: usize = 32;

impl LinkDay {
    /// People's clicks by dimension and value.
    pub fn labels(&self) -> impl Iterator<Item = (Dim, &Arc<str>, u64)> {
        self.labels.iter().map(|(d, l, n)| (*d, l, *n))
    }

    /// Adds `n` people's clicks to one value of `dim` (`label` interned by the tally).
    fn add_label(&mut self, dim: Dim, label: Arc<str>, n: u64) {
        let at = match &self.index {
            Some(index) => index.get(&(dim, Arc::clone(&label))).copied(),
            None => self
                .labels
                .iter()
                .position(|(d, l, _)| *d == dim && (Arc::ptr_eq(l, &label) || **l == *label)),
        };
        if let Some(i) = at {
            self.labels[i].2 += n;
            return;
        }
        if let Some(index) = &mut self.index {
            index.insert((dim, Arc::clone(&label)), self.labels.len());
        }
        self.labels.push((dim, label, n));
        if self.index.is_none() && self.labels.len() > LINEAR_LABELS {
            let index = self
                .labels
                .iter()
                .enumerate()
                .map(|(i, (d, l, _))| ((*d, Arc::clone(l)), i))
                .collect();
            self.index = Some(Box::new(index));
        }
    }

    /// The labels in one order (dimension, then value), to compare two tallies.
    fn sorted_labels(&self) -> Vec<(Dim, &str, u64)> {
        let mut out: Vec<(Dim, &str, u64)> =
            self.labels.iter().map(|(d, l, n)| (*d, &**l, *n)).collect();
        out.sort_unstable();
        out
    }
}

impl PartialEq for Tally {
    fn eq(&self, other: &Tally) -> bool {
        self.days.len() == other.days.len()
            && self.days.iter().all(|(k, a)| {
                other.days.get(k).is_some_and(|b| {
                    a.people == b.people
                        && a.bots == b.bots
                        && a.sorted_labels() == b.sorted_labels()
                })
            })
    }
}

impl Eq for Tally {}

/// The shared copy of `label` in `names`.
fn intern(names: &mut HashSet<Arc<str>, FastHash>, label: &str) -> Arc<str> {
    if let Some(name) = names.get(label) {
        return Arc::clone(name);
    }
    let name: Arc<str> = Arc::from(label);
    names.insert(Arc::clone(&name));
    name
}

impl Tally {
    /// Adds `n` people's clicks of link `id` on `day` to one value of `dim`.
    pub fn add_label(&mut self, id: u64, day: u64, dim: Dim, label: &str, n: u64) {
        let label = intern(&mut self.names, label);
        self.days
            .entry((id, day))
            .or_default()
            .add_label(dim, label, n);
    }

    /// Adds people's and bots' clicks of link `id` on `day`, in no dimension.
    pub fn add_visits(&mut self, id: u64, day: u64, people: u64, bots: u64) {
        let entry = self.days.entry((id, day)).or_default();
        entry.people += people;
        entry.bots += bots;
    }

    /// Adds `n` clicks of one kind of visitor.
    pub fn add(&mut self, id: u64, day: u64, visitor: &Visitor, n: u64) {
        let entry = self.days.entry((id, day)).or_default();
        if visitor.bot {
            entry.bots += n;
            return;
        }
        entry.people += n;
        for (dim, label) in visitor.labels() {
            entry.add_label(dim, intern(&mut self.names, label), n);
        }
    }

    /// Adds everything of `other`.
    pub fn merge(&mut self, other: Tally) {
        if self.is_empty() {
            *self = other;
            return;
        }
        for ((id, day), theirs) in other.days {
            self.add_visits(id, day, theirs.people, theirs.bots);
            for (dim, label, n) in theirs.labels {
                self.add_label(id, day, dim, &label, n);
            }
        }
    }

    /// Empties the tally, keeping its maps' room for the next flush: a tally grown
    /// from empty rehashed its map at every doubling (a sixth of a new link's
    /// `Tally::add`, callgrind), and a new one each flush was fresh pages to fault in.
    pub fn clear(&mut self) {
        self.days.clear();
        self.names.clear();
    }

    /// Nothing to write.
    pub fn is_empty(&self) -> bool {
        self.days.is_empty()
    }
}

/// One click's classification.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Visitor {
    /// A robot: counted apart, in no dimension.
    pub bot: bool,
    /// Referrer host or `direct` (shared with the classifier's cache: no copy a click).
    pub referrer: Arc<str>,
    /// The User-Agent's reading.
    pub agent: Arc<Agent>,
    /// Country code, or `unknown`; `None` without a GeoIP database.
    pub country: Option<String>,
}

impl Visitor {
    /// The (dimension, value) pairs this visitor counts in.
    pub fn labels(&self) -> impl Iterator<Item = (Dim, &str)> {
        [
            (Dim::Referrer, Some(&*self.referrer)),
            (Dim::Browser, Some(self.agent.browser.as_str())),
            (Dim::Os, Some(self.agent.os.as_str())),
            (Dim::Device, Some(self.agent.device.as_str())),
            (Dim::Country, self.country.as_deref()),
        ]
        .into_iter()
        .filter_map(|(d, l)| l.map(|l| (d, l)))
    }
}

/// The analytics of every link: the queue, the classifier's caches, the labels.
pub struct Analytics {
    sender: SyncSender<RawClick>,
    inbox: Mutex<Receiver<RawClick>>,
    geo: Option<Arc<GeoIp>>,
    agents: Mutex<HashMap<Box<str>, Arc<Agent>, FastHash>>,
    /// Referrer host by `Referer` header, [`REFERRERS_CACHED`] at most.
    referrers: Mutex<HashMap<Box<str>, Arc<str>, FastHash>>,
    /// The last written tally, emptied: the next flush adds up into its room.
    spare: Mutex<Tally>,
    /// Labels by hash, and the slot rows read so far.
    pub labels: store::Labels,
    /// Classified but not yet written: what a stopped write left, for the next.
    waiting: Mutex<store::Backlog>,
    /// One write at a time: slot assignment reads, then writes, the slot rows. Holds
    /// the owner rows the last write left, for the next to reuse.
    writing: Mutex<store::OwnerRows>,
}

impl std::fmt::Debug for Analytics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Analytics").field("geo", &self.geo).finish()
    }
}

impl Analytics {
    /// Opens the analytics over `engine` (the labels read; the counters are made with
    /// the clicks' ones, `clicks::ensure_counters`), with countries from `geo` if given.
    pub fn open(engine: &Engine, geo: Option<GeoIp>) -> Result<Analytics, Error> {
        let (sender, inbox) = sync_channel(QUEUE);
        Ok(Analytics {
            sender,
            inbox: Mutex::new(inbox),
            geo: geo.map(Arc::new),
            agents: Mutex::new(HashMap::default()),
            referrers: Mutex::new(HashMap::default()),
            labels: store::Labels::load(engine)?,
            waiting: Mutex::default(),
            writing: Mutex::default(),
            spare: Mutex::default(),
        })
    }

    /// Whether countries are recorded.
    pub fn has_geo(&self) -> bool {
        self.geo.is_some()
    }

    /// The GeoIP database, for a redirect rule on the visitor's country.
    pub(crate) fn geo(&self) -> Option<&GeoIp> {
        self.geo.as_deref()
    }

    /// The GeoIP database, shared (the webhooks classify clicks with it too).
    pub fn geo_shared(&self) -> Option<Arc<GeoIp>> {
        self.geo.clone()
    }

    /// Queues one click for classification (the redirect path: no parsing, no lock
    /// held for long, never waits).
    pub fn record(&self, click: RawClick) {
        if let Err(TrySendError::Full(_)) = self.sender.try_send(click) {
            metrics::counter!("shardkit_link_analytics_dropped_total").increment(1);
        }
    }

    /// Classifies one click.
    pub fn classify(&self, click: &RawClick) -> Visitor {
        let agent = self.agent(click.agent.as_deref());
        Visitor {
            bot: agent.bot,
            referrer: self.referrer(click.referrer.as_deref()),
            country: classify::country(self.geo.as_deref(), click.ip),
            agent,
        }
    }

    /// [`classify::referrer`] through the cache of recent headers (cleared whole
    /// when full, as the User-Agents' is).
    fn referrer(&self, header: Option<&str>) -> Arc<str> {
        let Some(header) = header else {
            return Arc::clone(&DIRECT);
        };
        if let Some(host) = self.referrers.lock().get(header) {
            return Arc::clone(host);
        }
        let host: Arc<str> = classify::referrer(Some(header)).into();
        let mut referrers = self.referrers.lock();
        if referrers.len() >= REFERRERS_CACHED {
            referrers.clear();
        }
        referrers.insert(header.into(), Arc::clone(&host));
        host
    }

    /// What a User-Agent says, through the cache of recent ones (cleared whole when
    /// full): the classifier and a redirect rule on the device share it.
    pub(crate) fn agent(&self, user_agent: Option<&str>) -> Arc<Agent> {
        let key = user_agent.unwrap_or("");
        if let Some(agent) = self.agents.lock().get(key) {
            return Arc::clone(agent);
        }
        let agent = Arc::new(classify::agent(user_agent));
        let mut agents = self.agents.lock();
        if agents.len() >= AGENTS_CACHED {
            agents.clear();
        }
        agents.insert(key.into(), Arc::clone(&agent));
        agent
    }

    /// Classifies every queued click and writes them, with any earlier tally a failed
    /// write left and the clicks `book` counted (one write, one commit), to the engine
    /// (durable when this returns). Answers the clicks classified.
    pub fn flush(&self, engine: &Engine, book: &ClickBook) -> Result<usize, Error> {
        let mut tally = std::mem::take(&mut *self.spare.lock());
        let mut classified = 0;
        {
            let inbox = self.inbox.lock();
            while let Ok(click) = inbox.try_recv() {
                let visitor = self.classify(&click);
                tally.add(click.id, click.day, &visitor, 1);
                classified += 1;
            }
        }
        book.flush_with(|clicks| self.write_with(engine, tally, clicks))?;
        Ok(classified)
    }

    /// Writes `tally` (and whatever a stopped write left) to the engine; what it did
    /// not store is kept for the next flush. The path of imported analytics: a row the
    /// engine refused (its cold block unreadable) is an error here, the rest written.
    pub fn write(&self, engine: &Engine, tally: Tally) -> Result<(), Error> {
        let written = self.write_with(engine, tally, &Clicks::default());
        match written.stopped.or(written.refused) {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// [`Analytics::write`] with counted clicks written into the same rows; answers
    /// the clicks it did not store (the caller's to keep: [`ClickBook::flush_with`]
    /// puts them back); the analytics it did not store are kept here for the next
    /// write ([`store::Backlog`]), so a retry counts nothing twice.
    fn write_with(&self, engine: &Engine, tally: Tally, clicks: &Clicks) -> store::Written {
        let mut owners = self.writing.lock();
        let mut backlog = std::mem::take(&mut *self.waiting.lock());
        backlog.tally.merge(tally);
        if backlog.is_empty() && clicks.is_empty() {
            return store::Written::default();
        }
        let mut written = store::write(engine, &self.labels, &backlog, clicks, &mut owners);
        let owed = std::mem::take(&mut written.backlog);
        if !owed.is_empty() {
            self.waiting.lock().merge(owed);
        }
        // A flush's room is kept; an import's bigger tally is freed.
        let mut room = backlog.tally;
        if room.days.capacity() <= QUEUE {
            room.clear();
            *self.spare.lock() = room;
        }
        written
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A link's labels add up by (dimension, value) whether it has a few or more than
    /// a scan serves (the index past [`LINEAR_LABELS`]), and two tallies built in other
    /// orders, or one merged from parts, are equal.
    #[test]
    fn labels_add_up_past_the_scan_and_merged_tallies_equal_the_whole() {
        let hosts: Vec<String> = (0..100).map(|i| format!("site{i}.example")).collect();
        let mut whole = Tally::default();
        let (mut a, mut b) = (Tally::default(), Tally::default());
        for round in 0..3 {
            for (i, host) in hosts.iter().enumerate() {
                whole.add_label(7, 10, Dim::Referrer, host, 1);
                whole.add_label(7, 10, Dim::Browser, "Firefox", 1);
                let part = if (i + round) % 2 == 0 { &mut a } else { &mut b };
                part.add_label(7, 10, Dim::Browser, "Firefox", 1);
                part.add_label(7, 10, Dim::Referrer, host, 1);
            }
        }
        whole.add_visits(7, 10, 300, 2);
        b.add_visits(7, 10, 300, 2);
        let day = &whole.days[&(7, 10)];
        assert_eq!(day.labels().count(), 101);
        assert!(day.labels().all(|(dim, label, n)| match dim {
            Dim::Browser => &**label == "Firefox" && n == 300,
            _ => n == 3,
        }));
        assert!(day.index.is_some());
        assert_ne!(a, whole);
        a.merge(b);
        assert_eq!(a, whole);
        let mut other = whole.clone();
        other.add_label(7, 10, Dim::Referrer, "site0.example", 1);
        assert_ne!(other, whole);
    }

    /// The referrer cache answers what parsing the header again answers, for hosts,
    /// headers that are not URLs and padded ones, and stays within its bound.
    #[test]
    fn a_cached_referrer_reads_as_parsing_it_again_and_the_cache_stays_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let engine = Engine::open(dir.path(), shardkit_counters::Options::default()).unwrap();
        store::ensure_counters(&engine).unwrap();
        let analytics = Analytics::open(&engine, None).unwrap();
        for header in [
            "https://News.Example.com/a?x=1",
            "not a url",
            "  https://c.example/ ",
            "https://bücher.example/",
            "",
        ] {
            let parsed = classify::referrer(Some(header));
            assert_eq!(
                &*analytics.referrer(Some(header)),
                parsed,
                "first: {header:?}"
            );
            assert_eq!(
                &*analytics.referrer(Some(header)),
                parsed,
                "cached: {header:?}"
            );
        }
        assert_eq!(
            &*analytics.referrer(Some("https://News.Example.com/a?x=1")),
            "news.example.com"
        );
        assert_eq!(&*analytics.referrer(None), "direct");
        for i in 0..REFERRERS_CACHED + 10 {
            analytics.referrer(Some(&format!("https://h{i}.example/")));
        }
        assert!(analytics.referrers.lock().len() <= REFERRERS_CACHED);
        assert_eq!(
            &*analytics.referrer(Some("https://h3.example/x")),
            "h3.example"
        );
    }
}

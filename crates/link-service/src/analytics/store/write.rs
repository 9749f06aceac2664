//! The one write path to the rows `mod.rs` describes: a flush's counted clicks
//! ([`Clicks`]) and classified clicks ([`Backlog`]) into each link's total and day rows
//! and the site rows, with the new slot owners and their labels, made durable by one
//! commit; and what it hands back when the engine refuses part of it ([`Written`]), so
//! that the caller's retry counts nothing twice.

use super::engine_calls::{before_call, clamp, incr_column, refused_rows, RUN};
use super::labels::{label_hash, set_owner, Labels, NewSlot, OwnerRow, OwnerRows};
use super::{
    day_column, owner_column, parse_day_key, site_key, KeyText, BOTS_AT, CLICKS_AT, DAILY,
    DAY_FIRST_SLOT, DAY_NAME_REFS, DIMS, FIRST_OWNER_AT, LABELS, OTHER, PEOPLE_AT, SITE,
    SLOTS_PER_DIM, TOTALS, TOTAL_NAME_REFS,
};
use crate::analytics::classify::Dim;
use crate::analytics::{FastHash, LinkDay, Tally};
use shardkit_counters::{Engine, Error, Key, Pending, RowOp};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

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

/// Owner rows a write leaves allocated for the next: made anew each flush, the rows of
/// a flush of thousands of new links were fresh pages the kernel zero-filled (0.3 µs
/// of a first click at 100 M links when a row was 640 bytes, bench/notes/runs.md); past
/// this many a flush's rows are freed instead (an import's analytics).
const KEPT_OWNER_ROWS: usize = 16_384;

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
    if let Err(e) = read_owner_rows(engine, labels, backlog, owners) {
        hand_back_all(&mut out, backlog, clicks);
        return stop(engine, newest, out, e);
    }
    if let Some(e) = owners.unreadable_why.take() {
        out.refused.get_or_insert(e);
    }
    let mut days = DayRows::of_clicks(clicks, backlog);
    let counted = count_tallies(backlog, owners, &mut days);
    let site = site_rows(counted.site_labels, counted.people_by_day, backlog);
    let new_slots = counted.new_slots;
    if let Err(e) = add_new_labels(engine, &new_slots, &mut newest, &mut out.refused) {
        hand_back_all(&mut out, backlog, clicks);
        labels.forget_owners(&new_slots);
        return stop(engine, newest, out, e);
    }
    let totals = TotalRows::of(clicks, &new_slots);
    // Each row call's results, one an item; one buffer for both kinds of row.
    let mut results = Vec::new();
    // Where the step that stopped was refused: the first of its items not stored.
    let mut reached = 0;
    let refused_links = match write_total_rows(
        engine,
        &totals,
        clicks,
        &mut results,
        &mut newest,
        &mut out,
        &mut reached,
    ) {
        Ok(refused_links) => refused_links,
        Err(e) => {
            // The runs before are stored; the owners they set are read again by
            // the retry (the cache forgets them), which finds them taken.
            out.left
                .totals
                .extend_from_slice(&clicks.totals[reached.min(clicks.totals.len())..]);
            out.left.days = clicks.days.clone();
            out.backlog = backlog.clone();
            labels.forget_owners(&new_slots);
            return stop(engine, newest, out, e);
        }
    };
    remember_new_owners(labels, owners, &new_slots, &refused_links);
    if !refused_links.is_empty() {
        leave_out_unowned(&days.keys, &mut days.counts, &new_slots, &refused_links);
    }
    if let Err(e) = write_day_rows(
        engine,
        &days,
        clicks,
        &mut results,
        &mut newest,
        &mut out,
        &mut reached,
    ) {
        // The totals and the day rows before are stored; the site rows not yet.
        out.left
            .days
            .extend_from_slice(&clicks.days[reached.min(clicks.days.len())..]);
        out.backlog.day_only = unwritten_days(&days.keys, reached, backlog);
        out.backlog.site = site;
        return stop(engine, newest, out, e);
    }
    let site: Vec<(String, u64)> = site.into_iter().collect();
    if let Err(e) = add_site_rows(engine, &site, &mut newest, &mut out.refused, &mut reached) {
        out.backlog.site = site[reached..].iter().cloned().collect();
        return stop(engine, newest, out, e);
    }
    finish(engine, newest, out, owners)
}

/// Reads into `owners` the owner rows of the links whose clicks carry labels: only
/// those are given slots or counted in them (bots' clicks carry none), and they are
/// read in one engine call, not one a link ([`Labels::owner_rows`]).
fn read_owner_rows(
    engine: &Engine,
    labels: &Labels,
    backlog: &Backlog,
    owners: &mut OwnerRows,
) -> Result<(), Error> {
    let with_labels =
        |(&(id, _), d): (&(u64, u64), &LinkDay)| d.labels().next().is_some().then_some(id);
    let ids = backlog
        .tally
        .days
        .iter()
        .chain(&backlog.day_only.days)
        .filter_map(with_labels);
    labels.owner_rows(engine, ids, owners)
}

/// Hands back every click and count of `backlog` and `clicks`: the write stopped at
/// a call before any of them was stored.
fn hand_back_all(out: &mut Written, backlog: &Backlog, clicks: &Clicks) {
    out.left = clicks.clone();
    out.backlog = backlog.clone();
}

/// The [`DAILY`] rows of one write: each row's key and its counts by column (a few
/// each: a plain list, summed in place), in the order first met. The keys share one
/// string ([`KeyText`]).
struct DayRows {
    keys: KeyText,
    counts: Vec<DayCounts>,
    /// Where a link and day's row is in `keys` and `counts`: each counted click's row,
    /// and the analytics' rows when there are two tallies to meet them again.
    at: HashMap<(u64, u64), usize, FastHash>,
}

impl DayRows {
    /// The counted clicks' rows, first and in their order (so that a refused row's
    /// place names its clicks), with room for the analytics' rows of `backlog`, which
    /// join them ([`DayRows::add`]).
    fn of_clicks(clicks: &Clicks, backlog: &Backlog) -> DayRows {
        let rows_hint = backlog.tally.days.len() + backlog.day_only.days.len();
        let mut rows = DayRows {
            keys: KeyText::with_capacity(rows_hint.max(clicks.days.len())),
            counts: Vec::with_capacity(rows_hint.max(clicks.days.len())),
            at: HashMap::default(),
        };
        rows.at.reserve(clicks.days.len());
        for &(id, day, n) in &clicks.days {
            rows.at.insert((id, day), rows.counts.len());
            rows.keys.push_day(id, day);
            rows.counts.push(smallvec::smallvec![(CLICKS_AT, clamp(n))]);
        }
        rows
    }

    /// Adds the analytics `counts` of link `id` on `day` to its row, or makes the row.
    /// `two_tallies`: both of the backlog's tallies are counted, so a row may be met
    /// twice and must be found again.
    fn add(&mut self, id: u64, day: u64, counts: DayCounts, two_tallies: bool) {
        match self.at.get(&(id, day)) {
            // Columns apart from the clicks': no sum needed, unless both tallies
            // count this row (a search a column, ~300 instructions a click).
            Some(&i) if !two_tallies => self.counts[i].extend(counts),
            Some(&i) => {
                for (column, n) in counts {
                    add_count(&mut self.counts[i], column, n);
                }
            }
            None => {
                if two_tallies {
                    self.at.insert((id, day), self.counts.len());
                }
                self.keys.push_day(id, day);
                self.counts.push(counts);
            }
        }
    }
}

/// What counting a write's tallies ([`count_tallies`]) gathers beside the day rows.
#[derive(Default)]
struct Counted<'a> {
    /// The slots given to a label in this write. A link's new slots are pushed
    /// together (its day's labels in one go), so they reach the owner rows grouped by
    /// link without a sort.
    new_slots: Vec<NewSlot>,
    /// Site rows by (day, dimension, label hash; 0 for `other`), with the label: few
    /// distinct ones, their keys made once, found by number (not by hashing and
    /// comparing the label's text, a click's every label).
    site_labels: HashMap<(u64, Dim, u64), (u64, &'a str), FastHash>,
    /// People's clicks by day, over every link (the `<day>:p` site rows).
    people_by_day: HashMap<u64, u64, FastHash>,
    /// Label hashes by (dimension, the tally's one copy of the label): a flush's labels
    /// are few, its (link, label) pairs many.
    hashes: HashMap<(Dim, usize), u64, FastHash>,
}

/// Counts both tallies of `backlog` into `days`, giving each new label a slot of its
/// link in `owners` while one is free; `backlog.tally`'s clicks are counted in the
/// site rows too, `backlog.day_only`'s are there already.
fn count_tallies<'a>(
    backlog: &'a Backlog,
    owners: &mut OwnerRows,
    days: &mut DayRows,
) -> Counted<'a> {
    let mut counted = Counted::default();
    // A day row met twice (in both tallies) is found again only when there are two.
    let two_tallies = !backlog.day_only.is_empty();
    for (tally, counts_site) in [(&backlog.tally, true), (&backlog.day_only, false)] {
        for (&(id, day), link_day) in &tally.days {
            let counts = counted.link_day(owners, id, day, link_day, counts_site);
            if counts.is_empty() {
                continue;
            }
            days.add(id, day, counts, two_tallies);
        }
    }
    counted
}

impl<'a> Counted<'a> {
    /// The day row counts of link `id`'s clicks on `day`: people, bots, and people's
    /// clicks in each label's slot (or `other`); with `counts_site`, their site rows'
    /// counts are added up too.
    fn link_day(
        &mut self,
        owners: &mut OwnerRows,
        id: u64,
        day: u64,
        link_day: &'a LinkDay,
        counts_site: bool,
    ) -> DayCounts {
        let mut counts = DayCounts::new();
        if link_day.people > 0 {
            add_count(&mut counts, PEOPLE_AT, clamp(link_day.people));
            if counts_site {
                *self.people_by_day.entry(day).or_default() += link_day.people;
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
                let hash = *self
                    .hashes
                    .entry((dim, Arc::as_ptr(label) as *const u8 as usize))
                    .or_insert_with(|| label_hash(dim, label));
                let slot = slot_of(row, id, dim, hash, label, &mut self.new_slots);
                add_count(&mut counts, day_column(dim, slot), clamp(n));
                if counts_site {
                    let (site_hash, site_label) = match slot {
                        SLOTS_PER_DIM => (0, OTHER),
                        _ => (hash, &**label),
                    };
                    self.site_labels
                        .entry((day, dim, site_hash))
                        .or_insert((0, site_label))
                        .0 += n;
                }
            }
        }
        counts
    }
}

/// The slot of `label` (known by `hash`) among link `id`'s slots of `dim` in its owner
/// `row`: the one it owns; else the first free one, given to it here (set in `row` and
/// pushed to `new_slots`, to be stored); else [`SLOTS_PER_DIM`], `other`, as every
/// slot is taken and a slot is never taken back.
fn slot_of(
    row: &mut OwnerRow,
    id: u64,
    dim: Dim,
    hash: u64,
    label: &Arc<str>,
    new_slots: &mut Vec<NewSlot>,
) -> usize {
    let column = |slot| owner_column(dim, slot);
    // The slots the row holds; those past its end are free.
    let held = (0..SLOTS_PER_DIM).take_while(|&s| column(s) < row.len());
    match held.clone().find(|&s| row[column(s)] == hash) {
        Some(slot) => slot,
        None => match (0..SLOTS_PER_DIM).find(|&s| column(s) >= row.len() || row[column(s)] == 0) {
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
    }
}

/// The [`SITE`] rows of this write by key, with their counts: each label's (or
/// `other`'s) per day, people's per day (`<day>:p`), and those an earlier write
/// stopped before storing (`backlog.site`).
fn site_rows(
    site_labels: HashMap<(u64, Dim, u64), (u64, &str), FastHash>,
    people_by_day: HashMap<u64, u64, FastHash>,
    backlog: &Backlog,
) -> HashMap<String, u64, FastHash> {
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
    site
}

/// Adds the labels of the slots this write gave out to [`LABELS`]: first of the
/// write's calls, so a stored owner never names a label that is not. `Err`: the call
/// was refused, and nothing of the write's counts is stored.
fn add_new_labels(
    engine: &Engine,
    new_slots: &[NewSlot],
    newest: &mut Pending,
    refused: &mut Option<Error>,
) -> Result<(), Error> {
    if new_slots.is_empty() {
        return Ok(());
    }
    // Summed per label: a flush of many new links gives each label once. A write
    // stopped after these were counted counts them again when retried: a label's
    // count only says that some slot took it.
    let mut label_counts: HashMap<(Dim, &str), u64, FastHash> = HashMap::default();
    for s in new_slots {
        *label_counts.entry((s.dim, &*s.label)).or_default() += 1;
    }
    let label_keys: Vec<(String, u64)> = label_counts
        .into_iter()
        .map(|((dim, label), n)| (format!("{}:{label}", dim.tag()), n))
        .collect();
    incr_column(engine, LABELS, &label_keys, newest, refused, &mut 0)
}

/// Each link's [`TOTALS`] row of one write, written once for all its columns: its
/// clicks added, its new slot owners set (a link's first click makes the row once,
/// with every column, not once and then again to widen it). Every key in one string:
/// no allocation a link.
struct TotalRows {
    /// The links, the counted clicks' first and in their order.
    ids: Vec<u64>,
    /// Their rows' keys, in the same order.
    keys: KeyText,
    /// Their rows' items, in the same order.
    items: Vec<TotalItems>,
}

impl TotalRows {
    /// The total rows of `clicks` and of the links given `new_slots`.
    fn of(clicks: &Clicks, new_slots: &[NewSlot]) -> TotalRows {
        let mut at: HashMap<u64, usize, FastHash> = HashMap::default();
        at.reserve(clicks.totals.len());
        let mut ids: Vec<u64> = Vec::with_capacity(clicks.totals.len());
        let mut items: Vec<TotalItems> = Vec::with_capacity(clicks.totals.len());
        for &(id, n) in &clicks.totals {
            at.insert(id, items.len());
            ids.push(id);
            items.push(smallvec::smallvec![(CLICKS_AT, RowOp::Add(clamp(n)))]);
        }
        // A link's new slots side by side: its total row looked up once for them all.
        for new in new_slots.chunk_by(|a, b| a.id == b.id) {
            let id = new[0].id;
            let i = match at.get(&id) {
                Some(&i) => i,
                None => {
                    at.insert(id, items.len());
                    ids.push(id);
                    items.push(TotalItems::new());
                    items.len() - 1
                }
            };
            items[i].extend(
                new.iter()
                    .map(|s| (FIRST_OWNER_AT + s.column, RowOp::Set(s.hash))),
            );
        }
        let mut keys = KeyText::with_capacity(ids.len());
        for &id in &ids {
            keys.push_total(id);
        }
        TotalRows { ids, keys, items }
    }
}

/// Writes the [`TOTALS`] rows in runs of [`RUN`], each run's record in `newest` as soon
/// as it is appended (so a stop commits the runs before it). A row the engine refuses
/// is left out: its counted clicks go to `out.left`, its error to `out.refused` if it
/// is the first. Answers the links whose row was refused: the owners this write gave
/// them are not stored. `Err`: the run from item `reached` on was refused whole, and
/// it and the runs after it are not stored.
fn write_total_rows(
    engine: &Engine,
    totals: &TotalRows,
    clicks: &Clicks,
    results: &mut Vec<Result<u64, Error>>,
    newest: &mut Pending,
    out: &mut Written,
    reached: &mut usize,
) -> Result<HashSet<u64, FastHash>, Error> {
    let rows: Vec<(Key<'_>, &[(usize, RowOp)])> = totals
        .keys
        .iter()
        .zip(&totals.items)
        .map(|(key, items)| (Key::Name(key), items.as_slice()))
        .collect();
    // Links whose total row was refused: the owners the write gave them are not stored.
    // (A set: a damaged block may refuse thousands of a flush's links.)
    let mut refused_links: HashSet<u64, FastHash> = HashSet::default();
    for (k, run) in rows.chunks(RUN).enumerate() {
        *reached = k * RUN;
        before_call(engine);
        *newest = (*newest).max(engine.update_rows(TOTALS, &TOTAL_NAME_REFS, run, results)?);
        // The first rows are the counted clicks', in their order.
        for i in refused_rows(run, results, &mut out.refused) {
            refused_links.insert(totals.ids[k * RUN + i]);
            if let Some(&total) = clicks.totals.get(k * RUN + i) {
                out.left.totals.push(total);
            }
        }
    }
    Ok(refused_links)
}

/// Brings the cache of `labels` up to date with the slots this write gave out: the
/// owner rows of links whose total row was stored are updated, those of links whose
/// row was refused (`refused_links`) forgotten, to be read again by their next write.
fn remember_new_owners(
    labels: &Labels,
    owners: &OwnerRows,
    new_slots: &[NewSlot],
    refused_links: &HashSet<u64, FastHash>,
) {
    for new in new_slots.chunk_by(|a, b| a.id == b.id) {
        if refused_links.contains(&new[0].id) {
            labels.forget_owners(new);
        } else {
            labels.learn(new[0].id, owners.get(new[0].id), new);
        }
    }
}

/// Writes the [`DAILY`] rows in runs of [`RUN`], each row's counts together (the
/// engine looks a row up and writes it once for all its columns), each run's record
/// in `newest` as soon as it is appended. A row the engine refuses is left out: its
/// counted clicks go to `out.left`, its error to `out.refused` if it is the first.
/// `Err`: the run from row `reached` on was refused whole, and it and the runs after
/// it are not stored.
fn write_day_rows(
    engine: &Engine,
    days: &DayRows,
    clicks: &Clicks,
    results: &mut Vec<Result<u64, Error>>,
    newest: &mut Pending,
    out: &mut Written,
    reached: &mut usize,
) -> Result<(), Error> {
    let rows: Vec<(Key<'_>, &[(usize, i64)])> = days
        .keys
        .iter()
        .zip(&days.counts)
        .map(|(key, items)| (Key::Name(key), items.as_slice()))
        .collect();
    for (k, run) in rows.chunks(RUN).enumerate() {
        *reached = k * RUN;
        before_call(engine);
        *newest = (*newest).max(engine.incr_rows(DAILY, &DAY_NAME_REFS, run, results)?);
        // As in the total rows: the counted clicks' day rows first, in their order.
        for i in refused_rows(run, results, &mut out.refused) {
            if let Some(&day) = clicks.days.get(k * RUN + i) {
                out.left.days.push(day);
            }
        }
    }
    Ok(())
}

/// Adds the [`SITE`] rows' counts: the write's last call, after the day rows, so that
/// a write stopped before it owes its site rows apart ([`Backlog::site`]). `Err`: the
/// items from `reached` on are not stored.
fn add_site_rows(
    engine: &Engine,
    site: &[(String, u64)],
    newest: &mut Pending,
    refused: &mut Option<Error>,
    reached: &mut usize,
) -> Result<(), Error> {
    incr_column(engine, SITE, site, newest, refused, reached)
}

/// Ends a write that made every call: one commit makes all of it durable; refused
/// rows are logged (once a minute: a damaged row is retried every flush); the owner
/// rows past `KEPT_OWNER_ROWS` are freed rather than kept for the next flush.
fn finish(engine: &Engine, newest: Pending, mut out: Written, owners: &mut OwnerRows) -> Written {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analytics::store::{
        damage_cold_blocks, day_key, ensure_counters, total_key, BOTS, CLICKS, DAY_NAMES, PEOPLE,
    };
    use shardkit_counters::OwnedKey;

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
        use crate::analytics::query::{self, Days};
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
}

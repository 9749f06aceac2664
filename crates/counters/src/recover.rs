//! Startup: the newest usable snapshot plus the log tail, with everything cut reported.
//!
//! Why one file of this size: recovery is one ordered procedure (pick a snapshot,
//! verify it, replay the tail, report every cut), read top to bottom.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::bloom::Bloom;
use crate::codec::{Put, Reader};
use crate::cold::{ColdFile, ColdPart, ColdShared};
use crate::cold_block::BlockIndexEntry;
use crate::cold_names::IndexedRun;
use crate::column::ColumnSpec;
use crate::counter::{stripe_of, Counter, STRIPES};
use crate::error::{io_err, Result};
use crate::hash::FastMap;
use crate::key::{Key, OwnedKey};
use crate::logread;
use crate::record::{get_key, read_spec, Op, Record};
use crate::snapread::{self, Parsed, RowFrame, SnapFrame};
use crate::snapshot;
use crate::{Dropped, RecoveryReport};

/// State rebuilt at open.
pub(crate) struct Recovered {
    pub counters: FastMap<String, Arc<Counter>>,
    pub next_lsn: u64,
    pub active: Option<PathBuf>,
    pub report: RecoveryReport,
}

/// Per (counter, stripe): the lsn from which the log still has to be applied.
type Marks = FastMap<String, Vec<u64>>;

/// Rebuilds the engine state in `dir`. `cutoff_ms`: txids applied before it are forgotten.
pub(crate) fn recover(dir: &Path, cutoff_ms: u64, cold: &Arc<ColdShared>) -> Result<Recovered> {
    let mut report = RecoveryReport::default();
    let mut counters: FastMap<String, Arc<Counter>> = FastMap::default();
    let mut marks: Marks = FastMap::default();
    let mut from_lsn = 1;

    // A snapshot that was being written when the process died is of no use.
    for entry in fs::read_dir(dir).map_err(io_err(dir))?.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with("snap-") && name.ends_with(".tmp") {
            let _ = fs::remove_file(entry.path());
        }
    }

    // Newest whole snapshot; else the newest readable one, as far as it goes.
    let mut chosen: Option<(PathBuf, Parsed)> = None;
    for (_, path) in snapshot::list(dir)? {
        // Streamed: only the small frames stay in memory (the rows are read again one
        // stripe at a time by `load_rows`).
        let parsed = snapread::parse_file(&path).map_err(io_err(&path))?;
        let bytes = || fs::metadata(&path).map_or(0, |m| m.len());
        match parsed {
            Some(p) if p.stripes != STRIPES => report.dropped.push(Dropped {
                file: path.clone(),
                offset: 0,
                bytes: bytes(),
                reason: format!(
                    "snapshot has {} stripes per counter, this build uses {STRIPES}",
                    p.stripes
                ),
            }),
            None => report.dropped.push(Dropped {
                file: path.clone(),
                offset: 0,
                bytes: bytes(),
                reason: "snapshot header is unreadable; file ignored".into(),
            }),
            Some(p) if p.dropped.is_none() => {
                chosen = Some((path, p));
                break;
            }
            Some(mut p) => {
                if let Some(d) = p.dropped.take() {
                    report.dropped.push(d);
                }
                if chosen.is_none() {
                    chosen = Some((path, p));
                }
            }
        }
    }
    if let Some((path, snap)) = chosen {
        from_lsn = snap.x;
        load_snapshot(
            &path,
            &snap,
            cutoff_ms,
            &mut counters,
            &mut marks,
            &mut report,
        )?;
        load_cold(&path, &snap, cold, &counters, &mut report);
        report.snapshot = Some(path);
    }

    let scan = logread::scan(dir, from_lsn, |rec| {
        replay(rec, cutoff_ms, &mut counters, &marks, &mut report)
    })?;
    report.dropped.extend(scan.dropped);
    Ok(Recovered {
        counters,
        next_lsn: scan.next_lsn,
        active: scan.active,
        report,
    })
}

fn load_snapshot(
    path: &Path,
    snap: &Parsed,
    cutoff_ms: u64,
    counters: &mut FastMap<String, Arc<Counter>>,
    marks: &mut Marks,
    report: &mut RecoveryReport,
) -> Result<()> {
    // Pass 1: counters (their frames follow their stripes).
    let mut by_idx: FastMap<u64, Arc<Counter>> = FastMap::default();
    for f in snap.kept() {
        let mut r = Reader::new(f);
        if r.u8() != Some(2) {
            continue;
        }
        let parsed = (|| {
            let idx = r.var()?;
            let name = r.str()?.to_string();
            let n = r.var()?;
            let mut specs = Vec::new();
            for _ in 0..n {
                specs.push(read_spec(&mut r)?);
            }
            Some((idx, name, specs))
        })();
        if let Some((idx, name, specs)) = parsed {
            let c = Counter::new(&name);
            *c.schema.write() = specs;
            let c = Arc::new(c);
            by_idx.insert(idx, c.clone());
            marks.insert(name.clone(), vec![0; STRIPES]);
            counters.insert(name, c);
        }
    }
    // Pass 2: txids, and which row frames belong to which stripe copy.
    let mut row_frames: FastMap<(u64, usize), Vec<RowFrame>> = FastMap::default();
    for f in &snap.frames {
        let f = match f {
            SnapFrame::Kept(f) => f,
            SnapFrame::Rows(rows) => {
                let Some(c) = by_idx.get(&rows.idx) else {
                    report.orphan_frames += 1;
                    continue;
                };
                if rows.stripe >= STRIPES {
                    continue;
                }
                if let Some(m) = marks.get_mut(&c.name) {
                    m[rows.stripe] = rows.lsn;
                }
                row_frames
                    .entry((rows.idx, rows.stripe))
                    .or_default()
                    .push(*rows);
                continue;
            }
        };
        let mut r = Reader::new(f);
        let kind = r.u8();
        if !matches!(kind, Some(3..=6)) {
            continue;
        }
        let Some((idx, stripe, lsn)) =
            (|| Some((r.var()?, usize::try_from(r.var()?).ok()?, r.u64()?)))()
        else {
            continue;
        };
        let Some(c) = by_idx.get(&idx) else {
            report.orphan_frames += 1;
            continue;
        };
        if stripe >= STRIPES {
            continue;
        }
        if let Some(m) = marks.get_mut(&c.name) {
            m[stripe] = lsn;
        }
        if kind == Some(5) || kind == Some(6) {
            continue; // load_cold, once the counters are known
        }
        let mut st = c.stripes[stripe].write();
        let _ = (|| {
            let n = r.var()?;
            for _ in 0..n {
                let at = r.var()?;
                let key = get_key(&mut r)?;
                let tx = r.str()?;
                if at >= cutoff_ms {
                    st.txids.insert(key, tx, at);
                }
            }
            Some(())
        })();
    }
    // Pass 3: rows, one stripe copy at a time, its frames read from the file again
    // (so memory holds one stripe's frames, not the snapshot).
    let file = fs::File::open(path).map_err(io_err(path))?;
    for ((idx, stripe), frames) in row_frames {
        let Some(c) = by_idx.get(&idx) else { continue };
        let mut payloads = Vec::with_capacity(frames.len());
        for f in &frames {
            match snapread::read_rows(&file, f).map(|p| expand_block_frame(p, f)) {
                Some(Ok(p)) => payloads.push(p),
                Some(Err(why)) => report.dropped.push(Dropped {
                    file: path.to_path_buf(),
                    offset: f.offset,
                    bytes: u64::from(f.len),
                    reason: format!("rows of counter `{}` stripe {stripe}: {why}", c.name),
                }),
                None => report.dropped.push(Dropped {
                    file: path.to_path_buf(),
                    offset: f.offset,
                    bytes: u64::from(f.len),
                    reason: format!(
                        "rows of counter `{}` stripe {stripe} changed or unreadable since the \
                         snapshot was checked",
                        c.name
                    ),
                }),
            }
        }
        let specs = c.schema.read();
        let mut st = c.stripes[stripe].write();
        load_rows(&payloads, &specs, &mut st, report);
    }
    Ok(())
}

/// A row frame as [`load_rows`] reads it: a frame `3` as it is, a frame `8` (its rows as
/// one cold block) or `10` (as one string-key block) decoded into the frame `3` holding
/// the same rows; a block that does not decode is an error naming its ids or keys.
fn expand_block_frame(
    payload: Vec<u8>,
    f: &snapread::RowFrame,
) -> std::result::Result<Vec<u8>, String> {
    match payload.first() {
        Some(8) => {}
        Some(10) => return expand_name_frame(&payload, f),
        _ => return Ok(payload),
    }
    let mut r = Reader::new(&payload);
    let head = (|| Some((r.u8()?, r.var()?, r.var()?, r.u64()?)))();
    let block = &payload[r.pos()..];
    let entry = head
        .and(crate::cold_block::entry_from_header(block, 0))
        .filter(|e| e.len as usize == block.len())
        .ok_or("a block of rows whose header does not read")?;
    let rows = crate::cold_block::decode_block(block, &entry).map_err(|e| e.to_string())?;
    let mut out = frame3_head(f, rows.columns.len(), rows.ids.len(), block.len() * 4);
    for (i, &id) in rows.ids.iter().enumerate() {
        crate::record::write_key(&mut out, Key::Id(id));
        rows.columns.iter().for_each(|c| out.put_var(c[i]));
    }
    Ok(out)
}

/// The head of the frame `3` a decoded block becomes: `f`'s counter, stripe and L, then
/// `ncols` columns and `nrows` rows (which the caller appends).
fn frame3_head(f: &snapread::RowFrame, ncols: usize, nrows: usize, capacity: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(capacity);
    out.put_u8(3);
    out.put_var(f.idx);
    out.put_var(f.stripe as u64);
    out.put_u64(f.lsn);
    out.put_var(ncols as u64);
    out.put_var(nrows as u64);
    out
}

/// [`expand_block_frame`] for a frame `10`.
fn expand_name_frame(
    payload: &[u8],
    f: &snapread::RowFrame,
) -> std::result::Result<Vec<u8>, String> {
    let mut r = Reader::new(payload);
    let bad = || "a block of string-keyed rows whose head does not read".to_string();
    (|| Some((r.u8()?, r.var()?, r.var()?, r.u64()?)))().ok_or_else(bad)?;
    let mut key = || -> Option<Box<[u8]>> {
        let n = usize::try_from(r.var()?).ok()?;
        Some(r.bytes(n)?.into())
    };
    let (first_key, last_key) = (key().ok_or_else(bad)?, key().ok_or_else(bad)?);
    let block = &payload[r.pos()..];
    let entry = crate::name_block::NameBlockEntry {
        first_key,
        last_key,
        offset: 0,
        len: u32::try_from(block.len()).map_err(|_| bad())?,
    };
    let rows = crate::name_block::decode(block, &entry).map_err(|e| e.to_string())?;
    let mut out = frame3_head(f, rows.columns.len(), rows.len(), block.len() * 4);
    for i in 0..rows.len() {
        let name = std::str::from_utf8(rows.key(i))
            .map_err(|_| format!("a key of {} bytes is not UTF-8", rows.key(i).len()))?;
        crate::record::write_key(&mut out, Key::Name(name));
        rows.columns.iter().for_each(|c| out.put_var(c[i]));
    }
    Ok(out)
}

/// One cold partition as a snapshot's frame `5` gives it.
struct ColdEntry {
    high: u32,
    seq: u64,
    rows: u32,
    words: Vec<u64>,
    blocks: Vec<BlockIndexEntry>,
}

fn parse_cold_frame(r: &mut Reader<'_>) -> Option<Vec<ColdEntry>> {
    let n = r.var()?;
    let mut out = Vec::new();
    for _ in 0..n {
        let high = u32::try_from(r.var()?).ok()?;
        let seq = r.var()?;
        let rows = u32::try_from(r.var()?).ok()?;
        let nw = r.var()?;
        let mut words = Vec::new();
        for _ in 0..nw {
            words.push(r.u64()?);
        }
        let nb = r.var()?;
        let mut blocks = Vec::new();
        for _ in 0..nb {
            blocks.push(BlockIndexEntry {
                first_id: r.u64()?,
                last_id: r.u64()?,
                offset: r.var()?,
                len: u32::try_from(r.var()?).ok()?,
            });
        }
        out.push(ColdEntry {
            high,
            seq,
            rows,
            words,
            blocks,
        });
    }
    Some(out)
}

/// One cold partition as a snapshot's frame `6` names it.
struct NamedPart {
    high: u32,
    seq: u64,
    rows: u32,
    first_id: u64,
    last_id: u64,
}

fn parse_named_frame(r: &mut Reader<'_>) -> Option<Vec<NamedPart>> {
    let n = r.var()?;
    let mut out = Vec::new();
    for _ in 0..n {
        let high = u32::try_from(r.var()?).ok()?;
        let (seq, rows) = (r.var()?, u32::try_from(r.var()?).ok()?);
        let (first, last) = (u32::try_from(r.var()?).ok()?, u32::try_from(r.var()?).ok()?);
        out.push(NamedPart {
            high,
            seq,
            rows,
            first_id: (u64::from(high) << 32) | u64::from(first),
            last_id: (u64::from(high) << 32) | u64::from(last),
        });
    }
    Some(out)
}

/// The batches one recovery opened, each once: the file, and (for frames `6`) the
/// partitions its index lists that no frame has taken yet.
#[derive(Default)]
struct Batches {
    files: FastMap<u64, Option<Arc<ColdFile>>>,
    indexes: FastMap<u64, FastMap<u32, ColdPart>>,
    /// String-key batches' runs by place (`None`: the index could not be read, why).
    name_indexes: FastMap<u64, std::result::Result<Vec<Option<IndexedRun>>, String>>,
}

impl Batches {
    fn file(&mut self, cold: &Arc<ColdShared>, c: &Counter, seq: u64) -> Option<Arc<ColdFile>> {
        self.files
            .entry(seq)
            .or_insert_with(|| ColdFile::open(cold, seq, &c.cold_stats).ok())
            .clone()
    }

    /// Takes run `place` of string-key batch `seq` from the batch's index (read the first
    /// time the batch is named), or says why it cannot.
    fn take_run(
        &mut self,
        cold: &Arc<ColdShared>,
        c: &Counter,
        seq: u64,
        place: u32,
    ) -> std::result::Result<IndexedRun, String> {
        if !self.name_indexes.contains_key(&seq) {
            let runs = match self.file(cold, c, seq) {
                None => Err("is missing or unreadable".to_string()),
                Some(f) => crate::cold_names::read_index(&f)
                    .map(|runs| runs.into_iter().map(Some).collect())
                    .map_err(|e| format!("has no readable index ({e})")),
            };
            self.name_indexes.insert(seq, runs);
        }
        match self.name_indexes.get_mut(&seq) {
            Some(Ok(runs)) => runs
                .get_mut(place as usize)
                .and_then(Option::take)
                .ok_or_else(|| format!("does not hold run {place}")),
            Some(Err(why)) => Err(why.clone()),
            None => Err("is missing".to_string()),
        }
    }

    /// Takes partition `high` of batch `seq` from the batch's own index, read (or
    /// rebuilt from its blocks, which `report` notes) the first time the batch is named.
    fn take(
        &mut self,
        cold: &Arc<ColdShared>,
        c: &Counter,
        seq: u64,
        high: u32,
        report: &mut RecoveryReport,
    ) -> Option<ColdPart> {
        if !self.indexes.contains_key(&seq) {
            // Unreadable: its partitions are reported lost by the caller.
            let index = self.file(cold, c, seq).and_then(|f| f.read_index().ok());
            let mut parts = FastMap::default();
            if let Some(index) = index {
                if let Some(stop) = index.rebuilt {
                    report.repaired.push(format!(
                        "counter `{}`: the index of cold batch {} was missing or damaged; \
                         rebuilt from its blocks ({} partitions; the walk stopped: {stop})",
                        c.name,
                        crate::cold::cold_name(seq),
                        index.parts.len(),
                    ));
                }
                parts.extend(index.parts);
            }
            self.indexes.insert(seq, parts);
        }
        self.indexes.get_mut(&seq)?.remove(&high)
    }
}

/// Puts the cold partitions a snapshot names (frames `5` and `6`) back in their stripes,
/// opening each cold batch once. A partition whose batch is missing, or does not hold it
/// whole, is reported with the ids it held.
fn load_cold(
    path: &Path,
    snap: &Parsed,
    cold: &Arc<ColdShared>,
    counters: &FastMap<String, Arc<Counter>>,
    report: &mut RecoveryReport,
) {
    let mut by_idx: FastMap<u64, Arc<Counter>> = FastMap::default();
    for f in snap.kept() {
        let mut r = Reader::new(f);
        if r.u8() != Some(2) {
            continue;
        }
        if let (Some(idx), Some(name)) = (r.var(), r.str()) {
            if let Some(c) = counters.get(name) {
                by_idx.insert(idx, c.clone());
            }
        }
    }
    let lost =
        |c: &Counter, seq: u64, rows: u32, first: u64, last: u64, why: &str| crate::Dropped {
            file: path.to_path_buf(),
            offset: 0,
            bytes: 0,
            reason: format!(
                "counter `{}`: cold batch {} {why}; its {rows} rows (ids {first}..={last}) \
                 are lost",
                c.name,
                crate::cold::cold_name(seq),
            ),
        };
    let mut batches = Batches::default();
    for f in snap.kept() {
        let mut r = Reader::new(f);
        let kind = r.u8();
        if kind != Some(5) && kind != Some(6) && kind != Some(7) {
            continue;
        }
        let head = (|| Some((r.var()?, usize::try_from(r.var()?).ok()?, r.u64()?)))();
        let Some((idx, stripe, _lsn)) = head.filter(|h| h.1 < STRIPES) else {
            report.anomalies += 1;
            continue;
        };
        let Some(c) = by_idx.get(&idx) else {
            report.orphan_frames += 1;
            continue;
        };
        if kind == Some(7) {
            let Some(entries) = parse_runs_frame(&mut r) else {
                report.anomalies += 1;
                continue;
            };
            let mut st = c.stripes[stripe].write();
            for e in entries {
                let run = batches.take_run(cold, c, e.seq, e.place).and_then(|found| {
                    let (first, last) = found.run.key_range();
                    if found.stripe != stripe || found.run.rows() != e.rows {
                        return Err(format!(
                            "does not hold run {} as the snapshot describes it (keys \
                                 {first:?}..={last:?})",
                            e.place
                        ));
                    }
                    found
                        .run
                        .with_dead(&e.dead)
                        .ok_or_else(|| format!("run {} is shorter than its dead rows", e.place))
                });
                match run {
                    Ok(run) => st.insert_name_run(run),
                    Err(why) => report.dropped.push(crate::Dropped {
                        file: path.to_path_buf(),
                        offset: 0,
                        bytes: 0,
                        reason: format!(
                            "counter `{}`: cold batch {} {why}; the {} string-keyed rows of \
                             its run {} (stripe {stripe}) are lost",
                            c.name,
                            crate::cold::cold_name(e.seq),
                            u64::from(e.rows) - e.dead.len() as u64,
                            e.place,
                        ),
                    }),
                }
            }
            continue;
        }
        if kind == Some(6) {
            let Some(entries) = parse_named_frame(&mut r) else {
                report.anomalies += 1;
                continue;
            };
            let mut st = c.stripes[stripe].write();
            for e in entries {
                match batches.take(cold, c, e.seq, e.high, report) {
                    Some(part)
                        if part.rows() == u64::from(e.rows)
                            && part.id_range() == (e.first_id, e.last_id) =>
                    {
                        st.insert_cold(e.high, part)
                    }
                    found => {
                        let why = if found.is_some() {
                            "does not hold its partition whole"
                        } else {
                            "is missing, unreadable or does not hold its partition"
                        };
                        let (first, last) = (e.first_id, e.last_id);
                        report
                            .dropped
                            .push(lost(c, e.seq, e.rows, first, last, why));
                    }
                }
            }
            continue;
        }
        let Some(entries) = parse_cold_frame(&mut r) else {
            report.anomalies += 1;
            continue;
        };
        let mut st = c.stripes[stripe].write();
        for e in entries {
            let file = batches.file(cold, c, e.seq);
            let (Some(file), Some(filter)) = (file, Bloom::from_words(e.words)) else {
                let first = e.blocks.first().map_or(0, |b| b.first_id);
                let last = e.blocks.last().map_or(0, |b| b.last_id);
                let why = "is missing or unreadable";
                report
                    .dropped
                    .push(lost(c, e.seq, e.rows, first, last, why));
                continue;
            };
            st.insert_cold(e.high, ColdPart::new(file, e.blocks, filter, e.rows));
        }
    }
}

/// Loads the rows of one stripe copy (its row frames, in file order). A copy lists its
/// rows in table order, and a table filled in its own order piles every row inserted so
/// far at the front of its home range (each insert then walks the whole pile: quadratic);
/// so the rows are inserted in a golden-ratio stride over that order instead, every
/// prefix of which is spread over the whole range, as rows written in any other order are.
/// The stride runs within each partition's rows (ids with the same high 32 bits), one
/// partition after the other: a stride over the whole stripe touched a different
/// partition at every row, a cache miss each, and loading 102 M hot rows took minutes.
fn load_rows(
    all: &[Vec<u8>],
    specs: &[ColumnSpec],
    st: &mut crate::stripe::Stripe,
    report: &mut RecoveryReport,
) {
    // Where each row starts: (partition, frame, offset, columns in that frame); string
    // keys share one group of their own.
    let mut rows: Vec<(u64, u32, u32, u32)> = Vec::new();
    for (fi, f) in all.iter().enumerate() {
        let mut r = Reader::new(f);
        let ok = (|| {
            r.u8()?;
            r.var()?;
            r.var()?;
            r.u64()?;
            let ncols = u32::try_from(r.var()?).ok()?;
            let nrows = r.var()?;
            for _ in 0..nrows {
                let at = u32::try_from(r.pos()).ok()?;
                let group = match get_key(&mut r)? {
                    OwnedKey::Id(id) => id >> 32,
                    OwnedKey::Name(_) => u64::MAX,
                };
                for _ in 0..ncols {
                    r.var()?;
                }
                rows.push((group, u32::try_from(fi).ok()?, at, ncols));
            }
            Some(())
        })();
        if ok.is_none() {
            report.anomalies += 1;
        }
    }
    rows.sort_unstable_by_key(|r| r.0);
    let order = rows.chunk_by(|a, b| a.0 == b.0).flat_map(|group| {
        let (n, step) = (group.len(), stride(group.len()));
        (0..n).map(move |i| &group[(i * step) % n])
    });
    let mut vals = Vec::new();
    for &(_, fi, at, ncols) in order {
        let mut r = Reader::new(&all[fi as usize][at as usize..]);
        let Some(key) = get_key(&mut r) else { continue };
        vals.clear();
        for _ in 0..ncols {
            vals.push(r.var().unwrap_or(0));
        }
        for (col, v) in vals.iter().enumerate().take(specs.len()) {
            if *v != specs[col].default {
                st.set(key.as_key(), col, *v, specs);
            }
        }
        report.snapshot_rows += 1;
    }
}

/// A step coprime with `n` near `n / φ`, so `i * step mod n` visits every index once,
/// each prefix spread evenly.
fn stride(n: usize) -> usize {
    if n < 3 {
        return 1;
    }
    let mut step = ((n as f64) * 0.618_033_988_75) as usize;
    while gcd(step, n) != 1 {
        step += 1;
    }
    step
}

fn gcd(mut a: usize, mut b: usize) -> usize {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

fn stripe_mark(marks: &Marks, counter: &str, key: &OwnedKey) -> (usize, u64) {
    let s = stripe_of(key.as_key());
    (s, marks.get(counter).map_or(0, |m| m[s]))
}

fn replay(
    rec: Record,
    cutoff_ms: u64,
    counters: &mut FastMap<String, Arc<Counter>>,
    marks: &Marks,
    report: &mut RecoveryReport,
) {
    report.replayed += 1;
    match rec.op {
        Op::CreateCounter { name } => {
            counters
                .entry(name.clone())
                .or_insert_with(|| Arc::new(Counter::new(&name)));
        }
        Op::AddColumn { counter, spec } => {
            let Some(c) = counters.get(&counter) else {
                report.anomalies += 1;
                return;
            };
            let mut schema = c.schema.write();
            if !schema.iter().any(|s: &ColumnSpec| s.name == spec.name) && spec.check().is_ok() {
                schema.push(spec);
            }
        }
        Op::Set {
            counter,
            key,
            col,
            value,
            txid,
        } => {
            let txid = txid.filter(|_| rec.ts_ms >= cutoff_ms);
            let at = (rec.lsn, rec.ts_ms);
            replay_values(
                counters,
                &counter,
                marks,
                at,
                col,
                [(key, value)],
                txid,
                report,
            );
        }
        Op::SetRun {
            counter,
            col,
            items,
        } => {
            let at = (rec.lsn, rec.ts_ms);
            replay_values(counters, &counter, marks, at, col, items, None, report);
        }
        Op::SetRows { counter, rows } => {
            let at = (rec.lsn, rec.ts_ms);
            for (key, items) in rows {
                for (col, value) in items {
                    let one = [(key.clone(), value)];
                    replay_values(counters, &counter, marks, at, col, one, None, report);
                }
            }
        }
        Op::Delete { counter, key } => {
            let Some(c) = counters.get(&counter) else {
                report.anomalies += 1;
                return;
            };
            let (s, mark) = stripe_mark(marks, &counter, &key);
            if rec.lsn < mark {
                return;
            }
            let specs = c.schema.read();
            let mut st = c.stripes[s].write();
            if let Err(e) = st.thaw_for(key.as_key(), &specs) {
                report.anomalies += 1;
                report.dropped.push(cold_unreadable(&counter, rec.lsn, &e));
                return;
            }
            st.delete(key.as_key(), &specs);
        }
        Op::Clear { counter } => {
            let Some(c) = counters.get(&counter) else {
                report.anomalies += 1;
                return;
            };
            let marks = marks.get(&counter);
            for (s, stripe) in c.stripes.iter().enumerate() {
                // A stripe whose snapshot copy is newer than the clear already shows it.
                if marks.is_none_or(|m| rec.lsn >= m[s]) {
                    stripe.write().clear();
                }
            }
        }
    }
}

/// Replays the values of a `Set` record (one, maybe with a txid still within the window)
/// or of a `SetRun` record's items (many, no txid), `at` = the record's lsn and time:
/// a value whose stripe's snapshot copy is newer than the record is skipped, else its
/// row is brought back from the cold tier if it is there and set.
#[allow(clippy::too_many_arguments)]
fn replay_values(
    counters: &FastMap<String, Arc<Counter>>,
    counter: &str,
    marks: &Marks,
    at: (u64, u64),
    col: u16,
    items: impl IntoIterator<Item = (OwnedKey, u64)>,
    txid: Option<String>,
    report: &mut RecoveryReport,
) {
    let Some(c) = counters.get(counter) else {
        report.anomalies += 1;
        return;
    };
    let (lsn, ts_ms) = at;
    for (key, value) in items {
        let (s, mark) = stripe_mark(marks, counter, &key);
        if lsn < mark {
            continue;
        }
        let specs = c.schema.read();
        if col as usize >= specs.len() {
            report.anomalies += 1;
            return;
        }
        let mut st = c.stripes[s].write();
        if let Err(e) = st.thaw_for(key.as_key(), &specs) {
            report.anomalies += 1;
            report.dropped.push(cold_unreadable(counter, lsn, &e));
            continue;
        }
        st.set(key.as_key(), col as usize, value, &specs);
        if let Some(t) = &txid {
            st.txids.insert(key, t, ts_ms);
        }
    }
}

/// A log record that could not be replayed because its row's cold block is damaged.
fn cold_unreadable(counter: &str, lsn: u64, e: &crate::Error) -> Dropped {
    Dropped {
        file: PathBuf::new(),
        offset: lsn,
        bytes: 0,
        reason: format!("counter `{counter}`: log record {lsn} not replayed: {e}"),
    }
}

/// One run as a snapshot's frame `7` names it.
struct RunEntry {
    seq: u64,
    place: u32,
    rows: u32,
    dead: Vec<u32>,
}

/// The runs of a frame `7` after its head.
fn parse_runs_frame(r: &mut Reader<'_>) -> Option<Vec<RunEntry>> {
    let n = r.var()?;
    let mut out = Vec::new();
    for _ in 0..n {
        let seq = r.var()?;
        let place = u32::try_from(r.var()?).ok()?;
        let rows = u32::try_from(r.var()?).ok()?;
        let count = r.var()?;
        if count > u64::from(rows) {
            return None;
        }
        let mut dead = Vec::with_capacity(count as usize);
        let mut at = 0u64;
        for _ in 0..count {
            at += r.var()?;
            dead.push(u32::try_from(at).ok()?);
        }
        out.push(RunEntry {
            seq,
            place,
            rows,
            dead,
        });
    }
    r.is_empty().then_some(out)
}

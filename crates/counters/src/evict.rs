//! Eviction: which dense partitions go to the cold tier, and moving them there.
//!
//! A pass ages every dense partition (stamps those written since the last pass), picks
//! those not written for `cold_after`, and, while the engine's memory estimate is above
//! `max_memory`, the least recently written of the rest (down to 90% of it, so a pass
//! does not run again at once). Per counter, the chosen partitions are copied under their
//! stripe's lock, a bounded number of bytes of copies at a time, each such group written
//! as one cold batch (fsynced, file and directory) with no lock held, and only then
//! swapped for their cold index; a partition written in between
//! stays in RAM (its copy on disk is garbage, collected later). So a crash at any moment
//! loses nothing: until the swap the RAM copy (and the log) holds the rows, and a
//! snapshot names only batches already durable.
//!
//! String-keyed rows go by the row ([`crate::cold_names`]): each has a written bit, and
//! the counter's clock ticks when the last tick is `cold_after` old (or at every pass
//! while memory is above `max_memory`): the rows not written since the last tick are
//! copied, sorted, written as one run per stripe, and dropped from RAM if its values
//! are still the copy's; every bit is cleared. So a row goes cold between `cold_after`
//! and twice that after its last write, and under memory pressure a row not written
//! since the last pass goes at once. The run is put in its stripe with every row dead,
//! and rows are swapped in (dropped from RAM, made live) a few thousand per lock hold,
//! as are the copies: a key is in RAM or live in one run at every moment, and writers
//! of a stripe never wait for more than one step. A row written between its copy and
//! its swap stays in RAM, dead in the run.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use crate::cold::{write_batch, ColdShared, Frozen};
use crate::cold_names::{write_batch as write_names, FrozenNames};
use crate::counter::{Counter, STRIPES};
use crate::error::Result;
use crate::Eviction;

/// When partitions go cold.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Policy {
    /// Not written for this long.
    pub cold_after: Option<Duration>,
    /// The engine's memory estimate above this many bytes.
    pub max_memory: Option<u64>,
}

/// One pass over `counters`; `bytes_now` is the engine's memory estimate.
pub(crate) fn pass(
    counters: &[Arc<Counter>],
    shared: &Arc<ColdShared>,
    policy: Policy,
    now_ms: u64,
    bytes_now: u64,
) -> Result<Eviction> {
    // (counter, stripe, high, last write, bytes)
    let mut aged = Vec::new();
    for (ci, c) in counters.iter().enumerate() {
        for (s, stripe) in c.stripes.iter().enumerate() {
            for a in stripe.write().age(now_ms) {
                aged.push((ci, s, a));
            }
        }
    }
    let mut chosen = vec![false; aged.len()];
    if let Some(after) = policy.cold_after {
        let limit = now_ms.saturating_sub(after.as_millis() as u64);
        for (i, (_, _, a)) in aged.iter().enumerate() {
            if a.last_write_ms <= limit {
                chosen[i] = true;
            }
        }
    }
    if let Some(max) = policy.max_memory {
        let mut left = bytes_now.saturating_sub(
            aged.iter()
                .zip(&chosen)
                .filter(|(_, &c)| c)
                .map(|((_, _, a), _)| a.bytes as u64)
                .sum(),
        );
        if left > max {
            let target = max / 10 * 9;
            let mut order: Vec<usize> = (0..aged.len()).filter(|&i| !chosen[i]).collect();
            order.sort_by_key(|&i| aged[i].2.last_write_ms);
            for i in order {
                if left <= target {
                    break;
                }
                chosen[i] = true;
                left = left.saturating_sub(aged[i].2.bytes as u64);
            }
        }
    }
    let mut out = Eviction::default();
    let pressure = policy.max_memory.is_some_and(|max| {
        let chosen_bytes: u64 = aged
            .iter()
            .zip(&chosen)
            .filter(|(_, &c)| c)
            .map(|((_, _, a), _)| a.bytes as u64)
            .sum();
        bytes_now.saturating_sub(chosen_bytes) > max
    });
    let all_names = policy.cold_after == Some(Duration::ZERO);
    for c in counters {
        let tick = c.names_tick_ms.load(Ordering::Relaxed);
        let due = pressure
            || policy
                .cold_after
                .is_some_and(|d| now_ms.saturating_sub(tick) >= d.as_millis() as u64);
        if due {
            evict_names(c, shared, all_names, &mut out)?;
            c.names_tick_ms.store(now_ms, Ordering::Relaxed);
        }
        merge_names(c, shared, &mut out)?;
    }
    for (ci, c) in counters.iter().enumerate() {
        let mut highs: Vec<Vec<u32>> = vec![Vec::new(); STRIPES];
        for (i, (cj, s, a)) in aged.iter().enumerate() {
            if chosen[i] && *cj == ci {
                highs[*s].push(a.high);
            }
        }
        if highs.iter().all(Vec::is_empty) {
            continue;
        }
        evict_counter(c, shared, &highs, &mut out)?;
    }
    Ok(out)
}

/// Bytes of row copies ([`Frozen`]: 8 per id and per value) one batch gathers before
/// it is written out: what an eviction holds in memory beyond the rows themselves.
/// Without a bound, moving 100 M rows at once (`Engine::evict(ZERO)` at a billion rows)
/// copied all of them first, 24 bytes a row, for 2.4 GB beside the rows.
const BATCH_COPY_BYTES: usize = 64 << 20;

/// Evicts partitions `highs[stripe]` of one counter, in batches of at most
/// [`BATCH_COPY_BYTES`] of copies (a partition is never split), each batch one file.
fn evict_counter(
    c: &Counter,
    shared: &Arc<ColdShared>,
    highs: &[Vec<u32>],
    out: &mut Eviction,
) -> Result<()> {
    let mut todo = highs
        .iter()
        .enumerate()
        .flat_map(|(s, hs)| hs.iter().map(move |&h| (s, h)))
        .peekable();
    while todo.peek().is_some() {
        // The schema is held while the rows are copied: a column added before a copy is
        // in it, and one added after can only hold values written after (which keep the
        // partition in RAM, see `Stripe::freeze`). It is let go before the batch is
        // written, so `add_column` never waits for the disk.
        let schema = c.schema.read();
        let specs = schema.clone();
        if specs.is_empty() {
            return Ok(());
        }
        let mut frozen: Vec<(usize, Frozen)> = Vec::new();
        let mut copied = 0usize;
        while copied < BATCH_COPY_BYTES {
            let Some((s, h)) = todo.next() else { break };
            // One partition per lock hold: writers of the stripe wait for one copy.
            if let Some(f) = c.stripes[s].write().copy_for_eviction(h, &specs) {
                copied += f.ids.len() * 8 * (1 + f.columns.len());
                frozen.push((s, f));
            }
        }
        drop(schema);
        if frozen.is_empty() {
            continue;
        }
        let widths: Vec<u8> = specs.iter().map(|s| s.bits).collect();
        let (stripes, parts): (Vec<usize>, Vec<Frozen>) = frozen.into_iter().unzip();
        let cold = write_batch(shared, &c.cold_stats, &parts, &widths)?;
        for ((s, f), part) in stripes.iter().zip(&parts).zip(cold) {
            let bytes = part.bytes_disk();
            let rows = part.rows();
            if c.stripes[*s].write().freeze(f.high, part, &specs) {
                out.partitions += 1;
                out.rows += rows;
                out.bytes_disk += bytes;
            } else {
                out.kept_hot += 1;
            }
        }
    }
    Ok(())
}

/// Rows copied, or swapped into a run, per hold of a stripe's lock: writers of the
/// stripe wait for at most this many rows' work. Measured at 10 M rows (bench/notes/runs.md,
/// "String-keyed rows in the cold tier"): 4,096 rows a hold took up to 9 ms (a swap
/// finds, compares and unlinks each row: cache misses); a whole stripe a hold, as
/// before, stalled a writer for 253 ms.
const NAME_STEP: usize = 1024;

/// Moves one counter's string-keyed rows not written since its clock's last tick (all of
/// them when `all`) to the cold tier: stripe by stripe, copies of at most
/// [`BATCH_COPY_BYTES`] a batch file, each stripe's rows one run; copies and swaps go
/// [`NAME_STEP`] rows per lock hold.
fn evict_names(c: &Counter, shared: &Arc<ColdShared>, all: bool, out: &mut Eviction) -> Result<()> {
    let mut stripes = 0..STRIPES;
    loop {
        // As for partitions: the schema is held while rows are copied, so a column added
        // later can only hold values written after the copy.
        let schema = c.schema.read();
        let specs = schema.clone();
        if specs.is_empty() {
            return Ok(());
        }
        let mut frozen = Vec::new();
        let mut copied = 0usize;
        let mut more = false;
        while copied < BATCH_COPY_BYTES {
            let Some(s) = stripes.next() else { break };
            more = true;
            let mut rows = Vec::new();
            let mut from = Some(0);
            while let Some(at) = from {
                // One lock hold a step; the sort runs after the last.
                let (step, next) = c.stripes[s]
                    .write()
                    .copy_names_for_eviction(&specs, all, at, NAME_STEP);
                rows.extend(step);
                from = next;
            }
            if !rows.is_empty() {
                let f = FrozenNames::sorted(s, rows, specs.len());
                copied += f.bytes();
                frozen.push(f);
            }
        }
        drop(schema);
        if !more {
            return Ok(());
        }
        if frozen.is_empty() {
            continue;
        }
        let widths: Vec<u8> = specs.iter().map(|s| s.bits).collect();
        let runs = write_names(shared, &c.cold_stats, &frozen, &widths)?;
        for (f, run) in frozen.iter().zip(runs) {
            let bytes = run.bytes_disk();
            let id = run.id();
            c.stripes[f.stripe].write().attach_name_run(run);
            let mut rows = 0;
            for start in (0..f.len()).step_by(NAME_STEP) {
                let end = (start + NAME_STEP).min(f.len());
                // The schema as it is now: a row with a value in a column added since
                // its copy is no longer the copy's.
                let schema = c.schema.read();
                rows += c.stripes[f.stripe]
                    .write()
                    .freeze_names(f, start..end, id, &schema);
            }
            let schema = c.schema.read();
            c.stripes[f.stripe].write().end_freeze(id, &schema);
            out.rows += rows;
            out.name_rows += rows;
            if rows > 0 {
                out.bytes_disk += bytes;
            }
        }
    }
}

/// Merges the runs of string-keyed rows of every stripe of `c` that has too many, or one
/// mostly dead ([`crate::name_merge`]), one stripe at a time.
fn merge_names(c: &Counter, shared: &Arc<ColdShared>, out: &mut Eviction) -> Result<()> {
    for stripe in c.stripes.iter().enumerate() {
        let (s, lock) = stripe;
        let sources = lock.read().runs_to_merge();
        if sources.is_empty() {
            continue;
        }
        let specs = c.schema.read().clone();
        let merged = crate::name_merge::merge(shared, &c.cold_stats, s, &sources, &specs)?;
        lock.write().swap_merged(&sources, merged)?;
        out.runs_merged += sources.len() as u64;
    }
    Ok(())
}

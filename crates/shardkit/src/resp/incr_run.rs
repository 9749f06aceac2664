//! A pipeline's increments gathered into one engine call.
//!
//! `redis-benchmark -P 16 -t incr` sends sixteen `INCR`s in one read. One by one, each
//! would look up its counter, take the schema lock, its stripe lock and the log's
//! buffer lock, and append its record. Instead `INCR`, `INCRBY`, `DECR`, `DECRBY` and
//! `HINCRBY` of one counter and column that follow each other in a batch wait here, and
//! go to [`shardkit_counters::Engine::incr_run`] together: one look-up, one schema
//! lock, each touched stripe locked once and the log's buffer once for the run.
//!
//! Replies stay in command order: the run is flushed (applied, its replies written)
//! before anything else writes a reply or reads a counter, which is before any other
//! command of the batch, any error reply, and the end of the batch. Nothing of a run is
//! acknowledged before the batch's commit, as for every write.
//!
//! On a cluster node a run belongs to the slot group whose store it was queued for
//! (its `group`, [`IncrRun::is_for_group`]): it goes on across commands whose keys'
//! slots are in that group (`redis-benchmark --cluster -P 16` sends one slot a
//! connection; a cluster client's pipeline to a node holds that node's slots), is
//! flushed into that store wherever the flush happens, and its writes are waited for as
//! that store's ([`Session::wait_for_store`]). A command for another group, or one
//! routed elsewhere, flushes it first (`cluster/dispatch.rs`).

use super::session::Session;
use super::values::engine_error;
use bytes::BytesMut;
use shardkit_counters::{Error, Key};
use shardkit_node::counters::CounterKey;
use shardkit_node::counters::Counters;
use shardkit_resp::reply;
use std::sync::Arc;

/// Increments in one run at most (a longer pipeline makes several runs).
const MAX_RUN: usize = 512;

/// Increments waiting to be applied together: all of one counter and column.
#[derive(Debug, Default)]
pub struct IncrRun {
    counter: String,
    column: String,
    /// The rows' texts, one after another (kept between batches, so no allocation
    /// once warm).
    rows: String,
    /// Each increment: its row's range in `rows`, and the delta.
    items: Vec<(usize, usize, i64)>,
    results: Vec<Result<u64, Error>>,
    /// On a cluster node, the store of the slot group the waiting increments are for
    /// (set by `cluster/dispatch.rs` when a run starts there); `None`: the node's own.
    group: Option<Arc<Counters>>,
}

impl IncrRun {
    /// Whether nothing waits.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Whether the waiting increments (if any) are for group store `counters`: a
    /// command of that group may join them, any other must flush them first.
    pub fn is_for_group(&self, counters: &Arc<Counters>) -> bool {
        self.group
            .as_ref()
            .is_some_and(|g| Arc::ptr_eq(g, counters))
    }

    /// Marks the waiting increments as group store `counters`'s (after a cluster
    /// command queued the first of them).
    pub fn set_group(&mut self, counters: &Arc<Counters>) {
        if !self.items.is_empty() && self.group.is_none() {
            self.group = Some(Arc::clone(counters));
        }
    }

    fn joins(&self, counter: &str, column: &str) -> bool {
        self.items.is_empty()
            || (self.items.len() < MAX_RUN && self.counter == counter && self.column == column)
    }

    fn push(&mut self, key: &CounterKey<'_>, column: &str, delta: i64) {
        if self.items.is_empty() {
            self.counter.clear();
            self.counter.push_str(key.counter);
            self.column.clear();
            self.column.push_str(column);
            self.rows.clear();
        }
        let start = self.rows.len();
        self.rows.push_str(key.row);
        self.items.push((start, self.rows.len(), delta));
    }
}

/// Whether command `name` may join a run (the others flush it first).
#[inline]
pub fn joins_runs(name: &str) -> bool {
    matches!(name, "incr" | "incrby" | "decr" | "decrby" | "hincrby")
}

/// Adds `delta` to a cell, now or with the rest of the run; the reply is written when
/// the run is flushed.
pub fn queue(
    counters: &Counters,
    session: &mut Session,
    out: &mut BytesMut,
    key: &CounterKey<'_>,
    column: &str,
    delta: i64,
) {
    if !session.incrs.joins(key.counter, column) {
        flush(counters, session, out);
    }
    session.incrs.push(key, column, delta);
}

/// Writes error reply `msg` for the current command, after the run's replies.
pub fn refuse(call: &mut super::table::Call<'_, '_>, msg: &str) {
    flush(call.counters, call.session, call.out);
    reply::error(call.out, msg);
}

/// Applies the waiting increments and writes their replies, in order: to `counters`,
/// or on a cluster node to the group store they were queued for.
pub fn flush(counters: &Counters, session: &mut Session, out: &mut BytesMut) {
    let run = &mut session.incrs;
    if run.items.is_empty() {
        return;
    }
    let group = run.group.take();
    let counters = group.as_deref().unwrap_or(counters);
    let keys: Vec<(Key<'_>, i64)> = run
        .items
        .iter()
        .map(|&(start, end, delta)| (Key::parse(&run.rows[start..end]), delta))
        .collect();
    let (counter, column, results) = (&run.counter, &run.column, &mut run.results);
    let applied = counters.write(counter, column, |e| {
        e.incr_run(counter, column, &keys, results)
    });
    let pending = match applied {
        Ok(pending) => {
            for result in results.drain(..) {
                match result {
                    Ok(v) => reply::integer(out, v as i64),
                    Err(e) => engine_error(out, &e),
                }
            }
            pending
        }
        // Nothing applied (no such counter or column, the log failed): each command
        // gets the error it would have had alone.
        Err(e) => {
            for _ in 0..keys.len() {
                engine_error(out, &e);
            }
            shardkit_counters::Pending::NONE
        }
    };
    drop(keys);
    session.incrs.items.clear();
    match &group {
        Some(g) => session.wait_for_store(g, pending),
        None => session.pending = session.pending.max(pending),
    }
}

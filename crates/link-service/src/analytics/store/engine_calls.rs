//! How the write path talks to the engine: items handed over in runs of [`RUN`], which
//! of a call's per-item results count as a refused row, the one-column increments of
//! the label and site rows, and the hooks with which tests make the engine refuse a
//! call or a row.

use super::COLUMN;
use shardkit_counters::{Engine, Error, Key, Pending};

/// Rows (day rows) or increments (one column) handed to the engine at once (its
/// stripes stay locked that long).
pub(super) const RUN: usize = 1024;

/// A count as the engine's delta.
pub(super) fn clamp(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// The rows of `run` (indices) the engine refused for a reason other than a value,
/// from its `results` (one an item, rows in order), keeping the first such error in
/// `first`. Value refusals (below zero, past a column's max) leave that value as it
/// was, as `incr_batch` does; a row refused otherwise (its cold block unreadable)
/// changed nothing.
pub(super) fn refused_rows<T>(
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
/// refused: the items from `reached` on are not stored, those before it are, and
/// `newest` already holds their log position, so the commit that ends a stopped
/// write makes them durable too.
pub(super) fn incr_column(
    engine: &Engine,
    counter: &str,
    items: &[(String, u64)],
    newest: &mut Pending,
    refused: &mut Option<Error>,
    reached: &mut usize,
) -> Result<(), Error> {
    let mut results = Vec::new();
    for (k, run) in items.chunks(RUN).enumerate() {
        let run: Vec<(Key<'_>, i64)> = run
            .iter()
            .map(|(key, n)| (Key::Name(key), clamp(*n)))
            .collect();
        *reached = k * RUN;
        before_call(engine);
        let pending = engine.incr_run(counter, COLUMN, &run, &mut results)?;
        *newest = (*newest).max(pending);
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
    Ok(())
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

/// Where a [`write()`](super::write()) may be stopped by [`stop_before_call`]: before
/// each engine write call.
#[cfg(test)]
pub(super) fn before_call(engine: &Engine) {
    STOP_BEFORE_CALL.with(|at| match at.get() {
        Some(0) => {
            engine.set_read_only(true);
            at.set(None);
        }
        Some(n) => at.set(Some(n - 1)),
        None => {}
    });
}

/// Where a [`write()`](super::write()) may be stopped in tests: nothing here.
#[cfg(not(test))]
pub(super) fn before_call(_: &Engine) {}

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

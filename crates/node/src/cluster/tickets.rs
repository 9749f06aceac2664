//! Ticket sequences on a cluster node: a sequence belongs to the slot of its name and is
//! served by that slot's owner from its group's state, so it moves and fails over with
//! the group and no two nodes hand out the same number.
//!
//! A sequence is one row of the group's counter `shardkit_tickets`, keyed by its name,
//! column `next`: how many positions were handed out. A call adds `count` through the
//! group's log (durable before the reply, as any write) and answers positions
//! `next - count .. next - 1` as numbers under `[tickets] increment` and `offset`.
//! Both frontends (`TICKET.NEXT`, `POST /api/tickets/{name}`) call this.

use crate::counters::CounterKey;
use shardkit_counters::{ColumnOptions, Error};
use shardkit_ids::tickets::SequenceSpec;

/// The counter of every group that holds its ticket sequences.
pub const COUNTER: &str = "shardkit_tickets";
/// Its column: positions handed out so far.
const COLUMN: &str = "next";

/// Why a sequence hands out no more numbers.
pub const USED_UP: &str = "the ticket sequence is used up (past 2^63-1)";

/// Hands out `n` more positions of sequence `name` in a group's `engine` (its counter
/// and column made on first use): answers the sequence's new `next` and what to
/// commit before the numbers are given out. `deferred`: the caller commits (a RESP
/// batch); otherwise the call waits for the log itself.
pub fn reserve(
    engine: &shardkit_counters::Engine,
    name: &str,
    n: u64,
    deferred: bool,
) -> Result<(u64, shardkit_counters::Pending), Error> {
    let key = CounterKey {
        counter: COUNTER,
        row: name,
        column: Some(COLUMN),
    };
    ignore_exists(engine.create_counter(COUNTER))?;
    ignore_exists(engine.add_column(COUNTER, COLUMN, ColumnOptions::default()))?;
    if deferred {
        engine.incr_deferred(COUNTER, key.key(), COLUMN, n as i64, None)
    } else {
        let next = engine.incr(COUNTER, key.key(), COLUMN, n as i64, None)?;
        Ok((next, shardkit_counters::Pending::NONE))
    }
}

/// The numbers of positions `next - n .. next` under `[tickets] increment` and
/// `offset` (counted as issued); `None` past 2^63-1.
pub fn numbers_of(spec: SequenceSpec, next: u64, n: u64) -> Option<Vec<u64>> {
    let numbers: Option<Vec<u64>> = (next - n..next).map(|p| spec.number(p)).collect();
    if numbers.is_some() {
        crate::telemetry::add(&crate::telemetry::TICKETS_ISSUED, n);
    }
    numbers
}

fn ignore_exists(result: Result<(), Error>) -> Result<(), Error> {
    match result {
        Err(Error::CounterExists(_) | Error::ColumnExists { .. }) => Ok(()),
        other => other,
    }
}

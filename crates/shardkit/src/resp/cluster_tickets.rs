//! `TICKET.NEXT name [count]` on a cluster node: a sequence belongs to the slot of its
//! name and is served by that slot's owner from its group's state, so it moves and
//! fails over with the group and no two nodes hand out the same number.
//!
//! A sequence is one row of the group's counter `shardkit_tickets`, keyed by its name,
//! column `next`: how many positions were handed out. A call adds `count` through the
//! group's log (durable before the reply, as any write) and answers positions
//! `next - count .. next - 1` as numbers under `[tickets] increment` and `offset`.

use super::reply;
use super::session::Session;
use crate::cluster::live::Live;
use crate::cluster::route::{route, Route};
use crate::counter_access::CounterKey;
use crate::state::AppState;
use bytes::BytesMut;
use shardkit_counters::{ColumnOptions, Error};

/// The counter of every group that holds its ticket sequences.
pub const COUNTER: &str = "shardkit_tickets";
/// Its column: positions handed out so far.
const COLUMN: &str = "next";

/// Runs `TICKET.NEXT` (arity checked) on a cluster node.
pub fn next(
    spec: &'static super::table::CommandSpec,
    cmd: &super::parse::Command<'_>,
    state: &AppState,
    live: &Live,
    session: &mut Session,
    out: &mut BytesMut,
) {
    let (Some(raw), true) = (cmd.arg(1), (2..=3).contains(&cmd.len())) else {
        return super::table::wrong_arity(out, "ticket.next");
    };
    let name = match std::str::from_utf8(raw)
        .ok()
        .filter(|n| shardkit_ids::tickets::validate_name(n).is_ok())
    {
        Some(name) => name,
        None => {
            return reply::error(
                out,
                "ERR ticket sequence names are 1 to 64 characters of A-Z a-z 0-9 _ - . :",
            )
        }
    };
    let count = match cmd.arg(2).map(super::values::strict_i64) {
        None => None,
        Some(Some(n)) if (1..=crate::state::MAX_BATCH as i64).contains(&n) => Some(n as u64),
        Some(_) => {
            return reply::error(
                out,
                &format!(
                    "ERR count must be between 1 and {}",
                    crate::state::MAX_BATCH
                ),
            )
        }
    };
    // The sequence's slot is its name's, as if the name were the key.
    let args = [b"ticket.next".as_slice(), raw];
    let map = live.map();
    let slot = match route(&keyed(spec), &args, &map, &live.me) {
        Route::Here { slot } => slot,
        Route::Moved { moved, .. } => return reply::error(out, &moved),
        Route::Refuse(message) => return reply::error(out, &message),
        Route::NoKeys => unreachable!("the name is the key"),
    };
    let Some(store) = super::cluster_dispatch::led_store(live, &map, slot, out) else {
        return;
    };
    let n = count.unwrap_or(1);
    let (next, pending) = match reserve(&store.counters.engine, name, n, true) {
        Ok(done) => done,
        Err(e) => return super::values::engine_error(out, &e),
    };
    session.wait_for_store(&store.counters, pending);
    let Some(numbers) = numbers_of(state, next, n) else {
        return reply::error(out, &format!("ERR {USED_UP}"));
    };
    match count {
        None => reply::bulk_u64(out, numbers[0]),
        Some(_) => {
            reply::array_header(out, numbers.len());
            for number in numbers {
                reply::bulk_u64(out, number);
            }
        }
    }
}

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
pub fn numbers_of(state: &AppState, next: u64, n: u64) -> Option<Vec<u64>> {
    let spec = state.ticket_spec();
    let numbers: Option<Vec<u64>> = (next - n..next).map(|p| spec.number(p)).collect();
    if numbers.is_some() {
        crate::telemetry::add(&crate::telemetry::TICKETS_ISSUED, n);
    }
    numbers
}

/// `TICKET.NEXT`'s table entry with its name as its key, for the slot decision.
fn keyed(spec: &super::table::CommandSpec) -> super::table::CommandSpec {
    super::table::CommandSpec {
        first_key: 1,
        last_key: 1,
        key_step: 1,
        ..*spec
    }
}

fn ignore_exists(result: Result<(), Error>) -> Result<(), Error> {
    match result {
        Err(Error::CounterExists(_) | Error::ColumnExists { .. }) => Ok(()),
        other => other,
    }
}

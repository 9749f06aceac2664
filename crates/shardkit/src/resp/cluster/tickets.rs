//! `TICKET.NEXT name [count]` on a cluster node: the RESP side of
//! [`shardkit_node::cluster::tickets`] (the sequence is routed by its name's slot).

use crate::resp::session::Session;
use bytes::BytesMut;
use shardkit_node::cluster::live::Live;
use shardkit_node::cluster::route::{route, Route};
use shardkit_node::cluster::tickets::{numbers_of, reserve, USED_UP};
use shardkit_node::state::AppState;
use shardkit_resp::keys::KeySpec;
use shardkit_resp::reply;

/// Runs `TICKET.NEXT` (arity checked) on a cluster node.
pub fn next(
    cmd: &shardkit_resp::parse::Command<'_>,
    state: &AppState,
    live: &Live,
    session: &mut Session,
    out: &mut BytesMut,
) {
    let (Some(raw), true) = (cmd.arg(1), (2..=3).contains(&cmd.len())) else {
        return crate::resp::table::wrong_arity(out, "ticket.next");
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
    let count = match cmd.arg(2).map(crate::resp::values::strict_i64) {
        None => None,
        Some(Some(n)) if (1..=shardkit_node::state::MAX_BATCH as i64).contains(&n) => {
            Some(n as u64)
        }
        Some(_) => {
            return reply::error(
                out,
                &format!(
                    "ERR count must be between 1 and {}",
                    shardkit_node::state::MAX_BATCH
                ),
            )
        }
    };
    // The sequence's slot is its name's, as if the name were the key.
    let args = [b"ticket.next".as_slice(), raw];
    let map = live.map();
    let slot = match route(KeySpec::FIRST, &args, &map, &live.me) {
        Route::Here { slot } => slot,
        Route::Moved { moved, .. } => return reply::error(out, &moved),
        Route::Refuse(message) => return reply::error(out, &message),
        Route::NoKeys => unreachable!("the name is the key"),
    };
    let Some(store) = super::dispatch::led_store(live, &map, slot, out) else {
        return;
    };
    let n = count.unwrap_or(1);
    let (next, pending) = match reserve(&store.counters.engine, name, n, true) {
        Ok(done) => done,
        Err(e) => return crate::resp::values::engine_error(out, &e),
    };
    session.wait_for_store(&store.counters, pending);
    let Some(numbers) = numbers_of(state.ticket_spec(), next, n) else {
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

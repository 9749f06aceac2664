//! How a cluster node (`[cluster] enabled`) runs a command: by its keys' slot, on the
//! store of the slot's group when this node leads it, else `-MOVED`, `-CROSSSLOT`,
//! `-CLUSTERDOWN` or `-TRYAGAIN` in Redis's words (`cluster/route.rs` decides).
//!
//! Exists apart from `table.rs` so a lone node's hot path pays one check for it.
//! Keyless commands run as on a lone node, except those that would see only this
//! node's groups as if they were the whole keyspace: `DBSIZE` counts the rows of the
//! groups led here (ticket sequences are not keys) and `SCAN`, `FLUSHDB`, `FLUSHALL` walk or clear them (Redis Cluster's
//! per-node meaning, `keyspace.rs`), `COUNTER.CREATE|ADDCOL` change the
//! schema every group gets and `COUNTER.INFO` sums this node's groups
//! (`schema.rs`), and
//! `TICKET.NEXT` is served by the owner of its name's slot (`tickets.rs`).
//! Ids are safe: a cluster node issues them only from the id shards it leases.

use crate::resp::session::Session;
use crate::resp::table::{Call, CommandSpec};
use bytes::BytesMut;
use shardkit_node::cluster::live::Live;
use shardkit_node::cluster::route::{route, route_key, Route};
use shardkit_node::state::AppState;
use shardkit_resp::parse::Command;
use shardkit_resp::reply;

/// Keyless commands a cluster node runs over the groups it leads, or on the cluster's
/// schema, rather than on its own engine.
const PER_NODE: &[&str] = &[
    "scan",
    "flushdb",
    "flushall",
    "counter.create",
    "counter.addcol",
    "counter.info",
];

/// Runs `cmd` (its arity, authentication and role checked) on a cluster node.
pub fn run(
    spec: &'static CommandSpec,
    cmd: &Command<'_>,
    state: &AppState,
    live: &Live,
    session: &mut Session,
    out: &mut BytesMut,
) {
    if spec.name == "ticket.next" {
        return super::tickets::next(cmd, state, live, session, out);
    }
    let map = live.map_after(session.cluster_map.take());
    run_by(spec, cmd, state, live, &map, session, out);
    session.cluster_map = Some(map);
}

/// [`run`] by slot map `map`.
fn run_by(
    spec: &'static CommandSpec,
    cmd: &Command<'_>,
    state: &AppState,
    live: &Live,
    map: &shardkit_node::cluster::map::SlotMap,
    session: &mut Session,
    out: &mut BytesMut,
) {
    let route = match cmd.arg(1) {
        // One key, argument 1: most commands (and their arity is checked).
        Some(key) if spec.first_key == 1 && spec.last_key == 1 => route_key(key, map, &live.me),
        _ => {
            // The arguments without a heap block for the usual few.
            let args: smallvec::SmallVec<[&[u8]; 8]> = cmd.args().collect();
            route(spec.key_spec(), &args, map, &live.me)
        }
    };
    // The store of the slot's group, when this node has it open.
    let store = match route {
        Route::Here { slot } => live.store(map.group_of(slot)),
        _ => None,
    };
    // Increments waiting for another group's store (or for any store, when this
    // command is not served by one of this node's groups) go first: replies stay in
    // order, and a run never mixes groups.
    if !session.incrs.is_empty()
        && !store
            .as_ref()
            .is_some_and(|s| session.incrs.is_for_group(&s.counters))
    {
        crate::resp::incr_run::flush(&state.counters, session, out);
    }
    match route {
        Route::NoKeys if spec.name == "dbsize" => {
            let rows: u64 = live.counter_stats().iter().map(|c| c.rows).sum();
            reply::integer(out, rows as i64);
        }
        Route::NoKeys if PER_NODE.contains(&spec.name) => {
            let mut call = Call {
                cmd,
                state,
                counters: &state.counters,
                session,
                out,
            };
            match spec.name {
                "scan" => super::keyspace::scan(&mut call, live),
                "flushdb" | "flushall" => super::keyspace::flush(&mut call, live),
                "counter.create" => super::schema::create(&mut call, live),
                "counter.addcol" => super::schema::addcol(&mut call, live),
                _ => super::schema::info(&mut call, live),
            }
        }
        Route::NoKeys => (spec.run)(&mut Call {
            cmd,
            state,
            counters: &state.counters,
            session,
            out,
        }),
        Route::Refuse(message) => reply::error(out, &message),
        Route::Moved { slot, moved } => {
            // After READONLY, a read of a group this node follows is served from its
            // copy (as a Redis replica serves it: possibly a little behind).
            let follower = (session.read_replicas && spec.has_flag("readonly"))
                .then(|| live.store(map.group_of(slot)))
                .flatten();
            match follower {
                Some(store) => (spec.run)(&mut Call {
                    cmd,
                    state,
                    counters: &store.counters,
                    session,
                    out,
                }),
                None => reply::error(out, &moved),
            }
        }
        Route::Here { slot } => {
            let Some(store) = led(store, map, slot, out) else {
                return;
            };
            // The writes of this command wait on the group's log, not the node's own.
            let before = std::mem::replace(&mut session.pending, shardkit_counters::Pending::NONE);
            (spec.run)(&mut Call {
                cmd,
                state,
                counters: &store.counters,
                session,
                out,
            });
            // An increment it queued starts or joins this group's run, flushed into
            // this store later (by the next command of another group, a command that
            // does not join runs, or the end of the batch).
            session.incrs.set_group(&store.counters);
            let pending = std::mem::replace(&mut session.pending, before);
            session.wait_for_store(&store.counters, pending);
        }
    }
}

/// The store of `slot`'s group when this node leads it; otherwise writes `-TRYAGAIN`
/// (the map gives the group to this node, which is still taking it over) and answers
/// `None`.
pub fn led_store(
    live: &Live,
    map: &shardkit_node::cluster::map::SlotMap,
    slot: u16,
    out: &mut BytesMut,
) -> Option<std::sync::Arc<shardkit_node::replication::store::CounterStore>> {
    led(live.store(map.group_of(slot)), map, slot, out)
}

/// [`led_store`] for the store already looked up (`None`: not open here).
fn led(
    store: Option<std::sync::Arc<shardkit_node::replication::store::CounterStore>>,
    map: &shardkit_node::cluster::map::SlotMap,
    slot: u16,
    out: &mut BytesMut,
) -> Option<std::sync::Arc<shardkit_node::replication::store::CounterStore>> {
    let group = map.group_of(slot);
    let store = store.filter(|s| s.replication.is_leader());
    if store.is_none() {
        reply::error(
            out,
            &format!(
                "TRYAGAIN slot {slot} (group {group}) is being taken over by this node; \
                 retry shortly"
            ),
        );
    }
    store
}

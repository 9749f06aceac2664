//! `CLUSTER`, `ASKING`, `READONLY` and `READWRITE`: the commands Redis Cluster clients
//! send. A node outside a cluster answers them as a Redis started without
//! `cluster-enabled` (what a cluster client checks to tell a lone server from a cluster
//! node); a cluster node (`[cluster] enabled`) answers from the slot map it holds.

use crate::resp::table::{Call, CommandSpec};
use shardkit_resp::reply;

/// Redis's reply to a cluster command on a server without cluster support.
pub const DISABLED: &str = "ERR This instance has cluster support disabled";

/// The entries of the command table.
pub const COMMANDS: &[CommandSpec] = &[
    CommandSpec {
        name: "asking",
        arity: 1,
        flags: &["fast"],
        first_key: 0,
        last_key: 0,
        key_step: 0,
        categories: &["@fast", "@connection"],
        group: "cluster",
        summary: "Lets the next command reach a slot being moved here",
        run: ok_in_cluster,
    },
    CommandSpec {
        name: "cluster",
        arity: -2,
        flags: &[],
        first_key: 0,
        last_key: 0,
        key_step: 0,
        categories: &["@slow"],
        group: "cluster",
        summary: "The cluster's slots, shards and nodes, as Redis Cluster reports them",
        run: cluster,
    },
    CommandSpec {
        name: "readonly",
        arity: 1,
        flags: &["loading", "stale", "fast"],
        first_key: 0,
        last_key: 0,
        key_step: 0,
        categories: &["@fast", "@connection"],
        group: "cluster",
        summary: "Lets this connection read from a replica node",
        run: readonly,
    },
    CommandSpec {
        name: "readwrite",
        arity: 1,
        flags: &["loading", "stale", "fast"],
        first_key: 0,
        last_key: 0,
        key_step: 0,
        categories: &["@fast", "@connection"],
        group: "cluster",
        summary: "Ends READONLY on this connection",
        run: readwrite,
    },
];

/// `ASKING` (and the reply of `READONLY`, `READWRITE`): `+OK` on a cluster node.
fn ok_in_cluster(call: &mut Call<'_, '_>) {
    if call.state.cluster.get().is_some() {
        reply::simple(call.out, "OK");
    } else {
        reply::error(call.out, DISABLED);
    }
}

/// `READONLY`: reads of slots this node follows are served here from now on.
fn readonly(call: &mut Call<'_, '_>) {
    ok_in_cluster(call);
    if call.state.cluster.get().is_some() {
        call.session.read_replicas = true;
    }
}

/// `READWRITE`: back to `-MOVED` for every slot this node does not own.
fn readwrite(call: &mut Call<'_, '_>) {
    ok_in_cluster(call);
    call.session.read_replicas = false;
}

/// `CLUSTER <subcommand>` on a cluster node; Redis's refusal elsewhere.
fn cluster(call: &mut Call<'_, '_>) {
    let state = call.state;
    let Some(live) = state.cluster.get() else {
        return reply::error(call.out, DISABLED);
    };
    let map = live.map();
    let sub = call.cmd.arg(1).unwrap_or_default().to_ascii_lowercase();
    let argc = call.cmd.len();
    match (sub.as_slice(), argc) {
        (b"slots", 2) => super::replies::slots(&map, call.out),
        (b"shards", 2) => super::replies::shards(&map, call.session.resp3, call.out),
        (b"nodes", 2) => super::replies::nodes(&map, &live.me, call.out),
        (b"info", 2) => super::replies::info_as(&map, live.serving(), call.out),
        (b"myid", 2) => reply::bulk(call.out, live.me.as_bytes()),
        (b"keyslot", 3) => {
            let key = call.cmd.arg(2).unwrap_or_default();
            reply::integer(
                call.out,
                i64::from(shardkit_node::cluster::slot::key_slot(key)),
            );
        }
        (b"countkeysinslot", 3) => super::keyspace::count_keys_in_slot(call, live),
        (b"getkeysinslot", 4) => super::keyspace::get_keys_in_slot(call, live),
        (
            b"slots" | b"shards" | b"nodes" | b"info" | b"myid" | b"keyslot" | b"countkeysinslot"
            | b"getkeysinslot",
            _,
        ) => reply::error(
            call.out,
            &format!(
                "ERR wrong number of arguments for 'cluster|{}' command",
                String::from_utf8_lossy(&sub)
            ),
        ),
        _ => reply::error(
            call.out,
            &format!(
                "ERR unknown subcommand '{}'. Try CLUSTER HELP.",
                String::from_utf8_lossy(call.cmd.arg(1).unwrap_or_default())
            ),
        ),
    }
}

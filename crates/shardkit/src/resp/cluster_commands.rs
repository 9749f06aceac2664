//! `CLUSTER`, `ASKING`, `READONLY` and `READWRITE`: the commands Redis Cluster clients
//! send. Until shardkit's cluster mode exists (planned, docs/design.md) a node answers
//! them as a Redis started without `cluster-enabled`, which is what a cluster client
//! checks to tell a lone server from a cluster node.

use super::reply;
use super::table::{Call, CommandSpec};

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
        run: disabled,
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
        run: disabled,
    },
    CommandSpec {
        name: "readonly",
        arity: 1,
        flags: &["fast"],
        first_key: 0,
        last_key: 0,
        key_step: 0,
        categories: &["@fast", "@connection"],
        group: "cluster",
        summary: "Lets this connection read from a replica node",
        run: disabled,
    },
    CommandSpec {
        name: "readwrite",
        arity: 1,
        flags: &["fast"],
        first_key: 0,
        last_key: 0,
        key_step: 0,
        categories: &["@fast", "@connection"],
        group: "cluster",
        summary: "Ends READONLY on this connection",
        run: disabled,
    },
];

fn disabled(call: &mut Call<'_, '_>) {
    reply::error(call.out, DISABLED);
}

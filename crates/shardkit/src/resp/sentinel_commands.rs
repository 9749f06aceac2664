//! `SENTINEL`: the subset of Redis Sentinel's command that clients use to find a
//! master (`get-master-addr-by-name`, `masters`, `master`, `replicas`/`slaves`,
//! `sentinels`, `myid`, `help`), answered by every node from the lease and the
//! membership announcements ([`shardkit_node::replication::sentinel`]). The store name
//! (`[counters] store`) is the master's name.
//!
//! Replies have Redis's shapes: an instance is a map of bulk strings (a flat
//! field/value array in RESP2), a list of instances an array of them; an unknown name
//! is `ERR No such master with that name`, or a null array for
//! `get-master-addr-by-name`.

use super::table::{Call, CommandSpec};
use shardkit_node::replication::sentinel::{view, Instance};
use shardkit_resp::reply;

/// The `SENTINEL` entry of the command table.
pub const COMMANDS: &[CommandSpec] = &[CommandSpec {
    name: "sentinel",
    arity: -2,
    flags: &["admin"],
    first_key: 0,
    last_key: 0,
    key_step: 0,
    categories: &["@admin", "@slow", "@dangerous"],
    group: "sentinel",
    summary: "The store's master, replicas and sentinels, as Redis Sentinel reports them",
    run: sentinel,
}];

/// Each subcommand with its arity (counting `SENTINEL` and the subcommand).
const SUBCOMMANDS: &[(&str, usize)] = &[
    ("get-master-addr-by-name", 3),
    ("help", 2),
    ("master", 3),
    ("masters", 2),
    ("myid", 2),
    ("replicas", 3),
    ("sentinels", 3),
    ("slaves", 3),
];

const HELP: &[&str] = &[
    "SENTINEL <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "GET-MASTER-ADDR-BY-NAME <master-name>",
    "    Return the ip and port number of the master with that name.",
    "MASTER <master-name>",
    "    Show the state and info of the specified master.",
    "MASTERS",
    "    Show a list of monitored masters and their state.",
    "MYID",
    "    Return the ID of this node.",
    "REPLICAS <master-name>",
    "    Show a list of replicas for this master and their state.",
    "SENTINELS <master-name>",
    "    Show a list of Sentinel instances for this master and their state.",
    "HELP",
    "    Print this help.",
];

fn sentinel(call: &mut Call<'_, '_>) {
    let (cmd, state, out) = (call.cmd, call.state, &mut *call.out);
    let resp3 = call.session.resp3;
    let sub = cmd.arg(1).unwrap_or_default();
    let Some(&(name, arity)) = SUBCOMMANDS
        .iter()
        .find(|(n, _)| sub.eq_ignore_ascii_case(n.as_bytes()))
    else {
        let shown = String::from_utf8_lossy(&sub[..sub.len().min(128)]);
        return reply::error(
            out,
            &format!("ERR unknown subcommand '{shown}'. Try SENTINEL HELP."),
        );
    };
    if cmd.len() != arity {
        return reply::error(
            out,
            &format!("ERR wrong number of arguments for 'sentinel|{name}' command"),
        );
    }
    let counters = &state.settings.counters;
    let ours = cmd.arg(2).is_some_and(|n| n == counters.store.as_bytes());
    if cmd.len() == 3 && !ours && name != "get-master-addr-by-name" {
        return reply::error(out, "ERR No such master with that name");
    }
    let status = &state.replication;
    if name == "help" {
        reply::array_header(out, HELP.len());
        for line in HELP {
            reply::simple(out, line);
        }
        return;
    }
    if name == "myid" {
        return reply::bulk(out, status.me.node.as_bytes());
    }
    let v = view(
        status,
        &counters.store,
        counters.lease_ms,
        counters.role == shardkit_node::config::CounterRole::Auto,
    );
    match name {
        "get-master-addr-by-name" => match v.master_addr.filter(|_| ours) {
            Some((ip, port)) => {
                reply::array_header(out, 2);
                reply::bulk(out, ip.as_bytes());
                reply::bulk_integer(out, i64::from(port));
            }
            None => reply::null_array(out, resp3),
        },
        "masters" => instances(out, v.master.as_slice(), resp3),
        "master" => match &v.master {
            Some(master) => instance(out, master, resp3),
            // The name is ours but no node leads or was seen leading yet.
            None => reply::error(out, "ERR No such master with that name"),
        },
        "sentinels" => instances(out, &v.sentinels, resp3),
        _ => instances(out, &v.replicas, resp3),
    }
}

/// An array of instances.
fn instances(out: &mut bytes::BytesMut, list: &[Instance], resp3: bool) {
    reply::array_header(out, list.len());
    for one in list {
        instance(out, one, resp3);
    }
}

/// One instance: a map of bulk strings (a flat array in RESP2).
fn instance(out: &mut bytes::BytesMut, fields: &Instance, resp3: bool) {
    reply::map_header(out, fields.len(), resp3);
    for (key, value) in fields {
        reply::bulk(out, key.as_bytes());
        reply::bulk(out, value.as_bytes());
    }
}

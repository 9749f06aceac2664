//! The keyspace commands of a cluster node, with Redis Cluster's per-node meaning:
//! `SCAN` walks the rows of the groups this node leads, `FLUSHDB`/`FLUSHALL` clear
//! them, `CLUSTER COUNTKEYSINSLOT` and `CLUSTER GETKEYSINSLOT` count and list one
//! slot's keys. A cluster client sends `SCAN` and `FLUSHDB` to every primary and joins
//! the answers, as it does with Redis.
//!
//! A row does not remember the spelling of the key that wrote it, and its spellings
//! hash to different slots (`weibo:{7}` to the slot of `7`, `weibo:7` and
//! `weibo:7:likes` to their own). So a row of group G is named by the first spelling
//! whose slot is in G: `<counter>:{<id>}`, then `<counter>:<id>`, else each of its
//! stored columns as `<counter>:<id>:<column>` whose slot is in G. Every key returned
//! routes to this node and reads the row's values there, and every stored value is
//! under exactly one key returned. The group's ticket sequences (counter
//! `shardkit_tickets`) are not keys: never listed, never flushed (a flush would hand
//! numbers out again).

use crate::resp::keyspace_commands::{reply_scan, row_text, ScanOptions, Walk, POSITION_BITS};
use crate::resp::table::Call;
use crate::resp::values::{engine_error, stored_fields, NOT_INTEGER};
use shardkit_counters::OwnedKey;
use shardkit_node::cluster::live::Live;
use shardkit_node::cluster::map::SlotMap;
use shardkit_node::cluster::slot::{key_slot, SLOTS};
use shardkit_node::counters::{CounterKey, Counters};
use shardkit_resp::reply;

/// Bits of a cluster cursor above the walk of one group: the group (up to 1,024).
const GROUP_BITS: u32 = 10;
/// The position bits of the walk within a group (a lone node's, less the group's).
const BITS: u32 = POSITION_BITS - GROUP_BITS;
/// Where the group sits in a cluster cursor.
const GROUP_SHIFT: u32 = 64 - GROUP_BITS;

/// Hands each key of `row` (counter `name`, rows of type `kind`) in group `group` to
/// `push`, per the module's naming rule. Ticket sequences have none.
fn keys_of_row(
    map: &SlotMap,
    group: u16,
    counters: &Counters,
    name: &str,
    kind: &'static str,
    row: &OwnedKey,
    push: &mut dyn FnMut(String, &'static str),
) {
    if name == shardkit_node::cluster::tickets::COUNTER {
        return;
    }
    let id = row_text(row);
    let here = |key: &str| map.group_of(key_slot(key.as_bytes())) == group;
    let tagged = format!("{name}:{{{id}}}");
    if here(&tagged) {
        return push(tagged, kind);
    }
    let plain = format!("{name}:{id}");
    if here(&plain) {
        return push(plain, kind);
    }
    let key = CounterKey {
        counter: name,
        row: &id,
        column: None,
    };
    for (column, _) in stored_fields(counters, &key).unwrap_or_default() {
        let cell = format!("{name}:{id}:{column}");
        if here(&cell) {
            push(cell, "string");
        }
    }
}

/// `SCAN` on a cluster node: the keys of the groups it leads, in group order. The
/// cursor holds the group in its top 10 bits and the walk within it below (a lone
/// node's cursor with 10 fewer position bits). A group that moves away during a walk
/// is left out from then on, as Redis leaves out the keys of a slot migrated away.
pub fn scan(call: &mut Call<'_, '_>, live: &Live) {
    let options = match ScanOptions::parse(call.cmd) {
        Ok(options) => options,
        Err(e) => return reply::error(call.out, e),
    };
    let map = live.map();
    let first = (options.cursor >> GROUP_SHIFT) as u16;
    let mut walk = Walk::new(&options);
    let mut next = 0;
    for group in first..map.groups {
        let Some(store) = live.store(group).filter(|s| {
            matches!(
                s.replication.role(),
                shardkit_node::replication::Role::Leader
            )
        }) else {
            continue;
        };
        if walk.examined >= options.count {
            next = u64::from(group) << GROUP_SHIFT;
            break;
        }
        let inner = if group == first {
            options.cursor & ((1 << GROUP_SHIFT) - 1)
        } else {
            0
        };
        let counters = &store.counters;
        let walked = walk.counters(
            counters,
            inner,
            BITS,
            false,
            &mut |name, kind, row, push| keys_of_row(&map, group, counters, name, kind, row, push),
        );
        match walked {
            Ok(None) => {}
            Ok(Some(inner)) => {
                next = (u64::from(group) << GROUP_SHIFT) | inner;
                break;
            }
            Err(e) => return reply::error(call.out, &e),
        }
    }
    reply_scan(call.out, next, &walk.keys);
}

/// `FLUSHDB`/`FLUSHALL [ASYNC|SYNC]` on a cluster node: every row of every group it
/// leads, one log record per counter in each group's stream (so replicas and a later
/// owner see the clear), acknowledged once every group has it. Other nodes' groups
/// are theirs to flush (a cluster client sends the command to every primary).
pub fn flush(call: &mut Call<'_, '_>, live: &Live) {
    let Some(name) = crate::resp::server_commands::flush_name(call) else {
        return;
    };
    let mut rows = 0;
    let led = live.led();
    for store in &led {
        let engine = &store.counters.engine;
        for counter in engine.counters() {
            if counter == shardkit_node::cluster::tickets::COUNTER {
                continue;
            }
            match engine.clear_deferred(&counter) {
                Ok((removed, p)) => {
                    rows += removed;
                    call.session.wait_for_store(&store.counters, p);
                }
                Err(e) => return engine_error(call.out, &e),
            }
        }
    }
    tracing::warn!(
        client = call.session.id,
        command = %name,
        rows,
        groups = led.len(),
        "flushed the rows of every group this node leads"
    );
    reply::simple(call.out, "OK");
}

/// The keys of `slot` on this node (per the module's naming rule), at most `limit`:
/// none when this node does not lead the slot's group, as Redis answers for a slot
/// it does not serve. Walks the whole group (a row does not know its slot).
fn keys_in_slot(live: &Live, slot: u16, limit: usize) -> Vec<String> {
    let map = live.map();
    let group = map.group_of(slot);
    let Some(store) = live.store(group).filter(|s| {
        matches!(
            s.replication.role(),
            shardkit_node::replication::Role::Leader
        )
    }) else {
        return Vec::new();
    };
    let counters = &store.counters;
    let engine = &counters.engine;
    let mut keys = Vec::new();
    for name in engine.counters() {
        for stripe in 0..shardkit_counters::STRIPES {
            for row in engine.row_keys(&name, stripe).unwrap_or_default() {
                // The type word is not asked for here.
                keys_of_row(&map, group, counters, &name, "hash", &row, &mut |key, _| {
                    if keys.len() < limit && key_slot(key.as_bytes()) == slot {
                        keys.push(key);
                    }
                });
                if keys.len() >= limit {
                    return keys;
                }
            }
        }
    }
    keys
}

/// The integer argument at `index`, or Redis's error written to `out`.
fn int_arg(call: &mut Call<'_, '_>, index: usize) -> Option<i64> {
    let value = crate::resp::values::strict_i64(call.cmd.arg(index).unwrap_or_default());
    if value.is_none() {
        reply::error(call.out, NOT_INTEGER);
    }
    value
}

/// Whether `slot` is one of the 16,384.
fn is_slot(slot: i64) -> bool {
    (0..i64::from(SLOTS)).contains(&slot)
}

/// `CLUSTER COUNTKEYSINSLOT slot`.
pub fn count_keys_in_slot(call: &mut Call<'_, '_>, live: &Live) {
    let Some(slot) = int_arg(call, 2) else {
        return;
    };
    if !is_slot(slot) {
        return reply::error(call.out, "ERR Invalid slot");
    }
    let keys = keys_in_slot(live, slot as u16, usize::MAX);
    reply::integer(call.out, keys.len() as i64);
}

/// `CLUSTER GETKEYSINSLOT slot count`.
pub fn get_keys_in_slot(call: &mut Call<'_, '_>, live: &Live) {
    let Some(slot) = int_arg(call, 2) else {
        return;
    };
    let Some(limit) = int_arg(call, 3) else {
        return;
    };
    if !is_slot(slot) || limit < 0 {
        return reply::error(call.out, "ERR Invalid slot or number of keys");
    }
    let keys = keys_in_slot(live, slot as u16, limit as usize);
    reply::array_header(call.out, keys.len());
    for key in keys {
        reply::bulk(call.out, key.as_bytes());
    }
}

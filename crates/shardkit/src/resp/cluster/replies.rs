//! The `CLUSTER` replies, written off a [`SlotMap`] in Redis 7's shapes (checked byte
//! for byte against a `cluster-enabled` Redis by `tests/cluster_slots.rs`), so cluster
//! clients (redis-py `RedisCluster`, ioredis `Cluster`, node-redis `createCluster`,
//! `redis-benchmark --cluster`) read them as they read Redis's.

use bytes::BytesMut;
use shardkit_node::cluster::map::{NodeInfo, SlotMap, SlotRange};
use shardkit_resp::reply;

/// `CLUSTER SLOTS`: `[start, end, [host, port, id, []] owner, replicas…]` per range,
/// in the order of [`slots_listed`].
pub fn slots(map: &SlotMap, out: &mut BytesMut) {
    let ranges = slots_listed(map.ranges());
    reply::array_header(out, ranges.len());
    for r in ranges {
        reply::array_header(out, 3 + r.replicas.len());
        reply::integer(out, i64::from(*r.slots.start()));
        reply::integer(out, i64::from(*r.slots.end()));
        for node in std::iter::once(r.owner).chain(r.replicas) {
            reply::array_header(out, 4);
            reply::bulk(out, node.host.as_bytes());
            reply::integer(out, i64::from(node.port));
            reply::bulk(out, node.id.as_bytes());
            reply::array_header(out, 0);
        }
    }
}

/// The ranges as `CLUSTER SLOTS` lists them. In Redis Cluster a node is a master or a
/// replica; here a node owns some groups and follows others, so it is both. redis-py
/// takes a node's role from its first mention in `CLUSTER SLOTS` and sends `SCAN`,
/// `FLUSHDB`, `DBSIZE`, `KEYS` only to the nodes it thinks are masters: listed in slot
/// order, an owner first named as another range's replica would never be asked. So
/// when any range has replicas, each owner is introduced first by the first slot of
/// its first range alone, with no replicas (a `READONLY` client reads that one slot
/// from the owner), and then every range follows in slot order. With no replicas the
/// list is Redis's own (slot order).
pub fn slots_listed(ranges: Vec<SlotRange<'_>>) -> Vec<SlotRange<'_>> {
    if ranges.iter().all(|r| r.replicas.is_empty()) {
        return ranges;
    }
    let mut introduced: Vec<&str> = Vec::new();
    let mut first = Vec::new();
    let mut rest = Vec::new();
    for r in ranges {
        if introduced.contains(&r.owner.id.as_str()) {
            rest.push(r);
            continue;
        }
        introduced.push(&r.owner.id);
        let start = *r.slots.start();
        first.push(SlotRange {
            slots: start..=start,
            owner: r.owner,
            replicas: Vec::new(),
        });
        if start < *r.slots.end() {
            rest.push(SlotRange {
                slots: start + 1..=*r.slots.end(),
                ..r
            });
        }
    }
    first.extend(rest);
    first
}

/// A shard as `CLUSTER SHARDS` lists it: owner, replicas, slot ranges.
type Shard<'a> = (&'a NodeInfo, Vec<&'a NodeInfo>, Vec<(u16, u16)>);

/// `CLUSTER SHARDS`: per owner, `slots` (start/end pairs) and `nodes` (the owner, then
/// its replicas), each node with Redis's seven fields.
pub fn shards(map: &SlotMap, resp3: bool, out: &mut BytesMut) {
    // One shard per owner, with every range it owns (Redis groups slots by master).
    let mut shards: Vec<Shard<'_>> = Vec::new();
    for r in map.ranges() {
        let pair = (*r.slots.start(), *r.slots.end());
        match shards.iter_mut().find(|s| s.0.id == r.owner.id) {
            Some(shard) => shard.2.push(pair),
            None => shards.push((r.owner, r.replicas.clone(), vec![pair])),
        }
    }
    reply::array_header(out, shards.len());
    for (owner, replicas, ranges) in shards {
        reply::map_header(out, 2, resp3);
        reply::bulk(out, b"slots");
        reply::array_header(out, ranges.len() * 2);
        for (a, b) in ranges {
            reply::integer(out, i64::from(a));
            reply::integer(out, i64::from(b));
        }
        reply::bulk(out, b"nodes");
        reply::array_header(out, 1 + replicas.len());
        for (node, role) in
            std::iter::once((owner, "master")).chain(replicas.into_iter().map(|r| (r, "replica")))
        {
            reply::map_header(out, 7, resp3);
            reply::bulk(out, b"id");
            reply::bulk(out, node.id.as_bytes());
            reply::bulk(out, b"port");
            reply::integer(out, i64::from(node.port));
            for (field, value) in [
                ("ip", node.host.as_str()),
                ("endpoint", node.host.as_str()),
                ("role", role),
            ] {
                reply::bulk(out, field.as_bytes());
                reply::bulk(out, value.as_bytes());
            }
            reply::bulk(out, b"replication-offset");
            reply::integer(out, 0);
            reply::bulk(out, b"health");
            reply::bulk(out, b"online");
        }
    }
}

/// `CLUSTER NODES`: one line per node, `myself` marking `me`, slot ranges on masters.
pub fn nodes(map: &SlotMap, me: &str, out: &mut BytesMut) {
    let ranges = map.ranges();
    let mut text = String::new();
    for node in map.nodes.values() {
        let owns: Vec<String> = ranges
            .iter()
            .filter(|r| r.owner.id == node.id)
            .map(|r| match (*r.slots.start(), *r.slots.end()) {
                (a, b) if a == b => a.to_string(),
                (a, b) => format!("{a}-{b}"),
            })
            .collect();
        let master_of = ranges
            .iter()
            .find(|r| r.replicas.iter().any(|n| n.id == node.id))
            .map(|r| r.owner.id.as_str());
        let (role, master) = match (owns.is_empty(), master_of) {
            (true, Some(m)) => ("slave", m),
            _ => ("master", "-"),
        };
        let flags = if node.id == me {
            format!("myself,{role}")
        } else {
            role.to_string()
        };
        text.push_str(&format!(
            "{} {}:{}@{} {flags} {master} 0 0 {} connected",
            node.id,
            node.host,
            node.port,
            u32::from(node.port) + 10_000,
            map.version
        ));
        for r in &owns {
            text.push(' ');
            text.push_str(r);
        }
        text.push('\n');
    }
    reply::bulk(out, text.as_bytes());
}

/// `CLUSTER INFO`: Redis's fields; `ok` when every slot is assigned.
pub fn info(map: &SlotMap, out: &mut BytesMut) {
    let all = map.slots_assigned() == usize::from(shardkit_node::cluster::slot::SLOTS);
    info_as(map, all, out);
}

/// `CLUSTER INFO` with `cluster_state` given: a node says `fail` too while it does not
/// yet lead every group the map gives it.
pub fn info_as(map: &SlotMap, ok: bool, out: &mut BytesMut) {
    let assigned = map.slots_assigned();
    let state = if ok { "ok" } else { "fail" };
    let masters = map
        .ranges()
        .iter()
        .map(|r| r.owner.id.as_str())
        .collect::<std::collections::BTreeSet<_>>()
        .len();
    let text = format!(
        "cluster_state:{state}\r\ncluster_slots_assigned:{assigned}\r\ncluster_slots_ok:{assigned}\r\n\
         cluster_slots_pfail:0\r\ncluster_slots_fail:0\r\ncluster_known_nodes:{}\r\n\
         cluster_size:{masters}\r\ncluster_current_epoch:{v}\r\ncluster_my_epoch:{v}\r\n\
         cluster_stats_messages_sent:0\r\ncluster_stats_messages_received:0\r\n\
         total_cluster_links_buffer_limit_exceeded:0\r\n",
        map.nodes.len(),
        v = map.version
    );
    reply::bulk(out, text.as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_owner_is_first_named_as_a_master_and_every_slot_listed_once() {
        let nodes: Vec<NodeInfo> = (1..=4).map(NodeInfo::numbered).collect();
        for copies in [0, 1, 2] {
            let map = SlotMap::place(1, 16, &nodes, copies);
            let listed = slots_listed(map.ranges());
            let mut first_role: std::collections::HashMap<&str, &str> = Default::default();
            let mut covered = vec![0u8; usize::from(shardkit_node::cluster::slot::SLOTS)];
            for r in &listed {
                first_role.entry(&r.owner.id).or_insert("master");
                for replica in &r.replicas {
                    first_role.entry(&replica.id).or_insert("replica");
                }
                for s in r.slots.clone() {
                    covered[usize::from(s)] += 1;
                    assert_eq!(map.owner_of(s).unwrap().id, r.owner.id);
                }
            }
            assert!(covered.iter().all(|&c| c == 1), "copies {copies}");
            assert!(
                first_role.values().all(|&r| r == "master"),
                "copies {copies}: {first_role:?}"
            );
            if copies == 0 {
                // No replicas: Redis's own list, in slot order.
                assert_eq!(listed.len(), map.ranges().len());
            }
        }
    }
}

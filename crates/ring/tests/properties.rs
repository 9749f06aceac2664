//! Property tests of the placement guarantees the crate promises: keys move only where they
//! must, replicas are distinct and start at the primary, plans balance within one shard
//! and move no shard twice, and no input makes the parsers panic.

use proptest::prelude::*;
use shardkit_ring::jump::{jump_integer, jump_portable};
use shardkit_ring::node::numbered_nodes;
use shardkit_ring::{jump, jump_back, Format, NodeSpec, Plan, Ring, ShardMap};
use std::collections::{HashMap, HashSet};
use std::num::NonZeroU32;

/// Small weighted fleets: enough to find placement bugs, cheap in the dev profile.
fn fleet() -> impl Strategy<Value = Vec<NodeSpec>> {
    prop::collection::vec(1u32..4, 1..12).prop_map(|weights| {
        weights
            .into_iter()
            .enumerate()
            .map(|(i, w)| NodeSpec::weighted(format!("n{i}"), w))
            .collect()
    })
}

fn keys() -> impl Strategy<Value = Vec<u64>> {
    prop::collection::vec(any::<u64>(), 200)
}

/// Each node's count is the floor or ceiling of its weighted share of S.
fn within_one_of_share(map: &ShardMap) -> Result<(), TestCaseError> {
    let total: u64 = map.nodes().iter().map(|n| u64::from(n.weight)).sum();
    for (node, &count) in map.nodes().iter().zip(&map.counts()) {
        let num = u64::from(map.shard_count()) * u64::from(node.weight);
        let (lo, hi) = (num / total, num.div_ceil(total));
        prop_assert!(
            (lo..=hi).contains(&u64::from(count)),
            "{} holds {count}, share {lo}..={hi}",
            node.name
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn ring_add_moves_keys_only_to_the_new_node(nodes in fleet(), vnodes in 1u32..40, keys in keys()) {
        let ring = Ring::new(nodes, vnodes).unwrap();
        let grown = ring.with_node(NodeSpec::weighted("new", 2)).unwrap();
        for k in keys {
            let (before, after) = (ring.node_for_u64(k), grown.node_for_u64(k));
            prop_assert!(before == after || after == "new", "key {k}: {before} -> {after}");
        }
    }

    #[test]
    fn ring_remove_moves_only_the_removed_nodes_keys(
        nodes in fleet(), vnodes in 1u32..40, pick in any::<prop::sample::Index>(), keys in keys(),
    ) {
        prop_assume!(nodes.len() > 1);
        let gone = nodes[pick.index(nodes.len())].name.clone();
        let ring = Ring::new(nodes, vnodes).unwrap();
        let shrunk = ring.without_node(&gone).unwrap();
        for k in keys {
            let (before, after) = (ring.node_for_u64(k), shrunk.node_for_u64(k));
            prop_assert!(before == after || before == gone, "key {k}: {before} -> {after}");
            prop_assert_ne!(after, gone.as_str());
        }
    }

    #[test]
    fn ring_placement_does_not_depend_on_node_order(
        nodes in fleet(), vnodes in 1u32..40, keys in keys(),
    ) {
        let ring = Ring::new(nodes.clone(), vnodes).unwrap();
        let mut reversed = nodes;
        reversed.reverse();
        let other = Ring::new(reversed, vnodes).unwrap();
        for k in keys {
            prop_assert_eq!(ring.node_for_u64(k), other.node_for_u64(k));
        }
    }

    #[test]
    fn replicas_are_distinct_and_start_at_the_primary(
        nodes in fleet(), vnodes in 1u32..40, n in 0usize..15, key in any::<Vec<u8>>(),
    ) {
        let ring = Ring::new(nodes, vnodes).unwrap();
        let replicas = ring.replicas(&key, n);
        prop_assert_eq!(replicas.len(), n.min(ring.nodes().len()));
        let distinct: HashSet<_> = replicas.iter().collect();
        prop_assert_eq!(distinct.len(), replicas.len());
        if let Some(first) = replicas.first() {
            prop_assert_eq!(*first, ring.node_for(&key));
        }
    }

    #[test]
    fn jump_growth_moves_keys_only_to_the_new_bucket(buckets in 1u32..5000, key in any::<u64>()) {
        let (a, b) = (jump(key, buckets).unwrap(), jump(key, buckets + 1).unwrap());
        prop_assert!(a < buckets && (a == b || b == buckets));
    }

    #[test]
    fn jump_forms_agree_bit_for_bit(buckets in 1u32..=u32::MAX, small in 1u32..3000, key in any::<u64>()) {
        for n in [buckets, small] {
            let n = NonZeroU32::new(n).unwrap();
            prop_assert_eq!(jump_integer(key, n), jump_portable(key, n));
        }
    }

    #[test]
    fn jump_back_growth_moves_keys_only_to_the_new_bucket(buckets in 1u32..5000, key in any::<u64>()) {
        let (a, b) = (jump_back(key, buckets).unwrap(), jump_back(key, buckets + 1).unwrap());
        prop_assert!(a < buckets && (a == b || b == buckets));
    }

    #[test]
    fn jump_back_stays_in_range_for_any_bucket_count(buckets in 1u32..=u32::MAX, key in any::<u64>()) {
        prop_assert!(jump_back(key, buckets).unwrap() < buckets);
        let top = u32::MAX - (buckets - 1);
        prop_assert!(jump_back(key, top).unwrap() < top);
    }

    #[test]
    fn plans_balance_within_one_shard_and_move_each_shard_once(
        nodes in fleet(),
        shard_bits in 0u32..11,
        change in 0u8..3,
        weight in 1u32..5,
        pick in any::<prop::sample::Index>(),
    ) {
        let map = ShardMap::new(1 << shard_bits, nodes).unwrap();
        let name = map.nodes()[pick.index(map.nodes().len())].name.clone();
        let plan = match change {
            0 => Plan::add(&map, NodeSpec::weighted("new", weight)).unwrap(),
            1 if map.nodes().len() > 1 => Plan::remove(&map, &name).unwrap(),
            _ => Plan::reweigh(&map, &name, weight).unwrap(),
        };
        let shards: HashSet<u32> = plan.moves.iter().map(|m| m.shard).collect();
        prop_assert_eq!(shards.len(), plan.moves.len(), "a shard moves twice");
        prop_assert!(plan.moves.iter().all(|m| m.from != m.to));
        let next = plan.apply(&map).unwrap();
        prop_assert_eq!(next.version(), map.version() + 1);
        within_one_of_share(&next)?;
        // Only moved shards changed owner.
        for shard in 0..map.shard_count() {
            if !shards.contains(&shard) {
                prop_assert_eq!(map.owner(shard), next.owner(shard));
            }
        }
        // The fewest moves: every shard above a node's ceiling (or on a dropped node)
        // must leave, every shard below a floor must arrive, and the plan does no more.
        let total: u64 = next.nodes().iter().map(|n| u64::from(n.weight)).sum();
        let held: HashMap<&str, u64> = map.nodes().iter().zip(map.counts())
            .map(|(n, c)| (n.name.as_str(), u64::from(c))).collect();
        let (mut must_leave, mut must_arrive) = (0u64, 0u64);
        for n in next.nodes() {
            let num = u64::from(map.shard_count()) * u64::from(n.weight);
            let c = held.get(n.name.as_str()).copied().unwrap_or(0);
            must_leave += c.saturating_sub(num.div_ceil(total));
            must_arrive += (num / total).saturating_sub(c);
        }
        for n in map.nodes() {
            if !next.nodes().iter().any(|m| m.name == n.name) {
                must_leave += held[n.name.as_str()];
            }
        }
        prop_assert_eq!(plan.moves.len() as u64, must_leave.max(must_arrive));
    }

    #[test]
    fn maps_round_trip(nodes in fleet(), shard_bits in 0u32..10, json in any::<bool>()) {
        let format = if json { Format::Json } else { Format::Toml };
        let map = ShardMap::new(1 << shard_bits, nodes).unwrap();
        let map = Plan::add(&map, NodeSpec::new("x")).unwrap().apply(&map).unwrap();
        prop_assert_eq!(ShardMap::parse(&map.render(format).unwrap(), format).unwrap(), map);
    }

    #[test]
    fn parsing_never_panics(text in ".{0,200}", json in any::<bool>()) {
        let format = if json { Format::Json } else { Format::Toml };
        let _ = ShardMap::parse(&text, format);
    }

    #[test]
    fn parsing_near_valid_maps_never_panics(
        shards in 0u64..70, ranges in prop::collection::vec("[0-9]{1,3}(-[0-9]{1,3})?", 0..6),
    ) {
        let list: Vec<String> = ranges.iter().map(|r| format!("{r:?}")).collect();
        let text = format!(
            "version = 1\nshards = {shards}\n[[nodes]]\nname = \"a\"\nshards = [{}]\n",
            list.join(", ")
        );
        let _ = ShardMap::parse(&text, Format::Toml);
    }
}

#[test]
fn stats_fleet_helper_is_what_the_docs_say() {
    let names: Vec<_> = numbered_nodes(3).into_iter().map(|n| n.name).collect();
    assert_eq!(names, ["node-0", "node-1", "node-2"]);
}

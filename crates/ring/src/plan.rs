//! Move plans: the fewest logical-shard moves that rebalance a [`ShardMap`] after a node
//! joins, leaves or changes weight.
//!
//! Moving a shard means copying its data, so the plan must be as short as possible while
//! leaving every node with the floor or the ceiling of its fair share
//! (`S * weight / total weight`), i.e. within one shard of it.
//!
//! How: each node's target starts as its current count clamped into `[floor, ceil]` of
//! its new share; if the targets then sum to more (or less) than S, nodes with room are
//! lowered (or raised) one shard at a time, most-over-share (or most-under) first. Every
//! shard on a node above its target (and every shard of a removed node) must move, and
//! every node below its target must receive, so the plan length is the larger of those two
//! totals, which is the least any plan meeting the bounds can do. Each shard moves at
//! most once, from its current owner straight to its final one.

use crate::node::{validate_node, validate_nodes, NodeSpec};
use crate::shard_map::{share_bounds, ShardMap};
use crate::RingError;
use serde::Serialize;
use std::collections::HashMap;

/// One shard changing hands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Move {
    /// The logical shard that moves.
    pub shard: u32,
    /// Its current node.
    pub from: String,
    /// Its node once the plan is applied.
    pub to: String,
}

/// The moves that take a map from one version to the next, and the node list after.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Plan {
    /// Version of the map the plan was made from (it applies to that version only).
    pub from_version: u64,
    /// Version of the map the plan produces.
    pub to_version: u64,
    /// The node list after the plan, in table order.
    pub nodes: Vec<NodeSpec>,
    /// The moves, in shard order; no shard appears twice.
    pub moves: Vec<Move>,
}

impl Plan {
    /// Plan for adding `node` to the map.
    pub fn add(map: &ShardMap, node: NodeSpec) -> Result<Self, RingError> {
        validate_node(&node)?;
        if map.nodes().iter().any(|n| n.name == node.name) {
            return Err(RingError::NodeExists(node.name));
        }
        let mut nodes = map.nodes().to_vec();
        nodes.push(node);
        Self::rebalance(map, nodes)
    }

    /// Plan for removing the named node: its shards go to the others.
    pub fn remove(map: &ShardMap, name: &str) -> Result<Self, RingError> {
        find(map, name)?;
        if map.nodes().len() == 1 {
            return Err(RingError::LastNode(name.to_owned()));
        }
        let nodes = map
            .nodes()
            .iter()
            .filter(|n| n.name != name)
            .cloned()
            .collect();
        Self::rebalance(map, nodes)
    }

    /// Plan for changing the named node's weight.
    pub fn reweigh(map: &ShardMap, name: &str, weight: u32) -> Result<Self, RingError> {
        let pos = find(map, name)?;
        let mut nodes = map.nodes().to_vec();
        nodes[pos].weight = weight;
        Self::rebalance(map, nodes)
    }

    /// Plan that brings `map` to the node list `nodes` (any mix of kept, new and dropped
    /// nodes, with any weights) with the fewest moves.
    pub fn rebalance(map: &ShardMap, nodes: Vec<NodeSpec>) -> Result<Self, RingError> {
        validate_nodes(&nodes)?;
        let shards = map.shard_count();
        let new_index: HashMap<&str, usize> = nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (n.name.as_str(), i))
            .collect();
        // Old owner index -> new owner index (None: the node is being dropped).
        let remap: Vec<Option<usize>> = map
            .nodes()
            .iter()
            .map(|n| new_index.get(n.name.as_str()).copied())
            .collect();

        let mut held: Vec<Vec<u32>> = vec![Vec::new(); nodes.len()];
        let mut orphans: Vec<u32> = Vec::new();
        for (shard, &owner) in map.table().iter().enumerate() {
            match remap[owner as usize] {
                Some(i) => held[i].push(shard as u32),
                None => orphans.push(shard as u32),
            }
        }

        let targets = targets(shards, &nodes, &held);
        // Sources: every orphan, then the highest-numbered surplus shards of each node.
        let mut sources: Vec<u32> = orphans;
        for (i, shards) in held.iter().enumerate() {
            let surplus = shards.len().saturating_sub(targets[i] as usize);
            sources.extend_from_slice(&shards[shards.len() - surplus..]);
        }
        sources.sort_unstable();
        let mut sinks = nodes.iter().enumerate().flat_map(|(i, _)| {
            std::iter::repeat_n(i, (targets[i] as usize).saturating_sub(held[i].len()))
        });
        let mut moves = Vec::with_capacity(sources.len());
        for shard in sources {
            // The targets sum to S, so there are exactly as many sink slots as sources.
            let Some(to) = sinks.next() else { break };
            let from = &map.nodes()[map.table()[shard as usize] as usize].name;
            moves.push(Move {
                shard,
                from: from.clone(),
                to: nodes[to].name.clone(),
            });
        }
        Ok(Self {
            from_version: map.version(),
            to_version: map.version().saturating_add(1),
            nodes,
            moves,
        })
    }

    /// Applies the plan to the map it was made from, giving the next version.
    ///
    /// Errors if the map is at another version or a move does not match the table, so a
    /// stale plan can never be applied by mistake.
    pub fn apply(&self, map: &ShardMap) -> Result<ShardMap, RingError> {
        if map.version() != self.from_version {
            return Err(RingError::VersionMismatch {
                plan: self.from_version,
                map: map.version(),
            });
        }
        validate_nodes(&self.nodes)?;
        let new_index: HashMap<&str, u32> = self
            .nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (n.name.as_str(), i as u32))
            .collect();
        let mut table: Vec<Option<u32>> = map
            .table()
            .iter()
            .map(|&o| {
                new_index
                    .get(map.nodes()[o as usize].name.as_str())
                    .copied()
            })
            .collect();
        let mut moved = vec![false; table.len()];
        for m in &self.moves {
            let bad = |reason: String| RingError::BadMove {
                shard: u64::from(m.shard),
                reason,
            };
            let current = map
                .owner(m.shard)
                .ok_or_else(|| bad("no such shard".into()))?;
            if current != m.from {
                return Err(bad(format!("it is on {current:?}, not {:?}", m.from)));
            }
            let to = *new_index
                .get(m.to.as_str())
                .ok_or_else(|| bad(format!("{:?} is not in the new node list", m.to)))?;
            if std::mem::replace(&mut moved[m.shard as usize], true) {
                return Err(RingError::ShardAssignedTwice(u64::from(m.shard)));
            }
            table[m.shard as usize] = Some(to);
        }
        let table = table
            .into_iter()
            .enumerate()
            .map(|(shard, o)| o.ok_or(RingError::ShardUnassigned(shard as u64)))
            .collect::<Result<Vec<u32>, RingError>>()?;
        map.next_version(self.nodes.clone(), table)
    }
}

impl Plan {
    /// Fraction of keys the plan moves: moved shards over all shards (every shard holds
    /// the same share of keys).
    pub fn moved_fraction(&self, map: &ShardMap) -> f64 {
        self.moves.len() as f64 / f64::from(map.shard_count())
    }
}

/// The least fraction of keys any scheme must move to go from the weights of `before` to
/// those of `after` (nodes matched by name): the sum of the share increases. For adding
/// one node of weight w to total weight W that is w / (W + w), e.g. 1/(N+1).
pub fn optimal_fraction(before: &[NodeSpec], after: &[NodeSpec]) -> f64 {
    let total = |nodes: &[NodeSpec]| nodes.iter().map(|n| f64::from(n.weight)).sum::<f64>();
    let (wb, wa) = (total(before), total(after));
    after
        .iter()
        .map(|n| {
            let old = before
                .iter()
                .find(|b| b.name == n.name)
                .map_or(0.0, |b| f64::from(b.weight) / wb);
            (f64::from(n.weight) / wa - old).max(0.0)
        })
        .sum()
}

fn find(map: &ShardMap, name: &str) -> Result<usize, RingError> {
    map.nodes()
        .iter()
        .position(|n| n.name == name)
        .ok_or_else(|| RingError::UnknownNode(name.to_owned()))
}

/// Final shard count per node: within `[floor, ceil]` of the share, summing to S, as
/// close to what each node holds now as that allows.
fn targets(shards: u32, nodes: &[NodeSpec], held: &[Vec<u32>]) -> Vec<u32> {
    let bounds = share_bounds(shards, nodes);
    let total_weight: f64 = nodes.iter().map(|n| f64::from(n.weight)).sum();
    let share = |i: usize| f64::from(shards) * f64::from(nodes[i].weight) / total_weight;
    let mut t: Vec<u32> = held
        .iter()
        .zip(&bounds)
        .map(|(h, &(lo, hi))| (h.len() as u32).clamp(lo, hi))
        .collect();
    let sum: u64 = t.iter().map(|&x| u64::from(x)).sum();
    let mut order: Vec<usize> = (0..nodes.len()).collect();
    if sum > u64::from(shards) {
        // Lower the nodes most over their share first.
        order.sort_by(|&a, &b| {
            (f64::from(t[b]) - share(b)).total_cmp(&(f64::from(t[a]) - share(a)))
        });
        let mut excess = sum - u64::from(shards);
        for i in order {
            if excess == 0 {
                break;
            }
            if t[i] > bounds[i].0 {
                t[i] -= 1;
                excess -= 1;
            }
        }
    } else if sum < u64::from(shards) {
        // Raise the nodes most under their share first.
        order.sort_by(|&a, &b| {
            (f64::from(t[a]) - share(a)).total_cmp(&(f64::from(t[b]) - share(b)))
        });
        let mut missing = u64::from(shards) - sum;
        for i in order {
            if missing == 0 {
                break;
            }
            if t[i] < bounds[i].1 {
                t[i] += 1;
                missing -= 1;
            }
        }
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node::numbered_nodes;
    use crate::shard_map::DEFAULT_SHARDS;

    #[test]
    fn adding_a_node_moves_floor_of_its_share() {
        let map = ShardMap::new(DEFAULT_SHARDS, numbered_nodes(1000)).unwrap();
        let plan = Plan::add(&map, NodeSpec::new("new")).unwrap();
        // 8192 / 1001 = 8.18: the new node gets 8 shards, all from nodes holding 9.
        assert_eq!(plan.moves.len(), 8);
        assert!(plan.moves.iter().all(|m| m.to == "new"));
        let next = plan.apply(&map).unwrap();
        assert_eq!(next.version(), 2);
        assert_eq!(next.counts().last(), Some(&8));
    }

    #[test]
    fn removing_a_node_moves_only_its_shards() {
        let map = ShardMap::new(64, numbered_nodes(4)).unwrap();
        let plan = Plan::remove(&map, "node-2").unwrap();
        assert_eq!(plan.moves.len(), 16);
        assert!(plan.moves.iter().all(|m| m.from == "node-2"));
        let next = plan.apply(&map).unwrap();
        assert!(next.counts().iter().all(|&c| c == 21 || c == 22));
    }

    #[test]
    fn reweigh_moves_toward_the_heavier_node() {
        let map = ShardMap::new(64, numbered_nodes(4)).unwrap();
        let plan = Plan::reweigh(&map, "node-0", 2).unwrap();
        // Shares become 25.6, 12.8 x3: node-0 gets 9 or 10 more shards.
        assert!(plan.moves.iter().all(|m| m.to == "node-0"));
        let next = plan.apply(&map).unwrap();
        assert!((25..=26).contains(&next.counts()[0]));
    }

    #[test]
    fn stale_or_bad_plans_are_refused() {
        let map = ShardMap::new(64, numbered_nodes(4)).unwrap();
        let plan = Plan::add(&map, NodeSpec::new("x")).unwrap();
        let next = plan.apply(&map).unwrap();
        assert_eq!(
            plan.apply(&next).unwrap_err(),
            RingError::VersionMismatch { plan: 1, map: 2 }
        );
        let mut twice = plan.clone();
        twice.moves.push(twice.moves[0].clone());
        assert_eq!(
            twice.apply(&map).unwrap_err(),
            RingError::ShardAssignedTwice(u64::from(plan.moves[0].shard))
        );
        let mut wrong = plan.clone();
        wrong.moves[0].from = "node-3".into();
        assert!(matches!(
            wrong.apply(&map).unwrap_err(),
            RingError::BadMove { .. }
        ));
        assert_eq!(
            Plan::add(&map, NodeSpec::new("node-1")).unwrap_err(),
            RingError::NodeExists("node-1".into())
        );
        assert_eq!(
            Plan::remove(&map, "zz").unwrap_err(),
            RingError::UnknownNode("zz".into())
        );
        let one = ShardMap::new(4, numbered_nodes(1)).unwrap();
        assert_eq!(
            Plan::remove(&one, "node-0").unwrap_err(),
            RingError::LastNode("node-0".into())
        );
        assert_eq!(
            Plan::reweigh(&map, "node-0", 0).unwrap_err(),
            RingError::ZeroWeight("node-0".into())
        );
    }

    #[test]
    fn fractions_of_keys_moved() {
        let map = ShardMap::new(1024, numbered_nodes(3)).unwrap();
        let plan = Plan::add(&map, NodeSpec::new("x")).unwrap();
        assert_eq!(plan.moved_fraction(&map), 256.0 / 1024.0);
        assert!((optimal_fraction(map.nodes(), &plan.nodes) - 0.25).abs() < 1e-12);
        let plan = Plan::remove(&map, "node-0").unwrap();
        assert!((optimal_fraction(map.nodes(), &plan.nodes) - 1.0 / 3.0).abs() < 1e-12);
        assert_eq!(optimal_fraction(map.nodes(), map.nodes()), 0.0);
    }

    #[test]
    fn balanced_map_needs_no_moves() {
        let map = ShardMap::new(64, numbered_nodes(5)).unwrap();
        let plan = Plan::rebalance(&map, map.nodes().to_vec()).unwrap();
        assert!(plan.moves.is_empty());
    }
}

//! Placement statistics: how evenly a scheme spreads keys, how many keys move when a node
//! joins or leaves, and how long a lookup takes. This is what `shardkit ring stats`
//! prints, so the three schemes can be compared on the same keys in one run.
//!
//! The keys are the integers `0..K` (think user ids). The ring and jump hash them with
//! the placement hash; logical shards use `key % S`, as Instagram does with ids. Nodes
//! are `node-0 .. node-{N-1}` of weight 1; the added node is `node-N`; the removed node
//! is the middle one, `node-{N/2}`.

use crate::jump::{JumpAlgorithm, JumpNodes};
use crate::node::{numbered_nodes, NodeSpec};
use crate::plan::Plan;
use crate::ring::Ring;
use crate::shard_map::{ShardMap, DEFAULT_SHARDS};
use crate::RingError;
use serde::Serialize;
use std::hint::black_box;
use std::time::{Duration, Instant};

/// The most keys one run may place (each costs 4 bytes and three lookups).
pub const MAX_KEYS: u64 = 100_000_000;

/// The most nodes one run may use.
pub const MAX_NODES: u32 = 100_000;

/// The placement scheme to measure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Algorithm {
    /// Consistent-hash ring with virtual nodes.
    Ring,
    /// Jump consistent hash (Lamping–Veach) over the nodes as numbered buckets.
    Jump,
    /// JumpBack hashing over the same numbered buckets (faster, crate-specific placement).
    JumpBack,
    /// Logical shards (`key % S`) and a table moved by [`Plan`]s.
    Shards,
}

impl std::str::FromStr for Algorithm {
    type Err = RingError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "ring" => Ok(Algorithm::Ring),
            "jump" => Ok(Algorithm::Jump),
            "jump-back" => Ok(Algorithm::JumpBack),
            "shards" => Ok(Algorithm::Shards),
            other => Err(RingError::BadStats(format!(
                "unknown algorithm {other:?}: use ring, jump, jump-back or shards"
            ))),
        }
    }
}

/// What to measure.
#[derive(Debug, Clone, Copy)]
pub struct StatsRequest {
    /// Number of nodes (N).
    pub nodes: u32,
    /// Virtual nodes per node (ring only).
    pub vnodes: u32,
    /// Number of keys placed (K).
    pub keys: u64,
    /// The scheme.
    pub algorithm: Algorithm,
    /// Logical shards (shards only).
    pub shards: u32,
}

impl StatsRequest {
    /// A request with the defaults: 160 vnodes, 8192 shards.
    pub fn new(algorithm: Algorithm, nodes: u32, keys: u64) -> Self {
        Self {
            nodes,
            vnodes: crate::ring::DEFAULT_VNODES,
            keys,
            algorithm,
            shards: DEFAULT_SHARDS,
        }
    }
}

/// The figures of one run, serialized exactly as the CLI contract says.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Stats {
    /// Keys on the busiest node divided by the mean keys per node (1.0 is perfect).
    pub peak_to_avg: f64,
    /// Fraction of keys whose node changed when one node was added.
    pub moved_on_add: f64,
    /// Fraction of keys whose node changed when the middle node was removed.
    pub moved_on_remove: f64,
    /// The least fraction adding a node can move: 1/(N+1).
    pub optimal_move: f64,
    /// Mean time of one key-to-node lookup, in nanoseconds.
    pub lookup_ns: f64,
}

/// A built placement: key to a node index, and the node names by index.
trait Placement {
    fn node_index(&self, key: u64) -> usize;
    fn names(&self) -> Vec<&str>;
}

impl Placement for Ring {
    #[inline]
    fn node_index(&self, key: u64) -> usize {
        self.node_index_for_u64(key)
    }
    fn names(&self) -> Vec<&str> {
        self.nodes().iter().map(|n| n.name.as_str()).collect()
    }
}

impl Placement for JumpNodes {
    #[inline]
    fn node_index(&self, key: u64) -> usize {
        self.node_index_for_u64(key)
    }
    fn names(&self) -> Vec<&str> {
        self.nodes().iter().map(|n| n.name.as_str()).collect()
    }
}

impl Placement for ShardMap {
    #[inline]
    fn node_index(&self, key: u64) -> usize {
        self.node_index_for_u64(key)
    }
    fn names(&self) -> Vec<&str> {
        self.nodes().iter().map(|n| n.name.as_str()).collect()
    }
}

/// Runs one statistics request.
pub fn run(req: &StatsRequest) -> Result<Stats, RingError> {
    if req.nodes == 0 {
        return Err(RingError::NoNodes);
    }
    if req.nodes > MAX_NODES {
        return Err(RingError::BadStats(format!(
            "{} nodes: at most {MAX_NODES}",
            req.nodes
        )));
    }
    if req.keys == 0 || req.keys > MAX_KEYS {
        return Err(RingError::BadStats(format!(
            "{} keys: give 1 to {MAX_KEYS}",
            req.keys
        )));
    }
    let nodes = numbered_nodes(req.nodes);
    let added = NodeSpec::new(format!("node-{}", req.nodes));
    let middle = format!("node-{}", req.nodes / 2);
    match req.algorithm {
        Algorithm::Ring => {
            let ring = Ring::new(nodes, req.vnodes)?;
            let grown = ring.with_node(added)?;
            let shrunk = shrink(&ring, |r| r.without_node(&middle))?;
            Ok(measure(req, &ring, &grown, shrunk.as_ref()))
        }
        Algorithm::Jump | Algorithm::JumpBack => {
            let bucketing = if req.algorithm == Algorithm::Jump {
                JumpAlgorithm::LampingVeach
            } else {
                JumpAlgorithm::JumpBack
            };
            let jump = JumpNodes::with_algorithm(nodes, bucketing)?;
            let grown = jump.with_node(added)?;
            let shrunk = shrink(&jump, |j| j.without_node(&middle))?;
            Ok(measure(req, &jump, &grown, shrunk.as_ref()))
        }
        Algorithm::Shards => {
            let map = ShardMap::new(req.shards, nodes)?;
            let grown = Plan::add(&map, added)?.apply(&map)?;
            let shrunk = shrink(&map, |m| Plan::remove(m, &middle)?.apply(m))?;
            Ok(measure(req, &map, &grown, shrunk.as_ref()))
        }
    }
}

/// The placement without the middle node, or `None` when there is only one node.
fn shrink<P: Placement>(
    p: &P,
    remove: impl FnOnce(&P) -> Result<P, RingError>,
) -> Result<Option<P>, RingError> {
    if p.names().len() < 2 {
        Ok(None)
    } else {
        remove(p).map(Some)
    }
}

fn measure<P: Placement>(req: &StatsRequest, base: &P, grown: &P, shrunk: Option<&P>) -> Stats {
    let names = base.names();
    let mut load = vec![0u64; names.len()];
    let owners: Vec<u32> = (0..req.keys)
        .map(|k| {
            let i = base.node_index(k);
            load[i] += 1;
            i as u32
        })
        .collect();
    let avg = req.keys as f64 / names.len() as f64;
    let peak = load.iter().copied().max().unwrap_or(0) as f64;
    Stats {
        peak_to_avg: peak / avg,
        moved_on_add: moved(&owners, &names, grown),
        moved_on_remove: shrunk.map_or(0.0, |s| moved(&owners, &names, s)),
        optimal_move: 1.0 / (f64::from(req.nodes) + 1.0),
        lookup_ns: lookup_ns(base, req.keys),
    }
}

/// Fraction of keys whose node (by name) differs in `after`.
fn moved<P: Placement>(owners: &[u32], names: &[&str], after: &P) -> f64 {
    let after_names = after.names();
    let moved = owners
        .iter()
        .enumerate()
        .filter(|&(k, &o)| names[o as usize] != after_names[after.node_index(k as u64)])
        .count();
    moved as f64 / owners.len() as f64
}

/// Mean lookup time over the keys, repeated until at least 100 ms have been measured.
fn lookup_ns<P: Placement>(p: &P, keys: u64) -> f64 {
    const MIN_TIME: Duration = Duration::from_millis(100);
    let mut done = 0u64;
    let start = Instant::now();
    let mut acc = 0usize;
    loop {
        for k in 0..keys {
            acc ^= p.node_index(black_box(k));
        }
        done += keys;
        if start.elapsed() >= MIN_TIME {
            break;
        }
    }
    black_box(acc);
    start.elapsed().as_nanos() as f64 / done as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(algorithm: Algorithm, nodes: u32) -> StatsRequest {
        StatsRequest {
            vnodes: 40,
            ..StatsRequest::new(algorithm, nodes, 20_000)
        }
    }

    #[test]
    fn figures_are_sane_for_every_algorithm() {
        for algorithm in [
            Algorithm::Ring,
            Algorithm::Jump,
            Algorithm::JumpBack,
            Algorithm::Shards,
        ] {
            let s = run(&req(algorithm, 10)).unwrap();
            assert!(
                s.peak_to_avg >= 1.0 && s.peak_to_avg < 1.6,
                "{algorithm:?} {s:?}"
            );
            assert!(
                s.moved_on_add > 0.0 && s.moved_on_add < 0.2,
                "{algorithm:?} {s:?}"
            );
            assert!(
                s.moved_on_remove > 0.0 && s.moved_on_remove < 0.3,
                "{algorithm:?} {s:?}"
            );
            assert_eq!(s.optimal_move, 1.0 / 11.0);
            assert!(s.lookup_ns > 0.0);
        }
    }

    #[test]
    fn shards_are_exactly_balanced_on_integer_keys() {
        let s = run(&StatsRequest::new(Algorithm::Shards, 100, 8192 * 10)).unwrap();
        assert!(s.peak_to_avg <= 82.0 / 81.92 + 1e-9, "{s:?}");
    }

    #[test]
    fn one_node_has_nothing_to_remove() {
        let s = run(&req(Algorithm::Ring, 1)).unwrap();
        assert_eq!(s.peak_to_avg, 1.0);
        assert_eq!(s.moved_on_remove, 0.0);
    }

    #[test]
    fn bad_requests_are_named_errors() {
        assert_eq!(
            run(&req(Algorithm::Jump, 0)).unwrap_err(),
            RingError::NoNodes
        );
        let zero_keys = StatsRequest {
            keys: 0,
            ..req(Algorithm::Jump, 3)
        };
        assert!(matches!(
            run(&zero_keys).unwrap_err(),
            RingError::BadStats(_)
        ));
        let zero_vnodes = StatsRequest {
            vnodes: 0,
            ..req(Algorithm::Ring, 3)
        };
        assert_eq!(run(&zero_vnodes).unwrap_err(), RingError::ZeroVnodes);
        let bad_shards = StatsRequest {
            shards: 100,
            ..req(Algorithm::Shards, 3)
        };
        assert_eq!(
            run(&bad_shards).unwrap_err(),
            RingError::ShardCountNotPowerOfTwo(100)
        );
        assert!(matches!(
            "tree".parse::<Algorithm>(),
            Err(RingError::BadStats(_))
        ));
    }
}

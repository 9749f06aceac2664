//! Consistent-hash ring with weighted virtual nodes and clockwise replicas.
//!
//! Each node is placed on a 64-bit circle at `vnodes x weight` points; a key belongs to
//! the first point at or after its hash, wrapping past the top (Karger et al., as used by
//! Dynamo and Cassandra). Adding a node therefore only takes keys *to* the new node, and
//! removing one only moves *its* keys.
//!
//! The ring is immutable: changing it builds a new one ([`Ring::with_node`],
//! [`Ring::without_node`], [`Ring::with_weight`]), which is what lets
//! [`crate::SharedRing`] swap it atomically under readers.
//!
//! Lookup is a binary search over a sorted `Vec<u64>` of points, narrowed first by a
//! radix index on the top bits of the hash (about one point per index slot), so a lookup
//! touches three cache lines instead of the ~17 of a plain search over 160 000 points.

use crate::hash::{hash_bytes, hash_u64, vnode_point};
use crate::node::{nodes_with, validate_nodes, NodeSpec};
use crate::RingError;

/// The most points one ring may hold (nodes x vnodes x weight): 64 Mi points, 768 MiB.
pub const MAX_POINTS: u64 = 1 << 26;

/// The default number of virtual nodes per unit of weight (ketama's choice).
pub const DEFAULT_VNODES: u32 = 160;

/// Most radix-index bits: 2^22 slots (16 MiB) is plenty for the largest rings.
const MAX_INDEX_BITS: u32 = 22;

/// An immutable consistent-hash ring.
///
/// Invariants: `points` is sorted ascending with no duplicates; `owners[i]` is the index
/// in `nodes` of the node that owns `points[i]`; `index[b]` is the first position whose
/// point has top bits `>= b`, for every `b` in `0..=2^bits`.
#[derive(Debug, Clone)]
pub struct Ring {
    nodes: Vec<NodeSpec>,
    vnodes: u32,
    points: Vec<u64>,
    owners: Vec<u32>,
    index: Vec<u32>,
    shift: u32,
}

impl Ring {
    /// Builds a ring placing each node at `vnodes x weight` points.
    ///
    /// Errors: no nodes, an empty or duplicate name, weight 0, `vnodes` 0, or more than
    /// [`MAX_POINTS`] points in all.
    pub fn new(nodes: Vec<NodeSpec>, vnodes: u32) -> Result<Self, RingError> {
        validate_nodes(&nodes)?;
        if vnodes == 0 {
            return Err(RingError::ZeroVnodes);
        }
        let total: u64 = nodes
            .iter()
            .map(|n| u64::from(n.weight) * u64::from(vnodes))
            .sum();
        if total > MAX_POINTS {
            return Err(RingError::TooManyPoints {
                points: total,
                limit: MAX_POINTS,
            });
        }
        let mut placed: Vec<(u64, u32)> = Vec::with_capacity(total as usize);
        for (i, node) in nodes.iter().enumerate() {
            for v in 0..node.weight.saturating_mul(vnodes) {
                placed.push((vnode_point(&node.name, v), i as u32));
            }
        }
        // Ties (two vnodes on one point, ~never with 64-bit points) go to the smaller
        // name, so the winner does not depend on the order nodes were listed in.
        placed.sort_unstable_by(|a, b| {
            a.0.cmp(&b.0)
                .then_with(|| nodes[a.1 as usize].name.cmp(&nodes[b.1 as usize].name))
        });
        placed.dedup_by_key(|p| p.0);
        let (points, owners): (Vec<u64>, Vec<u32>) = placed.into_iter().unzip();
        let (index, shift) = build_index(&points);
        Ok(Self {
            nodes,
            vnodes,
            points,
            owners,
            index,
            shift,
        })
    }

    /// The nodes, in the order they were given (owner indices refer to this order).
    pub fn nodes(&self) -> &[NodeSpec] {
        &self.nodes
    }

    /// Virtual nodes per unit of weight.
    pub fn vnodes(&self) -> u32 {
        self.vnodes
    }

    /// Number of points on the ring (after the rare duplicate is dropped).
    pub fn point_count(&self) -> usize {
        self.points.len()
    }

    /// Position in `points` of the first point at or after `hash`, wrapping to 0.
    #[inline]
    fn position(&self, hash: u64) -> usize {
        let slot = (hash >> self.shift) as usize;
        let lo = self.index[slot] as usize;
        let hi = self.index[slot + 1] as usize;
        let pos = lo + self.points[lo..hi].partition_point(|&p| p < hash);
        if pos == self.points.len() {
            0
        } else {
            pos
        }
    }

    /// Index (into [`Ring::nodes`]) of the node owning a 64-bit placement hash.
    #[inline]
    pub fn node_index_for_hash(&self, hash: u64) -> usize {
        self.owners[self.position(hash)] as usize
    }

    /// Index of the node owning an integer key (hashed with [`crate::hash_u64`]).
    #[inline]
    pub fn node_index_for_u64(&self, key: u64) -> usize {
        self.node_index_for_hash(hash_u64(key))
    }

    /// Name of the node owning a byte-string key.
    #[inline]
    pub fn node_for(&self, key: impl AsRef<[u8]>) -> &str {
        &self.nodes[self.node_index_for_hash(hash_bytes(key.as_ref()))].name
    }

    /// Name of the node owning an integer key.
    #[inline]
    pub fn node_for_u64(&self, key: u64) -> &str {
        &self.nodes[self.node_index_for_u64(key)].name
    }

    /// Up to `n` distinct nodes for a key, walking clockwise from its point; the first is
    /// the primary ([`Ring::node_for`]). Asking for more nodes than the ring has returns
    /// them all.
    pub fn replicas(&self, key: impl AsRef<[u8]>, n: usize) -> Vec<&str> {
        self.replica_indices_for_hash(hash_bytes(key.as_ref()), n)
            .into_iter()
            .map(|i| self.nodes[i].name.as_str())
            .collect()
    }

    /// Node indices of up to `n` distinct replicas for a placement hash.
    pub fn replica_indices_for_hash(&self, hash: u64, n: usize) -> Vec<usize> {
        let want = n.min(self.nodes.len());
        let mut out = Vec::with_capacity(want);
        if want == 0 {
            return out;
        }
        let mut seen = vec![false; self.nodes.len()];
        let start = self.position(hash);
        let len = self.points.len();
        for step in 0..len {
            let owner = self.owners[(start + step) % len] as usize;
            if !seen[owner] {
                seen[owner] = true;
                out.push(owner);
                if out.len() == want {
                    break;
                }
            }
        }
        out
    }

    /// A new ring with one more node. Errors if the name is taken or the node is invalid.
    pub fn with_node(&self, node: NodeSpec) -> Result<Self, RingError> {
        let nodes = nodes_with(&self.nodes, node)?;
        Self::new(nodes, self.vnodes)
    }

    /// A new ring without the named node. Errors if it is unknown or the last one.
    pub fn without_node(&self, name: &str) -> Result<Self, RingError> {
        let pos = self.find(name)?;
        if self.nodes.len() == 1 {
            return Err(RingError::LastNode(name.to_owned()));
        }
        let mut nodes = self.nodes.clone();
        nodes.remove(pos);
        Self::new(nodes, self.vnodes)
    }

    /// A new ring with the named node's weight changed.
    pub fn with_weight(&self, name: &str, weight: u32) -> Result<Self, RingError> {
        let pos = self.find(name)?;
        let mut nodes = self.nodes.clone();
        nodes[pos].weight = weight;
        Self::new(nodes, self.vnodes)
    }

    /// Exact fraction of the 64-bit hash space (so of uniformly hashed keys) whose node,
    /// by name, differs between this ring and `after`: what a change of the ring moves.
    ///
    /// Walks the merged point sets once: between two consecutive points of either ring
    /// both owners are constant, so no sampling is needed.
    pub fn moved_fraction(&self, after: &Ring) -> f64 {
        let same: Vec<Option<usize>> = self
            .nodes
            .iter()
            .map(|n| after.nodes.iter().position(|m| m.name == n.name))
            .collect();
        let differs =
            |h: u64| same[self.node_index_for_hash(h)] != Some(after.node_index_for_hash(h));
        let mut bounds: Vec<u64> = Vec::with_capacity(self.points.len() + after.points.len());
        bounds.extend_from_slice(&self.points);
        bounds.extend_from_slice(&after.points);
        bounds.sort_unstable();
        bounds.dedup();
        let (Some(&first), Some(&last)) = (bounds.first(), bounds.last()) else {
            return 0.0;
        };
        // The wrap segment (last, 2^64) + [0, first] belongs to both rings' first points.
        let mut moved: u128 = 0;
        if differs(first) {
            moved += (1u128 << 64) - u128::from(last - first);
        }
        for pair in bounds.windows(2) {
            // Segment (pair[0], pair[1]]: owned in each ring by its first point >= pair[1].
            if differs(pair[1]) {
                moved += u128::from(pair[1] - pair[0]);
            }
        }
        moved as f64 / (1u128 << 64) as f64
    }

    fn find(&self, name: &str) -> Result<usize, RingError> {
        self.nodes
            .iter()
            .position(|n| n.name == name)
            .ok_or_else(|| RingError::UnknownNode(name.to_owned()))
    }
}

/// Builds the radix index over sorted `points`: about one point per slot.
fn build_index(points: &[u64]) -> (Vec<u32>, u32) {
    let bits = (usize::BITS - 1 - points.len().max(2).leading_zeros()).clamp(1, MAX_INDEX_BITS);
    let shift = 64 - bits;
    let slots = 1usize << bits;
    let mut index = Vec::with_capacity(slots + 1);
    let mut pos = 0usize;
    for slot in 0..=slots {
        while pos < points.len() && ((points[pos] >> shift) as usize) < slot {
            pos += 1;
        }
        index.push(pos as u32);
    }
    (index, shift)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node::numbered_nodes;

    fn plain_search(ring: &Ring, hash: u64) -> usize {
        let pos = ring.points.partition_point(|&p| p < hash);
        ring.owners[if pos == ring.points.len() { 0 } else { pos }] as usize
    }

    #[test]
    fn radix_index_agrees_with_plain_binary_search() {
        let ring = Ring::new(numbered_nodes(7), 13).unwrap();
        for k in 0..5000u64 {
            let h = hash_u64(k);
            assert_eq!(ring.node_index_for_hash(h), plain_search(&ring, h));
        }
        // Edges of the circle: exactly on a point, past the last point, at 0 and max.
        for &h in [0, u64::MAX, ring.points[0], *ring.points.last().unwrap()].iter() {
            assert_eq!(ring.node_index_for_hash(h), plain_search(&ring, h));
        }
    }

    #[test]
    fn bad_input_is_a_named_error() {
        assert_eq!(Ring::new(vec![], 10).unwrap_err(), RingError::NoNodes);
        assert_eq!(
            Ring::new(numbered_nodes(2), 0).unwrap_err(),
            RingError::ZeroVnodes
        );
        assert!(matches!(
            Ring::new(numbered_nodes(2), u32::MAX).unwrap_err(),
            RingError::TooManyPoints { .. }
        ));
        let ring = Ring::new(numbered_nodes(2), 4).unwrap();
        assert_eq!(
            ring.with_node(NodeSpec::new("node-0")).unwrap_err(),
            RingError::NodeExists("node-0".into())
        );
        assert_eq!(
            ring.without_node("x").unwrap_err(),
            RingError::UnknownNode("x".into())
        );
        let one = Ring::new(numbered_nodes(1), 4).unwrap();
        assert_eq!(
            one.without_node("node-0").unwrap_err(),
            RingError::LastNode("node-0".into())
        );
        assert_eq!(
            ring.with_weight("node-0", 0).unwrap_err(),
            RingError::ZeroWeight("node-0".into())
        );
    }

    #[test]
    fn weights_scale_points_and_load() {
        let ring = Ring::new(
            vec![NodeSpec::weighted("a", 1), NodeSpec::weighted("b", 3)],
            100,
        )
        .unwrap();
        assert_eq!(ring.point_count(), 400);
        let b = (0..20_000u64)
            .filter(|&k| ring.node_for_u64(k) == "b")
            .count();
        assert!((13_000..17_000).contains(&b), "b got {b} of 20000");
    }

    #[test]
    fn exact_moved_fraction_matches_sampling() {
        let ring = Ring::new(numbered_nodes(10), 50).unwrap();
        assert_eq!(ring.moved_fraction(&ring), 0.0);
        let grown = ring.with_node(NodeSpec::new("new")).unwrap();
        let exact = ring.moved_fraction(&grown);
        let keys = 200_000u64;
        let sampled = (0..keys)
            .filter(|&k| ring.node_for_u64(k) != grown.node_for_u64(k))
            .count();
        let sampled = sampled as f64 / keys as f64;
        assert!(
            (exact - sampled).abs() < 0.005,
            "exact {exact} sampled {sampled}"
        );
        assert!(exact > 0.03 && exact < 0.2, "{exact}");
        // Symmetric for a removal, and everything moves between disjoint rings.
        assert!((grown.moved_fraction(&ring) - exact).abs() < 1e-12);
        let other = Ring::new(vec![NodeSpec::new("x")], 3).unwrap();
        assert!((ring.moved_fraction(&other) - 1.0).abs() < 1e-12);
    }

    #[test]
    fn single_node_takes_everything() {
        let ring = Ring::new(numbered_nodes(1), 1).unwrap();
        assert_eq!(ring.node_for("anything"), "node-0");
        assert_eq!(ring.replicas("anything", 3), vec!["node-0"]);
    }
}

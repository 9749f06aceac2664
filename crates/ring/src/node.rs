//! A physical node as every placement scheme sees it: a unique name and a weight.
//!
//! Rings and shard maps both key placement by node name (not by position in a list),
//! so that a node keeps its keys when others join or leave; the checks that make that
//! safe (unique, non-empty names, weights of at least 1) live here once.

use crate::RingError;
use serde::{Deserialize, Serialize};
use std::collections::HashSet;

/// A physical node: the name placement is keyed by, and its relative capacity.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct NodeSpec {
    /// Unique, non-empty name (a host name, a database DSN alias, ...).
    pub name: String,
    /// Relative capacity: a node of weight 2 gets twice the keys of a node of weight 1.
    pub weight: u32,
}

impl NodeSpec {
    /// A node of weight 1, the common case.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            weight: 1,
        }
    }

    /// A node with an explicit weight (checked when it joins a ring or a map).
    pub fn weighted(name: impl Into<String>, weight: u32) -> Self {
        Self {
            name: name.into(),
            weight,
        }
    }
}

/// `n` nodes of weight 1 named `node-0` .. `node-{n-1}`: the fleet the statistics and
/// benchmarks use.
pub fn numbered_nodes(n: u32) -> Vec<NodeSpec> {
    (0..n).map(|i| NodeSpec::new(format!("node-{i}"))).collect()
}

/// Checks a node list: at least one node, names non-empty and unique, weights at least 1.
pub fn validate_nodes(nodes: &[NodeSpec]) -> Result<(), RingError> {
    if nodes.is_empty() {
        return Err(RingError::NoNodes);
    }
    let mut seen = HashSet::with_capacity(nodes.len());
    for node in nodes {
        validate_node(node)?;
        if !seen.insert(node.name.as_str()) {
            return Err(RingError::DuplicateNode(node.name.clone()));
        }
    }
    Ok(())
}

/// Checks one node on its own: a non-empty name and a weight of at least 1.
pub fn validate_node(node: &NodeSpec) -> Result<(), RingError> {
    if node.name.trim().is_empty() {
        return Err(RingError::EmptyNodeName);
    }
    if node.weight == 0 {
        return Err(RingError::ZeroWeight(node.name.clone()));
    }
    Ok(())
}

/// `nodes` plus `node`, refused if the node is invalid or its name is taken: what
/// every placement scheme does first when a node joins.
pub fn nodes_with(nodes: &[NodeSpec], node: NodeSpec) -> Result<Vec<NodeSpec>, RingError> {
    validate_node(&node)?;
    if nodes.iter().any(|n| n.name == node.name) {
        return Err(RingError::NodeExists(node.name));
    }
    let mut all = nodes.to_vec();
    all.push(node);
    Ok(all)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_bad_lists() {
        assert_eq!(validate_nodes(&[]), Err(RingError::NoNodes));
        assert_eq!(
            validate_nodes(&[NodeSpec::new("a"), NodeSpec::new("a")]),
            Err(RingError::DuplicateNode("a".into()))
        );
        assert_eq!(
            validate_nodes(&[NodeSpec::new(" ")]),
            Err(RingError::EmptyNodeName)
        );
        assert_eq!(
            validate_nodes(&[NodeSpec::weighted("a", 0)]),
            Err(RingError::ZeroWeight("a".into()))
        );
        assert_eq!(validate_nodes(&numbered_nodes(3)), Ok(()));
    }
}

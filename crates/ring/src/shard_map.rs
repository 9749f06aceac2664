//! Logical shards (Instagram's scheme): keys to a fixed number of shards, shards to
//! nodes through a versioned table.
//!
//! The shard of a key never changes (`key % S`, or its placement hash `% S` for
//! byte-string keys), so
//! the shard number can be baked into ids. Only the small table from shard to node
//! changes, one version at a time, by move plans ([`crate::plan`]), and moving a shard
//! moves exactly its keys.
//!
//! On disk the table is TOML or JSON: a version, the shard count, and per node its weight
//! and the shard ranges it holds (`["0-818", "4096"]`), compact and easy to review.

use crate::hash::hash_bytes;
use crate::node::{validate_nodes, NodeSpec};
use crate::RingError;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::num::NonZeroU32;

/// The default shard count: the 13 shard bits of an Instagram id.
pub const DEFAULT_SHARDS: u32 = 8192;

/// The largest shard count a map may have (2^24), which bounds the table's memory.
pub const MAX_SHARDS: u32 = 1 << 24;

/// Keys to logical shards to nodes, at one version.
///
/// Invariants: `shards` is a power of two in `1..=MAX_SHARDS`; `table.len() == shards`;
/// every entry of `table` indexes `nodes`; `nodes` passes [`validate_nodes`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShardMap {
    version: u64,
    shards: NonZeroU32,
    nodes: Vec<NodeSpec>,
    table: Vec<u32>,
}

/// Text formats a map can be read from and written to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// TOML, for files people edit and review.
    Toml,
    /// JSON, for programs.
    Json,
}

impl Format {
    /// JSON for a `.json` path, TOML for anything else.
    pub fn from_path(path: &std::path::Path) -> Self {
        match path.extension().and_then(|e| e.to_str()) {
            Some(e) if e.eq_ignore_ascii_case("json") => Format::Json,
            _ => Format::Toml,
        }
    }
}

impl ShardMap {
    /// A version-1 map of `shards` shards spread over `nodes` by weight, each node
    /// holding one contiguous range whose size is within one shard of its fair share.
    pub fn new(shards: u32, nodes: Vec<NodeSpec>) -> Result<Self, RingError> {
        let shards = check_shard_count(u64::from(shards))?;
        validate_nodes(&nodes)?;
        let targets = balanced_targets(shards.get(), &nodes);
        let mut table = Vec::with_capacity(shards.get() as usize);
        for (i, &t) in targets.iter().enumerate() {
            table.extend(std::iter::repeat_n(i as u32, t as usize));
        }
        Ok(Self {
            version: 1,
            shards,
            nodes,
            table,
        })
    }

    /// A map from its parts, checked: shard count, nodes, a table entry per shard naming
    /// a node in `nodes`.
    pub fn from_parts(
        version: u64,
        shards: u32,
        nodes: Vec<NodeSpec>,
        table: Vec<u32>,
    ) -> Result<Self, RingError> {
        let shards = check_shard_count(u64::from(shards))?;
        validate_nodes(&nodes)?;
        if table.len() != shards.get() as usize {
            let missing = table.len().min(shards.get() as usize) as u64;
            return Err(RingError::ShardUnassigned(missing));
        }
        if let Some(shard) = table.iter().position(|&o| o as usize >= nodes.len()) {
            return Err(RingError::BadMove {
                shard: shard as u64,
                reason: format!("owner index {} is not a node", table[shard]),
            });
        }
        Ok(Self {
            version,
            shards,
            nodes,
            table,
        })
    }

    /// The table's version: 1 for a new map, one more for each applied plan.
    pub fn version(&self) -> u64 {
        self.version
    }

    /// Number of logical shards (S).
    pub fn shard_count(&self) -> u32 {
        self.shards.get()
    }

    /// The nodes, in table order.
    pub fn nodes(&self) -> &[NodeSpec] {
        &self.nodes
    }

    /// Owner index of every shard, shard by shard.
    pub fn table(&self) -> &[u32] {
        &self.table
    }

    /// Name of the node holding `shard`, or `None` past the shard count.
    pub fn owner(&self, shard: u32) -> Option<&str> {
        self.table
            .get(shard as usize)
            .map(|&i| self.nodes[i as usize].name.as_str())
    }

    /// Shard of an integer key: `key % S` (S is a power of two, so a mask).
    #[inline]
    pub fn shard_for_u64(&self, key: u64) -> u32 {
        (key & u64::from(self.shards.get() - 1)) as u32
    }

    /// Shard of a byte-string key: its placement hash `% S`.
    ///
    /// Not jump hash over S: S is fixed and a power of two, so the low bits of a 64-bit
    /// hash are already uniform over the shards; jump would add ~ln(S) dependent steps
    /// (60+ ns at 8192) for nothing. The mask also keeps a future doubling of S cheap:
    /// shard s splits into s and s + S, both of which can stay on s's node.
    #[inline]
    pub fn shard_for(&self, key: impl AsRef<[u8]>) -> u32 {
        (hash_bytes(key.as_ref()) & u64::from(self.shards.get() - 1)) as u32
    }

    /// Node index for an integer key: `table[key % S]`.
    #[inline]
    pub fn node_index_for_u64(&self, key: u64) -> usize {
        self.table[self.shard_for_u64(key) as usize] as usize
    }

    /// Node name for an integer key.
    #[inline]
    pub fn node_for_u64(&self, key: u64) -> &str {
        &self.nodes[self.node_index_for_u64(key)].name
    }

    /// Node name for a byte-string key.
    #[inline]
    pub fn node_for(&self, key: impl AsRef<[u8]>) -> &str {
        &self.nodes[self.table[self.shard_for(key) as usize] as usize].name
    }

    /// Shards held by each node, in node order.
    pub fn counts(&self) -> Vec<u32> {
        let mut counts = vec![0u32; self.nodes.len()];
        for &o in &self.table {
            counts[o as usize] += 1;
        }
        counts
    }

    /// Reads a map from text in the given format, checking every invariant.
    pub fn parse(text: &str, format: Format) -> Result<Self, RingError> {
        let file: MapFile = match format {
            Format::Toml => toml::from_str(text).map_err(|e| toml_error(text, &e))?,
            Format::Json => {
                serde_json::from_str(text).map_err(|e| RingError::Parse(e.to_string()))?
            }
        };
        file.into_map()
    }

    /// Writes the map as text in the given format.
    pub fn render(&self, format: Format) -> Result<String, RingError> {
        let file = MapFile::from_map(self);
        match format {
            Format::Toml => toml::to_string(&file).map_err(|e| RingError::Serialize(e.to_string())),
            Format::Json => serde_json::to_string_pretty(&file)
                .map(|mut s| {
                    s.push('\n');
                    s
                })
                .map_err(|e| RingError::Serialize(e.to_string())),
        }
    }

    /// The same nodes and table at the next version (used by plans).
    pub(crate) fn next_version(
        &self,
        nodes: Vec<NodeSpec>,
        table: Vec<u32>,
    ) -> Result<Self, RingError> {
        Self::from_parts(
            self.version.saturating_add(1),
            self.shards.get(),
            nodes,
            table,
        )
    }
}

/// A TOML error as one line: `line L, column C: message` (the default text draws the
/// offending line over several, which does not fit a one-line CLI error).
fn toml_error(text: &str, err: &toml::de::Error) -> RingError {
    let message = err.message().trim().replace('\n', "; ");
    match err.span() {
        Some(span) => {
            let before = &text[..span.start.min(text.len())];
            let line = before.matches('\n').count() + 1;
            let column = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
            RingError::Parse(format!("TOML line {line}, column {column}: {message}"))
        }
        None => RingError::Parse(format!("TOML: {message}")),
    }
}

/// Checks a shard count: a power of two from 1 to [`MAX_SHARDS`].
fn check_shard_count(shards: u64) -> Result<NonZeroU32, RingError> {
    if !shards.is_power_of_two() || shards > u64::from(MAX_SHARDS) {
        return Err(RingError::ShardCountNotPowerOfTwo(shards));
    }
    NonZeroU32::new(shards as u32).ok_or(RingError::ShardCountNotPowerOfTwo(shards))
}

/// Floor and ceiling of each node's fair share `S * weight / total weight`.
///
/// Holding `lo` or `hi` shards is what "within one shard of its fair share" means here.
pub(crate) fn share_bounds(shards: u32, nodes: &[NodeSpec]) -> Vec<(u32, u32)> {
    let total: u128 = nodes.iter().map(|n| u128::from(n.weight)).sum();
    nodes
        .iter()
        .map(|n| {
            let num = u128::from(shards) * u128::from(n.weight);
            let lo = (num / total) as u32;
            (lo, lo + u32::from(num % total != 0))
        })
        .collect()
}

/// Shard counts summing to `shards`, each the floor or ceiling of the node's share
/// (largest remainders get the ceiling; ties to the earlier node).
fn balanced_targets(shards: u32, nodes: &[NodeSpec]) -> Vec<u32> {
    let total: u128 = nodes.iter().map(|n| u128::from(n.weight)).sum();
    let bounds = share_bounds(shards, nodes);
    let mut targets: Vec<u32> = bounds.iter().map(|b| b.0).collect();
    let mut left = shards - targets.iter().sum::<u32>();
    let mut order: Vec<usize> = (0..nodes.len()).collect();
    order.sort_by_key(|&i| {
        std::cmp::Reverse((u128::from(shards) * u128::from(nodes[i].weight)) % total)
    });
    for i in order {
        if left == 0 {
            break;
        }
        if bounds[i].1 > targets[i] {
            targets[i] += 1;
            left -= 1;
        }
    }
    targets
}

/// The on-disk form of a map.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct MapFile {
    version: u64,
    shards: u64,
    nodes: Vec<NodeEntry>,
}

/// One node of the on-disk form: its weight and the shard ranges it holds.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct NodeEntry {
    name: String,
    #[serde(default = "one")]
    weight: u32,
    shards: Vec<String>,
}

fn one() -> u32 {
    1
}

impl MapFile {
    fn from_map(map: &ShardMap) -> Self {
        let mut ranges: Vec<Vec<String>> = vec![Vec::new(); map.nodes.len()];
        let mut start = 0usize;
        while start < map.table.len() {
            let owner = map.table[start];
            let mut end = start;
            while end + 1 < map.table.len() && map.table[end + 1] == owner {
                end += 1;
            }
            ranges[owner as usize].push(if start == end {
                start.to_string()
            } else {
                format!("{start}-{end}")
            });
            start = end + 1;
        }
        let nodes = map
            .nodes
            .iter()
            .zip(ranges)
            .map(|(n, shards)| NodeEntry {
                name: n.name.clone(),
                weight: n.weight,
                shards,
            })
            .collect();
        Self {
            version: map.version,
            shards: u64::from(map.shards.get()),
            nodes,
        }
    }

    fn into_map(self) -> Result<ShardMap, RingError> {
        let shards = check_shard_count(self.shards)?;
        let nodes: Vec<NodeSpec> = self
            .nodes
            .iter()
            .map(|n| NodeSpec::weighted(n.name.clone(), n.weight))
            .collect();
        validate_nodes(&nodes)?;
        let mut table = vec![u32::MAX; shards.get() as usize];
        let by_name: HashMap<&str, u32> = nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (n.name.as_str(), i as u32))
            .collect();
        for entry in &self.nodes {
            let owner = by_name[entry.name.as_str()];
            for range in &entry.shards {
                let (start, end) = parse_range(range)?;
                if end >= self.shards {
                    return Err(RingError::ShardOutOfRange {
                        shard: end,
                        shards: self.shards,
                    });
                }
                for shard in start..=end {
                    let slot = &mut table[shard as usize];
                    if *slot != u32::MAX {
                        return Err(RingError::ShardAssignedTwice(shard));
                    }
                    *slot = owner;
                }
            }
        }
        if let Some(shard) = table.iter().position(|&o| o == u32::MAX) {
            return Err(RingError::ShardUnassigned(shard as u64));
        }
        ShardMap::from_parts(self.version, shards.get(), nodes, table)
    }
}

/// Parses `"17"` or `"0-818"` (inclusive) into a start and an end.
fn parse_range(text: &str) -> Result<(u64, u64), RingError> {
    let number = |s: &str| {
        s.trim()
            .parse::<u64>()
            .map_err(|_| RingError::Parse(format!("bad shard range {text:?}: expected N or N-M")))
    };
    let (start, end) = match text.split_once('-') {
        Some((a, b)) => (number(a)?, number(b)?),
        None => {
            let n = number(text)?;
            (n, n)
        }
    };
    if start > end {
        return Err(RingError::BadRange { start, end });
    }
    Ok((start, end))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node::numbered_nodes;

    #[test]
    fn new_map_is_balanced_and_contiguous() {
        let map = ShardMap::new(DEFAULT_SHARDS, numbered_nodes(100)).unwrap();
        let counts = map.counts();
        assert!(counts.iter().all(|&c| c == 81 || c == 82), "{counts:?}");
        assert_eq!(counts.iter().sum::<u32>(), 8192);
        assert_eq!(map.version(), 1);
        assert_eq!(map.owner(0), Some("node-0"));
        assert_eq!(map.owner(8191), Some("node-99"));
        assert_eq!(map.owner(8192), None);
    }

    #[test]
    fn weights_are_respected() {
        let nodes = vec![NodeSpec::weighted("a", 1), NodeSpec::weighted("b", 3)];
        let map = ShardMap::new(16, nodes).unwrap();
        assert_eq!(map.counts(), vec![4, 12]);
    }

    #[test]
    fn keys_map_to_shards_then_nodes() {
        let map = ShardMap::new(8, numbered_nodes(2)).unwrap();
        assert_eq!(map.shard_for_u64(13), 5);
        assert_eq!(map.node_for_u64(13), "node-1");
        assert_eq!(map.node_for_u64(2), "node-0");
        assert!(map.shard_for("user:1") < 8);
    }

    #[test]
    fn round_trips_through_toml_and_json() {
        let nodes = vec![
            NodeSpec::weighted("db-a", 2),
            NodeSpec::new("db-b"),
            NodeSpec::new("db-c"),
        ];
        let map = ShardMap::new(64, nodes).unwrap();
        for format in [Format::Toml, Format::Json] {
            let text = map.render(format).unwrap();
            assert_eq!(ShardMap::parse(&text, format).unwrap(), map, "{text}");
        }
        let toml = map.render(Format::Toml).unwrap();
        assert!(toml.contains("shards = [\"0-31\"]"), "{toml}");
    }

    #[test]
    fn bad_maps_are_named_errors() {
        let err = |text: &str| ShardMap::parse(text, Format::Toml).unwrap_err();
        let node = |name: &str, shards: &str| {
            format!("[[nodes]]\nname = \"{name}\"\nshards = [{shards}]\n")
        };
        let head = |s: u64| format!("version = 1\nshards = {s}\n");
        let empty = |s: u64| head(s) + "nodes = []\n";
        assert_eq!(err(&empty(6)), RingError::ShardCountNotPowerOfTwo(6));
        assert_eq!(err(&empty(0)), RingError::ShardCountNotPowerOfTwo(0));
        assert_eq!(
            err(&head(4)),
            RingError::Parse("TOML line 1, column 1: missing field `nodes`".into())
        );
        assert_eq!(err(&(head(4) + "nodes = []\n")), RingError::NoNodes);
        assert_eq!(
            err(&(head(4) + &node("a", "\"0-1\"") + &node("a", "\"2-3\""))),
            RingError::DuplicateNode("a".into())
        );
        assert_eq!(
            err(&(head(4) + &node("a", "\"0-2\""))),
            RingError::ShardUnassigned(3)
        );
        assert_eq!(
            err(&(head(4) + &node("a", "\"0-3\"") + &node("b", "\"3\""))),
            RingError::ShardAssignedTwice(3)
        );
        assert_eq!(
            err(&(head(4) + &node("a", "\"0-4\""))),
            RingError::ShardOutOfRange {
                shard: 4,
                shards: 4
            }
        );
        assert_eq!(
            err(&(head(4) + &node("a", "\"3-0\""))),
            RingError::BadRange { start: 3, end: 0 }
        );
        assert!(matches!(
            err(&(head(4) + &node("a", "\"x\""))),
            RingError::Parse(_)
        ));
        match err("version = 1\nshards = [") {
            RingError::Parse(m) => {
                assert!(m.starts_with("TOML line 2,") && !m.contains('\n'), "{m}")
            }
            other => panic!("{other:?}"),
        }
        let zero = head(4) + "[[nodes]]\nname = \"a\"\nweight = 0\nshards = [\"0-3\"]\n";
        assert_eq!(err(&zero), RingError::ZeroWeight("a".into()));
        assert!(matches!(
            ShardMap::parse("{\"version\":1}", Format::Json).unwrap_err(),
            RingError::Parse(_)
        ));
        assert_eq!(ShardMap::new(8192, vec![]).unwrap_err(), RingError::NoNodes);
        assert_eq!(
            ShardMap::new(1000, numbered_nodes(2)).unwrap_err(),
            RingError::ShardCountNotPowerOfTwo(1000)
        );
    }
}

//! `[cluster]`: whether this node is one of a Redis Cluster of shardkit nodes, which
//! one, and how clients reach it.

use serde::{Deserialize, Serialize};

/// `[cluster]` settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, documented::DocumentedFields)]
#[serde(default, deny_unknown_fields)]
pub struct ClusterSettings {
    /// Join the cluster `name` on `[nats] url` (needs feature `nats`).
    pub enabled: bool,
    /// The cluster's name; its NATS objects derive from it, so several clusters share
    /// one NATS. Letters, digits, `-` and `_`.
    pub name: String,
    /// The RESP address clients should dial for this node (`host:port`); default the
    /// `resp` listen address.
    pub announce: Option<String>,
    /// How many groups the 16,384 slots are split into (each a contiguous slot range
    /// with its own log, snapshots and writer lease): a power of two from 1 to 1,024.
    pub groups: u16,
    /// Copies NATS keeps of every group's stream and buckets, and of the cluster's
    /// registry and map (1 to 5); unset: 3 when the NATS cluster can hold 3, else 1
    /// with a warning at start. Applies to what is created; existing streams keep theirs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stream_replicas: Option<usize>,
}

impl Default for ClusterSettings {
    fn default() -> Self {
        Self {
            enabled: false,
            name: "shardkit".into(),
            announce: None,
            groups: 64,
            stream_replicas: None,
        }
    }
}

impl ClusterSettings {
    /// Refuses values that cannot work, saying how to fix them.
    pub fn check(&self) -> anyhow::Result<()> {
        if self.name.is_empty()
            || self.name.len() > 64
            || !self
                .name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        {
            anyhow::bail!(
                "cluster.name must be 1 to 64 letters, digits, '-' or '_', got {:?}",
                self.name
            );
        }
        if !self.groups.is_power_of_two() || self.groups > 1024 {
            anyhow::bail!(
                "cluster.groups must be a power of two from 1 to 1024, got {}",
                self.groups
            );
        }
        if let Some(n) = self.stream_replicas.filter(|n| !(1..=5).contains(n)) {
            anyhow::bail!(
                "cluster.stream_replicas must be from 1 to 5 (JetStream's limit), got {n}"
            );
        }
        if let Some(announce) = &self.announce {
            crate::announce::check("cluster.announce", announce)?;
        }
        if self.enabled && !cfg!(feature = "nats") {
            anyhow::bail!(
                "cluster.enabled needs a shardkit built with the cargo feature `nats` \
                 (the cluster keeps its map and its groups' logs on NATS JetStream)"
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_pass_and_bad_values_are_named() {
        ClusterSettings::default().check().unwrap();
        let bad = |s: ClusterSettings| s.check().unwrap_err().to_string();
        let d = ClusterSettings::default;
        assert!(bad(ClusterSettings { groups: 48, ..d() }).contains("cluster.groups"));
        assert!(bad(ClusterSettings {
            name: "a b".into(),
            ..d()
        })
        .contains("cluster.name"));
        let announce = Some("nowhere".into());
        assert!(bad(ClusterSettings { announce, ..d() }).contains("cluster.announce"));
        if !cfg!(feature = "nats") {
            assert!(bad(ClusterSettings {
                enabled: true,
                ..d()
            })
            .contains("feature `nats`"));
        }
    }
}

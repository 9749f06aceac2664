//! `--layout` and `--epoch`, shared by every subcommand that makes or reads ids.

use anyhow::Context;
use clap::Args;
use shardkit_ids::Layout;
use shardkit_node::config::IdSettings;

/// Which id layout to use.
#[derive(Debug, Clone, Args)]
pub struct LayoutArgs {
    /// instagram, snowflake, sonyflake (Sony's layout), sonyflake-legacy (what
    /// earlier releases called sonyflake), or TIME/SHARD/SEQUENCE bits summing to 63
    /// with an optional unit, like 41/12/10@1ms [default: `[ids] layout` of the
    /// --config file, else instagram].
    #[arg(long, env = "SHARDKIT_LAYOUT")]
    pub layout: Option<String>,
    /// The layout's epoch, RFC 3339 [default: `[ids] epoch` of the --config file, else
    /// 2024-01-01T00:00:00Z].
    #[arg(long, env = "SHARDKIT_EPOCH")]
    pub epoch: Option<String>,
}

impl LayoutArgs {
    /// The checked layout: each flag (or its environment variable) over the node's
    /// `[ids]`, so ids made in a node's data directory have the node's layout.
    pub fn layout_over(&self, ids: &IdSettings) -> anyhow::Result<Layout> {
        let (text, named) = match &self.layout {
            Some(text) => (text, "--layout"),
            None => (&ids.layout, "ids.layout"),
        };
        let layout: Layout = text.parse().with_context(|| format!("bad {named}"))?;
        let (epoch, named) = match (&self.epoch, &ids.epoch) {
            (Some(epoch), _) => (epoch, "--epoch"),
            (None, Some(epoch)) => (epoch, "ids.epoch"),
            (None, None) => return Ok(layout),
        };
        layout
            .with_epoch_rfc3339(epoch)
            .with_context(|| format!("bad {named}"))
    }
}

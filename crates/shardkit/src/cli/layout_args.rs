//! `--layout` and `--epoch`, shared by every subcommand that makes or reads ids.

use anyhow::Context;
use clap::Args;
use shardkit_ids::Layout;

/// Which id layout to use.
#[derive(Debug, Clone, Args)]
pub struct LayoutArgs {
    /// instagram, snowflake, sonyflake (Sony's layout), sonyflake-legacy (what
    /// earlier releases called sonyflake), or TIME/SHARD/SEQUENCE bits summing to 63
    /// with an optional unit, like 41/12/10@1ms.
    #[arg(long, default_value = "instagram", env = "SHARDKIT_LAYOUT")]
    pub layout: String,
    /// The layout's epoch, RFC 3339 (default 2024-01-01T00:00:00Z).
    #[arg(long, env = "SHARDKIT_EPOCH")]
    pub epoch: Option<String>,
}

impl LayoutArgs {
    /// The checked layout.
    pub fn layout(&self) -> anyhow::Result<Layout> {
        let layout: Layout = self.layout.parse()?;
        match &self.epoch {
            None => Ok(layout),
            Some(epoch) => layout.with_epoch_rfc3339(epoch).context("bad --epoch"),
        }
    }
}

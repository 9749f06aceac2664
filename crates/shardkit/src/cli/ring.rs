//! `shardkit ring ...`: statistics and move plans for the shard map (issue 3).

use clap::Subcommand;

/// Subcommands of `shardkit ring`.
#[derive(Debug, Subcommand)]
pub enum RingCommand {
    /// Placement statistics for N nodes (not implemented yet).
    Stats,
}

/// Runs one `shardkit ring` subcommand.
pub fn run(cmd: RingCommand) -> anyhow::Result<()> {
    match cmd {
        RingCommand::Stats => anyhow::bail!("`shardkit ring stats` is not implemented yet (issue 3)"),
    }
}

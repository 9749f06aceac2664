//! Command-line interface: the argument types and the dispatch to each subcommand.

mod ring;

use clap::{Parser, Subcommand};

/// shardkit: ids, tickets, shard maps, counters and short links for sharded applications.
#[derive(Debug, Parser)]
#[command(name = "shardkit", version, about, propagate_version = true)]
pub struct Cli {
    /// The subcommand to run.
    #[command(subcommand)]
    pub command: Command,
}

/// The top-level subcommands; each one's arguments and code live in their own module.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Map keys to shards and nodes: ring statistics and move plans.
    #[command(subcommand)]
    Ring(ring::RingCommand),
}

/// Runs the parsed command line.
pub fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Ring(cmd) => ring::run(cmd),
    }
}

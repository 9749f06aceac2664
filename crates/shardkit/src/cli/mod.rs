//! Command-line interface: the argument types and the dispatch to each subcommand.

mod api_server;
mod busy_wait;
#[cfg(feature = "nats")]
mod cluster;
mod config_file;
mod data_dir;
mod id;
mod import_from;
mod keys;
mod keys_store;
mod layout_args;
mod links;
#[cfg(feature = "sql")]
mod pg;
#[cfg(feature = "sql")]
mod pg_servers;
mod ring;
mod serve;
mod serve_env;
mod ticket;

use clap::{Parser, Subcommand};
use std::io::{BufWriter, Write};

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
    /// Run the server (HTTP and Redis protocol).
    Serve(serve::ServeArgs),
    /// Make and decode time-sortable 64-bit ids.
    #[command(subcommand)]
    Id(id::IdCommand),
    /// Hand out numbers from named ticket sequences.
    #[command(subcommand)]
    Ticket(ticket::TicketCommand),
    /// Map keys to shards and nodes: ring statistics and move plans.
    #[command(subcommand)]
    Ring(ring::RingCommand),
    /// PostgreSQL logical shards past one machine (built with the cargo feature `sql`).
    #[cfg(feature = "sql")]
    #[command(subcommand)]
    Pg(pg::PgCommand),
    /// Import and export short links through a running server.
    #[command(subcommand)]
    Links(links::LinksCommand),
    /// Named API keys with roles (kept hashed in the data directory).
    #[command(subcommand)]
    Keys(keys::KeysCommand),
    /// A Redis Cluster of shardkit nodes: its nodes, its slot map, and rebalancing
    /// (built with the cargo feature `nats`).
    #[cfg(feature = "nats")]
    #[command(subcommand)]
    Cluster(cluster::ClusterCommand),
}

/// Runs the parsed command line.
pub fn run(cli: Cli) -> anyhow::Result<()> {
    let stdout = std::io::stdout();
    let mut out = BufWriter::with_capacity(64 * 1024, stdout.lock());
    let result = match cli.command {
        Command::Serve(args) => serve::run(args),
        Command::Id(cmd) => id::run(cmd, &mut out),
        Command::Ticket(cmd) => ticket::run(cmd, &mut out),
        Command::Ring(cmd) => ring::run(cmd),
        #[cfg(feature = "sql")]
        Command::Pg(cmd) => pg::run(cmd, &mut out),
        Command::Links(cmd) => links::run(cmd, &mut out),
        Command::Keys(cmd) => keys::run(cmd, &mut out),
        #[cfg(feature = "nats")]
        Command::Cluster(cmd) => cluster::run(cmd, &mut out),
    };
    result.and_then(|()| out.flush().map_err(Into::into))
}

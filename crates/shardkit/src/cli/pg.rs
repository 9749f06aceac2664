//! `shardkit pg ...`: PostgreSQL logical shards, built with the cargo feature
//! `sql`. A thin shell over `shardkit-pg`: parse arguments, run the library on a small
//! tokio runtime, print one JSON line. Which servers: `pg_servers`.

use super::pg_servers::PgServersArgs;
use anyhow::Context;
use clap::{Args, Subcommand};
use shardkit_pg::{init, InitOptions};
use std::io::Write;

/// Subcommands of `shardkit pg`.
#[derive(Debug, Subcommand)]
pub enum PgCommand {
    /// Create (or check and complete) a cluster of logical shards as schemas
    /// `shard_0000`.. on the servers, each with next_id() and the link tables.
    Init(InitArgs),
    /// Move one logical shard to another server (copy, catch up, brief write pause for
    /// that shard only, switch the map version, drop the old copy).
    MoveShard(MoveArgs),
}

/// Arguments of `shardkit pg move-shard`.
#[derive(Debug, Args)]
pub struct MoveArgs {
    /// The logical shard to move.
    shard: u32,
    /// The server to move it to (may be new to the cluster).
    #[arg(long)]
    to: String,
    #[command(flatten)]
    servers: PgServersArgs,
}

/// Arguments of `shardkit pg init`.
#[derive(Debug, Args)]
pub struct InitArgs {
    #[command(flatten)]
    servers: PgServersArgs,
    /// Number of logical shards: a power of two up to 8192. Fixed for the cluster's life.
    #[arg(long)]
    logical_shards: u64,
    /// Id epoch, RFC 3339 (default 2024-01-01T00:00:00Z for a new cluster; an existing
    /// cluster keeps its own, and a different one is refused).
    #[arg(long)]
    epoch: Option<String>,
}

/// Runs `shardkit pg ...`.
pub fn run(cmd: PgCommand, out: &mut impl Write) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    match cmd {
        PgCommand::Init(args) => {
            let epoch_unix_ms = match &args.epoch {
                None => None,
                Some(text) => Some(
                    shardkit_ids::Layout::instagram()
                        .with_epoch_rfc3339(text)
                        .context("bad --epoch")?
                        .epoch_unix_ms(),
                ),
            };
            let logical_shards = shardkit_pg::cluster::check_logical_shards(args.logical_shards)?;
            let options = InitOptions {
                servers: args.servers.resolve()?,
                logical_shards,
                epoch_unix_ms,
            };
            let report = runtime.block_on(init(&options))?;
            let servers: Vec<_> = report
                .servers
                .iter()
                .map(|s| serde_json::json!({"server": s.server, "shards": s.shards, "created": s.created}))
                .collect();
            let line = serde_json::json!({
                "logical_shards": report.logical_shards,
                "epoch_unix_ms": report.epoch_unix_ms,
                "map_version": report.map_version,
                "new_cluster": report.new_cluster,
                "servers": servers,
            });
            writeln!(out, "{line}")?;
            Ok(())
        }
        PgCommand::MoveShard(args) => {
            let servers = args.servers.resolve()?;
            let report = runtime
                .block_on(shardkit_pg::move_shard(&servers, args.shard, &args.to))
                .with_context(|| format!("moving shard {}", args.shard))?;
            let line = serde_json::json!({
                "shard": report.shard,
                "from": report.from,
                "to": report.to,
                "rows": report.rows,
                "copied": report.copied,
                "changed": report.changed,
                "rounds": report.rounds,
                "changed_in_pause": report.changed_in_pause,
                "map_version": report.map_version,
                "pause_ms": report.pause.as_secs_f64() * 1000.0,
            });
            writeln!(out, "{line}")?;
            Ok(())
        }
    }
}

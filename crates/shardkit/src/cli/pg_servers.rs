//! The PostgreSQL servers `shardkit pg` works on: `--servers` (or
//! `SHARDKIT_PG_SERVERS`, as `serve` reads it), else `links.servers` of a node's
//! settings file, so the cluster a node stores its links in needs naming once.

use clap::Args;
use shardkit_node::config::Overrides;
use std::path::PathBuf;

/// `--servers` and the settings file it falls back to.
#[derive(Debug, Args)]
pub struct PgServersArgs {
    /// The cluster's PostgreSQL servers, comma-separated
    /// (postgres://user@host:port/db,...); for move-shard, every server of the current
    /// map [default: `links.servers` of the --config file].
    #[arg(
        long,
        value_delimiter = ',',
        env = "SHARDKIT_PG_SERVERS",
        value_name = "URL[,URL...]"
    )]
    servers: Option<Vec<String>>,
    /// A node's settings file, read as `serve` reads it: its `links.servers` when
    /// --servers (and SHARDKIT_PG_SERVERS) are not given.
    #[arg(long, env = "SHARDKIT_CONFIG", value_name = "FILE")]
    config: Option<PathBuf>,
}

impl PgServersArgs {
    /// The servers: the flag (or its environment variable) over the file's.
    pub fn resolve(&self) -> anyhow::Result<Vec<String>> {
        let overrides = Overrides {
            servers: self.servers.clone(),
            ..Overrides::default()
        };
        let servers = super::config_file::read(self.config.as_deref(), overrides)?
            .links
            .servers;
        if servers.is_empty() {
            anyhow::bail!(
                "no PostgreSQL servers: pass --servers URL[,URL...] (or set \
                 SHARDKIT_PG_SERVERS), or --config FILE with links.servers"
            );
        }
        Ok(servers)
    }
}

//! `--data DIR`: where shardkit keeps its files (time guard, tickets, counters, links).

use clap::Args;
use std::path::PathBuf;

/// The data directory, from `--data`, else `SHARDKIT_DATA`, else `./shardkit-data`.
#[derive(Debug, Clone, Args)]
pub struct DataDirArgs {
    /// Directory for shardkit's files; created if missing.
    #[arg(
        long = "data",
        env = "SHARDKIT_DATA",
        default_value = "./shardkit-data",
        value_name = "DIR"
    )]
    pub dir: PathBuf,
}

impl DataDirArgs {
    /// Creates the directory if missing; an error names a file given in its place.
    pub fn ensure(&self) -> anyhow::Result<()> {
        shardkit_node::data_dir::create(&self.dir)
    }

    /// The id generator's time guard file.
    pub fn time_guard(&self) -> PathBuf {
        self.dir.join("ids.guard")
    }

    /// The embedded ticket store.
    pub fn tickets(&self) -> PathBuf {
        self.dir.join("tickets.redb")
    }
}

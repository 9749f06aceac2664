//! `--data DIR` and `--config FILE`: where shardkit keeps its files (time guard,
//! tickets, counters, links, keys), given directly or as a node's settings file says.

use clap::Args;
use shardkit_node::config::{Overrides, Settings};
use std::path::PathBuf;

/// The data directory as `serve` resolves it: `--data`, else `SHARDKIT_DATA`, else the
/// `data` of the `--config` file (or `SHARDKIT_CONFIG`), else `./shardkit-data`. So a
/// command given a node's settings file works on that node's directory.
#[derive(Debug, Clone, Args)]
pub struct DataDirArgs {
    /// Directory for shardkit's files; created if missing [default: `data` of the
    /// --config file, else ./shardkit-data].
    #[arg(long = "data", env = "SHARDKIT_DATA", value_name = "DIR")]
    dir: Option<PathBuf>,
    /// A node's settings file, read as `serve` reads it: each option that names a
    /// setting of it takes that setting when neither the option nor its environment
    /// variable is given.
    #[arg(long, env = "SHARDKIT_CONFIG", value_name = "FILE")]
    config: Option<PathBuf>,
}

impl DataDirArgs {
    /// The settings of the `--config` file (the defaults without one) with `overrides`
    /// and then `--data` over them, for a subcommand that reads more than the directory.
    pub fn settings(&self, overrides: Overrides) -> anyhow::Result<Settings> {
        let overrides = Overrides {
            data: self.dir.clone(),
            ..overrides
        };
        super::config_file::read(self.config.as_deref(), overrides)
    }

    /// The directory, resolved.
    pub fn resolve(&self) -> anyhow::Result<DataDir> {
        Ok(DataDir::new(self.settings(Overrides::default())?.data))
    }
}

/// A resolved data directory and the files the command line keeps in it.
#[derive(Debug, Clone)]
pub struct DataDir {
    /// The directory.
    pub dir: PathBuf,
}

impl DataDir {
    /// The directory at `dir`.
    pub fn new(dir: PathBuf) -> Self {
        Self { dir }
    }

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

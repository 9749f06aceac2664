//! `--config FILE` for the subcommands other than `serve`: a node's settings file, read
//! as `serve` reads it, so a command run beside a node reaches what that node uses
//! without each setting being repeated as a flag.

use shardkit_node::config::{Overrides, Settings};
use std::path::Path;

/// The settings of `file` (the defaults without one) with `overrides` over them.
///
/// Only parsed, not checked as a whole: each subcommand checks the settings it uses,
/// since a node's other settings (its listen addresses, its NATS servers) need not
/// hold on the host the command runs on. A file that cannot be opened is named as
/// `--config`'s, so the error says which value to fix.
pub fn read(file: Option<&Path>, overrides: Overrides) -> anyhow::Result<Settings> {
    if let Some(path) = file {
        std::fs::metadata(path).map_err(|e| anyhow::anyhow!("--config {}: {e}", path.display()))?;
    }
    Settings::read(file, overrides)
}

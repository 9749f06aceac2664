//! `shardkit serve`: the contract's flags are parsed today; the server itself comes
//! with issue 5. Until then it says so and fails, rather than pretend to serve.

use super::data_dir::DataDirArgs;
use anyhow::bail;
use clap::Args;
use std::path::PathBuf;

/// Flags of `shardkit serve` (DESIGN.md's contract).
#[derive(Debug, Args)]
pub struct ServeArgs {
    #[command(flatten)]
    data: DataDirArgs,
    /// HTTP listen address.
    #[arg(long, env = "SHARDKIT_HTTP", default_value = "127.0.0.1:8080")]
    http: String,
    /// Redis-protocol listen address.
    #[arg(long, env = "SHARDKIT_RESP", default_value = "127.0.0.1:6380")]
    resp: String,
    /// TOML settings file.
    #[arg(long)]
    config: Option<PathBuf>,
}

/// Explains what `serve` will do and exits with an error.
pub fn run(args: ServeArgs) -> anyhow::Result<()> {
    bail!(
        "the server is not built yet: `shardkit serve` will serve HTTP on {} and the Redis protocol on {} with data in {}; \
         today use `shardkit id next`, `shardkit id decode` and `shardkit ticket next`",
        args.http,
        args.resp,
        args.data.dir.display()
    )
}

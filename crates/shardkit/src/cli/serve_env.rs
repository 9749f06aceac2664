//! The environment variables `serve` reads for settings that other subcommands need
//! but take no flag for. Read under `serve`'s names, so a shell set up to run a node
//! runs the command line against the same deployment.

use clap::ValueEnum;
use shardkit_node::config::LinkStoreKind;
use std::net::SocketAddr;

/// `SHARDKIT_HTTP`: `serve`'s HTTP listen address (`http`).
pub fn http() -> anyhow::Result<Option<SocketAddr>> {
    var("SHARDKIT_HTTP")
        .map(|text| {
            text.parse().map_err(|_| {
                anyhow::anyhow!("SHARDKIT_HTTP {text:?} is not an address: write ip:port")
            })
        })
        .transpose()
}

/// `SHARDKIT_STORE`: where `serve` keeps the links (`links.store`), which also says
/// where it reads the API keys.
pub fn store() -> anyhow::Result<Option<LinkStoreKind>> {
    var("SHARDKIT_STORE")
        .map(|text| {
            LinkStoreKind::from_str(&text, false).map_err(|_| {
                anyhow::anyhow!(
                    "SHARDKIT_STORE {text:?} is not a link store: write redb or postgres"
                )
            })
        })
        .transpose()
}

/// `SHARDKIT_PG_SERVERS`: the PostgreSQL servers of a `postgres` store
/// (`links.servers`), comma-separated as `serve --servers` takes them.
pub fn servers() -> Option<Vec<String>> {
    var("SHARDKIT_PG_SERVERS").map(|text| {
        text.split(',')
            .map(str::trim)
            .filter(|url| !url.is_empty())
            .map(str::to_string)
            .collect()
    })
}

/// A variable's value; an empty one counts as unset, as clap reads `serve`'s.
fn var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

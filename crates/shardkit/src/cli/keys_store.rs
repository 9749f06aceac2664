//! Where `shardkit keys` keeps the keys: in the data directory's `keys.json`, or in
//! the key table of a `links.store = "postgres"` deployment. Decided as `serve`
//! decides where it reads them, so a key made with the node's settings is one the
//! node accepts.

use super::data_dir::DataDirArgs;
use clap::Args;
use shardkit_node::config::{LinkStoreKind, Overrides};
use std::path::PathBuf;

/// `--postgres`, and the data directory and settings file it falls back to.
#[derive(Debug, Args)]
pub struct KeyStoreArgs {
    /// The key table of a `--store postgres` deployment: its first server's URL
    /// [default: when the --config file (or SHARDKIT_STORE) says `links.store =
    /// "postgres"`, the first server of the shard map of `links.servers` (or
    /// SHARDKIT_PG_SERVERS), as `serve` finds it; else the data directory's keys.json].
    #[arg(long, value_name = "URL", env = "SHARDKIT_KEYS_POSTGRES")]
    postgres: Option<String>,
    #[command(flatten)]
    data: DataDirArgs,
}

/// A resolved place for the keys.
#[derive(Debug)]
pub enum KeyStore {
    /// `keys.json` in this data directory.
    Dir(PathBuf),
    /// The key table of the cluster whose first server this URL reaches.
    Cluster(String),
}

impl KeyStoreArgs {
    /// `--postgres` (or `SHARDKIT_KEYS_POSTGRES`), else the cluster of a postgres-store
    /// node's settings, else the data directory.
    pub fn resolve(&self) -> anyhow::Result<KeyStore> {
        if let Some(url) = &self.postgres {
            return Ok(KeyStore::Cluster(url.clone()));
        }
        let overrides = Overrides {
            store: super::serve_env::store()?,
            servers: super::serve_env::servers(),
            ..Overrides::default()
        };
        let settings = self.data.settings(overrides)?;
        if settings.links.store != LinkStoreKind::Postgres {
            return Ok(KeyStore::Dir(settings.data));
        }
        if settings.links.servers.is_empty() {
            anyhow::bail!(
                "links.store \"postgres\" keeps the keys in the cluster, but links.servers \
                 names no server: set it (or SHARDKIT_PG_SERVERS), or pass --postgres URL"
            );
        }
        first_server(&settings.links.servers).map(KeyStore::Cluster)
    }
}

/// The server holding the key table of the cluster of `servers`: the first of its
/// shard map, which `serve` reads the keys from too (not simply the first URL given,
/// since a moved shard can change the map's order).
#[cfg(feature = "sql")]
fn first_server(servers: &[String]) -> anyhow::Result<String> {
    use anyhow::Context;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start a runtime")?;
    runtime
        .block_on(async {
            let cluster = shardkit_pg::Cluster::open(servers, 1).await?;
            Ok::<_, shardkit_pg::PgError>(cluster.first_server_url(servers))
        })
        .context("links.servers: cannot read the cluster's shard map")?
        .context("links.servers: the cluster's shard map names no server")
}

#[cfg(not(feature = "sql"))]
fn first_server(_servers: &[String]) -> anyhow::Result<String> {
    anyhow::bail!("links.store \"postgres\" needs a shardkit built with the cargo feature `sql`")
}

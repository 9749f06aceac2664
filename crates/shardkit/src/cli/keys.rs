//! `shardkit keys add|list|revoke`: named API keys with roles in `<data>/keys.json`, or
//! with `--postgres URL` in the cluster of a `--store postgres` deployment (its first
//! server), which every server of it reads. With `--config` (a node's settings file)
//! the keys go where that node reads them (`keys_store`).
//!
//! A running server on the same data directory picks up changes within a second, so
//! keys are added and revoked without a restart (unlike the id guard and the ticket
//! store, the key file is safe to share with a server).

use super::keys_store::{KeyStore, KeyStoreArgs};
use anyhow::Context;
use clap::Subcommand;
use shardkit_node::api_keys::keyring::{self, KEYS_FILE};
use shardkit_node::api_keys::Role;
use std::io::Write;

/// Subcommands of `shardkit keys`.
#[derive(Debug, Subcommand)]
pub enum KeysCommand {
    /// Make a key with one or more roles; prints the key once (only its hash is kept).
    Add {
        /// The key's name (1 to 64 of A-Z a-z 0-9 _ - .): the RESP username, and what
        /// `keys revoke` takes.
        name: String,
        /// A role: admin, links:create, links:read, counters:read, counters:write, ids.
        /// Repeat for several.
        #[arg(long = "role", required = true, value_name = "ROLE")]
        roles: Vec<Role>,
        /// When the key stops working: a duration from now (`30d`, `12h`) or an RFC 3339
        /// time.
        #[arg(long, value_name = "WHEN")]
        expires: Option<String>,
        /// The key sees only the links it created (lists, export, reads by code):
        /// Shlink's "author only".
        #[arg(long)]
        author_only: bool,
        #[command(flatten)]
        store: KeyStoreArgs,
    },
    /// List the keys, one JSON object a line (names, roles, times; never secrets).
    List {
        #[command(flatten)]
        store: KeyStoreArgs,
    },
    /// Remove a key: it stops working at once (within a second on a running server).
    Revoke {
        /// The key's name.
        name: String,
        #[command(flatten)]
        store: KeyStoreArgs,
    },
}

/// `--expires` as ms since the Unix epoch.
fn expiry(text: &str) -> anyhow::Result<u64> {
    if let Ok(duration) = humantime::parse_duration(text) {
        return Ok(keyring::now_unix_ms().saturating_add(duration.as_millis() as u64));
    }
    let at = humantime::parse_rfc3339_weak(text).map_err(|_| {
        anyhow::anyhow!("--expires {text:?} is neither a duration (30d, 12h) nor an RFC 3339 time")
    })?;
    let ms = at
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0);
    if ms <= keyring::now_unix_ms() {
        anyhow::bail!("--expires {text:?} is in the past");
    }
    Ok(ms)
}

fn rfc3339(ms: u64) -> String {
    humantime::format_rfc3339_millis(std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms))
        .to_string()
}

/// Runs one `shardkit keys` subcommand, writing to `out`.
pub fn run(cmd: KeysCommand, out: &mut impl Write) -> anyhow::Result<()> {
    match cmd {
        KeysCommand::Add {
            name,
            roles,
            expires,
            author_only,
            store,
        } => {
            let expires = expires.as_deref().map(expiry).transpose()?;
            match store.resolve()? {
                KeyStore::Cluster(url) => {
                    let (secret, stored) = keyring::new_key(&name, &roles, expires, author_only)?;
                    if !cluster_keys(&url)?
                        .add(&row_of(stored))
                        .map_err(anyhow::Error::msg)?
                    {
                        anyhow::bail!(
                            "a key named {name:?} exists already; revoke it first or pick another name"
                        );
                    }
                    writeln!(out, "{secret}")?;
                    eprintln!("key {name:?} added to the cluster; this is the only time it is shown: keep it safe");
                }
                KeyStore::Dir(dir) => {
                    std::fs::create_dir_all(&dir).with_context(|| {
                        format!("cannot create data directory {}", dir.display())
                    })?;
                    let secret =
                        keyring::add(&dir.join(KEYS_FILE), &name, &roles, expires, author_only)?;
                    writeln!(out, "{secret}")?;
                    eprintln!(
                        "key {name:?} added; this is the only time it is shown: keep it safe"
                    );
                }
            }
        }
        KeysCommand::List { store } => {
            let now = keyring::now_unix_ms();
            let keys = match store.resolve()? {
                KeyStore::Cluster(url) => cluster_keys(&url)?
                    .list()
                    .map_err(anyhow::Error::msg)?
                    .unwrap_or_default()
                    .into_iter()
                    .map(stored_of)
                    .collect(),
                KeyStore::Dir(dir) => keyring::list(&dir.join(KEYS_FILE))?,
            };
            for key in keys {
                let line = serde_json::json!({
                    "name": key.name,
                    "roles": key.roles,
                    "created": rfc3339(key.created_unix_ms),
                    "expires": key.expires_unix_ms.map(rfc3339),
                    "expired": key.expires_unix_ms.is_some_and(|at| at <= now),
                    "author_only": key.author_only,
                });
                writeln!(out, "{line}")?;
            }
        }
        KeysCommand::Revoke { name, store } => match store.resolve()? {
            KeyStore::Cluster(url) => {
                if !cluster_keys(&url)?
                    .revoke(&name)
                    .map_err(anyhow::Error::msg)?
                {
                    anyhow::bail!(
                        "no key named {name:?} in the cluster (keys list --postgres shows them)"
                    );
                }
                eprintln!("key {name:?} revoked in the cluster");
            }
            KeyStore::Dir(dir) => {
                keyring::revoke(&dir.join(KEYS_FILE), &name)?;
                eprintln!("key {name:?} revoked");
            }
        },
    }
    Ok(())
}

#[cfg(feature = "sql")]
use shardkit_node::api_keys::pg_keys::{row_of, stored_of};

/// The cluster's key table at `url`.
#[cfg(feature = "sql")]
fn cluster_keys(url: &str) -> anyhow::Result<shardkit_pg::PgKeyStore> {
    Ok(shardkit_pg::PgKeyStore::new(url)?)
}

#[cfg(not(feature = "sql"))]
fn cluster_keys(_url: &str) -> anyhow::Result<NoCluster> {
    anyhow::bail!("--postgres needs a shardkit built with the cargo feature `sql`")
}

/// Stands in for the cluster's key table in a build without PostgreSQL.
#[cfg(not(feature = "sql"))]
struct NoCluster;

#[cfg(not(feature = "sql"))]
impl NoCluster {
    fn add(&self, _: &()) -> Result<bool, String> {
        Ok(false)
    }
    fn list(&self) -> Result<Option<Vec<keyring::StoredKey>>, String> {
        Ok(None)
    }
    fn revoke(&self, _: &str) -> Result<bool, String> {
        Ok(false)
    }
}

#[cfg(not(feature = "sql"))]
fn row_of(_: keyring::StoredKey) {}

#[cfg(not(feature = "sql"))]
fn stored_of(key: keyring::StoredKey) -> keyring::StoredKey {
    key
}

//! Named API keys in the cluster (`shardkit_meta.api_keys` on its first server), so
//! every server of a `--store postgres` deployment takes the same keys and a key
//! revoked once stops working everywhere. Only digests are stored, as in
//! `keys.json`; the server's access module decides what they mean.

use crate::blocking::Bridge;
use crate::connect::pool;
use crate::error::{redact_url, PgError};

/// The table's DDL (idempotent).
const DDL: &str = "CREATE SCHEMA IF NOT EXISTS shardkit_meta; \
    CREATE TABLE IF NOT EXISTS shardkit_meta.api_keys ( \
        name text PRIMARY KEY, \
        roles text[] NOT NULL, \
        sha256 text NOT NULL UNIQUE, \
        created_unix_ms bigint NOT NULL, \
        expires_unix_ms bigint, \
        author_only boolean NOT NULL DEFAULT false)";

/// One stored key: what `keys.json` holds for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyRow {
    /// The key's name.
    pub name: String,
    /// Its role names.
    pub roles: Vec<String>,
    /// Hex SHA-256 of the secret.
    pub sha256: String,
    /// When it was made, Unix ms.
    pub created_unix_ms: u64,
    /// When it stops working, Unix ms.
    pub expires_unix_ms: Option<u64>,
    /// Sees only the links it created.
    pub author_only: bool,
}

/// One round of queries on a pooled connection.
type Work<T> =
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<T, tokio_postgres::Error>> + Send>>;

/// The key table of one cluster.
#[derive(Debug)]
pub struct PgKeyStore {
    name: String,
    pool: deadpool_postgres::Pool,
    bridge: Bridge,
    /// Whether the table is known to exist (the DDL ran once).
    ready: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl PgKeyStore {
    /// Connects (lazily) to the server at `url`, the cluster's first.
    pub fn new(url: &str) -> Result<Self, PgError> {
        let name = redact_url(url);
        let bridge = Bridge::new("shardkit-keys-pg").map_err(|e| PgError::Unreachable {
            server: name.clone(),
            reason: format!("cannot start the connection runtime: {e}"),
        })?;
        let pool = {
            let handle = bridge.handle();
            let _guard = handle.enter();
            pool(url, 2)?
        };
        Ok(Self {
            name,
            pool,
            bridge,
            ready: Default::default(),
        })
    }

    /// The server it reads, without its password.
    pub fn server(&self) -> &str {
        &self.name
    }

    fn run<T: Send + 'static>(
        &self,
        what: &'static str,
        make_table: bool,
        work: impl FnOnce(deadpool_postgres::Object) -> Work<T> + Send + 'static,
    ) -> Result<T, String> {
        let pool = self.pool.clone();
        let server = self.name.clone();
        let ready = std::sync::Arc::clone(&self.ready);
        self.bridge
            .run(async move {
                let client = pool
                    .get()
                    .await
                    .map_err(|e| format!("cannot connect to {server}: {e}"))?;
                if make_table && !ready.load(std::sync::atomic::Ordering::Acquire) {
                    client
                        .batch_execute(DDL)
                        .await
                        .map_err(|e| format!("{server}: making shardkit_meta.api_keys: {e}"))?;
                    ready.store(true, std::sync::atomic::Ordering::Release);
                }
                work(client)
                    .await
                    .map_err(|e| format!("{server}: {what}: {e}"))
            })
            .unwrap_or_else(|| Err("the key store's runtime stopped".into()))
    }

    /// Every key; `None` when no key was ever added (the table does not exist), which
    /// leaves a server open, as a missing `keys.json` does. Once it exists, keys are
    /// required even after the last is revoked.
    pub fn list(&self) -> Result<Option<Vec<KeyRow>>, String> {
        self.run("reading the keys", false, |client| {
            Box::pin(async move {
                let exists: Option<String> = client
                    .query_one("SELECT to_regclass('shardkit_meta.api_keys')::text", &[])
                    .await?
                    .get(0);
                if exists.is_none() {
                    return Ok(None);
                }
                let rows = client
                    .query(
                        "SELECT name, roles, sha256, created_unix_ms, expires_unix_ms, author_only \
                         FROM shardkit_meta.api_keys ORDER BY name",
                        &[],
                    )
                    .await?;
                Ok(Some(
                    rows.iter()
                        .map(|r| KeyRow {
                            name: r.get(0),
                            roles: r.get(1),
                            sha256: r.get(2),
                            created_unix_ms: r.get::<_, i64>(3) as u64,
                            expires_unix_ms: r.get::<_, Option<i64>>(4).map(|v| v as u64),
                            author_only: r.get(5),
                        })
                        .collect::<Vec<_>>(),
                ))
            })
        })
    }

    /// Adds a key; `false` if one with that name exists (nothing changes then).
    pub fn add(&self, key: &KeyRow) -> Result<bool, String> {
        let key = key.clone();
        self.run("adding a key", true, move |client| {
            Box::pin(async move {
                let n = client
                    .execute(
                        "INSERT INTO shardkit_meta.api_keys \
                         (name, roles, sha256, created_unix_ms, expires_unix_ms, author_only) \
                         VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (name) DO NOTHING",
                        &[
                            &key.name,
                            &key.roles,
                            &key.sha256,
                            &(key.created_unix_ms as i64),
                            &key.expires_unix_ms.map(|v| v as i64),
                            &key.author_only,
                        ],
                    )
                    .await?;
                Ok(n == 1)
            })
        })
    }

    /// Removes the key `name`; `false` if there was none.
    pub fn revoke(&self, name: &str) -> Result<bool, String> {
        let name = name.to_string();
        self.run("revoking a key", true, move |client| {
            Box::pin(async move {
                let n = client
                    .execute(
                        "DELETE FROM shardkit_meta.api_keys WHERE name = $1",
                        &[&name],
                    )
                    .await?;
                Ok(n == 1)
            })
        })
    }
}

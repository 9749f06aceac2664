//! Named keys in the PostgreSQL cluster (`shardkit_meta.api_keys` on its first server)
//! for `--store postgres`: every server of the deployment reads the same keys, so a
//! key added or revoked once counts everywhere within a second.

use super::keyring::StoredKey;
use super::KeySource;
use shardkit_pg::{KeyRow, PgKeyStore};

impl KeySource for PgKeyStore {
    fn load(&self) -> Result<Option<Vec<StoredKey>>, String> {
        Ok(self
            .list()?
            .map(|rows| rows.into_iter().map(stored_of).collect()))
    }

    fn describe(&self) -> String {
        format!("shardkit_meta.api_keys on {}", self.server())
    }
}

/// The stored form of a key row (the same fields as `keys.json`).
pub fn stored_of(row: KeyRow) -> StoredKey {
    StoredKey {
        name: row.name,
        roles: row.roles,
        sha256: row.sha256,
        created_unix_ms: row.created_unix_ms,
        expires_unix_ms: row.expires_unix_ms,
        author_only: row.author_only,
    }
}

/// The row of a stored key.
pub fn row_of(key: StoredKey) -> KeyRow {
    KeyRow {
        name: key.name,
        roles: key.roles,
        sha256: key.sha256,
        created_unix_ms: key.created_unix_ms,
        expires_unix_ms: key.expires_unix_ms,
        author_only: key.author_only,
    }
}

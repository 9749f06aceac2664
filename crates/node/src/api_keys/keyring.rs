//! Named API keys in `<data>/keys.json`: each with roles, a creation time, an optional
//! expiry, and the SHA-256 of its secret, never the secret itself.
//!
//! Why SHA-256 and not argon2: the secrets are 256 random bits that shardkit makes
//! (`keys add`), never chosen by a person, so a slow hash adds no safety against a
//! stolen file (nobody can search 2^256 secrets) while it would cost every API request
//! tens of milliseconds. A fast hash also makes the look-up a hash-map probe on the
//! digest, so no comparison runs over the secret byte by byte. (Passwords that people
//! choose are another matter and get a slow hash.)
//!
//! The file is replaced atomically (write, fsync, rename, fsync the directory) under an
//! exclusive lock on `keys.json.lock`, so two `keys add` at once both land. A running
//! server reloads it when it changes, so keys added or revoked take effect without a
//! restart.

use super::role::Role;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

/// The file's name in the data directory.
pub const KEYS_FILE: &str = "keys.json";

/// What every key starts with, so a secret found in a log or a repository is
/// recognisable (as `ghp_` for GitHub's).
pub const KEY_PREFIX: &str = "shk_";

/// One key as stored.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct StoredKey {
    /// Its name: the RESP username and what `keys revoke` takes.
    pub name: String,
    /// Role names (see [`Role`]).
    pub roles: Vec<String>,
    /// Hex SHA-256 of the secret.
    pub sha256: String,
    /// When it was made, ms since the Unix epoch.
    pub created_unix_ms: u64,
    /// When it stops working, ms since the Unix epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_unix_ms: Option<u64>,
    /// Sees only the links it created (Shlink's "author only").
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub author_only: bool,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct KeyFile {
    keys: Vec<StoredKey>,
}

/// A key ready for look-ups: its roles parsed.
#[derive(Debug, Clone)]
pub struct ActiveKey {
    /// The key's name.
    pub name: String,
    /// Its roles.
    pub roles: Vec<Role>,
    /// Expiry, ms since the Unix epoch.
    pub expires_unix_ms: Option<u64>,
    /// Sees only the links it created.
    pub author_only: bool,
}

/// The keys of one file, by the digest of their secret.
#[derive(Debug, Default)]
pub struct KeyRing {
    by_digest: HashMap<[u8; 32], ActiveKey>,
    file_present: bool,
}

/// What went wrong with the key file.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    /// Reading or writing the file failed.
    #[error("key file {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// The file is not what `keys add` writes.
    #[error("key file {path} is not valid: {reason} (restore it from a backup, or remove it and add the keys again)")]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// A name outside the allowed characters.
    #[error("key name {0:?} is not valid: use 1 to 64 of A-Z a-z 0-9 _ - .")]
    BadName(String),
    /// `keys add` of a name that exists.
    #[error("a key named {0:?} exists: revoke it first, or choose another name")]
    Exists(String),
    /// `keys revoke` of a name that does not exist.
    #[error("no key named {0:?} (see `shardkit keys list`)")]
    Unknown(String),
    /// `keys add` without a role.
    #[error("a key needs at least one --role")]
    NoRole,
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> KeyError + '_ {
    move |source| KeyError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// The SHA-256 of a presented secret.
pub fn digest(secret: &[u8]) -> [u8; 32] {
    Sha256::digest(secret).into()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Option<[u8; 32]> {
    if text.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(text.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(out)
}

/// Milliseconds since the Unix epoch, now.
pub fn now_unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// The file's keys, or `None` when there is no file.
fn read_file_if_present(path: &Path) -> Result<Option<KeyFile>, KeyError> {
    match std::fs::read(path) {
        Ok(bytes) => serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| KeyError::Corrupt {
                path: path.to_path_buf(),
                reason: e.to_string(),
            }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io(path)(e)),
    }
}

fn read_file(path: &Path) -> Result<KeyFile, KeyError> {
    Ok(read_file_if_present(path)?.unwrap_or_default())
}

impl KeyRing {
    /// The keys of `path` (none if the file does not exist).
    pub fn load(path: &Path) -> Result<Self, KeyError> {
        let Some(file) = read_file_if_present(path)? else {
            return Ok(Self::default());
        };
        Self::from_keys(file.keys).map_err(|reason| KeyError::Corrupt {
            path: path.to_path_buf(),
            reason,
        })
    }

    /// A ring of `keys` as stored (a file, or the cluster's table), which counts as
    /// present: keys are required.
    pub fn from_keys(keys: Vec<StoredKey>) -> Result<Self, String> {
        let mut by_digest = HashMap::with_capacity(keys.len());
        for key in keys {
            let roles = key
                .roles
                .iter()
                .map(|r| r.parse::<Role>())
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| format!("key {:?}: {e}", key.name))?;
            let digest = unhex(&key.sha256)
                .ok_or_else(|| format!("key {:?}: sha256 is not 64 hex digits", key.name))?;
            by_digest.insert(
                digest,
                ActiveKey {
                    name: key.name,
                    roles,
                    expires_unix_ms: key.expires_unix_ms,
                    author_only: key.author_only,
                },
            );
        }
        Ok(Self {
            by_digest,
            file_present: true,
        })
    }

    /// Whether the key file exists. Once it does, keys are required even after the last
    /// one is revoked: revoking keys never opens the server (remove the file to open
    /// it again).
    pub fn file_present(&self) -> bool {
        self.file_present
    }

    /// The key whose secret is `presented`, if it exists and has not expired.
    pub fn find(&self, presented: &[u8], now_unix_ms: u64) -> Option<&ActiveKey> {
        self.by_digest
            .get(&digest(presented))
            .filter(|k| k.expires_unix_ms.is_none_or(|at| now_unix_ms < at))
    }
}

/// The keys of `path` as stored, for `keys list`.
pub fn list(path: &Path) -> Result<Vec<StoredKey>, KeyError> {
    Ok(read_file(path)?.keys)
}

fn valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
}

/// Runs `change` on the file's keys under the file's lock and writes the result
/// durably.
fn update<T>(
    path: &Path,
    change: impl FnOnce(&mut Vec<StoredKey>) -> Result<T, KeyError>,
) -> Result<T, KeyError> {
    let mut lock_name = path.as_os_str().to_owned();
    lock_name.push(".lock");
    let lock_path = PathBuf::from(lock_name);
    let lock = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .map_err(io(&lock_path))?;
    File::lock(&lock).map_err(io(&lock_path))?;
    let mut file = read_file(path)?;
    let out = change(&mut file.keys)?;
    let mut bytes = serde_json::to_vec_pretty(&file).map_err(|e| KeyError::Corrupt {
        path: path.to_path_buf(),
        reason: e.to_string(),
    })?;
    bytes.push(b'\n');
    shardkit_ids::durable_file::replace_durably(path, &bytes).map_err(io(path))?;
    Ok(out)
}

/// A new key: its secret (shown once, kept nowhere) and what is stored of it.
pub fn new_key(
    name: &str,
    roles: &[Role],
    expires_unix_ms: Option<u64>,
    author_only: bool,
) -> Result<(String, StoredKey), KeyError> {
    if !valid_name(name) {
        return Err(KeyError::BadName(name.to_string()));
    }
    if roles.is_empty() {
        return Err(KeyError::NoRole);
    }
    let mut random = [0u8; 32];
    getrandom::fill(&mut random).map_err(|e| KeyError::Io {
        path: PathBuf::from("(random bytes)"),
        source: std::io::Error::other(format!("no random bytes: {e}")),
    })?;
    let secret = format!("{KEY_PREFIX}{}", hex(&random));
    let mut role_names: Vec<String> = roles.iter().map(|r| r.name().to_string()).collect();
    role_names.sort();
    role_names.dedup();
    let stored = StoredKey {
        name: name.to_string(),
        roles: role_names,
        sha256: hex(&digest(secret.as_bytes())),
        created_unix_ms: now_unix_ms(),
        expires_unix_ms,
        author_only,
    };
    Ok((secret, stored))
}

/// Adds a key named `name` with `roles` (and an expiry) to `path`; returns its secret,
/// which is shown once and kept nowhere.
pub fn add(
    path: &Path,
    name: &str,
    roles: &[Role],
    expires_unix_ms: Option<u64>,
    author_only: bool,
) -> Result<String, KeyError> {
    let (secret, stored) =
        new_key(name, roles, expires_unix_ms, author_only).map_err(|e| match e {
            KeyError::Io { source, .. } => KeyError::Io {
                path: path.to_path_buf(),
                source,
            },
            other => other,
        })?;
    update(path, |keys| {
        if keys.iter().any(|k| k.name == name) {
            return Err(KeyError::Exists(name.to_string()));
        }
        keys.push(stored);
        Ok(())
    })?;
    Ok(secret)
}

/// Removes the key named `name` from `path`.
pub fn revoke(path: &Path, name: &str) -> Result<(), KeyError> {
    update(path, |keys| {
        let before = keys.len();
        keys.retain(|k| k.name != name);
        if keys.len() == before {
            return Err(KeyError::Unknown(name.to_string()));
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn added_keys_are_found_by_their_secret_only_and_expire() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(KEYS_FILE);
        let secret = add(&path, "ci", &[Role::CountersRead], None, false).unwrap();
        let later = add(
            &path,
            "temp",
            &[Role::Ids],
            Some(now_unix_ms() + 60_000),
            false,
        )
        .unwrap();
        assert!(secret.starts_with(KEY_PREFIX) && secret.len() == 68);
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(
            !text.contains(&secret[4..]),
            "the secret itself is never stored"
        );
        let ring = KeyRing::load(&path).unwrap();
        let now = now_unix_ms();
        assert_eq!(ring.find(secret.as_bytes(), now).unwrap().name, "ci");
        assert!(ring.find(b"shk_wrong", now).is_none());
        assert!(ring.find(later.as_bytes(), now).is_some());
        assert!(ring.find(later.as_bytes(), now + 120_000).is_none());
    }

    #[test]
    fn names_are_checked_and_revoke_removes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(KEYS_FILE);
        assert!(matches!(
            add(&path, "no spaces", &[Role::Ids], None, false),
            Err(KeyError::BadName(_))
        ));
        assert!(matches!(
            add(&path, "x", &[], None, false),
            Err(KeyError::NoRole)
        ));
        let secret = add(&path, "x", &[Role::Ids], None, false).unwrap();
        assert!(matches!(
            add(&path, "x", &[Role::Ids], None, false),
            Err(KeyError::Exists(_))
        ));
        revoke(&path, "x").unwrap();
        assert!(KeyRing::load(&path)
            .unwrap()
            .find(secret.as_bytes(), 0)
            .is_none());
        let err = revoke(&path, "x").unwrap_err().to_string();
        assert!(err.contains("no key named \"x\""), "{err}");
    }

    #[test]
    fn a_damaged_file_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(KEYS_FILE);
        std::fs::write(&path, "{\"keys\":[{\"name\":\"a\"").unwrap();
        let err = KeyRing::load(&path).unwrap_err().to_string();
        assert!(
            err.contains("keys.json") && err.contains("not valid"),
            "{err}"
        );
    }
}

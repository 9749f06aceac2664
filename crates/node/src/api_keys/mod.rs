//! Who may do what: the configured admin key (`SHARDKIT_API_KEY`, as before) and named
//! keys with roles from `<data>/keys.json` (`shardkit keys add|list|revoke`).
//!
//! Access is enforced as soon as a key is configured: the admin key, or a key file
//! (even one whose keys were all revoked: revoking never opens the server). Without
//! either the server is open, as it is on loopback by default. The HTTP check is
//! in `http::auth`, route by route.

mod access_settings;
pub mod keyring;
#[cfg(feature = "sql")]
pub mod pg_keys;
pub mod role;

pub use access_settings::AccessSettings;
pub use role::{Grant, Need, Role};

use keyring::{KeyRing, KEYS_FILE};
use parking_lot::{Mutex, RwLock};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

/// How often a server looks at `keys.json` for keys added or revoked meanwhile.
const RELOAD_EVERY: Duration = Duration::from_secs(1);

/// Where named keys come from when not from `keys.json`: the PostgreSQL cluster of a
/// `--store postgres` deployment ([`pg_keys`]), read again every second.
pub trait KeySource: Send + Sync {
    /// Every stored key; `None` when none was ever added (the server stays open).
    fn load(&self) -> Result<Option<Vec<keyring::StoredKey>>, String>;
    /// Where the keys are, for logs (no password).
    fn describe(&self) -> String;
}

/// The keys a server accepts.
pub struct Access {
    admin_key: Option<String>,
    path: PathBuf,
    remote: Option<Box<dyn KeySource>>,
    ring: RwLock<KeyRing>,
    checked: Mutex<(Instant, Option<SystemTime>)>,
}

impl Access {
    /// The admin key `admin_key` (if any) and the named keys of `data`/keys.json.
    pub fn open(data: &Path, admin_key: Option<String>) -> anyhow::Result<Self> {
        let path = data.join(KEYS_FILE);
        let ring = KeyRing::load(&path)?;
        let modified = modified(&path);
        Ok(Self {
            admin_key,
            path,
            remote: None,
            ring: RwLock::new(ring),
            checked: Mutex::new((Instant::now(), modified)),
        })
    }

    /// The admin key and the named keys of `source` (the cluster's table), which must
    /// be readable now; afterwards a failed read keeps the keys last read.
    pub fn open_remote(
        source: Box<dyn KeySource>,
        admin_key: Option<String>,
    ) -> anyhow::Result<Self> {
        let ring = match source.load().map_err(anyhow::Error::msg)? {
            Some(keys) => KeyRing::from_keys(keys).map_err(anyhow::Error::msg)?,
            None => KeyRing::default(),
        };
        tracing::info!(keys = %source.describe(), "API keys from the cluster");
        Ok(Self {
            admin_key,
            path: PathBuf::new(),
            remote: Some(source),
            ring: RwLock::new(ring),
            checked: Mutex::new((Instant::now(), None)),
        })
    }

    /// Whether callers must present a key.
    pub fn enforced(&self) -> bool {
        self.reload_if_changed();
        self.admin_key.is_some() || self.ring.read().file_present()
    }

    /// The grant of the key `presented`, or `None` for a missing, wrong or expired key.
    /// The admin key is compared in constant time; a named key is found by the SHA-256
    /// of what was presented.
    pub fn authenticate(&self, presented: Option<&[u8]>) -> Option<Grant> {
        let presented = presented?;
        if let Some(key) = &self.admin_key {
            let key = key.as_bytes();
            if key.len() == presented.len()
                && key
                    .iter()
                    .zip(presented)
                    .fold(0u8, |acc, (a, b)| acc | (a ^ b))
                    == 0
            {
                return Some(Grant::admin("admin"));
            }
        }
        self.reload_if_changed();
        let ring = self.ring.read();
        let key = ring.find(presented, keyring::now_unix_ms())?;
        Some(Grant {
            name: key.name.clone(),
            roles: key.roles.clone(),
            author_only: key.author_only,
        })
    }

    /// Re-reads `keys.json` when its modification time changed, at most once per
    /// [`RELOAD_EVERY`]. A file that fails to load keeps the keys last loaded (and says
    /// so in the log) rather than opening the server.
    fn reload_if_changed(&self) {
        let mut checked = self.checked.lock();
        if checked.0.elapsed() < RELOAD_EVERY {
            return;
        }
        checked.0 = Instant::now();
        if let Some(remote) = &self.remote {
            match remote.load().and_then(|keys| match keys {
                Some(keys) => KeyRing::from_keys(keys),
                None => Ok(KeyRing::default()),
            }) {
                Ok(ring) => *self.ring.write() = ring,
                Err(e) => tracing::error!(
                    keys = %remote.describe(),
                    "API keys not reloaded, keeping the previous ones: {e}"
                ),
            }
            return;
        }
        let now = modified(&self.path);
        if now == checked.1 {
            return;
        }
        match KeyRing::load(&self.path) {
            Ok(ring) => {
                *self.ring.write() = ring;
                checked.1 = now;
                tracing::info!(file = %self.path.display(), "API keys reloaded");
            }
            Err(e) => tracing::error!("API keys not reloaded, keeping the previous ones: {e}"),
        }
    }
}

impl std::fmt::Debug for Access {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Access")
            .field("admin_key", &self.admin_key.as_ref().map(|_| "<redacted>"))
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

fn modified(path: &Path) -> Option<SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

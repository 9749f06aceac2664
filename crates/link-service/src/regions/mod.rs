//! Short links in several regions (`[regions]`): each region stores the links homed in
//! it (by their URL's host, or a `"region"` given on create), owns a range of the 62
//! code groups so a code names its home with no look-up, forwards creates and edits of
//! links homed elsewhere, and serves other regions' links from a bounded cache.
//!
//! - `settings.rs`: `[regions]` and its checks; `map.rs`: [`RegionMap`] (host → home,
//!   code → home, this region's groups); `claim.rs`: the start check that the store
//!   holds only this region's groups; `peers.rs`: [`Peers`], the calls to other
//!   regions; `remote_cache.rs`: [`RemoteCache`].

pub mod claim;
pub mod map;
pub mod peers;
pub mod remote_cache;
pub mod settings;

pub use map::RegionMap;
pub use peers::{PeerError, Peers};
pub use remote_cache::RemoteCache;
pub use settings::RegionSettings;

use std::sync::Arc;
use std::time::Duration;

/// Everything a server of one region of several needs.
#[derive(Debug)]
pub struct Regions {
    /// Where links live.
    pub map: Arc<RegionMap>,
    /// Calls to the other regions.
    pub peers: Peers,
    /// Other regions' links, served here within the bound.
    pub remote: RemoteCache,
    /// `[regions] peer_key`, which the peer routes ask for.
    pub peer_key: Option<String>,
}

impl Regions {
    /// The regions of checked settings.
    pub fn new(settings: &RegionSettings) -> anyhow::Result<Self> {
        let map = Arc::new(RegionMap::new(settings)?);
        Ok(Self {
            peers: Peers::new(
                Arc::clone(&map),
                settings.peer_key.clone(),
                settings.peer_timeout_ms,
                settings.tls_ca.as_deref(),
            )?,
            remote: RemoteCache::new(
                settings.remote_cache_entries,
                Duration::from_millis(settings.remote_ttl_ms),
            ),
            map,
            peer_key: settings.peer_key.clone(),
        })
    }
}

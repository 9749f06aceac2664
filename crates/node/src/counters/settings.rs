//! `[counters]`: the counter engine's settings (durability, snapshots, the log of
//! record with its lease, the cold tier) and their checks, beside the counters access
//! that reads them.

use serde::{Deserialize, Serialize};
use std::time::Duration;

/// `[counters] fsync`: when the counters' local log reaches the disk (Redis's
/// `appendfsync`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Fsync {
    /// Before a write is acknowledged: no acknowledged write is lost.
    #[default]
    Always,
    /// Once a second: a power cut loses up to about a second.
    Everysec,
    /// When the operating system writes: fastest, a power cut loses what it held.
    No,
}

/// `[counters] log`: where the counters' log of record lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum CounterLog {
    /// The data directory's segment files.
    #[default]
    Local,
    /// A NATS JetStream stream: the lease holder writes, replicas follow (feature `nats`).
    Jetstream,
}

/// `[counters] role`: whether a node with the JetStream log may lead.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum CounterRole {
    /// Lead when the lease is free, else follow.
    #[default]
    Auto,
    /// Never lead.
    Replica,
}

/// `[counters]`: durability and schema behaviour of the counter engine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, documented::DocumentedFields)]
#[serde(default, deny_unknown_fields)]
pub struct CounterSettings {
    /// `always` (default: no acknowledged write is lost), `everysec` or `no`, as Redis's appendfsync.
    pub fsync: Fsync,
    /// Writes create missing counters (one column `value`) and columns (16 bits, max 64).
    pub auto_create: bool,
    /// How long applied transaction ids are remembered, seconds.
    pub txid_window_secs: u64,
    /// Snapshot and rotate the log after this many MiB of log.
    pub snapshot_log_mib: u64,
    /// ... and once the log since the last snapshot is this percent of that snapshot's
    /// size (Redis's `auto-aof-rewrite-percentage`), so a big store is not rewritten
    /// whole every `snapshot_log_mib`; 0: the MiB trigger alone.
    pub snapshot_growth_percent: u32,
    /// Also snapshot this many seconds after the last one if anything was written since
    /// (Redis's `save <seconds> 1`); 0 turns the timed snapshot off.
    pub snapshot_seconds: u64,
    /// The log of record: `local` (the data directory's segment files) or `jetstream`
    /// (a NATS JetStream stream: a leader that holds the store's lease writes, replicas
    /// follow; needs feature `nats`).
    pub log: CounterLog,
    /// Name of the counter store on NATS; the stream, lease bucket and subject derive
    /// from it, so several stores share one NATS. Letters, digits, `-` and `_`.
    pub store: String,
    /// Copies JetStream keeps of the stream and the lease bucket (3 in production).
    pub stream_replicas: usize,
    /// `auto` (lead when the lease is free, else follow) or `replica` (never lead).
    pub role: CounterRole,
    /// How long the leader's lease lasts without renewal, ms (renewed every third of it).
    pub lease_ms: u64,
    /// Snapshots kept (1-16), so a damaged newest one can fall back on the one before:
    /// in the data directory, with the log segments the oldest kept one needs (and the
    /// cold files it names); with the `jetstream` log also in the store's object store,
    /// the stream purged up to what the oldest of them covers. 1 keeps the directory
    /// smallest (a billion cold-tiered rows: about the newest snapshot less on disk).
    pub snapshots_kept: usize,
    /// The RESP address clients reach this node at (`host:port`), handed out by `ROLE`,
    /// `INFO replication`, Sentinel, the HTTP 421 and the members' records, the HTTP
    /// address taking its host; required with the `jetstream` log when `resp` or
    /// `http` listens on an unspecified address (`0.0.0.0`, `::`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub announce: Option<String>,
    /// The cold tier: when the engine's memory passes this size (`"2GiB"`), the least
    /// recently written partitions go to disk. None: no limit, everything in RAM.
    pub max_memory: Option<String>,
    /// The cold tier: partitions not written for this long (`"10m"`, `"1h"`) go to
    /// disk. None: never by age.
    pub cold_after: Option<String>,
    /// The cold tier's block cache (decoded blocks of cold rows), e.g. `"64MiB"`.
    pub block_cache: String,
}

impl CounterSettings {
    /// `max_memory` in bytes (None: no limit).
    pub fn max_memory_bytes(&self) -> anyhow::Result<Option<u64>> {
        let Some(text) = &self.max_memory else {
            return Ok(None);
        };
        let n = crate::byte_size::parse_byte_size(text)
            .map_err(|e| anyhow::anyhow!("counters.max_memory: {e}"))?;
        if n < 1 << 20 {
            anyhow::bail!("counters.max_memory must be at least 1MiB, got {text:?}");
        }
        Ok(Some(n))
    }

    /// `cold_after` as a duration (None: never by age).
    pub fn cold_after_duration(&self) -> anyhow::Result<Option<Duration>> {
        let Some(text) = &self.cold_after else {
            return Ok(None);
        };
        let d = humantime::parse_duration(text.trim()).map_err(|e| {
            anyhow::anyhow!(
                "counters.cold_after: {text:?} is not a duration ({e}); write e.g. \"10m\", \"1h\" or \"30s\""
            )
        })?;
        if d < Duration::from_secs(1) {
            anyhow::bail!("counters.cold_after must be at least 1s, got {text:?}");
        }
        Ok(Some(d))
    }

    /// `block_cache` in bytes.
    pub fn block_cache_bytes(&self) -> anyhow::Result<u64> {
        crate::byte_size::parse_byte_size(&self.block_cache)
            .map_err(|e| anyhow::anyhow!("counters.block_cache: {e}"))
    }
}

impl Default for CounterSettings {
    fn default() -> Self {
        Self {
            fsync: Fsync::Always,
            auto_create: true,
            txid_window_secs: 600,
            snapshot_log_mib: 64,
            snapshot_growth_percent: 100,
            snapshot_seconds: 3600,
            log: CounterLog::Local,
            store: "counters".into(),
            stream_replicas: 1,
            role: CounterRole::Auto,
            lease_ms: 3_000,
            snapshots_kept: 2,
            announce: None,
            max_memory: None,
            cold_after: None,
            block_cache: "64MiB".into(),
        }
    }
}

impl CounterSettings {
    /// Refuses values that cannot work, naming the setting: the announced address, the
    /// replicated log's settings and the cold tier's.
    pub fn check(&self) -> anyhow::Result<()> {
        if let Some(announce) = &self.announce {
            crate::announce::check("counters.announce", announce)?;
        }
        self.check_log()?;
        self.check_cold_tier()
    }

    /// The replicated-log settings: a mode this build has, a usable store name, a lease
    /// long enough to renew, replica and snapshot counts in range.
    fn check_log(&self) -> anyhow::Result<()> {
        match self.log {
            CounterLog::Local => return Ok(()),
            CounterLog::Jetstream if !cfg!(feature = "nats") => anyhow::bail!(
                "counters.log \"jetstream\" needs a shardkit built with the cargo feature `nats`"
            ),
            CounterLog::Jetstream => {}
        }
        if self.store.is_empty()
            || self.store.len() > 64
            || !self
                .store
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        {
            anyhow::bail!(
                "counters.store must be 1 to 64 letters, digits, '-' or '_', got {:?}",
                self.store
            );
        }
        if !(300..=60_000).contains(&self.lease_ms) {
            anyhow::bail!(
                "counters.lease_ms must be from 300 to 60000, got {}",
                self.lease_ms
            );
        }
        if !(1..=5).contains(&self.stream_replicas) {
            anyhow::bail!(
                "counters.stream_replicas must be from 1 to 5 (JetStream's limit), got {}",
                self.stream_replicas
            );
        }
        if !(1..=16).contains(&self.snapshots_kept) {
            anyhow::bail!(
                "counters.snapshots_kept must be from 1 to 16, got {}",
                self.snapshots_kept
            );
        }
        Ok(())
    }

    /// The cold tier's settings: sizes and a duration that parse, and not with the
    /// `jetstream` log (its snapshots, shipped to the object store, do not carry the cold
    /// blocks they name).
    fn check_cold_tier(&self) -> anyhow::Result<()> {
        let tiered = self.max_memory_bytes()?.is_some() | self.cold_after_duration()?.is_some();
        self.block_cache_bytes()?;
        if tiered && self.log == CounterLog::Jetstream {
            anyhow::bail!(
                "counters.max_memory and counters.cold_after are not available with counters.log \"jetstream\" yet: the snapshots shipped to the object store do not carry the cold blocks they name; unset them or use log \"local\""
            );
        }
        Ok(())
    }
}

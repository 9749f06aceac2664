//! Compact, durable counters: the Weibo counter service as a library.
//!
//! The rest of this page is the crate's `README.md`: its examples are compiled and run as
//! doc tests.
//!
#![doc = include_str!("../README.md")]
#![warn(missing_docs)]

mod arena;
mod bloom;
mod codec;
mod cold;
pub mod cold_block;
mod cold_index;
mod cold_names;
mod column;
mod counter;
mod digest;
mod engine;
mod error;
mod evict;
mod hash;
mod hugemem;
mod key;
mod log;
mod logread;
mod name_block;
mod name_merge;
mod names;
mod numbered;
mod of_record;
mod partition;
mod record;
mod recover;
mod replicated;
mod restore;
mod scramble;
mod snapread;
mod snapshot;
mod stripe;
mod table;
mod txwindow;

use std::path::PathBuf;
use std::time::Duration;

pub use column::{check_name, ColumnSpec, MAX_VALUE};
pub use counter::STRIPES;
pub use digest::Digest;
pub use engine::{Engine, Pending, RowOp, MAX_TXID_LEN};
pub use error::{Error, Result};
pub use key::{Key, OwnedKey, MAX_KEY_LEN};
pub use log::FsyncPolicy;
pub use of_record::{Applied, LogOfRecord, Stored};
pub use restore::{restore_snapshot, snapshot_lsn, RestoredSnapshot};
pub use table::Table;

/// How an [`Engine`] runs.
///
/// Exists so the server can map its configuration onto the engine in one place.
#[derive(Debug, Clone)]
pub struct Options {
    /// When the log is fsynced; default [`FsyncPolicy::Always`].
    pub fsync: FsyncPolicy,
    /// How long applied transaction ids are remembered; default 10 minutes.
    pub txid_window: Duration,
    /// Take a snapshot (and rotate the log) once this many log bytes were written since
    /// the last one; default 64 MiB. `None` turns the trigger off.
    pub snapshot_log_bytes: Option<u64>,
    /// With [`Options::snapshot_log_bytes`], also wait until the log since the last
    /// snapshot is this percent of that snapshot's size (Redis's
    /// `auto-aof-rewrite-percentage`); default 100. Without it a store whose snapshot is
    /// many times the byte trigger rewrites all of itself every few MiB of writes: a
    /// snapshot's cost per write grows with the store. `None`: the byte trigger alone.
    pub snapshot_growth_percent: Option<u32>,
    /// Take a snapshot at least this often when anything was written; default none.
    pub snapshot_interval: Option<Duration>,
    /// Snapshots kept (with the log segments the oldest needs); default 2, so a damaged
    /// newest snapshot can fall back on the one before.
    pub keep_snapshots: usize,
    /// Dense partitions not written for this long go to the cold tier (disk); default
    /// `None`: never by age.
    pub cold_after: Option<Duration>,
    /// When the engine's memory estimate ([`CounterStats::bytes`] summed) passes this
    /// many bytes, the least recently written dense partitions go to the cold tier until
    /// it is below 90% of it; default `None`: no limit (everything stays in RAM).
    pub max_memory: Option<u64>,
    /// Memory budget of the cold tier's block cache (decoded blocks), bytes; default
    /// [`DEFAULT_BLOCK_CACHE_BYTES`].
    pub block_cache_bytes: u64,
}

/// The block cache's default budget: 64 MiB, about 2,000 decoded blocks of 4,096 rows
/// and two columns.
pub const DEFAULT_BLOCK_CACHE_BYTES: u64 = 64 << 20;

/// What one eviction pass did.
///
/// Exists so tests, benchmarks and logs can see what went to disk.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Eviction {
    /// Partitions now cold.
    pub partitions: u64,
    /// Rows they hold.
    pub rows: u64,
    /// Bytes of their blocks on disk.
    pub bytes_disk: u64,
    /// Partitions chosen but written to while their batch was being written: they stay
    /// in RAM.
    pub kept_hot: u64,
    /// String-keyed rows now cold (counted in `rows` too).
    pub name_rows: u64,
    /// Runs of cold string-keyed rows merged into fewer.
    pub runs_merged: u64,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            fsync: FsyncPolicy::Always,
            txid_window: Duration::from_secs(600),
            snapshot_log_bytes: Some(64 << 20),
            snapshot_growth_percent: Some(100),
            snapshot_interval: None,
            keep_snapshots: 2,
            cold_after: None,
            max_memory: None,
            block_cache_bytes: DEFAULT_BLOCK_CACHE_BYTES,
        }
    }
}

/// How a new column is stored.
///
/// Exists so `add_column` reads like the Weibo design's "add column comments bits=16
/// max=32".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ColumnOptions {
    /// Inline width: 8, 16, 32 or 64 bits. Default 16.
    pub bits: u8,
    /// Widest value: 32 or 64 bits. Default 64.
    pub max_bits: u8,
    /// Value of rows that never set the column; must be below `2^bits - 1`. Default 0.
    pub default: u64,
}

impl Default for ColumnOptions {
    fn default() -> Self {
        ColumnOptions {
            bits: 16,
            max_bits: 64,
            default: 0,
        }
    }
}

impl ColumnOptions {
    /// `bits` inline, `max_bits` at most, default 0.
    pub fn new(bits: u8, max_bits: u8) -> Self {
        ColumnOptions {
            bits,
            max_bits,
            default: 0,
        }
    }
}

/// Something recovery cut and did not apply.
///
/// Exists so an operator is told, in words, what was lost and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dropped {
    /// File that was cut or set aside.
    pub file: PathBuf,
    /// Offset of the first byte not used.
    pub offset: u64,
    /// Bytes not used.
    pub bytes: u64,
    /// Why.
    pub reason: String,
}

/// What [`Engine::open`] found.
///
/// Exists so the server can log a torn tail or a damaged snapshot at startup.
#[derive(Debug, Clone, Default)]
pub struct RecoveryReport {
    /// Snapshot loaded, if any.
    pub snapshot: Option<PathBuf>,
    /// Rows loaded from it.
    pub snapshot_rows: u64,
    /// Log records read after it.
    pub replayed: u64,
    /// Everything cut or set aside; empty after a clean shutdown.
    pub dropped: Vec<Dropped>,
    /// Snapshot frames whose counter was lost with a damaged part of the snapshot.
    pub orphan_frames: u64,
    /// Records that named a counter or column that does not exist (should be zero).
    pub anomalies: u64,
    /// Damage mended with nothing lost (a cold batch whose own index was damaged,
    /// rebuilt from its blocks); what was lost is in `dropped`.
    pub repaired: Vec<String>,
}

/// Figures for one counter.
///
/// Exists for `stats`, `COUNTER.INFO` and the memory benchmark.
#[derive(Debug, Clone, Default)]
pub struct CounterStats {
    /// Counter name.
    pub name: String,
    /// Columns.
    pub columns: usize,
    /// Rows stored (numeric and string keys), in RAM and on disk.
    pub rows: u64,
    /// Of which in RAM.
    pub hot_rows: u64,
    /// Of which in the cold tier (disk).
    pub cold_rows: u64,
    /// Of which under string keys.
    pub named_rows: u64,
    /// Heap bytes (exact for the tables, estimated for side maps; the cold tier's index
    /// and filters included): `bytes_ram` in `COUNTER.INFO`.
    pub bytes: u64,
    /// Bytes of the cold tier's blocks this counter's rows use on disk.
    pub bytes_disk: u64,
    /// Cold blocks served from the block cache.
    pub block_cache_hits: u64,
    /// Cold blocks read from disk.
    pub cold_reads: u64,
    /// `bytes / rows`.
    pub bytes_per_row: f64,
    /// Values kept in the overflow map.
    pub overflow_entries: u64,
    /// Partitions with 4-byte keys (ids sharing their high 32 bits).
    pub dense_partitions: u64,
    /// Partitions with 7-byte keys.
    pub wide_partitions: u64,
    /// Transaction ids remembered.
    pub txids: u64,
    /// Runs of cold string-keyed rows on disk (each a filter a look-up of an absent
    /// string key asks; merges keep them few).
    pub name_runs: u64,
}

impl CounterStats {
    /// Adds `other`'s figures (the same counter in another store) to these: exists for
    /// a cluster node, whose counter is spread over the groups it leads. Columns are
    /// the most either has; `bytes_per_row` is made again from the sums.
    pub fn absorb(&mut self, other: &CounterStats) {
        self.columns = self.columns.max(other.columns);
        self.rows += other.rows;
        self.hot_rows += other.hot_rows;
        self.cold_rows += other.cold_rows;
        self.named_rows += other.named_rows;
        self.bytes += other.bytes;
        self.bytes_disk += other.bytes_disk;
        self.block_cache_hits += other.block_cache_hits;
        self.cold_reads += other.cold_reads;
        self.overflow_entries += other.overflow_entries;
        self.dense_partitions += other.dense_partitions;
        self.wide_partitions += other.wide_partitions;
        self.txids += other.txids;
        self.name_runs += other.name_runs;
        self.bytes_per_row = if self.rows > 0 {
            self.bytes as f64 / self.rows as f64
        } else {
            0.0
        };
    }
}

/// Figures for the whole engine.
///
/// Exists for `stats` / `INFO`.
#[derive(Debug, Clone)]
pub struct Stats {
    /// Per counter, by name.
    pub counters: Vec<CounterStats>,
    /// The next log sequence number (mutations logged since the directory was created, +1).
    pub next_lsn: u64,
    /// Log bytes written since the last snapshot.
    pub log_bytes_since_snapshot: u64,
    /// Fsync policy in force.
    pub fsync: FsyncPolicy,
    /// Last error of a background flush or snapshot, if any.
    pub last_background_error: Option<String>,
    /// When the log was last fsynced, Unix milliseconds (0: not yet by this process;
    /// under fsync `no` it never is).
    pub last_fsync_unix_ms: u64,
    /// When the last snapshot was written, Unix milliseconds; the engine's opening time
    /// until this process writes one (what Redis's `LASTSAVE` answers after a load).
    pub last_snapshot_unix_ms: u64,
    /// Snapshots written by this process.
    pub snapshots_written: u64,
    /// Bytes the cold tier's block cache holds.
    pub block_cache_bytes: u64,
}

/// What a snapshot did.
///
/// Exists so callers and tests can see the pause it caused writers.
#[derive(Debug, Clone)]
pub struct SnapshotInfo {
    /// The snapshot file.
    pub path: PathBuf,
    /// Log rotation point it covers up to.
    pub lsn: u64,
    /// Rows written.
    pub rows: u64,
    /// Wall time taken.
    pub duration: Duration,
    /// Longest time one stripe was held (writers of that stripe waited this long).
    pub longest_stripe_pause: Duration,
}

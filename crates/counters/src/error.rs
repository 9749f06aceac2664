//! The one error type of the crate: every variant says what was wrong and what to do.

use std::path::PathBuf;

/// Everything that can go wrong in the counter engine.
///
/// Exists so callers (the RESP and HTTP servers) can turn a failure into a message for
/// the user without guessing: each variant's text names the thing that was wrong and
/// what to do about it.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The named counter has not been created.
    #[error("counter `{0}` does not exist; create it first with create_counter")]
    NoSuchCounter(String),
    /// `create_counter` was called for a name already in use.
    #[error("counter `{0}` already exists; pick another name or use the existing one")]
    CounterExists(String),
    /// The named column is not part of the counter.
    #[error("counter `{counter}` has no column `{column}`; add it first with add_column")]
    NoSuchColumn {
        /// Counter that was addressed.
        counter: String,
        /// Column that was asked for.
        column: String,
    },
    /// `add_column` was called for a column name already in use.
    #[error("counter `{counter}` already has a column `{column}`")]
    ColumnExists {
        /// Counter that was addressed.
        counter: String,
        /// Column that already exists.
        column: String,
    },
    /// A counter or column name is empty, too long or holds bytes that are not allowed.
    #[error("invalid name `{name}`: {reason}")]
    BadName {
        /// The name as given.
        name: String,
        /// Why it was refused.
        reason: &'static str,
    },
    /// A column specification (bits, max, default) is not allowed.
    #[error("invalid column `{column}`: {reason}")]
    BadColumn {
        /// Column being added.
        column: String,
        /// Why it was refused.
        reason: String,
    },
    /// A counter cannot take more columns.
    #[error("counter `{0}` already has the maximum of 1024 columns")]
    TooManyColumns(String),
    /// A decrement would take a count below zero; counts never go negative.
    #[error("refused: decrementing `{column}` by {} would go below zero (it is {current}); counts never go negative", .delta.unsigned_abs())]
    Negative {
        /// Column addressed.
        column: String,
        /// Current value.
        current: u64,
        /// Delta that was refused.
        delta: i64,
    },
    /// A write would take a count past the column's `max` width.
    #[error("refused: `{column}` would exceed its maximum {max} (it is {current}, delta {delta}); add a column with max=64 for larger counts")]
    TooLarge {
        /// Column addressed.
        column: String,
        /// Current value.
        current: u64,
        /// Delta (or, for set, the value) that was refused.
        delta: i128,
        /// Largest value the column holds.
        max: u64,
    },
    /// A string key is empty or longer than the limit.
    #[error("invalid key: {0}")]
    BadKey(&'static str),
    /// A transaction id is empty or too long.
    #[error("invalid transaction id: {0}")]
    BadTxid(&'static str),
    /// Reading or writing a file failed.
    #[error("I/O error on {path}: {source}; check the disk and the data directory's permissions")]
    Io {
        /// File or directory involved.
        path: PathBuf,
        /// What the operating system said.
        #[source]
        source: std::io::Error,
    },
    /// An earlier write or fsync of the append log failed, so the engine refuses writes
    /// rather than acknowledge something it cannot make durable.
    #[error("the append log failed earlier ({0}); writes are refused: fix the disk and reopen the engine, recovery replays the log")]
    LogFailed(String),
    /// A snapshot file could not be used at all and no older one was there to fall back on.
    #[error("snapshot {path} is unusable: {reason}; move it away to recover from the log alone")]
    Corrupt {
        /// File involved.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// Another process (or another Engine in this one) holds the data directory.
    #[error("data directory {0} is in use by another engine; close it first")]
    Locked(PathBuf),
    /// The engine was closed.
    #[error("the engine is closed")]
    Closed,
    /// The engine follows a replicated log (a replica) and takes no writes of its own.
    #[error("this engine is a read-only replica; write to the leader")]
    ReadOnly,
    /// The log of record (e.g. the JetStream stream) refused or lost a batch: nothing in
    /// it is acknowledged and the engine refuses writes from now on.
    #[error("the log of record refused a batch ({0}); this node no longer takes writes")]
    LogOfRecord(String),
    /// A snapshot handed to [`crate::restore_snapshot`] was refused: damaged, from a
    /// build with other stripes, or the directory already holds counters.
    #[error("cannot restore a snapshot into {dir}: {reason}; fetch an intact snapshot or use an empty directory")]
    Restore {
        /// The data directory.
        dir: PathBuf,
        /// What was wrong.
        reason: String,
    },
    /// A replicated batch could not be applied: damaged, or not the next records.
    #[error("replicated batch refused: {0}")]
    BadBatch(String),
    /// A read of the whole state could not finish as asked (writes never paused, or rows
    /// live where the read does not reach): try again later.
    #[error("{0}")]
    Busy(String),
    /// A block of the cold tier is damaged: the rows it held (named by their id range)
    /// cannot be read or written; every other row keeps serving.
    #[error("cold file {path}: {source}; the rows of that id range are unavailable, the rest is served (restore the file, or delete the counter's rows in that range)")]
    ColdBlock {
        /// The cold file.
        path: PathBuf,
        /// The block and what is wrong with it.
        #[source]
        source: crate::cold_block::BlockError,
    },
}

/// Result with the crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Wraps an I/O error with the path it concerns.
pub(crate) fn io_err(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> Error {
    let path = path.into();
    move |source| Error::Io { path, source }
}

//! Seeding an empty data directory with a snapshot that came from elsewhere (another
//! node's, fetched by the server from wherever it keeps them), so [`crate::Engine::open`]
//! starts from it instead of from nothing.
//!
//! The bytes are checked as recovery checks a local snapshot (magic, every frame's CRC,
//! the end frame's count, the stripe count of this build) and refused unless whole: a
//! partly usable snapshot is fine as a last resort on the disk that wrote it, but a node
//! seeded from a damaged copy would silently hold less than its peers.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::counter::STRIPES;
use crate::error::{io_err, Error, Result};
use crate::{logread, snapshot};

/// A snapshot file written into a data directory by [`restore_snapshot`].
///
/// Exists so the caller knows which log position the engine opened on it will be at:
/// the snapshot holds every record below [`RestoredSnapshot::lsn`], and the engine's
/// next lsn is exactly that, so records from there on (e.g. a replicated log's tail)
/// apply with [`crate::Engine::apply_replicated`] and older ones are skipped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RestoredSnapshot {
    /// The snapshot's rotation point X: records below it are all in it.
    pub lsn: u64,
    /// The file written (`snap-<X>.snap`).
    pub path: PathBuf,
    /// Size of the snapshot in bytes.
    pub bytes: u64,
}

/// Reads the rotation point X of snapshot `bytes` without checking more than the header
/// (`None` if it is not a snapshot). Exists so a caller can name a snapshot it holds.
pub fn snapshot_lsn(bytes: &[u8]) -> Option<u64> {
    crate::snapread::parse(Path::new("snapshot"), bytes).map(|p| p.x)
}

/// Writes snapshot `bytes` into `dir` (created if missing) as its only snapshot, durably
/// (temporary file, fsync, rename, fsync of the directory), after checking it whole.
///
/// A snapshot whose rows are partly in the cold tier names cold batch files
/// it does not hold, so it is refused.
///
/// `dir` must hold no counters yet (no snapshot, no log segment): restoring over a
/// directory with its own history would mix two histories. Open the engine on `dir`
/// afterwards; it recovers from this snapshot.
pub fn restore_snapshot(dir: &Path, bytes: &[u8]) -> Result<RestoredSnapshot> {
    let refuse = |reason: String| Error::Restore {
        dir: dir.to_path_buf(),
        reason,
    };
    let parsed = crate::snapread::parse(dir, bytes).ok_or_else(|| {
        refuse("the bytes are not a counters snapshot (bad magic or header)".into())
    })?;
    if parsed.stripes != STRIPES {
        return Err(refuse(format!(
            "the snapshot has {} stripes per counter, this build uses {STRIPES}",
            parsed.stripes
        )));
    }
    if let Some(d) = parsed.dropped {
        return Err(refuse(format!(
            "the snapshot is not whole at byte {}: {}",
            d.offset, d.reason
        )));
    }
    // Frames 5, 6 and 7 name cold batch files of the disk that wrote the snapshot: they
    // are not in these bytes, and their rows would be lost without a word.
    let cold = parsed
        .kept()
        .filter(|f| matches!(f.first(), Some(5..=7)))
        .count();
    if cold > 0 {
        return Err(refuse(format!(
            "the snapshot relies on cold batch files of the node that wrote it ({cold} \
             stripes with rows on disk); it cannot be restored from its bytes alone"
        )));
    }
    fs::create_dir_all(dir).map_err(io_err(dir))?;
    if !snapshot::list(dir)?.is_empty() || !logread::list_segments(dir)?.is_empty() {
        return Err(refuse(
            "the directory already holds counters; restore into an empty directory".into(),
        ));
    }
    let path = dir.join(snapshot::snapshot_name(parsed.x));
    let tmp = path.with_extension("tmp");
    let mut file = fs::File::create(&tmp).map_err(io_err(&tmp))?;
    file.write_all(bytes).map_err(io_err(&tmp))?;
    file.sync_all().map_err(io_err(&tmp))?;
    drop(file);
    fs::rename(&tmp, &path).map_err(io_err(&tmp))?;
    crate::log::sync_dir(dir)?;
    Ok(RestoredSnapshot {
        lsn: parsed.x,
        path,
        bytes: bytes.len() as u64,
    })
}

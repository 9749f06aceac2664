//! Files named `<prefix><number><suffix>` in a data directory (log segments,
//! snapshots, cold block files): one listing shared by their modules.

use std::fs;
use std::path::{Path, PathBuf};

use crate::error::{io_err, Result};

/// The files of `dir` named `prefix` + a decimal number + `suffix`, as (number, path),
/// lowest number first; other names are skipped.
pub(crate) fn numbered_files(
    dir: &Path,
    prefix: &str,
    suffix: &str,
) -> Result<Vec<(u64, PathBuf)>> {
    let mut out = Vec::new();
    for entry in fs::read_dir(dir).map_err(io_err(dir))? {
        let entry = entry.map_err(io_err(dir))?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if let Some(n) = name
            .strip_prefix(prefix)
            .and_then(|n| n.strip_suffix(suffix))
            .and_then(|n| n.parse::<u64>().ok())
        {
            out.push((n, entry.path()));
        }
    }
    out.sort();
    Ok(out)
}

//! The snapshots a store should no longer start from on this node.
//!
//! A start from a snapshot takes the joint between the snapshot and the stream on trust
//! until the follower has checked it against the stream leader. When the stream does
//! not continue the copy before that check (the snapshot was stored across a partition
//! whose writes the stream later replaced, or its joint is a deposed leader's write),
//! starting over from the same snapshot would meet the same message again, forever.
//! So the snapshot's name goes into a small file beside the engine's directory (which
//! every start clears), and the next start tries an older one; the kept snapshots
//! overlap the stream, so an older one always has its tail.

use std::io::Write;
use std::path::{Path, PathBuf};

/// The snapshot a store's copy started from, and where to note it if the stream turns
/// out not to continue it.
#[derive(Debug, Clone)]
pub struct StartedFrom {
    /// The snapshot's object name.
    pub snapshot: String,
    /// The list of snapshots this store no longer starts from.
    pub list: Distrusted,
}

impl StartedFrom {
    /// Notes that the stream did not continue this snapshot: the next start skips it.
    pub fn distrust(&self) {
        if let Err(e) = self.list.add(&self.snapshot) {
            tracing::error!(
                snapshot = %self.snapshot,
                file = %self.list.path.display(),
                error = %e,
                "cannot note the snapshot as not to start from; the next start may meet the same mismatch"
            );
        } else {
            tracing::warn!(
                snapshot = %self.snapshot,
                "the stream does not continue the snapshot this copy started from; the next start uses an older one"
            );
        }
    }
}

/// A file of snapshot object names, one per line.
#[derive(Debug, Clone)]
pub struct Distrusted {
    path: PathBuf,
}

impl Distrusted {
    /// The list of the store whose engine directory is `dir` (kept beside it, as
    /// `<dir>.distrusted`, since the directory itself is cleared at every start).
    pub fn beside(dir: &Path) -> Distrusted {
        let mut name = dir.file_name().unwrap_or_default().to_os_string();
        name.push(".distrusted");
        Distrusted {
            path: dir.with_file_name(name),
        }
    }

    /// The names in the list (none when there is no file or it cannot be read: a
    /// lost list only costs a start that meets the mismatch again).
    pub fn names(&self) -> Vec<String> {
        std::fs::read_to_string(&self.path)
            .map(|text| text.lines().map(str::to_string).collect())
            .unwrap_or_default()
    }

    /// Adds `name` to the list.
    pub fn add(&self, name: &str) -> std::io::Result<()> {
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)?;
        writeln!(file, "{name}")
    }

    /// Keeps only the names in `existing` (snapshots deleted from the store need no
    /// entry); removes the file when none is left.
    pub fn keep_only(&self, existing: &[&str]) -> std::io::Result<()> {
        let kept: Vec<String> = self
            .names()
            .into_iter()
            .filter(|n| existing.contains(&n.as_str()))
            .collect();
        if kept.is_empty() {
            match std::fs::remove_file(&self.path) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
                _ => Ok(()),
            }
        } else {
            std::fs::write(&self.path, kept.join("\n") + "\n")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_kept_beside_the_directory_and_pruned() {
        let tmp = tempfile::tempdir().unwrap();
        let list = Distrusted::beside(&tmp.path().join("counters-jetstream").join("test"));
        std::fs::create_dir_all(tmp.path().join("counters-jetstream")).unwrap();
        assert!(list.names().is_empty());
        list.add("snap-2").unwrap();
        list.add("snap-3").unwrap();
        assert!(tmp
            .path()
            .join("counters-jetstream")
            .join("test.distrusted")
            .exists());
        assert_eq!(list.names(), ["snap-2", "snap-3"]);
        list.keep_only(&["snap-3", "snap-4"]).unwrap();
        assert_eq!(list.names(), ["snap-3"]);
        list.keep_only(&["snap-4"]).unwrap();
        assert!(list.names().is_empty());
        assert!(!list.path.exists());
    }
}

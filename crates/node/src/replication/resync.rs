//! A copy the stream cannot rebuild: it needs a snapshot taken past the break.
//!
//! A replica rebuilds its copy from a snapshot plus the stream as the stream leader
//! holds it. That copy is normally the agreed log; but nats-server 2.9 was seen, after
//! a partition healed, electing a stream leader whose copy kept a deposed leader's
//! never-acknowledged write in place of a newer leader's message: the messages after
//! it build on a message that copy does not have, and no replay of it can continue
//! past that point. Redis's answer to a replica that cannot continue the master's
//! stream is a full resync from a fresh snapshot of the master; so here: the sequence
//! where the stream leader's copy broke is noted in a small file beside the engine's
//! directory (which every start clears), and the next start waits for a snapshot whose
//! tail starts past it, asking the leader for one (see
//! [`crate::replication::jetstream::snapshots::restore_newest`]).

use std::path::{Path, PathBuf};

/// The note of one store's copy: the stream sequence its replay could not continue.
#[derive(Debug, Clone)]
pub struct Resync {
    path: PathBuf,
}

impl Resync {
    /// The note of the store whose engine directory is `dir`, kept beside it as
    /// `<dir>.resync`.
    pub fn beside(dir: &Path) -> Resync {
        let mut name = dir.file_name().unwrap_or_default().to_os_string();
        name.push(".resync");
        Resync {
            path: dir.with_file_name(name),
        }
    }

    /// Notes that the stream leader's copy does not continue at message `seq`: the
    /// next start needs a snapshot whose tail starts after it.
    pub fn need_past(&self, seq: u64) {
        let past = self.past().map_or(seq, |before| before.max(seq));
        if let Err(e) = std::fs::write(&self.path, format!("{past}\n")) {
            tracing::error!(
                file = %self.path.display(),
                error = %e,
                "cannot note that this copy needs a fresh snapshot; the next start may replay into the same break"
            );
        }
    }

    /// The sequence a snapshot to start from must be past, if one was noted (a note
    /// that cannot be read counts as none: it only costs a replay into the break).
    pub fn past(&self) -> Option<u64> {
        std::fs::read_to_string(&self.path)
            .ok()?
            .trim()
            .parse()
            .ok()
    }

    /// Forgets the note: the copy started from a snapshot past it.
    pub fn clear(&self) {
        match std::fs::remove_file(&self.path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                tracing::warn!(file = %self.path.display(), error = %e, "cannot remove the resync note")
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_note_keeps_the_furthest_break_until_cleared() {
        let tmp = tempfile::tempdir().unwrap();
        let note = Resync::beside(&tmp.path().join("g-3"));
        assert_eq!(note.past(), None);
        note.need_past(4451);
        assert!(tmp.path().join("g-3.resync").exists());
        note.need_past(17);
        assert_eq!(note.past(), Some(4451));
        note.need_past(5000);
        assert_eq!(note.past(), Some(5000));
        note.clear();
        assert_eq!(note.past(), None);
        note.clear();
    }
}

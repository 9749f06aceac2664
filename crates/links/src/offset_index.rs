//! The dense offset index of the segment store: for each key group (the code's group,
//! 0-61, or 63 for keys from the wide-code counter) a file `index-gNN` of 8-byte slots,
//! slot `n` holding the segment location of the record with key `n << 6 | group`
//! (0: none). A generated code's sequence number is its slot, so a redirect is one
//! 8-byte `pread` here and one in a segment, and the file costs 8 bytes a link.
//!
//! Slots past [`DENSE_SLOTS`] (only imported codes of a foreign key land there: their
//! numbers are scattered over the whole code space) are kept in redb instead
//! (`link_far`), so a sparse file never grows without bound.
//!
//! The index is derived data: it is written after the redb commit that makes a batch
//! count and fsynced only at checkpoints; the segment frames after the last checkpoint
//! are replayed into it on open ([`crate::SegmentLinkStore`]). Readers and the writer
//! share a lock so a slot is never read half written.
//!
//! Once the store is open, [`OffsetIndex::hold`] loads the slots into memory, packed
//! ([`crate::slot_table`], ~2.25 bytes a link within a budget), and the files are read
//! only for a slot the table does not hold: a redirect's record is then one `pread`.

use crate::error::StoreError;
use crate::nowait::Wait;
use crate::slot_table::SlotTable;
use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{OnceLock, RwLock};

/// Slots per group kept in the file (2^27: 1 GiB of index, 134 million links, a group).
pub(crate) const DENSE_SLOTS: u64 = 1 << 27;
/// Bits of a key that hold its group.
const GROUP_BITS: u32 = 6;

/// Whether the record with `key` has its slot in a file (else in redb's `link_far`).
pub(crate) fn is_dense(key: u64) -> bool {
    key >> GROUP_BITS < DENSE_SLOTS
}

/// The 64 slot files of a store.
pub(crate) struct OffsetIndex {
    dir: PathBuf,
    files: [OnceLock<File>; 64],
    /// The slots held in memory; held shared by readers of a slot, exclusively while
    /// slots are written (to the files and the table alike).
    table: RwLock<SlotTable>,
}

fn io(what: &str, path: &Path, e: std::io::Error) -> StoreError {
    StoreError::Backend(format!("cannot {what} {}: {e}", path.display()))
}

impl OffsetIndex {
    /// The index in `dir` (files are made when first written).
    pub(crate) fn open(dir: &Path) -> Self {
        Self {
            dir: dir.to_path_buf(),
            files: std::array::from_fn(|_| OnceLock::new()),
            table: RwLock::new(SlotTable::new(0)),
        }
    }

    /// Loads the slots of every file into memory, as many as `budget` bytes hold (see
    /// [`crate::slot_table`]); from then on a slot the table holds is read from it.
    pub(crate) fn hold(&self, budget: usize) -> Result<(), StoreError> {
        let mut table = self.table.write().unwrap_or_else(|p| p.into_inner());
        *table = SlotTable::new(budget);
        // 8,192 slots (64 KiB) a read.
        let mut buf = vec![0u8; 8 * 8192];
        for group in 0..64 {
            let Some(file) = self.file(group, false)? else {
                continue;
            };
            let mut at = 0u64;
            let mut slots = Vec::with_capacity(8192);
            while table.has_room(group) {
                let n = crate::nowait::read_at(file, &mut buf, at, Wait::Disk)
                    .map_err(|e| io("read", &self.path(group), e))?
                    .unwrap_or(0);
                if n < 8 {
                    break;
                }
                slots.clear();
                slots.extend(
                    buf[..n - n % 8]
                        .chunks_exact(8)
                        .map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes"))),
                );
                table.load(group, (at / 8 / 64) as usize, &slots);
                at += (n - n % 8) as u64;
            }
        }
        Ok(())
    }

    /// Bytes of slots held in memory, and the budget ([`OffsetIndex::hold`]).
    pub(crate) fn held(&self) -> (usize, usize) {
        self.table.read().unwrap_or_else(|p| p.into_inner()).usage()
    }

    fn path(&self, group: usize) -> PathBuf {
        self.dir.join(format!("index-g{group:02}"))
    }

    /// The file of `group`, opened (or made, when `create`) on first use.
    fn file(&self, group: usize, create: bool) -> Result<Option<&File>, StoreError> {
        if let Some(f) = self.files[group].get() {
            return Ok(Some(f));
        }
        let path = self.path(group);
        if !create && !path.exists() {
            return Ok(None);
        }
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|e| io("open", &path, e))?;
        if create {
            crate::segment_log::sync_dir(&self.dir)?;
        }
        Ok(Some(self.files[group].get_or_init(|| file)))
    }

    /// The location in `key`'s slot, if any (`key` must be dense).
    pub(crate) fn get(&self, key: u64) -> Result<Option<u64>, StoreError> {
        Ok(self.get_with(key, Wait::Disk)?.flatten())
    }

    /// [`OffsetIndex::get`] from the kernel's page cache alone: `Ok(None)` when the slot
    /// would have to come from the disk (see `nowait.rs`).
    pub(crate) fn get_cached(&self, key: u64) -> Result<Option<Option<u64>>, StoreError> {
        self.get_with(key, Wait::Never)
    }

    /// `key`'s slot; the outer `None` only when `wait` is [`Wait::Never`] and the disk
    /// was needed.
    fn get_with(&self, key: u64, wait: Wait) -> Result<Option<Option<u64>>, StoreError> {
        let table = self.table.read().unwrap_or_else(|p| p.into_inner());
        if let Some(loc) = table.get(key) {
            return Ok(Some(Some(loc).filter(|&loc| loc != 0)));
        }
        let group = (key & 63) as usize;
        let Some(file) = self.file(group, false)? else {
            return Ok(Some(None));
        };
        let mut slot = [0u8; 8];
        let got = crate::nowait::read_at(file, &mut slot, (key >> GROUP_BITS) * 8, wait)
            .map_err(|e| io("read", &self.path(group), e))?;
        Ok(match got {
            None => None,
            Some(8) => Some(Some(u64::from_le_bytes(slot)).filter(|&loc| loc != 0)),
            // Past the end: never written (a slot is written whole, 8 bytes at 8).
            Some(_) => Some(None),
        })
    }

    /// Sets the slots of `updates` (`key`, location or 0 for none), all dense; runs of
    /// neighbouring slots are written with one `pwrite`.
    pub(crate) fn set(&self, updates: &[(u64, u64)]) -> Result<(), StoreError> {
        // Stable: of two updates of one slot (a link replaced in the batch that made
        // it), the later stays last, and wins.
        let mut sorted = updates.to_vec();
        sorted.sort_by_key(|&(key, _)| ((key & 63), key >> GROUP_BITS));
        let mut slots: Vec<(u64, u64)> = Vec::with_capacity(sorted.len());
        for (key, loc) in sorted {
            match slots.last_mut() {
                Some(last) if last.0 == key => last.1 = loc,
                _ => slots.push((key, loc)),
            }
        }
        let mut table = self.table.write().unwrap_or_else(|p| p.into_inner());
        let mut run: Vec<u8> = Vec::new();
        let mut i = 0;
        while i < slots.len() {
            let group = (slots[i].0 & 63) as usize;
            let first = slots[i].0 >> GROUP_BITS;
            run.clear();
            let mut j = i;
            while j < slots.len()
                && (slots[j].0 & 63) as usize == group
                && slots[j].0 >> GROUP_BITS == first + (j - i) as u64
            {
                run.extend_from_slice(&slots[j].1.to_le_bytes());
                j += 1;
            }
            let file = self.file(group, true)?.expect("made on demand");
            file.write_all_at(&run, first * 8)
                .map_err(|e| io("write", &self.path(group), e))?;
            table.set_all(&slots[i..j]);
            i = j;
        }
        Ok(())
    }

    /// fsyncs every slot file written so far (a checkpoint).
    pub(crate) fn sync(&self) -> Result<(), StoreError> {
        for (group, file) in self.files.iter().enumerate() {
            if let Some(f) = file.get() {
                f.sync_data()
                    .map_err(|e| io("fsync", &self.path(group), e))?;
            }
        }
        Ok(())
    }

    /// The groups among `groups` (one bit per group) whose slot file is not on disk:
    /// files the store wrote that are gone (deleted or lost), so the index must be
    /// rebuilt from the segments rather than trusted.
    pub(crate) fn missing(&self, groups: u64) -> u64 {
        (0..64)
            .filter(|&g| groups >> g & 1 == 1 && !self.path(g).exists())
            .fold(0, |bits, g| bits | 1 << g)
    }

    /// The groups (one bit each) whose slot file is on disk.
    pub(crate) fn present(&self) -> u64 {
        (0..64)
            .filter(|&g| self.path(g).exists())
            .fold(0, |bits, g| bits | 1 << g)
    }

    /// Removes every slot file (the index is being rebuilt from the segments).
    pub(crate) fn clear(dir: &Path) -> Result<(), StoreError> {
        for group in 0..64 {
            let path = dir.join(format!("index-g{group:02}"));
            if path.exists() {
                std::fs::remove_file(&path).map_err(|e| io("remove", &path, e))?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_hold_locations_and_runs_are_written_together() {
        let dir = tempfile::tempdir().unwrap();
        let index = OffsetIndex::open(dir.path());
        assert_eq!(index.get(5 << 6 | 3).unwrap(), None);
        let mut updates: Vec<(u64, u64)> = (0..100u64).map(|n| (n << 6 | 3, 1000 + n)).collect();
        updates.push((7 << 6 | 63, 42));
        updates.push((4 << 6 | 3, 5)); // replaced in the same batch: the later one wins
        index.set(&updates).unwrap();
        assert_eq!(index.get(5 << 6 | 3).unwrap(), Some(1005));
        assert_eq!(index.get(4 << 6 | 3).unwrap(), Some(5));
        assert_eq!(index.get(7 << 6 | 63).unwrap(), Some(42));
        assert_eq!(index.get(6 << 6 | 63).unwrap(), None);
        assert_eq!(index.get(500 << 6 | 3).unwrap(), None);
        index.set(&[(5 << 6 | 3, 0)]).unwrap();
        assert_eq!(index.get(5 << 6 | 3).unwrap(), None);
        index.sync().unwrap();
        drop(index);
        let index = OffsetIndex::open(dir.path());
        assert_eq!(index.get(99 << 6 | 3).unwrap(), Some(1099));
        assert!(is_dense((DENSE_SLOTS - 1) << 6));
        assert!(!is_dense(DENSE_SLOTS << 6));
    }
}

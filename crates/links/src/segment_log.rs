//! The append-only segment files of the segment store ([`crate::SegmentLinkStore`]):
//! every version of every link record, in the order they were committed.
//!
//! A segment is `seg-NNNNNN` in the store's directory: an 8-byte magic, then frames:
//!
//! ```text
//! len    u32 LE: the payload's length (0: a tombstone, the key's link was deleted)
//! check  u32 LE: CRC32 of key and payload
//! key    u64 LE: the record key (crate::locator), so the index can be rebuilt
//! payload        the packed record (crate::record)
//! ```
//!
//! A frame is found by its location, `segment << 40 | offset` (offsets are at least 8,
//! so a location is never 0, which the offset index reads as "none"). Only the last
//! segment grows; it rolls over past [`SEGMENT_BYTES`]. The committed end (the
//! high-water mark) lives in redb and is written after the segment's fsync, so on open
//! everything past it (a batch whose commit never happened) is cut off: no torn frame
//! is ever read. Reads are `pread`s: resident memory does not grow with the files.

use crate::error::StoreError;
use crate::nowait::Wait;
use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

/// The first bytes of every segment.
const MAGIC: &[u8; 8] = b"SKLSEG01";
/// Bytes of a frame before its payload.
pub(crate) const FRAME_HEAD: usize = 16;
/// A segment is closed and a new one started once it is this large.
pub(crate) const SEGMENT_BYTES: u64 = 1 << 30;
/// Bits of a location that hold the offset.
const OFFSET_BITS: u32 = 40;
/// Bytes read first when reading a frame (most records fit).
const FIRST_READ: usize = 256;

/// A frame's place: `segment << 40 | offset`.
pub(crate) fn location(segment: u32, offset: u64) -> u64 {
    (u64::from(segment) << OFFSET_BITS) | offset
}

/// The segment and offset of a location.
pub(crate) fn split(loc: u64) -> (u32, u64) {
    ((loc >> OFFSET_BITS) as u32, loc & ((1 << OFFSET_BITS) - 1))
}

/// Appends one frame for `key` to `out` (an empty payload is a tombstone).
pub(crate) fn push_frame(out: &mut Vec<u8>, key: u64, payload: &[u8]) {
    let mut crc = crc32fast::Hasher::new();
    crc.update(&key.to_le_bytes());
    crc.update(payload);
    out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    out.extend_from_slice(&crc.finalize().to_le_bytes());
    out.extend_from_slice(&key.to_le_bytes());
    out.extend_from_slice(payload);
}

/// One decoded frame.
pub(crate) struct Frame {
    /// The record key it belongs to.
    pub(crate) key: u64,
    /// The packed record; empty for a tombstone.
    pub(crate) payload: Vec<u8>,
}

fn damaged(key: u64, reason: String) -> StoreError {
    StoreError::Corrupt { id: key, reason }
}

/// Parses the frame at the start of `bytes` (which must hold its head); answers the
/// frame, or how many bytes it needs in all when `bytes` is shorter.
pub(crate) fn parse(bytes: &[u8], at: u64) -> Result<Result<Frame, usize>, StoreError> {
    let head = bytes.get(..FRAME_HEAD).ok_or_else(|| {
        damaged(
            0,
            format!("frame at {at:#x} is cut short (segment damaged)"),
        )
    })?;
    let len = u32::from_le_bytes(head[0..4].try_into().expect("4 bytes")) as usize;
    let check = u32::from_le_bytes(head[4..8].try_into().expect("4 bytes"));
    let key = u64::from_le_bytes(head[8..16].try_into().expect("8 bytes"));
    let total = FRAME_HEAD + len;
    let Some(body) = bytes.get(8..total) else {
        return Ok(Err(total));
    };
    if crc32fast::hash(body) != check {
        return Err(damaged(
            key,
            format!("frame at {at:#x} fails its checksum (segment damaged)"),
        ));
    }
    Ok(Ok(Frame {
        key,
        payload: bytes[FRAME_HEAD..total].to_vec(),
    }))
}

/// The segment files of one store.
pub(crate) struct SegmentLog {
    dir: PathBuf,
    /// Segment `n` at index `n`; only the last one is written.
    files: RwLock<Vec<Arc<File>>>,
}

fn segment_path(dir: &Path, n: u32) -> PathBuf {
    dir.join(format!("seg-{n:06}"))
}

fn io(what: &str, path: &Path, e: std::io::Error) -> StoreError {
    StoreError::Backend(format!("cannot {what} {}: {e}", path.display()))
}

/// Opens segment `path` for reading and appending. On Linux with `O_NOATIME`: the file
/// is the server's own, and a redirect's read of a record then skips the access-time
/// check (~0.07 µs of each read, perf at 10 M links, bench/notes/runs.md). A file another
/// user owns refuses the flag, and is opened without it.
fn open_segment(path: &Path, create: bool) -> Result<File, StoreError> {
    let open = |flags: i32| {
        let mut options = OpenOptions::new();
        options
            .read(true)
            .write(true)
            .create(create)
            .truncate(false);
        std::os::unix::fs::OpenOptionsExt::custom_flags(&mut options, flags);
        options.open(path)
    };
    #[cfg(target_os = "linux")]
    let noatime = rustix::fs::OFlags::NOATIME.bits() as i32;
    #[cfg(not(target_os = "linux"))]
    let noatime = 0;
    match open(noatime) {
        Err(e) if noatime != 0 && e.kind() == std::io::ErrorKind::PermissionDenied => open(0),
        opened => opened,
    }
    .map_err(|e| io("open", path, e))
}

/// fsyncs a directory, so a file made in it survives a crash.
pub(crate) fn sync_dir(dir: &Path) -> Result<(), StoreError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| io("fsync", dir, e))
}

impl SegmentLog {
    /// Opens the segments of `dir` up to the committed end `end` (a location; `None`
    /// for a store with no segment yet): the last one is cut to `end`, later ones (made
    /// by a batch that never committed) are removed.
    pub(crate) fn open(dir: &Path, end: Option<u64>) -> Result<Self, StoreError> {
        std::fs::create_dir_all(dir).map_err(|e| io("create", dir, e))?;
        let (last, end_offset) = match end {
            Some(loc) => split(loc),
            None => (0, MAGIC.len() as u64),
        };
        let mut files = Vec::new();
        for n in 0..=last {
            let path = segment_path(dir, n);
            let file = open_segment(&path, end.is_none())?;
            if n == last {
                if end.is_none() {
                    file.set_len(0).map_err(|e| io("truncate", &path, e))?;
                    file.write_all_at(MAGIC, 0)
                        .map_err(|e| io("write", &path, e))?;
                    file.sync_all().map_err(|e| io("fsync", &path, e))?;
                    sync_dir(dir)?;
                } else {
                    let len = file.metadata().map_err(|e| io("stat", &path, e))?.len();
                    if len < end_offset {
                        return Err(StoreError::Backend(format!(
                            "{} is shorter ({len} bytes) than its committed end ({end_offset}): \
                             the segment was cut outside shardkit; restore the data directory \
                             from a backup",
                            path.display()
                        )));
                    }
                    if len > end_offset {
                        // A batch written but never committed (a crash before redb's commit).
                        file.set_len(end_offset)
                            .map_err(|e| io("truncate", &path, e))?;
                        file.sync_all().map_err(|e| io("fsync", &path, e))?;
                    }
                }
            }
            let mut magic = [0u8; 8];
            file.read_exact_at(&mut magic, 0)
                .map_err(|e| io("read", &path, e))?;
            if &magic != MAGIC {
                return Err(StoreError::Backend(format!(
                    "{} is not a shardkit link segment (bad magic)",
                    path.display()
                )));
            }
            files.push(Arc::new(file));
        }
        let mut n = last + 1;
        while segment_path(dir, n).exists() {
            let path = segment_path(dir, n);
            std::fs::remove_file(&path).map_err(|e| io("remove", &path, e))?;
            n += 1;
        }
        Ok(Self {
            dir: dir.to_path_buf(),
            files: RwLock::new(files),
        })
    }

    /// The location of the first frame the segments can hold (after the first
    /// segment's magic): a replay from here sees every frame.
    pub(crate) fn first_frame() -> u64 {
        location(0, MAGIC.len() as u64)
    }

    /// The location of the last segment's first frame (where a new store's records start).
    pub(crate) fn fresh_end(&self) -> u64 {
        let files = self.files.read().unwrap_or_else(|p| p.into_inner());
        location(files.len() as u32 - 1, MAGIC.len() as u64)
    }

    /// Starts segment `n` (the next one), empty but for its magic, durable.
    pub(crate) fn roll(&self) -> Result<u64, StoreError> {
        let mut files = self.files.write().unwrap_or_else(|p| p.into_inner());
        let n = files.len() as u32;
        let path = segment_path(&self.dir, n);
        let file = open_segment(&path, true)?;
        file.set_len(0).map_err(|e| io("truncate", &path, e))?;
        file.write_all_at(MAGIC, 0)
            .map_err(|e| io("write", &path, e))?;
        file.sync_all().map_err(|e| io("fsync", &path, e))?;
        sync_dir(&self.dir)?;
        files.push(Arc::new(file));
        Ok(location(n, MAGIC.len() as u64))
    }

    fn file(&self, segment: u32) -> Result<Arc<File>, StoreError> {
        let files = self.files.read().unwrap_or_else(|p| p.into_inner());
        files
            .get(segment as usize)
            .cloned()
            .ok_or_else(|| StoreError::Corrupt {
                id: 0,
                reason: format!("a location names segment {segment}, which does not exist"),
            })
    }

    /// Writes `bytes` at location `at` and fsyncs them: a batch's frames, before the
    /// commit that makes them count.
    pub(crate) fn append(&self, at: u64, bytes: &[u8]) -> Result<(), StoreError> {
        let (segment, offset) = split(at);
        let file = self.file(segment)?;
        let path = segment_path(&self.dir, segment);
        file.write_all_at(bytes, offset)
            .map_err(|e| io("write", &path, e))?;
        file.sync_data().map_err(|e| io("fsync", &path, e))
    }

    /// Cuts the last segment back to `end` (a batch whose commit failed).
    pub(crate) fn cut(&self, end: u64) -> Result<(), StoreError> {
        let (segment, offset) = split(end);
        let file = self.file(segment)?;
        file.set_len(offset)
            .map_err(|e| io("truncate", &segment_path(&self.dir, segment), e))
    }

    /// The frame at `loc`.
    pub(crate) fn read(&self, loc: u64) -> Result<Frame, StoreError> {
        self.read_with(loc, Wait::Disk)?
            .ok_or_else(|| StoreError::Backend("a read that may wait did not answer".into()))
    }

    /// [`SegmentLog::read`] from the kernel's page cache alone: `Ok(None)` when some of
    /// the frame would have to come from the disk (see `nowait.rs`).
    pub(crate) fn read_cached(&self, loc: u64) -> Result<Option<Frame>, StoreError> {
        self.read_with(loc, Wait::Never)
    }

    /// The frame at `loc`: a first read of `FIRST_READ` bytes, a second for the rest of
    /// a longer frame; `None` only when `wait` is [`Wait::Never`] and the disk was needed.
    fn read_with(&self, loc: u64, wait: Wait) -> Result<Option<Frame>, StoreError> {
        let (segment, offset) = split(loc);
        let file = self.file(segment)?;
        let path = || segment_path(&self.dir, segment);
        let read = |buf: &mut [u8], at: u64| {
            crate::nowait::read_at(&file, buf, at, wait).map_err(|e| io("read", &path(), e))
        };
        let mut buf = vec![0u8; FIRST_READ];
        let Some(got) = read(&mut buf, offset)? else {
            return Ok(None);
        };
        buf.truncate(got);
        match parse(&buf, loc)? {
            Ok(frame) => Ok(Some(frame)),
            Err(total) => {
                buf.resize(total, 0);
                let Some(more) = read(&mut buf[got..], offset + got as u64)? else {
                    return Ok(None);
                };
                if got + more < total {
                    // The file ends inside the frame.
                    let eof = std::io::Error::from(std::io::ErrorKind::UnexpectedEof);
                    return Err(io("read", &path(), eof));
                }
                parse(&buf, loc)?
                    .map(Some)
                    .map_err(|_| damaged(0, "frame cut short".into()))
            }
        }
    }

    /// Every frame from location `from` to `end`, with its location, in order (the
    /// replay of what the offset index may not hold yet).
    pub(crate) fn scan(
        &self,
        from: u64,
        end: u64,
        mut each: impl FnMut(u64, Frame) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        let (first, mut offset) = split(from);
        let (last, end_offset) = split(end);
        for segment in first..=last {
            let file = self.file(segment)?;
            let stop = if segment == last {
                end_offset
            } else {
                file.metadata()
                    .map_err(|e| io("stat", &segment_path(&self.dir, segment), e))?
                    .len()
            };
            let mut bytes = vec![0u8; (stop.saturating_sub(offset)) as usize];
            file.read_exact_at(&mut bytes, offset)
                .map_err(|e| io("read", &segment_path(&self.dir, segment), e))?;
            let mut at = 0usize;
            while at < bytes.len() {
                let loc = location(segment, offset + at as u64);
                let frame = parse(&bytes[at..], loc)?
                    .map_err(|_| damaged(0, format!("frame at {loc:#x} is cut short")))?;
                at += FRAME_HEAD + frame.payload.len();
                each(loc, frame)?;
            }
            offset = MAGIC.len() as u64;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_round_trip_and_an_uncommitted_tail_is_cut_on_open() {
        let dir = tempfile::tempdir().unwrap();
        let log = SegmentLog::open(dir.path(), None).unwrap();
        let start = log.fresh_end();
        let mut bytes = Vec::new();
        push_frame(&mut bytes, 7, b"hello");
        push_frame(&mut bytes, 9, &[]);
        let long = vec![b'x'; 1000];
        let third = start + bytes.len() as u64;
        push_frame(&mut bytes, 11, &long);
        log.append(start, &bytes).unwrap();
        let committed = start + bytes.len() as u64;
        assert_eq!(log.read(start).unwrap().payload, b"hello");
        assert_eq!(log.read(third).unwrap().payload, long);
        // A batch written but not committed, then a crash.
        let mut tail = Vec::new();
        push_frame(&mut tail, 13, b"never committed");
        log.append(committed, &tail[..20]).unwrap();
        drop(log);
        let log = SegmentLog::open(dir.path(), Some(committed)).unwrap();
        let mut seen = Vec::new();
        log.scan(start, committed, |_, f| {
            seen.push((f.key, f.payload.len()));
            Ok(())
        })
        .unwrap();
        assert_eq!(seen, [(7, 5), (9, 0), (11, 1000)]);
        let len = std::fs::metadata(dir.path().join("seg-000000"))
            .unwrap()
            .len();
        assert_eq!(len, split(committed).1);
        // A flipped byte is a damaged record, not a wrong link or a panic.
        let file = OpenOptions::new()
            .write(true)
            .open(dir.path().join("seg-000000"))
            .unwrap();
        file.write_all_at(b"J", split(start).1 + 17).unwrap();
        assert!(matches!(log.read(start), Err(StoreError::Corrupt { .. })));
        // A second segment, and its removal when its batch never committed.
        let next = log.roll().unwrap();
        assert_eq!(split(next), (1, 8));
        drop(log);
        let _log = SegmentLog::open(dir.path(), Some(committed)).unwrap();
        assert!(!dir.path().join("seg-000001").exists());
    }
}

//! Reading a snapshot back ([`crate::snapshot`] writes them) without holding it in memory.
//!
//! Exists because recovery used to read the whole file and copy every frame: at a
//! billion rows under a 2 GiB cap the 1.9 GB snapshot sat in memory twice beside the
//! rows being loaded from it. Now one pass streams the file, checks every frame's
//! checksum and keeps the small frames (counters, transaction ids, cold partitions);
//! a row frame (`3`, `8` or `10`, nearly all of the bytes) is kept as where it is, and recovery
//! reads the row frames of one stripe at a time ([`read_rows`]), checking them again.

use std::fs::File;
use std::io::{BufReader, Read};
use std::os::unix::fs::FileExt;
use std::path::Path;

use crate::codec::{crc, read_full, FrameReader, NextFrame, Reader};
use crate::snapshot::{MAGIC, MAGIC_1};
use crate::Dropped;

/// A frame of a snapshot read back.
pub(crate) enum SnapFrame {
    /// Any frame but a row frame: its payload.
    Kept(Vec<u8>),
    /// A row frame: its head, and where its payload is in the file.
    Rows(RowFrame),
}

/// Where a row frame (`3`, `8` or `10`) is, and the head fields recovery sorts it by.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RowFrame {
    /// The counter's index in this snapshot.
    pub idx: u64,
    /// The stripe it is a copy of.
    pub stripe: usize,
    /// The stripe's lsn at its copy.
    pub lsn: u64,
    /// Offset of the payload in the file.
    pub offset: u64,
    /// Payload length.
    pub len: u32,
    /// The payload's CRC32, checked again when it is read.
    pub crc: u32,
}

/// A snapshot read back: its frames, and whether it is whole.
pub(crate) struct Parsed {
    /// The rotation point X from the header.
    pub x: u64,
    /// Stripes per counter from the header.
    pub stripes: usize,
    /// Good frames after the header, in file order (end frame excluded).
    pub frames: Vec<SnapFrame>,
    /// Set when the file is not whole: what was cut.
    pub dropped: Option<Dropped>,
}

impl Parsed {
    /// The payloads of every frame but the row frames, in file order.
    pub(crate) fn kept(&self) -> impl Iterator<Item = &[u8]> {
        self.frames.iter().filter_map(|f| match f {
            SnapFrame::Kept(p) => Some(p.as_slice()),
            SnapFrame::Rows(_) => None,
        })
    }
}

/// Reads and checks snapshot `bytes` (held by the caller). `None` when not even the
/// header is usable.
pub(crate) fn parse(path: &Path, bytes: &[u8]) -> Option<Parsed> {
    // Reading from memory cannot fail.
    parse_from(path, bytes, bytes.len() as u64).ok().flatten()
}

/// Reads and checks the snapshot file at `path`, keeping only its small frames.
/// `Ok(None)` when not even the header is usable.
pub(crate) fn parse_file(path: &Path) -> std::io::Result<Option<Parsed>> {
    let file = File::open(path)?;
    let len = file.metadata()?.len();
    parse_from(path, BufReader::with_capacity(1 << 20, file), len)
}

/// The head of a row frame, if `payload` is one whose head reads.
fn row_head(payload: &[u8]) -> Option<(u64, usize, u64)> {
    let mut r = Reader::new(payload);
    if !matches!(r.u8()?, 3 | 8 | 10) {
        return None;
    }
    Some((r.var()?, usize::try_from(r.var()?).ok()?, r.u64()?))
}

fn parse_from(path: &Path, mut input: impl Read, len: u64) -> std::io::Result<Option<Parsed>> {
    let mut magic = [0u8; 8];
    if read_full(&mut input, &mut magic)? != 8 || (&magic != MAGIC && &magic != MAGIC_1) {
        return Ok(None);
    }
    let mut frames = FrameReader::new(input, MAGIC.len() as u64, len);
    let mut buf = Vec::new();
    let NextFrame::Frame { .. } = frames.next(&mut buf)? else {
        return Ok(None);
    };
    let head = (|| {
        let mut h = Reader::new(&buf);
        if h.u8()? != 1 {
            return None;
        }
        Some((h.u64()?, usize::try_from(h.var()?).ok()?))
    })();
    let Some((x, stripes)) = head else {
        return Ok(None);
    };
    let mut parsed = Parsed {
        x,
        stripes,
        frames: Vec::new(),
        dropped: None,
    };
    loop {
        let good = frames.pos();
        let cut = |reason: String, bytes: u64| {
            Some(Dropped {
                file: path.to_path_buf(),
                offset: good,
                bytes,
                reason,
            })
        };
        match frames.next(&mut buf)? {
            NextFrame::End => {
                parsed.dropped = cut("snapshot ends before its end frame (torn write)".into(), 0);
                return Ok(Some(parsed));
            }
            NextFrame::Bad(why) => {
                parsed.dropped = cut(format!("snapshot frame damaged: {why}"), len - good);
                return Ok(Some(parsed));
            }
            NextFrame::Frame { .. } if buf.first() == Some(&9) => {
                let mut e = Reader::new(&buf[1..]);
                let counted = e.var() == Some(parsed.frames.len() as u64 + 1);
                let nothing_after = matches!(frames.next(&mut buf)?, NextFrame::End);
                if !(counted && nothing_after) {
                    parsed.dropped = cut(
                        "snapshot end frame does not match its contents".into(),
                        len - good,
                    );
                }
                return Ok(Some(parsed));
            }
            NextFrame::Frame { at, crc } => parsed.frames.push(match row_head(&buf) {
                Some((idx, stripe, lsn)) => SnapFrame::Rows(RowFrame {
                    idx,
                    stripe,
                    lsn,
                    offset: at,
                    len: buf.len() as u32,
                    crc,
                }),
                None => SnapFrame::Kept(buf.clone()),
            }),
        }
    }
}

/// Reads the payload of row frame `f` of `file` again, checking it is what the parse
/// saw; `None` if it no longer is (or cannot be read).
pub(crate) fn read_rows(file: &File, f: &RowFrame) -> Option<Vec<u8>> {
    let mut payload = vec![0; f.len as usize];
    file.read_exact_at(&mut payload, f.offset).ok()?;
    (crc(&payload) == f.crc).then_some(payload)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::{frame, Put};

    /// A snapshot by hand: header, one row frame, one other frame, the end frame.
    fn snapshot_bytes() -> Vec<u8> {
        let mut out = MAGIC.to_vec();
        let mut head = vec![1u8];
        head.put_u64(42);
        head.put_var(32);
        frame(&mut out, &head);
        let mut rows = vec![3u8];
        rows.put_var(0);
        rows.put_var(5);
        rows.put_u64(77);
        rows.extend_from_slice(&[9; 100]);
        frame(&mut out, &rows);
        frame(&mut out, &[2, 0, 1, b'c', 0]);
        let mut end = vec![9u8];
        end.put_var(3);
        frame(&mut out, &end);
        out
    }

    #[test]
    fn row_frames_are_kept_as_places_and_read_back_checked() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("snap.snap");
        let bytes = snapshot_bytes();
        std::fs::write(&path, &bytes).unwrap();
        let p = parse_file(&path).unwrap().unwrap();
        assert!(p.dropped.is_none());
        assert_eq!((p.x, p.stripes, p.frames.len()), (42, 32, 2));
        let SnapFrame::Rows(rows) = p.frames[0] else {
            panic!("the row frame was kept whole");
        };
        assert_eq!((rows.idx, rows.stripe, rows.lsn), (0, 5, 77));
        assert_eq!(p.kept().collect::<Vec<_>>(), vec![&[2, 0, 1, b'c', 0][..]]);
        let file = File::open(&path).unwrap();
        let payload = read_rows(&file, &rows).unwrap();
        assert_eq!(payload[0], 3);
        assert_eq!(&payload[payload.len() - 100..], &[9; 100][..]);
        // Changed after the check: refused, not loaded.
        let mut changed = bytes.clone();
        changed[rows.offset as usize + 50] ^= 1;
        std::fs::write(&path, &changed).unwrap();
        assert!(read_rows(&File::open(&path).unwrap(), &rows).is_none());
    }

    #[test]
    fn a_torn_damaged_or_overlong_file_is_cut_where_it_stops_being_good() {
        let bytes = snapshot_bytes();
        let whole = parse(Path::new("s"), &bytes).unwrap();
        assert!(whole.dropped.is_none());
        // Bytes after the end frame.
        let mut longer = bytes.clone();
        longer.extend_from_slice(&[0; 3]);
        let d = parse(Path::new("s"), &longer).unwrap().dropped.unwrap();
        assert!(d.reason.contains("end frame does not match"), "{d:?}");
        // Torn inside the last frame: the two good frames stay.
        let torn = parse(Path::new("s"), &bytes[..bytes.len() - 2]).unwrap();
        assert_eq!(torn.frames.len(), 2);
        assert!(torn.dropped.unwrap().reason.contains("torn"));
        // A flipped byte in the row frame: nothing after the header is kept.
        let mut flipped = bytes.clone();
        flipped[40] ^= 0x10;
        let bad = parse(Path::new("s"), &flipped).unwrap();
        assert!(bad.frames.is_empty());
        let d = bad.dropped.unwrap();
        assert!(d.reason.contains("checksum"), "{d:?}");
        assert_eq!(d.bytes, bytes.len() as u64 - d.offset);
        // The first format's magic (rows in frames `3` alone) reads as well.
        let mut first = bytes.clone();
        first[..8].copy_from_slice(MAGIC_1);
        let old = parse(Path::new("s"), &first).unwrap();
        assert!(old.dropped.is_none() && old.frames.len() == 2);
        // Not a snapshot.
        assert!(parse(Path::new("s"), b"SKCSNAP0").is_none());
        assert!(parse(Path::new("s"), b"SKCSNAP3").is_none());
        assert!(parse(Path::new("s"), &bytes[..10]).is_none());
    }
}

//! Reads that never wait for the disk, for the redirect's path on the async runtime.
//!
//! Exists because a redirect runs on one of the runtime's few threads: a `pread` of a
//! page the kernel holds costs about a microsecond, one it must fetch from the disk
//! holds the thread, and every connection queued on it, for the disk's latency. At 100 M
//! links (9.4 GB of segment files) a uniform draw misses the page cache most of the
//! time, and the two runtime threads reading in place served 10.7 k redirects/s
//! (bench/notes/runs.md). `preadv2(RWF_NOWAIT)` (Linux 4.14) reads only what the
//! page cache holds and answers `EAGAIN` otherwise, so the caller reads in place when
//! that is cheap and hands the read to a thread that may block only when it is not.
//! Where that flag does not exist (another OS, a file system without it) every read
//! says it would block: the caller then always takes the blocking path, slower, never
//! wrong.

use std::fs::File;
use std::os::unix::fs::FileExt;

/// Whether a read may wait for the disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wait {
    /// A plain `pread`: always answers.
    Disk,
    /// From the page cache alone ([`read_cached`]).
    Never,
}

/// Reads into `buf` at `offset` until it is full or the file ends: `Some(n)`, the bytes
/// read, or (with [`Wait::Never`] only) `None` when some would come from the disk.
pub(crate) fn read_at(
    file: &File,
    buf: &mut [u8],
    offset: u64,
    wait: Wait,
) -> std::io::Result<Option<usize>> {
    if wait == Wait::Never {
        return read_cached(file, buf, offset);
    }
    let mut got = 0;
    while got < buf.len() {
        match file.read_at(&mut buf[got..], offset + got as u64) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(Some(got))
}

/// Reads into `buf` at `offset` from the kernel's page cache alone: `Some(n)`, the bytes
/// read (fewer than `buf.len()` only at the file's end), or `None` when some of them
/// would have to come from the disk.
fn read_cached(file: &File, buf: &mut [u8], offset: u64) -> std::io::Result<Option<usize>> {
    #[cfg(target_os = "linux")]
    {
        use rustix::io::{preadv2, Errno, ReadWriteFlags};
        let mut got = 0;
        while got < buf.len() {
            let mut parts = [std::io::IoSliceMut::new(&mut buf[got..])];
            match preadv2(
                file,
                &mut parts,
                offset + got as u64,
                ReadWriteFlags::NOWAIT,
            ) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(Errno::INTR) => {}
                // Not cached, or the flag is not known here: the caller reads blocking.
                Err(Errno::AGAIN | Errno::OPNOTSUPP | Errno::NOSYS | Errno::INVAL) => {
                    return Ok(None)
                }
                Err(e) => return Err(e.into()),
            }
        }
        Ok(Some(got))
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (file, buf, offset);
        Ok(None)
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn cached_pages_are_read_and_pages_the_kernel_dropped_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let mut file = File::create(&path).unwrap();
        let data: Vec<u8> = (0..1 << 20).map(|i| (i * 7 % 251) as u8).collect();
        file.write_all(&data).unwrap();
        file.sync_all().unwrap();
        let file = File::open(&path).unwrap();
        let mut buf = vec![0u8; 5000];
        // Just written: in the page cache.
        assert_eq!(read_cached(&file, &mut buf, 100_000).unwrap(), Some(5000));
        assert_eq!(buf, data[100_000..105_000]);
        // Past the end: what there is.
        assert_eq!(
            read_cached(&file, &mut buf, (1 << 20) - 10).unwrap(),
            Some(10)
        );
        assert_eq!(buf[..10], data[(1 << 20) - 10..]);
        // Clean pages the kernel is told to drop: no longer cached, so refused, while a
        // blocking read still gets them. The advice skips pages still in another CPU's
        // batch of pages on their way to the LRU lists (seen under a loaded test run):
        // it is given again, a bounded number of times, until they are gone.
        let mut refused = false;
        for _ in 0..100 {
            rustix::fs::fadvise(&file, 0, None, rustix::fs::Advice::DontNeed).unwrap();
            if read_cached(&file, &mut buf, 600_000).unwrap().is_none() {
                refused = true;
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert!(
            refused,
            "pages dropped from the page cache were read without waiting"
        );
        file.read_exact_at(&mut buf, 600_000).unwrap();
        assert_eq!(buf, data[600_000..605_000]);
        assert_eq!(read_cached(&file, &mut buf, 600_000).unwrap(), Some(5000));
    }
}

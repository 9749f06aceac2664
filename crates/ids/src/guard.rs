//! The durable time guard: a file holding a high-water mark of wall-clock time up to
//! which ids may have been issued, written and fsynced *before* any id past it.
//!
//! After a crash, a generator restarts at that mark, so even if the machine's clock
//! now reads earlier (NTP stepped it back while the process was down) no id is issued
//! twice. A clean shutdown writes the exact last issued time instead, so a quick
//! restart does not have to wait out the window.
//!
//! The file is replaced atomically (write a temporary file, fsync, rename, fsync the
//! directory), so a crash leaves either the old mark or the new one, never a torn one.
//! A renewer thread moves the mark ahead every half window so the id hot path only
//! touches the disk if the renewer falls behind.

use crate::clock::Clock;
use crate::error::GenerateError;
use parking_lot::Mutex;
use std::fs::{self, File, OpenOptions, TryLockError};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

const HEADER: &str = "shardkit-time-guard v1 limit_unix_ms=";

/// The mark and how to move it, shared with the renewer thread.
#[derive(Debug)]
struct Shared {
    path: PathBuf,
    /// Ids may be issued for times strictly below this (Unix ms).
    limit_unix_ms: AtomicU64,
    /// Serialises writers of the file.
    write: Mutex<()>,
    window_ms: u64,
}

/// An open time guard. Holds `<path>.lock` for its lifetime.
#[derive(Debug)]
pub(crate) struct TimeGuard {
    shared: Arc<Shared>,
    stop: Option<Sender<()>>,
    renewer: Option<JoinHandle<()>>,
    _lock: File,
}

impl TimeGuard {
    /// Opens (or creates) the guard at `path`, takes its lock and starts the renewer.
    /// Returns the guard and the mark found on disk (0 for a new guard).
    pub fn open<C: Clock>(
        path: &Path,
        window: Duration,
        clock: C,
    ) -> Result<(Self, u64), GenerateError> {
        let io_err = |source| GenerateError::Guard {
            path: path.to_path_buf(),
            source,
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            fs::create_dir_all(dir).map_err(io_err)?;
        }
        let lock_path = lock_path_of(path);
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(io_err)?;
        match lock.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                return Err(GenerateError::GuardInUse(path.to_path_buf()))
            }
            Err(TryLockError::Error(e)) => return Err(io_err(e)),
        }
        let found = read_mark(path)?;
        let shared = Arc::new(Shared {
            path: path.to_path_buf(),
            limit_unix_ms: AtomicU64::new(found),
            write: Mutex::new(()),
            window_ms: window.as_millis().max(2) as u64,
        });
        shared
            .extend_to(clock.unix_ms().max(found) + shared.window_ms)
            .map_err(io_err)?;
        let (stop, stopped) = mpsc::channel::<()>();
        let renewer_shared = Arc::clone(&shared);
        let interval = Duration::from_millis(shared.window_ms / 2);
        let renewer = std::thread::Builder::new()
            .name("shardkit-time-guard".into())
            .spawn(move || loop {
                match stopped.recv_timeout(interval) {
                    Err(RecvTimeoutError::Timeout) => {
                        // A failed renewal is retried next tick; if the mark runs out
                        // the hot path extends it itself and reports the error.
                        let _ =
                            renewer_shared.extend_to(clock.unix_ms() + renewer_shared.window_ms);
                    }
                    _ => return,
                }
            })
            .map_err(io_err)?;
        Ok((
            Self {
                shared,
                stop: Some(stop),
                renewer: Some(renewer),
                _lock: lock,
            },
            found,
        ))
    }

    /// Makes sure ids may be issued for all times below `needed_unix_ms`, writing a new
    /// mark (a window further on) if the current one is too low.
    #[inline]
    pub fn ensure(&self, needed_unix_ms: u64, now_unix_ms: u64) -> Result<(), GenerateError> {
        if needed_unix_ms <= self.shared.limit_unix_ms.load(Ordering::Acquire) {
            return Ok(());
        }
        self.shared
            .extend_to(needed_unix_ms.max(now_unix_ms) + self.shared.window_ms)
            .map_err(|source| GenerateError::Guard {
                path: self.shared.path.clone(),
                source,
            })
    }

    /// Clean shutdown: stops the renewer and writes the exact mark `end_unix_ms` (the
    /// end of the last issued time unit), so the next start need not wait.
    pub fn close(mut self, end_unix_ms: u64) -> std::io::Result<()> {
        self.stop_renewer();
        let _w = self.shared.write.lock();
        write_mark(&self.shared.path, end_unix_ms)
    }

    /// Stops without writing anything, as a crash would (tests only).
    pub fn abandon(mut self) {
        self.stop_renewer();
    }

    fn stop_renewer(&mut self) {
        drop(self.stop.take());
        if let Some(handle) = self.renewer.take() {
            let _ = handle.join();
        }
    }
}

impl Drop for TimeGuard {
    fn drop(&mut self) {
        self.stop_renewer();
    }
}

impl Shared {
    /// Raises the mark to `target` if it is lower: file first, memory second.
    fn extend_to(&self, target: u64) -> std::io::Result<()> {
        let _w = self.write.lock();
        if target <= self.limit_unix_ms.load(Ordering::Acquire) {
            return Ok(());
        }
        write_mark(&self.path, target)?;
        self.limit_unix_ms.store(target, Ordering::Release);
        Ok(())
    }
}

fn lock_path_of(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".lock");
    PathBuf::from(name)
}

/// Reads the mark; a missing file is a new guard (mark 0).
fn read_mark(path: &Path) -> Result<u64, GenerateError> {
    let text = match fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(source) => {
            return Err(GenerateError::Guard {
                path: path.to_path_buf(),
                source,
            })
        }
    };
    let corrupt = |reason: &str| GenerateError::GuardCorrupt {
        path: path.to_path_buf(),
        reason: reason.to_string(),
    };
    let value = text
        .trim_end()
        .strip_prefix(HEADER)
        .ok_or_else(|| corrupt("it does not start with the shardkit time-guard header"))?;
    value
        .parse::<u64>()
        .map_err(|_| corrupt("its mark is not a number"))
}

/// Replaces the guard file atomically and durably.
fn write_mark(path: &Path, unix_ms: u64) -> std::io::Result<()> {
    crate::durable_file::replace_durably(path, format!("{HEADER}{unix_ms}\n").as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::ManualClock;

    #[test]
    fn mark_is_written_ahead_and_kept_after_a_crash() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ids.guard");
        let clock = ManualClock::new(10_000);
        let (guard, found) = TimeGuard::open(&path, Duration::from_secs(2), clock.clone()).unwrap();
        assert_eq!(found, 0);
        assert_eq!(read_mark(&path).unwrap(), 12_000);
        guard.ensure(15_000, 10_000).unwrap();
        assert_eq!(read_mark(&path).unwrap(), 17_000);
        guard.abandon();
        let (_guard, found) = TimeGuard::open(&path, Duration::from_secs(2), clock).unwrap();
        assert_eq!(found, 17_000);
    }

    #[test]
    fn a_second_guard_on_the_same_file_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ids.guard");
        let (_first, _) =
            TimeGuard::open(&path, Duration::from_secs(2), ManualClock::new(1)).unwrap();
        let second = TimeGuard::open(&path, Duration::from_secs(2), ManualClock::new(1));
        assert!(matches!(second, Err(GenerateError::GuardInUse(_))));
    }

    #[test]
    fn a_corrupt_guard_is_reported_not_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ids.guard");
        fs::write(&path, "hello").unwrap();
        let opened = TimeGuard::open(&path, Duration::from_secs(2), ManualClock::new(1));
        assert!(matches!(opened, Err(GenerateError::GuardCorrupt { .. })));
    }

    #[test]
    fn clean_close_writes_the_exact_mark() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ids.guard");
        let (guard, _) =
            TimeGuard::open(&path, Duration::from_secs(2), ManualClock::new(5_000)).unwrap();
        guard.close(5_001).unwrap();
        assert_eq!(read_mark(&path).unwrap(), 5_001);
    }
}

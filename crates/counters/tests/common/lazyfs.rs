//! A LazyFS mount for power-loss tests.
//!
//! LazyFS (a FUSE file system) keeps every written byte in its own cache until the file
//! is fsynced, and drops whatever is still unsynced when told `lazyfs::clear-cache`
//! through its fault fifo: what a power cut does to a page cache. `scripts/lazyfs`
//! builds it from the copy in `third_party/lazyfs`; the tests use the executable named
//! by `SHARDKIT_LAZYFS` and skip without it, unless `SHARDKIT_REQUIRE_LAZYFS=1` (set by
//! `scripts/test`) makes a missing one a failure.
//!
//! LazyFS only models data: creates, renames, unlinks and truncates go straight to the
//! file system under it, so a cut never undoes one of those.

use std::fs::{File, OpenOptions};
use std::io::{ErrorKind, Read, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The environment variable naming the LazyFS executable (`scripts/lazyfs` prints the
/// path of the one it builds), so whoever runs these tests says where theirs is.
pub const ENV: &str = "SHARDKIT_LAZYFS";

/// Set to `1` (as `scripts/test` does), a missing [`ENV`] fails the test instead of
/// skipping it: under the test command a power-loss test can never pass vacuously.
pub const REQUIRE_ENV: &str = "SHARDKIT_REQUIRE_LAZYFS";

/// How long mounting, a fault command or unmounting may take before the test gives up
/// (each is milliseconds when LazyFS works: a hang is a broken setup, not a slow one).
const PATIENCE: Duration = Duration::from_secs(15);

/// The LazyFS executable from [`ENV`], or `None` after printing why the test skips.
/// Exists so every power-loss test skips the same way on machines without LazyFS and
/// fails loudly where it is named but missing, or missing while [`REQUIRE_ENV`] is `1`.
pub fn binary(test: &str) -> Option<PathBuf> {
    let required = std::env::var_os(REQUIRE_ENV).is_some_and(|v| v == "1");
    match std::env::var_os(ENV).filter(|p| !p.is_empty()) {
        None => {
            assert!(
                !required,
                "{test}: {ENV} is not set (path to a LazyFS executable) but \
                 {REQUIRE_ENV}=1 forbids skipping: run `bash scripts/test`, or set \
                 {ENV}=$(bash scripts/lazyfs)"
            );
            println!("{test}: skipped: {ENV} is not set (path to a LazyFS executable)");
            None
        }
        Some(p) => {
            let p = PathBuf::from(p);
            assert!(
                p.is_file(),
                "{ENV}={} is not a file (`bash scripts/lazyfs` builds one)",
                p.display()
            );
            Some(p)
        }
    }
}

/// A LazyFS mounted over a fresh temporary directory, with its fault fifos open, so a
/// test can cut the power under a writer at the moment it picks.
pub struct LazyFs {
    /// Fault commands go in here.
    faults: File,
    /// LazyFS answers `finished::clear-cache` here once the cache is dropped.
    done: File,
    /// What `done` has said that is not yet a whole line.
    heard: String,
    /// Dropped last: unmounts.
    daemon: Daemon,
}

/// The running daemon, unmounted when dropped (also while a failed test unwinds), so no
/// test leaves a mount or a process behind.
struct Daemon {
    /// Where the test reads and writes: everything under it goes through LazyFS.
    mnt: PathBuf,
    /// Run in the foreground so it is this process's child and ends with the unmount.
    child: Child,
    /// Holds the config, fifos, root, mount point and LazyFS's output; dropped last.
    dir: tempfile::TempDir,
}

impl LazyFs {
    /// Mounts `bin` over a new temporary root and checks that it really drops unsynced
    /// data (a write never fsynced must be gone after [`LazyFs::cut_power`]), so a
    /// wrong `SHARDKIT_LAZYFS` fails here rather than passing every test vacuously.
    pub fn mount(bin: &Path) -> LazyFs {
        let dir = tempfile::Builder::new()
            // No "-o" anywhere in the path: LazyFS takes a `--config-path` that
            // contains it (any case) for a mount option and falls back to its default.
            .prefix("shardkit_lazyfs_")
            .tempdir()
            .unwrap();
        let (root, mnt) = (dir.path().join("root"), dir.path().join("mnt"));
        std::fs::create_dir(&root).unwrap();
        std::fs::create_dir(&mnt).unwrap();
        let (faults, done) = (dir.path().join("faults.fifo"), dir.path().join("done.fifo"));
        let config = dir.path().join("lazyfs.toml");
        // No eviction: a full cache would write straight through to the disk and make
        // the cut lose less than it should; 256 MiB is far above what a test keeps
        // unsynced.
        std::fs::write(
            &config,
            format!(
                "[faults]\nfifo_path=\"{}\"\nfifo_path_completed=\"{}\"\n\
                 [cache]\napply_eviction=false\n\
                 [cache.simple]\ncustom_size=\"256mb\"\nblocks_per_page=1\n\
                 [filesystem]\nlog_all_operations=false\nlogfile=\"\"\n",
                faults.display(),
                done.display(),
            ),
        )
        .unwrap();
        // Its log goes to stdout (an empty `logfile`): one file to show when it fails.
        let out = File::create(dir.path().join("daemon.out")).unwrap();
        let child = Command::new(bin)
            .arg(&mnt)
            .arg("--config-path")
            .arg(&config)
            .args(["-o", "modules=subdir", "-o"])
            .arg(format!("subdir={}", root.display()))
            .arg("-f")
            .stdin(Stdio::null())
            .stdout(out.try_clone().unwrap())
            .stderr(out)
            .spawn()
            .unwrap_or_else(|e| panic!("{ENV}={}: cannot start: {e}", bin.display()));
        let mut daemon = Daemon { mnt, child, dir };
        daemon.wait_mounted();
        // The fault worker opens the answer fifo for writing only once someone reads it,
        // and reads commands only after that: open ours without blocking on it.
        let done = daemon.retry("open the answer fifo", || {
            OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_NONBLOCK)
                .open(&done)
        });
        let faults = daemon.retry("open the fault fifo", || {
            OpenOptions::new()
                .write(true)
                .custom_flags(libc::O_NONBLOCK)
                .open(&faults)
        });
        let mut fs = LazyFs {
            faults,
            done,
            heard: String::new(),
            daemon,
        };
        fs.check_drops_unsynced();
        fs
    }

    /// The mounted directory: only what is written under it is subject to the cut.
    pub fn path(&self) -> &Path {
        &self.daemon.mnt
    }

    /// Drops every byte not yet fsynced, as a power cut would, and returns once LazyFS
    /// says it is done. Kill the writers first: what they write afterwards is new data.
    pub fn cut_power(&mut self) {
        self.faults
            .write_all(b"lazyfs::clear-cache\n")
            .expect("send clear-cache to LazyFS");
        let deadline = Instant::now() + PATIENCE;
        loop {
            if let Some(i) = self.heard.find('\n') {
                let line: String = self.heard.drain(..=i).collect();
                if line.trim() == "finished::clear-cache" {
                    return;
                }
                continue;
            }
            let mut buf = [0u8; 256];
            match self.done.read(&mut buf) {
                Ok(n) if n > 0 => self.heard.push_str(&String::from_utf8_lossy(&buf[..n])),
                // 0: the worker has not opened its end yet; WouldBlock: no answer yet.
                Ok(_) => {}
                Err(e) if e.kind() == ErrorKind::WouldBlock => {}
                Err(e) => panic!("reading LazyFS's answer: {e}"),
            }
            assert!(
                Instant::now() < deadline,
                "LazyFS did not finish clear-cache in {PATIENCE:?}; {}",
                self.daemon.log_tail()
            );
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// A written, never-fsynced file must come back empty after a cut.
    fn check_drops_unsynced(&mut self) {
        let canary = self.path().join("canary");
        std::fs::write(&canary, [7u8; 8192]).unwrap();
        self.cut_power();
        let len = std::fs::metadata(&canary).unwrap().len();
        assert_eq!(
            len, 0,
            "{ENV}: unsynced bytes survived clear-cache: not a LazyFS?"
        );
        std::fs::remove_file(&canary).unwrap();
    }
}

impl Daemon {
    /// Waits until the mount point is a different file system from its parent.
    fn wait_mounted(&mut self) {
        let parent = std::fs::metadata(self.dir.path()).unwrap().dev();
        let deadline = Instant::now() + PATIENCE;
        loop {
            if std::fs::metadata(&self.mnt).is_ok_and(|m| m.dev() != parent) {
                return;
            }
            if let Some(status) = self.child.try_wait().unwrap() {
                panic!(
                    "LazyFS exited ({status}) before mounting; {}",
                    self.log_tail()
                );
            }
            assert!(
                Instant::now() < deadline,
                "LazyFS did not mount; {}",
                self.log_tail()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Calls `open` until it succeeds (a fifo whose other end is not there yet).
    fn retry(&self, what: &str, mut open: impl FnMut() -> std::io::Result<File>) -> File {
        let deadline = Instant::now() + PATIENCE;
        loop {
            match open() {
                Ok(f) => return f,
                Err(e) if Instant::now() >= deadline => {
                    panic!("cannot {what}: {e}; {}", self.log_tail())
                }
                Err(_) => std::thread::sleep(Duration::from_millis(10)),
            }
        }
    }

    /// The end of the daemon's output, for failure messages.
    fn log_tail(&self) -> String {
        let out = std::fs::read_to_string(self.dir.path().join("daemon.out")).unwrap_or_default();
        let tail: Vec<&str> = out.lines().rev().take(15).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        format!("LazyFS said:\n{}", tail.join("\n"))
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        // A lazy unmount if the plain one is refused (a file still open after a
        // failure), so the mount always goes and the temporary directory with it.
        let plain = Command::new("fusermount3")
            .arg("-u")
            .arg(&self.mnt)
            .status();
        if !plain.is_ok_and(|s| s.success()) {
            let _ = Command::new("fusermount3")
                .arg("-uz")
                .arg(&self.mnt)
                .status();
        }
        // Once unmounted the daemon has nothing left to keep, but LazyFS aborts as it
        // exits (its fault thread is never joined), which has taken from milliseconds
        // to over 15 s here: a short grace, then SIGKILL.
        let deadline = Instant::now() + Duration::from_secs(1);
        while matches!(self.child.try_wait(), Ok(None)) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

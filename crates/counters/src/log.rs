//! The append log: framed records in numbered segment files, with group commit.
//!
//! Writers append a record to an in-memory buffer while they hold their row's stripe
//! lock (so the log order of two mutations of one row is the order they were applied),
//! then, after releasing it, call [`Log::commit`]. Under [`FsyncPolicy::Always`] commit
//! returns only once the record is on disk: the first committer takes the whole buffer,
//! writes it and calls `fdatasync`; everyone who appended meanwhile waits on the same
//! file lock and finds their record already durable, so many writers share one fsync.
//!
//! Segment files are named `log-<first lsn, 20 digits>.log`. A segment ends only at a
//! [`Log::rotate`], which the snapshotter calls, so a snapshot at rotation point X makes
//! every older segment unnecessary.
//!
//! With a [`LogOfRecord`] attached (the server's JetStream mode), every batch the log
//! writes out is also handed to it, in lsn order under the segment lock, and a record
//! counts as durable only once the log of record accepted its batch: group commit then
//! costs one publish per batch. A refused batch fails the log like a failed fsync.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use parking_lot::Mutex;

use crate::codec::{crc, Put};
use crate::error::{io_err, Error, Result};
use crate::record::encode_head;
use crate::LogOfRecord;

/// When the log is flushed to stable storage, as in Redis's `appendfsync`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FsyncPolicy {
    /// Every acknowledged mutation is on disk (fsync before returning; concurrent
    /// mutations share one fsync). The default: no acknowledged increment is lost.
    #[default]
    Always,
    /// The log is written and fsynced once a second: a crash of the machine loses up to
    /// about a second of acknowledged mutations, a crash of the process loses none that
    /// were written.
    EverySec,
    /// The log is written once a second and never fsynced: the OS decides.
    No,
}

/// Buffer size past which a non-`Always` commit writes the buffer out at once.
const FLUSH_AT: usize = 1 << 20;

struct Pending {
    buf: Vec<u8>,
    next_lsn: u64,
}

/// The log's buffer held for appends ([`Log::batch`]); released when dropped.
pub(crate) struct LogBatch<'a> {
    log: &'a Log,
    pending: parking_lot::MutexGuard<'a, Pending>,
}

impl LogBatch<'_> {
    /// Appends one record as [`Log::append`] does and returns its lsn.
    pub(crate) fn append(&mut self, ts_ms: u64, body: impl FnOnce(&mut Vec<u8>)) -> u64 {
        let p = &mut *self.pending;
        let lsn = p.next_lsn;
        p.next_lsn += 1;
        let start = p.buf.len();
        p.buf.put_u32(0);
        p.buf.put_u32(0);
        encode_head(&mut p.buf, lsn, ts_ms);
        body(&mut p.buf);
        let len = p.buf.len() - start - 8;
        let sum = crc(&p.buf[start + 8..]);
        p.buf[start..start + 4].copy_from_slice(&(len as u32).to_le_bytes());
        p.buf[start + 4..start + 8].copy_from_slice(&sum.to_le_bytes());
        self.log
            .since_rotate
            .fetch_add(len as u64 + 8, Ordering::Relaxed);
        lsn
    }
}

struct Segment {
    file: File,
    path: PathBuf,
}

/// The append log of one engine.
pub(crate) struct Log {
    dir: PathBuf,
    policy: FsyncPolicy,
    pending: Mutex<Pending>,
    seg: Mutex<Segment>,
    /// Every record with a smaller lsn is written (and synced, under `Always`).
    durable: AtomicU64,
    failed: Mutex<Option<String>>,
    is_failed: AtomicBool,
    since_rotate: AtomicU64,
    /// Where every written batch must also be accepted before it counts as durable.
    of_record: parking_lot::RwLock<Option<std::sync::Arc<dyn LogOfRecord>>>,
    /// Whether `of_record` is set (read on the hot path without the lock).
    has_of_record: AtomicBool,
    /// Appends are refused with [`Error::ReadOnly`] (a replica applies with `append_framed`).
    read_only: AtomicBool,
    /// When the log was last fsynced (Unix ms), for `INFO persistence`.
    last_sync_ms: AtomicU64,
}

/// File name of the segment whose first record is `lsn`.
pub(crate) fn segment_name(lsn: u64) -> String {
    format!("log-{lsn:020}.log")
}

/// Fsyncs a directory so renames and new files in it survive a crash.
pub(crate) fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(io_err(dir))
}

impl Log {
    /// Opens the log for appending: `active` is the existing last segment (already cut to
    /// its valid prefix by recovery), or `None` to start a new one at `next_lsn`.
    pub(crate) fn open(
        dir: &Path,
        policy: FsyncPolicy,
        next_lsn: u64,
        active: Option<PathBuf>,
    ) -> Result<Log> {
        let path = active.unwrap_or_else(|| dir.join(segment_name(next_lsn)));
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(io_err(&path))?;
        sync_dir(dir)?;
        Ok(Log {
            dir: dir.to_path_buf(),
            policy,
            pending: Mutex::new(Pending {
                buf: Vec::with_capacity(1 << 16),
                next_lsn,
            }),
            seg: Mutex::new(Segment { file, path }),
            durable: AtomicU64::new(next_lsn),
            failed: Mutex::new(None),
            is_failed: AtomicBool::new(false),
            since_rotate: AtomicU64::new(0),
            of_record: parking_lot::RwLock::new(None),
            has_of_record: AtomicBool::new(false),
            read_only: AtomicBool::new(false),
            last_sync_ms: AtomicU64::new(0),
        })
    }

    /// Attaches (or detaches) the log of record. Everything appended before is written
    /// out first, so a batch handed to it never holds records from before it was attached.
    pub(crate) fn set_log_of_record(
        &self,
        sink: Option<std::sync::Arc<dyn LogOfRecord>>,
    ) -> Result<()> {
        let seg = self.seg.lock();
        self.write_out(&seg, self.policy == FsyncPolicy::Always)?;
        self.has_of_record.store(sink.is_some(), Ordering::Release);
        *self.of_record.write() = sink;
        Ok(())
    }

    /// Refuses (or allows again) appends through [`Log::append`].
    pub(crate) fn set_read_only(&self, read_only: bool) {
        self.read_only.store(read_only, Ordering::Release);
    }

    /// Whether appends are refused.
    pub(crate) fn is_read_only(&self) -> bool {
        self.read_only.load(Ordering::Acquire)
    }

    /// Whether an acknowledgement waits for the batch to be written out: under
    /// `Always`, and whenever a log of record is attached.
    fn acks_wait(&self) -> bool {
        self.policy == FsyncPolicy::Always || self.has_of_record.load(Ordering::Acquire)
    }

    /// Appends one record that arrived already framed (a replica applying the leader's
    /// log): `frame` must be exactly one frame whose payload carries lsn `next_lsn`.
    pub(crate) fn append_framed(&self, frame: &[u8]) -> Result<()> {
        self.check()?;
        let mut p = self.pending.lock();
        p.next_lsn += 1;
        p.buf.extend_from_slice(frame);
        self.since_rotate
            .fetch_add(frame.len() as u64, Ordering::Relaxed);
        Ok(())
    }

    /// The fsync policy in force.
    pub(crate) fn policy(&self) -> FsyncPolicy {
        self.policy
    }

    /// The lsn the next record will get.
    pub(crate) fn next_lsn(&self) -> u64 {
        self.pending.lock().next_lsn
    }

    /// When the log was last fsynced, in Unix milliseconds (0: not yet by this process).
    pub(crate) fn last_sync_ms(&self) -> u64 {
        self.last_sync_ms.load(Ordering::Relaxed)
    }

    /// Bytes appended since the last rotation (drives automatic snapshots).
    pub(crate) fn bytes_since_rotate(&self) -> u64 {
        self.since_rotate.load(Ordering::Relaxed)
    }

    fn check(&self) -> Result<()> {
        if self.is_failed.load(Ordering::Acquire) {
            let why = self.failed.lock().clone().unwrap_or_default();
            return Err(Error::LogFailed(why));
        }
        Ok(())
    }

    fn fail(&self, e: &Error) -> Error {
        let msg = e.to_string();
        *self.failed.lock() = Some(msg.clone());
        self.is_failed.store(true, Ordering::Release);
        Error::LogFailed(msg)
    }

    /// Appends one record: `body` writes the op after the common header. Returns its lsn.
    /// Call with the stripe lock held; then [`Log::commit`] after releasing it.
    pub(crate) fn append(&self, ts_ms: u64, body: impl FnOnce(&mut Vec<u8>)) -> Result<u64> {
        Ok(self.batch()?.append(ts_ms, body))
    }

    /// Holds the log's buffer for several appends in a row (one lock, one check), for a
    /// writer that applies many changes at once (a pipelined batch of increments). Take
    /// it after the stripe locks, as [`Log::append`].
    pub(crate) fn batch(&self) -> Result<LogBatch<'_>> {
        self.check()?;
        if self.is_read_only() {
            return Err(Error::ReadOnly);
        }
        Ok(LogBatch {
            log: self,
            pending: self.pending.lock(),
        })
    }

    /// Makes the record `lsn` as durable as the policy promises before acknowledging it.
    pub(crate) fn commit(&self, lsn: u64) -> Result<()> {
        match self.acks_wait() {
            true => {
                if self.durable.load(Ordering::Acquire) > lsn {
                    return Ok(());
                }
                self.check()?;
                let seg = self.seg.lock();
                // While this writer waited for the segment, the leader before it may have
                // written and fsynced this record with its batch: then there is nothing
                // left to do for it (group commit), even if newer records are pending.
                if self.durable.load(Ordering::Acquire) > lsn {
                    return Ok(());
                }
                self.write_out(&seg, self.policy == FsyncPolicy::Always)
                    .map(|_| ())
            }
            false => {
                self.check()?;
                if self.pending.lock().buf.len() >= FLUSH_AT {
                    self.flush(false)?;
                }
                Ok(())
            }
        }
    }

    /// Whether record `lsn` has been written out (and fsynced, under `Always`).
    pub(crate) fn is_durable(&self, lsn: u64) -> bool {
        if self.acks_wait() {
            self.durable.load(Ordering::Acquire) > lsn
        } else {
            // The other policies acknowledge once the record is in memory.
            true
        }
    }

    /// Writes the buffer to the current segment, fsyncing it if `sync`.
    pub(crate) fn flush(&self, sync: bool) -> Result<()> {
        self.check()?;
        let seg = self.seg.lock();
        self.write_out(&seg, sync).map(|_| ())
    }

    fn write_out(&self, seg: &Segment, sync: bool) -> Result<u64> {
        let (buf, end) = {
            let mut p = self.pending.lock();
            let end = p.next_lsn;
            if p.buf.is_empty() && (!sync || self.durable.load(Ordering::Acquire) >= end) {
                return Ok(end);
            }
            (
                std::mem::replace(&mut p.buf, Vec::with_capacity(1 << 16)),
                end,
            )
        };
        let mut f = &seg.file;
        let res = f
            .write_all(&buf)
            .and_then(|_| if sync { seg.file.sync_data() } else { Ok(()) });
        if let Err(e) = res {
            return Err(self.fail(&io_err(&seg.path)(e)));
        }
        if sync {
            self.last_sync_ms
                .store(shardkit_ids::now_ms(), Ordering::Relaxed);
        }
        if !buf.is_empty() && self.has_of_record.load(Ordering::Acquire) {
            let first = self.durable.load(Ordering::Acquire);
            let sink = self.of_record.read().clone();
            if let Some(sink) = sink {
                if let Err(why) = sink.append(first, end, &buf) {
                    let refused = Error::LogOfRecord(why);
                    self.fail(&refused);
                    return Err(refused);
                }
            }
        }
        self.durable.store(end, Ordering::Release);
        Ok(end)
    }

    /// Ends the current segment (written and fsynced) and starts a new one. Returns the
    /// first lsn of the new segment: every record below it is in older segments.
    pub(crate) fn rotate(&self) -> Result<u64> {
        self.check()?;
        let mut seg = self.seg.lock();
        let end = self.write_out(&seg, true)?;
        let path = self.dir.join(segment_name(end));
        if path != seg.path {
            let file = OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)
                .map_err(io_err(&path))?;
            sync_dir(&self.dir)?;
            *seg = Segment { file, path };
        }
        self.since_rotate.store(0, Ordering::Relaxed);
        Ok(end)
    }
}

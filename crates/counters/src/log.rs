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
//! [`Log::commit_then`] hands a batch over without waiting for it (an event loop's
//! commit task), [`Log::commit`] waits; both keep the batches in lsn order.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use std::sync::Arc;
use std::time::Duration;

use parking_lot::{Condvar, Mutex};

use crate::codec::{crc, Put};
use crate::error::{io_err, Error, Result};
use crate::record::encode_head;
use crate::LogOfRecord;

/// Called once with the outcome of a [`Log::commit_then`].
pub(crate) type Done = Box<dyn FnOnce(Result<()>) + Send>;

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

/// How far the records are durable, and whether the log failed: shared with the
/// callbacks of batches still with the log of record, which move it on when they land.
struct Progress {
    /// Every record with a smaller lsn is written (and synced, under `Always`) and, with
    /// a log of record, stored there.
    durable: AtomicU64,
    failed: Mutex<Option<String>>,
    is_failed: AtomicBool,
    /// Why the log of record refused a batch, if it did: what a committer whose records
    /// did not become durable is told.
    refused: Mutex<Option<String>>,
    /// Woken when `durable` moves or the log fails (a committer waiting for a batch
    /// with the log of record).
    moved: Condvar,
    moved_lock: Mutex<()>,
    /// [`Log::commit_then`]s whose record is in a batch still with the log of record.
    waiters: Mutex<Vec<(u64, Done)>>,
}

impl Progress {
    fn new(durable: u64) -> Progress {
        Progress {
            durable: AtomicU64::new(durable),
            failed: Mutex::new(None),
            is_failed: AtomicBool::new(false),
            refused: Mutex::new(None),
            moved: Condvar::new(),
            moved_lock: Mutex::new(()),
            waiters: Mutex::new(Vec::new()),
        }
    }

    /// Marks the log failed and returns the error to report.
    fn fail(&self, e: &Error) -> Error {
        let msg = e.to_string();
        *self.failed.lock() = Some(msg.clone());
        self.is_failed.store(true, Ordering::Release);
        self.wake_all();
        Error::LogFailed(msg)
    }

    fn check(&self) -> Result<()> {
        if self.is_failed.load(Ordering::Acquire) {
            let why = self.failed.lock().clone().unwrap_or_default();
            return Err(Error::LogFailed(why));
        }
        Ok(())
    }

    /// Every record below `end` is durable.
    fn advance(&self, end: u64) {
        self.durable.fetch_max(end, Ordering::AcqRel);
        self.wake_all();
    }

    /// What the log of record said of the batch ending at `end`.
    fn stored(&self, end: u64, outcome: std::result::Result<(), String>) {
        match outcome {
            Ok(()) => self.advance(end),
            Err(why) => {
                self.refused.lock().get_or_insert_with(|| why.clone());
                self.fail(&Error::LogOfRecord(why));
            }
        }
    }

    /// The answer for a committer of record `lsn` once `durable` moved or the log
    /// failed: `Ok`, or the log of record's refusal, or why the log failed.
    fn answer(&self, lsn: u64) -> Result<()> {
        if self.durable.load(Ordering::Acquire) > lsn {
            return Ok(());
        }
        match self.refused.lock().clone() {
            Some(why) => Err(Error::LogOfRecord(why)),
            None => self.check(),
        }
    }

    /// Wakes the blocked committers and calls the waiting callbacks that can be answered.
    fn wake_all(&self) {
        drop(self.moved_lock.lock());
        self.moved.notify_all();
        let durable = self.durable.load(Ordering::Acquire);
        let failed = self.is_failed.load(Ordering::Acquire);
        let ready: Vec<(u64, Done)> = {
            let mut waiters = self.waiters.lock();
            if waiters.is_empty() {
                return;
            }
            let (ready, wait) = std::mem::take(&mut *waiters)
                .into_iter()
                .partition(|(lsn, _)| failed || durable > *lsn);
            *waiters = wait;
            ready
        };
        for (lsn, done) in ready {
            done(self.answer(lsn));
        }
    }

    /// Calls `done` once record `lsn` is durable (at once if it is) or the log failed.
    fn then(&self, lsn: u64, done: Done) {
        {
            // Checked under the lock `wake_all` drains under: a batch landing meanwhile
            // either is seen here or finds this waiter there.
            let mut waiters = self.waiters.lock();
            if self.durable.load(Ordering::Acquire) <= lsn
                && !self.is_failed.load(Ordering::Acquire)
            {
                waiters.push((lsn, done));
                return;
            }
        }
        done(self.answer(lsn));
    }

    /// Blocks until every record below `end` is durable, or the log failed.
    fn wait_for(&self, end: u64) -> Result<()> {
        let mut guard = self.moved_lock.lock();
        loop {
            if self.durable.load(Ordering::Acquire) >= end {
                return Ok(());
            }
            if self.is_failed.load(Ordering::Acquire) {
                return self.answer(end.saturating_sub(1));
            }
            // A timeout as well, so a wake-up that raced the check costs at most this.
            self.moved.wait_for(&mut guard, Duration::from_millis(50));
        }
    }
}

/// A batch handed to the log of record, until it says how it went. Dropped unanswered
/// (its publisher gone), it counts as refused: nothing waits on it for ever.
struct Landing {
    progress: Arc<Progress>,
    /// The batch holds the records below this lsn.
    end: u64,
    answered: bool,
}

impl Landing {
    fn land(&mut self, outcome: std::result::Result<(), String>) {
        if !std::mem::replace(&mut self.answered, true) {
            self.progress.stored(self.end, outcome);
        }
    }
}

impl Drop for Landing {
    fn drop(&mut self) {
        self.land(Err(
            "the log of record dropped the batch unanswered".to_string()
        ));
    }
}

/// The append log of one engine.
pub(crate) struct Log {
    dir: PathBuf,
    policy: FsyncPolicy,
    pending: Mutex<Pending>,
    seg: Mutex<Segment>,
    progress: Arc<Progress>,
    /// Every record with a smaller lsn was written out and handed to the log of record
    /// (some may still be on their way there: `progress.durable` is how far they landed).
    handed: AtomicU64,
    since_rotate: AtomicU64,
    /// Where every written batch must also be accepted before it counts as durable.
    of_record: parking_lot::RwLock<Option<std::sync::Arc<dyn LogOfRecord>>>,
    /// Whether `of_record` is set (read on the hot path without the lock).
    has_of_record: AtomicBool,
    /// Appends are refused with [`Error::ReadOnly`] (a replica applies with `append_framed`).
    read_only: AtomicBool,
    /// When the log was last fsynced (Unix ms), for `INFO persistence`.
    last_sync_ms: AtomicU64,
    /// Every record below it is written and fsynced (what a sync may skip).
    synced: AtomicU64,
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
            progress: Arc::new(Progress::new(next_lsn)),
            handed: AtomicU64::new(next_lsn),
            since_rotate: AtomicU64::new(0),
            of_record: parking_lot::RwLock::new(None),
            has_of_record: AtomicBool::new(false),
            read_only: AtomicBool::new(false),
            last_sync_ms: AtomicU64::new(0),
            synced: AtomicU64::new(next_lsn),
        })
    }

    /// Attaches (or detaches) the log of record. Everything appended before is written
    /// out first, so a batch handed to it never holds records from before it was attached.
    pub(crate) fn set_log_of_record(
        &self,
        sink: Option<std::sync::Arc<dyn LogOfRecord>>,
    ) -> Result<()> {
        let seg = self.seg.lock();
        let end = self.write_out(&seg, self.policy == FsyncPolicy::Always)?;
        self.has_of_record.store(sink.is_some(), Ordering::Release);
        *self.of_record.write() = sink;
        drop(seg);
        self.progress.wait_for(end)
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
        self.progress.check()
    }

    fn fail(&self, e: &Error) -> Error {
        self.progress.fail(e)
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
            true => match self.hand_over(lsn)? {
                // The log of record is waited for without the segment: the thread that
                // hears back from it may need the segment meanwhile (`commit_then`).
                Some(end) => self.progress.wait_for(end),
                None => Ok(()),
            },
            false => {
                self.check()?;
                if self.pending.lock().buf.len() >= FLUSH_AT {
                    self.flush(false)?;
                }
                Ok(())
            }
        }
    }

    /// Makes record `lsn` durable as [`Log::commit`] does, but with a log of record
    /// attached does not wait for it: the batch is written out and handed over, and
    /// `done` is called once it was stored (from the thread that learns it), or at once
    /// when there is nothing to wait for or the log failed. Without a log of record it
    /// is [`Log::commit`] (an fsync under `Always`, on this thread).
    pub(crate) fn commit_then(&self, lsn: u64, done: Done) {
        if !self.has_of_record.load(Ordering::Acquire) {
            return done(self.commit(lsn));
        }
        match self.hand_over(lsn) {
            Ok(Some(_)) => self.progress.then(lsn, done),
            Ok(None) => done(Ok(())),
            Err(e) => done(Err(e)),
        }
    }

    /// What [`Log::commit`] and [`Log::commit_then`] share: unless record `lsn` is
    /// already durable (`None`), writes out everything appended (fsynced under
    /// `Always`) and hands it to the log of record, holding the segment only for that,
    /// and returns the end to wait for (the record may already be on its way in an
    /// earlier batch).
    fn hand_over(&self, lsn: u64) -> Result<Option<u64>> {
        if self.progress.durable.load(Ordering::Acquire) > lsn {
            return Ok(None);
        }
        self.check()?;
        let seg = self.seg.lock();
        // While this writer waited for the segment, the leader before it may have
        // written and fsynced this record with its batch: then there is nothing
        // left to do for it (group commit), even if newer records are pending.
        if self.progress.durable.load(Ordering::Acquire) > lsn {
            return Ok(None);
        }
        self.write_out(&seg, self.policy == FsyncPolicy::Always)
            .map(Some)
    }

    /// Every record below it is durable: written (and synced, under `Always`) and, with
    /// a log of record, stored there.
    pub(crate) fn durable(&self) -> u64 {
        self.progress.durable.load(Ordering::Acquire)
    }

    /// Whether record `lsn` has been written out (and fsynced, under `Always`).
    pub(crate) fn is_durable(&self, lsn: u64) -> bool {
        if self.acks_wait() {
            self.progress.durable.load(Ordering::Acquire) > lsn
        } else {
            // The other policies acknowledge once the record is in memory.
            true
        }
    }

    /// Writes the buffer to the current segment, fsyncing it if `sync`.
    pub(crate) fn flush(&self, sync: bool) -> Result<()> {
        self.check()?;
        let seg = self.seg.lock();
        let end = self.write_out(&seg, sync)?;
        drop(seg);
        self.progress.wait_for(end)
    }

    /// Writes the buffer to the current segment (fsynced if `sync`) and, with a log of
    /// record, hands it over there, in lsn order (the caller holds the segment). Returns
    /// the end of what was written: without a log of record it is durable now; with
    /// one, once [`Progress::wait_for`] says so (after the segment was let go).
    fn write_out(&self, seg: &Segment, sync: bool) -> Result<u64> {
        let (buf, end) = {
            let mut p = self.pending.lock();
            let end = p.next_lsn;
            // A sync is skipped only when everything up to `end` was synced: `durable`
            // also moves on writes that were not (a full buffer under `everysec`), and
            // those must still reach the disk at the next sync.
            if p.buf.is_empty() && (!sync || self.synced.load(Ordering::Acquire) >= end) {
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
            self.synced.fetch_max(end, Ordering::AcqRel);
            self.last_sync_ms
                .store(shardkit_ids::now_ms(), Ordering::Relaxed);
        }
        let first = self.handed.swap(end, Ordering::AcqRel);
        let sink = match self.has_of_record.load(Ordering::Acquire) {
            true => self.of_record.read().clone(),
            false => None,
        };
        match sink {
            Some(sink) if !buf.is_empty() => {
                let mut landing = Landing {
                    progress: Arc::clone(&self.progress),
                    end,
                    answered: false,
                };
                sink.submit(
                    first,
                    end,
                    &buf,
                    Box::new(move |outcome| landing.land(outcome)),
                );
            }
            // Nothing new to hand over: what is on its way lands on its own.
            Some(_) => {}
            None => self.progress.advance(end),
        }
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
        // Every record below `end` is in the segments before the new one; the log of
        // record is waited for once the segment is switched and let go.
        drop(seg);
        self.progress.wait_for(end)?;
        Ok(end)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Under `everysec` a full buffer is written at once without a sync; the next
    /// once-a-second flush must still sync it, even with nothing new appended since.
    #[test]
    fn a_buffer_written_without_a_sync_is_synced_at_the_next_flush() {
        let dir = tempfile::tempdir().unwrap();
        let log = Log::open(dir.path(), FsyncPolicy::EverySec, 1, None).unwrap();
        let mut last = 0;
        while log.pending.lock().buf.len() < FLUSH_AT {
            last = log.append(1, |b| b.extend_from_slice(&[7; 1000])).unwrap();
        }
        // The commit that finds the buffer full writes it out, unsynced.
        log.commit(last).unwrap();
        assert!(
            log.pending.lock().buf.is_empty(),
            "the full buffer was written"
        );
        assert_eq!(log.last_sync_ms(), 0, "and not synced");
        // The flusher's tick, with nothing appended since: it syncs what was written.
        log.flush(true).unwrap();
        assert!(
            log.last_sync_ms() > 0,
            "the written records were never synced"
        );
        assert!(log.synced.load(Ordering::Acquire) > last);
    }
}

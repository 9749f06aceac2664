//! The engine: counters, the log, snapshots and the background threads, behind one
//! thread-safe handle.
//!
//! Why one file of this size: it is the crate's whole public surface (`Engine` and its
//! options), every method a short delegation to the stripes, the log and the snapshot
//! code; splitting it would split the API a reader looks up.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex, RwLock};

use crate::codec::Put;
use crate::cold::{self, ColdShared};
use crate::column::{apply_delta, check_name, check_set, ColumnSpec};
use crate::counter::{Counter, STRIPES};
use crate::error::{io_err, Error, Result};
use crate::hash::FastMap;
use crate::key::Key;
use crate::log::{FsyncPolicy, Log};
use crate::record::{encode_set_body, write_key, write_spec, RowsRecord, RunRecord};
use crate::stripe::Located;
use crate::{evict, logread, recover, replicated, snapshot};
use crate::{Applied, LogOfRecord};
use crate::{ColumnOptions, CounterStats, Eviction, Options, RecoveryReport, SnapshotInfo, Stats};
use shardkit_ids::now_ms;

/// Longest transaction id accepted, in bytes.
pub const MAX_TXID_LEN: usize = 128;

struct Inner {
    dir: PathBuf,
    opts: Options,
    log: Log,
    counters: RwLock<FastMap<String, Arc<Counter>>>,
    snap_lock: Mutex<()>,
    stop: Mutex<bool>,
    wake: Condvar,
    closed: AtomicBool,
    recovery: RecoveryReport,
    last_bg_error: Mutex<Option<String>>,
    /// When the last snapshot was written (Unix ms; the opening time before the first).
    last_snapshot_ms: AtomicU64,
    /// Snapshots written since the engine opened.
    snapshots_written: AtomicU64,
    /// Bytes of the newest snapshot file (0 before the first): the base of
    /// [`Options::snapshot_growth_percent`].
    last_snapshot_bytes: AtomicU64,
    /// The cold tier's files and block cache.
    cold: Arc<ColdShared>,
    /// Held by an eviction pass and by the cold files' garbage collection, so neither
    /// sees the other's batch half made.
    evict_lock: Mutex<()>,
    /// `<dir>/LOCK`, held for the engine's lifetime so a second engine on the directory is refused.
    _lock: std::fs::File,
}

/// How often the snapshot thread checks a log that grows for the size that starts a
/// snapshot.
const SNAPSHOT_CHECK: Duration = Duration::from_millis(100);

/// The longest the snapshot thread sleeps while the log does not grow: a snapshot by
/// size or by time starts at most this late after writes resume.
const SNAPSHOT_CHECK_IDLE: Duration = Duration::from_secs(1);

/// A durable counter engine over one data directory.
///
/// Exists as the single entry point the servers call: every method takes `&self` and is
/// safe to call from many threads at once. Mutations are acknowledged (return `Ok`)
/// only once their log record is as durable as [`Options::fsync`] promises.
pub struct Engine {
    inner: Arc<Inner>,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

/// One item of [`Engine::update_rows`]: what happens to one column of a row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowOp {
    /// Sets the column to this value (refused past the column's max).
    Set(u64),
    /// Adds this to the column (refused below zero or past the column's max).
    Add(i64),
}

impl Engine {
    /// Opens (or creates) the engine in `dir`: loads the newest usable snapshot, replays
    /// the log tail, cuts any torn or corrupt tail (see [`Engine::recovery`]) and starts
    /// the background flusher and snapshotter.
    pub fn open(dir: impl AsRef<Path>, opts: Options) -> Result<Engine> {
        let dir = dir.as_ref().to_path_buf();
        std::fs::create_dir_all(&dir).map_err(io_err(&dir))?;
        // Before recovery, which may truncate log files: one engine per directory.
        let lock_path = dir.join("LOCK");
        let lock = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(io_err(&lock_path))?;
        match lock.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => return Err(Error::Locked(dir)),
            Err(std::fs::TryLockError::Error(e)) => return Err(io_err(&lock_path)(e)),
        }
        let cutoff = now_ms().saturating_sub(opts.txid_window.as_millis() as u64);
        let cold = ColdShared::open(&dir, opts.block_cache_bytes)?;
        let rec = recover::recover(&dir, cutoff, &cold)?;
        let log = Log::open(&dir, opts.fsync, rec.next_lsn, rec.active)?;
        let newest_snapshot_bytes = snapshot::list(&dir)?
            .first()
            .and_then(|(_, path)| std::fs::metadata(path).ok())
            .map_or(0, |m| m.len());
        let inner = Arc::new(Inner {
            dir,
            opts,
            log,
            counters: RwLock::new(rec.counters),
            snap_lock: Mutex::new(()),
            stop: Mutex::new(false),
            wake: Condvar::new(),
            closed: AtomicBool::new(false),
            recovery: rec.report,
            last_bg_error: Mutex::new(None),
            last_snapshot_ms: AtomicU64::new(now_ms()),
            snapshots_written: AtomicU64::new(0),
            last_snapshot_bytes: AtomicU64::new(newest_snapshot_bytes),
            cold,
            evict_lock: Mutex::new(()),
            _lock: lock,
        });
        // Batches a crash cut short, or that no snapshot and no partition needs any more.
        inner.collect_cold_garbage()?;
        let engine = Engine {
            inner,
            threads: Mutex::new(Vec::new()),
        };
        engine.start_threads();
        Ok(engine)
    }

    fn start_threads(&self) {
        let mut threads = self.threads.lock();
        if self.inner.opts.cold_after.is_some() || self.inner.opts.max_memory.is_some() {
            let inner = self.inner.clone();
            // Often enough that `cold_after` is kept to within a quarter of itself.
            let tick = self
                .inner
                .opts
                .cold_after
                .map_or(Duration::from_secs(1), |d| d / 4)
                .clamp(Duration::from_millis(10), Duration::from_secs(1));
            threads.push(std::thread::spawn(move || {
                while !inner.sleep(tick) {
                    let policy = evict::Policy {
                        cold_after: inner.opts.cold_after,
                        max_memory: inner.opts.max_memory,
                    };
                    if let Err(e) = inner.evict(policy) {
                        *inner.last_bg_error.lock() = Some(e.to_string());
                    }
                }
            }));
        }
        if self.inner.opts.fsync != FsyncPolicy::Always {
            let inner = self.inner.clone();
            threads.push(std::thread::spawn(move || {
                let sync = inner.log.policy() == FsyncPolicy::EverySec;
                while !inner.sleep(Duration::from_secs(1)) {
                    if let Err(e) = inner.log.flush(sync) {
                        *inner.last_bg_error.lock() = Some(e.to_string());
                    }
                }
            }));
        }
        if self.inner.opts.snapshot_log_bytes.is_some()
            || self.inner.opts.snapshot_interval.is_some()
        {
            let inner = self.inner.clone();
            threads.push(std::thread::spawn(move || {
                let mut last = Instant::now();
                let (mut nap, mut seen) = (SNAPSHOT_CHECK, inner.log.bytes_since_rotate());
                while !inner.sleep(nap) {
                    // A log that grows is looked at every SNAPSHOT_CHECK, an idle one
                    // less and less often: a node holding many engines (a cluster node's
                    // groups) wakes their threads ten times less while they are idle.
                    let now_bytes = inner.log.bytes_since_rotate();
                    nap = if now_bytes == seen {
                        (nap * 2).min(SNAPSHOT_CHECK_IDLE)
                    } else {
                        SNAPSHOT_CHECK
                    };
                    seen = now_bytes;
                    let by_bytes = inner
                        .opts
                        .snapshot_log_bytes
                        .is_some_and(|b| inner.log.bytes_since_rotate() >= inner.log_trigger(b));
                    let by_time = inner
                        .opts
                        .snapshot_interval
                        .is_some_and(|t| last.elapsed() >= t)
                        && inner.log.bytes_since_rotate() > 0;
                    if by_bytes || by_time {
                        last = Instant::now();
                        if let Err(e) = inner.snapshot() {
                            *inner.last_bg_error.lock() = Some(e.to_string());
                        }
                    }
                }
            }));
        }
    }

    /// What recovery found and cut when this engine was opened.
    pub fn recovery(&self) -> &RecoveryReport {
        &self.inner.recovery
    }

    /// The data directory.
    pub fn dir(&self) -> &Path {
        &self.inner.dir
    }

    fn counter(&self, name: &str) -> Result<Arc<Counter>> {
        self.inner.check_open()?;
        self.inner
            .counters
            .read()
            .get(name)
            .cloned()
            .ok_or_else(|| Error::NoSuchCounter(name.to_string()))
    }

    /// Creates an empty counter with no columns.
    pub fn create_counter(&self, name: &str) -> Result<()> {
        check_name(name)?;
        self.inner.check_open()?;
        let lsn = {
            let mut map = self.inner.counters.write();
            if map.contains_key(name) {
                return Err(Error::CounterExists(name.to_string()));
            }
            let lsn = self.inner.log.append(now_ms(), |b| {
                b.put_u8(1);
                b.put_str(name);
            })?;
            map.insert(name.to_string(), Arc::new(Counter::new(name)));
            lsn
        };
        self.inner.log.commit(lsn)
    }

    /// Names of all counters.
    pub fn counters(&self) -> Vec<String> {
        let mut v: Vec<String> = self.inner.counters.read().keys().cloned().collect();
        v.sort();
        v
    }

    /// Adds a column. Existing rows are not touched (they read the default until
    /// written), so this is O(1) however many rows the counter holds.
    pub fn add_column(&self, counter: &str, column: &str, opts: ColumnOptions) -> Result<()> {
        let spec = ColumnSpec::new(column, opts)?;
        let c = self.counter(counter)?;
        let lsn = {
            let mut schema = c.schema.write();
            if schema.iter().any(|s| s.name == column) {
                return Err(Error::ColumnExists {
                    counter: counter.to_string(),
                    column: column.to_string(),
                });
            }
            if schema.len() >= 1024 {
                return Err(Error::TooManyColumns(counter.to_string()));
            }
            let lsn = self.inner.log.append(now_ms(), |b| {
                b.put_u8(2);
                b.put_str(counter);
                write_spec(b, &spec);
            })?;
            schema.push(spec);
            lsn
        };
        self.inner.log.commit(lsn)
    }

    /// The columns of a counter, in the order they were added.
    pub fn columns(&self, counter: &str) -> Result<Vec<ColumnSpec>> {
        Ok(self.counter(counter)?.schema.read().clone())
    }

    /// Adds `delta` (may be negative) to one column of one row and returns the new value.
    ///
    /// Refused with [`Error::Negative`] if the count would go below zero and with
    /// [`Error::TooLarge`] past the column's max; a refused call changes nothing.
    /// With a `txid`, a repeat of an id already applied to this row within the window
    /// returns the current value without counting again.
    pub fn incr(
        &self,
        counter: &str,
        key: Key<'_>,
        column: &str,
        delta: i64,
        txid: Option<&str>,
    ) -> Result<u64> {
        let (value, pending) = self.incr_deferred(counter, key, column, delta, txid)?;
        self.commit(pending)?;
        Ok(value)
    }

    /// [`Engine::incr`] without waiting for the log: the increment is applied (readers
    /// see it) and the returned [`Pending`] must be passed to [`Engine::commit`] before
    /// the new value is acknowledged to anyone. A server answering a pipeline applies
    /// every command of the batch this way and waits for the disk once.
    pub fn incr_deferred(
        &self,
        counter: &str,
        key: Key<'_>,
        column: &str,
        delta: i64,
        txid: Option<&str>,
    ) -> Result<(u64, Pending)> {
        key.validate()?;
        if let Some(t) = txid {
            if t.is_empty() {
                return Err(Error::BadTxid("a transaction id must not be empty"));
            }
            if t.len() > MAX_TXID_LEN {
                return Err(Error::BadTxid("a transaction id must be at most 128 bytes"));
            }
        }
        let c = self.counter(counter)?;
        let schema = c.schema.read();
        let col = col_index(&schema, counter, column)?;
        let spec = &schema[col];
        let ts = now_ms();
        let (lsn, value) = {
            let mut st = c.stripe(key).write();
            st.thaw_for(key, &schema)?;
            if let Some(t) = txid {
                st.txids
                    .expire(ts.saturating_sub(self.inner.opts.txid_window.as_millis() as u64));
                if st.txids.contains(&key.to_owned_key(), t) {
                    let v = st.get(key, col, &schema);
                    // The first application may still be on its way to disk: wait for
                    // everything appended so far.
                    let last = self.inner.log.next_lsn().saturating_sub(1);
                    return Ok((v, Pending(last)));
                }
            }
            let mut lsn = 0;
            let value = st.update(key, col, &schema, |cur| {
                let value = apply_delta(cur, delta, spec)?;
                lsn = self.inner.log.append(ts, |b| {
                    encode_set_body(b, counter, key, col as u16, value, txid)
                })?;
                Ok(value)
            })?;
            if let Some(t) = txid {
                st.txids.insert(key.to_owned_key(), t, ts);
            }
            (lsn, value)
        };
        Ok((value, Pending(lsn)))
    }

    /// Waits until the writes behind `pending` are as durable as the fsync policy
    /// promises (`Always`: fsynced, shared with every concurrent writer). Only then may
    /// they be acknowledged. An error means they may be lost: do not acknowledge them.
    pub fn commit(&self, pending: Pending) -> Result<()> {
        if pending.0 == 0 {
            return Ok(());
        }
        self.inner.log.commit(pending.0)
    }

    /// Makes the writes behind `pending` durable as [`Engine::commit`] does, without
    /// blocking on a log of record: the batch is written out and handed over, and `done`
    /// is called with the outcome once it was stored there (on the thread that learns
    /// it: keep `done` short, e.g. a channel send). Exists for a commit task on an event
    /// loop, which would otherwise park a thread on every publish. Without a log of
    /// record it is [`Engine::commit`] on this thread, then `done`.
    pub fn commit_then(&self, pending: Pending, done: impl FnOnce(Result<()>) + Send + 'static) {
        if pending.0 == 0 {
            return done(Ok(()));
        }
        self.inner.log.commit_then(pending.0, Box::new(done));
    }

    /// Whether the writes behind `pending` are already as durable as the policy
    /// promises, without waiting (a waiter re-checks this after every group fsync).
    pub fn is_durable(&self, pending: Pending) -> bool {
        pending.0 == 0 || self.inner.log.is_durable(pending.0)
    }

    /// Adds each `(key, delta)` to one column of one counter with a single wait for
    /// the log: the records are appended one by one, then committed together, so a
    /// batch of N increments costs one fsync instead of N. Exists for callers that
    /// aggregate in memory and flush (short-link clicks). Items that fail (a count
    /// that would go negative or past the max, a bad key) are skipped and counted in
    /// the answer; the others are applied and durable when this returns.
    pub fn incr_batch(
        &self,
        counter: &str,
        column: &str,
        items: &[(Key<'_>, i64)],
    ) -> Result<usize> {
        let (skipped, pending) = self.incr_batch_deferred(counter, column, items)?;
        self.commit(pending)?;
        Ok(skipped)
    }

    /// [`Engine::incr_batch`] without waiting for the log: the applied items are
    /// covered by the returned [`Pending`], to commit (with others: one fsync for the
    /// batches of several counters) before any of them is acknowledged. Exists for
    /// flushes that write more than one counter (clicks: totals and days; analytics).
    /// Returns how many items were skipped, as `incr_batch` does.
    pub fn incr_batch_deferred(
        &self,
        counter: &str,
        column: &str,
        items: &[(Key<'_>, i64)],
    ) -> Result<(usize, Pending)> {
        // A missing counter or column is an error even for an empty batch.
        col_index(&self.counter(counter)?.schema.read(), counter, column)?;
        let mut newest = Pending::NONE;
        let mut skipped = 0;
        let mut results = Vec::new();
        // Runs of bounded length, so other writers wait for a few stripes at most a
        // short while.
        for run in items.chunks(BATCH_RUN) {
            newest = newest.max(self.incr_run(counter, column, run, &mut results)?);
            for result in results.drain(..) {
                match result {
                    Ok(_) => {}
                    Err(Error::BadKey(_) | Error::Negative { .. } | Error::TooLarge { .. }) => {
                        skipped += 1
                    }
                    Err(e) => return Err(e),
                }
            }
        }
        Ok((skipped, newest))
    }

    /// Adds each `(key, delta)` to one column of one counter, in order, under one
    /// schema lock, each touched stripe locked once (in index order) and the log's
    /// buffer locked once: a pipelined batch of `INCR`s costs one of each instead of
    /// one per command. `out` gets one result per item (the new value, or why that item
    /// was refused: a bad key, below zero, past the max); the refused ones change
    /// nothing. The returned [`Pending`] covers every applied item and must be
    /// committed before any of them is acknowledged. `Err` (nothing applied, `out`
    /// empty) for a missing counter or column, or a log that cannot take writes.
    pub fn incr_run(
        &self,
        counter: &str,
        column: &str,
        items: &[(Key<'_>, i64)],
        out: &mut Vec<Result<u64>>,
    ) -> Result<Pending> {
        out.clear();
        let c = self.counter(counter)?;
        let schema = c.schema.read();
        let col = col_index(&schema, counter, column)?;
        let spec = &schema[col];
        // Every stripe the run touches, then the log's buffer.
        let stripe_of = |key: Key<'_>| crate::counter::stripe_of(key);
        let (mut guards, slot) = lock_stripes(&c, items.iter().map(|&(key, _)| stripe_of(key)));
        let mut log = self.inner.log.batch()?;
        let ts = now_ms();
        let mut newest = Pending::NONE;
        // The applied values, logged as one record (or one per `RUN_RECORD_ITEMS`) while
        // every stripe of the run is still locked: a snapshot's copy of a stripe sees all
        // of the run's writes to it and a mark past the record, or none and a mark below.
        let mut run = RunRecord::new(counter, col as u16, items.len());
        // Numeric rows go in groups, as in `Table::incr_many`: every op of a group is
        // aimed (its key lines asked for), then located (its value's line asked for),
        // then applied in order; so the memory waits of a group overlap instead of
        // following each other. A row on disk, a string key, or a look-up that an
        // earlier op of the group made stale takes the general path below.
        let mut looks = [None::<Located>; INCR_GROUP];
        // Each op's stripe guard, worked out once per op for the three passes.
        let mut at = [0usize; INCR_GROUP];
        for group in items.chunks(INCR_GROUP) {
            for ((look, g), &(key, _)) in looks.iter_mut().zip(&mut at).zip(group) {
                *g = slot[stripe_of(key)];
                *look = match key {
                    Key::Id(id) => guards[*g].aim(id, col),
                    Key::Name(_) => None,
                };
            }
            for (look, &g) in looks.iter_mut().zip(&at).take(group.len()) {
                if let Some(located) = look.as_mut() {
                    guards[g].locate(located, col);
                }
            }
            for ((look, &g), &(key, delta)) in looks.iter_mut().zip(&at).zip(group) {
                let st = &mut guards[g];
                if let Some(value) = look
                    .take()
                    .and_then(|located| st.incr_found(located, col, delta, spec))
                {
                    run.push(key, value);
                    if run.full() {
                        newest = Pending(log.append(ts, |b| run.write_body(b)));
                        run.clear();
                    }
                    out.push(Ok(value));
                    continue;
                }
                if let Err(e) = key.validate() {
                    out.push(Err(e));
                    continue;
                }
                if let Err(e) = st.thaw_for(key, &schema) {
                    out.push(Err(e));
                    continue;
                }
                let result = st.update(key, col, &schema, |cur| apply_delta(cur, delta, spec));
                if let Ok(value) = result {
                    run.push(key, value);
                    if run.full() {
                        newest = Pending(log.append(ts, |b| run.write_body(b)));
                        run.clear();
                    }
                }
                out.push(result);
            }
        }
        if !run.is_empty() {
            newest = Pending(log.append(ts, |b| run.write_body(b)));
        }
        Ok(newest)
    }

    /// Adds to several columns of each of `rows` at once: a row's key with its
    /// `(column, delta)` items, each column given by its place in `columns`. Exists for
    /// writers that count many columns of the same rows (a short link's click analytics:
    /// a day's people, bots and label slots): a string-keyed row is looked up and
    /// written once, not once per column as `incr_run` column by column would, and a row
    /// that gains several columns is moved once. The values are logged as one `set rows`
    /// record (op 8; one per 4,096 items or 256 KiB): each row's key once, then its
    /// columns and values (one item alone is the op-3 record it stands for). `out` gets
    /// one result per item, rows in order and a row's items in order (the new value, or
    /// why it was refused: a bad key, below zero, past the max); a refused item changes
    /// nothing. Every touched stripe stays locked for the whole call: keep runs short,
    /// as `incr_batch` does (1,024 rows).
    /// `Err` (nothing applied, `out` empty) for a missing counter or column (or a place
    /// past the end of `columns`), or a log that cannot take writes.
    pub fn incr_rows(
        &self,
        counter: &str,
        columns: &[&str],
        rows: &[(Key<'_>, &[(usize, i64)])],
        out: &mut Vec<Result<u64>>,
    ) -> Result<Pending> {
        self.write_rows(counter, columns, rows, out, |cur, delta, spec| {
            apply_delta(cur, delta, spec)
        })
    }

    /// [`Engine::incr_rows`] setting values instead of adding to them: each
    /// `(column, value)` item sets that column of its row (refused past the column's
    /// max), with the same one look-up and one write a row and the same `set rows` log
    /// record. Exists for the analytics' slot owners: a link's first clicks name owners
    /// in several columns of its one owner row.
    pub fn set_rows(
        &self,
        counter: &str,
        columns: &[&str],
        rows: &[(Key<'_>, &[(usize, u64)])],
        out: &mut Vec<Result<u64>>,
    ) -> Result<Pending> {
        self.write_rows(counter, columns, rows, out, |_, value, spec| {
            check_set(value, spec)
        })
    }

    /// [`Engine::incr_rows`] and [`Engine::set_rows`] in one: each item sets its column
    /// or adds to it ([`RowOp`]), with the same one look-up and one write a row and the
    /// same `set rows` log record (it logs the values written). Exists for the short
    /// links' total rows: a link's first click names its slot owners (set) and adds its
    /// clicks (add) in one row, made once rather than made and then moved to widen it.
    pub fn update_rows(
        &self,
        counter: &str,
        columns: &[&str],
        rows: &[(Key<'_>, &[(usize, RowOp)])],
        out: &mut Vec<Result<u64>>,
    ) -> Result<Pending> {
        self.write_rows(counter, columns, rows, out, |cur, op, spec| match op {
            RowOp::Set(value) => check_set(value, spec),
            RowOp::Add(delta) => apply_delta(cur, delta, spec),
        })
    }

    /// What [`Engine::incr_rows`] and [`Engine::set_rows`] share: `next(current, item,
    /// column)` gives each item's new value or refuses it.
    fn write_rows<T: Copy>(
        &self,
        counter: &str,
        columns: &[&str],
        rows: &[(Key<'_>, &[(usize, T)])],
        out: &mut Vec<Result<u64>>,
        next: impl Fn(u64, T, &ColumnSpec) -> Result<u64>,
    ) -> Result<Pending> {
        out.clear();
        let c = self.counter(counter)?;
        let schema = c.schema.read();
        let cols = columns
            .iter()
            .map(|name| col_index(&schema, counter, name))
            .collect::<Result<Vec<usize>>>()?;
        if let Some(&(i, _)) = rows
            .iter()
            .flat_map(|(_, items)| items.iter())
            .find(|(i, _)| *i >= cols.len())
        {
            return Err(Error::NoSuchColumn {
                counter: counter.to_string(),
                column: format!("#{i} of {} named", cols.len()),
            });
        }
        // Each string key hashed once here: its stripe, and the lines asked for ahead.
        let hashes: Vec<u64> = rows
            .iter()
            .map(|&(key, _)| match key {
                Key::Name(n) => crate::hash::hash_bytes(n.as_bytes()),
                Key::Id(_) => 0,
            })
            .collect();
        let stripe = |r: usize| match rows[r].0 {
            Key::Name(_) => crate::hash::reduce(hashes[r], STRIPES),
            key => crate::counter::stripe_of(key),
        };
        let (mut guards, slot) = lock_stripes(&c, (0..rows.len()).map(stripe));
        let mut log = self.inner.log.batch()?;
        let ts = now_ms();
        let mut newest = Pending::NONE;
        // Logged while every stripe of the call is still locked, as `incr_run` does.
        let mut record = RowsRecord::new(counter);
        for (r, &(key, items)) in rows.iter().enumerate() {
            // A string row's index line asked for `AHEAD` rows before its look-up, its
            // record (when there) half as many: both in the cache when it comes.
            for (ahead, record) in [(AHEAD, false), (AHEAD / 2, true)] {
                if let Some((Key::Name(_), _)) = rows.get(r + ahead) {
                    guards[slot[stripe(r + ahead)]].prefetch_name(hashes[r + ahead], record);
                }
            }
            let st = &mut guards[slot[stripe(r)]];
            let refuse = key
                .validate()
                .err()
                .or_else(|| st.thaw_for(key, &schema).err());
            if let Some(e) = refuse {
                for _ in 1..items.len() {
                    out.push(Err(refused_again(&e)));
                }
                if !items.is_empty() {
                    out.push(Err(e));
                }
                continue;
            }
            record.begin_row(key);
            st.update_row(
                key,
                items.iter().map(|&(i, x)| (cols[i], x)),
                &schema,
                |col, x, cur| {
                    let value = next(cur, x, &schema[col])?;
                    record.push(col as u16, value);
                    if record.full() {
                        newest = Pending(log.append(ts, |b| record.write_body(b)));
                        record.clear();
                    }
                    Ok(value)
                },
                out,
            );
        }
        if !record.is_empty() {
            newest = Pending(log.append(ts, |b| record.write_body(b)));
        }
        Ok(newest)
    }

    /// Sets one column of one row (refused past the column's max).
    pub fn set(&self, counter: &str, key: Key<'_>, column: &str, value: u64) -> Result<()> {
        let pending = self.set_deferred(counter, key, column, value)?;
        self.commit(pending)
    }

    /// [`Engine::set`] without waiting for the log; see [`Engine::incr_deferred`].
    pub fn set_deferred(
        &self,
        counter: &str,
        key: Key<'_>,
        column: &str,
        value: u64,
    ) -> Result<Pending> {
        key.validate()?;
        let c = self.counter(counter)?;
        let schema = c.schema.read();
        let col = col_index(&schema, counter, column)?;
        check_set(value, &schema[col])?;
        let lsn = {
            let mut st = c.stripe(key).write();
            st.thaw_for(key, &schema)?;
            let lsn = self.inner.log.append(now_ms(), |b| {
                encode_set_body(b, counter, key, col as u16, value, None)
            })?;
            st.set(key, col, value, &schema);
            lsn
        };
        Ok(Pending(lsn))
    }

    /// Deletes a row (all its columns return to their defaults). Returns whether it was
    /// stored.
    pub fn delete(&self, counter: &str, key: Key<'_>) -> Result<bool> {
        let (stored, pending) = self.delete_deferred(counter, key)?;
        self.commit(pending)?;
        Ok(stored)
    }

    /// [`Engine::delete`] without waiting for the log; see [`Engine::incr_deferred`].
    pub fn delete_deferred(&self, counter: &str, key: Key<'_>) -> Result<(bool, Pending)> {
        key.validate()?;
        let c = self.counter(counter)?;
        let schema = c.schema.read();
        let lsn = {
            let mut st = c.stripe(key).write();
            st.thaw_for(key, &schema)?;
            if !st.exists(key) {
                return Ok((false, Pending::NONE));
            }
            let lsn = self.inner.log.append(now_ms(), |b| {
                b.put_u8(5);
                b.put_str(counter);
                write_key(b, key);
            })?;
            st.delete(key, &schema);
            lsn
        };
        Ok((true, Pending(lsn)))
    }

    /// Deletes every row of a counter (its columns stay), as one log record, so the
    /// clear survives a restart like any other write. Exists for `FLUSHDB`: test
    /// fixtures empty the store before they start. Returns the rows removed and what to
    /// [`Engine::commit`] before acknowledging.
    pub fn clear_deferred(&self, counter: &str) -> Result<(u64, Pending)> {
        let c = self.counter(counter)?;
        let _schema = c.schema.read();
        // Every stripe at once (in index order, the only order anyone takes more than
        // one), so no write lands between the record and the clear.
        let mut stripes: Vec<_> = c.stripes.iter().map(|s| s.write()).collect();
        let rows: u64 = stripes.iter().map(|s| s.rows() as u64).sum();
        if rows == 0 {
            return Ok((0, Pending::NONE));
        }
        let lsn = self.inner.log.append(now_ms(), |b| {
            b.put_u8(6);
            b.put_str(counter);
        })?;
        for stripe in stripes.iter_mut() {
            stripe.clear();
        }
        Ok((rows, Pending(lsn)))
    }

    /// One column of one row (the column default if the row is not stored).
    pub fn get(&self, counter: &str, key: Key<'_>, column: &str) -> Result<u64> {
        key.validate()?;
        let c = self.counter(counter)?;
        let schema = c.schema.read();
        let col = col_index(&schema, counter, column)?;
        let v = c.stripe(key).read().read(key, col, &schema)?;
        Ok(v)
    }

    /// Every column of one row, as (column, value) in schema order.
    pub fn get_row(&self, counter: &str, key: Key<'_>) -> Result<Vec<(String, u64)>> {
        key.validate()?;
        let c = self.counter(counter)?;
        let schema = c.schema.read();
        let vals = c.stripe(key).read().read_row(key, &schema)?;
        Ok(schema.iter().map(|s| s.name.clone()).zip(vals).collect())
    }

    /// Whether a row is stored (some column away from its default).
    pub fn exists(&self, counter: &str, key: Key<'_>) -> Result<bool> {
        key.validate()?;
        let c = self.counter(counter)?;
        let v = c.stripe(key).read().read_exists(key)?;
        Ok(v)
    }

    /// [`Engine::exists`] for many rows in one call, in the order of `keys`: the
    /// counter found once, not once a key (a short links' flush asks this of every link
    /// it has no owner row cached for, ~300 instructions a link less). Each key gets
    /// its own answer, so one that cannot be read (a bad key, a damaged cold block)
    /// does not hide the others'; `Err` only for a missing counter.
    pub fn exists_many(&self, counter: &str, keys: &[Key<'_>]) -> Result<Vec<Result<bool>>> {
        let c = self.counter(counter)?;
        Ok(keys
            .iter()
            .map(|k| {
                k.validate()?;
                c.stripe(*k).read().read_exists(*k)
            })
            .collect())
    }

    /// One column of many rows in one call, in the order of `keys`.
    pub fn mget(&self, counter: &str, keys: &[Key<'_>], column: &str) -> Result<Vec<u64>> {
        for k in keys {
            k.validate()?;
        }
        let c = self.counter(counter)?;
        let schema = c.schema.read();
        let col = col_index(&schema, counter, column)?;
        keys.iter()
            .map(|k| c.stripe(*k).read().read(*k, col, &schema))
            .collect()
    }

    /// Every column of many rows in one call: the column names, then one row of values
    /// (in that order) per key.
    pub fn mget_rows(
        &self,
        counter: &str,
        keys: &[Key<'_>],
    ) -> Result<(Vec<String>, Vec<Vec<u64>>)> {
        for k in keys {
            k.validate()?;
        }
        let c = self.counter(counter)?;
        let schema = c.schema.read();
        let names = schema.iter().map(|s| s.name.clone()).collect();
        let rows = keys
            .iter()
            .map(|k| c.stripe(*k).read().read_row(*k, &schema))
            .collect::<Result<_>>()?;
        Ok((names, rows))
    }

    /// The keys of the rows stored in stripe `stripe` (below [`STRIPES`]) of `counter`:
    /// numeric ids in ascending order, then string keys in byte order. Exists for
    /// `SCAN`, which walks a counter one stripe at a time: the stripes are fixed, so a
    /// cursor naming the next stripe returns every row present for the whole walk
    /// exactly once, whatever the tables do in between. The stripe is read-locked while
    /// its keys are copied.
    pub fn row_keys(&self, counter: &str, stripe: usize) -> Result<Vec<crate::OwnedKey>> {
        let c = self.counter(counter)?;
        let Some(lock) = c.stripes.get(stripe) else {
            return Ok(Vec::new());
        };
        let schema = c.schema.read();
        let mut ids = Vec::new();
        let mut names = Vec::new();
        let st = lock.read();
        st.for_each_row(&schema, |key, _| match key {
            Key::Id(id) => ids.push(id),
            Key::Name(name) => names.push(name.to_string()),
        });
        ids.extend(st.cold_ids()?);
        names.extend(st.cold_names()?);
        drop(st);
        ids.sort_unstable();
        names.sort_unstable();
        Ok(ids
            .into_iter()
            .map(crate::OwnedKey::Id)
            .chain(names.into_iter().map(|n| crate::OwnedKey::Name(n.into())))
            .collect())
    }

    /// Figures for every counter (rows, bytes, overflow) and the log.
    pub fn stats(&self) -> Stats {
        let counters: Vec<Arc<Counter>> = self.inner.counters.read().values().cloned().collect();
        let mut out: Vec<CounterStats> = counters.iter().map(|c| counter_stats(c)).collect();
        out.sort_by(|a, b| a.name.cmp(&b.name));
        Stats {
            counters: out,
            next_lsn: self.inner.log.next_lsn(),
            log_bytes_since_snapshot: self.inner.log.bytes_since_rotate(),
            fsync: self.inner.opts.fsync,
            last_background_error: self.inner.last_bg_error.lock().clone(),
            last_fsync_unix_ms: self.inner.log.last_sync_ms(),
            last_snapshot_unix_ms: self.inner.last_snapshot_ms.load(Ordering::Relaxed),
            snapshots_written: self.inner.snapshots_written.load(Ordering::Relaxed),
            block_cache_bytes: self.inner.cold.cache_bytes(),
        }
    }

    /// Moves every dense partition not written for `older_than` (zero: every one) to
    /// the cold tier now, as the background pass does with [`Options::cold_after`].
    /// Exists for tests, benchmarks and operators who want RAM back at once.
    pub fn evict(&self, older_than: Duration) -> Result<Eviction> {
        self.inner.check_open()?;
        self.inner.evict(evict::Policy {
            cold_after: Some(older_than),
            max_memory: None,
        })
    }

    /// The lsn the next record gets: every record below it is applied here. A follower
    /// and its leader agree on lsns, so this says how far a follower has come.
    pub fn next_lsn(&self) -> u64 {
        self.inner.log.next_lsn()
    }

    /// Every record below it is durable: as [`Options::fsync`] promises and, with a
    /// [`LogOfRecord`] attached, stored there. Exists so a leader ships only snapshots
    /// whose every row is in its log of record (a snapshot copies each stripe as it is,
    /// so it may hold the effect of a record the log of record never took).
    pub fn durable_lsn(&self) -> u64 {
        self.inner.log.durable()
    }

    /// Makes the engine refuse its own writes ([`Error::ReadOnly`]) while it follows a
    /// replicated log, or take them again when it leads. Reads are never affected.
    pub fn set_read_only(&self, read_only: bool) {
        self.inner.log.set_read_only(read_only);
    }

    /// Whether the engine refuses its own writes.
    pub fn is_read_only(&self) -> bool {
        self.inner.log.is_read_only()
    }

    /// Attaches the log of record every written batch must reach before it is
    /// acknowledged (`None` detaches it: the local log alone again). Pending records are
    /// written out first. See [`LogOfRecord`].
    pub fn set_log_of_record(&self, sink: Option<Arc<dyn LogOfRecord>>) -> Result<()> {
        self.inner.check_open()?;
        self.inner.log.set_log_of_record(sink)
    }

    /// Applies a batch of the leader's records (as its [`LogOfRecord`] received them)
    /// on a follower: CRCs and the lsn sequence are checked first (a damaged batch or a
    /// gap changes nothing and is an [`Error::BadBatch`]); records already applied are
    /// skipped, so a redelivery is harmless. Transaction ids travel with the records,
    /// so a retried increment is counted once whichever node applies it.
    pub fn apply_replicated(&self, frames: &[u8]) -> Result<Applied> {
        self.inner.check_open()?;
        let cutoff = now_ms().saturating_sub(self.inner.opts.txid_window.as_millis() as u64);
        let applied = replicated::apply(&self.inner.log, &self.inner.counters, frames, cutoff)?;
        self.inner.log.flush(false)?;
        Ok(applied)
    }

    /// A digest of counter `only` (every counter when `None`) at the lsn it reports:
    /// two engines with equal digests at equal lsns hold the same rows. Exists so an
    /// operator (or a test) can ask every replica whether it agrees with its leader.
    /// [`Error::Busy`] when writes never paused long enough for a consistent read, or
    /// rows live in the cold tier (the digest reads memory only).
    pub fn digest(&self, only: Option<&str>) -> Result<crate::Digest> {
        self.inner.check_open()?;
        crate::digest::digest(&self.inner.log, &self.inner.counters, only)
    }

    /// Writes a snapshot now (on the calling thread) and rotates the log; writers wait
    /// only while their own stripe is copied. The background thread calls the same code.
    pub fn snapshot(&self) -> Result<SnapshotInfo> {
        self.inner.check_open()?;
        self.inner.snapshot()
    }

    /// How many snapshots this engine wrote since it opened: a caller that ships them
    /// elsewhere lists [`Engine::snapshot_files`] only when this moved.
    pub fn snapshots_written(&self) -> u64 {
        self.inner.snapshots_written.load(Ordering::Relaxed)
    }

    /// The finished snapshot files in the data directory as (rotation point X, path),
    /// newest first. Exists so a server can ship them elsewhere (e.g. to an object store
    /// a new node restores from with [`crate::restore_snapshot`]); a file may be pruned
    /// by a newer snapshot while the caller reads it, so a failed read means "list again".
    pub fn snapshot_files(&self) -> Result<Vec<(u64, PathBuf)>> {
        snapshot::list(&self.inner.dir)
    }

    /// Flushes and fsyncs the log, stops the background threads. Also done on drop.
    pub fn close(self) -> Result<()> {
        self.shutdown()
    }

    fn shutdown(&self) -> Result<()> {
        if self.inner.closed.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        *self.inner.stop.lock() = true;
        self.inner.wake.notify_all();
        for t in self.threads.lock().drain(..) {
            let _ = t.join();
        }
        self.inner.log.flush(true)
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        let _ = self.shutdown();
    }
}

/// The log position a deferred write's acknowledgement has to wait for
/// ([`Engine::commit`]). Exists so a caller can apply many writes and wait for the disk
/// once, for the newest of them (`a.max(b)`): records become durable in log order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
#[must_use = "a deferred write must be committed before it is acknowledged"]
pub struct Pending(u64);

impl Pending {
    /// Nothing to wait for (a write that changed nothing).
    pub const NONE: Pending = Pending(0);

    /// Whether there is anything to wait for.
    pub fn is_none(&self) -> bool {
        self.0 == 0
    }

    /// The log position (log sequence number) waited for; 0 for none.
    pub fn position(&self) -> u64 {
        self.0
    }

    /// A wait for everything up to log position `lsn` (e.g. the highest of many
    /// connections' positions, for one shared fsync).
    pub fn at(lsn: u64) -> Pending {
        Pending(lsn)
    }
}

/// Items of an [`Engine::incr_batch`] applied under one taking of the locks.
const BATCH_RUN: usize = 1024;
/// Ops of an [`Engine::incr_run`] looked up together (see `Table::incr_many`'s `GROUP`
/// for how 32 was chosen).
const INCR_GROUP: usize = 32;

/// Rows of an [`Engine::incr_rows`] call ahead of the one written whose string key's
/// index line is asked for (and its record half as far ahead): a row's write takes
/// ~1 µs, a line from memory ~0.1-0.3 µs, so two would do; four leaves room for
/// rows written faster than that.
const AHEAD: usize = 4;

/// Locks every stripe of `c` in `stripes` (with repeats), in index order (the one order anyone
/// takes more than one stripe in): the guards, and for each stripe its guard's place
/// among them (`usize::MAX` for a stripe not locked).
fn lock_stripes<'c>(
    c: &'c Counter,
    stripes: impl Iterator<Item = usize>,
) -> (
    Vec<parking_lot::RwLockWriteGuard<'c, crate::stripe::Stripe>>,
    [usize; STRIPES],
) {
    let mut wanted = [false; STRIPES];
    for s in stripes {
        wanted[s] = true;
    }
    let mut slot = [usize::MAX; STRIPES];
    let mut guards = Vec::with_capacity(wanted.iter().filter(|&&w| w).count());
    for (s, _) in wanted.iter().enumerate().filter(|(_, &w)| w) {
        slot[s] = guards.len();
        guards.push(c.stripes[s].write());
    }
    (guards, slot)
}

/// The refusal of a row's first item, again for each of its others (`Error` is not
/// `Clone`: it may hold an `io::Error`). A key is refused by its validation or by
/// bringing its cold partition back, so only those errors occur here.
fn refused_again(e: &Error) -> Error {
    match e {
        Error::BadKey(why) => Error::BadKey(why),
        Error::ColdBlock { path, source } => Error::ColdBlock {
            path: path.clone(),
            source: source.clone(),
        },
        Error::Io { path, source } => Error::Io {
            path: path.clone(),
            source: std::io::Error::new(source.kind(), source.to_string()),
        },
        other => Error::LogFailed(other.to_string()),
    }
}

fn col_index(schema: &[ColumnSpec], counter: &str, column: &str) -> Result<usize> {
    schema
        .iter()
        .position(|s| s.name == column)
        .ok_or_else(|| Error::NoSuchColumn {
            counter: counter.to_string(),
            column: column.to_string(),
        })
}

fn counter_stats(c: &Counter) -> CounterStats {
    let mut s = CounterStats {
        name: c.name.clone(),
        columns: c.schema.read().len(),
        ..Default::default()
    };
    s.block_cache_hits = c.cold_stats.cache_hits.load(Ordering::Relaxed);
    s.cold_reads = c.cold_stats.cold_reads.load(Ordering::Relaxed);
    for st in c.stripes.iter() {
        let st = st.read();
        s.rows += st.rows() as u64;
        s.hot_rows += st.hot_rows() as u64;
        s.cold_rows += st.cold_rows() as u64;
        s.bytes_disk += st.cold_bytes_disk();
        s.named_rows += st.named_rows() as u64;
        s.bytes += st.bytes() as u64;
        s.overflow_entries += st.overflow_len() as u64;
        s.txids += st.txids.len() as u64;
        s.name_runs += st.name_runs().len() as u64;
        let (d, w) = st.partitions();
        s.dense_partitions += d as u64;
        s.wide_partitions += w as u64;
    }
    s.bytes += (std::mem::size_of::<Counter>()
        + STRIPES * std::mem::size_of::<RwLock<crate::stripe::Stripe>>()) as u64;
    s.bytes_per_row = if s.rows == 0 {
        0.0
    } else {
        s.bytes as f64 / s.rows as f64
    };
    s
}

impl Inner {
    fn check_open(&self) -> Result<()> {
        if self.closed.load(Ordering::Acquire) {
            return Err(Error::Closed);
        }
        Ok(())
    }

    /// Sleeps up to `d`; returns true when the engine is stopping.
    fn sleep(&self, d: Duration) -> bool {
        let mut stop = self.stop.lock();
        if !*stop {
            self.wake.wait_for(&mut stop, d);
        }
        *stop
    }

    /// Log bytes since the last snapshot that start the next one: `min_bytes`, or the
    /// growth percent of the last snapshot's size when that is more.
    fn log_trigger(&self, min_bytes: u64) -> u64 {
        let growth = self.opts.snapshot_growth_percent.map_or(0, |pct| {
            self.last_snapshot_bytes.load(Ordering::Relaxed) / 100 * u64::from(pct)
        });
        min_bytes.max(growth)
    }

    fn snapshot(&self) -> Result<SnapshotInfo> {
        let _one_at_a_time = self.snap_lock.lock();
        let started = Instant::now();
        let x = self.log.rotate()?;
        let mut counters: Vec<Arc<Counter>> = self.counters.read().values().cloned().collect();
        counters.sort_by(|a, b| a.name.cmp(&b.name));
        let mut w = snapshot::SnapWriter::create(&self.dir, x, STRIPES)?;
        let mut rows = 0;
        let mut cold_refs = Vec::new();
        let mut longest_pause = Duration::ZERO;
        for (idx, c) in counters.iter().enumerate() {
            for s in 0..STRIPES {
                let t = Instant::now();
                let (lsn, copy, specs) = {
                    let schema = c.schema.read();
                    let st = c.stripes[s].read();
                    (self.log.next_lsn(), st.clone(), schema.clone())
                };
                longest_pause = longest_pause.max(t.elapsed());
                rows += w.stripe_rows(idx, s, lsn, &copy, &specs)?;
                w.cold_parts(idx, s, lsn, &copy)?;
                w.name_runs(idx, s, lsn, copy.name_runs())?;
                for (_, part) in copy.cold_parts() {
                    cold_refs.push(part.file().seq());
                }
                cold_refs.extend(copy.name_runs().iter().map(|r| r.file().seq()));
                w.txids(idx, s, lsn, copy.txids.iter())?;
            }
            let specs = c.schema.read().clone();
            w.counter(idx, &c.name, &specs)?;
        }
        cold_refs.sort_unstable();
        cold_refs.dedup();
        // The list of batches it relies on is durable before the snapshot is in place.
        cold::write_refs(&self.dir, x, &cold_refs)?;
        let path = w.finish(&self.dir)?;
        if let Ok(meta) = std::fs::metadata(&path) {
            self.last_snapshot_bytes
                .store(meta.len(), Ordering::Relaxed);
        }
        self.last_snapshot_ms.store(now_ms(), Ordering::Relaxed);
        self.snapshots_written.fetch_add(1, Ordering::Relaxed);
        self.prune()?;
        Ok(SnapshotInfo {
            path,
            lsn: x,
            rows,
            duration: started.elapsed(),
            longest_stripe_pause: longest_pause,
        })
    }

    /// Keeps the newest `keep_snapshots` snapshots and the log segments they need.
    fn prune(&self) -> Result<()> {
        let snaps = snapshot::list(&self.dir)?;
        let keep = self.opts.keep_snapshots.max(1);
        for (_, p) in snaps.iter().skip(keep) {
            std::fs::remove_file(p).map_err(io_err(p))?;
        }
        let Some((oldest_kept, _)) = snaps.iter().take(keep).next_back() else {
            return Ok(());
        };
        let segs = logread::list_segments(&self.dir)?;
        for pair in segs.windows(2) {
            if pair[1].first_lsn <= *oldest_kept {
                std::fs::remove_file(&pair[0].path).map_err(io_err(&pair[0].path))?;
            }
        }
        self.collect_cold_garbage()
    }

    /// Deletes the cold files neither a kept snapshot nor a live partition names.
    fn collect_cold_garbage(&self) -> Result<()> {
        let _no_eviction = self.evict_lock.lock();
        let keep = self.opts.keep_snapshots.max(1);
        let kept: Vec<u64> = snapshot::list(&self.dir)?
            .into_iter()
            .take(keep)
            .map(|(x, _)| x)
            .collect();
        let mut live = FastMap::default();
        for c in self.counters.read().values() {
            for st in c.stripes.iter() {
                let st = st.read();
                for (_, part) in st.cold_parts() {
                    live.insert(part.file().seq(), ());
                }
                for run in st.name_runs() {
                    live.insert(run.file().seq(), ());
                }
            }
        }
        cold::collect_garbage(&self.dir, &kept, &live)
    }

    /// One eviction pass under `policy`.
    fn evict(&self, policy: evict::Policy) -> Result<Eviction> {
        let _one_at_a_time = self.evict_lock.lock();
        let mut counters: Vec<Arc<Counter>> = self.counters.read().values().cloned().collect();
        counters.sort_by(|a, b| a.name.cmp(&b.name));
        let bytes_now = if policy.max_memory.is_some() {
            counters.iter().map(|c| counter_stats(c).bytes).sum()
        } else {
            0
        };
        let out = evict::pass(&counters, &self.cold, policy, now_ms(), bytes_now)?;
        if out.partitions > 0 || out.name_rows > 0 {
            crate::hugemem::trim_heap();
        }
        Ok(out)
    }
}

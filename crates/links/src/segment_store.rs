//! The embedded [`LinkStore`] of the server: link records in append-only segment
//! files, found through a dense offset index, with redb for everything else.
//!
//! Files, beside each other in the data directory:
//!
//! - `links.redb`: `link_ids` (id -> record key) and `link_urls` (the reuse index) for
//!   the links made since the last fold (below), `link_aliases`, `link_tags`,
//!   `link_wide_codes` (as in [`crate::CompactLinkStore`], whose keys are the same),
//!   `link_far` (record key -> location for the rare keys past the dense index), and
//!   `link_meta`: `format` (4), `locator`, `wide_next`, `end` (the segments' committed
//!   high-water mark), `indexed` (how far the offset index is known durable),
//!   `index_groups` (a bit per group whose slot file the store has made: one of them
//!   gone from disk makes the open rebuild the whole index from the segments instead
//!   of trusting what is left), `links` (how many are stored), `id_runs` and
//!   `url_runs` (the run files that count) and `next_run`.
//! - `links.segments/seg-NNNNNN`: every version of every record ([`crate::segment_log`]);
//!   `links.segments/index-gNN`: the dense offset index ([`crate::offset_index`]);
//!   `links.segments/ids-NNNNNNNN.run` and `urls-NNNNNNNN.run`: the folded id and reuse
//!   indexes ([`crate::sorted_run`]).
//!
//! Folds: once [`FOLD_LINKS`] links have been made since the last one, the pairs of
//! `link_ids` and `link_urls` are written out as sorted, packed runs (merged with the
//! newest runs of similar size, [`crate::run_set`]) and deleted from redb in the commit
//! that names the new runs. redb keeps ~32 bytes a pair for these two (16 of key and
//! value in leaves half to two thirds full, plus its file's unallocated tail); a run
//! keeps 4-12. A pair in a run is checked against the record it points at (runs keep
//! the pairs of deleted and replaced links).
//!
//! A generated code is turned into its record key by inverting the Feistel step
//! ([`crate::locator`]); its slot gives the record's location; so a redirect is one
//! `pread` (the slot held in memory, [`crate::slot_table`]) or two (a slot past the
//! budget) and no redb read. An alias takes one redb read first.
//!
//! A commit (a whole write group): frames appended and fsynced, then one redb commit
//! (aliases, ids, tags, reuse entries and the new `end`), then the slots written. After
//! a crash the last segment is cut back to `end` (nothing torn or uncommitted is ever
//! read) and the frames after `indexed` are replayed into the index. Updates append a
//! new version and repoint the slot; deletes append a 16-byte tombstone. Old versions
//! stay: there is no compaction, so the segments hold every version ever written
//! (bound: the bytes of all records and replacements written, plus 16 per delete).
//!
//! Memory: `cache_bytes` ([`SegmentLinkStore::open`]) is split between redb's page
//! cache ([`redb_cache_bytes`]) and the offset index's slots held packed in memory
//! (the rest: ~2.25 bytes a link, so the default 256 MiB holds 100 M links' slots);
//! segments, and the slots past that budget, are read with `pread` (no mmap), so they
//! sit in the kernel's page cache, not in the process: resident memory does not grow
//! past `cache_bytes` with the number of links.
//!
//! Why one file of this size: every write of the store is one redb transaction over the
//! files listed above; the ordering that makes a crash safe is visible only with all of
//! them in view.

use crate::code::{looks_generated, Codec};
use crate::compact_store::{backend, ALIASES, IDS, META, TAGS, URLS, WIDE};
use crate::error::StoreError;
use crate::locator::Locator;
use crate::model::Link;
use crate::offset_index::{is_dense, OffsetIndex};
use crate::run_set::RunSet;
use crate::segment_batch::{decode_frame, Batch, FAR};
use crate::segment_log::{split, SegmentLog, SEGMENT_BYTES};
use crate::store::{write_one, InsertOutcome, LinkStore, Write, Written};
use redb::{Database, ReadableTable, ReadableTableMetadata, WriteTransaction};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The part of the store's `cache_bytes` that is redb's page cache: an eighth, and
/// at least half of it up to 16 MiB. redb holds aliases, tags and the ids and URLs of
/// the links made since the last fold, so a redirect of a generated code never reads
/// it; the rest holds the offset index's slots ([`crate::slot_table`]).
pub(crate) fn redb_cache_bytes(cache_bytes: usize) -> usize {
    (cache_bytes / 8).max((cache_bytes / 2).min(16 << 20))
}

/// The layout version in `link_meta` `format`: 4 since ids and URLs are folded into
/// runs (a store of format 3 is the same without runs, and is read as it is).
pub(crate) const FORMAT: u8 = 4;
/// What the URL runs keep of a URL's hash: its top 32 bits. Pairs then differ from
/// the one before by a few units (1-2 bytes, against 6-7 for the whole hash); a link
/// whose URL shares the prefix costs one more record read, which checks the URL.
fn url_prefix(hash: u64) -> u64 {
    hash >> 32
}

/// Links made between two folds of `link_ids` and `link_urls` into runs: what redb
/// holds of those two at most (~32 bytes each, so ~16 MiB).
pub const FOLD_LINKS: u64 = 1 << 18;
/// Segment bytes written between two fsyncs of the offset index: the most a start
/// replays after a crash.
const CHECKPOINT_BYTES: u64 = 32 << 20;

/// What [`SegmentLinkStore::fold_stats`] answers: for tests, benchmarks and operators
/// who want to see where the id and reuse indexes are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FoldStats {
    /// Id pairs in runs (some may be of deleted links).
    pub id_pairs: u64,
    /// URL pairs in runs (some may be of deleted or replaced links).
    pub url_pairs: u64,
    /// Bytes of every run file.
    pub run_bytes: u64,
    /// Run files, both indexes.
    pub runs: u64,
    /// Folds done since the store opened.
    pub folds: u64,
    /// Folds that failed since the store opened (their pairs stay in redb).
    pub fold_errors: u64,
}

/// Links in segment files, found by code through a dense offset index.
pub struct SegmentLinkStore {
    db: Database,
    locator: Locator,
    log: SegmentLog,
    index: OffsetIndex,
    id_runs: RunSet,
    url_runs: RunSet,
    /// Links stored, as of the last commit (what `count` answers without the writer's lock).
    links: std::sync::atomic::AtomicU64,
    writer: Mutex<WriterState>,
    /// Groups whose slot files were missing at open (the index was rebuilt).
    rebuilt: u64,
}

/// What the one writer at a time knows.
struct WriterState {
    /// The committed end of the segments.
    end: u64,
    /// Segment bytes committed since the offset index was last fsynced.
    unsynced: u64,
    /// Set when slots could not be written after a commit: the index is behind the
    /// segments until a restart replays them, so writes are refused.
    failed: Option<String>,
    /// The groups (a bit each) recorded in `index_groups`.
    groups: u64,
    /// Links stored (`links` in `link_meta`).
    links: u64,
    /// Links made since the last fold (or the last fold that failed).
    unfolded: u64,
    /// The number of the next run file.
    next_run: u64,
    /// Folds done and failed since the store opened.
    folds: u64,
    fold_errors: u64,
}

impl std::fmt::Debug for SegmentLinkStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SegmentLinkStore")
    }
}

/// The directory of the segments that belong to the redb file at `path`.
pub fn segments_dir(path: &Path) -> PathBuf {
    path.with_extension("segments")
}

fn meta_u64(txn: &WriteTransaction, name: &str) -> Result<Option<u64>, StoreError> {
    let meta = txn.open_table(META).map_err(backend)?;
    let value = meta.get(name).map_err(backend)?;
    Ok(value
        .and_then(|v| <[u8; 8]>::try_from(v.value()).ok())
        .map(u64::from_le_bytes))
}

fn meta_text(txn: &WriteTransaction, name: &str) -> Result<String, StoreError> {
    let meta = txn.open_table(META).map_err(backend)?;
    let value = meta.get(name).map_err(backend)?;
    Ok(value
        .map(|v| String::from_utf8_lossy(v.value()).into_owned())
        .unwrap_or_default())
}

fn set_meta_text(txn: &WriteTransaction, name: &str, value: &str) -> Result<(), StoreError> {
    txn.open_table(META)
        .map_err(backend)?
        .insert(name, value.as_bytes())
        .map_err(backend)?;
    Ok(())
}

fn set_meta_u64(txn: &WriteTransaction, name: &str, value: u64) -> Result<(), StoreError> {
    txn.open_table(META)
        .map_err(backend)?
        .insert(name, value.to_le_bytes().as_slice())
        .map_err(backend)?;
    Ok(())
}

impl SegmentLinkStore {
    /// Opens (or creates) the store whose redb file is `path` (segments in
    /// [`segments_dir`]) in `cache_bytes` of memory: redb's page cache and the offset
    /// index's slots held in memory share it (the module's "Memory"). A new store keeps
    /// `codec` for its keys; an existing one its own. A `links.redb` of either older
    /// format (JSON records, or [`crate::CompactLinkStore`]'s records in redb) is
    /// converted first. Fails if another process has it open, or it is of a newer format.
    pub fn open(
        path: impl AsRef<Path>,
        codec: Codec,
        cache_bytes: usize,
    ) -> Result<Self, StoreError> {
        let path = path.as_ref();
        let dir = segments_dir(path);
        crate::segment_convert::older_to_compact(path, &codec, cache_bytes)?;
        let db = redb::Builder::new()
            .set_cache_size(redb_cache_bytes(cache_bytes))
            .create(path)
            .map_err(|e| StoreError::Backend(format!("cannot open {}: {e}", path.display())))?;
        let txn = db.begin_write().map_err(backend)?;
        let format = txn
            .open_table(META)
            .map_err(backend)?
            .get("format")
            .map_err(backend)?
            .map(|v| v.value().to_vec());
        let locator = match format.as_deref() {
            None => {
                let locator = Locator::new(codec);
                let mut meta = txn.open_table(META).map_err(backend)?;
                meta.insert("format", [FORMAT].as_slice())
                    .map_err(backend)?;
                meta.insert("locator", locator.to_bytes().as_slice())
                    .map_err(backend)?;
                locator
            }
            Some([2]) | Some([3]) | Some([FORMAT]) => {
                let meta = txn.open_table(META).map_err(backend)?;
                let saved = meta.get("locator").map_err(backend)?;
                saved
                    .and_then(|v| Locator::from_bytes(v.value()))
                    .ok_or_else(|| {
                        StoreError::Backend(format!(
                            "{} has no readable code layout (link_meta locator): the file \
                             is damaged; restore it from a backup",
                            path.display()
                        ))
                    })?
            }
            Some(other) => {
                return Err(StoreError::Backend(format!(
                    "{} holds links in format {other:?}, newer than this shardkit reads \
                     ({FORMAT}); run the shardkit that wrote it, or export and import the links",
                    path.display()
                )))
            }
        };
        txn.open_table(IDS).map_err(backend)?;
        txn.open_table(WIDE).map_err(backend)?;
        txn.open_table(FAR).map_err(backend)?;
        txn.open_table(ALIASES).map_err(backend)?;
        txn.open_table(URLS).map_err(backend)?;
        txn.open_multimap_table(TAGS).map_err(backend)?;
        let end = meta_u64(&txn, "end")?;
        let groups;
        let mut rebuilt = 0u64;
        let (log, index, end) = match (format.as_deref(), end) {
            (Some([3] | [FORMAT]), Some(end)) => {
                let log = SegmentLog::open(&dir, Some(end))?;
                let index = OffsetIndex::open(&dir);
                let mut indexed = meta_u64(&txn, "indexed")?.unwrap_or(end);
                // Unknown (a store from before the record) counts as all missing.
                let recorded = meta_u64(&txn, "index_groups")?;
                rebuilt = recorded.map_or(u64::MAX, |bits| index.missing(bits));
                if rebuilt != 0 {
                    OffsetIndex::clear(&dir)?;
                    indexed = SegmentLog::first_frame();
                }
                let seen = replay(&log, &index, indexed, end)?;
                groups = if rebuilt != 0 {
                    seen
                } else {
                    recorded.unwrap_or(0) | seen
                };
                set_meta_u64(&txn, "indexed", end)?;
                set_meta_u64(&txn, "index_groups", groups)?;
                (log, index, end)
            }
            (Some([3] | [FORMAT]), None) => {
                return Err(StoreError::Backend(format!(
                    "{} has no committed segment end (link_meta end): the file is damaged; \
                     restore the data directory from a backup",
                    path.display()
                )))
            }
            // New, or being converted from redb records: the segments start empty.
            _ => {
                crate::offset_index::OffsetIndex::clear(&dir)?;
                let log = SegmentLog::open(&dir, None)?;
                let index = OffsetIndex::open(&dir);
                let end = crate::segment_convert::records_to_segments(
                    &txn,
                    &log,
                    &index,
                    log.fresh_end(),
                )?;
                set_meta_u64(&txn, "end", end)?;
                set_meta_u64(&txn, "indexed", end)?;
                groups = index.present();
                set_meta_u64(&txn, "index_groups", groups)?;
                (log, index, end)
            }
        };
        let unfolded = txn
            .open_table(IDS)
            .map_err(backend)?
            .len()
            .map_err(backend)?;
        // A store from before folds counts its links in `link_ids`, which holds them all.
        let links = match meta_u64(&txn, "links")? {
            Some(n) => n,
            None => unfolded,
        };
        set_meta_u64(&txn, "links", links)?;
        let next_run = meta_u64(&txn, "next_run")?.unwrap_or(1);
        let id_runs = RunSet::open(&dir, "ids", &meta_text(&txn, "id_runs")?)?;
        let url_runs = RunSet::open(&dir, "urls", &meta_text(&txn, "url_runs")?)?;
        txn.open_table(META)
            .map_err(backend)?
            .insert("format", [FORMAT].as_slice())
            .map_err(backend)?;
        txn.commit().map_err(backend)?;
        index.hold(cache_bytes - redb_cache_bytes(cache_bytes))?;
        Ok(Self {
            db,
            locator,
            log,
            index,
            id_runs,
            url_runs,
            links: std::sync::atomic::AtomicU64::new(links),
            writer: Mutex::new(WriterState {
                end,
                unsynced: 0,
                failed: None,
                groups,
                links,
                unfolded,
                next_run,
                folds: 0,
                fold_errors: 0,
            }),
            rebuilt,
        })
    }

    /// Bytes of the offset index's slots held in memory, and the most they may take
    /// (`cache_bytes` less redb's share): a slot past that is read from its file.
    pub fn index_memory(&self) -> (usize, usize) {
        self.index.held()
    }

    /// The groups (a bit each, group `g` is bit `g`) whose offset-index file was
    /// missing at open although the store had made it, so that the whole index was
    /// rebuilt from the segments (all bits for a store that did not record them yet):
    /// 0 on a normal open. The server logs it, as a file gone from the data
    /// directory is worth an operator's look.
    pub fn index_rebuilt(&self) -> u64 {
        self.rebuilt
    }

    /// `writes` in one commit (see the module doc). `Err` if any write failed
    /// part-way (nothing of the group is then stored); a `replace` of a missing link,
    /// or one that changes the code, fails before it changes anything, so it is only
    /// that write's error.
    fn write_together(
        &self,
        writes: &[Write],
    ) -> Result<Vec<Result<Written, StoreError>>, StoreError> {
        let mut w = self.writer.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(reason) = &w.failed {
            return Err(StoreError::Backend(format!(
                "link writes are stopped until a restart: {reason}"
            )));
        }
        if split(w.end).1 >= SEGMENT_BYTES {
            let start = self.log.roll()?;
            let txn = self.db.begin_write().map_err(backend)?;
            set_meta_u64(&txn, "end", start)?;
            txn.commit().map_err(backend)?;
            w.end = start;
        }
        let checkpoint = w.unsynced >= CHECKPOINT_BYTES;
        if checkpoint {
            // Every slot of the commits so far is written: make them durable, so a
            // restart replays only what comes after.
            self.index.sync()?;
        }
        let txn = self.db.begin_write().map_err(backend)?;
        let mut batch = Batch::new(
            &txn,
            &self.locator,
            &self.log,
            &self.index,
            &self.id_runs,
            w.end,
        );
        let mut results = Vec::with_capacity(writes.len());
        for write in writes {
            results.push(match write {
                Write::Insert(links) => Ok(Written::Inserted(batch.insert(links)?)),
                Write::Replace(link) => match batch.replace(link) {
                    Ok(()) => Ok(Written::Replaced),
                    Err(e @ (StoreError::Missing(_) | StoreError::Immutable(_))) => Err(e),
                    Err(e) => return Err(e),
                },
                Write::Delete(link) => Ok(Written::Deleted(batch.delete(link.id)?)),
            });
        }
        let Batch {
            start,
            frames,
            dense,
            added,
            ..
        } = batch;
        let links = w.links.saturating_add_signed(added);
        if added != 0 {
            set_meta_u64(&txn, "links", links)?;
        }
        let end = start + frames.len() as u64;
        let groups = dense
            .iter()
            .fold(w.groups, |bits, &(key, _)| bits | 1 << (key & 63));
        if groups != w.groups {
            // Recorded before the slot files are made: a crash between leaves a group
            // recorded and no file, which the next open rebuilds.
            set_meta_u64(&txn, "index_groups", groups)?;
        }
        if !frames.is_empty() {
            if let Err(e) = self.log.append(start, &frames) {
                let _ = self.log.cut(start);
                return Err(e);
            }
        }
        set_meta_u64(&txn, "end", end)?;
        if checkpoint {
            set_meta_u64(&txn, "indexed", start)?;
        }
        if let Err(e) = txn.commit() {
            let _ = self.log.cut(start);
            return Err(backend(e));
        }
        w.end = end;
        w.groups = groups;
        w.links = links;
        self.links
            .store(links, std::sync::atomic::Ordering::Release);
        w.unfolded += added.max(0) as u64;
        if checkpoint {
            w.unsynced = 0;
        }
        w.unsynced += frames.len() as u64;
        if let Err(e) = self.index.set(&dense) {
            w.failed = Some(e.to_string());
            return Err(StoreError::Backend(format!(
                "the links were stored, but their index could not be written ({e}); \
                 restart the server to rebuild it"
            )));
        }
        if w.unfolded >= FOLD_LINKS {
            // The links are stored either way; a fold that fails is tried again after
            // as many more, while redb keeps holding their pairs.
            match self.fold(&mut w) {
                Ok(()) => w.folds += 1,
                Err(_) => w.fold_errors += 1,
            }
            w.unfolded = 0;
        }
        Ok(results)
    }

    /// Moves every pair of `link_ids` and `link_urls` into runs (see the module doc).
    fn fold(&self, w: &mut WriterState) -> Result<(), StoreError> {
        let (ids, urls) = {
            let txn = self.db.begin_read().map_err(backend)?;
            let mut ids = Vec::new();
            for pair in txn
                .open_table(IDS)
                .map_err(backend)?
                .iter()
                .map_err(backend)?
            {
                let (id, key) = pair.map_err(backend)?;
                ids.push((id.value(), key.value()));
            }
            let mut urls = Vec::new();
            for entry in txn
                .open_table(URLS)
                .map_err(backend)?
                .iter()
                .map_err(backend)?
            {
                let entry = entry.map_err(backend)?.0.value();
                urls.push((url_prefix((entry >> 64) as u64), entry as u64));
            }
            // Cut to their prefixes, the URL pairs are no longer in order.
            urls.sort_unstable();
            urls.dedup();
            (ids, urls)
        };
        let number = w.next_run;
        let id_fold = self.id_runs.fold(number, &ids)?;
        let url_fold = match self.url_runs.fold(number, &urls) {
            Ok(f) => f,
            Err(e) => {
                self.id_runs.abandon(id_fold);
                return Err(e);
            }
        };
        let recorded = (|| {
            let txn = self.db.begin_write().map_err(backend)?;
            txn.delete_table(IDS).map_err(backend)?;
            txn.delete_table(URLS).map_err(backend)?;
            txn.open_table(IDS).map_err(backend)?;
            txn.open_table(URLS).map_err(backend)?;
            set_meta_text(&txn, "id_runs", &id_fold.names)?;
            set_meta_text(&txn, "url_runs", &url_fold.names)?;
            set_meta_u64(&txn, "next_run", number + 1)?;
            txn.commit().map_err(backend)
        })();
        match recorded {
            Ok(()) => {
                w.next_run = number + 1;
                self.id_runs.finish(id_fold);
                self.url_runs.finish(url_fold);
                Ok(())
            }
            Err(e) => {
                self.id_runs.abandon(id_fold);
                self.url_runs.abandon(url_fold);
                Err(e)
            }
        }
    }

    /// Moves what redb holds of the id and reuse indexes into runs now (a fold
    /// otherwise runs every [`FOLD_LINKS`] links made): for a bulk load that has
    /// ended, or a test.
    pub fn fold_now(&self) -> Result<(), StoreError> {
        let mut w = self.writer.lock().unwrap_or_else(|p| p.into_inner());
        self.fold(&mut w)?;
        w.folds += 1;
        w.unfolded = 0;
        Ok(())
    }

    /// What the folded indexes hold now, and the folds since the store opened.
    pub fn fold_stats(&self) -> FoldStats {
        let w = self.writer.lock().unwrap_or_else(|p| p.into_inner());
        let (id_pairs, id_bytes, id_runs) = self.id_runs.totals();
        let (url_pairs, url_bytes, url_runs) = self.url_runs.totals();
        FoldStats {
            id_pairs,
            url_pairs,
            run_bytes: id_bytes + url_bytes,
            runs: id_runs + url_runs,
            folds: w.folds,
            fold_errors: w.fold_errors,
        }
    }

    /// The link with id `id`, from `link_ids` or the id runs (a run's pair checked
    /// against the record). `txn` is begun before the runs are looked at, so a fold
    /// finishing meanwhile is seen on one side or the other.
    fn link_of_id(&self, txn: &redb::ReadTransaction, id: u64) -> Result<Option<Link>, StoreError> {
        let key = txn
            .open_table(IDS)
            .map_err(backend)?
            .get(id)
            .map_err(backend)?
            .map(|k| k.value());
        if let Some(key) = key {
            return self.read(Some(txn), key);
        }
        for key in self.id_runs.get(id)? {
            if let Some(link) = self.read(Some(txn), key)?.filter(|l| l.id == id) {
                return Ok(Some(link));
            }
        }
        Ok(None)
    }

    /// Where the record with `key` is, through the index or `link_far`.
    fn location(
        &self,
        txn: Option<&redb::ReadTransaction>,
        key: u64,
    ) -> Result<Option<u64>, StoreError> {
        if is_dense(key) {
            return self.index.get(key);
        }
        let own;
        let txn = match txn {
            Some(t) => t,
            None => {
                own = self.db.begin_read().map_err(backend)?;
                &own
            }
        };
        let far = txn.open_table(FAR).map_err(backend)?;
        let loc = far.get(key).map_err(backend)?.map(|v| v.value());
        Ok(loc)
    }

    /// The link with record key `key`.
    fn read(
        &self,
        txn: Option<&redb::ReadTransaction>,
        key: u64,
    ) -> Result<Option<Link>, StoreError> {
        let Some(loc) = self.location(txn, key)? else {
            return Ok(None);
        };
        decode_frame(&self.locator, key, &self.log.read(loc)?).map(Some)
    }

    /// The record key of a stored code, from the code itself or the wide-code table.
    fn key_of(&self, code: &str) -> Result<Option<u64>, StoreError> {
        if let Some(key) = self.locator.key_of(code) {
            return Ok(Some(key));
        }
        let txn = self.db.begin_read().map_err(backend)?;
        let wide = txn.open_table(WIDE).map_err(backend)?;
        let key = wide.get(code.as_bytes()).map_err(backend)?;
        Ok(key.map(|k| k.value()))
    }
}

/// Whether `link` is the one at `/{path}`: a code whose key holds another link's record
/// (only a wide code could) is absent.
fn reached_at(link: &Link, path: &str) -> bool {
    link.code == path || link.alias_key().as_deref() == Some(path)
}

/// Sets the slots of the frames from `from` to `end` (what the index may have lost);
/// answers the groups (a bit each) those frames fell in.
fn replay(log: &SegmentLog, index: &OffsetIndex, from: u64, end: u64) -> Result<u64, StoreError> {
    let mut slots = Vec::new();
    let mut groups = 0u64;
    log.scan(from, end, |loc, frame| {
        if is_dense(frame.key) {
            groups |= 1 << (frame.key & 63);
            slots.push((frame.key, if frame.payload.is_empty() { 0 } else { loc }));
        }
        Ok(())
    })?;
    index.set(&slots)?;
    index.sync()?;
    Ok(groups)
}

impl Drop for SegmentLinkStore {
    fn drop(&mut self) {
        // A clean close: the index durable, so the next start replays nothing.
        let w = self.writer.lock().unwrap_or_else(|p| p.into_inner());
        if w.failed.is_some() || w.unsynced == 0 || self.index.sync().is_err() {
            return;
        }
        if let Ok(txn) = self.db.begin_write() {
            if set_meta_u64(&txn, "indexed", w.end).is_ok() {
                let _ = txn.commit();
            }
        }
    }
}

impl LinkStore for SegmentLinkStore {
    fn is_local(&self) -> bool {
        true
    }

    fn write_group(&self, writes: &[Write]) -> Vec<Result<Written, StoreError>> {
        match self.write_together(writes) {
            Ok(results) => results,
            // Nothing of the group was stored: each write runs alone, so only the one at
            // fault fails (a duplicate code, which is a minting bug, or the disk).
            Err(_) if writes.len() > 1 => writes.iter().map(|w| write_one(self, w)).collect(),
            Err(e) => vec![Err(e)],
        }
    }

    fn insert_batch(&self, links: &[Link]) -> Result<Vec<InsertOutcome>, StoreError> {
        let mut results = self.write_together(&[Write::Insert(links.to_vec())])?;
        match results.pop() {
            Some(Ok(Written::Inserted(outcomes))) => Ok(outcomes),
            Some(Err(e)) => Err(e),
            _ => Err(StoreError::Backend(
                "an insert answered something else".into(),
            )),
        }
    }

    fn get(&self, id: u64) -> Result<Option<Link>, StoreError> {
        let txn = self.db.begin_read().map_err(backend)?;
        self.link_of_id(&txn, id)
    }

    fn resolve(&self, path: &str) -> Result<Option<Link>, StoreError> {
        // Codes and aliases never share a shape: a code is located, an alias looked up.
        let key = if looks_generated(path) {
            self.key_of(path)?
        } else {
            let txn = self.db.begin_read().map_err(backend)?;
            let aliases = txn.open_table(ALIASES).map_err(backend)?;
            let key = aliases.get(path.as_bytes()).map_err(backend)?;
            key.map(|k| k.value())
        };
        let Some(key) = key else {
            return Ok(None);
        };
        Ok(self.read(None, key)?.filter(|l| reached_at(l, path)))
    }

    fn resolve_cached(&self, path: &str) -> Option<Result<Option<Link>, StoreError>> {
        // Only a generated code located by the code itself and the offset index; an
        // alias, a wide code or a far record goes through redb: the blocking path.
        if !looks_generated(path) {
            return None;
        }
        let key = self.locator.key_of(path)?;
        if !is_dense(key) {
            return None;
        }
        let loc = match self.index.get_cached(key) {
            Err(e) => return Some(Err(e)),
            Ok(None) => return None,
            Ok(Some(None)) => return Some(Ok(None)),
            Ok(Some(Some(loc))) => loc,
        };
        let frame = match self.log.read_cached(loc) {
            Err(e) => return Some(Err(e)),
            Ok(None) => return None,
            Ok(Some(frame)) => frame,
        };
        Some(
            decode_frame(&self.locator, key, &frame)
                .map(|l| Some(l).filter(|l| reached_at(l, path))),
        )
    }

    fn find_reusable(&self, url: &str, domain: Option<&str>) -> Result<Option<Link>, StoreError> {
        let txn = self.db.begin_read().map_err(backend)?;
        let urls = txn.open_table(URLS).map_err(backend)?;
        let hash = shardkit_ring::hash_bytes(url.as_bytes());
        let low = u128::from(hash) << 64;
        let mut keys = Vec::new();
        for entry in urls
            .range(low..=low | u128::from(u64::MAX))
            .map_err(backend)?
        {
            keys.push(entry.map_err(backend)?.0.value() as u64);
        }
        keys.extend(self.url_runs.get(url_prefix(hash))?);
        let mut best: Option<Link> = None;
        for key in keys {
            if let Some(link) = self.read(Some(&txn), key)? {
                if link.url == url
                    && link.reusable()
                    && link.domain.as_deref() == domain
                    && best.as_ref().is_none_or(|b| link.id < b.id)
                {
                    best = Some(link);
                }
            }
        }
        Ok(best)
    }

    fn replace(&self, link: &Link) -> Result<(), StoreError> {
        match self.write_together(&[Write::Replace(link.clone())])?.pop() {
            Some(Ok(_)) => Ok(()),
            Some(Err(e)) => Err(e),
            None => Err(StoreError::Backend("a replace answered nothing".into())),
        }
    }

    fn delete(&self, id: u64) -> Result<Option<Link>, StoreError> {
        let Some(link) = self.get(id)? else {
            return Ok(None);
        };
        match self.write_together(&[Write::Delete(link)])?.pop() {
            Some(Ok(Written::Deleted(old))) => Ok(old),
            Some(Err(e)) => Err(e),
            _ => Err(StoreError::Backend(
                "a delete answered something else".into(),
            )),
        }
    }

    fn list(
        &self,
        tag: Option<&str>,
        after: Option<u64>,
        limit: usize,
    ) -> Result<Vec<Link>, StoreError> {
        let start = match after {
            Some(u64::MAX) => return Ok(Vec::new()),
            Some(a) => a + 1,
            None => 0,
        };
        let txn = self.db.begin_read().map_err(backend)?;
        let mut out = Vec::with_capacity(limit.min(1024));
        if let Some(tag) = tag {
            let tags = txn.open_multimap_table(TAGS).map_err(backend)?;
            for id in tags.get(tag.as_bytes()).map_err(backend)? {
                if out.len() >= limit {
                    break;
                }
                let id = id.map_err(backend)?.value();
                if id >= start {
                    out.extend(self.link_of_id(&txn, id)?);
                }
            }
            return Ok(out);
        }
        // `link_ids` and the runs merged in id order; `link_ids` is exact, a run's pair
        // counts if its record still holds that id. An id is listed once.
        let ids = txn.open_table(IDS).map_err(backend)?;
        let mut unfolded = ids.range(start..).map_err(backend)?;
        let mut next_unfolded = || -> Result<Option<(u64, u64)>, StoreError> {
            unfolded
                .next()
                .transpose()
                .map_err(backend)
                .map(|p| p.map(|(id, key)| (id.value(), key.value())))
        };
        let mut runs = self.id_runs.cursor(start);
        let (mut mine, mut folded) = (next_unfolded()?, runs.next_pair()?);
        let mut listed = None;
        while out.len() < limit {
            let (id, key, exact) = match (mine, folded) {
                (None, None) => break,
                (Some(m), Some(f)) if f.0 < m.0 => {
                    folded = runs.next_pair()?;
                    (f.0, f.1, false)
                }
                (Some(m), _) => {
                    mine = next_unfolded()?;
                    (m.0, m.1, true)
                }
                (None, Some(f)) => {
                    folded = runs.next_pair()?;
                    (f.0, f.1, false)
                }
            };
            if listed == Some(id) {
                continue;
            }
            if let Some(link) = self.read(Some(&txn), key)?.filter(|l| exact || l.id == id) {
                out.push(link);
                listed = Some(id);
            }
        }
        Ok(out)
    }

    fn count(&self) -> Result<u64, StoreError> {
        Ok(self.links.load(std::sync::atomic::Ordering::Acquire))
    }
}

//! The cold tier's files, index and reads.
//!
//! A partition that is evicted ([`crate::evict`]) becomes a [`ColdPart`]: its rows sit in
//! blocks ([`crate::cold_block`], at most [`BLOCK_ROWS`] rows each) in one of the
//! counter directory's `cold-<seq, 20 digits>.blk` files, and RAM keeps only the blocks'
//! index entries (first and last id, offset, length) and a [`Bloom`] filter of its ids.
//!
//! A cold file is one eviction batch: the blocks of every partition one pass evicted from
//! one counter, back to back, then their index ([`crate::cold_index`]: rows, filter and
//! block entries per partition), which RAM also keeps and which snapshots only point at.
//! It is written once, fsynced, its directory fsynced, and only then does any partition
//! point at it; it is never written again. (Files written before the index moved into
//! them have none; their snapshots carry it, and still do when they are snapshotted
//! again.) A file no snapshot and no live partition names
//! (a batch cut short by a crash, or one whose partitions were all brought back and
//! snapshotted since) is deleted by [`collect_garbage`].
//!
//! Reads go filter → index (binary search on first id) → one block, through the engine's
//! block cache (a byte budget, [`crate::Options::block_cache_bytes`]).

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use crate::bloom::Bloom;
use crate::cold_block::{decode_block, encode_block, BlockIndexEntry, Codec, DecodedBlock};
use crate::cold_index::{self, IndexedPart};
use crate::error::{io_err, Error, Result};
use crate::hash::FastMap;
use crate::name_block::{NameBlock, NameBlockEntry};

/// Rows per block at most: the size measured in bench/notes/runs.md ("Cold tier block
/// format", 3.42 bytes per row at 4,096 rows).
pub(crate) const BLOCK_ROWS: usize = 4096;

/// File name of cold batch `seq`.
pub(crate) fn cold_name(seq: u64) -> String {
    format!("cold-{seq:020}.blk")
}

/// The cold files in `dir` as (seq, path).
pub(crate) fn list(dir: &Path) -> Result<Vec<(u64, PathBuf)>> {
    crate::numbered::numbered_files(dir, "cold-", ".blk")
}

/// A decoded block in the cache: of numeric ids or of string keys.
#[derive(Clone)]
enum Cached {
    Ids(Arc<DecodedBlock>),
    Names(Arc<NameBlock>),
}

/// Decoded blocks weigh their keys and values.
#[derive(Clone)]
struct BlockWeight;

impl quick_cache::Weighter<(u64, u64), Cached> for BlockWeight {
    fn weight(&self, _: &(u64, u64), b: &Cached) -> u64 {
        match b {
            Cached::Ids(b) => (64 + b.ids.len() * 8 * (1 + b.columns.len())) as u64,
            Cached::Names(b) => b.bytes() as u64,
        }
    }
}

/// What every cold file of one engine shares: the directory, the next batch number and
/// the block cache.
pub(crate) struct ColdShared {
    dir: PathBuf,
    next_seq: AtomicU64,
    cache: quick_cache::sync::Cache<(u64, u64), Cached, BlockWeight>,
}

impl ColdShared {
    /// The cold tier of the engine in `dir`, with a block cache of `cache_bytes`.
    pub(crate) fn open(dir: &Path, cache_bytes: u64) -> Result<Arc<ColdShared>> {
        let next = list(dir)?.last().map_or(1, |(seq, _)| seq + 1);
        let items = (cache_bytes / (64 << 10)).clamp(16, 1 << 20) as usize;
        Ok(Arc::new(ColdShared {
            dir: dir.to_path_buf(),
            next_seq: AtomicU64::new(next),
            cache: quick_cache::sync::Cache::with_weighter(items, cache_bytes.max(1), BlockWeight),
        }))
    }

    /// Bytes the block cache holds now.
    pub(crate) fn cache_bytes(&self) -> u64 {
        self.cache.weight()
    }

    /// A new cold batch file, created empty (the caller writes it whole, then passes it
    /// to [`ColdFile::written`]): its number, path and handle.
    pub(crate) fn create_batch(&self) -> Result<(u64, PathBuf, File)> {
        let seq = self.next_seq.fetch_add(1, Ordering::Relaxed);
        let path = self.dir.join(cold_name(seq));
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(io_err(&path))?;
        Ok((seq, path, file))
    }

    /// The directory of the cold files.
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }
}

/// Per counter: how its cold reads went.
#[derive(Debug, Default)]
pub(crate) struct ColdStats {
    /// Blocks served from the block cache.
    pub cache_hits: AtomicU64,
    /// Blocks read from disk.
    pub cold_reads: AtomicU64,
}

/// One open cold file.
pub(crate) struct ColdFile {
    seq: u64,
    path: PathBuf,
    file: File,
    /// Whether the file ends with its own good index, so a snapshot need only name its
    /// partitions (false: a file from before that index, or one whose index was
    /// damaged and rebuilt from its blocks; snapshots carry such a file's index).
    indexed: AtomicBool,
    shared: Arc<ColdShared>,
    stats: Arc<ColdStats>,
}

/// The partitions a cold file's index lists, ready to be put back in their stripes.
pub(crate) struct FileIndex {
    /// (high 32 bits, partition), in file order.
    pub parts: Vec<(u32, ColdPart)>,
    /// Set when the index had to be rebuilt from the blocks: where that walk stopped.
    pub rebuilt: Option<String>,
}

impl ColdFile {
    /// Opens existing batch `seq` for reading (recovery: a snapshot names it).
    pub(crate) fn open(
        shared: &Arc<ColdShared>,
        seq: u64,
        stats: &Arc<ColdStats>,
    ) -> Result<Arc<ColdFile>> {
        let path = shared.dir.join(cold_name(seq));
        let file = File::open(&path).map_err(io_err(&path))?;
        advise_random(&file);
        let len = file.metadata().map_err(io_err(&path))?.len();
        let indexed = cold_index::has_footer(&file, len).map_err(io_err(&path))?;
        Ok(Arc::new(ColdFile {
            seq,
            path,
            file,
            indexed: AtomicBool::new(indexed),
            shared: shared.clone(),
            stats: stats.clone(),
        }))
    }

    /// Whether snapshots may name this file's partitions without their index.
    pub(crate) fn indexed(&self) -> bool {
        self.indexed.load(Ordering::Relaxed)
    }

    /// Reads the file's index (recovery, for a snapshot that names its partitions), or
    /// rebuilds it from the blocks when it is missing or damaged; the file is then no
    /// longer `indexed`, so the next snapshot carries what was rebuilt.
    pub(crate) fn read_index(self: &Arc<Self>) -> Result<FileIndex> {
        let len = self.file.metadata().map_err(io_err(&self.path))?.len();
        let index = cold_index::read(&self.file, len).map_err(io_err(&self.path))?;
        if !index.from_footer {
            self.indexed.store(false, Ordering::Relaxed);
        }
        let parts = index
            .parts
            .into_iter()
            .map(|p: IndexedPart| {
                let part = ColdPart::new(self.clone(), p.blocks, p.filter, p.rows);
                (p.high, part.with_index_bytes(p.index_bytes))
            })
            .collect();
        Ok(FileIndex {
            parts,
            rebuilt: index.walk_stopped,
        })
    }

    /// The batch number in the file name.
    pub(crate) fn seq(&self) -> u64 {
        self.seq
    }

    fn block(&self, entry: &BlockIndexEntry) -> Result<Arc<DecodedBlock>> {
        let key = (self.seq, entry.offset);
        if let Some(Cached::Ids(b)) = self.shared.cache.get(&key) {
            self.stats.cache_hits.fetch_add(1, Ordering::Relaxed);
            return Ok(b);
        }
        let mut bytes = vec![0; entry.len as usize];
        self.file
            .read_exact_at(&mut bytes, entry.offset)
            .map_err(|e| match e.kind() {
                // A file shorter than its index says: damaged, named like any other.
                std::io::ErrorKind::UnexpectedEof => Error::ColdBlock {
                    path: self.path.clone(),
                    source: crate::cold_block::BlockError::Corrupt {
                        first_id: entry.first_id,
                        last_id: entry.last_id,
                        offset: entry.offset,
                        len: entry.len,
                        reason: "the file ends before the block".into(),
                    },
                },
                _ => io_err(&self.path)(e),
            })?;
        self.stats.cold_reads.fetch_add(1, Ordering::Relaxed);
        let block = decode_block(&bytes, entry).map_err(|source| Error::ColdBlock {
            path: self.path.clone(),
            source,
        })?;
        let block = Arc::new(block);
        self.shared.cache.insert(key, Cached::Ids(block.clone()));
        Ok(block)
    }

    /// A batch file just written whole, fsynced with its directory (string-keyed runs,
    /// [`crate::cold_names`]), ready to be read.
    pub(crate) fn written(
        shared: &Arc<ColdShared>,
        stats: &Arc<ColdStats>,
        seq: u64,
        path: PathBuf,
        file: File,
    ) -> Arc<ColdFile> {
        advise_random(&file);
        Arc::new(ColdFile {
            seq,
            path,
            file,
            indexed: AtomicBool::new(false),
            shared: shared.clone(),
            stats: stats.clone(),
        })
    }

    /// Its path (to name it in errors).
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Its handle (to read its index).
    pub(crate) fn handle(&self) -> &File {
        &self.file
    }

    /// The block of string-keyed rows at `entry`, through the block cache; a damaged
    /// one is [`Error::ColdBlock`] naming its keys.
    pub(crate) fn name_block(&self, entry: &NameBlockEntry) -> Result<Arc<NameBlock>> {
        let key = (self.seq, entry.offset);
        if let Some(Cached::Names(b)) = self.shared.cache.get(&key) {
            self.stats.cache_hits.fetch_add(1, Ordering::Relaxed);
            return Ok(b);
        }
        let block = Arc::new(self.read_name_block(entry)?);
        self.shared.cache.insert(key, Cached::Names(block.clone()));
        Ok(block)
    }

    /// [`ColdFile::name_block`] past the block cache, which it leaves as it was (a merge
    /// reads every block once: caching them would only push out the ones readers use).
    pub(crate) fn read_name_block(&self, entry: &NameBlockEntry) -> Result<NameBlock> {
        let mut bytes = vec![0; entry.len as usize];
        let damaged = |reason: String| Error::ColdBlock {
            path: self.path.clone(),
            source: crate::name_block::corrupt(entry, reason),
        };
        self.file
            .read_exact_at(&mut bytes, entry.offset)
            .map_err(|e| match e.kind() {
                std::io::ErrorKind::UnexpectedEof => {
                    damaged("the file ends before the block".into())
                }
                _ => io_err(&self.path)(e),
            })?;
        self.stats.cold_reads.fetch_add(1, Ordering::Relaxed);
        crate::name_block::decode(&bytes, entry).map_err(|source| Error::ColdBlock {
            path: self.path.clone(),
            source,
        })
    }
}

/// Tells the kernel that `file` is read at random offsets, so a cold read's miss in the
/// page cache reads the block's pages and not a readahead window around them (RocksDB
/// does the same to its table files, `advise_random_on_open`). Measured in
/// bench/notes/runs.md ("Cold reads from the disk"). Advice only: a failure changes nothing.
fn advise_random(file: &File) {
    let _ = rustix::fs::fadvise(file, 0, None, rustix::fs::Advice::Random);
}

/// One evicted partition as RAM keeps it: where its blocks are, and a filter of its ids.
/// Shared pieces, so a snapshot's copy of a stripe costs a few pointers per partition.
#[derive(Clone)]
pub(crate) struct ColdPart {
    file: Arc<ColdFile>,
    blocks: Arc<[BlockIndexEntry]>,
    filter: Arc<Bloom>,
    rows: u32,
    /// Bytes of its entry in its file's index (0 for a file without one).
    index_bytes: u32,
}

impl std::fmt::Debug for ColdPart {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ColdPart")
            .field("file", &self.file.path)
            .field("blocks", &self.blocks.len())
            .field("rows", &self.rows)
            .finish()
    }
}

impl ColdPart {
    /// A partition as a snapshot describes it.
    pub(crate) fn new(
        file: Arc<ColdFile>,
        blocks: Vec<BlockIndexEntry>,
        filter: Bloom,
        rows: u32,
    ) -> ColdPart {
        ColdPart {
            file,
            blocks: blocks.into(),
            filter: Arc::new(filter),
            rows,
            index_bytes: 0,
        }
    }

    /// The same partition, its entry in its file's index taking `bytes`.
    fn with_index_bytes(mut self, bytes: u32) -> ColdPart {
        self.index_bytes = bytes;
        self
    }

    /// Rows held.
    pub(crate) fn rows(&self) -> u64 {
        u64::from(self.rows)
    }

    /// The file the blocks are in.
    pub(crate) fn file(&self) -> &ColdFile {
        &self.file
    }

    /// The blocks' index entries, in id order.
    pub(crate) fn blocks(&self) -> &[BlockIndexEntry] {
        &self.blocks
    }

    /// Its smallest and largest id.
    pub(crate) fn id_range(&self) -> (u64, u64) {
        let first = self.blocks.first().map_or(0, |b| b.first_id);
        let last = self.blocks.last().map_or(0, |b| b.last_id);
        (first, last)
    }

    /// The id filter.
    pub(crate) fn filter(&self) -> &Bloom {
        &self.filter
    }

    /// RAM this index takes (entries, filter, the struct).
    pub(crate) fn bytes_ram(&self) -> usize {
        std::mem::size_of::<ColdPart>()
            + 8
            + 32
            + self.blocks.len() * std::mem::size_of::<BlockIndexEntry>()
            + self.filter.bytes()
    }

    /// Bytes of its blocks and its index entry on disk.
    pub(crate) fn bytes_disk(&self) -> u64 {
        self.blocks.iter().map(|b| u64::from(b.len)).sum::<u64>() + u64::from(self.index_bytes)
    }

    /// The stored values of row `id` (as many as the counter had columns at eviction),
    /// or `None` if the partition does not hold it: the filter, then the one block whose
    /// range covers it.
    pub(crate) fn row(&self, id: u64) -> Result<Option<Vec<u64>>> {
        if !self.filter.may_hold(id) {
            return Ok(None);
        }
        let i = self.blocks.partition_point(|b| b.first_id <= id);
        let Some(entry) = i.checked_sub(1).map(|i| &self.blocks[i]) else {
            return Ok(None);
        };
        if !entry.covers(id) {
            return Ok(None);
        }
        Ok(self.file.block(entry)?.get(id))
    }

    /// Every block, in id order (bringing the partition back, `SCAN`).
    pub(crate) fn all_blocks(&self) -> Result<Vec<Arc<DecodedBlock>>> {
        self.blocks.iter().map(|e| self.file.block(e)).collect()
    }
}

/// The rows of one partition taken out of RAM: ids ascending, values column-major.
pub(crate) struct Frozen {
    /// The partition's high 32 bits.
    pub high: u32,
    /// Ids, strictly increasing.
    pub ids: Vec<u64>,
    /// `columns[c][r]`: column `c` of row `r`.
    pub columns: Vec<Vec<u64>>,
}

/// Writes one eviction batch (partitions of one counter, columns `widths`) as a new cold
/// file, its blocks then their index, fsyncs it and its directory, and returns each
/// partition's [`ColdPart`] in order. Nothing points at the file until this returns, so
/// a crash part-way leaves only an unnamed file for [`collect_garbage`].
pub(crate) fn write_batch(
    shared: &Arc<ColdShared>,
    stats: &Arc<ColdStats>,
    parts: &[Frozen],
    widths: &[u8],
) -> Result<Vec<ColdPart>> {
    let seq = shared.next_seq.fetch_add(1, Ordering::Relaxed);
    let path = shared.dir.join(cold_name(seq));
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(&path)
        .map_err(io_err(&path))?;
    let mut out = Vec::new();
    let mut indexes = Vec::with_capacity(parts.len());
    for p in parts {
        let mut blocks = Vec::new();
        for start in (0..p.ids.len()).step_by(BLOCK_ROWS) {
            let end = (start + BLOCK_ROWS).min(p.ids.len());
            let cols: Vec<&[u64]> = p.columns.iter().map(|c| &c[start..end]).collect();
            let bytes =
                encode_block(&p.ids[start..end], &cols, widths, Codec::Zstd).map_err(|e| {
                    Error::Corrupt {
                        path: path.clone(),
                        reason: e.to_string(),
                    }
                })?;
            blocks.push(BlockIndexEntry {
                first_id: p.ids[start],
                last_id: p.ids[end - 1],
                offset: out.len() as u64,
                len: bytes.len() as u32,
            });
            out.extend_from_slice(&bytes);
        }
        indexes.push((blocks, Bloom::of(p.ids.iter().copied())));
    }
    let listed: Vec<_> = parts
        .iter()
        .zip(&indexes)
        .map(|(p, (blocks, filter))| (p.high, p.ids.len() as u32, filter, blocks.as_slice()))
        .collect();
    let (index, sizes) = cold_index::encode(&listed, out.len() as u64);
    out.extend_from_slice(&index);
    file.write_all(&out).map_err(io_err(&path))?;
    file.sync_all().map_err(io_err(&path))?;
    crate::log::sync_dir(&shared.dir)?;
    advise_random(&file);
    let file = Arc::new(ColdFile {
        seq,
        path,
        file,
        indexed: AtomicBool::new(true),
        shared: shared.clone(),
        stats: stats.clone(),
    });
    Ok(parts
        .iter()
        .zip(indexes)
        .zip(sizes)
        .map(|((p, (blocks, filter)), size)| {
            ColdPart::new(file.clone(), blocks, filter, p.ids.len() as u32).with_index_bytes(size)
        })
        .collect())
}

/// File name of the list of cold batches snapshot `x` relies on.
pub(crate) fn refs_name(x: u64) -> String {
    format!("coldrefs-{x:020}.list")
}

/// Writes (durably: temporary file, fsync, rename, directory fsync) the cold batches a
/// snapshot relies on, before the snapshot itself is renamed into place. A snapshot
/// that relies on none gets no list (so engines without a cold tier write nothing new).
pub(crate) fn write_refs(dir: &Path, x: u64, seqs: &[u64]) -> Result<()> {
    if seqs.is_empty() {
        return Ok(());
    }
    let path = dir.join(refs_name(x));
    let tmp = path.with_extension("tmp");
    let mut text = String::new();
    for s in seqs {
        text.push_str(&s.to_string());
        text.push('\n');
    }
    let mut f = File::create(&tmp).map_err(io_err(&tmp))?;
    f.write_all(text.as_bytes()).map_err(io_err(&tmp))?;
    f.sync_all().map_err(io_err(&tmp))?;
    fs::rename(&tmp, &path).map_err(io_err(&tmp))?;
    crate::log::sync_dir(dir)
}

/// Deletes every cold file that neither `live` (the batches the engine's partitions
/// point at now) nor any of `kept` snapshots (their `coldrefs-X.list`) names, and the
/// lists of snapshots no longer kept. The caller holds off evictions meanwhile, so no
/// batch is being written. A kept snapshot whose list cannot be read keeps everything.
pub(crate) fn collect_garbage(dir: &Path, kept: &[u64], live: &FastMap<u64, ()>) -> Result<()> {
    let mut needed = live.clone();
    for x in kept {
        let path = dir.join(refs_name(*x));
        match fs::read_to_string(&path) {
            Ok(text) => {
                for line in text.lines() {
                    match line.trim().parse::<u64>() {
                        Ok(seq) => {
                            needed.insert(seq, ());
                        }
                        Err(_) => return Ok(()),
                    }
                }
            }
            // A snapshot that relies on no batch has no list.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(_) => return Ok(()),
        }
    }
    for (seq, path) in list(dir)? {
        if !needed.contains_key(&seq) {
            fs::remove_file(&path).map_err(io_err(&path))?;
        }
    }
    for entry in fs::read_dir(dir).map_err(io_err(dir))?.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let Some(rest) = name.strip_prefix("coldrefs-") else {
            continue;
        };
        let x = rest
            .strip_suffix(".list")
            .and_then(|n| n.parse::<u64>().ok());
        if x.is_none_or(|x| !kept.contains(&x)) {
            let _ = fs::remove_file(entry.path());
        }
    }
    Ok(())
}

//! Older `links.redb` files opened by [`crate::SegmentLinkStore`]: both earlier formats
//! are converted on open, with nothing to do by hand.
//!
//! - JSON records (`links`, `codes`, ...: [`crate::RedbLinkStore`]) are first converted
//!   to redb records by [`crate::CompactLinkStore::open`] ([`crate::migrate`]), in one
//!   transaction.
//! - redb records (`link_records`, format 2) are then copied into segments, their
//!   slots set, the segments and slots fsynced, and, in one redb transaction,
//!   `link_records` dropped and `format` set to 3 with the segments' end. Every other
//!   table keeps its rows: the record keys are the same.
//!
//! A crash before that commit leaves the file in format 2; the next open empties the
//! segment directory and converts again.

use crate::compact_store::{backend, RECORDS};
use crate::error::StoreError;
use crate::offset_index::{is_dense, OffsetIndex};
use crate::segment_batch::FAR;
use crate::segment_log::{push_frame, split, SegmentLog, SEGMENT_BYTES};
use crate::{Codec, CompactLinkStore};
use redb::{ReadableTable, TableHandle, WriteTransaction};
use std::path::Path;

/// Frames written per `pwrite` + fsync while converting.
const CHUNK_BYTES: usize = 16 << 20;

/// Converts a file of JSON records at `path` (if it is one) to redb records.
pub(crate) fn older_to_compact(
    path: &Path,
    codec: &Codec,
    cache_bytes: usize,
) -> Result<(), StoreError> {
    if !path.exists() {
        return Ok(());
    }
    let is_json = {
        let db = redb::Database::open(path)
            .map_err(|e| StoreError::Backend(format!("cannot open {}: {e}", path.display())))?;
        let txn = db.begin_read().map_err(backend)?;
        let mut names = txn
            .list_tables()
            .map_err(backend)?
            .map(|t| t.name().to_string());
        names.any(|n| n == "links")
    };
    if is_json {
        drop(CompactLinkStore::open(path, codec.clone(), cache_bytes)?);
    }
    Ok(())
}

/// Moves `link_records` (if the file has it) into segments starting at `start`, inside
/// `txn`; answers the segments' end.
pub(crate) fn records_to_segments(
    txn: &WriteTransaction,
    log: &SegmentLog,
    index: &OffsetIndex,
    start: u64,
) -> Result<u64, StoreError> {
    let has_records = txn
        .list_tables()
        .map_err(backend)?
        .any(|t| t.name() == RECORDS.name());
    if !has_records {
        return Ok(start);
    }
    let mut end = start;
    {
        let records = txn.open_table(RECORDS).map_err(backend)?;
        let mut far = txn.open_table(FAR).map_err(backend)?;
        let mut frames = Vec::with_capacity(CHUNK_BYTES + 4096);
        let mut slots: Vec<(u64, u64)> = Vec::new();
        let flush = |frames: &mut Vec<u8>,
                     slots: &mut Vec<(u64, u64)>,
                     end: &mut u64|
         -> Result<(), StoreError> {
            if !frames.is_empty() {
                log.append(*end, frames)?;
                *end += frames.len() as u64;
                index.set(slots)?;
                frames.clear();
                slots.clear();
            }
            if split(*end).1 >= SEGMENT_BYTES {
                *end = log.roll()?;
            }
            Ok(())
        };
        for entry in records.iter().map_err(backend)? {
            let (key, bytes) = entry.map_err(backend)?;
            let (key, bytes) = (key.value(), bytes.value());
            let loc = end + frames.len() as u64;
            push_frame(&mut frames, key, bytes);
            if is_dense(key) {
                slots.push((key, loc));
            } else {
                far.insert(key, loc).map_err(backend)?;
            }
            if frames.len() >= CHUNK_BYTES {
                flush(&mut frames, &mut slots, &mut end)?;
            }
        }
        flush(&mut frames, &mut slots, &mut end)?;
    }
    index.sync()?;
    txn.delete_table(RECORDS).map_err(backend)?;
    Ok(end)
}

//! One commit of the segment store ([`crate::SegmentLinkStore`]): the writes of a
//! group applied to redb's tables inside one transaction, while their record frames
//! gather in memory and their offset-index slots wait in a list. The store writes the
//! frames and fsyncs them, then commits the transaction (with the new segment end),
//! then sets the slots: so a slot never points past the committed end.
//!
//! A write that reads a link this batch already wrote (a replace or delete of a link
//! made in the same group) finds it in the batch: in [`Batch::slots`] and the frames.
//!
//! A link id is in redb's `link_ids` until a fold moves it to the id runs
//! ([`crate::run_set`]); a pair found in a run counts only if the record it points at
//! still holds that id (runs keep the ids of deleted links).

use crate::compact_store::{backend, is_wide, new_key, url_entry, ALIASES, IDS, TAGS, URLS, WIDE};
use crate::error::StoreError;
use crate::locator::Locator;
use crate::model::Link;
use crate::offset_index::{is_dense, OffsetIndex};
use crate::record;
use crate::run_set::RunSet;
use crate::segment_log::{self, push_frame, SegmentLog};
use crate::store::InsertOutcome;
use redb::{ReadableTable, TableDefinition, WriteTransaction};
use std::collections::HashMap;

/// Record key -> location for keys whose slot is past the dense files.
pub(crate) const FAR: TableDefinition<u64, u64> = TableDefinition::new("link_far");

/// The writes of one commit, not yet durable.
pub(crate) struct Batch<'a> {
    pub(crate) txn: &'a WriteTransaction,
    locator: &'a Locator,
    log: &'a SegmentLog,
    index: &'a OffsetIndex,
    id_runs: &'a RunSet,
    /// Links stored minus links deleted by this batch.
    pub(crate) added: i64,
    /// Where the batch's first frame goes.
    pub(crate) start: u64,
    /// The batch's frames, in order.
    pub(crate) frames: Vec<u8>,
    /// Key -> location (0: deleted) of what this batch wrote.
    slots: HashMap<u64, u64>,
    /// The dense slots to set once committed.
    pub(crate) dense: Vec<(u64, u64)>,
}

impl<'a> Batch<'a> {
    /// An empty batch whose frames start at `start`.
    pub(crate) fn new(
        txn: &'a WriteTransaction,
        locator: &'a Locator,
        log: &'a SegmentLog,
        index: &'a OffsetIndex,
        id_runs: &'a RunSet,
        start: u64,
    ) -> Self {
        Self {
            txn,
            locator,
            log,
            index,
            id_runs,
            added: 0,
            start,
            frames: Vec::new(),
            slots: HashMap::new(),
            dense: Vec::new(),
        }
    }

    /// Where the record with `key` is, as of this batch.
    fn location(&self, key: u64) -> Result<Option<u64>, StoreError> {
        if let Some(&loc) = self.slots.get(&key) {
            return Ok(Some(loc).filter(|&l| l != 0));
        }
        if is_dense(key) {
            return self.index.get(key);
        }
        let far = self.txn.open_table(FAR).map_err(backend)?;
        let loc = far.get(key).map_err(backend)?.map(|v| v.value());
        Ok(loc)
    }

    /// The link with record key `key`, as of this batch.
    pub(crate) fn read(&self, key: u64) -> Result<Option<Link>, StoreError> {
        let Some(loc) = self.location(key)? else {
            return Ok(None);
        };
        let frame = if loc >= self.start {
            let at = (loc - self.start) as usize;
            segment_log::parse(&self.frames[at..], loc)?
                .map_err(|_| StoreError::Backend("a batch frame is cut short".into()))?
        } else {
            self.log.read(loc)?
        };
        decode_frame(self.locator, key, &frame).map(Some)
    }

    /// The record key of link `id` in the id runs, as of this batch.
    fn key_in_runs(&self, id: u64) -> Result<Option<u64>, StoreError> {
        for key in self.id_runs.get(id)? {
            if self.read(key)?.is_some_and(|l| l.id == id) {
                return Ok(Some(key));
            }
        }
        Ok(None)
    }

    /// The record key of link `id`, as of this batch.
    fn key_of_id(&self, id: u64) -> Result<Option<u64>, StoreError> {
        let ids = self.txn.open_table(IDS).map_err(backend)?;
        if let Some(key) = ids.get(id).map_err(backend)? {
            return Ok(Some(key.value()));
        }
        drop(ids);
        self.key_in_runs(id)
    }

    /// Appends `link`'s record at `key` and points the key at it.
    fn put(&mut self, key: u64, link: &Link) -> Result<(), StoreError> {
        let loc = self.start + self.frames.len() as u64;
        push_frame(&mut self.frames, key, &record::encode(link, is_wide(key)));
        self.point(key, loc)
    }

    /// Appends a tombstone for `key` and points the key at nothing.
    fn remove(&mut self, key: u64) -> Result<(), StoreError> {
        push_frame(&mut self.frames, key, &[]);
        self.point(key, 0)
    }

    fn point(&mut self, key: u64, loc: u64) -> Result<(), StoreError> {
        self.slots.insert(key, loc);
        if is_dense(key) {
            self.dense.push((key, loc));
        } else {
            let mut far = self.txn.open_table(FAR).map_err(backend)?;
            if loc == 0 {
                far.remove(key).map_err(backend)?;
            } else {
                far.insert(key, loc).map_err(backend)?;
            }
        }
        Ok(())
    }

    /// `insert_batch` in this batch.
    pub(crate) fn insert(&mut self, links: &[Link]) -> Result<Vec<InsertOutcome>, StoreError> {
        let txn = self.txn;
        let mut outcomes = Vec::with_capacity(links.len());
        let mut accepted: Vec<(u64, &Link)> = Vec::with_capacity(links.len());
        {
            let mut aliases = txn.open_table(ALIASES).map_err(backend)?;
            // Keys first (a wide code takes one), then aliases in request order: the
            // first of two equal aliases wins.
            let mut batch_aliases: HashMap<std::borrow::Cow<str>, &str> = HashMap::new();
            for link in links {
                if let (Some(alias), Some(alias_key)) = (&link.alias, link.alias_key()) {
                    if let Some(owner_code) = batch_aliases.get(&alias_key) {
                        outcomes.push(InsertOutcome::AliasTaken {
                            alias: alias.clone(),
                            owner_code: owner_code.to_string(),
                        });
                        continue;
                    }
                    let owner = aliases
                        .get(alias_key.as_bytes())
                        .map_err(backend)?
                        .map(|g| g.value());
                    if let Some(owner) = owner {
                        let owner_code = self.read(owner)?.map(|l| l.code).unwrap_or_default();
                        outcomes.push(InsertOutcome::AliasTaken {
                            alias: alias.clone(),
                            owner_code,
                        });
                        continue;
                    }
                }
                let (key, _) = new_key(txn, self.locator, &link.code)?;
                if let Some(alias_key) = link.alias_key() {
                    aliases.insert(alias_key.as_bytes(), key).map_err(backend)?;
                    batch_aliases.insert(alias_key, &link.code);
                }
                accepted.push((key, link));
                outcomes.push(InsertOutcome::Inserted);
            }
        }
        accepted.sort_unstable_by_key(|&(key, _)| key);
        for &(key, link) in &accepted {
            if self.location(key)?.is_some() {
                return Err(StoreError::Duplicate(format!("code {}", link.code)));
            }
            self.put(key, link)?;
        }
        let mut ids = txn.open_table(IDS).map_err(backend)?;
        let mut tags = txn.open_multimap_table(TAGS).map_err(backend)?;
        accepted.sort_unstable_by_key(|&(_, link)| link.id);
        for &(key, link) in &accepted {
            let folded = link.id <= self.id_runs.max_a() && self.key_in_runs(link.id)?.is_some();
            if ids.insert(link.id, key).map_err(backend)?.is_some() || folded {
                return Err(StoreError::Duplicate(format!("id {}", link.id)));
            }
            for tag in &link.tags {
                tags.insert(tag.as_bytes(), link.id).map_err(backend)?;
            }
        }
        let mut urls = txn.open_table(URLS).map_err(backend)?;
        accepted.sort_unstable_by_key(|&(key, link)| url_entry(&link.url, key));
        for &(key, link) in &accepted {
            urls.insert(url_entry(&link.url, key), ())
                .map_err(backend)?;
        }
        self.added += accepted.len() as i64;
        Ok(outcomes)
    }

    /// `replace` in this batch. [`StoreError::Missing`] and [`StoreError::Immutable`]
    /// come before anything is changed.
    pub(crate) fn replace(&mut self, link: &Link) -> Result<(), StoreError> {
        let txn = self.txn;
        let key = self
            .key_of_id(link.id)?
            .ok_or(StoreError::Missing(link.id))?;
        let old = self.read(key)?.ok_or(StoreError::Missing(link.id))?;
        if old.code != link.code || old.alias != link.alias || old.domain != link.domain {
            return Err(StoreError::Immutable(link.id));
        }
        let mut urls = txn.open_table(URLS).map_err(backend)?;
        let mut tags = txn.open_multimap_table(TAGS).map_err(backend)?;
        urls.remove(url_entry(&old.url, key)).map_err(backend)?;
        urls.insert(url_entry(&link.url, key), ())
            .map_err(backend)?;
        for tag in &old.tags {
            tags.remove(tag.as_bytes(), link.id).map_err(backend)?;
        }
        for tag in &link.tags {
            tags.insert(tag.as_bytes(), link.id).map_err(backend)?;
        }
        self.put(key, link)
    }

    /// `delete` in this batch.
    pub(crate) fn delete(&mut self, id: u64) -> Result<Option<Link>, StoreError> {
        let txn = self.txn;
        let unfolded = txn
            .open_table(IDS)
            .map_err(backend)?
            .remove(id)
            .map_err(backend)?
            .map(|k| k.value());
        let Some(key) = unfolded.map_or_else(|| self.key_in_runs(id), |k| Ok(Some(k)))? else {
            return Ok(None);
        };
        let Some(old) = self.read(key)? else {
            return Ok(None);
        };
        self.remove(key)?;
        self.added -= 1;
        if let Some(alias) = old.alias_key() {
            txn.open_table(ALIASES)
                .map_err(backend)?
                .remove(alias.as_bytes())
                .map_err(backend)?;
        }
        if is_wide(key) {
            txn.open_table(WIDE)
                .map_err(backend)?
                .remove(old.code.as_bytes())
                .map_err(backend)?;
        }
        txn.open_table(URLS)
            .map_err(backend)?
            .remove(url_entry(&old.url, key))
            .map_err(backend)?;
        let mut tags = txn.open_multimap_table(TAGS).map_err(backend)?;
        for tag in &old.tags {
            tags.remove(tag.as_bytes(), id).map_err(backend)?;
        }
        Ok(Some(old))
    }
}

/// The link in `frame`, which the index gave for `key`.
pub(crate) fn decode_frame(
    locator: &Locator,
    key: u64,
    frame: &segment_log::Frame,
) -> Result<Link, StoreError> {
    if frame.key != key || frame.payload.is_empty() {
        return Err(StoreError::Corrupt {
            id: 0,
            reason: format!(
                "the offset index sends key {key:#x} to a frame of key {:#x}{} (index damaged)",
                frame.key,
                if frame.payload.is_empty() {
                    ", a tombstone"
                } else {
                    ""
                }
            ),
        });
    }
    record::decode(&frame.payload, || locator.code_of(key))
}

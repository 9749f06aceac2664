//! The embedded [`LinkStore`]: `links.redb` in the data directory, laid out so a
//! redirect is one B-tree read and a create appends.
//!
//! Tables (every write of a link changes them together, in one fsynced transaction,
//! so after a crash all or none of a link's entries exist):
//!
//! - `link_records`: record key -> the link's compact bytes ([`crate::record`]). The
//!   key is computed from the code ([`crate::locator`]: the Feistel step inverted), so
//!   a generated code needs no index, and the keys of new links are the largest.
//! - `link_ids`: link id -> record key, for `get`/`delete` by id and listing in id
//!   order; ids grow with time, so this appends too.
//! - `link_urls`: `hash(url) << 64 | record key`, no value: the `reuse` index, 16
//!   bytes a link (its one random write per create).
//! - `link_aliases`: alias -> record key; `link_tags`: tag -> ids; `link_wide_codes`:
//!   code -> record key for the rare imported codes whose index does not fit a key.
//! - `link_meta`: `format` (2), `locator` (the codec the keys were made with),
//!   `wide_next`.
//!
//! Memory: redb keeps its own page cache (no mmap), sized by the caller
//! (`[links] memory_mib`); resident memory stays near it whatever the number of links.
//! A file of the previous format (JSON records and a `codes` table) is converted on
//! open, in one transaction ([`migrate`]).

mod migrate;

use crate::code::{looks_generated, Codec};
use crate::error::StoreError;
use crate::locator::{Locator, WIDE_GROUP};
use crate::model::Link;
use crate::record;
use crate::store::{write_one, InsertOutcome, LinkStore, Write, Written};
use redb::{
    Database, MultimapTableDefinition, ReadableTable, ReadableTableMetadata, TableDefinition,
    WriteTransaction,
};
use std::collections::HashMap;
use std::path::Path;

pub(crate) const RECORDS: TableDefinition<u64, &[u8]> = TableDefinition::new("link_records");
pub(crate) const IDS: TableDefinition<u64, u64> = TableDefinition::new("link_ids");
pub(crate) const ALIASES: TableDefinition<&[u8], u64> = TableDefinition::new("link_aliases");
pub(crate) const URLS: TableDefinition<u128, ()> = TableDefinition::new("link_urls");
pub(crate) const TAGS: MultimapTableDefinition<&[u8], u64> =
    MultimapTableDefinition::new("link_tags");
pub(crate) const WIDE: TableDefinition<&[u8], u64> = TableDefinition::new("link_wide_codes");
pub(crate) const META: TableDefinition<&str, &[u8]> = TableDefinition::new("link_meta");

/// The layout version in `link_meta` `format`.
const FORMAT: u8 = 2;

/// Links in a redb file, found by code without an index.
pub struct CompactLinkStore {
    db: Database,
    locator: Locator,
}

impl std::fmt::Debug for CompactLinkStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CompactLinkStore")
    }
}

pub(crate) fn backend(e: impl std::fmt::Display) -> StoreError {
    StoreError::Backend(e.to_string())
}

fn url_hash(url: &str) -> u64 {
    shardkit_ring::hash_bytes(url.as_bytes())
}

pub(crate) fn url_entry(url: &str, key: u64) -> u128 {
    (u128::from(url_hash(url)) << 64) | u128::from(key)
}

pub(crate) fn is_wide(key: u64) -> bool {
    key & 63 == WIDE_GROUP
}

impl CompactLinkStore {
    /// Opens (or creates) the file with a page cache of `cache_bytes`. A new file
    /// keeps `codec` (the server's) for its keys; an existing one its own. A file of
    /// the previous format is converted first. Fails if another process has it open,
    /// or if it is of a newer format.
    pub fn open(
        path: impl AsRef<Path>,
        codec: Codec,
        cache_bytes: usize,
    ) -> Result<Self, StoreError> {
        let path = path.as_ref();
        let db = redb::Builder::new()
            .set_cache_size(cache_bytes)
            .create(path)
            .map_err(|e| StoreError::Backend(format!("cannot open {}: {e}", path.display())))?;
        let txn = db.begin_write().map_err(backend)?;
        let locator = {
            let mut meta = txn.open_table(META).map_err(backend)?;
            let format = meta
                .get("format")
                .map_err(backend)?
                .map(|v| v.value().to_vec());
            match format.as_deref() {
                None => {
                    meta.insert("format", [FORMAT].as_slice())
                        .map_err(backend)?;
                    let locator = Locator::new(codec);
                    meta.insert("locator", locator.to_bytes().as_slice())
                        .map_err(backend)?;
                    locator
                }
                Some([FORMAT]) => {
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
                        "{} holds links in format {:?}, newer than this shardkit reads ({FORMAT}); \
                         run the shardkit that wrote it, or export and import the links",
                        path.display(),
                        other
                    )))
                }
            }
        };
        txn.open_table(RECORDS).map_err(backend)?;
        txn.open_table(IDS).map_err(backend)?;
        txn.open_table(ALIASES).map_err(backend)?;
        txn.open_table(URLS).map_err(backend)?;
        txn.open_multimap_table(TAGS).map_err(backend)?;
        txn.open_table(WIDE).map_err(backend)?;
        migrate::from_json_records(&txn, &locator)?;
        txn.commit().map_err(backend)?;
        Ok(Self { db, locator })
    }

    /// `writes` in one transaction and one fsync. `Err` if any write failed part-way
    /// (nothing of the group is then stored); a `replace` of a missing link, or one that
    /// changes the code, fails before it changes anything, so it is only that write's
    /// error.
    fn write_together(
        &self,
        writes: &[Write],
    ) -> Result<Vec<Result<Written, StoreError>>, StoreError> {
        let txn = self.db.begin_write().map_err(backend)?;
        let mut results = Vec::with_capacity(writes.len());
        for write in writes {
            results.push(match write {
                Write::Insert(links) => {
                    Ok(Written::Inserted(insert_in(&txn, &self.locator, links)?))
                }
                Write::Replace(link) => match replace_in(&txn, &self.locator, link) {
                    Ok(()) => Ok(Written::Replaced),
                    Err(e @ (StoreError::Missing(_) | StoreError::Immutable(_))) => Err(e),
                    Err(e) => return Err(e),
                },
                Write::Delete(link) => {
                    Ok(Written::Deleted(delete_in(&txn, &self.locator, link.id)?))
                }
            });
        }
        txn.commit().map_err(backend)?;
        Ok(results)
    }

    /// The record key of a stored code, from the code itself or the wide-code table.
    fn key_of(&self, txn: &redb::ReadTransaction, code: &str) -> Result<Option<u64>, StoreError> {
        if let Some(key) = self.locator.key_of(code) {
            return Ok(Some(key));
        }
        let wide = txn.open_table(WIDE).map_err(backend)?;
        let key = wide.get(code.as_bytes()).map_err(backend)?;
        Ok(key.map(|k| k.value()))
    }
}

/// The link stored at `key`, decoded.
fn read_at(
    records: &impl ReadableTable<u64, &'static [u8]>,
    locator: &Locator,
    key: u64,
) -> Result<Option<Link>, StoreError> {
    let Some(bytes) = records.get(key).map_err(backend)? else {
        return Ok(None);
    };
    record::decode(bytes.value(), || locator.code_of(key)).map(Some)
}

impl LinkStore for CompactLinkStore {
    fn is_local(&self) -> bool {
        true
    }

    fn write_group(&self, writes: &[Write]) -> Vec<Result<Written, StoreError>> {
        match self.write_together(writes) {
            Ok(results) => results,
            // Nothing of the group was stored: each write runs alone, so only the one at
            // fault fails (a duplicate code, which is a minting bug, or the disk).
            Err(_) => writes.iter().map(|w| write_one(self, w)).collect(),
        }
    }

    fn insert_batch(&self, links: &[Link]) -> Result<Vec<InsertOutcome>, StoreError> {
        let txn = self.db.begin_write().map_err(backend)?;
        let outcomes = insert_in(&txn, &self.locator, links)?;
        txn.commit().map_err(backend)?;
        Ok(outcomes)
    }

    fn get(&self, id: u64) -> Result<Option<Link>, StoreError> {
        let txn = self.db.begin_read().map_err(backend)?;
        let Some(key) = txn
            .open_table(IDS)
            .map_err(backend)?
            .get(id)
            .map_err(backend)?
            .map(|k| k.value())
        else {
            return Ok(None);
        };
        read_at(
            &txn.open_table(RECORDS).map_err(backend)?,
            &self.locator,
            key,
        )
    }

    fn resolve(&self, path: &str) -> Result<Option<Link>, StoreError> {
        let txn = self.db.begin_read().map_err(backend)?;
        // Codes and aliases never share a shape: a code is located, an alias looked up.
        let key = if looks_generated(path) {
            self.key_of(&txn, path)?
        } else {
            let aliases = txn.open_table(ALIASES).map_err(backend)?;
            let key = aliases.get(path.as_bytes()).map_err(backend)?;
            key.map(|k| k.value())
        };
        let Some(key) = key else {
            return Ok(None);
        };
        let records = txn.open_table(RECORDS).map_err(backend)?;
        let found = read_at(&records, &self.locator, key)?;
        // A code whose key holds another link's record (only a wide code could) is absent.
        Ok(found.filter(|l| l.code == path || l.alias_key().as_deref() == Some(path)))
    }

    fn find_reusable(&self, url: &str, domain: Option<&str>) -> Result<Option<Link>, StoreError> {
        let txn = self.db.begin_read().map_err(backend)?;
        let urls = txn.open_table(URLS).map_err(backend)?;
        let records = txn.open_table(RECORDS).map_err(backend)?;
        let low = u128::from(url_hash(url)) << 64;
        let mut best: Option<Link> = None;
        for entry in urls
            .range(low..=low | u128::from(u64::MAX))
            .map_err(backend)?
        {
            let key = entry.map_err(backend)?.0.value() as u64;
            if let Some(link) = read_at(&records, &self.locator, key)? {
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
        let txn = self.db.begin_write().map_err(backend)?;
        replace_in(&txn, &self.locator, link)?;
        txn.commit().map_err(backend)
    }

    fn delete(&self, id: u64) -> Result<Option<Link>, StoreError> {
        let txn = self.db.begin_write().map_err(backend)?;
        let old = delete_in(&txn, &self.locator, id)?;
        txn.commit().map_err(backend)?;
        Ok(old)
    }

    fn list(
        &self,
        tag: Option<&str>,
        after: Option<u64>,
        limit: usize,
    ) -> Result<Vec<Link>, StoreError> {
        let txn = self.db.begin_read().map_err(backend)?;
        let records = txn.open_table(RECORDS).map_err(backend)?;
        list_keys(&txn, tag, after, limit, |key| {
            read_at(&records, &self.locator, key)
        })
    }

    fn count(&self) -> Result<u64, StoreError> {
        let txn = self.db.begin_read().map_err(backend)?;
        txn.open_table(IDS).map_err(backend)?.len().map_err(backend)
    }
}

/// The record key for a new link's code: located, or handed out by the wide-code
/// counter (then `true`: the record must keep its code). A wide code already stored
/// is a duplicate.
pub(crate) fn new_key(
    txn: &WriteTransaction,
    locator: &Locator,
    code: &str,
) -> Result<(u64, bool), StoreError> {
    if let Some(key) = locator.key_of(code) {
        return Ok((key, false));
    }
    let mut wide = txn.open_table(WIDE).map_err(backend)?;
    if wide.get(code.as_bytes()).map_err(backend)?.is_some() {
        return Err(StoreError::Duplicate(format!("code {code}")));
    }
    let mut meta = txn.open_table(META).map_err(backend)?;
    let next = meta
        .get("wide_next")
        .map_err(backend)?
        .and_then(|v| v.value().try_into().ok())
        .map_or(0, u64::from_le_bytes);
    meta.insert("wide_next", (next + 1).to_le_bytes().as_slice())
        .map_err(backend)?;
    let key = Locator::wide_key(next);
    wide.insert(code.as_bytes(), key).map_err(backend)?;
    Ok((key, true))
}

/// `insert_batch` inside `txn` (not committed).
pub(crate) fn insert_in(
    txn: &WriteTransaction,
    locator: &Locator,
    links: &[Link],
) -> Result<Vec<InsertOutcome>, StoreError> {
    let mut outcomes = Vec::with_capacity(links.len());
    let mut records = txn.open_table(RECORDS).map_err(backend)?;
    let mut ids = txn.open_table(IDS).map_err(backend)?;
    let mut aliases = txn.open_table(ALIASES).map_err(backend)?;
    let mut urls = txn.open_table(URLS).map_err(backend)?;
    let mut tags = txn.open_multimap_table(TAGS).map_err(backend)?;
    // Keys first (a wide code takes one), then aliases in request order: the first of
    // two equal aliases wins.
    let mut accepted: Vec<(u64, bool, &Link)> = Vec::with_capacity(links.len());
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
                let owner_code = read_at(&records, locator, owner)?
                    .map(|l| l.code)
                    .unwrap_or_default();
                outcomes.push(InsertOutcome::AliasTaken {
                    alias: alias.clone(),
                    owner_code,
                });
                continue;
            }
        }
        let (key, wide) = new_key(txn, locator, &link.code)?;
        if let Some(alias_key) = link.alias_key() {
            aliases.insert(alias_key.as_bytes(), key).map_err(backend)?;
            batch_aliases.insert(alias_key, &link.code);
        }
        accepted.push((key, wide, link));
        outcomes.push(InsertOutcome::Inserted);
    }
    // Each table in its own key order: neighbouring keys share pages.
    accepted.sort_unstable_by_key(|&(key, _, _)| key);
    for &(key, wide, link) in &accepted {
        let bytes = record::encode(link, wide);
        if records
            .insert(key, bytes.as_slice())
            .map_err(backend)?
            .is_some()
        {
            return Err(StoreError::Duplicate(format!("code {}", link.code)));
        }
    }
    accepted.sort_unstable_by_key(|&(_, _, link)| link.id);
    for &(key, _, link) in &accepted {
        if ids.insert(link.id, key).map_err(backend)?.is_some() {
            return Err(StoreError::Duplicate(format!("id {}", link.id)));
        }
        for tag in &link.tags {
            tags.insert(tag.as_bytes(), link.id).map_err(backend)?;
        }
    }
    accepted.sort_unstable_by_key(|&(key, _, link)| url_entry(&link.url, key));
    for &(key, _, link) in &accepted {
        urls.insert(url_entry(&link.url, key), ())
            .map_err(backend)?;
    }
    Ok(outcomes)
}

/// `replace` inside `txn` (not committed). [`StoreError::Missing`] and
/// [`StoreError::Immutable`] come before anything is changed.
fn replace_in(txn: &WriteTransaction, locator: &Locator, link: &Link) -> Result<(), StoreError> {
    let key = txn
        .open_table(IDS)
        .map_err(backend)?
        .get(link.id)
        .map_err(backend)?
        .map(|k| k.value())
        .ok_or(StoreError::Missing(link.id))?;
    let mut records = txn.open_table(RECORDS).map_err(backend)?;
    let old = read_at(&records, locator, key)?.ok_or(StoreError::Missing(link.id))?;
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
    records
        .insert(key, record::encode(link, is_wide(key)).as_slice())
        .map_err(backend)?;
    Ok(())
}

/// `delete` inside `txn` (not committed).
fn delete_in(
    txn: &WriteTransaction,
    locator: &Locator,
    id: u64,
) -> Result<Option<Link>, StoreError> {
    let Some(key) = txn
        .open_table(IDS)
        .map_err(backend)?
        .remove(id)
        .map_err(backend)?
        .map(|k| k.value())
    else {
        return Ok(None);
    };
    let mut records = txn.open_table(RECORDS).map_err(backend)?;
    let Some(old) = read_at(&records, locator, key)? else {
        return Ok(None);
    };
    records.remove(key).map_err(backend)?;
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

/// The links of a listing page (ids above `after`, with `tag` if given, at most
/// `limit`), found through `link_ids` (and `link_tags`) and read by record key with
/// `read`: shared by the stores whose `link_ids` maps an id to a record key.
pub(crate) fn list_keys(
    txn: &redb::ReadTransaction,
    tag: Option<&str>,
    after: Option<u64>,
    limit: usize,
    mut read: impl FnMut(u64) -> Result<Option<Link>, StoreError>,
) -> Result<Vec<Link>, StoreError> {
    list_page(txn, IDS, TAGS, tag, after, limit, |_, key| read(key))
}

/// A listing page of any redb link store: the ids above `after` in id order (those
/// under `tag` in the `tags` multimap when given), at most `limit`, each turned into a
/// link by `read` from its id and its value in `by_id` (a table keyed by link id).
pub(crate) fn list_page<V: redb::Value + 'static>(
    txn: &redb::ReadTransaction,
    by_id: TableDefinition<u64, V>,
    tags: redb::MultimapTableDefinition<&[u8], u64>,
    tag: Option<&str>,
    after: Option<u64>,
    limit: usize,
    mut read: impl for<'v> FnMut(u64, V::SelfType<'v>) -> Result<Option<Link>, StoreError>,
) -> Result<Vec<Link>, StoreError> {
    let table = txn.open_table(by_id).map_err(backend)?;
    let start = match after {
        Some(u64::MAX) => return Ok(Vec::new()),
        Some(a) => a + 1,
        None => 0,
    };
    let mut out = Vec::with_capacity(limit.min(1024));
    match tag {
        None => {
            for entry in table.range(start..).map_err(backend)? {
                if out.len() >= limit {
                    break;
                }
                let (id, value) = entry.map_err(backend)?;
                out.extend(read(id.value(), value.value())?);
            }
        }
        Some(tag) => {
            let tags = txn.open_multimap_table(tags).map_err(backend)?;
            for id in tags.get(tag.as_bytes()).map_err(backend)? {
                if out.len() >= limit {
                    break;
                }
                let id = id.map_err(backend)?.value();
                if id < start {
                    continue;
                }
                if let Some(value) = table.get(id).map_err(backend)? {
                    out.extend(read(id, value.value())?);
                }
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conformance::sample_link;
    use crate::Feistel;

    fn codec() -> Codec {
        Codec::scrambled(Feistel::new([5; 16]))
    }

    #[test]
    fn passes_the_conformance_suite() {
        let dir = tempfile::tempdir().unwrap();
        let store =
            CompactLinkStore::open(dir.path().join("links.redb"), codec(), 1 << 20).unwrap();
        crate::conformance::run(&store);
    }

    #[test]
    fn links_survive_a_reopen_under_another_key_and_wide_codes_keep_theirs() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("links.redb");
        let minted: Vec<Link> = (0..300u64)
            .map(|i| {
                let code = codec().encode((i % 62) as u8, i / 62).unwrap();
                sample_link(1000 + i, &code, &format!("https://example.com/{i}"))
            })
            .collect();
        let wide_code = codec().encode(7, 1 << 59).unwrap();
        let mut wide = sample_link(5000, &wide_code, "https://example.com/wide");
        wide.tags = vec!["far".into()];
        {
            let store = CompactLinkStore::open(&path, codec(), 1 << 20).unwrap();
            assert_eq!(store.insert_batch(&minted).unwrap().len(), 300);
            store.insert_batch(std::slice::from_ref(&wide)).unwrap();
            assert!(matches!(
                store.insert_batch(&[sample_link(5001, &wide_code, "https://x.example/")]),
                Err(StoreError::Duplicate(_))
            ));
        }
        // The file keeps the codec it was made with: a new key file changes nothing.
        let other = Codec::scrambled(Feistel::new([6; 16]));
        let store = CompactLinkStore::open(&path, other, 1 << 20).unwrap();
        assert_eq!(store.count().unwrap(), 301);
        for link in &minted {
            assert_eq!(store.resolve(&link.code).unwrap().as_ref(), Some(link));
        }
        assert_eq!(store.resolve(&wide_code).unwrap(), Some(wide.clone()));
        assert_eq!(store.list(Some("far"), None, 10).unwrap(), [wide.clone()]);
        assert_eq!(store.delete(5000).unwrap(), Some(wide));
        assert_eq!(store.resolve(&wide_code).unwrap(), None);
    }

    #[test]
    fn a_newer_format_is_refused_with_what_to_do() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("links.redb");
        {
            let db = Database::create(&path).unwrap();
            let txn = db.begin_write().unwrap();
            txn.open_table(META)
                .unwrap()
                .insert("format", [9u8].as_slice())
                .unwrap();
            txn.commit().unwrap();
        }
        let err = CompactLinkStore::open(&path, codec(), 1 << 20).unwrap_err();
        assert!(
            err.to_string().contains("newer than this shardkit"),
            "{err}"
        );
    }
}

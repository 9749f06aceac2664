//! The previous embedded [`LinkStore`]: one redb file, every write one fsynced
//! transaction, a JSON record per link found through a `codes` index. The server
//! uses [`crate::CompactLinkStore`] (which converts such a file on open); this one
//! stays for side-by-side measurements (`[links] store = "redb-json"`) and to make
//! files of the old format in tests.
//!
//! Tables: `links` (id -> JSON record), `codes` (code -> id), `aliases` (alias -> id),
//! `urls` (hash of normalized URL -> ids, checked against the record since hashes can
//! collide), `tags` (tag -> ids). All are changed together in one transaction, so
//! after a crash either every entry of a link is there or none is.
//! [`LinkStore::write_group`] puts many callers' writes in one transaction, so one
//! fsync acknowledges them all ([`crate::GroupCommit`] gathers them).

use crate::code::looks_generated;
use crate::error::StoreError;
use crate::model::Link;
use crate::store::{write_one, InsertOutcome, LinkStore, Write, Written};
use redb::{
    Database, MultimapTableDefinition, ReadableTable, ReadableTableMetadata, TableDefinition,
    WriteTransaction,
};
use std::path::Path;

const LINKS: TableDefinition<u64, &[u8]> = TableDefinition::new("links");
// Text keys are stored as bytes: redb compares `&[u8]` with memcmp, while `&str`
// keys are UTF-8-checked on every comparison (measured: 5% of bulk-insert time).
const CODES: TableDefinition<&[u8], u64> = TableDefinition::new("codes");
const ALIASES: TableDefinition<&[u8], u64> = TableDefinition::new("aliases");
const URLS: MultimapTableDefinition<u64, u64> = MultimapTableDefinition::new("urls");
const TAGS: MultimapTableDefinition<&[u8], u64> = MultimapTableDefinition::new("tags");

/// Links in a redb file.
pub struct RedbLinkStore {
    db: Database,
}

impl std::fmt::Debug for RedbLinkStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RedbLinkStore")
    }
}

fn backend(e: impl std::fmt::Display) -> StoreError {
    StoreError::Backend(e.to_string())
}

fn decode(id: u64, bytes: &[u8]) -> Result<Link, StoreError> {
    serde_json::from_slice(bytes).map_err(|e| StoreError::Corrupt {
        id,
        reason: e.to_string(),
    })
}

fn encode(link: &Link) -> Result<Vec<u8>, StoreError> {
    serde_json::to_vec(link).map_err(backend)
}

fn url_key(url: &str) -> u64 {
    shardkit_ring::hash_bytes(url.as_bytes())
}

impl RedbLinkStore {
    /// Opens (or creates) the file. Fails if another process has it open.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, StoreError> {
        let path = path.as_ref();
        let db = Database::create(path)
            .map_err(|e| StoreError::Backend(format!("cannot open {}: {e}", path.display())))?;
        let txn = db.begin_write().map_err(backend)?;
        {
            txn.open_table(LINKS).map_err(backend)?;
            txn.open_table(CODES).map_err(backend)?;
            txn.open_table(ALIASES).map_err(backend)?;
            txn.open_multimap_table(URLS).map_err(backend)?;
            txn.open_multimap_table(TAGS).map_err(backend)?;
        }
        txn.commit().map_err(backend)?;
        Ok(Self { db })
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
                Write::Insert(links) => Ok(Written::Inserted(insert_in(&txn, links)?)),
                Write::Replace(link) => match replace_in(&txn, link) {
                    Ok(()) => Ok(Written::Replaced),
                    Err(e @ (StoreError::Missing(_) | StoreError::Immutable(_))) => Err(e),
                    Err(e) => return Err(e),
                },
                Write::Delete(link) => Ok(Written::Deleted(delete_in(&txn, link.id)?)),
            });
        }
        txn.commit().map_err(backend)?;
        Ok(results)
    }
}

impl LinkStore for RedbLinkStore {
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
        let outcomes = insert_in(&txn, links)?;
        txn.commit().map_err(backend)?;
        Ok(outcomes)
    }

    fn get(&self, id: u64) -> Result<Option<Link>, StoreError> {
        let txn = self.db.begin_read().map_err(backend)?;
        let table = txn.open_table(LINKS).map_err(backend)?;
        let record = table.get(id).map_err(backend)?;
        record.map(|r| decode(id, r.value())).transpose()
    }

    fn resolve(&self, path: &str) -> Result<Option<Link>, StoreError> {
        let txn = self.db.begin_read().map_err(backend)?;
        // Codes and aliases never share a shape, so one table answers.
        let index = txn
            .open_table(if looks_generated(path) {
                CODES
            } else {
                ALIASES
            })
            .map_err(backend)?;
        let Some(id) = index
            .get(path.as_bytes())
            .map_err(backend)?
            .map(|g| g.value())
        else {
            return Ok(None);
        };
        let table = txn.open_table(LINKS).map_err(backend)?;
        let record = table.get(id).map_err(backend)?;
        record.map(|r| decode(id, r.value())).transpose()
    }

    fn find_reusable(&self, url: &str, domain: Option<&str>) -> Result<Option<Link>, StoreError> {
        let txn = self.db.begin_read().map_err(backend)?;
        let urls = txn.open_multimap_table(URLS).map_err(backend)?;
        let table = txn.open_table(LINKS).map_err(backend)?;
        for id in urls.get(url_key(url)).map_err(backend)? {
            let id = id.map_err(backend)?.value();
            if let Some(record) = table.get(id).map_err(backend)? {
                let link = decode(id, record.value())?;
                if link.url == url && link.reusable() && link.domain.as_deref() == domain {
                    return Ok(Some(link));
                }
            }
        }
        Ok(None)
    }

    fn replace(&self, link: &Link) -> Result<(), StoreError> {
        let txn = self.db.begin_write().map_err(backend)?;
        replace_in(&txn, link)?;
        txn.commit().map_err(backend)
    }

    fn delete(&self, id: u64) -> Result<Option<Link>, StoreError> {
        let txn = self.db.begin_write().map_err(backend)?;
        let old = delete_in(&txn, id)?;
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
        crate::compact_store::list_page(&txn, LINKS, TAGS, tag, after, limit, |id, record| {
            decode(id, record).map(Some)
        })
    }

    fn count(&self) -> Result<u64, StoreError> {
        let txn = self.db.begin_read().map_err(backend)?;
        txn.open_table(LINKS)
            .map_err(backend)?
            .len()
            .map_err(backend)
    }
}

/// `insert_batch` inside `txn` (not committed).
fn insert_in(txn: &WriteTransaction, links: &[Link]) -> Result<Vec<InsertOutcome>, StoreError> {
    let mut outcomes = Vec::with_capacity(links.len());
    {
        let mut by_id = txn.open_table(LINKS).map_err(backend)?;
        let mut codes = txn.open_table(CODES).map_err(backend)?;
        let mut aliases = txn.open_table(ALIASES).map_err(backend)?;
        let mut urls = txn.open_multimap_table(URLS).map_err(backend)?;
        let mut tags = txn.open_multimap_table(TAGS).map_err(backend)?;
        // Aliases first, in request order: the first of two equal aliases wins.
        let mut accepted: Vec<&Link> = Vec::with_capacity(links.len());
        let mut batch_aliases: std::collections::HashMap<std::borrow::Cow<str>, &str> =
            std::collections::HashMap::new();
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
                    let owner_code = match by_id.get(owner).map_err(backend)? {
                        Some(record) => decode(owner, record.value())?.code,
                        None => String::new(),
                    };
                    outcomes.push(InsertOutcome::AliasTaken {
                        alias: alias.clone(),
                        owner_code,
                    });
                    continue;
                }
                aliases
                    .insert(alias_key.as_bytes(), link.id)
                    .map_err(backend)?;
                batch_aliases.insert(alias_key, &link.code);
            }
            accepted.push(link);
            outcomes.push(InsertOutcome::Inserted);
        }
        // Then each table in its own key order: neighbouring keys share pages, so a
        // big batch touches each page once instead of at random.
        accepted.sort_unstable_by_key(|l| l.id);
        for link in &accepted {
            if by_id
                .insert(link.id, encode(link)?.as_slice())
                .map_err(backend)?
                .is_some()
            {
                return Err(StoreError::Duplicate(format!("id {}", link.id)));
            }
        }
        accepted.sort_unstable_by(|a, b| a.code.cmp(&b.code));
        for link in &accepted {
            if codes
                .insert(link.code.as_bytes(), link.id)
                .map_err(backend)?
                .is_some()
            {
                return Err(StoreError::Duplicate(format!("code {}", link.code)));
            }
        }
        accepted.sort_unstable_by_key(|l| url_key(&l.url));
        for link in &accepted {
            urls.insert(url_key(&link.url), link.id).map_err(backend)?;
            for tag in &link.tags {
                tags.insert(tag.as_bytes(), link.id).map_err(backend)?;
            }
        }
    }
    Ok(outcomes)
}

/// `replace` inside `txn` (not committed). [`StoreError::Missing`] and
/// [`StoreError::Immutable`] come before anything is changed.
fn replace_in(txn: &WriteTransaction, link: &Link) -> Result<(), StoreError> {
    let mut by_id = txn.open_table(LINKS).map_err(backend)?;
    let old = match by_id.get(link.id).map_err(backend)? {
        Some(record) => decode(link.id, record.value())?,
        None => return Err(StoreError::Missing(link.id)),
    };
    if old.code != link.code || old.alias != link.alias || old.domain != link.domain {
        return Err(StoreError::Immutable(link.id));
    }
    let mut urls = txn.open_multimap_table(URLS).map_err(backend)?;
    let mut tags = txn.open_multimap_table(TAGS).map_err(backend)?;
    urls.remove(url_key(&old.url), link.id).map_err(backend)?;
    urls.insert(url_key(&link.url), link.id).map_err(backend)?;
    for tag in &old.tags {
        tags.remove(tag.as_bytes(), link.id).map_err(backend)?;
    }
    for tag in &link.tags {
        tags.insert(tag.as_bytes(), link.id).map_err(backend)?;
    }
    by_id
        .insert(link.id, encode(link)?.as_slice())
        .map_err(backend)?;
    Ok(())
}

/// `delete` inside `txn` (not committed).
fn delete_in(txn: &WriteTransaction, id: u64) -> Result<Option<Link>, StoreError> {
    let mut by_id = txn.open_table(LINKS).map_err(backend)?;
    let old = match by_id.remove(id).map_err(backend)? {
        Some(record) => decode(id, record.value())?,
        None => return Ok(None),
    };
    txn.open_table(CODES)
        .map_err(backend)?
        .remove(old.code.as_bytes())
        .map_err(backend)?;
    if let Some(alias) = old.alias_key() {
        txn.open_table(ALIASES)
            .map_err(backend)?
            .remove(alias.as_bytes())
            .map_err(backend)?;
    }
    txn.open_multimap_table(URLS)
        .map_err(backend)?
        .remove(url_key(&old.url), id)
        .map_err(backend)?;
    let mut tags = txn.open_multimap_table(TAGS).map_err(backend)?;
    for tag in &old.tags {
        tags.remove(tag.as_bytes(), id).map_err(backend)?;
    }
    Ok(Some(old))
}

#[cfg(test)]
mod tests {
    #[test]
    fn passes_the_conformance_suite() {
        let dir = tempfile::tempdir().unwrap();
        let store = super::RedbLinkStore::open(dir.path().join("links.redb")).unwrap();
        crate::conformance::run(&store);
    }
}

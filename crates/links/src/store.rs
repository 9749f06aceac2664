//! Where links live, behind a trait: the embedded [`crate::RedbLinkStore`] now, the
//! PostgreSQL backend later. Synchronous and object-safe (`Arc<dyn LinkStore>`), so a
//! caller picks the backend at start-up; async callers run it on a blocking thread.
//!
//! Every implementation keeps four lookups consistent in one transaction: the link
//! by id, its code, its alias, the normalized URL (for `"reuse": true`) and its tags.
//! [`crate::conformance::run`] checks an implementation against this contract.

use crate::error::StoreError;
use crate::model::Link;
use std::collections::HashSet;

/// What happened to one link of a batch insert.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InsertOutcome {
    /// Stored.
    Inserted,
    /// The alias belongs to another link (whose code is given); nothing of this
    /// link was stored.
    AliasTaken {
        /// The alias asked for.
        alias: String,
        /// The code of the link that owns it.
        owner_code: String,
    },
}

/// One write of a group handed to [`LinkStore::write_group`]: what `insert_batch`,
/// `replace` and `delete_link` do, as values, so many callers' writes can share one
/// durable commit ([`crate::GroupCommit`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Write {
    /// [`LinkStore::insert_batch`] of these links.
    Insert(Vec<Link>),
    /// [`LinkStore::replace`] with this link.
    Replace(Link),
    /// [`LinkStore::delete_link`] of this link.
    Delete(Link),
}

/// What one [`Write`] of a group did.
// One is made and moved once per write; boxing the deleted link would cost an
// allocation per delete to save bytes nobody keeps.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Written {
    /// One outcome per inserted link, in order.
    Inserted(Vec<InsertOutcome>),
    /// The link was replaced.
    Replaced,
    /// The link deleted, or `None` if it was not stored.
    Deleted(Option<Link>),
}

/// Durable storage of links.
pub trait LinkStore: Send + Sync {
    /// Stores `links` in one durable transaction (committed and fsynced before this
    /// returns) and answers one outcome per link, in order. A link whose alias is taken
    /// (stored, or earlier in the batch) is skipped; the others are stored. A code or
    /// id that is already stored (a minting bug, never expected) fails the whole batch
    /// with [`StoreError::Duplicate`] and stores nothing.
    fn insert_batch(&self, links: &[Link]) -> Result<Vec<InsertOutcome>, StoreError>;

    /// Replaces the ids of `links` (not yet stored) with ids the store makes, where
    /// ids must be unique across every server sharing the store: the PostgreSQL store
    /// takes them from each code shard's `next_id()`. The default keeps the ids the
    /// caller made (an embedded store has one writer).
    fn assign_ids(&self, links: &mut [Link]) -> Result<(), StoreError> {
        let _ = links;
        Ok(())
    }

    /// The link with this id.
    fn get(&self, id: u64) -> Result<Option<Link>, StoreError>;

    /// The link reached at `/{path}`: by generated code, or by alias key (the alias on
    /// the default domain, `domain/alias` on another; see [`crate::alias_key`]).
    fn resolve(&self, path: &str) -> Result<Option<Link>, StoreError>;

    /// [`LinkStore::resolve`] when that needs neither the network nor the disk (what it
    /// reads is in the kernel's page cache); `None` when it would wait for one of them,
    /// and the caller should then call `resolve` where blocking is fine. Exists so a
    /// redirect on an async thread reads in place when that costs a microsecond and
    /// leaves the thread only for a read that would hold it. By default a local store
    /// always resolves (it cannot tell) and any other never does.
    fn resolve_cached(&self, path: &str) -> Option<Result<Option<Link>, StoreError>> {
        self.is_local().then(|| self.resolve(path))
    }

    /// Which of `codes` the store holds (what [`LinkStore::resolve`] would find):
    /// exists so a batch of freshly minted or restored codes is checked in one call,
    /// which a sharded store answers with one query a server instead of one a code.
    /// The default resolves each code.
    fn held_codes(&self, codes: &[String]) -> Result<HashSet<String>, StoreError> {
        let mut held = HashSet::new();
        for code in codes {
            if self.resolve(code)?.is_some() {
                held.insert(code.clone());
            }
        }
        Ok(held)
    }

    /// A link for normalized URL `url` at `domain` (`None`: the default domain) that
    /// `"reuse": true` may hand out again: one with no alias, no expiry and no visit
    /// limit, the oldest first. A link of another domain is never handed out: its short
    /// URL would name a host the caller did not ask for.
    fn find_reusable(&self, url: &str, domain: Option<&str>) -> Result<Option<Link>, StoreError>;

    /// Replaces the stored link with `link.id` (new target, expiry, limits, redirect,
    /// tags), updating the URL and tag indexes. Code and alias cannot change.
    fn replace(&self, link: &Link) -> Result<(), StoreError>;

    /// Deletes the link with this id and its index entries; answers what was deleted.
    fn delete(&self, id: u64) -> Result<Option<Link>, StoreError>;

    /// Deletes `link` (as [`LinkStore::resolve`] answered it) and its index entries;
    /// answers what was deleted. The same as `delete(link.id)`, but a sharded store can
    /// route by the link's code instead of asking every shard for the id.
    fn delete_link(&self, link: &Link) -> Result<Option<Link>, StoreError> {
        self.delete(link.id)
    }

    /// Up to `limit` links in id order (creation time, then shard) with id above `after`, only those
    /// tagged `tag` if given. The last id is the cursor of the next page.
    fn list(
        &self,
        tag: Option<&str>,
        after: Option<u64>,
        limit: usize,
    ) -> Result<Vec<Link>, StoreError>;

    /// How many links are stored.
    fn count(&self) -> Result<u64, StoreError>;

    /// Whether every call is answered from this machine's storage, with no network
    /// round trip: then a caller on an async thread may read it in place and only wait
    /// (without a thread) for writes. False unless a store says so.
    fn is_local(&self) -> bool {
        false
    }

    /// Applies `writes` in order, each as its method would, and answers one result per
    /// write. A store that can commits them together (the embedded store: one fsynced
    /// transaction for the whole group); every result is durable when this returns.
    /// A write's error is its own: the others still apply. The default runs each
    /// write on its own.
    fn write_group(&self, writes: &[Write]) -> Vec<Result<Written, StoreError>> {
        writes.iter().map(|w| write_one(self, w)).collect()
    }
}

/// One write applied on its own, as its [`LinkStore`] method does.
pub fn write_one<S: LinkStore + ?Sized>(store: &S, write: &Write) -> Result<Written, StoreError> {
    match write {
        Write::Insert(links) => store.insert_batch(links).map(Written::Inserted),
        Write::Replace(link) => store.replace(link).map(|()| Written::Replaced),
        Write::Delete(link) => store.delete_link(link).map(Written::Deleted),
    }
}

impl<T: LinkStore + ?Sized> LinkStore for std::sync::Arc<T> {
    fn insert_batch(&self, links: &[Link]) -> Result<Vec<InsertOutcome>, StoreError> {
        (**self).insert_batch(links)
    }
    fn assign_ids(&self, links: &mut [Link]) -> Result<(), StoreError> {
        (**self).assign_ids(links)
    }
    fn get(&self, id: u64) -> Result<Option<Link>, StoreError> {
        (**self).get(id)
    }
    fn resolve(&self, path: &str) -> Result<Option<Link>, StoreError> {
        (**self).resolve(path)
    }
    fn resolve_cached(&self, path: &str) -> Option<Result<Option<Link>, StoreError>> {
        (**self).resolve_cached(path)
    }
    fn held_codes(&self, codes: &[String]) -> Result<HashSet<String>, StoreError> {
        (**self).held_codes(codes)
    }
    fn find_reusable(&self, url: &str, domain: Option<&str>) -> Result<Option<Link>, StoreError> {
        (**self).find_reusable(url, domain)
    }
    fn replace(&self, link: &Link) -> Result<(), StoreError> {
        (**self).replace(link)
    }
    fn delete(&self, id: u64) -> Result<Option<Link>, StoreError> {
        (**self).delete(id)
    }
    fn delete_link(&self, link: &Link) -> Result<Option<Link>, StoreError> {
        (**self).delete_link(link)
    }
    fn list(
        &self,
        tag: Option<&str>,
        after: Option<u64>,
        limit: usize,
    ) -> Result<Vec<Link>, StoreError> {
        (**self).list(tag, after, limit)
    }
    fn count(&self) -> Result<u64, StoreError> {
        (**self).count()
    }
    fn write_group(&self, writes: &[Write]) -> Vec<Result<Written, StoreError>> {
        (**self).write_group(writes)
    }
    fn is_local(&self) -> bool {
        (**self).is_local()
    }
}

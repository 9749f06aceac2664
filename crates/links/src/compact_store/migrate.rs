//! A `links.redb` of the previous format (one JSON record per link in `links`, found
//! through `codes`, `aliases`, `urls` and `tags`) is converted to the compact layout
//! when [`crate::CompactLinkStore::open`] first sees it: every record is decoded and
//! written again, and the old tables are dropped, inside the open's one transaction.
//! A crash during the conversion leaves the old file as it was (redb commits all or
//! nothing), and the next start converts it again. Nothing to do by hand.

use super::{backend, insert_in};
use crate::error::StoreError;
use crate::locator::Locator;
use crate::model::Link;
use crate::store::InsertOutcome;
use redb::{
    MultimapTableDefinition, ReadableTable, TableDefinition, TableHandle, WriteTransaction,
};

const OLD_LINKS: TableDefinition<u64, &[u8]> = TableDefinition::new("links");
const OLD_CODES: TableDefinition<&[u8], u64> = TableDefinition::new("codes");
const OLD_ALIASES: TableDefinition<&[u8], u64> = TableDefinition::new("aliases");
const OLD_URLS: MultimapTableDefinition<u64, u64> = MultimapTableDefinition::new("urls");
const OLD_TAGS: MultimapTableDefinition<&[u8], u64> = MultimapTableDefinition::new("tags");

/// Links converted per `insert_in` call (each call sorts its links by key).
const CHUNK: usize = 50_000;

/// Converts the previous format's tables in `txn`, if the file has them; answers how
/// many links were converted.
pub(crate) fn from_json_records(
    txn: &WriteTransaction,
    locator: &Locator,
) -> Result<u64, StoreError> {
    let has_old = txn
        .list_tables()
        .map_err(backend)?
        .any(|t| t.name() == OLD_LINKS.name());
    if !has_old {
        return Ok(0);
    }
    let mut converted = 0u64;
    {
        let old = txn.open_table(OLD_LINKS).map_err(backend)?;
        let mut chunk: Vec<Link> = Vec::with_capacity(CHUNK);
        let mut flush = |chunk: &mut Vec<Link>| -> Result<(), StoreError> {
            for outcome in insert_in(txn, locator, chunk)? {
                if let InsertOutcome::AliasTaken { alias, .. } = outcome {
                    return Err(StoreError::Backend(format!(
                        "the old links.redb holds alias {alias:?} twice; it cannot be converted"
                    )));
                }
            }
            converted += chunk.len() as u64;
            chunk.clear();
            Ok(())
        };
        for entry in old.iter().map_err(backend)? {
            let (id, json) = entry.map_err(backend)?;
            let link: Link =
                serde_json::from_slice(json.value()).map_err(|e| StoreError::Corrupt {
                    id: id.value(),
                    reason: format!("{e} (converting the old links.redb)"),
                })?;
            chunk.push(link);
            if chunk.len() == CHUNK {
                flush(&mut chunk)?;
            }
        }
        flush(&mut chunk)?;
    }
    txn.delete_table(OLD_LINKS).map_err(backend)?;
    txn.delete_table(OLD_CODES).map_err(backend)?;
    txn.delete_table(OLD_ALIASES).map_err(backend)?;
    txn.delete_multimap_table(OLD_URLS).map_err(backend)?;
    txn.delete_multimap_table(OLD_TAGS).map_err(backend)?;
    Ok(converted)
}

#[cfg(test)]
mod tests {
    use crate::conformance::sample_link;
    use crate::{Codec, CompactLinkStore, Feistel, LinkStore, RedbLinkStore};

    #[test]
    fn a_file_of_the_previous_format_is_converted_on_open() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("links.redb");
        let codec = Codec::scrambled(Feistel::new([2; 16]));
        let mut links = Vec::new();
        for i in 0..120u64 {
            let code = codec.encode((i % 62) as u8, i).unwrap();
            let mut link = sample_link(100 + i, &code, &format!("https://example.com/{}", i % 9));
            if i % 10 == 0 {
                link.alias = Some(format!("alias-{i}"));
                link.tags = vec!["ten".into()];
            }
            links.push(link);
        }
        {
            let old = RedbLinkStore::open(&path).unwrap();
            old.insert_batch(&links).unwrap();
        }
        let store = CompactLinkStore::open(&path, codec.clone(), 1 << 20).unwrap();
        assert_eq!(store.count().unwrap(), 120);
        for link in &links {
            assert_eq!(store.resolve(link.path()).unwrap().as_ref(), Some(link));
            assert_eq!(store.get(link.id).unwrap().as_ref(), Some(link));
        }
        assert_eq!(store.list(Some("ten"), None, 100).unwrap().len(), 12);
        assert_eq!(
            store
                .find_reusable("https://example.com/1", None)
                .unwrap()
                .map(|l| l.id),
            Some(101)
        );
        drop(store);
        // Opened again: nothing left to convert, everything still there.
        let store = CompactLinkStore::open(&path, codec, 1 << 20).unwrap();
        assert_eq!(store.count().unwrap(), 120);
    }
}

//! Tests of the segment store's folds ([`crate::SegmentLinkStore`] module doc): ids and
//! URLs moved out of redb into runs answer as before, through replaces, deletes,
//! listing, reuse, reopening, a fold every [`crate::FOLD_LINKS`] links, and a run file
//! gone from the data directory.

use crate::conformance::sample_link;
use crate::error::StoreError;
use crate::segment_store::segments_dir;
use crate::segment_store_tests::{change, check, codec, links};
use crate::store::{InsertOutcome, Write, Written};
use crate::{Link, LinkStore, SegmentLinkStore, FOLD_LINKS};

/// A store that folds after every write, so every read meets runs.
struct FoldingEveryWrite(SegmentLinkStore);

impl FoldingEveryWrite {
    fn folded<T>(&self, r: Result<T, StoreError>) -> Result<T, StoreError> {
        self.0.fold_now().unwrap();
        r
    }
}

impl LinkStore for FoldingEveryWrite {
    fn insert_batch(&self, links: &[Link]) -> Result<Vec<InsertOutcome>, StoreError> {
        self.folded(self.0.insert_batch(links))
    }
    fn get(&self, id: u64) -> Result<Option<Link>, StoreError> {
        self.0.get(id)
    }
    fn resolve(&self, path: &str) -> Result<Option<Link>, StoreError> {
        self.0.resolve(path)
    }
    fn find_reusable(&self, url: &str, domain: Option<&str>) -> Result<Option<Link>, StoreError> {
        self.0.find_reusable(url, domain)
    }
    fn replace(&self, link: &Link) -> Result<(), StoreError> {
        self.folded(self.0.replace(link))
    }
    fn delete(&self, id: u64) -> Result<Option<Link>, StoreError> {
        self.folded(self.0.delete(id))
    }
    fn list(
        &self,
        tag: Option<&str>,
        after: Option<u64>,
        limit: usize,
    ) -> Result<Vec<Link>, StoreError> {
        self.0.list(tag, after, limit)
    }
    fn count(&self) -> Result<u64, StoreError> {
        self.0.count()
    }
    fn write_group(&self, writes: &[Write]) -> Vec<Result<Written, StoreError>> {
        let results = self.0.write_group(writes);
        self.0.fold_now().unwrap();
        results
    }
}

#[test]
fn passes_the_conformance_suite_folding_after_every_write() {
    let dir = tempfile::tempdir().unwrap();
    let store = SegmentLinkStore::open(dir.path().join("links.redb"), codec(), 1 << 20).unwrap();
    let store = FoldingEveryWrite(store);
    crate::conformance::run(&store);
    let stats = store.0.fold_stats();
    assert!(
        stats.id_pairs > 0 && stats.url_pairs > 0 && stats.run_bytes > 0,
        "{stats:?}"
    );
    assert!(stats.folds > 5 && stats.fold_errors == 0, "{stats:?}");
}

#[test]
fn folded_links_are_replaced_deleted_listed_and_reused_and_survive_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("links.redb");
    let kept = {
        let store = SegmentLinkStore::open(&path, codec(), 1 << 20).unwrap();
        store.insert_batch(&links()).unwrap();
        store.fold_now().unwrap();
        assert_eq!(store.fold_stats().id_pairs, 302);
        for link in links() {
            assert_eq!(store.get(link.id).unwrap(), Some(link));
        }
        // Replaced and deleted while their ids and URLs are in runs only.
        let kept = change(&store, links());
        check(&store, &kept);
        // An id already folded is refused, even under a new code.
        let code = codec().encode(4, 90_000).unwrap();
        assert!(matches!(
            store.insert_batch(&[sample_link(kept[0].id, &code, "https://dup.example/")]),
            Err(StoreError::Duplicate(_))
        ));
        store.fold_now().unwrap();
        check(&store, &kept);
        // A folded id whose link was deleted and whose code now holds another link:
        // the stale pair is not that id's, so the id may be stored again elsewhere.
        let gone = sample_link(
            7_000,
            &codec().encode(5, 80_000).unwrap(),
            "https://g.example/",
        );
        store.insert_batch(std::slice::from_ref(&gone)).unwrap();
        store.fold_now().unwrap();
        store.delete(gone.id).unwrap();
        let heir = sample_link(7_001, &gone.code, "https://heir.example/");
        let again = sample_link(
            7_000,
            &codec().encode(6, 80_000).unwrap(),
            "https://a.example/",
        );
        store.insert_batch(&[heir.clone(), again.clone()]).unwrap();
        assert_eq!(store.get(7_000).unwrap(), Some(again.clone()));
        assert_eq!(store.get(7_001).unwrap(), Some(heir.clone()));
        for link in [heir, again] {
            store.delete(link.id).unwrap();
        }
        kept
    };
    let store = SegmentLinkStore::open(&path, codec(), 1 << 20).unwrap();
    check(&store, &kept);
    // New links beside folded ones: pages through both in id order, each once.
    let more: Vec<Link> = (0..50u64)
        .map(|i| {
            let code = codec().encode((i % 62) as u8, 1_000 + i).unwrap();
            sample_link(4000 + i * 3, &code, &format!("https://more.example/{i}"))
        })
        .collect();
    store.insert_batch(&more).unwrap();
    let mut all: Vec<Link> = kept.iter().chain(&more).cloned().collect();
    all.sort_by_key(|l| l.id);
    let mut paged = Vec::new();
    let mut after = None;
    loop {
        let page = store.list(None, after, 7).unwrap();
        let Some(last) = page.last() else { break };
        after = Some(last.id);
        paged.extend(page);
    }
    assert_eq!(paged, all);
    assert_eq!(store.count().unwrap(), all.len() as u64);
    // The oldest reusable link for a URL wins, wherever its pair is.
    assert_eq!(
        store
            .find_reusable("https://example.com/9", None)
            .unwrap()
            .map(|l| l.id),
        Some(1009)
    );
}

#[test]
fn a_fold_runs_by_itself_every_fold_links_and_keeps_redb_small() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("links.redb");
    let store = SegmentLinkStore::open(&path, codec(), 4 << 20).unwrap();
    let total = FOLD_LINKS + 5_000;
    let link_at = |i: u64| {
        let code = codec().encode((i % 62) as u8, i / 62).unwrap();
        sample_link(10 + i, &code, &format!("https://e.example/{}", i % 100_000))
    };
    let mut i = 0;
    while i < total {
        let batch: Vec<Link> = (i..(i + 4096).min(total)).map(link_at).collect();
        store.insert_batch(&batch).unwrap();
        i += batch.len() as u64;
    }
    let stats = store.fold_stats();
    assert_eq!((stats.folds, stats.fold_errors, stats.runs), (1, 0, 2));
    assert_eq!((stats.id_pairs, stats.url_pairs), (FOLD_LINKS, FOLD_LINKS));
    // A few bytes a pair (redb kept ~32).
    assert!(stats.run_bytes < 8 * 2 * FOLD_LINKS, "{stats:?}");
    assert_eq!(store.count().unwrap(), total);
    for i in (0..total).step_by(9_973) {
        assert_eq!(store.get(10 + i).unwrap(), Some(link_at(i)));
    }
    assert_eq!(
        store
            .find_reusable("https://e.example/5", None)
            .unwrap()
            .map(|l| l.id),
        Some(15)
    );
    drop(store);
    let store = SegmentLinkStore::open(&path, codec(), 4 << 20).unwrap();
    assert_eq!(store.count().unwrap(), total);
    assert_eq!(store.get(10 + total - 1).unwrap(), Some(link_at(total - 1)));
}

#[test]
fn a_run_file_gone_from_the_data_directory_stops_the_open_with_its_name() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("links.redb");
    {
        let store = SegmentLinkStore::open(&path, codec(), 1 << 20).unwrap();
        store.insert_batch(&links()).unwrap();
        store.fold_now().unwrap();
    }
    let run = std::fs::read_dir(segments_dir(&path))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().contains("ids-"))
        .unwrap();
    std::fs::remove_file(&run).unwrap();
    let err = SegmentLinkStore::open(&path, codec(), 1 << 20).unwrap_err();
    let name = run.file_name().unwrap().to_string_lossy().into_owned();
    assert!(err.to_string().contains(&name), "{err}");
}

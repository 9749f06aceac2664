//! Tests of [`crate::SegmentLinkStore`]: the conformance suite, reopening, the index
//! rebuilt from the segments, an uncommitted tail cut off, and both older formats
//! converted on open.

use crate::compact_store::META;
use crate::conformance::sample_link;
use crate::error::StoreError;
use crate::segment_store::segments_dir;
use crate::{Codec, CompactLinkStore, Feistel, Link, LinkStore, RedbLinkStore, SegmentLinkStore};

pub(crate) fn codec() -> Codec {
    Codec::scrambled(Feistel::new([5; 16]))
}

/// 300 minted links, one aliased and tagged, one with a wide code (the record keeps
/// it) and one far past the dense index (its slot is in redb).
pub(crate) fn links() -> Vec<Link> {
    let mut links: Vec<Link> = (0..300u64)
        .map(|i| {
            let code = codec().encode((i % 62) as u8, i / 62).unwrap();
            sample_link(1000 + i, &code, &format!("https://example.com/{}", i % 50))
        })
        .collect();
    links[3].alias = Some("named".into());
    links[3].tags = vec!["t".into()];
    let mut wide = sample_link(
        5000,
        &codec().encode(7, 1 << 59).unwrap(),
        "https://w.example/",
    );
    wide.tags = vec!["t".into()];
    links.push(wide);
    links.push(sample_link(
        5001,
        &codec().encode(9, 1 << 40).unwrap(),
        "https://far.example/",
    ));
    links
}

/// Replaces link 10 and 301 (the far one), deletes 20 and 300 (the wide one); answers
/// what the store must then hold.
pub(crate) fn change(store: &SegmentLinkStore, mut links: Vec<Link>) -> Vec<Link> {
    for i in [10, 301] {
        links[i].url = format!("https://changed.example/{i}");
        links[i].tags = vec!["changed".into()];
        store.replace(&links[i]).unwrap();
    }
    for i in [300, 20] {
        assert_eq!(store.delete(links[i].id).unwrap().as_ref(), Some(&links[i]));
        links.remove(i);
    }
    links
}

pub(crate) fn check(store: &SegmentLinkStore, links: &[Link]) {
    assert_eq!(store.count().unwrap(), links.len() as u64);
    for link in links {
        assert_eq!(store.resolve(link.path()).unwrap().as_ref(), Some(link));
        assert_eq!(store.resolve(&link.code).unwrap().as_ref(), Some(link));
        if let Some(cached) = store.resolve_cached(&link.code) {
            assert_eq!(cached.unwrap().as_ref(), Some(link), "cached = blocking");
        }
        assert_eq!(store.get(link.id).unwrap().as_ref(), Some(link));
    }
    let listed = store.list(None, None, 1000).unwrap();
    assert_eq!(listed.len(), links.len());
    assert!(listed.windows(2).all(|w| w[0].id < w[1].id));
    assert_eq!(store.list(Some("changed"), None, 10).unwrap().len(), 2);
    assert_eq!(
        store
            .find_reusable("https://example.com/7", None)
            .unwrap()
            .map(|l| l.id),
        Some(1007)
    );
}

#[test]
fn passes_the_conformance_suite() {
    let dir = tempfile::tempdir().unwrap();
    let store = SegmentLinkStore::open(dir.path().join("links.redb"), codec(), 1 << 20).unwrap();
    crate::conformance::run(&store);
}

#[cfg(target_os = "linux")]
#[test]
fn a_cached_resolve_reads_in_place_only_what_the_page_cache_holds() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("links.redb");
    let store = SegmentLinkStore::open(&path, codec(), 1 << 20).unwrap();
    store.insert_batch(&links()).unwrap();
    let kept = change(&store, links());
    let cached = |code: &str| store.resolve_cached(code).map(|r| r.unwrap());
    // Just written: generated codes are answered in place, deleted ones as absent.
    for link in kept.iter().filter(|l| l.id < 1300) {
        assert_eq!(
            cached(&link.code),
            Some(Some(link.clone())),
            "{}",
            link.code
        );
    }
    let deleted = codec().encode(20, 0).unwrap(); // link 20: group 20, number 0
    assert_eq!(
        cached(&deleted),
        Some(None),
        "deleted: absent, read in place"
    );
    let never = codec().encode(1, 1_000).unwrap();
    assert_eq!(cached(&never), Some(None), "never made, in a written group");
    // Whatever goes through redb is left to the blocking path.
    assert_eq!(cached("named"), None, "an alias");
    let far = kept.iter().find(|l| l.id == 5001).unwrap();
    assert_eq!(cached(&far.code), None, "a record past the dense index");
    // The kernel drops the files' clean pages (the segments', fsynced at each commit):
    // a link is no longer read in place, and the blocking path still answers it. A page
    // still on its way into a CPU's page lists can outlive one `DONTNEED` (seen once
    // under the whole suite's load), so the drop is asked again, a bounded number of
    // times, until the link's page is gone.
    let link = &kept[5];
    let mut tries = 0;
    loop {
        for entry in std::fs::read_dir(segments_dir(&path)).unwrap() {
            let file = std::fs::File::open(entry.unwrap().path()).unwrap();
            rustix::fs::fadvise(&file, 0, None, rustix::fs::Advice::DontNeed).unwrap();
        }
        tries += 1;
        if cached(&link.code).is_none() || tries == 50 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert_eq!(cached(&link.code), None, "its pages are no longer cached");
    assert_eq!(store.resolve(&link.code).unwrap().as_ref(), Some(link));
    assert_eq!(
        cached(&link.code),
        Some(Some(link.clone())),
        "read once: cached again"
    );
    check(&store, &kept);
}

#[test]
fn links_survive_a_reopen_and_the_index_is_rebuilt_from_the_segments() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("links.redb");
    let kept = {
        let store = SegmentLinkStore::open(&path, codec(), 1 << 20).unwrap();
        store.insert_batch(&links()).unwrap();
        let kept = change(&store, links());
        check(&store, &kept);
        assert!(matches!(
            store.insert_batch(&[sample_link(9, &kept[0].code, "https://x.example/")]),
            Err(StoreError::Duplicate(_))
        ));
        kept
    };
    // Under another key file: the store keeps the codec it was made with.
    let store =
        SegmentLinkStore::open(&path, Codec::scrambled(Feistel::new([6; 16])), 1 << 20).unwrap();
    check(&store, &kept);
    drop(store);
    // The index lost (as if none of it had reached the disk) and the checkpoint at the
    // start: every frame is replayed, replaced versions and tombstones in order.
    let dir_of_segments = segments_dir(&path);
    for entry in std::fs::read_dir(&dir_of_segments).unwrap() {
        let path = entry.unwrap().path();
        if path
            .file_name()
            .unwrap()
            .to_str()
            .unwrap()
            .starts_with("index-")
        {
            std::fs::remove_file(path).unwrap();
        }
    }
    {
        let db = redb::Database::open(&path).unwrap();
        let txn = db.begin_write().unwrap();
        txn.open_table(META)
            .unwrap()
            .insert("indexed", 8u64.to_le_bytes().as_slice())
            .unwrap();
        txn.commit().unwrap();
    }
    // And a batch written to the segment whose commit never happened.
    let segment = dir_of_segments.join("seg-000000");
    let committed = std::fs::metadata(&segment).unwrap().len();
    {
        use std::io::Write as _;
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&segment)
            .unwrap();
        f.write_all(&[0x55; 37]).unwrap();
    }
    let store = SegmentLinkStore::open(&path, codec(), 1 << 20).unwrap();
    assert_eq!(std::fs::metadata(&segment).unwrap().len(), committed);
    check(&store, &kept);
    // It keeps working after all that.
    let more = sample_link(
        7000,
        &codec().encode(1, 900).unwrap(),
        "https://more.example/",
    );
    store.insert_batch(std::slice::from_ref(&more)).unwrap();
    assert_eq!(store.resolve(&more.code).unwrap(), Some(more));
}

#[test]
fn an_index_file_gone_after_a_clean_close_is_rebuilt_not_trusted() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("links.redb");
    let kept = {
        let store = SegmentLinkStore::open(&path, codec(), 1 << 20).unwrap();
        assert_eq!(store.index_rebuilt(), 0);
        store.insert_batch(&links()).unwrap();
        change(&store, links())
    };
    // One group's slot file deleted (an operator's mistake, a bad restore): the rest
    // of the index is durable and says nothing is missing.
    let gone = segments_dir(&path).join("index-g05");
    std::fs::remove_file(&gone).unwrap();
    let store = SegmentLinkStore::open(&path, codec(), 1 << 20).unwrap();
    assert_eq!(store.index_rebuilt(), 1 << 5);
    check(&store, &kept);
    drop(store);
    assert!(gone.exists());
    let store = SegmentLinkStore::open(&path, codec(), 1 << 20).unwrap();
    assert_eq!(store.index_rebuilt(), 0, "a normal open rebuilds nothing");
    check(&store, &kept);
}

#[test]
fn a_group_first_written_after_an_open_is_recorded_too() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("links.redb");
    let link = |id: u64, group: u8| {
        sample_link(
            id,
            &codec().encode(group, 40).unwrap(),
            &format!("https://g{group}.example/"),
        )
    };
    let (first, later) = (link(1, 3), link(2, 9));
    drop({
        let store = SegmentLinkStore::open(&path, codec(), 1 << 20).unwrap();
        store.insert_batch(std::slice::from_ref(&first)).unwrap();
        store
    });
    drop({
        let store = SegmentLinkStore::open(&path, codec(), 1 << 20).unwrap();
        store.insert_batch(std::slice::from_ref(&later)).unwrap();
        store
    });
    std::fs::remove_file(segments_dir(&path).join("index-g09")).unwrap();
    let store = SegmentLinkStore::open(&path, codec(), 1 << 20).unwrap();
    assert_eq!(store.index_rebuilt(), 1 << 9);
    assert_eq!(store.resolve(&first.code).unwrap(), Some(first));
    assert_eq!(store.resolve(&later.code).unwrap(), Some(later));
}

#[test]
fn both_older_formats_are_converted_on_open() {
    for older in ["json", "compact"] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("links.redb");
        let kept = {
            if older == "json" {
                RedbLinkStore::open(&path)
                    .unwrap()
                    .insert_batch(&links())
                    .unwrap();
            } else {
                CompactLinkStore::open(&path, codec(), 1 << 20)
                    .unwrap()
                    .insert_batch(&links())
                    .unwrap();
            }
            let store = SegmentLinkStore::open(&path, codec(), 1 << 20).unwrap();
            assert_eq!(store.count().unwrap(), 302, "{older}");
            for link in links() {
                assert_eq!(store.resolve(link.path()).unwrap(), Some(link), "{older}");
            }
            change(&store, links())
        };
        let store = SegmentLinkStore::open(&path, codec(), 1 << 20).unwrap();
        check(&store, &kept);
        drop(store);
        // The previous store does not misread the new layout.
        let err = CompactLinkStore::open(&path, codec(), 1 << 20).unwrap_err();
        assert!(err.to_string().contains("format [4]"), "{err}");
    }
}

#[test]
fn readers_never_see_a_half_written_slot_or_a_missing_acknowledged_link() {
    use std::sync::atomic::{AtomicU64, Ordering};
    let dir = tempfile::tempdir().unwrap();
    let store = SegmentLinkStore::open(dir.path().join("links.redb"), codec(), 1 << 20).unwrap();
    let link_at = |i: u64| {
        let code = codec().encode((i % 62) as u8, i / 62).unwrap();
        sample_link(1 + i, &code, &format!("https://example.com/{i}"))
    };
    let acknowledged = AtomicU64::new(0);
    std::thread::scope(|s| {
        for reader in 0..2u64 {
            let (store, acknowledged) = (&store, &acknowledged);
            s.spawn(move || {
                let mut i = reader;
                while acknowledged.load(Ordering::SeqCst) < 20_000 {
                    let known = acknowledged.load(Ordering::SeqCst);
                    if known > 0 {
                        let want = link_at(i % known);
                        let got = store.resolve(&want.code).unwrap().expect("acknowledged");
                        // The link, or its replacement (every 7th is replaced).
                        assert_eq!(got.id, want.id);
                        assert!(got.url == want.url || got.url.starts_with("https://v2."));
                    }
                    i = i
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                }
            });
        }
        for batch in 0..100u64 {
            let links: Vec<Link> = (batch * 200..(batch + 1) * 200).map(link_at).collect();
            store.insert_batch(&links).unwrap();
            for link in links.iter().step_by(7) {
                let mut v2 = link.clone();
                v2.url = format!("https://v2.example/{}", link.id);
                store.replace(&v2).unwrap();
            }
            acknowledged.store((batch + 1) * 200, Ordering::SeqCst);
        }
    });
    assert_eq!(store.count().unwrap(), 20_000);
}

#[test]
fn slots_past_the_memory_budget_are_read_from_their_files_before_and_after_a_reopen() {
    // 128 KiB: half redb's, 1 KiB a group for slots (7 blocks of 64): of each group's
    // 640 links the first 448 slots are held, the rest read from `index-gNN`.
    const SMALL: usize = 128 << 10;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("links.redb");
    let link_at = |i: u64| {
        let code = codec().encode((i % 62) as u8, i / 62).unwrap();
        sample_link(1 + i, &code, &format!("https://example.com/{i}"))
    };
    let mut links: Vec<Link> = (0..62 * 640).map(link_at).collect();
    let store = SegmentLinkStore::open(&path, codec(), SMALL).unwrap();
    for batch in links.chunks(5000) {
        store.insert_batch(batch).unwrap();
    }
    // Replaced (a later record: its block kept whole, or not held past the share) and
    // deleted, in held and unheld blocks alike.
    for i in (0..links.len()).step_by(97) {
        links[i].url = format!("https://v2.example/{i}");
        store.replace(&links[i]).unwrap();
    }
    let deleted: Vec<Link> = (0..links.len())
        .step_by(101)
        .rev()
        .map(|i| links.remove(i))
        .collect();
    for link in &deleted {
        store.delete(link.id).unwrap();
    }
    let check_all = |store: &SegmentLinkStore| {
        for link in &links {
            assert_eq!(store.resolve(&link.code).unwrap().as_ref(), Some(link));
            if let Some(cached) = store.resolve_cached(&link.code) {
                assert_eq!(cached.unwrap().as_ref(), Some(link), "cached = blocking");
            }
        }
        for link in &deleted {
            assert_eq!(store.resolve(&link.code).unwrap(), None, "{}", link.code);
        }
    };
    check_all(&store);
    let (used, budget) = store.index_memory();
    assert_eq!(budget, SMALL / 2);
    assert!(used <= budget && used > budget / 2, "{used} of {budget}");
    drop(store);
    let store = SegmentLinkStore::open(&path, codec(), SMALL).unwrap();
    check_all(&store);
    drop(store);
    // With room for every slot: 62 groups of 10 packed blocks, and the replaced
    // links' blocks kept whole.
    let store = SegmentLinkStore::open(&path, codec(), 64 << 20).unwrap();
    check_all(&store);
    let (used, _) = store.index_memory();
    assert!(
        (62 * 10 * 144..62 * 10 * (144 + 560)).contains(&used),
        "{used}"
    );
}

//! The PostgreSQL link store follows `move_shard`: while one logical shard moves to
//! another server under a steady stream of creates (plain and aliased) and look-ups
//! through one `PgLinkStore`, no call fails, every acknowledged create resolves, and
//! afterwards the store routes the shard to its new server by itself.

mod common;

use common::{block_on, pg_db};
use shardkit_links::{group_of, Codec, InsertOutcome, Link, LinkStore, Redirect};
use shardkit_pg::links::shard_of_group;
use shardkit_pg::{init, move_shard, InitOptions, PgLinkStore};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

const SHARDS: u32 = 4;
const MOVED: u32 = 2;

fn link(id: u64, code: String, alias: Option<String>) -> Link {
    Link {
        id,
        url: format!("https://example.com/{id}"),
        code,
        alias,
        domain: None,
        title: None,
        created_at: 1_790_000_000_000 + id,
        expires_at: None,
        max_visits: None,
        redirect: Redirect::Found,
        tags: vec!["moving".into()],
        password_hash: Some("$argon2id$v=19$m=19456,t=2,p=1$c2FsdA$aGFzaA".into()),
        author: Some("mover".into()),
        rules: vec![],
    }
}

/// Aliases whose group lives in the moved shard.
fn aliases_in_moved_shard() -> impl Iterator<Item = String> {
    (0u64..)
        .map(|i| format!("mv-{i}"))
        .filter(|a| shard_of_group(group_of(a), SHARDS) == MOVED)
}

#[test]
fn the_store_follows_a_moved_shard_without_failing_a_call() {
    let (a, b) = (pg_db("lmv_a"), pg_db("lmv_b"));
    let opts = InitOptions {
        servers: vec![a.url.clone()],
        logical_shards: SHARDS,
        epoch_unix_ms: None,
    };
    std::thread::spawn(move || block_on(init(&opts)).unwrap())
        .join()
        .unwrap();
    let store = Arc::new(PgLinkStore::open(&[a.url.clone(), b.url.clone()], 4).unwrap());
    assert_eq!(
        store.cluster().server_for_shard(MOVED),
        Some(shardkit_pg::redact_url(&a.url).as_str())
    );

    let stop = Arc::new(AtomicBool::new(false));
    let acked = Arc::new(parking_lot::Mutex::new(Vec::<Link>::new()));
    let writer = {
        let (store, stop, acked) = (store.clone(), stop.clone(), acked.clone());
        std::thread::spawn(move || {
            let codec = Codec::sequential();
            let mut aliases = aliases_in_moved_shard();
            let mut id = 1u64;
            let mut failures = Vec::new();
            while !stop.load(Ordering::Relaxed) && id < 20_000 {
                let new = if id.is_multiple_of(3) {
                    let alias = aliases.next().unwrap();
                    link(id, codec.encode(group_of(&alias), id).unwrap(), Some(alias))
                } else {
                    link(id, codec.encode(MOVED as u8, id).unwrap(), None)
                };
                match store.insert_batch(std::slice::from_ref(&new)) {
                    Ok(outcomes) if outcomes == [InsertOutcome::Inserted] => acked.lock().push(new),
                    Ok(outcomes) => failures.push(format!("{} answered {outcomes:?}", new.code)),
                    Err(e) => failures.push(e.to_string()),
                }
                id += 1;
            }
            failures
        })
    };
    let reader = {
        let (store, stop, acked) = (store.clone(), stop.clone(), acked.clone());
        std::thread::spawn(move || {
            let (mut reads, mut missing, mut failures) = (0u64, 0u64, Vec::new());
            while !stop.load(Ordering::Relaxed) {
                let Some(last) = acked.lock().last().cloned() else {
                    std::thread::sleep(Duration::from_millis(1));
                    continue;
                };
                for path in [Some(last.code.clone()), last.alias.clone()]
                    .into_iter()
                    .flatten()
                {
                    match store.resolve(&path) {
                        Ok(Some(found)) => assert_eq!(found, last),
                        Ok(None) => missing += 1,
                        Err(e) => failures.push(e.to_string()),
                    }
                    reads += 1;
                }
            }
            (reads, missing, failures)
        })
    };

    std::thread::sleep(Duration::from_millis(500));
    let from = vec![a.url.clone()];
    let to = b.url.clone();
    let report = std::thread::spawn(move || block_on(move_shard(&from, MOVED, &to)))
        .join()
        .unwrap()
        .unwrap();
    std::thread::sleep(Duration::from_millis(500));
    stop.store(true, Ordering::Relaxed);
    let write_failures = writer.join().unwrap();
    let (reads, missing, read_failures) = reader.join().unwrap();

    assert_eq!(report.map_version, 2);
    let first = |f: &[String]| f.iter().take(3).cloned().collect::<Vec<_>>();
    assert!(
        write_failures.is_empty(),
        "{} creates failed during the move, first: {:?}",
        write_failures.len(),
        first(&write_failures)
    );
    assert!(
        read_failures.is_empty(),
        "{} look-ups failed during the move, first: {:?}",
        read_failures.len(),
        first(&read_failures)
    );
    assert!(reads > 0);
    assert_eq!(missing, 0, "an acknowledged link was not found");
    let acked = acked.lock().clone();
    assert!(
        acked.len() > 10,
        "too few creates to show anything: {}",
        acked.len()
    );
    for link in &acked {
        assert_eq!(store.resolve(&link.code).unwrap().as_ref(), Some(link));
        if let Some(alias) = &link.alias {
            assert_eq!(store.resolve(alias).unwrap().as_ref(), Some(link));
        }
    }
    assert_eq!(store.count().unwrap(), acked.len() as u64);
    assert_eq!(store.cluster().map().version(), 2);
    assert_eq!(
        store.cluster().server_for_shard(MOVED),
        Some(shardkit_pg::redact_url(&b.url).as_str())
    );
}

//! Ticket servers against the machine's MariaDB and PostgreSQL: Flickr's odd/even pair
//! with segments, fail-over when one server stops answering mid-stream, and the
//! PostgreSQL sequence store.

mod common;

use common::{block_on, mysql_column, pg_db, MyDb};
use shardkit_ids::tickets::{SegmentAllocator, SequenceSpec, TicketStore};
use shardkit_pg::tickets::mysql::{table_name, FailoverOptions, MysqlTicketServers};
use shardkit_pg::tickets::postgres::PgTicketStore;
use shardkit_pg::tickets::{segment_options, BlockSize};
use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

fn allocator<S: TicketStore>(store: S, name: &str, block: BlockSize) -> SegmentAllocator<S> {
    SegmentAllocator::new(store, name, SequenceSpec::default(), segment_options(block)).unwrap()
}

#[test]
fn flickr_pair_hands_out_odd_and_even_tickets_and_unique_numbers() {
    let (a, b) = (MyDb::create("tk_a"), MyDb::create("tk_b"));
    // One REPLACE per number: the numbers are the tickets themselves.
    let plain = MysqlTicketServers::new(
        &[a.url.clone(), b.url.clone()],
        BlockSize::ONE,
        FailoverOptions::default(),
    )
    .unwrap();
    let mut numbers: Vec<u64> = (0..10)
        .map(|_| plain.reserve("photos", SequenceSpec::default(), 1).unwrap() + 1)
        .collect();
    numbers.sort_unstable();
    assert_eq!(numbers, (1..=10).collect::<Vec<_>>());
    let on_a = block_on(mysql_column(
        &a.url,
        &format!("SELECT id FROM `{}`", table_name("photos")),
    ));
    let on_b = block_on(mysql_column(
        &b.url,
        &format!("SELECT id FROM `{}`", table_name("photos")),
    ));
    assert_eq!(
        (on_a, on_b),
        (vec![9], vec![10]),
        "one row per table, odd on a, even on b"
    );

    // Segments of 100 over the same pair, from four threads.
    let servers = Arc::new(
        MysqlTicketServers::new(
            &[a.url.clone(), b.url.clone()],
            BlockSize::new(100),
            FailoverOptions::default(),
        )
        .unwrap(),
    );
    let alloc = Arc::new(allocator(servers, "accounts", BlockSize::new(100)));
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let alloc = Arc::clone(&alloc);
            std::thread::spawn(move || {
                (0..2_500)
                    .map(|_| alloc.next().unwrap())
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let all: Vec<u64> = threads
        .into_iter()
        .flat_map(|t| t.join().unwrap())
        .collect();
    assert_eq!(all.iter().collect::<HashSet<_>>().len(), 10_000);
    // About 100 REPLACEs for 10,000 numbers: the tickets on each server stay small.
    let max_a = block_on(mysql_column(
        &a.url,
        &format!("SELECT id FROM `{}`", table_name("accounts")),
    ))[0];
    assert!(max_a < 250, "{max_a}");

    // A different block size for an existing sequence is refused.
    let other = MysqlTicketServers::new(
        std::slice::from_ref(&a.url),
        BlockSize::new(7),
        FailoverOptions::default(),
    )
    .unwrap();
    let err = other
        .reserve("accounts", SequenceSpec::default(), 7)
        .unwrap_err();
    assert!(err.to_string().contains("block size"), "{err}");
}

#[test]
fn a_server_that_stops_answering_is_skipped_and_used_again_when_back() {
    let (a, b) = (MyDb::create("fo_a"), MyDb::create("fo_b"));
    let options = FailoverOptions {
        attempt_timeout: Duration::from_millis(300),
        retry_after: Duration::from_millis(200),
    };
    let block = BlockSize::new(10);
    let servers =
        Arc::new(MysqlTicketServers::new(&[a.url.clone(), b.url.clone()], block, options).unwrap());
    let alloc = allocator(Arc::clone(&servers), "links", block);
    let mut seen = HashSet::new();
    let mut take = |n: usize| {
        for _ in 0..n {
            let number = alloc.next().expect("tickets keep coming");
            assert!(seen.insert(number), "number {number} handed out twice");
        }
    };
    take(500);

    // Server a stops answering: a session holds a write lock on its ticket table.
    let table = table_name("links");
    let (locked_tx, locked_rx) = std::sync::mpsc::channel();
    let (release_tx, release_rx) = std::sync::mpsc::channel::<()>();
    let a_url = a.url.clone();
    let holder = std::thread::spawn(move || {
        block_on(async move {
            use mysql_async::prelude::Queryable;
            let mut conn = mysql_async::Conn::from_url(&a_url).await.unwrap();
            conn.query_drop(format!("LOCK TABLES `{table}` WRITE"))
                .await
                .unwrap();
            locked_tx.send(()).unwrap();
            let _ = tokio::task::spawn_blocking(move || release_rx.recv()).await;
            conn.query_drop("UNLOCK TABLES").await.unwrap();
            let _ = conn.disconnect().await;
        })
    });
    locked_rx.recv().unwrap();
    take(1_000); // progress while a is locked: b answers
    release_tx.send(()).unwrap();
    holder.join().unwrap();

    // Back: a is used again once its skip period is over.
    std::thread::sleep(Duration::from_millis(300));
    let count_a = || {
        block_on(mysql_column(
            &a.url,
            &format!("SELECT id FROM `{}`", table_name("links")),
        ))[0]
    };
    let a_after_lock = count_a();
    take(1_000);
    assert!(
        count_a() > a_after_lock,
        "server a was not used again after it came back"
    );
}

#[test]
fn an_unreachable_server_is_named_and_the_other_serves() {
    let a = MyDb::create("down");
    let options = FailoverOptions {
        attempt_timeout: Duration::from_millis(500),
        retry_after: Duration::from_secs(5),
    };
    let servers = MysqlTicketServers::new(
        &[a.url.clone(), "mysql://root@127.0.0.1:1/none".into()],
        BlockSize::new(5),
        options,
    )
    .unwrap();
    let alloc = allocator(servers, "users", BlockSize::new(5));
    let numbers: HashSet<u64> = (0..200).map(|_| alloc.next().unwrap()).collect();
    assert_eq!(numbers.len(), 200);

    let alone = MysqlTicketServers::new(
        &["mysql://root@127.0.0.1:1/none".into()],
        BlockSize::ONE,
        options,
    )
    .unwrap();
    let err = alone
        .reserve("users", SequenceSpec::default(), 1)
        .unwrap_err()
        .to_string();
    assert!(err.contains("127.0.0.1:1/none"), "{err}");
}

#[test]
fn postgres_sequences_hand_out_odd_and_even_blocks() {
    let (a, b) = (pg_db("pgt_a"), pg_db("pgt_b"));
    let one_a = PgTicketStore::new(&a.url, 2, 1, BlockSize::ONE).unwrap();
    let one_b = PgTicketStore::new(&b.url, 2, 2, BlockSize::ONE).unwrap();
    let tickets: Vec<u64> = (0..3)
        .flat_map(|_| {
            [
                one_a.reserve("photos", SequenceSpec::default(), 1).unwrap() + 1,
                one_b.reserve("photos", SequenceSpec::default(), 1).unwrap() + 1,
            ]
        })
        .collect();
    assert_eq!(tickets, [1, 2, 3, 4, 5, 6]);

    let block = BlockSize::new(50);
    let alloc_a = allocator(
        PgTicketStore::new(&a.url, 2, 1, block).unwrap(),
        "accounts",
        block,
    );
    let alloc_b = allocator(
        PgTicketStore::new(&b.url, 2, 2, block).unwrap(),
        "accounts",
        block,
    );
    let mut all = HashSet::new();
    for _ in 0..1_000 {
        assert!(all.insert(alloc_a.next().unwrap()));
        assert!(all.insert(alloc_b.next().unwrap()));
    }
}

#[test]
fn first_uses_racing_on_one_postgres_server_all_get_their_sequences() {
    // Eight stores (eight processes' worth) each make a different sequence at once: they
    // race to create the shared schema; the losers must still create their own sequence.
    for round in 0..3 {
        let db = pg_db(&format!("pgt_race{round}"));
        let barrier = std::sync::Arc::new(std::sync::Barrier::new(8));
        let threads: Vec<_> = (0..8)
            .map(|i| {
                let (url, barrier) = (db.url.clone(), barrier.clone());
                std::thread::spawn(move || {
                    let store = PgTicketStore::new(&url, 1, 1, BlockSize::ONE).unwrap();
                    barrier.wait();
                    store.reserve(&format!("race{i}"), SequenceSpec::default(), 1)
                })
            })
            .collect();
        for thread in threads {
            let first = thread
                .join()
                .unwrap()
                .unwrap_or_else(|e| panic!("a racing first use failed: {e}"));
            assert_eq!(first, 0);
        }
    }
}

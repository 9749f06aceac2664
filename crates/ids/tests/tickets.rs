//! Ticket sequences: unique numbers that follow increment/offset across crashes,
//! two ticket servers that never collide, concurrent takers, adaptive block size.

use proptest::prelude::*;
use shardkit_ids::tickets::{EmbeddedTicketStore, SegmentAllocator, SegmentOptions, SequenceSpec};
use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

fn small_blocks() -> SegmentOptions {
    SegmentOptions {
        initial_step: 10,
        min_step: 5,
        max_step: 80,
        ..SegmentOptions::default()
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Takes of random sizes interleaved with crashes (the allocator and the store are
    /// dropped without any shutdown, then reopened): every number is new, follows the
    /// spec, and numbers never go down.
    #[test]
    fn numbers_stay_unique_and_follow_the_spec_across_crashes(
        increment in 1u64..5,
        offset_pick in 0u64..5,
        ops in prop::collection::vec(prop_oneof![(1u64..40).prop_map(Some), Just(None)], 1..30),
    ) {
        let offset = offset_pick % increment + 1;
        let spec = SequenceSpec::new(increment, offset).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tickets.redb");
        let open = || SegmentAllocator::new(EmbeddedTicketStore::open(&path).unwrap(), "photos", spec, small_blocks()).unwrap();
        let mut allocator = open();
        let mut seen = HashSet::new();
        let mut last = 0u64;
        for op in ops {
            match op {
                Some(count) => {
                    for number in allocator.take(count).unwrap() {
                        prop_assert!(seen.insert(number), "{} handed out twice", number);
                        prop_assert_eq!(number % increment, offset % increment);
                        prop_assert!(number > last);
                        last = number;
                    }
                }
                None => {
                    drop(allocator);
                    allocator = open();
                }
            }
        }
    }
}

#[test]
fn two_ticket_servers_hand_out_odd_and_even_numbers() {
    let dir = tempfile::tempdir().unwrap();
    let odd = SegmentAllocator::new(
        EmbeddedTicketStore::open(dir.path().join("a.redb")).unwrap(),
        "ids",
        SequenceSpec::new(2, 1).unwrap(),
        small_blocks(),
    )
    .unwrap();
    let even = SegmentAllocator::new(
        EmbeddedTicketStore::open(dir.path().join("b.redb")).unwrap(),
        "ids",
        SequenceSpec::new(2, 2).unwrap(),
        small_blocks(),
    )
    .unwrap();
    let mut all = HashSet::new();
    for _ in 0..500 {
        let (o, e) = (odd.next().unwrap(), even.next().unwrap());
        assert_eq!((o % 2, e % 2), (1, 0));
        assert!(all.insert(o) && all.insert(e));
    }
}

#[test]
fn concurrent_takers_with_background_preload_never_share_a_number() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(EmbeddedTicketStore::open(dir.path().join("t.redb")).unwrap());
    let allocator = Arc::new(
        SegmentAllocator::new(
            Arc::clone(&store),
            "photos",
            SequenceSpec::default(),
            small_blocks(),
        )
        .unwrap(),
    );
    let takers: Vec<_> = (0..4)
        .map(|_| {
            let allocator = Arc::clone(&allocator);
            std::thread::spawn(move || {
                let mut mine = Vec::new();
                for i in 0..400u64 {
                    mine.extend(allocator.take(1 + i % 7).unwrap());
                }
                mine
            })
        })
        .collect();
    let mut all = HashSet::new();
    let mut total = 0;
    for t in takers {
        let mine = t.join().unwrap();
        assert!(
            mine.windows(2).all(|w| w[0] < w[1]),
            "one taker's numbers increase"
        );
        total += mine.len();
        all.extend(mine);
    }
    assert_eq!(all.len(), total);
    // One durable write per block, not per number.
    assert!(
        store.durable_writes() * 5 <= total as u64,
        "{} writes for {} numbers",
        store.durable_writes(),
        total
    );
}

#[test]
fn the_step_grows_when_blocks_go_fast_and_shrinks_when_they_go_slow() {
    let dir = tempfile::tempdir().unwrap();
    let store = EmbeddedTicketStore::open(dir.path().join("t.redb")).unwrap();
    let fast = SegmentOptions {
        initial_step: 10,
        min_step: 5,
        max_step: 80,
        target_block_duration: Duration::from_secs(3600),
        preload_at: 0.5,
    };
    let allocator = SegmentAllocator::new(store, "fast", SequenceSpec::default(), fast).unwrap();
    for _ in 0..40 {
        allocator.take(50).unwrap();
    }
    assert_eq!(allocator.step(), 80);

    let store = EmbeddedTicketStore::open(dir.path().join("u.redb")).unwrap();
    // One number a millisecond against a 1 ms target: every block of n lasts about n ms,
    // far more than twice the target, so the step halves down to the minimum.
    let slow = SegmentOptions {
        initial_step: 16,
        min_step: 2,
        max_step: 80,
        target_block_duration: Duration::from_millis(1),
        preload_at: 1.0,
    };
    let allocator = SegmentAllocator::new(store, "slow", SequenceSpec::default(), slow).unwrap();
    for _ in 0..60 {
        allocator.take(1).unwrap();
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(allocator.step(), 2);
}

#[test]
fn bad_counts_are_refused_and_take_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let allocator = SegmentAllocator::new(
        EmbeddedTicketStore::open(dir.path().join("t.redb")).unwrap(),
        "x",
        SequenceSpec::default(),
        small_blocks(),
    )
    .unwrap();
    assert!(allocator.take(0).is_err());
    assert!(allocator.take(1_000_001).is_err());
    assert_eq!(allocator.next().unwrap(), 1);
}

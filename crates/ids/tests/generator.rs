//! Generator behaviour: strictly increasing under threads, no duplicates over millions
//! of ids, borrowing ahead without wrapping, clock steps back and forward, batches.

use proptest::prelude::*;
use shardkit_ids::{
    BackwardPolicy, GenerateError, GeneratorOptions, Layout, ManualClock, ShardGenerator,
    ShardedGenerator,
};
use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

const T0: u64 = 1_750_000_000_000;

fn options(max_lead_ms: u64, policy: BackwardPolicy) -> GeneratorOptions {
    GeneratorOptions {
        max_lead: Duration::from_millis(max_lead_ms),
        on_clock_backwards: policy,
        guard: None,
    }
}

#[test]
fn ids_strictly_increase_in_each_of_four_threads_and_never_repeat() {
    let generator = Arc::new(ShardGenerator::new(Layout::instagram(), 42).unwrap());
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let generator = Arc::clone(&generator);
            std::thread::spawn(move || {
                (0..100_000)
                    .map(|_| generator.next_id().unwrap())
                    .collect::<Vec<u64>>()
            })
        })
        .collect();
    let mut all = HashSet::new();
    for t in threads {
        let ids = t.join().unwrap();
        assert!(
            ids.windows(2).all(|w| w[0] < w[1]),
            "ids of one thread must strictly increase"
        );
        for id in ids {
            assert!(all.insert(id), "duplicate id {id}");
            assert_eq!(Layout::instagram().decode(id).unwrap().parts.shard, 42);
        }
    }
    assert_eq!(all.len(), 400_000);
}

#[test]
fn ten_million_ids_from_one_shard_are_all_distinct_even_at_twice_the_limit() {
    // The clock advances 0.5 µs per reading: the loop asks for ids about twice as fast
    // as 1024 per ms allows, so the generator must borrow, hit its lead bound and wait,
    // and never wrap the sequence.
    let clock = ManualClock::new(T0);
    clock.auto_advance(Duration::from_nanos(500));
    let generator = ShardGenerator::with_clock(
        Layout::instagram(),
        7,
        clock,
        &options(5, BackwardPolicy::Refuse),
    )
    .unwrap();
    let mut ids = vec![0u64; 10_000_000];
    for slot in ids.iter_mut() {
        *slot = generator.next_id().unwrap();
    }
    assert!(ids.windows(2).all(|w| w[0] < w[1]));
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 10_000_000);
}

#[test]
fn a_used_up_sequence_borrows_the_next_unit_then_waits_never_wraps() {
    let clock = ManualClock::new(T0);
    let layout = Layout::instagram();
    let generator = ShardGenerator::with_clock(
        layout,
        1,
        clock.clone(),
        &options(3, BackwardPolicy::Refuse),
    )
    .unwrap();
    // Frozen clock: 1024 ids per ms, for the current ms and 3 borrowed ones.
    let ids: Vec<u64> = (0..4 * 1024)
        .map(|_| generator.next_id().unwrap())
        .collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]));
    let now_units = layout.units_since_epoch(T0).unwrap();
    assert_eq!(
        layout
            .decode(*ids.last().unwrap())
            .unwrap()
            .parts
            .time_units,
        now_units + 3
    );
    // The next one must wait for the clock: let another thread move it.
    let mover = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(30));
        clock.advance(1);
    });
    let next = generator.next_id().unwrap();
    mover.join().unwrap();
    assert!(next > *ids.last().unwrap());
    assert_eq!(layout.decode(next).unwrap().parts.time_units, now_units + 4);
}

#[test]
fn a_clock_five_seconds_back_is_refused_then_forgiven() {
    let clock = ManualClock::new(T0);
    let generator = ShardGenerator::with_clock(
        Layout::snowflake(),
        3,
        clock.clone(),
        &GeneratorOptions::default(),
    )
    .unwrap();
    let before = generator.next_id().unwrap();
    clock.rewind(5_000);
    match generator.next_id() {
        Err(GenerateError::ClockMovedBackwards {
            behind_ms,
            max_lead_ms,
        }) => {
            assert_eq!((behind_ms, max_lead_ms), (5_000, 2_000));
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    clock.advance(3_000); // now 2 s behind: within the lead, issued from the logical clock
    let within = generator.next_id().unwrap();
    assert!(within > before);
    clock.advance(10_000);
    assert!(generator.next_id().unwrap() > within);
}

#[test]
fn the_wait_policy_blocks_until_the_clock_catches_up() {
    let clock = ManualClock::new(T0);
    let generator = ShardGenerator::with_clock(
        Layout::instagram(),
        0,
        clock.clone(),
        &options(0, BackwardPolicy::Wait),
    )
    .unwrap();
    let before = generator.next_id().unwrap();
    clock.rewind(5_000);
    let mover = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(50));
        clock.advance(5_001);
    });
    let after = generator.next_id().unwrap();
    mover.join().unwrap();
    assert!(after > before);
}

#[derive(Debug, Clone)]
enum Step {
    Forward(u64),
    Back(u64),
    Issue(u16),
}

fn steps() -> impl Strategy<Value = Vec<Step>> {
    prop::collection::vec(
        prop_oneof![
            (0u64..6_000).prop_map(Step::Forward),
            (0u64..6_000).prop_map(Step::Back),
            (1u16..3_000).prop_map(Step::Issue)
        ],
        1..40,
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Clock jumps of up to 6 s either way, any lead bound: ids never repeat or go
    /// down, and the only error is the named refusal.
    #[test]
    fn clock_jumps_never_yield_a_duplicate_or_a_decrease(steps in steps(), lead_ms in 0u64..6_000, snowflake in any::<bool>()) {
        let layout = if snowflake { Layout::snowflake() } else { Layout::instagram() };
        let clock = ManualClock::new(T0);
        let generator = ShardGenerator::with_clock(layout, 1, clock.clone(), &options(lead_ms, BackwardPolicy::Refuse)).unwrap();
        let mut last = 0u64;
        for step in steps {
            match step {
                Step::Forward(ms) => clock.advance(ms),
                Step::Back(ms) => clock.rewind(ms),
                Step::Issue(n) => {
                    for _ in 0..n {
                        match generator.next_id() {
                            Ok(id) => { prop_assert!(id > last, "id {} after {}", id, last); last = id; }
                            Err(GenerateError::ClockMovedBackwards { .. }) => break,
                            Err(e) => prop_assert!(false, "unexpected error {e}"),
                        }
                        // Keep a frozen clock from blocking on a used-up lead: move it on
                        // once the lead is nearly gone.
                        if layout.decode(last).unwrap().unix_ms >= clock_now(&clock) + lead_ms {
                            clock.advance(1);
                        }
                    }
                }
            }
        }
    }
}

fn clock_now(clock: &ManualClock) -> u64 {
    use shardkit_ids::Clock;
    clock.unix_ms()
}

#[test]
fn the_sharded_generator_puts_a_key_in_key_mod_2_to_the_shard_bits() {
    let generator = ShardedGenerator::new(Layout::instagram()).unwrap();
    for key in [0u64, 1, 8191, 8192, 31_337, u64::MAX] {
        let id = generator.next_for_key(key).unwrap();
        assert_eq!(
            Layout::instagram().decode(id).unwrap().parts.shard,
            key % 8192
        );
    }
    assert!(matches!(
        generator.next_id(8192),
        Err(GenerateError::ShardOutOfRange {
            shard: 8192,
            shards: 8192
        })
    ));
}

#[test]
fn batches_are_distinct_increasing_per_shard_and_in_the_right_shards() {
    let clock = ManualClock::new(T0);
    clock.auto_advance(Duration::from_nanos(200));
    let layout = Layout::instagram();
    let generator =
        ShardedGenerator::with_clock(layout, clock, &GeneratorOptions::default()).unwrap();
    let mut run = vec![0u64; 5_000];
    generator.fill(9, &mut run).unwrap();
    assert!(run.windows(2).all(|w| w[0] < w[1]));
    assert!(run
        .iter()
        .all(|&id| layout.decode(id).unwrap().parts.shard == 9));

    let keys: Vec<u64> = (0..50_000u64)
        .map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15))
        .collect();
    let mut ids = vec![0u64; keys.len()];
    generator.fill_for_keys(&keys, &mut ids).unwrap();
    let mut seen = HashSet::new();
    for (key, id) in keys.iter().zip(&ids) {
        assert_eq!(layout.decode(*id).unwrap().parts.shard, key % 8192);
        assert!(seen.insert(*id));
    }
    assert!(run.iter().all(|id| !seen.contains(id)));
}

#[test]
fn a_shard_outside_the_layout_is_refused() {
    let made = ShardGenerator::new(Layout::snowflake(), 1024);
    assert!(matches!(
        made,
        Err(GenerateError::ShardOutOfRange {
            shard: 1024,
            shards: 1024
        })
    ));
}

#[test]
fn a_clock_before_the_epoch_is_an_error() {
    let clock = ManualClock::new(1_000);
    let generator =
        ShardGenerator::with_clock(Layout::instagram(), 0, clock, &GeneratorOptions::default())
            .unwrap();
    assert!(matches!(
        generator.next_id(),
        Err(GenerateError::ClockBeforeEpoch { .. })
    ));
}

#[test]
fn sonyflake_ids_carry_the_machine_in_the_low_16_bits_and_the_sequence_above_it() {
    let layout = Layout::sonyflake();
    let clock = ManualClock::new(T0);
    let generator = ShardGenerator::with_clock(
        layout,
        0xBEEF,
        clock.clone(),
        &options(0, BackwardPolicy::Refuse),
    )
    .unwrap();
    // T0 in Sonyflake's 10 ms units since 2014-09-01T00:00:00Z.
    let units = (T0 - 1_409_529_600_000) / 10;
    // A unit holds 256 sequence numbers; the clock stands still, so all land in it.
    let ids: Vec<u64> = (0..256).map(|_| generator.next_id().unwrap()).collect();
    for (i, id) in ids.iter().enumerate() {
        assert_eq!(id & 0xFFFF, 0xBEEF, "machine id in the low 16 bits");
        assert_eq!((id >> 16) & 0xFF, i as u64, "sequence in bits 16..24");
        assert_eq!(id >> 24, units, "time from bit 24 up");
    }
    assert!(ids.windows(2).all(|w| w[0] < w[1]));
    clock.advance(10);
    let next = generator.next_id().unwrap();
    assert_eq!(next, ((units + 1) << 24) | 0xBEEF, "next unit, sequence 0");
}

#[test]
fn sonyflake_batches_step_the_sequence_above_the_machine() {
    let clock = ManualClock::new(T0);
    let options = options(0, BackwardPolicy::Refuse);
    let one =
        ShardGenerator::with_clock(Layout::sonyflake(), 0x0102, clock.clone(), &options).unwrap();
    let all = ShardedGenerator::with_clock(Layout::sonyflake(), clock, &options).unwrap();
    let mut from_one = [0u64; 200];
    let mut from_all = [0u64; 200];
    one.fill(&mut from_one).unwrap();
    all.fill(0x0102, &mut from_all).unwrap();
    let units = (T0 - 1_409_529_600_000) / 10;
    for ids in [from_one, from_all] {
        for (i, id) in ids.iter().enumerate() {
            assert_eq!(*id, (units << 24) | ((i as u64) << 16) | 0x0102);
        }
    }
}

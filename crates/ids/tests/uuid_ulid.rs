//! UUIDv7 and ULID generators and values: strictly increasing across threads and
//! across a restart on a clock that stepped back, version and variant bits always
//! right, and every value surviving a trip through its fields and its text.

use proptest::prelude::*;
use shardkit_ids::{
    BackwardPolicy, GenerateError, GeneratorOptions, GuardOptions, ManualClock, Ulid,
    UlidGenerator, Uuid7, Uuid7Generator, ULID_MAX_RANDOM, ULID_MAX_UNIX_MS, UUID7_MAX_COUNTER,
    UUID7_MAX_RAND_B, UUID7_MAX_UNIX_MS,
};
use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

const T0: u64 = 1_750_000_000_000;

/// Either generator behind one face, so each property runs on both.
#[derive(Debug, Clone, Copy)]
enum Kind {
    Uuid7,
    Ulid,
}

enum Generator {
    Uuid7(Uuid7Generator<ManualClock>),
    Ulid(UlidGenerator<ManualClock>),
}

impl Generator {
    fn open(kind: Kind, clock: &ManualClock, options: &GeneratorOptions) -> Self {
        match kind {
            Kind::Uuid7 => Self::Uuid7(Uuid7Generator::with_clock(clock.clone(), options).unwrap()),
            Kind::Ulid => Self::Ulid(UlidGenerator::with_clock(clock.clone(), options).unwrap()),
        }
    }

    /// The next id as its 128-bit number, which is also its sort order as text.
    fn next(&self) -> Result<u128, GenerateError> {
        match self {
            Self::Uuid7(g) => g.next_id().map(|u| u.as_u128()),
            Self::Ulid(g) => g.next_id().map(|u| u.as_u128()),
        }
    }

    fn abandon(self) {
        match self {
            Self::Uuid7(g) => g.abandon(),
            Self::Ulid(g) => g.abandon(),
        }
    }
}

fn kind() -> impl Strategy<Value = Kind> {
    prop_oneof![Just(Kind::Uuid7), Just(Kind::Ulid)]
}

fn options(policy: BackwardPolicy, guard: Option<&Path>) -> GeneratorOptions {
    GeneratorOptions {
        max_lead: Duration::from_secs(2),
        on_clock_backwards: policy,
        guard: guard.map(GuardOptions::new),
    }
}

/// The time in ms an id carries: the top 48 bits in both formats.
fn unix_ms(id: u128) -> u64 {
    (id >> 80) as u64
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Threads share one generator on a clock that ticks as it is read: some ids share
    /// a millisecond (and with the UUIDv7 counter's 4096 a ms, overflow into the next),
    /// some do not. Each thread sees its ids strictly increase, no id repeats, and an
    /// id asked for after all threads finished is above every one of them.
    ///
    /// The step is at most 50 µs a reading, so all readings together span less than
    /// the 2 s lead: a thread descheduled between its reading and its swap holds a
    /// reading that the others' readings have left behind, which the generator would
    /// rightly refuse as a clock step back if the test clock ran further.
    #[test]
    fn ids_strictly_increase_across_threads(kind in kind(), threads in 2usize..5, per_thread in 1usize..6_000, step_ns in prop_oneof![Just(0u64), 1u64..50_000]) {
        let clock = ManualClock::new(T0);
        clock.auto_advance(Duration::from_nanos(step_ns));
        let generator = Arc::new(Generator::open(kind, &clock, &options(BackwardPolicy::Refuse, None)));
        let handles: Vec<_> = (0..threads).map(|_| {
            let generator = Arc::clone(&generator);
            std::thread::spawn(move || (0..per_thread).map(|_| generator.next()).collect::<Result<Vec<u128>, _>>())
        }).collect();
        let mut all = HashSet::new();
        let mut highest = 0;
        for handle in handles {
            // At most 24,000 ids: within the 2 s lead even for UUIDv7's 4096 a ms on
            // a stopped clock, so no refusal is expected.
            let ids = handle.join().unwrap().unwrap();
            prop_assert!(ids.windows(2).all(|w| w[0] < w[1]), "ids of one thread must strictly increase");
            for id in ids {
                prop_assert!(all.insert(id), "duplicate {id:#x}");
                highest = highest.max(id);
            }
        }
        clock.advance(1);
        prop_assert!(generator.next().unwrap() > highest);
    }

    /// A crash (or a clean stop), the clock stepped back while the process was down,
    /// a restart on the same guard file: every id after the restart sorts after every
    /// id before it, whatever the step.
    #[test]
    fn a_restart_on_a_clock_stepped_back_never_sorts_before_issued_ids(kind in kind(), before in 1usize..3_000, back_ms in 0u64..20_000, crash in any::<bool>()) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ids.guard");
        let clock = ManualClock::new(T0);
        let generator = Generator::open(kind, &clock, &options(BackwardPolicy::Refuse, Some(&path)));
        let mut last = 0;
        for i in 0..before {
            last = generator.next().unwrap();
            if i % 500 == 499 {
                clock.advance(300);
            }
        }
        if crash { generator.abandon() } else { drop(generator) }

        clock.rewind(back_ms);
        // The clock must move on its own too: a generator just short of its lead waits
        // for the next tick rather than refusing, and a stopped test clock never ticks.
        clock.auto_advance(Duration::from_micros(100));
        let generator = Generator::open(kind, &clock, &options(BackwardPolicy::Refuse, Some(&path)));
        let first_after = loop {
            match generator.next() {
                Ok(id) => break id,
                Err(GenerateError::ClockMovedBackwards { .. }) => clock.advance(250),
                Err(e) => panic!("{e}"),
            }
        };
        prop_assert!(first_after > last, "{first_after:#x} must sort after {last:#x}");
        prop_assert!(unix_ms(first_after) >= unix_ms(last));
    }

    #[test]
    fn uuid7_fields_and_text_round_trip(ms in 0..=UUID7_MAX_UNIX_MS, counter in 0..=UUID7_MAX_COUNTER, rand_b in 0..=UUID7_MAX_RAND_B) {
        let uuid = Uuid7::from_parts(ms, counter, rand_b).unwrap();
        prop_assert_eq!((uuid.unix_ms(), uuid.counter(), uuid.rand_b()), (ms, counter, rand_b));
        prop_assert_eq!((uuid.as_u128() >> 76) & 0xF, 7, "version");
        prop_assert_eq!((uuid.as_u128() >> 62) & 0b11, 0b10, "variant");
        let text = uuid.to_string();
        prop_assert_eq!(text.len(), 36);
        prop_assert_eq!(text.parse::<Uuid7>(), Ok(uuid));
        prop_assert_eq!(text.to_uppercase().parse::<Uuid7>(), Ok(uuid));
        prop_assert_eq!(text.replace('-', "").parse::<Uuid7>(), Ok(uuid));
        prop_assert_eq!(Uuid7::from_u128(uuid.as_u128()), Ok(uuid));
        prop_assert_eq!(Uuid7::from_bytes(uuid.to_bytes()), Ok(uuid));
    }

    /// Any 128-bit number is accepted as a UUIDv7 exactly when its version nibble is 7
    /// and its variant bits are 10.
    #[test]
    fn only_version_7_variant_10_numbers_are_uuid7(value in any::<u128>()) {
        let valid = (value >> 76) & 0xF == 7 && (value >> 62) & 0b11 == 0b10;
        prop_assert_eq!(Uuid7::from_u128(value).is_ok(), valid);
    }

    #[test]
    fn generated_uuid7_always_has_version_7_and_variant_10(step_ns in 0u64..3_000_000, count in 1usize..5_000) {
        let clock = ManualClock::new(T0);
        clock.auto_advance(Duration::from_nanos(step_ns));
        let generator = Uuid7Generator::with_clock(clock, &options(BackwardPolicy::Refuse, None)).unwrap();
        for _ in 0..count {
            let uuid = generator.next_id().unwrap();
            prop_assert_eq!((uuid.as_u128() >> 76) & 0xF, 7);
            prop_assert_eq!((uuid.as_u128() >> 62) & 0b11, 0b10);
            prop_assert_eq!(uuid.to_string().parse::<Uuid7>(), Ok(uuid));
        }
    }

    #[test]
    fn ulid_fields_and_text_round_trip(ms in 0..=ULID_MAX_UNIX_MS, random in 0..=ULID_MAX_RANDOM, any_value in any::<u128>()) {
        let ulid = Ulid::from_parts(ms, random).unwrap();
        prop_assert_eq!((ulid.unix_ms(), ulid.random()), (ms, random));
        for ulid in [ulid, Ulid::from_u128(any_value)] {
            let text = ulid.to_string();
            prop_assert_eq!(text.len(), 26);
            prop_assert!(text.as_bytes()[0] <= b'7');
            prop_assert_eq!(text.parse::<Ulid>(), Ok(ulid));
            prop_assert_eq!(text.to_lowercase().parse::<Ulid>(), Ok(ulid));
            prop_assert_eq!(Ulid::from_bytes(ulid.to_bytes()), ulid);
        }
    }

    /// Text sorts like the numbers: what lets ULIDs and UUIDv7s be sorted as strings.
    #[test]
    fn text_sorts_like_the_numbers(a in any::<u128>(), b in any::<u128>(), ms in 0..=UUID7_MAX_UNIX_MS) {
        prop_assert_eq!(a.cmp(&b), Ulid::from_u128(a).to_string().cmp(&Ulid::from_u128(b).to_string()));
        let (ua, ub) = (Uuid7::from_parts(ms, (a & 0xFFF) as u16, (a >> 66) as u64).unwrap(), Uuid7::from_parts(ms, (b & 0xFFF) as u16, (b >> 66) as u64).unwrap());
        prop_assert_eq!(ua.cmp(&ub), ua.to_string().cmp(&ub.to_string()));
    }

    /// The parsers take text from users: any text gets an answer, never a panic.
    #[test]
    fn parsers_never_panic(text in ".{0,40}|[0-9a-fA-F-]{30,38}|[0-9A-Za-z]{24,28}") {
        let _ = text.parse::<Uuid7>();
        let _ = text.parse::<Ulid>();
    }
}

#[test]
fn a_ulid_ms_holds_many_ids_each_one_more_than_the_last() {
    let clock = ManualClock::new(T0);
    let generator =
        UlidGenerator::with_clock(clock, &options(BackwardPolicy::Refuse, None)).unwrap();
    let first = generator.next_id().unwrap();
    for i in 1..10_000u128 {
        let next = generator.next_id().unwrap();
        assert_eq!(next.unix_ms(), T0);
        assert_eq!(
            next.as_u128(),
            first.as_u128() + i,
            "the spec's monotonic increment"
        );
    }
}

#[test]
fn a_uuid7_counter_that_runs_out_moves_to_the_next_millisecond() {
    let clock = ManualClock::new(T0);
    let generator =
        Uuid7Generator::with_clock(clock, &options(BackwardPolicy::Refuse, None)).unwrap();
    let ids: Vec<Uuid7> = (0..4097).map(|_| generator.next_id().unwrap()).collect();
    for (i, id) in ids[..4096].iter().enumerate() {
        assert_eq!((id.unix_ms(), id.counter()), (T0, i as u16));
    }
    assert_eq!((ids[4096].unix_ms(), ids[4096].counter()), (T0 + 1, 0));
    assert!(ids.windows(2).all(|w| w[0] < w[1]));
}

#[test]
fn a_clock_stepped_back_beyond_the_lead_is_refused_not_reissued() {
    for kind in [Kind::Uuid7, Kind::Ulid] {
        let clock = ManualClock::new(T0);
        let generator = Generator::open(kind, &clock, &options(BackwardPolicy::Refuse, None));
        let before = generator.next().unwrap();
        clock.rewind(5_000);
        assert!(matches!(
            generator.next(),
            Err(GenerateError::ClockMovedBackwards {
                behind_ms: 5_000,
                ..
            })
        ));
        clock.advance(3_500); // 1.5 s behind: within the 2 s lead.
        let within = generator.next().unwrap();
        assert!(within > before);
        assert_eq!(
            unix_ms(within),
            T0,
            "{kind:?} keeps the issued time while borrowing"
        );
    }
}

#[test]
fn a_time_past_48_bits_is_an_error_not_a_wrapped_id() {
    for kind in [Kind::Uuid7, Kind::Ulid] {
        let clock = ManualClock::new(1 << 48);
        let generator = Generator::open(kind, &clock, &options(BackwardPolicy::Refuse, None));
        assert!(
            matches!(generator.next(), Err(GenerateError::TimeExhausted { .. })),
            "{kind:?}"
        );
    }
}

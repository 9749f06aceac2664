//! The durable time guard: a restart after a crash on a machine whose clock stepped
//! back never reissues an id; without the guard it would.

use shardkit_ids::{
    BackwardPolicy, GenerateError, GeneratorOptions, GuardOptions, Layout, ManualClock,
    ShardGenerator, ShardedGenerator,
};
use std::time::Duration;

const T0: u64 = 1_750_000_000_000;

fn guarded(path: &std::path::Path, policy: BackwardPolicy) -> GeneratorOptions {
    GeneratorOptions {
        max_lead: Duration::from_secs(2),
        on_clock_backwards: policy,
        guard: Some(GuardOptions::new(path)),
    }
}

/// Issues ids for a while (some borrowed ahead of the clock), then "crashes".
fn issue_then_crash(path: &std::path::Path, clock: &ManualClock) -> u64 {
    let generator = ShardGenerator::with_clock(
        Layout::instagram(),
        5,
        clock.clone(),
        &guarded(path, BackwardPolicy::Refuse),
    )
    .unwrap();
    let mut last = 0;
    for _ in 0..3 {
        for _ in 0..2_000 {
            last = generator.next_id().unwrap();
        }
        clock.advance(400);
    }
    generator.abandon();
    last
}

#[test]
fn after_a_crash_and_a_clock_step_back_no_id_is_reissued() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ids.guard");
    let clock = ManualClock::new(T0);
    let last_before_crash = issue_then_crash(&path, &clock);

    clock.rewind(10_000); // NTP stepped the clock back while the process was down.
    let generator = ShardGenerator::with_clock(
        Layout::instagram(),
        5,
        clock.clone(),
        &guarded(&path, BackwardPolicy::Refuse),
    )
    .unwrap();
    assert!(
        matches!(
            generator.next_id(),
            Err(GenerateError::ClockMovedBackwards { .. })
        ),
        "must refuse while behind the mark"
    );
    clock.advance(10_000);
    let first_after = generator.next_id().unwrap();
    assert!(
        first_after > last_before_crash,
        "{first_after} must be above {last_before_crash}"
    );
}

#[test]
fn with_the_wait_policy_the_restart_waits_and_then_continues_above() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ids.guard");
    let clock = ManualClock::new(T0);
    let last_before_crash = issue_then_crash(&path, &clock);
    clock.rewind(10_000);
    let generator = ShardedGenerator::with_clock(
        Layout::instagram(),
        clock.clone(),
        &guarded(&path, BackwardPolicy::Wait),
    )
    .unwrap();
    let mover = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(50));
        clock.advance(10_000);
    });
    let first_after = generator.next_id(5).unwrap();
    mover.join().unwrap();
    assert!(first_after > last_before_crash);
}

#[test]
fn without_the_guard_the_same_restart_would_reissue() {
    // The control experiment: it shows the scenario above is one where ids repeat.
    let clock = ManualClock::new(T0);
    let first = ShardGenerator::with_clock(
        Layout::instagram(),
        5,
        clock.clone(),
        &GeneratorOptions::default(),
    )
    .unwrap();
    let before = first.next_id().unwrap();
    drop(first);
    clock.rewind(10_000);
    let second =
        ShardGenerator::with_clock(Layout::instagram(), 5, clock, &GeneratorOptions::default())
            .unwrap();
    assert!(second.next_id().unwrap() < before);
}

#[test]
fn a_clean_restart_continues_at_once_above_the_last_id() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ids.guard");
    let clock = ManualClock::new(T0);
    let options = guarded(&path, BackwardPolicy::Refuse);
    let before = {
        let generator =
            ShardGenerator::with_clock(Layout::instagram(), 5, clock.clone(), &options).unwrap();
        generator.next_id().unwrap()
    };
    let generator =
        ShardGenerator::with_clock(Layout::instagram(), 5, clock.clone(), &options).unwrap();
    let after = generator.next_id().unwrap();
    assert!(after > before);
    // The clean mark is the end of the last unit, not the window ahead.
    let decoded = Layout::instagram().decode(after).unwrap();
    assert_eq!(decoded.unix_ms, T0 + 1);
}

#[test]
fn two_generators_cannot_share_a_guard() {
    let dir = tempfile::tempdir().unwrap();
    let options = guarded(&dir.path().join("ids.guard"), BackwardPolicy::Refuse);
    let _first =
        ShardGenerator::with_clock(Layout::instagram(), 0, ManualClock::new(T0), &options).unwrap();
    let second = ShardGenerator::with_clock(Layout::instagram(), 1, ManualClock::new(T0), &options);
    assert!(matches!(second, Err(GenerateError::GuardInUse(_))));
}

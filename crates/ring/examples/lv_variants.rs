//! The measurement behind the README's "cheaper Lamping–Veach?" paragraph: candidate
//! rewrites of the jump loop, each checked for *exact* agreement with the paper's form
//! and timed beside it.
//!
//! Exactness: for one key, Lamping–Veach's answer for every n is fixed by the sequence
//! of jump targets; two forms agree for all n in 1..=LIMIT exactly when their target
//! sequences agree up to the first one >= LIMIT. So each key costs ~ln(LIMIT) steps, and
//! ten million keys cover every bucket count 1..=2000.
//!
//! `cargo run --release -p shardkit-ring --example lv_variants [KEYS]`
// Allowed here only (calls the SSE4.1 jump after feature detection, as the library does); the workspace denies unsafe code elsewhere.
#![allow(unsafe_code)]

use shardkit_ring::hash_u64;
use shardkit_ring::jump::jump_portable;
use std::hint::black_box;
use std::num::NonZeroU32;
use std::time::Instant;

const LIMIT: i64 = 2000;
const MUL: u64 = 2_862_933_555_777_941_757;

/// One step: next jump target from bucket `b` and the advanced generator state.
type Step = fn(i64, u64) -> i64;

/// The paper: (b+1) * (2^31 / (r+1)), two roundings.
fn paper(b: i64, key: u64) -> i64 {
    ((b + 1) as f64 * ((1u64 << 31) as f64 / ((key >> 33) + 1) as f64)) as i64
}

/// Single float: f32 everywhere.
fn single(b: i64, key: u64) -> i64 {
    ((b + 1) as f32 * ((1u64 << 31) as f32 / ((key >> 33) + 1) as f32)) as i64
}

/// One division on the whole product: (b+1) * 2^31 / (r+1), one rounding.
fn one_division(b: i64, key: u64) -> i64 {
    (((b + 1) as f64 * (1u64 << 31) as f64) / ((key >> 33) + 1) as f64) as i64
}

/// Exact integers: floor((b+1) * 2^31 / (r+1)).
fn integer(b: i64, key: u64) -> i64 {
    (((b + 1) as u64) << 31)
        .checked_div((key >> 33) + 1)
        .unwrap_or(0) as i64
}

/// Exact integers where they provably agree with the paper, the paper elsewhere. For
/// b+1 < 2^21 the two float roundings (relative error < 2^-52) cannot carry a quotient
/// that is not an integer across an integer, so only an exact quotient (remainder 0)
/// can differ (the float product may land just below it: 49 * fl(1/49) < 1).
fn integer_fixed(b: i64, key: u64) -> i64 {
    let (num, den) = (((b + 1) as u64) << 31, (key >> 33) + 1);
    if b + 1 < 1 << 21 && num % den != 0 {
        (num / den) as i64
    } else {
        paper(b, key)
    }
}

/// A raw key whose chain reaches bucket 48 right before a draw r = 49 * 2^21 - 1, so
/// the exact quotient is 1024 while the paper's floats give 1023.99..: at n = 1024 the
/// exact-integer form answers 48 and the paper goes on. `None` if the search fails.
fn integer_counterexample() -> Option<u64> {
    // MUL^-1 mod 2^64 by Newton's iteration (each step doubles the correct bits).
    let mut inv = MUL;
    for _ in 0..6 {
        inv = inv.wrapping_mul(2u64.wrapping_sub(MUL.wrapping_mul(inv)));
    }
    for low in 0..100_000u64 {
        let target = (((49u64 << 21) - 1) << 33) | low;
        let mut state = target;
        for steps in 1..=12 {
            state = state.wrapping_sub(1).wrapping_mul(inv);
            // Walk forward from `state` to just before `target`: is the bucket 48?
            let (mut k, mut j) = (state, 0i64);
            for _ in 1..steps {
                k = k.wrapping_mul(MUL).wrapping_add(1);
                j = paper(j, k);
            }
            if j == 48 {
                return Some(state);
            }
        }
    }
    None
}

/// Reciprocal by multiplication: (b+1) * 2^31 * (1/(r+1)).
fn reciprocal(b: i64, key: u64) -> i64 {
    ((b + 1) as f64 * (1u64 << 31) as f64 * (1.0 / ((key >> 33) + 1) as f64)) as i64
}

/// The bucket targets of `key` up to the first one >= LIMIT.
fn targets(mut key: u64, step: Step, out: &mut Vec<i64>) {
    out.clear();
    let mut j = 0i64;
    while j < LIMIT {
        key = key.wrapping_mul(MUL).wrapping_add(1);
        j = step(j, key);
        out.push(j.min(LIMIT));
    }
}

/// The full lookup with a given step.
#[inline(always)]
fn lookup(mut key: u64, n: i64, step: Step) -> u32 {
    let (mut b, mut j) = (-1i64, 0i64);
    while j < n {
        b = j;
        key = key.wrapping_mul(MUL).wrapping_add(1);
        j = step(b, key);
    }
    b as u32
}

/// The crate's SSE4.1 form where the CPU has it, else the portable one.
fn sse41(key: u64, n: NonZeroU32) -> u32 {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("sse4.1") {
            // SAFETY: the CPU supports SSE4.1.
            return unsafe { shardkit_ring::jump::jump_sse41(key, n) };
        }
    }
    jump_portable(key, n)
}

fn ns_per_lookup(n: u32, f: impl Fn(u64) -> u32) -> f64 {
    const KEYS: u64 = 2_000_000;
    let start = Instant::now();
    let mut acc = 0u32;
    for k in 0..KEYS {
        acc ^= f(hash_u64(black_box(k)));
    }
    black_box((acc, n));
    start.elapsed().as_nanos() as f64 / KEYS as f64
}

fn main() {
    let keys: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(10_000_000);
    let variants: [(&str, Step); 5] = [
        ("f32", single),
        ("integer + fix-up", integer_fixed),
        ("one f64 division", one_division),
        ("exact integer", integer),
        ("f64 reciprocal", reciprocal),
    ];
    println!("exactness over {keys} keys x every n in 1..={LIMIT}:");
    let (mut want, mut got) = (Vec::new(), Vec::new());
    for (name, step) in variants {
        let mut differ = 0u64;
        for k in 0..keys {
            let h = hash_u64(k);
            targets(h, paper, &mut want);
            targets(h, step, &mut got);
            differ += u64::from(want != got);
        }
        println!("  {name:<18} keys with a different bucket for some n: {differ}");
    }
    match integer_counterexample() {
        Some(key) => {
            let nz = NonZeroU32::new(1024).unwrap_or(NonZeroU32::MIN);
            println!(
                "  exact integer at n 1024, raw key {key:#x}: {} (paper {}, fix-up {})",
                lookup(key, 1024, integer),
                jump_portable(key, nz),
                lookup(key, 1024, integer_fixed)
            );
        }
        None => println!("  no exact-integer counterexample found"),
    }
    println!("ns per lookup (hash included), best of 5:");
    for n in [100u32, 1000] {
        let nz = NonZeroU32::new(n).unwrap_or(NonZeroU32::MIN);
        let mut rows: Vec<(&str, f64)> = Vec::new();
        for _ in 0..5 {
            let r = [
                (
                    "paper (portable)",
                    ns_per_lookup(n, |h| jump_portable(h, nz)),
                ),
                (
                    "crate jump (integer)",
                    ns_per_lookup(n, |h| shardkit_ring::jump::jump_nonzero(h, nz)),
                ),
                ("sse4.1 form", ns_per_lookup(n, |h| sse41(h, nz))),
                ("f32", ns_per_lookup(n, |h| lookup(h, i64::from(n), single))),
                (
                    "exact integer",
                    ns_per_lookup(n, |h| lookup(h, i64::from(n), integer)),
                ),
                (
                    "integer + fix-up",
                    ns_per_lookup(n, |h| lookup(h, i64::from(n), integer_fixed)),
                ),
                (
                    "f64 reciprocal",
                    ns_per_lookup(n, |h| lookup(h, i64::from(n), reciprocal)),
                ),
                (
                    "jump-back",
                    ns_per_lookup(n, |h| shardkit_ring::jump_back::jump_back_nonzero(h, nz)),
                ),
                ("hash only", ns_per_lookup(n, |h| h as u32)),
            ];
            if rows.is_empty() {
                rows = r.to_vec();
            } else {
                for (row, (_, t)) in rows.iter_mut().zip(r) {
                    row.1 = row.1.min(t);
                }
            }
        }
        for (name, t) in rows {
            println!("  n {n:>5}  {name:<20} {t:6.1}");
        }
    }
}

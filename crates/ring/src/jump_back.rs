//! JumpBack hashing: a consistent, monotone key-to-bucket map with no floating point and
//! an expected constant number of steps, after Ertl's JumpBackHash (2024, "JumpBackHash:
//! Say Goodbye to the Modulo Operation to Distribute Keys Uniformly to Buckets").
//!
//! It exists beside [`crate::jump()`] because Lamping–Veach needs about ln(n) + 1 dependent
//! float steps (past 25 ns at 1000 buckets on our machines) while this needs about three
//! hash mixes, two of them side by side. It is **not** bit-compatible with Google's jump hash, nor with Hash4j's
//! JumpBackHash (the random stream differs): use [`crate::jump()`] where another language
//! must compute the same placement.
//!
//! # How it works
//!
//! Every index `i >= 1` is *active* for a key with probability `1/(i+1)`, independently;
//! index 0 always is. The bucket for `n` buckets is the largest active index below `n`.
//! That alone makes the map consistent and monotone: growing `n` to `n+1` moves a key
//! exactly when index `n` is active (probability `1/(n+1)`), and then to bucket `n`. And
//! `P(bucket = i) = 1/(i+1) * prod_{k=i+1}^{n-1} k/(k+1) = 1/n`: uniform.
//!
//! The active set is never built; it is sampled backwards, level by level, over the
//! ranges `L_k = [2^k, 2^(k+1))`. Within `L_k` the active indices are the successive
//! minima ("records") of a stream of uniform draws `U_{k,1}, U_{k,2}, ...` from
//! `[0, 2^(k+1))` that are at least `2^k` (each value `v` is a record with probability
//! `1/(v+1)`, independently of the others). So the largest active index of `L_k` that is
//! `<= m` is the first draw `<= m`, if that draw is at least `2^k`. In particular `L_k`
//! holds an active index exactly when `U_{k,1} >= 2^k`, a fair coin: bit `k` of one mix
//! of the key.
//! For `m = n-1` in `L_K` the lookup therefore draws from level `K` until a draw is
//! `<= m` (over half the draws are), and if that draw lies below `2^K` takes the highest
//! lower level whose key bit is set, the answer being `U_{k,1}`, one more draw.
//!
//! The draws are a fixed function of (key, level, draw number), so every `n` sees the
//! same active set; each is one 64-bit finalizer mix of the key.

use crate::RingError;
use std::num::NonZeroU32;

/// Bucket in `0..buckets` for a 64-bit key by JumpBack hashing; errors on 0 buckets.
///
/// Any key works, but distinct keys should be distinct hashes for an even spread;
/// [`crate::JumpNodes`] hashes for you.
pub fn jump_back(key: u64, buckets: u32) -> Result<u32, RingError> {
    NonZeroU32::new(buckets)
        .map(|b| jump_back_nonzero(key, b))
        .ok_or(RingError::ZeroBuckets)
}

/// [`jump_back`] for a bucket count already known to be non-zero: the hot-path form.
#[inline]
pub fn jump_back_nonzero(key: u64, buckets: NonZeroU32) -> u32 {
    let max = u64::from(buckets.get() - 1);
    if max == 0 {
        return 0;
    }
    let top = 63 - max.leading_zeros();
    let half = 1u64 << top;
    // The level coins: bit k says whether level k holds an active index. Mixed, not the
    // raw key, so that keys sharing low bits (multiples of 1024, say) still spread.
    let coins = draw(key, COIN_LEVEL, 0);

    // The highest level below `top` with an active index, and its largest one.
    // Computed before knowing whether it is needed so the mixes overlap.
    let lower = coins & (half - 1);
    let below = if lower == 0 {
        0
    } else {
        let level = 63 - lower.leading_zeros();
        let low = 1u64 << level;
        low | (draw(key, level, 0) & (low - 1))
    };

    // First draw of the top level: its top bit is bit `top` of the key.
    let mut u = (coins & half) | (draw(key, top, 0) & (half - 1));
    let mut round = 1;
    while u > max {
        u = draw(key, top, round) & (2 * half - 1);
        round += 1;
    }
    // u <= max < 2^32, so the narrowing keeps every bit.
    (if u >= half { u } else { below }) as u32
}

/// The `level` argument of the draw that supplies the level coins: real levels are 0..=31.
const COIN_LEVEL: u32 = 63;

/// Draw number `round` of level `level` for `key`: a splitmix64/Murmur3-style finalizer
/// of the key offset by a distinct odd multiple per (level, round), so the draws behave
/// as independent uniform 64-bit values.
#[inline(always)]
fn draw(key: u64, level: u32, round: u32) -> u64 {
    let salt = ((u64::from(round) << 6) | u64::from(level)).wrapping_add(1);
    let mut x = key ^ salt.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    x ^= x >> 32;
    x = x.wrapping_mul(0xd6e8_feb8_6659_fd93);
    x ^= x >> 32;
    x = x.wrapping_mul(0xd6e8_feb8_6659_fd93);
    x ^ (x >> 32)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hash::hash_u64;

    #[test]
    fn zero_buckets_is_a_named_error() {
        assert_eq!(jump_back(1, 0), Err(RingError::ZeroBuckets));
    }

    #[test]
    fn extremes_stay_in_range() {
        for k in 0..10_000u64 {
            let h = hash_u64(k);
            assert_eq!(jump_back(h, 1), Ok(0));
            assert!(jump_back(h, u32::MAX).unwrap() < u32::MAX);
            assert!(jump_back(h, 2).unwrap() < 2);
        }
        assert!(jump_back(0, u32::MAX).unwrap() < u32::MAX);
        assert!(jump_back(u64::MAX, u32::MAX).unwrap() < u32::MAX);
    }

    #[test]
    fn pinned_answers() {
        // Placement must never change between versions: these pin the draws.
        let got: Vec<u32> = [1u64, 2, 3, 0xdead_beef, u64::MAX]
            .iter()
            .map(|&k| jump_back(hash_u64(k), 1000).unwrap())
            .collect();
        assert_eq!(got, PINNED_1000);
    }

    const PINNED_1000: [u32; 5] = [512, 761, 661, 411, 794];

    #[test]
    fn keys_sharing_low_bits_still_spread() {
        let mut hit = [false; 1000];
        for k in 0..100_000u64 {
            hit[jump_back(k << 20, 1000).unwrap() as usize] = true;
        }
        assert!(hit.iter().all(|&h| h), "some bucket got no key");
    }

    #[test]
    fn growing_moves_keys_only_to_the_new_bucket_and_the_right_share() {
        const KEYS: u64 = 200_000;
        for n in [1u32, 2, 3, 7, 63, 64, 65, 100, 127, 128, 1000, 4097] {
            let mut moved = 0u64;
            for k in 0..KEYS {
                let h = hash_u64(k);
                let (a, b) = (jump_back(h, n).unwrap(), jump_back(h, n + 1).unwrap());
                assert!(a < n && b <= n, "key {k}: {a}/{n}, {b}/{}", n + 1);
                if a != b {
                    assert_eq!(b, n, "key {k} moved {a} -> {b} growing {n}");
                    moved += 1;
                }
            }
            let expected = KEYS as f64 / f64::from(n + 1);
            // Five standard deviations of a binomial count, and at most a few percent.
            let slack = 5.0 * expected.sqrt() + 0.03 * expected;
            assert!(
                (moved as f64 - expected).abs() <= slack,
                "n {n}: moved {moved}, expected {expected}"
            );
        }
    }
}

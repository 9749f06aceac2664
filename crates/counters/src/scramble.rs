//! The bijection that turns a partition's key into its stored form ([`scramble`]) and
//! back ([`unscramble`]). The stored form is at once the key kept in the table and its
//! hash: its top bits pick the home slot, so every input bit must reach them; and it must
//! be invertible, so snapshots and promotions can list the keys a table holds without
//! storing them twice.

/// murmur3's finaliser multipliers (odd, so invertible modulo 2^64).
const M1: u64 = 0xFF51_AFD7_ED55_8CCD;
const M2: u64 = 0xC4CE_B9FE_1A85_EC53;

/// Multiplicative inverse of an odd `m` modulo 2^64 (Newton's iteration).
const fn inverse(m: u64) -> u64 {
    let mut x = m;
    let mut i = 0;
    while i < 6 {
        x = x.wrapping_mul(2u64.wrapping_sub(m.wrapping_mul(x)));
        i += 1;
    }
    x
}

const M1_INV: u64 = inverse(M1);
const M2_INV: u64 = inverse(M2);

/// A bijection of the low `bits` bits (murmur3's finaliser, cut to `bits`): every
/// input bit reaches the top output bits, which pick the home slot.
#[inline(always)]
pub(crate) fn mix(x: u64, bits: u32, mask: u64) -> u64 {
    let s = bits / 2;
    let mut y = x ^ (x >> s);
    y = y.wrapping_mul(M1) & mask;
    y ^= y >> (s - 3);
    y = y.wrapping_mul(M2) & mask;
    y ^ (y >> s)
}

/// Undoes `y = x ^ (x >> s)` on `bits` bits.
#[inline]
fn unxorshift(y: u64, s: u32, bits: u32) -> u64 {
    let mut x = y;
    let mut done = s;
    while done < bits {
        x = y ^ (x >> s);
        done += s;
    }
    x
}

/// The inverse of [`mix`].
#[inline]
fn unmix(y: u64, bits: u32, mask: u64) -> u64 {
    let s = bits / 2;
    let mut x = unxorshift(y, s, bits);
    x = x.wrapping_mul(M2_INV) & mask;
    x = unxorshift(x, s - 3, bits);
    x = x.wrapping_mul(M1_INV) & mask;
    unxorshift(x, s, bits)
}

/// The stored form of key `key`: a bijection of `bits` bits that keeps all ones (the
/// empty marker) fixed, so the one key callers may not insert is the same before and
/// after scrambling.
#[inline(always)]
pub(crate) fn scramble(key: u64, bits: u32, mask: u64) -> u64 {
    mix(key, bits, mask) ^ mix(mask, bits, mask) ^ mask
}

/// The key whose stored form is `stored`.
#[inline]
pub(crate) fn unscramble(stored: u64, bits: u32, mask: u64) -> u64 {
    unmix(stored ^ mix(mask, bits, mask) ^ mask, bits, mask)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hash::mix64;

    #[test]
    fn scramble_is_a_bijection_that_fixes_all_ones() {
        for bits in [32u32, 56] {
            let mask = (1u64 << bits) - 1;
            assert_eq!(scramble(mask, bits, mask), mask);
            for k in (0..100_000u64).map(mix64).chain([0, 1, mask - 1]) {
                let k = k & mask;
                let stored = scramble(k, bits, mask);
                assert!(stored <= mask);
                assert_eq!(unscramble(stored, bits, mask), k, "bits={bits} k={k:#x}");
            }
        }
        // No two keys of a small range collide (a bijection on the full range follows
        // from the inverse above).
        let mask = u32::MAX as u64;
        let mut seen: Vec<u64> = (0..200_000u64).map(|k| scramble(k, 32, mask)).collect();
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen.len(), 200_000);
    }
}

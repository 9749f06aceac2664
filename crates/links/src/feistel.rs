//! A keyed bijection over `[0, n)` for any `n` up to 2^62: a balanced Feistel
//! network over the smallest even number of bits that holds `n`, with cycle walking
//! to stay inside `[0, n)`. It turns a group's ticket sequence number into a number
//! that looks random, so codes cannot be enumerated, while two numbers never map to
//! one value and no lookup-before-insert is needed.

/// Rounds: 6 is past the 4 that Luby–Rackoff needs for a pseudorandom permutation.
pub(crate) const ROUNDS: usize = 6;

/// The permutation, parameterized by a 128-bit key (kept in the data directory).
#[derive(Clone)]
pub struct Feistel {
    round_keys: [u64; ROUNDS],
}

impl std::fmt::Debug for Feistel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Feistel { <key hidden> }")
    }
}

/// SplitMix64's finalizer: a cheap, well-mixed round function.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl Feistel {
    /// A permutation keyed by `key`; different keys give unrelated permutations.
    pub fn new(key: [u8; 16]) -> Self {
        let a = u64::from_le_bytes(key[..8].try_into().unwrap_or_default());
        let b = u64::from_le_bytes(key[8..].try_into().unwrap_or_default());
        let mut round_keys = [0u64; ROUNDS];
        let mut state = a ^ mix(b);
        for (i, k) in round_keys.iter_mut().enumerate() {
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            *k = mix(state ^ b.rotate_left(i as u32 * 11));
        }
        Self { round_keys }
    }

    /// The round keys, for a store that must decode codes with the key it was made
    /// with (the key file can be lost; the store's copy keeps its layout readable).
    pub(crate) fn round_keys(&self) -> [u64; ROUNDS] {
        self.round_keys
    }

    /// The permutation with these round keys (what [`Feistel::round_keys`] gave).
    pub(crate) fn from_round_keys(round_keys: [u64; ROUNDS]) -> Self {
        Self { round_keys }
    }

    /// Half the bits of the power-of-two domain that holds `[0, n)`.
    fn half_bits(n: u64) -> u32 {
        let bits = (64 - n.saturating_sub(1).leading_zeros()).max(2);
        bits.div_ceil(2)
    }

    fn round(&self, round: usize, half: u32, tweak: u64, value: u64) -> u64 {
        let key = self.round_keys[round] ^ tweak.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        mix(value ^ key ^ (u64::from(half) << 56)) & ((1u64 << half) - 1)
    }

    fn forward(&self, x: u64, half: u32, tweak: u64) -> u64 {
        let mask = (1u64 << half) - 1;
        let (mut left, mut right) = (x >> half, x & mask);
        for r in 0..ROUNDS {
            let next = left ^ self.round(r, half, tweak, right);
            left = right;
            right = next;
        }
        (left << half) | right
    }

    fn backward(&self, y: u64, half: u32, tweak: u64) -> u64 {
        let mask = (1u64 << half) - 1;
        let (mut left, mut right) = (y >> half, y & mask);
        for r in (0..ROUNDS).rev() {
            let previous = right ^ self.round(r, half, tweak, left);
            right = left;
            left = previous;
        }
        (left << half) | right
    }

    /// The image of `x` in `[0, n)`. `x` must be below `n`, and `n` at most 2^62.
    ///
    /// Cycle walking: apply the power-of-two permutation until the value falls inside
    /// `[0, n)`; since the domain is less than 4 times `n`, that takes few steps, and the
    /// result is a permutation of `[0, n)` (each cycle of the big permutation is walked
    /// in one direction only).
    pub fn permute(&self, x: u64, n: u64) -> u64 {
        self.permute_tweaked(x, n, 0)
    }

    /// [`Feistel::permute`] under a public `tweak`: each tweak gives an unrelated
    /// permutation with the same key. Codes use the group as the tweak, so the same
    /// index in two groups does not give the same code suffix (which would let anyone
    /// who sees one code find 61 more by changing its first character).
    pub fn permute_tweaked(&self, x: u64, n: u64, tweak: u64) -> u64 {
        debug_assert!(x < n && n <= 1 << 62);
        let half = Self::half_bits(n);
        let mut y = self.forward(x, half, tweak);
        while y >= n {
            y = self.forward(y, half, tweak);
        }
        y
    }

    /// The inverse of [`Feistel::permute`]: `invert(permute(x, n), n) == x`.
    pub fn invert(&self, y: u64, n: u64) -> u64 {
        self.invert_tweaked(y, n, 0)
    }

    /// The inverse of [`Feistel::permute_tweaked`] with the same tweak.
    pub fn invert_tweaked(&self, y: u64, n: u64, tweak: u64) -> u64 {
        debug_assert!(y < n && n <= 1 << 62);
        let half = Self::half_bits(n);
        let mut x = self.backward(y, half, tweak);
        while x >= n {
            x = self.backward(x, half, tweak);
        }
        x
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_domains_are_permuted_exactly() {
        let f = Feistel::new(*b"0123456789abcdef");
        for n in [1u64, 2, 3, 7, 62, 100, 3844, 5000] {
            let mut seen = vec![false; n as usize];
            for x in 0..n {
                let y = f.permute(x, n);
                assert!(y < n);
                assert!(!seen[y as usize], "n={n}: {y} twice");
                seen[y as usize] = true;
                assert_eq!(f.invert(y, n), x);
            }
        }
    }

    #[test]
    fn it_is_not_the_identity() {
        let f = Feistel::new([1; 16]);
        let moved = (0..1000u64)
            .filter(|&x| f.permute(x, 62u64.pow(6)) != x)
            .count();
        assert!(moved > 990);
    }
}

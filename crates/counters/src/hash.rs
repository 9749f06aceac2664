//! A fast, non-cryptographic 64-bit mixer and a `BuildHasher` built on it.
//!
//! The tables hash integer ids that callers choose; the mixer only has to spread them
//! well, not resist attacks (a stripe or partition that gets many colliding ids costs
//! speed, never correctness).

use std::hash::{BuildHasher, Hasher};

/// Mixes a 64-bit value so that every input bit affects the high output bits.
#[inline]
pub(crate) fn mix64(x: u64) -> u64 {
    let mut h = x ^ (x >> 31);
    h = h.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    h ^= h >> 29;
    h = h.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    h ^ (h >> 32)
}

/// Maps a hash onto `0..n` without a division (Lemire's fast range).
#[inline]
pub(crate) fn reduce(hash: u64, n: usize) -> usize {
    ((hash as u128 * n as u128) >> 64) as usize
}

/// Hash of a byte string (a string key): picks its stripe with the top bits
/// ([`crate::counter::stripe_of`]) and its tag in the stripe's index with the low ones
/// ([`crate::names`]).
#[inline]
pub(crate) fn hash_bytes(bytes: &[u8]) -> u64 {
    let mut h = FastHasher::default();
    h.write(bytes);
    h.finish()
}

/// Hasher for the small side maps (partition directory, overflow, string keys).
#[derive(Default, Clone, Copy)]
pub(crate) struct FastHasher(u64);

impl Hasher for FastHasher {
    fn finish(&self) -> u64 {
        mix64(self.0)
    }
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut b = [0u8; 8];
            b[..chunk.len()].copy_from_slice(chunk);
            self.0 = mix64(self.0 ^ u64::from_le_bytes(b)).wrapping_add(chunk.len() as u64);
        }
    }
    fn write_u8(&mut self, i: u8) {
        self.write_u64(i as u64)
    }
    fn write_u16(&mut self, i: u16) {
        self.write_u64(i as u64)
    }
    fn write_u32(&mut self, i: u32) {
        self.write_u64(i as u64)
    }
    fn write_u64(&mut self, i: u64) {
        self.0 = mix64(self.0 ^ i).wrapping_add(1);
    }
    fn write_usize(&mut self, i: usize) {
        self.write_u64(i as u64)
    }
}

/// `BuildHasher` for [`FastHasher`].
#[derive(Default, Clone, Copy)]
pub(crate) struct FastBuild;

impl BuildHasher for FastBuild {
    type Hasher = FastHasher;
    fn build_hasher(&self) -> FastHasher {
        FastHasher(0)
    }
}

/// A std `HashMap` with the fast hasher, for side maps that are not the hot path.
pub(crate) type FastMap<K, V> = std::collections::HashMap<K, V, FastBuild>;

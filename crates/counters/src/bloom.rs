//! A small Bloom filter over the ids of one cold partition.
//!
//! Exists so a read of an id the cold tier does not hold (the common case for a counter
//! read by id: most ids were never written) is answered from RAM without a disk read.
//! Hand-rolled rather than a crate: it is a few lines, and its bits go into snapshots as
//! they are, so its layout must not change under us. 10 bits per id and 7 probes give
//! about 1% false positives (which cost one block read, never a wrong answer).

use crate::hash::mix64;

/// Filter bits per id.
pub(crate) const BITS_PER_ID: usize = 10;
/// Probes per id.
const PROBES: u64 = 7;

/// The filter: `words.len() * 64` bits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Bloom {
    words: Box<[u64]>,
}

impl Bloom {
    /// A filter holding `ids`.
    pub(crate) fn of(ids: impl ExactSizeIterator<Item = u64>) -> Bloom {
        let mut b = Bloom::with_capacity(ids.len());
        for id in ids {
            b.insert(id);
        }
        b
    }

    /// An empty filter sized for `n` members, added one by one with [`Bloom::insert`]
    /// (a merge knows how many rows it writes before it has read them).
    pub(crate) fn with_capacity(n: usize) -> Bloom {
        let words = (n * BITS_PER_ID).div_ceil(64).max(1);
        Bloom {
            words: vec![0; words].into_boxed_slice(),
        }
    }

    /// Adds `id`.
    pub(crate) fn insert(&mut self, id: u64) {
        for bit in self.probes(id) {
            self.words[bit / 64] |= 1 << (bit % 64);
        }
    }

    /// A filter read back from its words (a snapshot); `None` for no words.
    pub(crate) fn from_words(words: Vec<u64>) -> Option<Bloom> {
        (!words.is_empty()).then(|| Bloom {
            words: words.into_boxed_slice(),
        })
    }

    /// The filter's words, for a snapshot.
    pub(crate) fn words(&self) -> &[u64] {
        &self.words
    }

    /// Heap bytes.
    pub(crate) fn bytes(&self) -> usize {
        self.words.len() * 8
    }

    /// Whether `id` may be in the set (false: it is certainly not).
    pub(crate) fn may_hold(&self, id: u64) -> bool {
        self.probes(id)
            .all(|bit| self.words[bit / 64] & (1 << (bit % 64)) != 0)
    }

    fn probes(&self, id: u64) -> impl Iterator<Item = usize> {
        let m = (self.words.len() * 64) as u64;
        let h1 = mix64(id);
        let h2 = mix64(h1 ^ 0x5851_F42D_4C95_7F2D) | 1;
        (0..PROBES).map(move |i| (h1.wrapping_add(i.wrapping_mul(h2)) % m) as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holds_every_member_and_rejects_most_others() {
        let ids: Vec<u64> = (0..10_000u64).map(|i| (7 << 32) | (i * 3)).collect();
        let b = Bloom::of(ids.iter().copied());
        assert!(ids.iter().all(|&id| b.may_hold(id)));
        let false_hits = (0..10_000u64)
            .map(|i| (7 << 32) | (i * 3 + 1))
            .filter(|&id| b.may_hold(id))
            .count();
        assert!(false_hits < 300, "{false_hits} false positives of 10000");
        let back = Bloom::from_words(b.words().to_vec()).unwrap();
        assert_eq!(back, b);
    }
}

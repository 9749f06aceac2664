//! Which redirect-cache misses earn a place in the cache: a code is cached on its
//! second miss, not its first (TinyLFU's "doorkeeper", a one-hash Bloom filter that is
//! emptied as it fills).
//!
//! Why: over millions of links most codes drawn at random are seen once in a long
//! while; inserting each one cost ~0.8 µs a miss (quick_cache's insert and the
//! eviction it forces; perf at 10 million links) for an entry evicted before
//! its next use. A code asked for twice within the filter's window (the last
//! ~`cache_entries × 2` first misses) is cached on the second ask, so a popular link
//! costs one extra store read, once.

use std::hash::BuildHasher;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};

/// Bits of filter per cache entry (at the emptying point, a fraction 1/8 of the bits
/// is set: a one-time code passes for a repeated one about one time in nine).
const BITS_PER_ENTRY: usize = 16;
/// The smallest filter, in bits (32 KiB).
const MIN_BITS: usize = 1 << 18;

/// A set of codes seen once, forgetting them all when it holds too many.
pub struct Doorkeeper {
    words: Box<[AtomicU64]>,
    /// `bits - 1`: the bit of a hash is `hash & mask`.
    mask: u64,
    /// Bits set since the last emptying.
    marked: AtomicUsize,
    /// How many bits may be set before the filter is emptied.
    limit: usize,
    /// Seeded per process, so which codes collide cannot be chosen from outside.
    hasher: foldhash::fast::RandomState,
}

impl std::fmt::Debug for Doorkeeper {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Doorkeeper")
            .field("bits", &(self.mask + 1))
            .field("marked", &self.marked.load(Relaxed))
            .finish()
    }
}

impl Doorkeeper {
    /// A filter sized for a cache of `cache_entries`.
    pub fn new(cache_entries: usize) -> Self {
        let bits = cache_entries
            .saturating_mul(BITS_PER_ENTRY)
            .clamp(MIN_BITS, 1 << 40)
            .next_power_of_two();
        Self {
            words: (0..bits / 64).map(|_| AtomicU64::new(0)).collect(),
            mask: bits as u64 - 1,
            marked: AtomicUsize::new(0),
            limit: bits / 8,
            hasher: foldhash::fast::RandomState::default(),
        }
    }

    /// Whether `key` was seen since the filter was last emptied (or collides with one
    /// that was); marks it seen. Lock-free: concurrent callers may both be told "no"
    /// for one key, and a key marked while the filter empties may be forgotten; either
    /// way a code is cached one miss later, never wrongly served.
    pub fn seen_before(&self, key: &str) -> bool {
        let bit = self.hasher.hash_one(key) & self.mask;
        let (word, mask) = ((bit >> 6) as usize, 1u64 << (bit & 63));
        if self.words[word].fetch_or(mask, Relaxed) & mask != 0 {
            return true;
        }
        if self.marked.fetch_add(1, Relaxed) + 1 >= self.limit {
            self.marked.store(0, Relaxed);
            for w in self.words.iter() {
                w.store(0, Relaxed);
            }
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_passes_on_its_second_sight_not_its_first() {
        let door = Doorkeeper::new(1_000);
        assert!(!door.seen_before("abc"));
        assert!(door.seen_before("abc"));
        assert!(door.seen_before("abc"));
        assert!(!door.seen_before("abd"));
    }

    #[test]
    fn it_forgets_everything_once_full_and_stays_mostly_right_until_then() {
        let door = Doorkeeper::new(1_000);
        let bits = (door.mask + 1) as usize;
        assert_eq!(bits, MIN_BITS);
        // Up to the limit, a key seen once is told apart from new keys most of the time.
        let keys: Vec<String> = (0..bits / 8 - 1).map(|i| format!("k{i}")).collect();
        let first_time_passed = keys.iter().filter(|k| door.seen_before(k)).count();
        assert!(
            first_time_passed < keys.len() / 10,
            "{first_time_passed} of {} new keys passed as seen",
            keys.len()
        );
        assert!(
            keys.iter().all(|k| door.seen_before(k)),
            "no seen key is forgotten before the limit"
        );
        // Enough new keys to reach the limit empty the filter: the old keys are new again.
        let mut n = 0;
        while door.marked.load(Relaxed) != 0 {
            door.seen_before(&format!("fill{n}"));
            n += 1;
        }
        let remembered = keys.iter().filter(|k| door.seen_before(k)).count();
        assert!(
            remembered < keys.len() / 10,
            "{remembered} keys survived the emptying"
        );
    }
}

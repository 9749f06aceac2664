//! The randomness in UUIDv7 and ULID ids: a cryptographically secure generator, so ids
//! cannot be guessed from ids seen before.
//!
//! `rand`'s thread-local generator is ChaCha12 seeded (and periodically reseeded) from
//! the operating system: one system call per many ids rather than one per id, and no
//! lock shared between threads.

use rand::Rng;

/// 64 fresh random bits.
#[inline]
pub(crate) fn u64() -> u64 {
    rand::rng().next_u64()
}

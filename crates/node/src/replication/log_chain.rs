//! The chain that makes the counters' replicated log checkable by its readers.
//!
//! Every message the leader appends carries its term (the lease revision it won, a
//! fencing number that only grows) and two checksums: the chain before it and the
//! chain after it, the second a hash of the first, the term, the message's lsn range
//! and its payload. A replica keeps the chain after the last message it applied (its
//! [`Head`]) and applies a message only if it continues that head; a copy of the log
//! that differs anywhere (a deposed leader's write one NATS server kept, a message
//! skipped or repeated) breaks the chain at the next message, and two nodes that
//! applied the same messages hold the same head.

/// Where a node's copy of the log ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Head {
    /// Stream sequence of the last message applied (or published, on the leader).
    pub seq: u64,
    /// Term of the leader that wrote it.
    pub term: u64,
    /// The chain after it.
    pub chain: u128,
}

/// The head of an empty stream: the first message continues chain 0 in term 0.
pub const GENESIS: Head = Head {
    seq: 0,
    term: 0,
    chain: 0,
};

/// The chain after a message of term `term` carrying records `lsns` (`first`, `end`
/// exclusive) as `payload`, when the chain before it was `before`.
pub fn next(before: u128, term: u64, lsns: (u64, u64), payload: &[u8]) -> u128 {
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    h.update(&before.to_le_bytes());
    h.update(&term.to_le_bytes());
    h.update(&lsns.0.to_le_bytes());
    h.update(&lsns.1.to_le_bytes());
    h.update(&(payload.len() as u64).to_le_bytes());
    h.update(payload);
    h.digest128()
}

/// A chain value as written in headers and `INFO`: 32 lowercase hex digits.
pub fn hex(chain: u128) -> String {
    format!("{chain:032x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_chain_depends_on_everything_it_covers() {
        let base = next(0, 1, (1, 3), b"abc");
        assert_eq!(base, next(0, 1, (1, 3), b"abc"));
        for other in [
            next(1, 1, (1, 3), b"abc"),
            next(0, 2, (1, 3), b"abc"),
            next(0, 1, (2, 3), b"abc"),
            next(0, 1, (1, 4), b"abc"),
            next(0, 1, (1, 3), b"abd"),
        ] {
            assert_ne!(base, other);
        }
        assert_eq!(hex(1).len(), 32);
    }
}

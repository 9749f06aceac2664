//! The term and chain every message of the counters' stream carries
//! ([`crate::replication::log_chain`]), as headers, and the check a reader makes of them.

use crate::replication::log_chain::{self, Head};
use async_nats::HeaderMap;

/// Header with the term of the leader that appended the message.
pub const TERM_HEADER: &str = "Shardkit-Term";

/// Header with the chain before and after the message: `<before>-<after>`, 32 hex
/// digits each.
pub const CHAIN_HEADER: &str = "Shardkit-Chain";

/// A message's term and chain, as its writer stamped it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    /// The writer's term.
    pub term: u64,
    /// The chain the message continues.
    pub before: u128,
    /// The chain after it.
    pub after: u128,
}

/// A message that does not continue this node's copy of the log: applying it (or
/// keeping what was applied before it) would serve values that are in no agreed log.
#[derive(Debug, thiserror::Error)]
#[error("stream message {seq} does not continue this replica's log: {why}")]
pub struct Diverged {
    /// The message's stream sequence.
    pub seq: u64,
    /// What did not match.
    pub why: String,
}

impl Stamp {
    /// The stamp of a message of term `term` continuing `before`.
    pub fn new(term: u64, before: u128, lsns: (u64, u64), payload: &[u8]) -> Stamp {
        Stamp {
            term,
            before,
            after: log_chain::next(before, term, lsns, payload),
        }
    }

    /// The headers' stamp: `Ok(None)` for a message without one (written by a build
    /// before the chain), `Err` for one that does not parse.
    pub fn read(headers: Option<&HeaderMap>) -> Result<Option<Stamp>, String> {
        let Some(headers) = headers else {
            return Ok(None);
        };
        let (Some(term), Some(chain)) = (headers.get(TERM_HEADER), headers.get(CHAIN_HEADER))
        else {
            return Ok(None);
        };
        let term = term.as_str().parse().map_err(|_| {
            format!(
                "its {TERM_HEADER} header `{}` is not a number",
                term.as_str()
            )
        })?;
        let parsed = chain.as_str().split_once('-').and_then(|(b, a)| {
            Some((
                u128::from_str_radix(b, 16).ok()?,
                u128::from_str_radix(a, 16).ok()?,
            ))
        });
        let (before, after) = parsed.ok_or_else(|| {
            format!(
                "its {CHAIN_HEADER} header `{}` is not two hex checksums",
                chain.as_str()
            )
        })?;
        Ok(Some(Stamp {
            term,
            before,
            after,
        }))
    }

    /// The two header values: (term, chain).
    pub fn header_values(&self) -> (String, String) {
        (
            self.term.to_string(),
            format!(
                "{}-{}",
                log_chain::hex(self.before),
                log_chain::hex(self.after)
            ),
        )
    }

    /// The head after applying message `seq` stamped `stamp` on a node whose copy ends at
    /// `ours` (`None`: not known, as right after a start from a snapshot, whose joint
    /// is taken on trust and checked against the stream leader later). `Err` when the
    /// message does not hash to its own stamp, does not continue `ours`, or comes from
    /// an older term than one already applied.
    pub fn continues(
        stamp: &Stamp,
        ours: Option<Head>,
        seq: u64,
        lsns: (u64, u64),
        payload: &[u8],
    ) -> Result<Head, Diverged> {
        let diverged = |why: String| Diverged { seq, why };
        if log_chain::next(stamp.before, stamp.term, lsns, payload) != stamp.after {
            return Err(diverged(
                "its content does not match its own checksum (damaged)".into(),
            ));
        }
        if let Some(ours) = ours {
            if stamp.before != ours.chain {
                return Err(diverged(format!(
                    "it follows chain {}, this copy is at {} after message {}",
                    log_chain::hex(stamp.before),
                    log_chain::hex(ours.chain),
                    ours.seq
                )));
            }
            if stamp.term < ours.term {
                return Err(diverged(format!(
                    "it was written in term {}, after term {} (a deposed leader's write)",
                    stamp.term, ours.term
                )));
            }
        }
        Ok(Head {
            seq,
            term: stamp.term,
            chain: stamp.after,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(stamp: &Stamp) -> HeaderMap {
        let (term, chain) = stamp.header_values();
        let mut h = HeaderMap::new();
        h.insert(TERM_HEADER, term.as_str());
        h.insert(CHAIN_HEADER, chain.as_str());
        h
    }

    #[test]
    fn a_stamp_reads_back_and_continues_its_head() {
        let first = Stamp::new(3, 0, (1, 1), b"");
        let read = Stamp::read(Some(&headers(&first))).unwrap().unwrap();
        assert_eq!(read, first);
        let head = Stamp::continues(&read, Some(log_chain::GENESIS), 1, (1, 1), b"").unwrap();
        assert_eq!((head.seq, head.term, head.chain), (1, 3, first.after));
        let second = Stamp::new(3, head.chain, (1, 4), b"abc");
        let head2 = Stamp::continues(&second, Some(head), 2, (1, 4), b"abc").unwrap();
        assert_eq!(head2.chain, second.after);
        assert_eq!(Stamp::read(None).unwrap(), None);
        assert_eq!(Stamp::read(Some(&HeaderMap::new())).unwrap(), None);
    }

    #[test]
    fn what_does_not_continue_is_refused() {
        let head = Head {
            seq: 7,
            term: 4,
            chain: 99,
        };
        // Another branch: continues a chain this copy is not at.
        let other = Stamp::new(4, 98, (10, 12), b"xy");
        let e = Stamp::continues(&other, Some(head), 8, (10, 12), b"xy").unwrap_err();
        assert!(e.to_string().contains("does not continue"), "{e}");
        // Damaged: the payload is not the one stamped.
        let ok = Stamp::new(4, 99, (10, 12), b"xy");
        assert!(Stamp::continues(&ok, Some(head), 8, (10, 12), b"xz").is_err());
        assert!(Stamp::continues(&ok, Some(head), 8, (10, 13), b"xy").is_err());
        // A deposed leader's write after a newer term's.
        let stale = Stamp::new(3, 99, (10, 12), b"xy");
        let e = Stamp::continues(&stale, Some(head), 8, (10, 12), b"xy").unwrap_err();
        assert!(e.why.contains("term 3"), "{e}");
        // Unknown head (a start from a snapshot): taken as it comes.
        assert!(Stamp::continues(&other, None, 8, (10, 12), b"xy").is_ok());
        // A header that does not parse is an error, not a missing stamp.
        let mut bad = HeaderMap::new();
        bad.insert(TERM_HEADER, "x");
        bad.insert(CHAIN_HEADER, "00-00");
        assert!(Stamp::read(Some(&bad)).is_err());
    }
}

//! New codes: the group from the URL, the next number from that group's ticket
//! sequence, the [`Codec`] to turn them into text. Numbers come from
//! [`shardkit_ids::tickets`] so they are durable (a block is fsynced before use) and
//! never reissued after a crash: no code is ever handed out twice.

use crate::alias::is_reserved;
use crate::code::{group_of, Codec, GROUPS};
use crate::error::LinkError;
use shardkit_ids::tickets::{SegmentAllocator, SegmentOptions, SequenceSpec, TicketStore};
use shardkit_ids::TicketError;

/// One sequence of numbers (from 1) per group: the seam between code minting and
/// whatever hands out tickets (embedded store, a ticket server, PostgreSQL).
pub trait GroupSequences: Send + Sync {
    /// The next number of `group`'s sequence.
    fn next(&self, group: u8) -> Result<u64, TicketError>;
}

/// [`GroupSequences`] over a [`TicketStore`]: sequences `links.g00` … `links.g61`,
/// each with a segment allocator.
pub struct TicketSequences<S: TicketStore + Clone> {
    allocators: Vec<SegmentAllocator<S>>,
}

impl<S: TicketStore + Clone> std::fmt::Debug for TicketSequences<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TicketSequences")
            .field("groups", &self.allocators.len())
            .finish()
    }
}

impl<S: TicketStore + Clone> TicketSequences<S> {
    /// The 62 group sequences in `store`, numbered by `spec`.
    pub fn new(store: S, spec: SequenceSpec, options: SegmentOptions) -> Result<Self, TicketError> {
        let allocators = (0..GROUPS)
            .map(|g| {
                SegmentAllocator::new(
                    store.clone(),
                    &format!("links.g{g:02}"),
                    spec,
                    options.clone(),
                )
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self { allocators })
    }
}

impl<S: TicketStore + Clone> GroupSequences for TicketSequences<S> {
    fn next(&self, group: u8) -> Result<u64, TicketError> {
        self.allocators[usize::from(group) % self.allocators.len()].next()
    }
}

/// Mints codes for normalized URLs.
pub struct Minter {
    codec: Codec,
    sequences: Box<dyn GroupSequences>,
}

impl std::fmt::Debug for Minter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Minter")
            .field("codec", &self.codec)
            .finish()
    }
}

impl Minter {
    /// Codes from `codec` over `sequences`.
    pub fn new(codec: Codec, sequences: Box<dyn GroupSequences>) -> Self {
        Self { codec, sequences }
    }

    /// The codec (to decode codes back).
    pub fn codec(&self) -> &Codec {
        &self.codec
    }

    /// A fresh code for `normalized_url`, in the URL's group. A code that spells one
    /// of the server's own paths (`healthz`, `metrics`) is skipped.
    pub fn mint(&self, normalized_url: &str) -> Result<(u8, String), LinkError> {
        self.mint_in(group_of(normalized_url))
    }

    /// A fresh code in group `group`. A link with a custom alias gets its code in the
    /// alias's group ([`group_of`] of the alias), so a sharded store keeps the alias
    /// index entry and the link in one shard and resolves the alias with one read.
    pub fn mint_in(&self, group: u8) -> Result<(u8, String), LinkError> {
        loop {
            let number = self.sequences.next(group)?;
            let code = self.codec.encode(group, number.saturating_sub(1))?;
            if !is_reserved(&code) {
                return Ok((group, code));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Feistel;
    use shardkit_ids::tickets::EmbeddedTicketStore;
    use std::collections::HashSet;
    use std::sync::Arc;

    #[test]
    fn codes_are_unique_across_a_restart_and_land_in_the_url_group() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tickets.redb");
        let mut seen = HashSet::new();
        for _ in 0..2 {
            let store = Arc::new(EmbeddedTicketStore::open(&path).unwrap());
            let sequences =
                TicketSequences::new(store, SequenceSpec::default(), SegmentOptions::default())
                    .unwrap();
            let minter = Minter::new(Codec::scrambled(Feistel::new([3; 16])), Box::new(sequences));
            for i in 0..500 {
                let url = format!("https://example.com/{}", i % 7);
                let (group, code) = minter.mint(&url).unwrap();
                assert_eq!(group, group_of(&url));
                assert_eq!(Codec::group_of_code(&code), Some(group));
                assert_eq!(code.len(), 7);
                assert!(seen.insert(code), "a code was minted twice");
            }
        }
    }
}

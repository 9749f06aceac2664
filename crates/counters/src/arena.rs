//! A bump arena of byte records, addressed by 36-bit offsets.
//!
//! Exists to hold string-keyed rows ([`crate::names`]) one after another with no
//! per-row allocation: a record costs its own bytes and nothing else (a general
//! allocator adds a header and rounds every block up, ~16-32 bytes a row).
//!
//! Rules:
//! - memory comes in chunks that grow from 4 KiB to [`CHUNK`] (1 MiB), so a counter with a
//!   few string keys in each of its 32 stripes holds a few KiB, and a big one holds 1 MiB
//!   chunks that are their own mappings ([`HugeBuf`]): dropping one gives it back to the
//!   system at once, and the untouched end of the newest chunk is never resident;
//! - a record never spans two chunks; the offset of a record is `chunk << 20 | start`,
//!   and offset 0 is never handed out (the first byte of the first chunk is skipped), so
//!   0 can mean "no record" to the caller;
//! - records are never moved or freed one by one: the owner counts what it abandons and
//!   copies the live records into a fresh arena when that gets large (compaction).

use crate::hugemem::HugeBuf;

/// Largest chunk, in bytes (a power of two: offsets split at this bit).
pub(crate) const CHUNK: usize = 1 << CHUNK_BITS;
const CHUNK_BITS: u32 = 20;
/// First chunk's size; each next one doubles until [`CHUNK`].
const FIRST: usize = 4096;
/// Bits of an offset ([`crate::names`] packs it with a hash tag into one `u64` slot):
/// 2^16 chunks of 1 MiB, 64 GiB per arena.
pub(crate) const OFFSET_BITS: u32 = 36;
const MAX_CHUNKS: usize = 1 << (OFFSET_BITS - CHUNK_BITS);

/// The arena: chunks in order, the last one being filled.
#[derive(Debug, Clone, Default)]
pub(crate) struct Arena {
    chunks: Vec<HugeBuf>,
    /// Bytes used in the last chunk.
    fill: usize,
    /// Bytes handed out in all chunks (records plus the skipped first byte).
    total: usize,
}

impl Arena {
    /// Room for a record of `len` bytes (at most [`CHUNK`]); returns its offset and its
    /// zeroed bytes to fill.
    ///
    /// # Panics
    /// When the arena already holds 64 GiB (2 TiB of string-keyed rows per counter, far
    /// past any machine this runs on); see the crate README's limits.
    pub(crate) fn alloc(&mut self, len: usize) -> (u64, &mut [u8]) {
        debug_assert!(len > 0 && len <= CHUNK);
        let room = self.chunks.last().map_or(0, |c| c.len() - self.fill);
        if room < len {
            let n = self.chunks.len();
            assert!(
                n < MAX_CHUNKS,
                "a stripe's string-key arena is full (64 GiB)"
            );
            let size = if n >= (CHUNK_BITS - FIRST.trailing_zeros()) as usize {
                CHUNK
            } else {
                (FIRST << n).max(len.next_power_of_two()).min(CHUNK)
            };
            self.chunks.push(HugeBuf::zeroed(size));
            self.fill = 0;
            if n == 0 {
                // Offset 0 stays unused: it means "no record".
                self.fill = 1;
                self.total = 1;
            }
        }
        let ci = self.chunks.len() - 1;
        let start = self.fill;
        self.fill += len;
        self.total += len;
        let off = ((ci as u64) << CHUNK_BITS) | start as u64;
        let chunk = &mut self.chunks[ci];
        (off, &mut chunk[start..start + len])
    }

    /// The bytes from a record's offset to the end of its chunk (the record's own
    /// header says how many of them are its own).
    #[inline(always)]
    pub(crate) fn at(&self, off: u64) -> &[u8] {
        let (ci, start) = split(off);
        &self.chunks[ci][start..]
    }

    /// As [`Arena::at`], to write a record in place.
    #[inline(always)]
    pub(crate) fn at_mut(&mut self, off: u64) -> &mut [u8] {
        let (ci, start) = split(off);
        &mut self.chunks[ci][start..]
    }

    /// Bytes handed out (live and abandoned records).
    pub(crate) fn used(&self) -> usize {
        self.total
    }

    /// Bytes of memory held (whole chunks; a mapped chunk's untouched pages count here
    /// although they are not resident).
    pub(crate) fn bytes(&self) -> usize {
        self.chunks.iter().map(HugeBuf::bytes).sum::<usize>()
            + self.chunks.capacity() * std::mem::size_of::<HugeBuf>()
    }
}

#[inline(always)]
fn split(off: u64) -> (usize, usize) {
    (
        (off >> CHUNK_BITS) as usize,
        (off & (CHUNK as u64 - 1)) as usize,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_keep_their_bytes_across_chunks_and_offset_zero_is_never_used() {
        let mut a = Arena::default();
        let mut offs = Vec::new();
        for i in 0..20_000usize {
            let len = 1 + (i * 7919) % 300;
            let (off, b) = a.alloc(len);
            assert_ne!(off, 0);
            b.fill((i % 251) as u8);
            offs.push((off, len, (i % 251) as u8));
        }
        for (off, len, v) in offs {
            assert!(a.at(off)[..len].iter().all(|&x| x == v));
        }
        assert!(a.used() > 20_000 * 100);
        assert!(a.bytes() >= a.used());
    }

    #[test]
    fn chunks_grow_from_small_to_one_mib_and_fit_big_records() {
        let mut a = Arena::default();
        a.alloc(10);
        assert_eq!(
            a.bytes() - a.chunks.capacity() * std::mem::size_of::<HugeBuf>(),
            FIRST
        );
        let (off, b) = a.alloc(9000);
        assert_eq!(b.len(), 9000);
        assert_eq!(split(off).1, 0, "a record that does not fit starts a chunk");
        for _ in 0..5000 {
            a.alloc(1000);
        }
        assert!(a.chunks.iter().all(|c| c.len() <= CHUNK));
        assert_eq!(a.chunks.last().map(|c| c.len()), Some(CHUNK));
    }
}

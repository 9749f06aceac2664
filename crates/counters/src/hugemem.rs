//! Fixed-length, zero-initialised byte buffers whose large instances get their own
//! anonymous mapping, aligned to 2 MiB and advised for transparent huge pages.
//!
//! Exists because a random increment on a big table is mostly page walks: with 4 KiB
//! pages every look-up in a table of a gigabyte misses the TLB, with 2 MiB pages most do
//! not (see `bench/notes/counters-engine.md`). The general-purpose allocator neither aligns big
//! blocks to 2 MiB nor asks for huge pages, so a partition's arrays live in a [`HugeBuf`]
//! instead.
//!
//! Rules:
//! - a buffer of at least `map_min` bytes ([`MAP_MIN`] by default) is a private anonymous
//!   mapping whose start is 2 MiB-aligned, with `madvise(MADV_HUGEPAGE)`; its length is
//!   only rounded up to a 4 KiB page, so a tail shorter than 2 MiB stays on small pages
//!   and costs no extra memory;
//! - anything smaller, any platform other than Linux, and any failure of `mmap` uses the
//!   global allocator (same contents, same behaviour, no huge pages); a refused
//!   `madvise` (THP off or not built in) is ignored: the mapping just keeps small pages;
//! - dropping a mapped buffer unmaps it, so the memory goes back to the system at once.
// Allowed here only (huge-page mappings through libc (mmap/madvise/munmap); each block says why it is sound); the workspace denies unsafe code elsewhere.
#![allow(unsafe_code)]

use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;

/// Size from which a buffer gets its own mapping. Below 2 MiB no page of it could be a
/// huge page; 1 MiB still keeps big arrays out of the allocator's heap, where freed
/// blocks leave holes.
pub(crate) const MAP_MIN: usize = 1 << 20;

/// Huge page size assumed for alignment (x86-64 and most arm64 kernels).
const HUGE: usize = 2 << 20;

/// Small page size used to round mapping lengths.
const PAGE: usize = 4096;

/// A zero-initialised byte buffer of fixed length; see the module doc.
///
/// Holds its start and length directly so reading it is one pointer, no branch on the
/// kind of memory (a look-up reads it several times per increment).
pub(crate) struct HugeBuf {
    ptr: NonNull<u8>,
    len: usize,
    mapped: bool,
}

// SAFETY: a `HugeBuf` owns its memory exclusively, like a `Box<[u8]>` (no other pointer
// to it exists), so sending it or sharing `&HugeBuf` (which only reads) across threads is
// as safe as for a boxed slice.
unsafe impl Send for HugeBuf {}
// SAFETY: as above; `&HugeBuf` only gives out `&[u8]`.
unsafe impl Sync for HugeBuf {}

impl HugeBuf {
    /// `len` zero bytes, mapped on huge pages when `len >= MAP_MIN`: how partitions get
    /// their storage.
    pub(crate) fn zeroed(len: usize) -> HugeBuf {
        HugeBuf::zeroed_with(len, MAP_MIN)
    }

    /// `len` zero bytes, mapped when `len >= map_min` (tests use this to force either kind).
    pub(crate) fn zeroed_with(len: usize, map_min: usize) -> HugeBuf {
        #[cfg(target_os = "linux")]
        if len >= map_min && len > 0 {
            if let Some(ptr) = mapped::map(len) {
                return HugeBuf {
                    ptr,
                    len,
                    mapped: true,
                };
            }
        }
        #[cfg(not(target_os = "linux"))]
        let _ = map_min;
        let heap: Box<[u8]> = vec![0u8; len].into_boxed_slice();
        let ptr = NonNull::new(Box::into_raw(heap) as *mut u8).expect("Box pointers are not null");
        HugeBuf {
            ptr,
            len,
            mapped: false,
        }
    }

    /// Bytes of memory held: the mapping rounded to whole pages, or the heap block; what
    /// the engine's memory statistics count.
    pub(crate) fn bytes(&self) -> usize {
        if self.mapped {
            self.len.div_ceil(PAGE) * PAGE
        } else {
            self.len
        }
    }

    /// Whether the buffer is its own huge-page-advised mapping (else it is on the heap).
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) fn is_mapped(&self) -> bool {
        self.mapped
    }
}

impl Drop for HugeBuf {
    fn drop(&mut self) {
        #[cfg(target_os = "linux")]
        if self.mapped {
            // SAFETY: `ptr..ptr + len` is exactly what `mapped::map(len)` returned, mapped
            // once and never unmapped before; no reference into it outlives `self`.
            unsafe { mapped::unmap(self.ptr, self.len) };
            return;
        }
        // SAFETY: a heap buffer's pointer came from `Box::into_raw` of a `[u8]` of `len`
        // bytes and is given back exactly once, here.
        unsafe {
            drop(Box::from_raw(std::ptr::slice_from_raw_parts_mut(
                self.ptr.as_ptr(),
                self.len,
            )))
        };
    }
}

impl Deref for HugeBuf {
    type Target = [u8];
    #[inline(always)]
    fn deref(&self) -> &[u8] {
        // SAFETY: `ptr..ptr + len` is owned by `self`, initialised (zero filled at first)
        // and valid until drop; it is only written through `&mut self`.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl DerefMut for HugeBuf {
    #[inline(always)]
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in `deref`, and `&mut self` makes this the only reference.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl Clone for HugeBuf {
    fn clone(&self) -> HugeBuf {
        let map_min = if self.mapped { 0 } else { usize::MAX };
        let mut b = HugeBuf::zeroed_with(self.len, map_min);
        b.copy_from_slice(self);
        b
    }
}

impl std::fmt::Debug for HugeBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HugeBuf")
            .field("len", &self.len)
            .field("mapped", &self.mapped)
            .finish()
    }
}

#[cfg(target_os = "linux")]
mod mapped {
    use super::{HUGE, PAGE};
    use std::ptr::NonNull;

    /// Maps `len > 0` zero bytes (rounded up to whole pages) at a 2 MiB-aligned address,
    /// advised for huge pages; `None` if the kernel refuses. Undo with [`unmap`].
    pub(super) fn map(len: usize) -> Option<NonNull<u8>> {
        let size = len.checked_add(PAGE - 1)? / PAGE * PAGE;
        let span = size.checked_add(HUGE - PAGE)?;
        // SAFETY: a fresh private anonymous mapping at an address of the kernel's choosing
        // touches no existing memory.
        let raw = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                span,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if raw == libc::MAP_FAILED {
            return None;
        }
        let base = raw as usize;
        let start = (base + HUGE - 1) & !(HUGE - 1);
        let head = start - base;
        let tail = span - head - size;
        // SAFETY: `base..start` and `start + size..base + span` lie inside the mapping just
        // made and nothing points into them; unmapping them leaves `start..start + size`
        // mapped.
        unsafe {
            if head > 0 {
                libc::munmap(raw, head);
            }
            if tail > 0 {
                libc::munmap((start + size) as *mut libc::c_void, tail);
            }
            // A hint: refused where THP is off or missing, and then small pages serve.
            libc::madvise(start as *mut libc::c_void, size, libc::MADV_HUGEPAGE);
        }
        NonNull::new(start as *mut u8)
    }

    /// Unmaps what [`map`] returned for `len`.
    ///
    /// # Safety
    /// `ptr` must come from `map(len)` with the same `len`, not unmapped yet, and nothing
    /// may use the memory afterwards.
    pub(super) unsafe fn unmap(ptr: NonNull<u8>, len: usize) {
        let size = len.div_ceil(PAGE) * PAGE;
        // SAFETY: per this function's contract, exactly the range `map` kept mapped.
        unsafe { libc::munmap(ptr.as_ptr() as *mut libc::c_void, size) };
    }
}

/// Hands the heap's free pages back to the system (glibc's `malloc_trim`): called after
/// an eviction pass freed partitions. Their arrays are small heap blocks (a partition of
/// ~1,000 rows is ~9 KB), and glibc keeps freed blocks resident until it reuses them:
/// filling 50 M rows under a 256 MiB `max_memory`, the process held 1.8x the engine's
/// estimate resident without this and 1.25-1.4x with it (`examples/cold-tier.rs`).
/// Does nothing off glibc.
pub(crate) fn trim_heap() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim takes no pointers and only releases memory the allocator holds
    // free; it is safe to call from any thread at any time.
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pattern(b: &mut [u8]) {
        for (i, x) in b.iter_mut().enumerate() {
            *x = (i * 31 + 7) as u8;
        }
    }

    #[test]
    fn small_buffers_stay_on_the_heap_and_big_ones_are_mapped_on_linux() {
        let small = HugeBuf::zeroed(4096);
        assert!(!small.is_mapped());
        assert_eq!(small.len(), 4096);
        let big = HugeBuf::zeroed(MAP_MIN);
        assert_eq!(big.is_mapped(), cfg!(target_os = "linux"));
        assert_eq!(big.len(), MAP_MIN);
        assert!(big.iter().all(|&b| b == 0));
    }

    #[test]
    fn mapped_buffers_start_on_a_2_mib_boundary_and_round_to_pages() {
        for len in [1, 4095, 4097, HUGE - 1, HUGE + 12_345, 3 * HUGE] {
            let b = HugeBuf::zeroed_with(len, 0);
            assert_eq!(b.len(), len);
            if b.is_mapped() {
                assert_eq!(b.as_ptr() as usize % HUGE, 0, "len {len}");
                assert_eq!(b.bytes(), len.div_ceil(PAGE) * PAGE);
            }
        }
    }

    #[test]
    fn contents_are_kept_by_writes_and_clones_of_both_kinds() {
        for map_min in [0, usize::MAX] {
            let len = HUGE + 777;
            let mut b = HugeBuf::zeroed_with(len, map_min);
            assert!(b.iter().all(|&x| x == 0));
            pattern(&mut b);
            let c = b.clone();
            assert_eq!(c.is_mapped(), b.is_mapped());
            assert_eq!(&c[..], &b[..]);
            b[len - 1] ^= 0xFF;
            assert_ne!(c[len - 1], b[len - 1], "a clone is its own memory");
            drop(b);
            let mut want = vec![0u8; len];
            pattern(&mut want);
            assert_eq!(&c[..], &want[..]);
        }
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn mapped_buffers_work_with_huge_pages_turned_off() {
        // PR_SET_THP_DISABLE stands in for a machine with THP `never`: MADV_HUGEPAGE is
        // then refused or ignored and the mapping must still be plain working memory.
        // SAFETY: prctl with these arguments only changes this process's THP policy.
        let off = unsafe { libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0) };
        let mut b = HugeBuf::zeroed_with(5 * HUGE + 3, 0);
        assert!(b.is_mapped());
        assert!(b.iter().all(|&x| x == 0));
        pattern(&mut b);
        let c = b.clone();
        assert_eq!(&c[..], &b[..]);
        if off == 0 {
            // SAFETY: as above, turning the policy back.
            unsafe { libc::prctl(libc::PR_SET_THP_DISABLE, 0, 0, 0, 0) };
        }
    }

    #[test]
    fn heap_fallback_behaves_like_a_mapping() {
        let mut a = HugeBuf::zeroed_with(100_000, 0);
        let mut b = HugeBuf::zeroed_with(100_000, usize::MAX);
        assert!(!b.is_mapped());
        pattern(&mut a);
        pattern(&mut b);
        a.copy_within(10..5000, 11);
        b.copy_within(10..5000, 11);
        assert_eq!(&a[..], &b[..]);
        assert_eq!(HugeBuf::zeroed_with(0, 0).len(), 0);
    }

    #[test]
    fn many_allocations_and_frees_return_their_memory() {
        // 200 x 3 MiB mapped and dropped in turn: would hold 600 MiB if munmap leaked.
        let before = rss();
        for i in 0..200 {
            let mut b = HugeBuf::zeroed_with(3 << 20, 0);
            b[i * 1000] = 1;
            b.fill(0xAB);
            assert_eq!(b[(3 << 20) - 1], 0xAB);
        }
        let after = rss();
        if let (Some(x), Some(y)) = (before, after) {
            assert!(y < x + (64 << 20), "RSS grew from {x} to {y}");
        }
    }

    fn rss() -> Option<u64> {
        let s = std::fs::read_to_string("/proc/self/statm").ok()?;
        Some(s.split_whitespace().nth(1)?.parse::<u64>().ok()? * 4096)
    }
}

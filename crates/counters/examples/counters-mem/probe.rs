//! The reference for `counters-mem speed --probe`: how many random increments per second
//! this machine's memory allows at that moment, with none of the engine's work.
//!
//! Exists because the test VM's random-access rate moves by up to 5x from one second to
//! the next (other tenants of the host), so a figure for `incr_many` alone says little;
//! its ratio to this probe, timed in alternating slices of the same run, is what compares
//! across runs and days.
//!
//! The probe touches the lines one increment of a 100 M-row table touches: two adjacent
//! lines (a key's home line and the next one) and one line elsewhere (its value), in one
//! region of the table's size, 2 MiB aligned and advised for transparent huge pages like
//! the table's big partitions (but one mapping rounded to whole huge pages, where the
//! table has a mapping per partition whose last partial 2 MiB stays on small pages, so
//! the probe is a little kinder to the TLB), asking for each op's lines 16 ops ahead of
//! reading and writing them.
// Allowed here only (the probe's raw mapping, as the table's own buffers); the workspace denies unsafe code elsewhere.
#![allow(unsafe_code)]

use std::time::Instant;

/// A region the size of the table, on huge pages where the kernel gives them, touched once.
pub struct Probe {
    base: *mut u8,
    len: usize,
    lines: usize,
    x: u64,
}

impl Probe {
    /// Maps and touches a region of `bytes` bytes (at least 1 MiB); `None` if mapping fails.
    pub fn new(bytes: usize) -> Option<Probe> {
        const HUGE: usize = 2 << 20;
        let len = bytes.max(1 << 20).div_ceil(HUGE) * HUGE;
        // SAFETY: a fresh private anonymous mapping; nothing else refers to it.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len + HUGE,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return None;
        }
        let base = ((p as usize + HUGE - 1) & !(HUGE - 1)) as *mut u8;
        // SAFETY: `base..base + len` lies inside the mapping made above.
        unsafe {
            libc::madvise(base as *mut libc::c_void, len, libc::MADV_HUGEPAGE);
            for off in (0..len).step_by(4096) {
                *base.add(off) = 1;
            }
        }
        Some(Probe {
            base,
            len,
            lines: len / 64 - 1,
            x: 0x2545_F491_4F6C_DD1D,
        })
    }

    /// Bytes mapped.
    pub fn bytes(&self) -> usize {
        self.len
    }

    /// The two lines of op `q`: a line and the one after it, and a line elsewhere.
    fn lines_of(&self, q: u64) -> (usize, usize) {
        let a = (q as usize % self.lines) * 64;
        let b = (q.rotate_left(29) as usize % self.lines) * 64;
        (a, b)
    }

    /// Runs `ops` probe increments; returns ops per second.
    pub fn run(&mut self, ops: u64) -> f64 {
        const AHEAD: u64 = 16;
        let (mut lead, mut lag) = (self.x, self.x);
        let t = Instant::now();
        let mut sum = 0u64;
        for i in 0..ops + AHEAD {
            if i < ops {
                let (a, b) = self.lines_of(splitmix(&mut lead));
                prefetch(self.base.wrapping_add(a));
                prefetch(self.base.wrapping_add(a + 64));
                prefetch(self.base.wrapping_add(b));
            }
            if i >= AHEAD {
                let (a, b) = self.lines_of(splitmix(&mut lag));
                // SAFETY: `a + 64` and `b` are below `lines * 64 + 64 <= len`.
                unsafe {
                    sum =
                        sum.wrapping_add(*self.base.add(a) as u64 + *self.base.add(a + 64) as u64);
                    *self.base.add(b) = (*self.base.add(b)).wrapping_add(1);
                }
            }
        }
        std::hint::black_box(sum);
        self.x = lead;
        ops as f64 / t.elapsed().as_secs_f64()
    }
}

/// splitmix64: the next pseudo-random number of the sequence `x`.
fn splitmix(x: &mut u64) -> u64 {
    *x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *x;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn prefetch(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch never faults and reads nothing into the program.
    unsafe {
        core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(p as *const i8)
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

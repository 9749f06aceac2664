//! The wall clock as a trait, so tests can move time backwards and forwards at will.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

/// A source of wall-clock time in Unix milliseconds.
///
/// Generators read it on every id, so an implementation must be cheap and must not
/// block. It may go backwards (NTP steps, VM migrations): the generator copes.
pub trait Clock: Send + Sync + Clone + 'static {
    /// Milliseconds since 1970-01-01T00:00:00Z.
    fn unix_ms(&self) -> u64;
}

/// The operating system's real-time clock (`CLOCK_REALTIME`, through the vDSO).
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    #[inline]
    fn unix_ms(&self) -> u64 {
        // A clock set before 1970 reads as 0, which every layout's epoch rejects.
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64)
    }
}

/// Milliseconds since the Unix epoch, now, from the system clock: the one wall-clock
/// read of the crates that stamp records with the time (link clicks and expiry, the
/// counter log), so they all agree on what a clock before 1970 reads as (0).
#[inline]
pub fn now_ms() -> u64 {
    SystemClock.unix_ms()
}

/// A clock that only moves when told to: clones share one time, so a test can hold a
/// handle while a generator reads another.
#[derive(Debug, Clone, Default)]
pub struct ManualClock {
    now: Arc<AtomicU64>,
    auto_advance_ns: Arc<AtomicU64>,
    nanos: Arc<AtomicU64>,
}

impl ManualClock {
    /// A clock stopped at `unix_ms`.
    pub fn new(unix_ms: u64) -> Self {
        let clock = Self::default();
        clock.set(unix_ms);
        clock
    }

    /// Sets the time, forwards or backwards.
    pub fn set(&self, unix_ms: u64) {
        self.nanos
            .store(unix_ms.saturating_mul(1_000_000), Ordering::SeqCst);
        self.now.store(unix_ms, Ordering::SeqCst);
    }

    /// Moves the time forwards by `ms`.
    pub fn advance(&self, ms: u64) {
        self.set(self.now.load(Ordering::SeqCst) + ms);
    }

    /// Moves the time backwards by `ms` (saturating at 0).
    pub fn rewind(&self, ms: u64) {
        self.set(self.now.load(Ordering::SeqCst).saturating_sub(ms));
    }

    /// Makes every reading advance the clock by `step`, so that long runs in tests see
    /// time pass without sleeping. `Duration::ZERO` stops it again.
    pub fn auto_advance(&self, step: std::time::Duration) {
        self.auto_advance_ns.store(
            step.as_nanos().min(u128::from(u64::MAX)) as u64,
            Ordering::SeqCst,
        );
    }
}

impl Clock for ManualClock {
    fn unix_ms(&self) -> u64 {
        let step = self.auto_advance_ns.load(Ordering::Relaxed);
        if step == 0 {
            return self.now.load(Ordering::SeqCst);
        }
        let nanos = self.nanos.fetch_add(step, Ordering::SeqCst) + step;
        let ms = nanos / 1_000_000;
        self.now.fetch_max(ms, Ordering::SeqCst);
        ms
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_clock_moves_only_when_told() {
        let c = ManualClock::new(5_000);
        let handle = c.clone();
        assert_eq!(c.unix_ms(), 5_000);
        handle.rewind(2_000);
        assert_eq!(c.unix_ms(), 3_000);
        handle.advance(10);
        assert_eq!(c.unix_ms(), 3_010);
        handle.auto_advance(std::time::Duration::from_micros(500));
        assert_eq!(c.unix_ms(), 3_010);
        assert_eq!(c.unix_ms(), 3_011);
    }

    #[test]
    fn system_clock_is_after_2024() {
        assert!(SystemClock.unix_ms() > crate::layout::DEFAULT_EPOCH_UNIX_MS);
    }
}

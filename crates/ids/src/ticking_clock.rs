//! A wall clock read once a millisecond by a background thread, so that reading it is
//! one atomic load: for generators asked for tens of millions of ids a second, where
//! the system call behind every [`SystemClock`] reading costs more than the id itself.

use crate::clock::{Clock, SystemClock};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

/// How often the background thread reads the system clock.
const TICK: Duration = Duration::from_millis(1);

/// The system clock as of its last tick, at most about a millisecond old (more if the
/// machine is so loaded that the ticking thread is not scheduled).
///
/// A stale reading never harms an id: the generators only need a clock that is roughly
/// right, and they cope with one that stands still or steps back. It follows the
/// system clock's steps, backwards ones included, at the next tick.
///
/// Clones share one ticking thread; the thread ends at its next tick after the last
/// clone is dropped. Create one and clone it rather than creating many.
#[derive(Debug, Clone)]
pub struct TickingClock {
    now: Arc<AtomicU64>,
}

impl TickingClock {
    /// Starts the ticking thread; fails only if the system refuses a new thread.
    pub fn new() -> std::io::Result<Self> {
        let now = Arc::new(AtomicU64::new(SystemClock.unix_ms()));
        let ticker: Weak<AtomicU64> = Arc::downgrade(&now);
        std::thread::Builder::new()
            .name("shardkit-clock".into())
            .spawn(move || loop {
                std::thread::sleep(TICK);
                match ticker.upgrade() {
                    Some(now) => now.store(SystemClock.unix_ms(), Ordering::Relaxed),
                    None => return,
                }
            })?;
        Ok(Self { now })
    }
}

impl Clock for TickingClock {
    #[inline]
    fn unix_ms(&self) -> u64 {
        self.now.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn it_follows_the_system_clock_and_its_thread_ends_with_it() {
        let clock = TickingClock::new().unwrap();
        let first = clock.unix_ms();
        assert!(first.abs_diff(SystemClock.unix_ms()) < 1_000);
        std::thread::sleep(Duration::from_millis(30));
        assert!(clock.unix_ms() > first, "the ticker moves the reading on");
        let weak = Arc::downgrade(&clock.now);
        drop(clock);
        assert!(weak.upgrade().is_none(), "no handle keeps the time alive");
    }
}

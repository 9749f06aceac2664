//! A log line that a retry loop would repeat, written the first time and then at most
//! once a period.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Whether a repeated log line is due: the first time, then once per period. Exists
/// so that a condition retried on every flush (a damaged row, a follower's engine)
/// logs once a minute, not ten times a second.
#[derive(Debug)]
pub struct LogEvery {
    period_ms: u64,
    /// One more than the process-relative millisecond of the last line (0: none yet).
    last: AtomicU64,
}

impl LogEvery {
    /// Due the first time, then once a minute.
    pub const fn minute() -> LogEvery {
        LogEvery::every(Duration::from_secs(60))
    }

    /// Due the first time, then once every `period`.
    pub const fn every(period: Duration) -> LogEvery {
        LogEvery {
            period_ms: period.as_millis() as u64,
            last: AtomicU64::new(0),
        }
    }

    /// Whether to log now (and, if so, the period starts again; of callers racing for
    /// it, one is told yes).
    pub fn due(&self) -> bool {
        let now = elapsed_ms() + 1;
        let last = self.last.load(Ordering::Relaxed);
        if last != 0 && now < last.saturating_add(self.period_ms) {
            return false;
        }
        self.last
            .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
    }
}

/// Milliseconds since the first call in this process.
fn elapsed_ms() -> u64 {
    static START: OnceLock<Instant> = OnceLock::new();
    START.get_or_init(Instant::now).elapsed().as_millis() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_is_due_the_first_time_then_once_a_period() {
        let minute = LogEvery::minute();
        assert!(minute.due(), "the first time");
        assert!(
            !minute.due() && !minute.due(),
            "not again within the minute"
        );
        let always = LogEvery::every(Duration::ZERO);
        assert!(always.due() && always.due(), "a zero period is always due");
    }
}

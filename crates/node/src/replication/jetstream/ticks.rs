//! Periodic work on one grid: a task that waits with [`until_next`] wakes at the next
//! multiple of its period counted from one instant of the process, so the tasks of many
//! stores with the same period (a cluster node's 64 groups renewing their leases every
//! third of `lease_ms`) wake together, once, and their requests leave in one write,
//! rather than each on its own wake-up at its own phase.

use std::sync::OnceLock;
use std::time::Duration;
use tokio::time::Instant;

/// The instant every grid counts from.
fn origin() -> Instant {
    static ORIGIN: OnceLock<Instant> = OnceLock::new();
    *ORIGIN.get_or_init(Instant::now)
}

/// The first point of `period`'s grid after `now` (never `now` itself, so a loop that
/// waits for it always waits; a zero period is taken as a millisecond).
fn next_after(now: Instant, period: Duration) -> Instant {
    let period = period.max(Duration::from_millis(1));
    let origin = origin();
    if now < origin {
        // `now` was read just before the first use set the origin: the origin is the
        // next point.
        return origin;
    }
    let steps = (now - origin).as_nanos() / period.as_nanos() + 1;
    let at = u64::try_from(steps * period.as_nanos()).unwrap_or(u64::MAX);
    origin + Duration::from_nanos(at)
}

/// Waits until the next point of `period`'s grid: at most `period`, and at the same
/// instant as every other task of the process waiting on the same period.
pub async fn until_next(period: Duration) {
    tokio::time::sleep_until(next_after(Instant::now(), period)).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tasks_of_one_period_wake_at_one_instant_within_the_period() {
        let period = Duration::from_millis(333);
        let before = Instant::now();
        assert_eq!(
            next_after(before, period),
            origin(),
            "a time before the grid began"
        );
        let now = Instant::now();
        let later = now + Duration::from_millis(100);
        let (a, b) = (next_after(now, period), next_after(later, period));
        assert!(a > now && a <= now + period, "not within one period");
        assert!(b > later && b <= later + period, "not within one period");
        // Whoever asks within one step of the grid gets the same point of it.
        let step_start = a - period;
        let mid = step_start + Duration::from_millis(200);
        assert_eq!(next_after(step_start, period), a);
        assert_eq!(next_after(mid, period), a);
        // On a point of the grid, the next one: a loop always waits.
        assert_eq!(next_after(a, period), a + period);
    }
}

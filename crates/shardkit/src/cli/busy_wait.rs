//! Waiting, for a bounded time, for a file another process holds: two runs of
//! `shardkit id next` (or `ticket next`) on one data directory, as a script running
//! them in parallel makes, take turns instead of the second one failing.

use std::time::{Duration, Instant};

/// How long a command waits for another process to let go of a file before it fails
/// with that file's "in use" error.
pub const BUSY_WAIT: Duration = Duration::from_secs(10);

/// Pause between two attempts: short next to the few milliseconds a command holds
/// the file for.
const RETRY_EVERY: Duration = Duration::from_millis(20);

/// Runs `open` until it returns anything but an error `is_busy` accepts, or until
/// `limit` has passed (then returns the last busy error). Says once on stderr that it
/// waits, naming `what`, so a user who sees the pause knows why.
pub fn open_when_free<T, E>(
    what: &str,
    limit: Duration,
    is_busy: impl Fn(&E) -> bool,
    mut open: impl FnMut() -> Result<T, E>,
) -> Result<T, E> {
    let started = Instant::now();
    let mut said = false;
    loop {
        match open() {
            Err(e) if is_busy(&e) && started.elapsed() < limit => {
                if !said {
                    eprintln!(
                        "shardkit: waiting for another process using {what} (up to {} s)",
                        limit.as_secs()
                    );
                    said = true;
                }
                std::thread::sleep(RETRY_EVERY);
            }
            result => return result,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retries_while_busy_and_returns_the_first_other_result() {
        let mut calls = 0;
        let result: Result<u32, &str> = open_when_free(
            "x",
            BUSY_WAIT,
            |e| *e == "busy",
            || {
                calls += 1;
                if calls < 3 {
                    Err("busy")
                } else {
                    Ok(7)
                }
            },
        );
        assert_eq!(result, Ok(7));
        assert_eq!(calls, 3);

        let result: Result<u32, &str> =
            open_when_free("x", BUSY_WAIT, |e| *e == "busy", || Err("broken"));
        assert_eq!(result, Err("broken"), "other errors are not retried");
    }

    #[test]
    fn gives_up_with_the_busy_error_after_the_limit() {
        let mut calls = 0;
        let result: Result<u32, &str> = open_when_free(
            "x",
            Duration::ZERO,
            |e| *e == "busy",
            || {
                calls += 1;
                Err("busy")
            },
        );
        assert_eq!(result, Err("busy"));
        assert_eq!(calls, 1, "a zero limit tries once");
    }
}

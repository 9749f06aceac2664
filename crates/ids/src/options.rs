//! How a generator behaves when the sequence runs out or the wall clock steps back.

use std::path::PathBuf;
use std::time::Duration;

/// What to do when the wall clock reads further behind the last issued id than the
/// generator may run ahead of it ([`GeneratorOptions::max_lead`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BackwardPolicy {
    /// Return [`crate::GenerateError::ClockMovedBackwards`] until the clock catches up.
    /// The caller sees the problem at once and can alert or fail over.
    #[default]
    Refuse,
    /// Block the caller until the clock catches up (Sonyflake's behaviour).
    Wait,
}

/// Settings of the durable time guard: a file holding a high-water mark of time that
/// ids may have been issued up to, written and fsynced ahead of use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GuardOptions {
    /// The guard file; `<path>.lock` beside it keeps a second generator away.
    pub path: PathBuf,
    /// How far ahead of the clock the mark is written. The generator renews it every
    /// half window, so in steady state the hot path never waits for the disk.
    pub window: Duration,
}

impl GuardOptions {
    /// A guard at `path` with the default 2 s window.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self {
            path: path.into(),
            window: Duration::from_secs(2),
        }
    }
}

/// Everything a generator can be told besides its layout and clock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GeneratorOptions {
    /// How far the generator's logical clock may run ahead of the wall clock: when a
    /// time unit's sequence is used up it borrows the next unit, up to this bound, and
    /// then waits for the wall clock. The same bound absorbs small backward steps of the
    /// wall clock: within it, ids keep coming from the logical clock. Zero means classic
    /// Snowflake behaviour (never borrow, wait for the next unit).
    pub max_lead: Duration,
    /// What to do beyond that bound when the clock went backwards.
    pub on_clock_backwards: BackwardPolicy,
    /// A durable time guard, so a restart on a machine whose clock stepped back never
    /// reissues an id. `None` keeps all state in memory.
    pub guard: Option<GuardOptions>,
}

impl Default for GeneratorOptions {
    /// Borrow up to 2 s ahead, refuse beyond it, no guard file.
    fn default() -> Self {
        Self {
            max_lead: Duration::from_secs(2),
            on_clock_backwards: BackwardPolicy::Refuse,
            guard: None,
        }
    }
}

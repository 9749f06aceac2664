//! What every generator shares: the layout, the clock, the policies and the optional
//! time guard, and the loop that turns a reservation attempt into ids or an error.

use crate::clock::Clock;
use crate::error::GenerateError;
use crate::guard::TimeGuard;
use crate::layout::Layout;
use crate::options::{BackwardPolicy, GeneratorOptions};
use crate::sequence::{Attempt, Reserved, Run, SequenceState};
use std::time::Duration;

/// The longest single sleep while waiting for a clock that stepped back, so a waiting
/// caller notices promptly once the clock catches up.
const MAX_BACKWARD_SLEEP: Duration = Duration::from_millis(50);

/// Layout, clock and policies of one generator.
#[derive(Debug)]
pub(crate) struct Issuer<C: Clock> {
    pub layout: Layout,
    pub clock: C,
    max_lead_units: u64,
    policy: BackwardPolicy,
    guard: Option<TimeGuard>,
    /// First time unit this generator may use (from the guard, else 0).
    pub start_units: u64,
}

impl<C: Clock> Issuer<C> {
    /// Checks the options and opens the guard, if any.
    pub fn new(
        layout: Layout,
        clock: C,
        options: &GeneratorOptions,
    ) -> Result<Self, GenerateError> {
        let unit = u128::from(layout.unit_ms());
        let max_lead_units = (options.max_lead.as_millis() / unit).min(u128::from(u64::MAX)) as u64;
        let (guard, start_units) = match &options.guard {
            None => (None, 0),
            Some(g) => {
                let (guard, mark_unix_ms) = TimeGuard::open(&g.path, g.window, clock.clone())?;
                // Every id issued before has its whole unit below the mark: start at the
                // first unit that begins at or after it.
                let start = match mark_unix_ms.checked_sub(layout.epoch_unix_ms()) {
                    Some(ms) => ms.div_ceil(layout.unit_ms()),
                    None => 0,
                };
                (Some(guard), start)
            }
        };
        Ok(Self {
            layout,
            clock,
            max_lead_units,
            policy: options.on_clock_backwards,
            guard,
            start_units,
        })
    }

    /// The wall clock in the layout's units, with its Unix-ms reading.
    #[inline]
    pub fn now(&self) -> Result<(u64, u64), GenerateError> {
        let unix_ms = self.clock.unix_ms();
        match self.layout.units_since_epoch(unix_ms) {
            Some(units) => Ok((units, unix_ms)),
            None => Err(GenerateError::ClockBeforeEpoch {
                now_unix_ms: unix_ms,
                epoch_unix_ms: self.layout.epoch_unix_ms(),
            }),
        }
    }

    /// Reserves up to `want` ids from `state`, reading the clock as needed and waiting
    /// (or refusing) as the policies say. `now` is a reading the caller already has,
    /// refreshed here whenever waiting is needed.
    #[inline]
    pub fn reserve(
        &self,
        state: &SequenceState,
        want: u64,
        now: &mut (u64, u64),
    ) -> Result<Run, GenerateError> {
        self.reserve_with(now, |now_units, max_lead_units| {
            state.try_reserve(&self.layout, now_units, max_lead_units, want)
        })
    }

    /// The policy loop around any reservation: `attempt(now_units, max_lead_units)`
    /// tries once against the state it closes over. Generic, so each state's attempt
    /// is inlined into its generator's hot path.
    #[inline]
    pub fn reserve_with<R: Reserved>(
        &self,
        now: &mut (u64, u64),
        mut attempt: impl FnMut(u64, u64) -> Attempt<R>,
    ) -> Result<R, GenerateError> {
        loop {
            match attempt(now.0, self.max_lead_units) {
                Attempt::Issued(reserved) => {
                    self.check_time(reserved.time_units(), now.1)?;
                    return Ok(reserved);
                }
                Attempt::WaitForTick => std::thread::yield_now(),
                Attempt::PastTimeRange => return Err(self.time_exhausted()),
                Attempt::ClockBehind { behind_units } => {
                    let behind_ms = behind_units.saturating_mul(self.layout.unit_ms());
                    match self.policy {
                        BackwardPolicy::Refuse => {
                            return Err(GenerateError::ClockMovedBackwards {
                                behind_ms,
                                max_lead_ms: self.max_lead_units * self.layout.unit_ms(),
                            })
                        }
                        BackwardPolicy::Wait => {
                            let excess_ms = behind_ms
                                .saturating_sub(self.max_lead_units * self.layout.unit_ms());
                            std::thread::sleep(
                                Duration::from_millis(excess_ms.max(1)).min(MAX_BACKWARD_SLEEP),
                            );
                        }
                    }
                }
            }
            *now = self.now()?;
        }
    }

    /// Ids are only handed out if their time fits the layout and the guard covers it.
    #[inline]
    fn check_time(&self, time_units: u64, now_unix_ms: u64) -> Result<(), GenerateError> {
        if time_units > self.layout.max_time_units() {
            return Err(self.time_exhausted());
        }
        if let Some(guard) = &self.guard {
            guard.ensure(self.layout.unix_ms_of(time_units + 1), now_unix_ms)?;
        }
        Ok(())
    }

    fn time_exhausted(&self) -> GenerateError {
        GenerateError::TimeExhausted {
            last_unix_ms: self.layout.unix_ms_of(self.layout.max_time_units()),
        }
    }

    /// Clean shutdown: records the end of the last issued unit in the guard.
    pub fn close(&mut self, last_time_units: u64) {
        if let Some(guard) = self.guard.take() {
            // Best effort: if this write fails the mark on disk is the (higher) one
            // written ahead, which is still safe.
            let _ = guard.close(self.layout.unix_ms_of(last_time_units + 1));
        }
    }

    /// Stops as a crash would: the guard keeps its written-ahead mark.
    pub fn abandon(&mut self) {
        if let Some(guard) = self.guard.take() {
            guard.abandon();
        }
    }
}

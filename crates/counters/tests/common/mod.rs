//! What the log-of-record tests (`replicated.rs`, `restore.rs`) share: a sink that keeps
//! every batch a leader engine writes, as a stream would, and a leader writing to one.

use parking_lot::Mutex;
use shardkit_counters::{ColumnOptions, Engine, LogOfRecord, Options};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Keeps every batch it is given, in order, like a stream would; refuses them all
/// (as a stream refuses a fenced writer) while `refuse` is set.
#[derive(Default)]
pub struct Recorded {
    /// `(first lsn, end lsn, frames)` of each batch, in the order given.
    pub batches: Mutex<Vec<(u64, u64, Vec<u8>)>>,
    /// Answer every append with an error.
    pub refuse: AtomicBool,
}

impl LogOfRecord for Recorded {
    fn append(&self, first: u64, end: u64, frames: &[u8]) -> Result<(), String> {
        if self.refuse.load(Ordering::SeqCst) {
            return Err("wrong last sequence".into());
        }
        self.batches.lock().push((first, end, frames.to_vec()));
        Ok(())
    }
}

/// An engine in `dir` whose batches go to a new [`Recorded`], holding counter `counter`
/// with column `column` (8 bits inline, max 64).
pub fn recording_leader(
    dir: &Path,
    opts: Options,
    counter: &str,
    column: &str,
) -> (Engine, Arc<Recorded>) {
    let leader = Engine::open(dir, opts).unwrap();
    let sink = Arc::new(Recorded::default());
    leader.set_log_of_record(Some(sink.clone())).unwrap();
    leader.create_counter(counter).unwrap();
    leader
        .add_column(counter, column, ColumnOptions::new(8, 64))
        .unwrap();
    (leader, sink)
}

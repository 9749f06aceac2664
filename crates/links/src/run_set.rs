//! The runs of one of the segment store's two folded indexes (ids, URLs): which
//! [`SortedRun`] files hold it, look-ups across them, and the fold that moves a batch
//! of pairs out of redb into a new run, merging it with the newest runs of similar
//! size so that a look-up meets a handful of runs, not one per fold.
//!
//! The runs that count are those named in redb (`link_meta`), so a fold is: write the
//! new run and fsync it, [`RunSet::install`] it (readers may now meet its pairs twice,
//! in redb and in the run, which callers tolerate), commit redb (pairs deleted there,
//! the new list of names recorded), then [`RunSet::finish`] (the merged runs dropped
//! and deleted). A crash anywhere leaves files that redb does not name: [`RunSet::open`]
//! deletes them.
//!
//! Pairs are never removed from a run: a deleted link's id stays until a merge would
//! drop it, so callers check what a pair points at (the record's own id or URL).

use crate::error::StoreError;
use crate::sorted_run::{RunCursor, RunWriter, SortedRun};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

/// A run is merged into the fold when it holds at most this many times the pairs
/// gathered so far: runs then grow geometrically and a look-up reads a few of them.
const MERGE_RATIO: u64 = 2;

/// The runs of one index, oldest (largest) first.
pub(crate) struct RunSet {
    dir: PathBuf,
    prefix: &'static str,
    runs: RwLock<Arc<Vec<Arc<SortedRun>>>>,
    /// The largest `a` in any run (0 when none): a pair above it is in no run.
    max_a: AtomicU64,
}

/// A fold written and installed, not yet final.
pub(crate) struct Fold {
    new: Arc<SortedRun>,
    taken: Vec<Arc<SortedRun>>,
    /// The names (comma-separated) to record in redb for the runs after this fold.
    pub(crate) names: String,
}

fn file_name(run: &SortedRun) -> String {
    run.path()
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The comma-separated file names of `runs`.
fn names_of<'a>(runs: impl Iterator<Item = &'a Arc<SortedRun>>) -> String {
    runs.map(|r| file_name(r)).collect::<Vec<_>>().join(",")
}

impl RunSet {
    /// Opens the runs `names` (comma-separated, as recorded) of `prefix` in `dir`, and
    /// deletes any other run file of `prefix` there (left by a fold a crash cut short).
    pub(crate) fn open(dir: &Path, prefix: &'static str, names: &str) -> Result<Self, StoreError> {
        let names: Vec<&str> = names.split(',').filter(|n| !n.is_empty()).collect();
        let mut runs = Vec::with_capacity(names.len());
        let mut max_a = 0;
        for name in &names {
            let run = SortedRun::open(&dir.join(name))?;
            max_a = max_a.max(run.last_a()?.unwrap_or(0));
            runs.push(Arc::new(run));
        }
        let entries = std::fs::read_dir(dir)
            .map_err(|e| StoreError::Backend(format!("cannot list {}: {e}", dir.display())))?;
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let ours = name.starts_with(&format!("{prefix}-")) && name.ends_with(".run");
            if ours && !names.contains(&name.as_str()) {
                let _ = std::fs::remove_file(entry.path());
            }
        }
        Ok(Self {
            dir: dir.to_path_buf(),
            prefix,
            runs: RwLock::new(Arc::new(runs)),
            max_a: AtomicU64::new(max_a),
        })
    }

    /// The runs as they are now, for one reader's whole look-up.
    pub(crate) fn snapshot(&self) -> Arc<Vec<Arc<SortedRun>>> {
        Arc::clone(&self.runs.read().unwrap_or_else(|p| p.into_inner()))
    }

    /// The largest `a` of any run (0 when there is none).
    pub(crate) fn max_a(&self) -> u64 {
        self.max_a.load(Ordering::Acquire)
    }

    /// Every `b` paired with `a` in any run.
    pub(crate) fn get(&self, a: u64) -> Result<Vec<u64>, StoreError> {
        if a > self.max_a() {
            return Ok(Vec::new());
        }
        let mut out = Vec::new();
        for run in self.snapshot().iter() {
            out.extend(run.get(a)?);
        }
        Ok(out)
    }

    /// The pairs of every run with `a` at or above `from`, merged in order (a pair
    /// in two runs, only while a fold is finishing, comes twice).
    pub(crate) fn cursor(&self, from: u64) -> MergedCursor {
        MergedCursor::new(self.snapshot().iter().map(|r| r.cursor(from)).collect())
    }

    /// Pairs, bytes and runs.
    pub(crate) fn totals(&self) -> (u64, u64, u64) {
        let runs = self.snapshot();
        let (pairs, bytes) = runs
            .iter()
            .fold((0, 0), |(p, b), r| (p + r.pairs(), b + r.bytes()));
        (pairs, bytes, runs.len() as u64)
    }

    /// Writes `fresh` (sorted, distinct) merged with the newest runs of similar size
    /// into run file `{prefix}-{number}.run`, fsyncs it and its directory, and
    /// installs it beside the runs it replaces. Then the caller records
    /// [`Fold::names`] and calls [`RunSet::finish`], or [`RunSet::abandon`] if it could not.
    pub(crate) fn fold(&self, number: u64, fresh: &[(u64, u64)]) -> Result<Fold, StoreError> {
        let runs = self.snapshot();
        let mut gathered = fresh.len() as u64;
        let mut keep = runs.len();
        while keep > 0 && runs[keep - 1].pairs() <= MERGE_RATIO * gathered {
            keep -= 1;
            gathered += runs[keep].pairs();
        }
        let taken: Vec<Arc<SortedRun>> = runs[keep..].to_vec();
        let path = self.dir.join(format!("{}-{number:08}.run", self.prefix));
        let written = (|| {
            let mut writer = RunWriter::create(&path)?;
            let mut merged = MergedCursor::new(taken.iter().map(|r| r.cursor(0)).collect());
            let mut from_runs = merged.next_pair()?;
            let mut fresh = fresh.iter().copied().peekable();
            let mut last = None;
            loop {
                let pair = match (from_runs, fresh.peek().copied()) {
                    (None, None) => break,
                    (Some(r), Some(f)) if f < r => fresh.next(),
                    (Some(_), _) => std::mem::replace(&mut from_runs, merged.next_pair()?),
                    (None, Some(_)) => fresh.next(),
                };
                let Some(pair) = pair else { break };
                if last != Some(pair) {
                    writer.push(pair.0, pair.1)?;
                    last = Some(pair);
                }
            }
            let run = writer.finish()?;
            crate::segment_log::sync_dir(&self.dir)?;
            Ok::<_, StoreError>(run)
        })();
        let new = match written {
            Ok(run) => Arc::new(run),
            Err(e) => {
                let _ = std::fs::remove_file(&path);
                return Err(e);
            }
        };
        let names = names_of(runs[..keep].iter().chain(std::iter::once(&new)));
        let mut list = self.runs.write().unwrap_or_else(|p| p.into_inner());
        let mut grown = (**list).clone();
        grown.push(Arc::clone(&new));
        *list = Arc::new(grown);
        if let Some(last) = fresh.last() {
            self.max_a.fetch_max(last.0, Ordering::AcqRel);
        }
        Ok(Fold { new, taken, names })
    }

    /// The fold is recorded: the runs it merged are dropped and their files deleted
    /// (one left behind by an error here is deleted at the next open).
    pub(crate) fn finish(&self, fold: Fold) {
        let mut list = self.runs.write().unwrap_or_else(|p| p.into_inner());
        let kept: Vec<Arc<SortedRun>> = list
            .iter()
            .filter(|r| !fold.taken.iter().any(|t| Arc::ptr_eq(t, r)))
            .cloned()
            .collect();
        *list = Arc::new(kept);
        drop(list);
        for run in &fold.taken {
            let _ = std::fs::remove_file(run.path());
        }
    }

    /// The fold could not be recorded: its run is dropped and deleted.
    pub(crate) fn abandon(&self, fold: Fold) {
        let mut list = self.runs.write().unwrap_or_else(|p| p.into_inner());
        let kept: Vec<Arc<SortedRun>> = list
            .iter()
            .filter(|r| !Arc::ptr_eq(r, &fold.new))
            .cloned()
            .collect();
        *list = Arc::new(kept);
        drop(list);
        let _ = std::fs::remove_file(fold.new.path());
    }
}

/// Several runs' cursors read as one ordered stream.
pub(crate) struct MergedCursor {
    cursors: Vec<RunCursor>,
    heads: Vec<Option<(u64, u64)>>,
    started: bool,
}

impl MergedCursor {
    fn new(cursors: Vec<RunCursor>) -> Self {
        Self {
            heads: vec![None; cursors.len()],
            cursors,
            started: false,
        }
    }

    /// The smallest pair not yet returned, or `None` when every run is read.
    pub(crate) fn next_pair(&mut self) -> Result<Option<(u64, u64)>, StoreError> {
        if !self.started {
            for (head, cursor) in self.heads.iter_mut().zip(&mut self.cursors) {
                *head = cursor.next_pair()?;
            }
            self.started = true;
        }
        let Some(i) = (0..self.heads.len())
            .filter(|&i| self.heads[i].is_some())
            .min_by_key(|&i| self.heads[i])
        else {
            return Ok(None);
        };
        let pair = self.heads[i];
        self.heads[i] = self.cursors[i].next_pair()?;
        Ok(pair)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    #[test]
    fn folds_merge_into_few_runs_and_every_pair_stays_findable() {
        let dir = tempfile::tempdir().unwrap();
        let mut names = String::new();
        let mut all = BTreeSet::new();
        let mut most_runs = 0;
        for fold in 0..40u64 {
            let set = RunSet::open(dir.path(), "ids", &names).unwrap();
            let fresh: Vec<(u64, u64)> = (0..1000u64)
                .map(|i| (fold * 10_000 + i * 7, i ^ fold))
                .collect();
            all.extend(fresh.iter().copied());
            let done = set.fold(fold + 1, &fresh).unwrap();
            names = done.names.clone();
            set.finish(done);
            most_runs = most_runs.max(set.snapshot().len());
            assert_eq!(set.totals().0, all.len() as u64);
        }
        assert!(most_runs <= 8, "{most_runs} runs");
        let set = RunSet::open(dir.path(), "ids", &names).unwrap();
        for &(a, b) in all.iter().step_by(97) {
            assert_eq!(set.get(a).unwrap(), vec![b]);
        }
        assert_eq!(set.get(3).unwrap(), Vec::<u64>::new());
        let mut cursor = set.cursor(200_000);
        let mut seen = Vec::new();
        while let Some(p) = cursor.next_pair().unwrap() {
            seen.push(p);
        }
        let want: Vec<_> = all.range((200_000, 0)..).copied().collect();
        assert_eq!(seen, want);
        let files = std::fs::read_dir(dir.path()).unwrap().count();
        assert_eq!(files, set.snapshot().len(), "merged runs were deleted");
    }

    #[test]
    fn a_fold_never_recorded_leaves_nothing_behind_at_the_next_open() {
        let dir = tempfile::tempdir().unwrap();
        let set = RunSet::open(dir.path(), "urls", "").unwrap();
        let first = set.fold(1, &[(1, 1), (2, 2)]).unwrap();
        let names = first.names.clone();
        set.finish(first);
        // A second fold written and installed, then the process dies before redb names it.
        let second = set.fold(2, &[(3, 3)]).unwrap();
        assert_eq!(set.get(3).unwrap(), vec![3]);
        drop(second);
        drop(set);
        let set = RunSet::open(dir.path(), "urls", &names).unwrap();
        assert_eq!(set.get(3).unwrap(), Vec::<u64>::new());
        assert_eq!(set.get(2).unwrap(), vec![2]);
        let files: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(files, vec![names]);
    }
}

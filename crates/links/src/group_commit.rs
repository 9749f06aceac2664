//! [`GroupCommit`]: many callers' link writes share one durable commit.
//!
//! Every `POST /api/links` used to pay its own fsync, so fifty clients creating one
//! link each were served one fsync at a time. Here one writer thread takes every write
//! that is waiting when it is free (up to [`MAX_GROUP_LINKS`] links), hands them to
//! [`LinkStore::write_group`] (the embedded store: one transaction, one fsync; the
//! PostgreSQL store: one transaction per shard for the inserts) and then answers each
//! caller. A write is acknowledged only after the commit that holds it; a write that
//! arrives while a commit runs waits for that commit and its own, never longer.
//!
//! Inserts that arrive one after another are merged into one `insert_batch`, so the
//! order the writes arrived in is the order they apply in (an alias freed by a delete
//! can be taken by an insert behind it). If a merged insert fails as a whole (a
//! duplicate code, the disk), each caller's links are tried again alone, so only the
//! caller at fault sees the error.

use crate::error::StoreError;
use crate::model::Link;
use crate::store::{write_one, InsertOutcome, LinkStore, Write, Written};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::thread::JoinHandle;

/// A group stops taking more writes past this many links (a bulk import of
/// 10,000 links is still one write: the limit never splits a caller's batch).
pub const MAX_GROUP_LINKS: usize = 4096;

/// What the writer calls with a write's answer once its commit is done: a blocked
/// caller's channel, or an async caller's wake-up.
type Reply = Box<dyn FnOnce(Result<Written, StoreError>) + Send>;

/// One caller's write and where its answer goes.
struct Job {
    write: Write,
    reply: Reply,
}

/// Figures for the metrics page and the benchmark: how well writes are shared.
#[derive(Debug, Default)]
pub struct GroupStats {
    /// Commits made (groups written).
    pub groups: AtomicU64,
    /// Writes acknowledged through those commits.
    pub writes: AtomicU64,
}

/// A [`LinkStore`] whose writes (`insert_batch`, `replace`, `delete`) go through one
/// writer thread that commits whatever is waiting together. Reads go straight to the
/// store.
pub struct GroupCommit {
    inner: Arc<dyn LinkStore>,
    queue: Option<mpsc::Sender<Job>>,
    writer: Option<JoinHandle<()>>,
    stats: Arc<GroupStats>,
}

impl std::fmt::Debug for GroupCommit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GroupCommit")
            .field("stats", &self.stats)
            .finish()
    }
}

impl GroupCommit {
    /// The store reads go to, shared: for a read a caller hands to another thread
    /// (the redirect's disk reads, `spawn_blocking`), which must own what it reads from.
    pub fn reads(&self) -> Arc<dyn LinkStore> {
        Arc::clone(&self.inner)
    }

    /// Starts the writer thread over `inner`.
    pub fn new(inner: Arc<dyn LinkStore>) -> Self {
        let (queue, jobs) = mpsc::channel::<Job>();
        let stats = Arc::new(GroupStats::default());
        let writer = {
            let inner = Arc::clone(&inner);
            let stats = Arc::clone(&stats);
            std::thread::Builder::new()
                .name("link-writer".into())
                .spawn(move || write_loop(&*inner, &jobs, &stats))
                .expect("cannot start the link writer thread")
        };
        Self {
            inner,
            queue: Some(queue),
            writer: Some(writer),
            stats,
        }
    }

    /// How many commits and writes so far.
    pub fn stats(&self) -> &GroupStats {
        &self.stats
    }

    /// Queues `write`; `reply` is called (on the writer thread, so it must be quick)
    /// with the answer once the commit that holds it is done, or at once if the writer
    /// has stopped. Async callers pass a channel's sender and await, holding no thread.
    pub fn submit_then(
        &self,
        write: Write,
        reply: impl FnOnce(Result<Written, StoreError>) + Send + 'static,
    ) {
        let job = Job {
            write,
            reply: Box::new(reply),
        };
        let refused = match &self.queue {
            Some(queue) => queue.send(job).err().map(|e| e.0),
            None => Some(job),
        };
        if let Some(job) = refused {
            (job.reply)(Err(stopped()));
        }
    }

    /// Queues `write` and waits for the commit that holds it.
    fn submit(&self, write: Write) -> Result<Written, StoreError> {
        let (reply, answer) = mpsc::sync_channel(1);
        self.submit_then(write, move |result| {
            let _ = reply.send(result);
        });
        answer.recv().map_err(|_| stopped())?
    }
}

impl Drop for GroupCommit {
    /// Waits for the writer to finish what is queued, so the store is closed (its
    /// file lock released) when this returns.
    fn drop(&mut self) {
        self.queue.take();
        if let Some(writer) = self.writer.take() {
            let _ = writer.join();
        }
    }
}

/// The writer thread: one group per turn until every sender is gone.
fn write_loop(store: &dyn LinkStore, jobs: &mpsc::Receiver<Job>, stats: &GroupStats) {
    while let Ok(first) = jobs.recv() {
        let mut group = vec![first];
        let mut links = links_in(&group[0].write);
        while links < MAX_GROUP_LINKS {
            match jobs.try_recv() {
                Ok(job) => {
                    links += links_in(&job.write);
                    group.push(job);
                }
                Err(_) => break,
            }
        }
        let answers = commit_group(store, group.iter().map(|j| &j.write));
        stats.groups.fetch_add(1, Ordering::Relaxed);
        stats
            .writes
            .fetch_add(group.len() as u64, Ordering::Relaxed);
        for (job, answer) in group.into_iter().zip(answers) {
            (job.reply)(answer);
        }
    }
}

fn stopped() -> StoreError {
    StoreError::Backend("the link writer has stopped".into())
}

fn links_in(write: &Write) -> usize {
    match write {
        Write::Insert(links) => links.len(),
        Write::Replace(_) | Write::Delete(_) => 1,
    }
}

/// A run of callers' inserts merged into one, with where each caller's links sit.
struct Merged {
    links: Vec<Link>,
    spans: Vec<std::ops::Range<usize>>,
}

/// Applies the writes in order, merging neighbouring inserts; one answer per write.
fn commit_group<'a>(
    store: &dyn LinkStore,
    writes: impl Iterator<Item = &'a Write>,
) -> Vec<Result<Written, StoreError>> {
    // Each entry of `plan` is one write given to the store, with the callers it serves.
    let mut plan: Vec<(Write, Option<Vec<std::ops::Range<usize>>>)> = Vec::new();
    let mut run: Option<Merged> = None;
    let flush = |run: &mut Option<Merged>, plan: &mut Vec<_>| {
        if let Some(m) = run.take() {
            plan.push((Write::Insert(m.links), Some(m.spans)));
        }
    };
    for write in writes {
        match write {
            Write::Insert(links) => {
                let m = run.get_or_insert_with(|| Merged {
                    links: Vec::new(),
                    spans: Vec::new(),
                });
                let start = m.links.len();
                m.links.extend(links.iter().cloned());
                m.spans.push(start..m.links.len());
            }
            other => {
                flush(&mut run, &mut plan);
                plan.push((other.clone(), None));
            }
        }
    }
    flush(&mut run, &mut plan);
    let writes: Vec<Write> = plan.iter().map(|(w, _)| w.clone()).collect();
    let results = store.write_group(&writes);
    let mut answers = Vec::new();
    for ((write, spans), result) in plan.into_iter().zip(results) {
        let Some(spans) = spans else {
            answers.push(result);
            continue;
        };
        let Write::Insert(links) = write else {
            unreachable!("only inserts are merged")
        };
        match result {
            Ok(Written::Inserted(outcomes)) if outcomes.len() == links.len() => {
                for span in spans {
                    answers.push(Ok(Written::Inserted(outcomes[span].to_vec())));
                }
            }
            // The merged insert failed as a whole: each caller's links alone.
            _ => {
                for span in spans {
                    answers.push(write_one(store, &Write::Insert(links[span].to_vec())));
                }
            }
        }
    }
    answers
}

/// The outcomes of an insert's answer.
pub fn expect_inserted(written: Written) -> Result<Vec<InsertOutcome>, StoreError> {
    match written {
        Written::Inserted(outcomes) => Ok(outcomes),
        other => Err(StoreError::Backend(format!(
            "the link writer answered {other:?} to an insert"
        ))),
    }
}

impl LinkStore for GroupCommit {
    fn insert_batch(&self, links: &[Link]) -> Result<Vec<InsertOutcome>, StoreError> {
        expect_inserted(self.submit(Write::Insert(links.to_vec()))?)
    }

    fn assign_ids(&self, links: &mut [Link]) -> Result<(), StoreError> {
        self.inner.assign_ids(links)
    }

    fn get(&self, id: u64) -> Result<Option<Link>, StoreError> {
        self.inner.get(id)
    }

    fn resolve(&self, path: &str) -> Result<Option<Link>, StoreError> {
        self.inner.resolve(path)
    }

    fn resolve_cached(&self, path: &str) -> Option<Result<Option<Link>, StoreError>> {
        self.inner.resolve_cached(path)
    }

    fn held_codes(
        &self,
        codes: &[String],
    ) -> Result<std::collections::HashSet<String>, StoreError> {
        self.inner.held_codes(codes)
    }

    fn find_reusable(&self, url: &str, domain: Option<&str>) -> Result<Option<Link>, StoreError> {
        self.inner.find_reusable(url, domain)
    }

    fn replace(&self, link: &Link) -> Result<(), StoreError> {
        match self.submit(Write::Replace(link.clone()))? {
            Written::Replaced => Ok(()),
            other => Err(StoreError::Backend(format!(
                "the link writer answered {other:?} to a replace"
            ))),
        }
    }

    fn delete(&self, id: u64) -> Result<Option<Link>, StoreError> {
        match self.inner.get(id)? {
            Some(link) => self.delete_link(&link),
            None => Ok(None),
        }
    }

    fn delete_link(&self, link: &Link) -> Result<Option<Link>, StoreError> {
        match self.submit(Write::Delete(link.clone()))? {
            Written::Deleted(old) => Ok(old),
            other => Err(StoreError::Backend(format!(
                "the link writer answered {other:?} to a delete"
            ))),
        }
    }

    fn list(
        &self,
        tag: Option<&str>,
        after: Option<u64>,
        limit: usize,
    ) -> Result<Vec<Link>, StoreError> {
        self.inner.list(tag, after, limit)
    }

    fn count(&self) -> Result<u64, StoreError> {
        self.inner.count()
    }

    fn is_local(&self) -> bool {
        self.inner.is_local()
    }

    fn write_group(&self, writes: &[Write]) -> Vec<Result<Written, StoreError>> {
        writes.iter().map(|w| self.submit(w.clone())).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conformance::sample_link;
    use crate::RedbLinkStore;

    fn store() -> (tempfile::TempDir, GroupCommit) {
        let dir = tempfile::tempdir().unwrap();
        let inner = RedbLinkStore::open(dir.path().join("links.redb")).unwrap();
        (dir, GroupCommit::new(Arc::new(inner)))
    }

    #[test]
    fn passes_the_conformance_suite() {
        let (_dir, store) = store();
        crate::conformance::run(&store);
    }

    /// A store whose commits take 100 ms, so writers pile up behind each one.
    struct SlowStore {
        inner: RedbLinkStore,
        sizes: std::sync::Mutex<Vec<usize>>,
    }

    impl LinkStore for SlowStore {
        fn insert_batch(&self, links: &[Link]) -> Result<Vec<InsertOutcome>, StoreError> {
            self.inner.insert_batch(links)
        }
        fn get(&self, id: u64) -> Result<Option<Link>, StoreError> {
            self.inner.get(id)
        }
        fn resolve(&self, path: &str) -> Result<Option<Link>, StoreError> {
            self.inner.resolve(path)
        }
        fn find_reusable(
            &self,
            url: &str,
            domain: Option<&str>,
        ) -> Result<Option<Link>, StoreError> {
            self.inner.find_reusable(url, domain)
        }
        fn replace(&self, link: &Link) -> Result<(), StoreError> {
            self.inner.replace(link)
        }
        fn delete(&self, id: u64) -> Result<Option<Link>, StoreError> {
            self.inner.delete(id)
        }
        fn list(&self, t: Option<&str>, a: Option<u64>, l: usize) -> Result<Vec<Link>, StoreError> {
            self.inner.list(t, a, l)
        }
        fn count(&self) -> Result<u64, StoreError> {
            self.inner.count()
        }
        fn write_group(&self, writes: &[Write]) -> Vec<Result<Written, StoreError>> {
            std::thread::sleep(std::time::Duration::from_millis(100));
            let links = writes.iter().map(links_in).sum();
            self.sizes.lock().unwrap().push(links);
            self.inner.write_group(writes)
        }
    }

    #[test]
    fn writers_waiting_behind_a_commit_share_the_next_one() {
        let dir = tempfile::tempdir().unwrap();
        let slow = Arc::new(SlowStore {
            inner: RedbLinkStore::open(dir.path().join("links.redb")).unwrap(),
            sizes: Default::default(),
        });
        let store = Arc::new(GroupCommit::new(Arc::clone(&slow) as Arc<dyn LinkStore>));
        let threads: Vec<_> = (0..16u64)
            .map(|t| {
                let store = Arc::clone(&store);
                std::thread::spawn(move || {
                    for i in 0..5u64 {
                        let id = t * 100 + i + 1;
                        let link = sample_link(id, &format!("t{id:06}"), "https://e.com/");
                        assert_eq!(
                            store.insert_batch(&[link]).unwrap(),
                            vec![InsertOutcome::Inserted]
                        );
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(store.count().unwrap(), 80);
        assert_eq!(store.stats().writes.load(Ordering::Relaxed), 80);
        let sizes = slow.sizes.lock().unwrap().clone();
        assert_eq!(sizes.iter().sum::<usize>(), 80);
        // 16 writers, each waiting for its last commit: about 16 commits of 5, not 80.
        assert!(
            sizes.len() < 40,
            "{} commits for 80 links: {sizes:?}",
            sizes.len()
        );
    }

    #[test]
    fn a_duplicate_in_a_merged_insert_fails_only_its_caller() {
        let (_dir, store) = store();
        let first = sample_link(1, "t000001", "https://e.com/1");
        store.insert_batch(std::slice::from_ref(&first)).unwrap();
        let mut again = sample_link(2, "t000002", "https://e.com/2");
        again.code = first.code.clone();
        let fresh = sample_link(3, "t000003", "https://e.com/3");
        let answers = commit_group(
            &*store.inner,
            [
                Write::Insert(vec![again]),
                Write::Insert(vec![fresh.clone()]),
            ]
            .iter(),
        );
        assert!(
            matches!(answers[0], Err(StoreError::Duplicate(_))),
            "{answers:?}"
        );
        assert_eq!(
            answers[1],
            Ok(Written::Inserted(vec![InsertOutcome::Inserted]))
        );
        assert_eq!(store.resolve(&fresh.code).unwrap(), Some(fresh));
    }

    #[test]
    fn a_delete_frees_an_alias_for_an_insert_behind_it_in_the_same_group() {
        let (_dir, store) = store();
        let mut old = sample_link(1, "t000001", "https://e.com/old");
        old.alias = Some("launch-day".into());
        store.insert_batch(std::slice::from_ref(&old)).unwrap();
        let mut new = sample_link(2, "t000002", "https://e.com/new");
        new.alias = Some("launch-day".into());
        let answers = commit_group(
            &*store.inner,
            [Write::Delete(old.clone()), Write::Insert(vec![new.clone()])].iter(),
        );
        assert_eq!(answers[0], Ok(Written::Deleted(Some(old))));
        assert_eq!(
            answers[1],
            Ok(Written::Inserted(vec![InsertOutcome::Inserted]))
        );
        assert_eq!(store.resolve("launch-day").unwrap(), Some(new));
    }
}

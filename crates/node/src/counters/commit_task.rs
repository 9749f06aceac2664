//! Group commit for the RESP server under fsync `always`.
//!
//! A connection applies every write of a batch at once and then has to wait until the
//! log holds them on disk before it may answer. Blocking a runtime thread on that wait
//! (one per connection) costs a thread handoff per connection per fsync; instead, the
//! connection asks here and awaits. One task does the fsyncs back to back, each
//! covering everything appended before it began, and wakes every waiter after each.
//! So 50 connections with 16 pipelined writes each share about one fsync per round.
//!
//! The task lets every connection already ready go first (`yield_now`), so a round
//! covers one whole turn of the event loop, and on the one-thread RESP runtime
//! ([`crate::resp_runtime`]) with the local log it fsyncs in place, as Redis does.
//! With the JetStream log the commit hands its batch to the publisher and awaits the
//! ack ([`shardkit_counters::Engine::commit_then`]): no thread is parked per publish,
//! and a cluster node's groups, each with a task like this on the RESP runtime beside
//! the connections, all commit after the turn's connections have written and publish
//! before any of them waits.

use super::Counters;
use shardkit_counters::Pending;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use tokio::sync::{watch, Notify};

/// The waiters' side of the fsync task: what is wanted, and a signal after each fsync.
pub struct GroupCommit {
    /// Highest log position any connection waits for.
    wanted: AtomicU64,
    /// Wakes the fsync task when `wanted` rose.
    wake: Notify,
    /// Bumped after every fsync attempt, so waiters re-check.
    done: watch::Sender<u64>,
    /// Set when the log failed: nothing waiting can be acknowledged any more.
    failed: AtomicBool,
}

impl Default for GroupCommit {
    fn default() -> Self {
        Self {
            wanted: AtomicU64::new(0),
            wake: Notify::new(),
            done: watch::channel(0).0,
            failed: AtomicBool::new(false),
        }
    }
}

impl std::fmt::Debug for GroupCommit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GroupCommit")
            .field("wanted", &self.wanted.load(Ordering::Relaxed))
            .finish()
    }
}

/// Why a wait ended without the writes being durable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NotDurable;

impl GroupCommit {
    /// Asks for the writes behind `pending` to be made durable without waiting (so
    /// several stores' commits can run side by side before each is awaited).
    pub fn ask(&self, pending: Pending) {
        if self.wanted.fetch_max(pending.position(), Ordering::AcqRel) < pending.position() {
            self.wake.notify_one();
        }
    }

    /// Waits until the writes behind `pending` are fsynced. `Err` means they may be
    /// lost (the log failed, or the server stopped): the caller must not acknowledge them.
    pub async fn wait(&self, counters: &Counters, pending: Pending) -> Result<(), NotDurable> {
        let engine = &counters.engine;
        // Subscribe before asking, so an fsync finishing in between is not missed.
        let mut done = self.done.subscribe();
        self.wanted.fetch_max(pending.position(), Ordering::AcqRel);
        self.wake.notify_one();
        loop {
            if engine.is_durable(pending) {
                return Ok(());
            }
            if self.failed.load(Ordering::Acquire) {
                return Err(NotDurable);
            }
            done.changed().await.map_err(|_| NotDurable)?;
        }
    }

    /// The fsync task of store `counters` (whose log is on JetStream when `jetstream`):
    /// runs until `stop` fires and nobody waits any more.
    pub async fn run(counters: Arc<Counters>, jetstream: bool, mut stop: watch::Receiver<bool>) {
        let this = &counters.group_commit;
        // On the one-thread RESP runtime with the local log, the fsync runs right here,
        // between two turns of the event loop, as Redis's does: no handoff to another
        // thread and back. A JetStream publish waits on the network: the batch is handed
        // to the publisher and its ack awaited. A multi-thread runtime with the local log
        // has other workers to keep busy: it fsyncs on a blocking thread.
        let inline = !jetstream
            && tokio::runtime::Handle::current().runtime_flavor()
                == tokio::runtime::RuntimeFlavor::CurrentThread;
        loop {
            let wanted = this.wanted.load(Ordering::Acquire);
            let target = Pending::at(wanted);
            if wanted > 0 && !counters.engine.is_durable(target) {
                // Let every connection the runtime already has ready apply its batch
                // first, so one commit covers them all (Redis fsyncs once per turn of its
                // event loop for the same reason): `yield_now` runs this task again only
                // after the tasks queued now and the next poll of the sockets.
                tokio::task::yield_now().await;
                let wanted = this.wanted.load(Ordering::Acquire);
                let target = Pending::at(wanted);
                let result = if inline {
                    Ok(counters.engine.commit(target))
                } else if jetstream {
                    let (stored, landed) = tokio::sync::oneshot::channel();
                    counters.engine.commit_then(target, move |result| {
                        let _ = stored.send(result);
                    });
                    // A callback dropped unanswered fails like a refused batch.
                    Ok(landed.await.unwrap_or_else(|_| {
                        Err(shardkit_counters::Error::LogFailed(
                            "the log of record dropped the batch".into(),
                        ))
                    }))
                } else {
                    let worker = Arc::clone(&counters);
                    tokio::task::spawn_blocking(move || worker.engine.commit(target)).await
                };
                if !matches!(result, Ok(Ok(()))) {
                    tracing::error!("counter log fsync failed; writes are refused from now on");
                    this.failed.store(true, Ordering::Release);
                }
                this.done.send_modify(|n| *n = n.wrapping_add(1));
                if this.failed.load(Ordering::Acquire) {
                    return;
                }
                continue;
            }
            tokio::select! {
                _ = this.wake.notified() => {}
                _ = stop.changed() => {
                    if *stop.borrow() {
                        return;
                    }
                }
            }
        }
    }
}

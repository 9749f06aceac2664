//! Where a counter store's NATS tasks run, and how they are stopped together.
//!
//! The server's own store runs them on a runtime of its own; a cluster node's group
//! stores all run theirs on the node's one runtime (one thread and one timer for every
//! group, rather than one of each per group: an idle node with 64 groups woke 64
//! runtimes). Closing one group then stops that group's tasks alone: every task is
//! spawned through its store's [`Tasks`], which tracks it and ends it when told.

use std::future::Future;
use std::time::Duration;
use tokio::runtime::Handle;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// One store's tasks: the runtime they run on, and the means to end them all.
#[derive(Clone, Debug)]
pub struct Tasks {
    handle: Handle,
    tracker: TaskTracker,
    stop: CancellationToken,
}

impl Tasks {
    /// Tasks spawned on `handle`'s runtime.
    pub fn on(handle: Handle) -> Self {
        Self {
            handle,
            tracker: TaskTracker::new(),
            stop: CancellationToken::new(),
        }
    }

    /// Runs `task` until it ends or the store's tasks are stopped, whichever is first.
    pub fn spawn<F>(&self, task: F) -> JoinHandle<Option<F::Output>>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        self.tracker.spawn_on(
            self.stop.clone().run_until_cancelled_owned(task),
            &self.handle,
        )
    }

    /// Tells every task to end at its next await; [`Tasks::stop`] also waits.
    pub fn cancel(&self) {
        self.stop.cancel();
        self.tracker.close();
    }

    /// Ends every task and waits up to `within` for them to be gone (so the state they
    /// hold is let go). Call it from a blocking thread, with the runtime running.
    pub fn stop(&self, within: Duration) {
        self.cancel();
        self.wait_up_to(within, self.tracker.wait());
    }

    /// Waits on `what` up to `within` from a blocking thread, the timer made inside the
    /// runtime (so the caller need not be in its context).
    pub fn wait_up_to<F: Future>(&self, within: Duration, what: F) {
        let _ = self
            .handle
            .block_on(async { tokio::time::timeout(within, what).await });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stopping_ends_one_stores_tasks_and_leaves_the_others_running() {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let (one, other) = (
            Tasks::on(runtime.handle().clone()),
            Tasks::on(runtime.handle().clone()),
        );
        let forever = || std::future::pending::<()>();
        let stopped = one.spawn(forever());
        let running = other.spawn(forever());
        one.stop(Duration::from_secs(5));
        // `stop` returns once the task's future is dropped (what it held let go); its
        // JoinHandle turns finished a moment later, on the worker thread, so it is
        // awaited (bounded) rather than read at once: `is_finished()` right here lost
        // that race on a loaded machine (CI, 2026-11-27).
        let ended =
            runtime.block_on(async { tokio::time::timeout(Duration::from_secs(5), stopped).await });
        assert!(
            ended
                .expect("the stopped store's task still runs")
                .unwrap()
                .is_none(),
            "a stopped task reports that it did not finish"
        );
        assert!(
            !running.is_finished(),
            "another store's task was stopped too"
        );
        let finished = other.spawn(async { 7 });
        assert_eq!(runtime.block_on(finished).unwrap(), Some(7));
    }
}

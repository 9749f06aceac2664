//! The runtime the RESP connections and their group commit run on.
//!
//! With `resp_threads = 1` (the default) it is tokio's current-thread scheduler on one
//! thread of its own, `shardkit-resp`: Redis's shape, one event loop. The difference
//! that matters is the order tasks run in. Tokio's multi-thread scheduler runs a task
//! woken by the running task next (its "LIFO slot"), so the group commit task, woken by
//! the first connection that appended a write, committed after that one connection and
//! every other connection ready in the same turn waited for the next commit: under fsync
//! `always` that was one fsync per ~8 batches where Redis, which fsyncs once per turn of
//! its event loop, makes one per ~50 (strace, 50 clients, `-P 16`). The current-thread
//! scheduler queues woken tasks in order, so the commit task runs after every
//! connection already ready, and one fsync covers them all.
//!
//! With more threads it is the multi-thread scheduler, as before.

use std::future::Future;
use tokio::task::JoinHandle;

/// The RESP runtime: spawn onto it, then [`RespRuntime::shutdown`] it.
pub struct RespRuntime {
    runtime: Option<tokio::runtime::Runtime>,
    /// The current-thread case: the thread driving it, and the signal that ends it.
    driver: Option<(
        std::thread::JoinHandle<()>,
        tokio::sync::oneshot::Sender<()>,
    )>,
    handle: tokio::runtime::Handle,
}

impl std::fmt::Debug for RespRuntime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RespRuntime")
            .field("own_thread", &self.driver.is_some())
            .finish()
    }
}

impl RespRuntime {
    /// A runtime of `threads` workers (at least 1): one thread of its own running the
    /// current-thread scheduler for 1, the multi-thread scheduler otherwise.
    pub fn start(threads: usize) -> std::io::Result<Self> {
        if threads > 1 {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(threads)
                .thread_name("shardkit-resp")
                .enable_all()
                .build()?;
            let handle = runtime.handle().clone();
            return Ok(Self {
                runtime: Some(runtime),
                driver: None,
                handle,
            });
        }
        let runtime = tokio::runtime::Builder::new_current_thread()
            .thread_name("shardkit-resp")
            .enable_all()
            .build()?;
        let handle = runtime.handle().clone();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("shardkit-resp".into())
            .spawn(move || {
                // Tasks spawned onto a current-thread runtime run while some thread is
                // inside its `block_on`: this one, until told to stop.
                runtime.block_on(async {
                    let _ = stopped.await;
                });
                // Whatever is still spawned is dropped without waiting.
                runtime.shutdown_background();
            })?;
        Ok(Self {
            runtime: None,
            driver: Some((thread, stop)),
            handle,
        })
    }

    /// A handle to spawn onto this runtime from elsewhere (a cluster node's group
    /// commits, which its connections wait on).
    pub fn handle(&self) -> tokio::runtime::Handle {
        self.handle.clone()
    }

    /// Runs `future` on this runtime.
    pub fn spawn<F>(&self, future: F) -> JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        self.handle.spawn(future)
    }

    /// Stops the runtime without waiting for tasks still on it (call it once
    /// everything that mattered has been awaited). Must not be called from inside a
    /// runtime's context for the multi-thread case; the caller is an async task on the
    /// main runtime, so the thread join happens on a blocking thread.
    pub async fn shutdown(mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
        if let Some((thread, stop)) = self.driver.take() {
            let _ = stop.send(());
            let _ = tokio::task::spawn_blocking(move || thread.join()).await;
        }
    }
}

/// A runtime dropped without [`RespRuntime::shutdown`] (an error on the way out of
/// `serve` before the shutdown path, say a cluster node that cannot reach NATS) stops
/// without waiting: tokio would panic dropping a multi-thread runtime inside the async
/// context the server runs in, where a clear error is due.
impl Drop for RespRuntime {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
        if let Some((_, stop)) = self.driver.take() {
            let _ = stop.send(());
        }
    }
}

/// Runs `work`, which may block (waits for the disk or for JetStream), from a task on
/// the RESP runtime. On the multi-thread scheduler it is `block_in_place`, which moves
/// this worker's other tasks to another thread first; the one-thread event loop has
/// nowhere to move them (`block_in_place` would panic there), so it runs in place and
/// the loop waits, as Redis's does for a write that must reach the disk.
pub fn block_here<T>(work: impl FnOnce() -> T) -> T {
    let multi_thread = tokio::runtime::Handle::try_current()
        .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread);
    if multi_thread {
        tokio::task::block_in_place(work)
    } else {
        work()
    }
}

#[cfg(test)]
mod tests {
    use super::RespRuntime;

    #[tokio::test]
    async fn a_runtime_dropped_in_async_code_stops_without_a_panic() {
        for threads in [1, 2] {
            let runtime = RespRuntime::start(threads).unwrap();
            assert_eq!(runtime.spawn(async { 7 }).await.unwrap(), 7);
            drop(runtime);
        }
    }
}

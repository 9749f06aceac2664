//! A bridge from synchronous callers to the async database drivers.
//!
//! `shardkit-ids`'s `TicketStore` is a synchronous trait: the segment allocator calls
//! it from its own background loader thread and, on a miss, from the caller's thread.
//! The drivers (mysql_async, tokio-postgres) are async. A store therefore owns a small
//! tokio runtime (one worker thread) that drives its connections, and a call hands its
//! future to that runtime and waits on a plain channel. Unlike `Runtime::block_on`,
//! this works from any thread, including a tokio worker of the caller's own runtime
//! (where it blocks that thread for one round trip, as any sync store does; the server
//! already calls ticket stores under `block_in_place`).

use std::future::Future;

/// Owns the runtime that drives a store's connections; see the module docs for why.
#[derive(Debug)]
pub struct Bridge {
    /// Always `Some` until dropped.
    runtime: Option<tokio::runtime::Runtime>,
}

impl Bridge {
    /// A runtime with one worker thread named `thread_name`.
    pub fn new(thread_name: &str) -> std::io::Result<Self> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name(thread_name)
            .enable_all()
            .build()?;
        Ok(Self {
            runtime: Some(runtime),
        })
    }

    /// Runs `future` on the bridge's runtime and waits for its output. `None` if the
    /// runtime dropped the task (it panicked or the runtime is shutting down).
    pub fn run<F>(&self, future: F) -> Option<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        self.runtime.as_ref()?.spawn(async move {
            let _ = tx.send(future.await);
        });
        rx.recv().ok()
    }

    /// A handle for spawning on the bridge's runtime (pools are built inside it).
    pub fn handle(&self) -> tokio::runtime::Handle {
        match &self.runtime {
            Some(runtime) => runtime.handle().clone(),
            None => unreachable!("the runtime is only taken when the bridge is dropped"),
        }
    }
}

impl Drop for Bridge {
    /// Shuts the runtime down without waiting: dropping a runtime the ordinary way
    /// panics inside another runtime's async context, where a store may well be dropped.
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Bridge;

    #[test]
    fn runs_from_plain_and_async_threads() {
        let bridge = std::sync::Arc::new(Bridge::new("test-bridge").unwrap());
        assert_eq!(bridge.run(async { 1 + 1 }), Some(2));
        let outer = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let b = bridge.clone();
        assert_eq!(outer.block_on(async move { b.run(async { 3 }) }), Some(3));
        // Dropping the last handle inside an async context must not panic.
        outer.block_on(async move { drop(bridge) });
    }
}

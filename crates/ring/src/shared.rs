//! A ring many threads read while one of them replaces it.
//!
//! Lookups must not wait for a rebuild (building a 1000-node ring takes milliseconds),
//! and must never see half a ring. So the ring stays immutable and lives behind an
//! atomic pointer swap (`arc-swap`): readers load the current `Arc<Ring>` without a lock,
//! a writer builds the next ring off to the side and swaps it in; a reader holding the
//! old ring finishes its lookup on it.

use crate::node::NodeSpec;
use crate::ring::Ring;
use crate::RingError;
use arc_swap::{ArcSwap, Guard};
use std::sync::Arc;

/// A [`Ring`] shared between threads, replaced atomically.
#[derive(Debug)]
pub struct SharedRing {
    current: ArcSwap<Ring>,
}

impl SharedRing {
    /// Shares `ring` as the current ring.
    pub fn new(ring: Ring) -> Self {
        Self {
            current: ArcSwap::from_pointee(ring),
        }
    }

    /// The current ring, for one or a few lookups (cheap, lock-free).
    pub fn load(&self) -> Guard<Arc<Ring>> {
        self.current.load()
    }

    /// The current ring as an owned `Arc`, to keep across a longer piece of work.
    pub fn snapshot(&self) -> Arc<Ring> {
        self.current.load_full()
    }

    /// Replaces the current ring.
    pub fn store(&self, ring: Ring) {
        self.current.store(Arc::new(ring));
    }

    /// Builds the next ring from the current one with `change` and swaps it in, retrying
    /// if another writer swapped first, so no writer's change is lost.
    pub fn update(
        &self,
        change: impl Fn(&Ring) -> Result<Ring, RingError>,
    ) -> Result<(), RingError> {
        loop {
            let cur = self.current.load_full();
            let next = Arc::new(change(&cur)?);
            let prev = self.current.compare_and_swap(&cur, next);
            if Arc::ptr_eq(&prev, &cur) {
                return Ok(());
            }
        }
    }

    /// Adds a node (see [`Ring::with_node`]).
    pub fn add_node(&self, node: NodeSpec) -> Result<(), RingError> {
        self.update(|r| r.with_node(node.clone()))
    }

    /// Removes a node (see [`Ring::without_node`]).
    pub fn remove_node(&self, name: &str) -> Result<(), RingError> {
        self.update(|r| r.without_node(name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node::numbered_nodes;
    use std::sync::atomic::{AtomicBool, Ordering};

    #[test]
    fn readers_see_a_whole_ring_while_writers_swap() {
        let shared = Arc::new(SharedRing::new(Ring::new(numbered_nodes(4), 20).unwrap()));
        let stop = Arc::new(AtomicBool::new(false));
        let readers: Vec<_> = (0..3)
            .map(|t| {
                let (shared, stop) = (Arc::clone(&shared), Arc::clone(&stop));
                std::thread::spawn(move || {
                    let mut lookups = 0u64;
                    let mut key = t;
                    while !stop.load(Ordering::Relaxed) || lookups < 1000 {
                        let ring = shared.load();
                        let node = ring.node_for_u64(key);
                        // Whatever ring we loaded, its answer is one of its own nodes.
                        assert!(ring.nodes().iter().any(|n| n.name == node));
                        key = key.wrapping_add(7);
                        lookups += 1;
                    }
                    lookups
                })
            })
            .collect();
        // Many swaps while the readers run: each round adds a node and removes one.
        for i in 4..204 {
            shared.add_node(NodeSpec::new(format!("node-{i}"))).unwrap();
            shared.remove_node(&format!("node-{}", i - 4)).unwrap();
        }
        stop.store(true, Ordering::Relaxed);
        for r in readers {
            assert!(r.join().unwrap() >= 1000);
        }
        let names: Vec<_> = shared
            .load()
            .nodes()
            .iter()
            .map(|n| n.name.clone())
            .collect();
        assert_eq!(names, ["node-200", "node-201", "node-202", "node-203"]);
    }

    #[test]
    fn failed_update_leaves_the_ring_alone() {
        let shared = SharedRing::new(Ring::new(numbered_nodes(2), 4).unwrap());
        assert_eq!(
            shared.remove_node("nope"),
            Err(RingError::UnknownNode("nope".into()))
        );
        assert_eq!(shared.snapshot().nodes().len(), 2);
    }
}

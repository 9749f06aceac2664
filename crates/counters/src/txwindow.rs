//! The window of recently applied transaction ids, for idempotent increments.
//!
//! A transaction id is remembered per (counter, key): the same id sent again for the
//! same row within the window is a retry and is not counted again. Entries carry the
//! wall-clock time (ms since the Unix epoch) they were applied, which is also written in
//! the log record, so the window survives restarts.

use std::collections::VecDeque;

use crate::hash::FastMap;
use crate::key::OwnedKey;

/// Applied transaction ids of one stripe, oldest first in `order`.
#[derive(Debug, Clone, Default)]
pub(crate) struct TxWindow {
    map: FastMap<(OwnedKey, Box<str>), u64>,
    order: VecDeque<(u64, OwnedKey, Box<str>)>,
}

impl TxWindow {
    /// Whether `txid` was applied to `key` (and not yet expired).
    pub(crate) fn contains(&self, key: &OwnedKey, txid: &str) -> bool {
        // The map is keyed by owned values; build one for the look-up (txid path only).
        self.map.contains_key(&(key.clone(), Box::from(txid)))
    }

    /// Records that `txid` was applied to `key` at `at_ms`.
    pub(crate) fn insert(&mut self, key: OwnedKey, txid: &str, at_ms: u64) {
        let tx: Box<str> = txid.into();
        if self.map.insert((key.clone(), tx.clone()), at_ms).is_none() {
            self.order.push_back((at_ms, key, tx));
        }
    }

    /// Forgets ids applied before `cutoff_ms`.
    pub(crate) fn expire(&mut self, cutoff_ms: u64) {
        while let Some((at, _, _)) = self.order.front() {
            if *at >= cutoff_ms {
                break;
            }
            if let Some((_, k, t)) = self.order.pop_front() {
                self.map.remove(&(k, t));
            }
        }
    }

    /// Entries held.
    pub(crate) fn len(&self) -> usize {
        self.map.len()
    }

    /// Every entry, oldest first (for snapshots).
    pub(crate) fn iter(&self) -> impl Iterator<Item = &(u64, OwnedKey, Box<str>)> {
        self.order.iter()
    }

    /// Rough heap bytes.
    pub(crate) fn bytes(&self) -> usize {
        self.order.iter().map(|(_, _, t)| 96 + t.len()).sum()
    }
}

//! A replica that cannot rebuild its copy from the stream asks the leader for a fresh
//! snapshot, as a Redis replica that cannot continue the master's stream gets a full
//! resync ([`crate::replication::resync`]).
//!
//! The ask is a plain NATS message on the store's `snapshot_wanted` subject (nothing
//! needs to keep it: the replica asks again while it waits); the leader answers by
//! writing a snapshot at once, which its shipping task ([`super::snapshots::ship`])
//! stores within a second.

use super::snapshots::{list, Stored};
use crate::replication::store::CounterStore;
use crate::replication::Role;
use async_nats::jetstream::object_store::ObjectStore;
use futures_util::StreamExt;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How often a waiting replica asks again (the leader may have changed, or been busy).
const ASK_EVERY: Duration = Duration::from_secs(10);

/// How soon after one the leader writes another snapshot when asked: several replicas
/// asking at once cost one snapshot.
const AT_MOST_EVERY: Duration = Duration::from_secs(5);

/// Waits until the store holds a snapshot whose tail starts after stream message
/// `past`, asking the leader on `subject` for one every 10 s; returns the
/// stored snapshots then, newest first. Waits as long as it takes: a copy that cannot
/// be rebuilt has nothing right to serve, and a leader elected later answers too.
pub async fn wait_past(
    client: &async_nats::Client,
    subject: &str,
    bucket: &ObjectStore,
    past: u64,
) -> Vec<Stored> {
    let mut asked: Option<Instant> = None;
    loop {
        match list(bucket).await {
            Ok(all) if all.iter().any(|s| s.from_seq > past) => return all,
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "cannot list the stored snapshots; trying again"),
        }
        if asked.is_none_or(|at| at.elapsed() >= ASK_EVERY) {
            tracing::warn!(
                past,
                "the stream leader's copy could not be replayed past this message at the last start; waiting for a snapshot past it (asked the leader for one)"
            );
            if let Err(e) = client
                .publish(subject.to_string(), past.to_string().into())
                .await
            {
                tracing::warn!(error = %e, "cannot ask the leader for a snapshot; asking again");
            }
            asked = Some(Instant::now());
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// While this node leads: writes a snapshot whenever a replica asks for one on
/// `subject` (at most one per 5 s).
pub async fn answer(state: Arc<CounterStore>, client: async_nats::Client, subject: String) {
    let mut asks = match client.subscribe(subject).await {
        Ok(asks) => asks,
        Err(e) => {
            tracing::warn!(error = %e, "cannot hear replicas asking for a snapshot; they wait for the next periodic one");
            return;
        }
    };
    let mut last: Option<Instant> = None;
    loop {
        let ask = tokio::time::timeout(Duration::from_secs(1), asks.next()).await;
        if state.replication.role() != Role::Leader {
            return;
        }
        let Ok(Some(ask)) = ask else {
            continue;
        };
        if last.is_some_and(|at| at.elapsed() < AT_MOST_EVERY) {
            continue;
        }
        last = Some(Instant::now());
        let past = String::from_utf8_lossy(&ask.payload).into_owned();
        let engine_state = Arc::clone(&state);
        match tokio::task::spawn_blocking(move || engine_state.counters.engine.snapshot()).await {
            Ok(Ok(_)) => tracing::info!(
                past = %past,
                "a replica could not rebuild its copy from the stream past this message: wrote a snapshot for it"
            ),
            Ok(Err(e)) => {
                tracing::warn!(error = %e, "cannot write the snapshot a replica asked for")
            }
            Err(e) => tracing::warn!(error = %e, "writing the snapshot a replica asked for failed"),
        }
    }
}

//! The replica's side: an ordered consumer over the stream, applying every batch to the
//! local engine in stream order and recording how far it has come.

use super::names::{Names, LEADER_HEADER};
use crate::counter_store::CounterStore;
use crate::replication::{LeaderAddr, Role, Status};
use async_nats::jetstream::{consumer, stream::Stream};
use futures_util::StreamExt;
use std::sync::Arc;

/// How long the consumer may deliver nothing before the stream's end is checked.
const STALL: std::time::Duration = std::time::Duration::from_secs(1);

/// How long the creation of the follower's consumer may take before it is asked again.
/// A NATS server before 2.12 may place an ephemeral consumer on a server of the stream
/// that is down (nats-server#7165), and the request then waits out the client's whole
/// request timeout; each new request draws the consumer's server again, so short tries
/// find a live one within a few seconds of a NATS server's loss.
const CREATE_TRY: std::time::Duration = std::time::Duration::from_secs(2);

/// The follower needs stream messages that were purged (it fell behind the oldest kept
/// snapshot): it cannot go on without missing records.
#[derive(Debug, thiserror::Error)]
#[error("this replica needs stream message {want} but the stream now starts at {first} (purged up to the oldest kept snapshot); it starts over from the newest snapshot")]
pub struct Behind {
    /// The sequence the follower needed next.
    pub want: u64,
    /// The stream's first sequence (or the one delivered instead).
    pub first: u64,
}

/// Leaves after a [`Behind`]: the server's store exits with [`super::EXIT_BEHIND`] so that
/// its supervisor restarts it, and a start clears the local copy and restores the newest
/// snapshot of the object store, then follows the stream from there; a cluster group is
/// reopened the same way by its node ([`crate::counter_store::OnRestart`]).
pub fn start_over(state: &CounterStore, why: &anyhow::Error) {
    state.counters.engine.set_read_only(true);
    match &state.on_restart {
        crate::counter_store::OnRestart::ExitProcess => {
            tracing::error!(code = super::EXIT_BEHIND, error = %why, "exiting so this replica restarts from the newest snapshot")
        }
        crate::counter_store::OnRestart::Reopen { group, .. } => {
            tracing::error!(group, error = %why, "reopening the group from the newest snapshot")
        }
    }
    state.on_restart.restart(super::EXIT_BEHIND);
}

/// A [`Behind`] if this node's next message was purged from `stream` (checked on every
/// lease tick, as an ordered consumer paused past the purge may just sit idle).
pub async fn behind(state: &CounterStore, stream: &Stream) -> Option<anyhow::Error> {
    let want = state.replication.progress().0 + 1;
    let first = stream.get_info().await.ok()?.state.first_sequence;
    (first > want).then(|| Behind { want, first }.into())
}

/// Why following stopped.
enum Stopped {
    /// NATS failed (a server lost, a consumer's heartbeats missed): follow again.
    Nats(anyhow::Error),
    /// A batch did not apply, or the next message was purged ([`Behind`]): reported,
    /// never skipped.
    Apply(anyhow::Error),
}

/// Applies the stream from sequence `from` on, until the stream ends or a batch does
/// not apply (damaged, or records missing: reported, never skipped). When NATS fails
/// it follows again, with a new consumer, after what was applied. Messages below the
/// stream's first sequence are gone (the leader purges what the kept snapshots cover):
/// needing one is a [`Behind`].
pub async fn follow(
    state: Arc<CounterStore>,
    stream: Stream,
    names: Names,
    from: u64,
) -> anyhow::Result<()> {
    let mut from = from;
    loop {
        match follow_from(&state, &stream, &names, from).await {
            Ok(()) => return Ok(()),
            Err(Stopped::Apply(e)) => return Err(e),
            Err(Stopped::Nats(e)) => {
                tracing::warn!(error = %e, "following the counters' stream failed; following again");
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                from = from.max(state.replication.progress().0 + 1);
            }
        }
    }
}

/// One consumer's run, from sequence `from`.
async fn follow_from(
    state: &CounterStore,
    stream: &Stream,
    names: &Names,
    from: u64,
) -> Result<(), Stopped> {
    let nats = |e: &dyn std::fmt::Display| Stopped::Nats(anyhow::anyhow!("{e}"));
    let first = stream
        .get_info()
        .await
        .map_err(|e| nats(&e))?
        .state
        .first_sequence;
    if from < first {
        return Err(Stopped::Apply(Behind { want: from, first }.into()));
    }
    let deliver_policy = if from <= 1 {
        consumer::DeliverPolicy::All
    } else {
        consumer::DeliverPolicy::ByStartSequence {
            start_sequence: from,
        }
    };
    let consumer = tokio::time::timeout(
        CREATE_TRY,
        stream.create_consumer(consumer::pull::OrderedConfig {
            filter_subject: names.subject.clone(),
            deliver_policy,
            ..Default::default()
        }),
    )
    .await
    .map_err(|_| {
        nats(&"creating the stream's consumer took too long (placed on a lost NATS server?)")
    })?
    .map_err(|e| nats(&e))?;
    let mut messages = consumer.messages().await.map_err(|e| nats(&e))?;
    let status: &Status = &state.replication;
    let mut want = from.max(1);
    loop {
        let message = match tokio::time::timeout(STALL, messages.next()).await {
            Ok(Some(message)) => message.map_err(|e| nats(&e))?,
            Ok(None) => break,
            Err(_) => {
                // Quiet: caught up, or the consumer is stuck (its stream's leader was
                // lost with a NATS server): the stream's end tells which.
                match stream.get_info().await {
                    Ok(info) if info.state.first_sequence > want => {
                        return Err(Stopped::Apply(
                            Behind {
                                want,
                                first: info.state.first_sequence,
                            }
                            .into(),
                        ))
                    }
                    Ok(info) if info.state.last_sequence > status.progress().0 => {
                        return Err(Stopped::Nats(anyhow::anyhow!(
                            "the consumer stalled before the stream's end"
                        )))
                    }
                    _ => continue,
                }
            }
        };
        let info = message.info().map_err(|e| nats(&e))?;
        let (seq, pending) = (info.stream_sequence, info.pending);
        if seq > want {
            // The ordered consumer went on past messages purged under it.
            return Err(Stopped::Apply(Behind { want, first: seq }.into()));
        }
        want = seq + 1;
        let published_ms = (info.published.unix_timestamp_nanos() / 1_000_000) as u64;
        if message.payload.is_empty() {
            // A new leader's marker: who leads now.
            let leader = message
                .headers
                .as_ref()
                .and_then(|h| h.get(LEADER_HEADER))
                .and_then(|v| serde_json::from_str::<LeaderAddr>(v.as_str()).ok());
            if let (Some(leader), Role::Replica { .. }) = (leader, status.role()) {
                status.set_role(Role::Replica {
                    leader: Some(leader),
                });
            }
        } else {
            state
                .counters
                .engine
                .apply_replicated(&message.payload)
                .map_err(|e| Stopped::Apply(anyhow::anyhow!("stream message {seq}: {e}")))?;
        }
        let lag_ms = if pending > 0 {
            now_ms().saturating_sub(published_ms)
        } else {
            0
        };
        status.set_progress(seq, pending, lag_ms);
    }
    Ok(())
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

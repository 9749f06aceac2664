//! The replica's side: an ordered consumer over the stream, applying every batch to the
//! local engine in stream order and recording how far it has come.

use super::names::{Names, LEADER_HEADER};
use crate::replication::{LeaderAddr, Role, Status};
use crate::state::AppState;
use async_nats::jetstream::{consumer, stream::Stream};
use futures_util::StreamExt;
use std::sync::Arc;

/// Applies the stream from sequence `from` on, until the stream ends or fails.
/// A batch that does not apply (damaged, or records missing) stops the follower: it is
/// reported, never skipped.
pub async fn follow(
    state: Arc<AppState>,
    stream: Stream,
    names: Names,
    from: u64,
) -> anyhow::Result<()> {
    let deliver_policy = if from <= 1 {
        consumer::DeliverPolicy::All
    } else {
        consumer::DeliverPolicy::ByStartSequence {
            start_sequence: from,
        }
    };
    let consumer = stream
        .create_consumer(consumer::pull::OrderedConfig {
            filter_subject: names.subject.clone(),
            deliver_policy,
            ..Default::default()
        })
        .await?;
    let mut messages = consumer.messages().await?;
    let status: &Status = &state.replication;
    while let Some(message) = messages.next().await {
        let message = message?;
        let info = message.info().map_err(|e| anyhow::anyhow!("{e}"))?;
        let (seq, pending) = (info.stream_sequence, info.pending);
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
                .map_err(|e| anyhow::anyhow!("stream message {seq}: {e}"))?;
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

//! The replica's side: the stream leader's copy up to the stream's end, then an ordered
//! consumer, every message checked to continue this copy's chain and applied to the
//! local engine in stream order, recording how far it has come.

use super::lsn_seq::lsn_range;
use super::names::{Names, LEADER_HEADER};
use super::stamp::{Diverged, Stamp};
use crate::replication::store::CounterStore;
use crate::replication::{LeaderAddr, Role, Status};
use async_nats::jetstream::{
    consumer,
    stream::{RawMessageErrorKind, Stream},
};
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

/// The stream leader's own copy does not continue this copy at message `seq`, met while
/// replaying it: starting over from the same snapshot (or the stream's start) would
/// replay into the same break, so the next start waits for a snapshot past it
/// ([`crate::replication::resync`]).
#[derive(Debug, thiserror::Error)]
#[error("the stream leader's copy of the stream cannot be replayed past message {seq}; the next start waits for a snapshot past it")]
pub struct Unreplayable {
    /// The message that did not continue the copy.
    pub seq: u64,
}

/// Starts the store over after following stopped on `why`: a [`Behind`] (the records
/// it needs next were purged), or anything else the follower could not apply — a
/// message that does not continue this copy's chain ([`Diverged`]), a gap, a damaged
/// batch. Those mark the node diverged first (its reads are refused, `INFO
/// replication` says why) and log what is dropped: everything applied here since the
/// newest snapshot, re-read from the stream leader on the way back. The server
/// restarts in place ([`crate::restart_in_place`]; exit [`super::EXIT_BEHIND`] only if
/// it cannot), and a start clears the local copy and restores the newest snapshot of
/// the object store, then follows the stream from there; a cluster group is reopened
/// the same way by its node ([`crate::replication::store::OnRestart`]).
pub fn start_over(state: &CounterStore, why: &anyhow::Error) {
    state.counters.engine.set_read_only(true);
    if let Some(unreplayable) = why.downcast_ref::<Unreplayable>() {
        if let Some(resync) = &state.resync {
            resync.need_past(unreplayable.seq);
        }
    } else if !why.is::<Behind>() && !state.replication.joint_checked() {
        // The stream did not continue the copy before its end was ever checked against
        // the stream leader's: the snapshot it started from may be the cause.
        if let Some(started_from) = &state.started_from {
            started_from.distrust();
        }
    }
    if !why.is::<Behind>() {
        let (applied, _, _) = state.replication.progress();
        state.replication.set_diverged(Some(format!("{why:#}")));
        metrics::counter!("shardkit_replica_diverged_total").increment(1);
        tracing::error!(
            error = %format!("{why:#}"),
            applied_seq = applied,
            next_lsn = state.counters.engine.next_lsn(),
            "this replica's copy of the counters diverged from the agreed log; dropping it (every record applied since the newest snapshot) and starting over from the snapshot and the stream leader's copy"
        );
    }
    match &state.on_restart {
        crate::replication::store::OnRestart::RestartProcess => {
            tracing::error!(code = super::EXIT_BEHIND, error = %why, "restarting in place so this replica starts over from the newest snapshot")
        }
        crate::replication::store::OnRestart::Reopen { group, .. } => {
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
    /// A batch did not apply, did not continue this copy's chain, or the next message
    /// was purged ([`Behind`]): reported, never skipped.
    Apply(anyhow::Error),
}

fn nats(e: &dyn std::fmt::Display) -> Stopped {
    Stopped::Nats(anyhow::anyhow!("{e}"))
}

/// How often, while messages keep coming, the copy's end is compared with the stream
/// leader's (when the stream is quiet it is compared once per new end).
const VERIFY_EVERY: std::time::Duration = std::time::Duration::from_secs(5);

/// How many of the stream leader's messages are asked for at once while catching up.
const LEADER_READS: usize = 16;

/// Applies the stream from sequence `from` on, until the stream ends or a message does
/// not apply (damaged, not continuing this copy's chain, records missing: reported,
/// never skipped). Each run first reads the stream up to its current end from the
/// stream leader (whose copy is the agreed one: a consumer may be served by a NATS
/// server whose copy differs), then follows with an ordered consumer. When NATS fails
/// it follows again after what was applied. Messages below the stream's first
/// sequence are gone (the leader purges what the kept snapshots cover): needing one is
/// a [`Behind`].
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
            Err(Stopped::Apply(e)) => {
                if !e.is::<Behind>() {
                    state.replication.set_diverged(Some(format!("{e:#}")));
                }
                return Err(e);
            }
            Err(Stopped::Nats(e)) => {
                state.replication.set_link_up(false);
                static FAILED: shardkit_util::log_every::LogEvery =
                    shardkit_util::log_every::LogEvery::every(std::time::Duration::from_secs(5));
                if FAILED.due() {
                    tracing::warn!(error = %e, "following the counters' stream failed; following again (logged at most every 5 s)");
                }
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                from = from.max(state.replication.progress().0 + 1);
            }
        }
    }
}

/// Applies message `seq` if it continues this copy's chain (see
/// [`crate::replication::log_chain`]): a batch goes to the engine, a leader's marker
/// names the new leader. `published_ms` and `pending` feed the lag figures.
fn take(
    state: &CounterStore,
    seq: u64,
    headers: Option<&async_nats::HeaderMap>,
    payload: &[u8],
    published_ms: u64,
    pending: u64,
) -> Result<(), Stopped> {
    let status: &Status = &state.replication;
    let diverged = |why: String| Stopped::Apply(Diverged { seq, why }.into());
    let lsns = headers.and_then(lsn_range).unwrap_or((0, 0));
    let ours = status.head();
    let stamp = Stamp::read(headers).map_err(diverged)?;
    if let (Some(stamp), Some(o)) = (&stamp, ours) {
        if stamp.term < o.term {
            // A deposed leader's write that NATS appended after a newer term's
            // messages (nats-server 2.9 was seen doing so after a partition healed):
            // the newer leader did not build on it, so neither does anyone. Its
            // writer was fenced by then; the chain goes on from the message before.
            metrics::counter!("shardkit_replica_stale_writes_skipped_total").increment(1);
            tracing::warn!(
                seq,
                term = stamp.term,
                newer_term = o.term,
                "skipped a stream message of an older term appended after a newer one"
            );
            status.set_progress(seq, pending, lag_ms(pending, published_ms));
            return Ok(());
        }
    }
    let head = match stamp {
        Some(stamp) => Some(
            Stamp::continues(&stamp, ours, seq, lsns, payload)
                .map_err(|d| Stopped::Apply(d.into()))?,
        ),
        None => {
            if ours.is_some() {
                tracing::warn!(
                    seq,
                    "a stream message carries no chain (written by an older build); it is applied unchecked"
                );
            }
            None
        }
    };
    if payload.is_empty() {
        // A new leader's marker: who leads now.
        let leader = headers
            .and_then(|h| h.get(LEADER_HEADER))
            .and_then(|v| serde_json::from_str::<LeaderAddr>(v.as_str()).ok());
        if let (Some(leader), Role::Replica { .. }) = (leader, status.role()) {
            status.set_role(Role::Replica {
                leader: Some(leader),
            });
        }
    } else {
        let applied = state
            .counters
            .engine
            .apply_replicated(payload)
            .map_err(|e| diverged(e.to_string()))?;
        // Only the first message after a start from a snapshot may hold records the
        // snapshot has; anywhere else a repeated record is a copy of the log that is
        // not this one.
        if applied.skipped > 0 && ours.is_some() && seq != status.snapshot_joint() {
            return Err(diverged(format!(
                "it repeats {} records this copy already applied",
                applied.skipped
            )));
        }
    }
    status.set_head(head);
    status.set_link_up(true);
    status.set_progress(seq, pending, lag_ms(pending, published_ms));
    Ok(())
}

/// Reads messages `from..=last` from the stream leader, a few at a time, and applies
/// them. Returns the next sequence to follow from.
async fn read_from_leader(
    state: &CounterStore,
    stream: &Stream,
    from: u64,
    last: u64,
) -> Result<u64, Stopped> {
    if from > last {
        return Ok(from);
    }
    let reads = futures_util::stream::iter(from..=last)
        .map(|seq| async move { (seq, stream.get_raw_message(seq).await) })
        .buffered(LEADER_READS);
    futures_util::pin_mut!(reads);
    while let Some((seq, read)) = reads.next().await {
        let message = match read {
            Ok(message) => message,
            Err(e) if e.kind() == RawMessageErrorKind::NoMessageFound => {
                let first = stream
                    .get_info()
                    .await
                    .map_err(|e| nats(&e))?
                    .state
                    .first_sequence;
                return Err(Stopped::Apply(Behind { want: seq, first }.into()));
            }
            Err(e) => return Err(nats(&e)),
        };
        let published_ms = (message.time.unix_timestamp_nanos() / 1_000_000) as u64;
        take(
            state,
            seq,
            Some(&message.headers),
            &message.payload,
            published_ms,
            last - seq,
        )
        .map_err(|stopped| match stopped {
            // The copy read here is the stream leader's: it is what every start
            // replays, so a break in it is noted for the next start. Not at a
            // snapshot's joint, where the snapshot may be the one at fault (it is
            // then left for an older one: `crate::replication::distrusted`).
            Stopped::Apply(e)
                if e.is::<Diverged>() && seq != state.replication.snapshot_joint() =>
            {
                Stopped::Apply(e.context(Unreplayable { seq }))
            }
            other => other,
        })?;
    }
    Ok(last + 1)
}

/// Compares this copy's end with the stream leader's message at the same sequence
/// (once per end: `verified` holds the last sequence checked). A consumer served by a
/// NATS server whose copy differs delivers a message the agreed log does not have; if
/// nothing follows it, no chain breaks, and only this comparison finds it.
async fn verify_end(
    state: &CounterStore,
    stream: &Stream,
    verified: &mut u64,
) -> Result<(), Stopped> {
    let Some(head) = state.replication.head() else {
        return Ok(());
    };
    if head.seq == 0 || head.seq == *verified {
        return Ok(());
    }
    let message = match stream.get_raw_message(head.seq).await {
        Ok(message) => message,
        // Purged (a snapshot covers it) or NATS trouble: checked at the next end.
        Err(_) => return Ok(()),
    };
    if let Some((_, end)) = lsn_range(&message.headers) {
        let next = state.counters.engine.next_lsn();
        if next != end && state.replication.progress().0 == head.seq {
            return Err(Stopped::Apply(
                Diverged {
                    seq: head.seq,
                    why: format!(
                        "this copy's next record is lsn {next}, the stream leader's copy of this message ends before lsn {end}"
                    ),
                }
                .into(),
            ));
        }
    }
    if let Ok(Some(stamp)) = Stamp::read(Some(&message.headers)) {
        if stamp.after != head.chain || stamp.term != head.term {
            return Err(Stopped::Apply(
                Diverged {
                    seq: head.seq,
                    why: format!(
                        "the stream leader's copy of it ends at chain {} (term {}), the one applied here at {} (term {})",
                        crate::replication::log_chain::hex(stamp.after),
                        stamp.term,
                        crate::replication::log_chain::hex(head.chain),
                        head.term
                    ),
                }
                .into(),
            ));
        }
    }
    *verified = head.seq;
    state.replication.set_joint_checked();
    state.replication.set_link_up(true);
    Ok(())
}

/// One consumer's run, from sequence `from`: the stream leader's copy up to the
/// stream's end first, then the consumer.
async fn follow_from(
    state: &CounterStore,
    stream: &Stream,
    names: &Names,
    from: u64,
) -> Result<(), Stopped> {
    let info = stream.get_info().await.map_err(|e| nats(&e))?.state;
    if from < info.first_sequence {
        return Err(Stopped::Apply(
            Behind {
                want: from,
                first: info.first_sequence,
            }
            .into(),
        ));
    }
    let from = read_from_leader(state, stream, from, info.last_sequence).await?;
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
    // Caught up with the stream leader's copy and reading: the link is up.
    state.replication.set_link_up(true);
    let status: &Status = &state.replication;
    let mut want = from.max(1);
    let mut verified = 0u64;
    let mut last_verify = std::time::Instant::now();
    let mut recent = std::collections::VecDeque::with_capacity(RECENT);
    loop {
        let message = match tokio::time::timeout(STALL, messages.next()).await {
            Ok(Some(message)) => message.map_err(|e| nats(&e))?,
            Ok(None) => break,
            Err(_) => {
                verify_end(state, stream, &mut verified).await?;
                last_verify = std::time::Instant::now();
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
        if seq < want {
            // A redelivery: an ordered consumer made again after a reset may start
            // over. Skipped only if it is the very message applied at that sequence.
            redelivered(stream, seq, message.headers.as_ref(), &recent).await?;
            continue;
        }
        want = seq + 1;
        let published_ms = (info.published.unix_timestamp_nanos() / 1_000_000) as u64;
        take(
            state,
            seq,
            message.headers.as_ref(),
            &message.payload,
            published_ms,
            pending,
        )?;
        remember(&mut recent, state);
        if last_verify.elapsed() >= VERIFY_EVERY {
            verify_end(state, stream, &mut verified).await?;
            last_verify = std::time::Instant::now();
        }
    }
    Ok(())
}

/// How many of the last applied messages' chains a consumer run keeps, to recognise a
/// redelivery of one of them.
const RECENT: usize = 4096;

/// Notes the message just applied (its sequence and chain) among the recent ones.
fn remember(recent: &mut std::collections::VecDeque<(u64, u128)>, state: &CounterStore) {
    if let Some(head) = state.replication.head() {
        if recent.len() == RECENT {
            recent.pop_front();
        }
        recent.push_back((head.seq, head.chain));
    }
}

/// Checks a message delivered again (sequence `seq`, below the next one wanted): its
/// stamp must be the one applied at `seq` (kept in `recent`), or, for an older one,
/// the one the stream leader holds there. Anything else is a copy of the log that is
/// not the agreed one.
async fn redelivered(
    stream: &Stream,
    seq: u64,
    headers: Option<&async_nats::HeaderMap>,
    recent: &std::collections::VecDeque<(u64, u128)>,
) -> Result<(), Stopped> {
    let diverged = |why: String| Stopped::Apply(Diverged { seq, why }.into());
    let Some(stamp) = Stamp::read(headers).map_err(diverged)? else {
        return Ok(());
    };
    let applied = match recent.iter().rev().find(|(s, _)| *s == seq) {
        Some(&(_, chain)) => chain,
        None => match stream.get_raw_message(seq).await {
            Ok(agreed) => match Stamp::read(Some(&agreed.headers)) {
                Ok(Some(agreed)) => agreed.after,
                _ => return Ok(()),
            },
            // Purged under the consumer, or NATS trouble: nothing is applied from it.
            Err(_) => return Ok(()),
        },
    };
    if stamp.after != applied {
        return Err(diverged(format!(
            "delivered again, it ends at chain {} where the message applied at that sequence ends at {}",
            crate::replication::log_chain::hex(stamp.after),
            crate::replication::log_chain::hex(applied)
        )));
    }
    Ok(())
}

/// The age of the oldest unapplied message, ms, from the one just applied: 0 when
/// nothing is left to apply.
fn lag_ms(pending: u64, published_ms: u64) -> u64 {
    if pending > 0 {
        now_ms().saturating_sub(published_ms)
    } else {
        0
    }
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

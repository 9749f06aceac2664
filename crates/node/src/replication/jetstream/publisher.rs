//! The leader's side of the log of record: every batch the engine writes out is
//! published to the stream with `Nats-Expected-Last-Sequence`, so a publish from a
//! writer that is no longer the last one to append is refused by JetStream itself.
//!
//! Every message is stamped with the leader's term and the chain
//! ([`super::stamp`]), and carries a message id (`<term>.<first lsn>.<part>`): a
//! publish whose answer was lost (a NATS server lost, a stream leader being elected)
//! is sent again, as it was, for up to [`Lease::hold`], and JetStream's duplicate
//! window answers the second send with the first one's sequence if it had been
//! stored. This is safe whatever the lease does meanwhile: a publish lands only if no
//! other writer appended since this leader's last message (the expected sequence), so
//! what it acknowledges is in the agreed log. A refusal (another writer appended), the
//! lease known lost (`fenced`), or no answer for the whole hold ends the lead.
//!
//! The publishes run on one task of the replication runtime, one batch after another
//! in the order they were handed over. The engine calls [`JetStreamLog::append`] from a
//! thread that may block (it waits for JetStream's ack), or [`JetStreamLog::submit`]
//! from a commit task on an event loop (it is told of the ack by a callback).

use super::names::{Names, LSN_HEADER};
use super::stamp::{Stamp, CHAIN_HEADER, TERM_HEADER};
use crate::replication::log_chain::Head;
use async_nats::jetstream::{self, context::PublishErrorKind, message::PublishMessage};
use bytes::Bytes;
use shardkit_counters::{LogOfRecord, Stored};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// Largest payload of one message; bigger batches go as several, in order.
const MAX_MESSAGE: usize = 256 * 1024;

/// How long a publish waits for its ack before it is sent again.
const ACK_WAIT: Duration = Duration::from_secs(1);

/// The longest wait between two sends of a publish that got no answer.
const RETRY_MAX: Duration = Duration::from_secs(1);

/// One batch to publish and where to say how it went.
struct Job {
    first_lsn: u64,
    end_lsn: u64,
    frames: Bytes,
    done: Stored,
}

/// What a leader writes under: its term, and how long a publish that gets no answer
/// is sent again before the leader gives up.
#[derive(Debug, Clone)]
pub struct Lease {
    /// The term: the lease revision this leader won.
    pub term: u64,
    /// How long a publish without an answer is held and repeated.
    pub hold: Duration,
}

/// The stream as the engine's [`LogOfRecord`].
pub struct JetStreamLog {
    jobs: mpsc::UnboundedSender<Job>,
    /// Set once a publish failed or the lease was lost: nothing is acknowledged again.
    pub(super) fenced: Arc<AtomicBool>,
}

impl JetStreamLog {
    /// Starts the publishing task among the store's `tasks`. `head` is the stream's end
    /// as this leader left it (its own leader marker), `lease` the lease it writes
    /// under; `on_published` hears the new end after every stored batch. The task ends
    /// when the log is dropped.
    pub fn start(
        tasks: &super::tasks::Tasks,
        js: jetstream::Context,
        names: &Names,
        head: Head,
        lease: Lease,
        fenced: Arc<AtomicBool>,
        on_published: impl Fn(Head) + Send + 'static,
    ) -> Self {
        let (jobs, mut queue) = mpsc::unbounded_channel::<Job>();
        let subject = names.subject.clone();
        let task_fenced = Arc::clone(&fenced);
        tasks.spawn(async move {
            let mut head = head;
            while let Some(job) = queue.recv().await {
                // The callback is not `Sync`: out of the job before anything is awaited.
                let Job {
                    first_lsn,
                    end_lsn,
                    frames,
                    done,
                } = job;
                let result = if task_fenced.load(Ordering::Acquire) {
                    Err("this node lost the counters' lease".to_string())
                } else {
                    let batch = Batch {
                        subject: &subject,
                        lsns: (first_lsn, end_lsn),
                        frames: &frames,
                    };
                    publish(&js, batch, &mut head, &lease, &task_fenced).await
                };
                match &result {
                    Ok(()) => on_published(head),
                    Err(why) => {
                        task_fenced.store(true, Ordering::Release);
                        tracing::error!(error = %why, "a counter batch was refused by the stream; this node no longer acknowledges writes");
                    }
                }
                done(result);
            }
        });
        Self { jobs, fenced }
    }
}

/// One batch as it goes out.
struct Batch<'a> {
    subject: &'a str,
    lsns: (u64, u64),
    frames: &'a Bytes,
}

/// Publishes one batch, split at frame boundaries into messages of at most
/// [`MAX_MESSAGE`] bytes, each expecting the sequence the one before got and stamped
/// to continue `head`, which moves along. A send without an answer is repeated (same
/// message id) while the lease holds.
async fn publish(
    js: &jetstream::Context,
    batch: Batch<'_>,
    head: &mut Head,
    lease: &Lease,
    fenced: &AtomicBool,
) -> Result<(), String> {
    let (first_lsn, end_lsn) = batch.lsns;
    let lsn_header = format!("{first_lsn}-{end_lsn}");
    for (part, chunk) in split_frames(batch.frames, MAX_MESSAGE)
        .into_iter()
        .enumerate()
    {
        let stamp = Stamp::new(lease.term, head.chain, batch.lsns, &chunk);
        let (term, chain) = stamp.header_values();
        let id = format!("{}.{first_lsn}.{part}", lease.term);
        let mut wait = Duration::from_millis(50);
        let mut tries = 0u32;
        let started = Instant::now();
        loop {
            let message = PublishMessage::build()
                .payload(chunk.clone())
                .expected_last_sequence(head.seq)
                .message_id(id.as_str())
                .header(LSN_HEADER, lsn_header.as_str())
                .header(TERM_HEADER, term.as_str())
                .header(CHAIN_HEADER, chain.as_str());
            let send = async {
                match js.send_publish(batch.subject.to_string(), message).await {
                    Ok(ack) => ack.await,
                    Err(e) => Err(e),
                }
            };
            // Not the client's 5 s: a stream leader elected meanwhile is asked again
            // within a second (the repeat carries the same id).
            let sent = match tokio::time::timeout(ACK_WAIT, send).await {
                Ok(sent) => sent,
                Err(_) => Err(PublishErrorKind::TimedOut.into()),
            };
            match sent {
                Ok(ack) if ack.sequence == head.seq + 1 => {
                    *head = Head {
                        seq: ack.sequence,
                        term: lease.term,
                        chain: stamp.after,
                    };
                    if tries > 0 {
                        tracing::info!(
                            tries = tries + 1,
                            seq = ack.sequence,
                            duplicate = ack.duplicate,
                            "a counter batch was stored after its publish was repeated"
                        );
                    }
                    break;
                }
                Ok(ack) => {
                    return Err(format!(
                        "the stream stored message {} as sequence {}, expected {}",
                        id,
                        ack.sequence,
                        head.seq + 1
                    ))
                }
                Err(e) if e.kind() == PublishErrorKind::WrongLastSequence => {
                    return Err(e.to_string())
                }
                Err(e) => {
                    if fenced.load(Ordering::Acquire) {
                        return Err(format!("{e}; and this node lost the counters' lease"));
                    }
                    if started.elapsed() >= lease.hold {
                        return Err(format!(
                            "{e}; no answer from the stream for {} ms",
                            lease.hold.as_millis()
                        ));
                    }
                    if tries == 0 {
                        tracing::warn!(error = %e, "publishing a counter batch got no answer; sending it again while the lease holds");
                    }
                    tries += 1;
                    tokio::time::sleep(wait).await;
                    wait = (wait * 2).min(RETRY_MAX);
                }
            }
        }
    }
    Ok(())
}

/// `frames` cut into runs of whole frames of at most `max` bytes (a single bigger frame
/// goes alone).
fn split_frames(frames: &Bytes, max: usize) -> Vec<Bytes> {
    let mut out = Vec::new();
    let (mut start, mut at) = (0usize, 0usize);
    while at + 8 <= frames.len() {
        let len = u32::from_le_bytes([frames[at], frames[at + 1], frames[at + 2], frames[at + 3]])
            as usize;
        let next = (at + 8 + len).min(frames.len());
        if next - start > max && at > start {
            out.push(frames.slice(start..at));
            start = at;
        }
        at = next;
    }
    if start < frames.len() {
        out.push(frames.slice(start..));
    }
    out
}

impl LogOfRecord for JetStreamLog {
    fn append(&self, first_lsn: u64, end_lsn: u64, frames: &[u8]) -> Result<(), String> {
        let (done, wait) = std::sync::mpsc::sync_channel(1);
        self.submit(
            first_lsn,
            end_lsn,
            frames,
            Box::new(move |result| {
                let _ = done.send(result);
            }),
        );
        wait.recv()
            .map_err(|_| "the JetStream publisher stopped".to_string())?
    }

    fn submit(&self, first_lsn: u64, end_lsn: u64, frames: &[u8], stored: Stored) {
        if self.fenced.load(Ordering::Acquire) {
            return stored(Err("this node lost the counters' lease".into()));
        }
        let job = Job {
            first_lsn,
            end_lsn,
            frames: Bytes::copy_from_slice(frames),
            done: stored,
        };
        // A send fails only once the task is gone; the job (and its callback) comes back.
        if let Err(refused) = self.jobs.send(job) {
            (refused.0.done)(Err("the JetStream publisher stopped".to_string()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(len: usize) -> Vec<u8> {
        let mut f = (len as u32).to_le_bytes().to_vec();
        f.extend_from_slice(&[0; 4]);
        f.extend(std::iter::repeat_n(7u8, len));
        f
    }

    #[test]
    fn batches_split_at_frame_boundaries() {
        let mut all = Vec::new();
        for len in [10, 20, 30, 5] {
            all.extend(frame(len));
        }
        let all = Bytes::from(all);
        let parts = split_frames(&all, 40);
        assert_eq!(parts.iter().map(|p| p.len()).sum::<usize>(), all.len());
        assert_eq!(
            parts.iter().map(|p| p.len()).collect::<Vec<_>>(),
            vec![18, 28, 38, 13]
        );
        assert_eq!(split_frames(&all, 1 << 20).len(), 1);
    }
}

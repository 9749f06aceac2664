//! The leader's side of the log of record: every batch the engine writes out is
//! published to the stream with `Nats-Expected-Last-Sequence`, so a publish from a
//! writer that is no longer the last one to append is refused by JetStream itself.
//!
//! The publishes run on one task of the replication runtime, one batch after another
//! in the order they were handed over. The engine calls [`JetStreamLog::append`] from a
//! thread that may block (it waits for JetStream's ack), or [`JetStreamLog::submit`]
//! from a commit task on an event loop (it is told of the ack by a callback).

use super::names::{Names, LSN_HEADER};
use async_nats::jetstream::{self, message::PublishMessage};
use bytes::Bytes;
use shardkit_counters::{LogOfRecord, Stored};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use tokio::sync::mpsc;

/// Largest payload of one message; bigger batches go as several, in order.
const MAX_MESSAGE: usize = 256 * 1024;

/// One batch to publish and where to say how it went.
struct Job {
    first_lsn: u64,
    end_lsn: u64,
    frames: Bytes,
    done: Stored,
}

/// The stream as the engine's [`LogOfRecord`].
pub struct JetStreamLog {
    jobs: mpsc::UnboundedSender<Job>,
    /// Set once a publish failed or the lease was lost: nothing is acknowledged again.
    pub(super) fenced: Arc<AtomicBool>,
}

impl JetStreamLog {
    /// Starts the publishing task among the store's `tasks`. `last_seq` is the stream's last
    /// sequence as this leader left it (its own leader marker). The task ends when the
    /// log is dropped.
    pub fn start(
        tasks: &super::tasks::Tasks,
        js: jetstream::Context,
        names: &Names,
        last_seq: u64,
        fenced: Arc<AtomicBool>,
        on_published: impl Fn(u64) + Send + 'static,
    ) -> Self {
        let (jobs, mut queue) = mpsc::unbounded_channel::<Job>();
        let subject = names.subject.clone();
        let task_fenced = Arc::clone(&fenced);
        tasks.spawn(async move {
            let mut last = last_seq;
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
                    publish(&js, &subject, (first_lsn, end_lsn), &frames, &mut last).await
                };
                match &result {
                    Ok(()) => on_published(last),
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

/// Publishes one batch, split at frame boundaries into messages of at most
/// [`MAX_MESSAGE`] bytes, each expecting the sequence the one before got.
async fn publish(
    js: &jetstream::Context,
    subject: &str,
    (first_lsn, end_lsn): (u64, u64),
    frames: &Bytes,
    last: &mut u64,
) -> Result<(), String> {
    for chunk in split_frames(frames, MAX_MESSAGE) {
        let message = PublishMessage::build()
            .payload(chunk)
            .expected_last_sequence(*last)
            .header(LSN_HEADER, format!("{first_lsn}-{end_lsn}").as_str());
        let ack = js
            .send_publish(subject.to_string(), message)
            .await
            .map_err(|e| e.to_string())?
            .await
            .map_err(|e| e.to_string())?;
        *last = ack.sequence;
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
